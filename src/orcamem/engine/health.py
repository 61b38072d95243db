"""``Memory.check`` and ``Memory.repair``: find damaged derived data, and rebuild it.

The store says what is wrong (``Health.problems``) and rebuilds what needs no model; this
module re-embeds missing or wrong-size vectors with the space's own embedder, so a repaired
space searches exactly as before. Episodes are never changed: a problem only a backup can fix
(a damaged file, an episode that no longer matches its digest, a lineage cycle) stays in the
report with what to do next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from .._kernel.embed import Embedder, embed_texts
from .store.base import Problem, Store

__all__ = ["CheckReport", "RepairReport", "check", "repair"]

_BATCH = 512


@dataclass(frozen=True)
class CheckReport:
    """What ``orcamem check`` found: no problems means healthy."""

    problems: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    """Rows checked per table (spaces, episodes, lines, memories)."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "counts": dict(self.counts),
            "problems": [asdict(p) for p in self.problems],
        }


@dataclass(frozen=True)
class RepairReport:
    """What ``orcamem repair`` did, and what a check still finds afterwards."""

    actions: list[str] = field(default_factory=list)
    """One line per thing rebuilt; empty when there was nothing to repair."""
    remaining: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.remaining

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "actions": list(self.actions),
            "remaining": [asdict(p) for p in self.remaining],
        }


def check(store: Store) -> CheckReport:
    return CheckReport(store.problems(), store.counts())


def repair(store: Store, embedder_of: Callable[[str], Embedder]) -> RepairReport:
    """Rebuild indexes, orphans and lineage, then re-embed the vectors that need it, each
    space with ``embedder_of(space)``."""
    actions = store.repair_derived()
    refused: list[Problem] = []
    for info in store.list_spaces():
        lines, memories = store.stale_vectors(info.name)
        if not lines and not memories:
            continue
        embedder = embedder_of(info.name)
        count = len(lines) + len(memories)
        if (info.embedder_id, info.dim) != (embedder.id, embedder.dim):
            refused.append(
                Problem(
                    "vectors",
                    f"space {info.name!r} needs {count} vector(s) from {info.embedder_id} "
                    f"(dim {info.dim}) but this Memory embeds with {embedder.id} (dim "
                    f"{embedder.dim}): repair with that embedder (`orcamem repair --embedder "
                    f"<spec>`), or run `orcamem reembed --space {info.name}` to re-embed the "
                    "whole space with this one",
                    info.name,
                )
            )
            continue
        texts = [text for _, text in lines] + [text for _, text in memories]
        vectors = [
            vector
            for start in range(0, len(texts), _BATCH)
            for vector in embed_texts(embedder, texts[start : start + _BATCH])
        ]
        store.replace_vectors(
            info.name,
            embedder.id,
            embedder.dim,
            {key: vectors[i] for i, (key, _) in enumerate(lines)},
            {key: vectors[len(lines) + i] for i, (key, _) in enumerate(memories)},
            spec=info.embedder_spec,
            partial=True,
        )
        actions.append(f"re-embedded {count} vector(s) in space {info.name!r} with {embedder.id}")
    skipped = {problem.space for problem in refused}
    remaining = [p for p in store.problems() if not (p.kind == "vectors" and p.space in skipped)]
    return RepairReport(actions, [*remaining, *refused])

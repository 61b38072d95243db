"""Sleep: pending episodes → claims → verification → gate, one batch at a time.

``verify_claims`` (``_kernel.claims.verify``, shared with local memory and the capability)
runs every deterministic check in order and splits claims into verified ones and rejections
with reasons; ``apply_batch`` adds the gate and the space's watermark, all
in one store transaction, so a batch is applied whole or not at all. ``jobs`` runs batches as
durable leased jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..._kernel.claims.claims import Claim, SourceLine, Verified
from ..._kernel.model import Episode
from ..store.base import Store
from .gate import GateResult, apply_claims

__all__ = ["SleepReport", "apply_batch", "source_lines"]


@dataclass
class SleepReport:
    """What a batch, or a whole sleep (the sum of its batches), did.

    ``rejected`` pairs a claim with the reason it was refused; ``failures`` are extractor
    attempts whose output was unusable.

    A whole sleep also says why it stopped with episodes still pending: ``failed_batches``
    lists batches whose job used all its attempts (``{"job", "batch", "error"}``; sleep does
    not run them again until ``sleep(retry_failed=True)``), and ``waiting`` names the batch
    another worker holds under an unexpired lease (``{"job", "batch", "episodes", "worker",
    "until"}``: ``episodes`` pending episodes wait until ``until``; ``sleep(wait=True)`` waits
    for the lease to expire and takes the job over).
    """

    episodes: int = 0
    claims: int = 0
    stored: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    duplicates: int = 0
    rejected: list[tuple[Claim, str]] = field(default_factory=list)
    extractors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    failed_batches: list[dict] = field(default_factory=list)
    waiting: dict | None = None

    def add(self, other: SleepReport) -> None:
        """Add ``other`` (a batch) to this sum; each extractor is named once."""
        self.episodes += other.episodes
        self.claims += other.claims
        self.stored += other.stored
        self.superseded += other.superseded
        self.duplicates += other.duplicates
        self.rejected += other.rejected
        for name in other.extractors:
            if name not in self.extractors:
                self.extractors.append(name)
        self.failures += other.failures

    def summary(self, space: str | None = None) -> str:
        """The one line ``orcamem sleep`` prints: what ran and what it did."""
        blocked = bool(self.failed_batches or self.waiting)
        used = ", ".join(self.extractors) or ("no batch could run" if blocked else "nothing to do")
        where = f" in {space!r}" if space is not None else ""
        return (
            f"consolidated {self.episodes} episode(s){where} with {used}: "
            f"{len(self.stored)} stored, {len(self.superseded)} superseded, "
            f"{self.duplicates} duplicate(s), {len(self.rejected)} rejected"
        )

    def __str__(self) -> str:
        """The summary, then a line per model failure and per failed batch (``print(report)``)."""
        lines = [self.summary()]
        lines += [f"model output unusable, rules used instead: {f}" for f in self.failures]
        lines += [f"batch {b['batch']} failed: {b['error']}" for b in self.failed_batches]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "episodes": self.episodes,
            "claims": self.claims,
            "stored": self.stored,
            "superseded": self.superseded,
            "duplicates": self.duplicates,
            "rejected": [{"item": c.to_json(), "reason": r} for c, r in self.rejected],
            "extractors": self.extractors,
            "failures": self.failures,
            "failed_batches": self.failed_batches,
            "waiting": self.waiting,
        }


def source_lines(store: Store, space: str, episodes: Sequence[Episode]) -> list[SourceLine]:
    """The batch's lines with the ids claims cite (``ep-<id>:s<seq>``), in order."""
    by_id = {episode.id: episode for episode in episodes}
    return [
        SourceLine(
            ref=f"ep-{row.episode_id}:s{row.seq}",
            line_id=row.id,
            episode_id=row.episode_id,
            session_id=row.session_id,
            role=row.role,
            text=row.text,
            occurred_at=by_id[row.episode_id].occurred_at,
            kind=row.kind,
        )
        for row in store.episode_lines(space, list(by_id))
    ]


def apply_batch(
    store: Store,
    space: str,
    episodes: Sequence[Episode],
    lines: Sequence[SourceLine],
    claims: Sequence[Claim],
    verified: Sequence[Verified],
    rejected: Sequence[tuple[Claim, str]],
    extractor: str,
    embed: Callable[[list[str]], np.ndarray],
    embedder_id: str,
    now: str,
    *,
    job_id: str | None = None,
    defeasible: bool = True,
) -> SleepReport:
    """The gate, the audit entries and the new watermark, in one store transaction."""
    with store.writing():
        sources = {line.line_id: line.text for line in lines}
        gate: GateResult = apply_claims(
            store, space, verified, sources, embed, embedder_id, now, defeasible=defeasible
        )
        for claim, reason in rejected:
            store.add_audit(space, job_id, claim.to_json(), reason, now)
        for claim in gate.duplicates:
            store.add_audit(space, job_id, claim.to_json(), "duplicate of an active memory", now)
        if episodes:
            store.mark_consolidated(space, max(e.id for e in episodes), now)
    return SleepReport(
        episodes=len(episodes),
        claims=len(claims),
        stored=[m.id for m in gate.stored],
        superseded=gate.superseded,
        duplicates=len(gate.duplicates),
        rejected=list(rejected),
        extractors=[extractor],
    )

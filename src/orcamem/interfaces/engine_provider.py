"""The capability's third provider, ``orcamem-engine``: orcamem's own episode engine in this
process (hybrid recall: BM25 and the shipped static embedder, offline, no download), next to
the built-in Markdown store and the Headroom MCP server.

It lives here, above the four systems, because the capability may not import the engine; a
host hands it to the capability (``Capability(..., providers=ENGINE)``), as ``orcamem turn
--memory capability`` does. Its memories are kept in the workspace's ``memory/engine.db``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._kernel.clock import Clock
from ..capability.providers import (
    NOT_AVAILABLE,
    READY,
    ProviderCapabilities,
    ProviderError,
    ProviderStatus,
    Recalled,
    Scope,
)
from ..errors import OrcamemError

if TYPE_CHECKING:
    from ..engine import Memory

__all__ = ["ENGINE", "NAME", "EngineProvider"]

NAME = "orcamem-engine"


class EngineProvider:
    """A :class:`~orcamem.capability.providers.MemoryProvider` over an in-process ``Memory``."""

    name = NAME
    capabilities = ProviderCapabilities(
        search="semantic",
        scopes=("user",),
        reads="records",
        decay=False,
        archive=False,
        retrieval_log=False,
        leaves_machine="nothing (the embedder ships with orcamem)",
    )

    def __init__(self, workspace: str | Path, *, clock: Clock | None = None, **_: Any) -> None:
        self.path = Path(workspace) / "memory" / "engine.db"
        self.clock = clock
        self._memory: Memory | None = None

    def notes(self) -> tuple[str, ...]:
        return (
            "Semantic and lexical: orcamem's hybrid recall (BM25 and the shipped static "
            "embedder), offline, nothing downloaded.",
            "Scoping collapses to a single user layer: memories are not separated per "
            "session, agent, or turn.",
            "No decay, no archive and no retrieval log (the engine's own access marks only).",
            f"Memories live in {self.path}.",
        )

    def _engine(self) -> Memory:
        """The engine, opened on first use (a host that never searches never loads it)."""
        if self._memory is None:
            from ..engine import Memory

            try:
                self._memory = Memory(self.path, clock=self.clock)
            except OrcamemError as exc:
                raise ProviderError(f"{NAME}: cannot open {self.path}: {exc}") from None
        return self._memory

    def check(self) -> ProviderStatus:
        """Open the engine and run one real search."""
        try:
            self.search("memory capability check", top_k=1)
        except ProviderError as exc:
            return ProviderStatus(
                NAME, NOT_AVAILABLE, str(exc), "pick builtin-markdown", self.notes(),
                self.capabilities,
            )  # fmt: skip
        return ProviderStatus(NAME, READY, "a search answered", "", self.notes(), self.capabilities)

    def search(
        self,
        query: str,
        *,
        top_k: int,
        include_archived: bool = False,
        scope: Scope | None = None,
        destination: str = "main-context",
    ) -> list[Recalled]:
        """The engine's hits for ``query`` (the user layer: ``scope`` does not apply)."""
        try:
            result = self._engine().search(query, top_k=top_k)
        except OrcamemError as exc:
            raise ProviderError(f"{NAME}: search failed: {exc}") from None
        return [
            Recalled(hit.text, id=hit.id, relevance=round(hit.score, 4))
            for hit in [*result.rules, *result.hits][:top_k]
        ]

    def save(
        self,
        text: str,
        *,
        importance: float = 0.5,
        tags: tuple[str, ...] = (),
        scope: Scope | None = None,
    ) -> str | None:
        """Store one memory (explicit, indexed at once) in the user layer."""
        try:
            return self._engine().remember(text, importance=importance, tags=tags).id
        except OrcamemError as exc:
            raise ProviderError(f"{NAME}: save failed: {exc}") from None

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None


ENGINE = {NAME: EngineProvider}
"""What a host passes as ``Capability(providers=...)`` to offer the engine provider."""

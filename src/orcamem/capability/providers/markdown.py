"""The built-in provider (``builtin-markdown``): the Markdown store, with nothing to provision.

It cannot be "installed but not set up": there is no setup step. Its check is one real call (a
read-only search that neither logs nor refreshes anything, nor creates ``memory/``).
"""

from __future__ import annotations

from pathlib import Path

from ..._kernel.clock import Clock
from ...errors import OrcamemError
from ..markdown.store import PROVIDER_NAME, MarkdownStore
from .base import (
    NOT_AVAILABLE,
    READY,
    ProviderCapabilities,
    ProviderError,
    ProviderStatus,
    Recalled,
    Scope,
)

__all__ = ["CAPABILITIES", "MarkdownProvider"]

CAPABILITIES = ProviderCapabilities(
    search="lexical",
    scopes=("user", "session", "agent", "turn"),
    reads="records",
    decay=True,
    archive=True,
    retrieval_log=True,
    leaves_machine="nothing",
)


class MarkdownProvider:
    """Memories as Markdown files under ``<workspace>/memory/``."""

    name = PROVIDER_NAME
    capabilities = CAPABILITIES

    def __init__(
        self, workspace: str | Path, *, half_life_days: float = 60.0, clock: Clock | None = None
    ) -> None:
        self.store = MarkdownStore(workspace, clock=clock, half_life_days=half_life_days)

    def notes(self) -> tuple[str, ...]:
        days = f"{self.store.half_life_days:g}"
        return (
            "Search is lexical, not semantic: a memory is found by the words of your message "
            "(tags weigh more than body text, containing the message verbatim earns a bonus); "
            "a paraphrase such as 'branching' for 'branch' is not found, and a memory under "
            "the minimum match never appears.",
            "Scopes user, session, agent and turn are kept apart; automatic saves are unscoped.",
            "Reads are structured records: id, tags, timestamps, importance and citations.",
            f"Memories decay with a half-life of {days} days (importance ≥ 0.7 doubles it, "
            "≤ 0.3 halves it, ≥ 0.9 pins); below 0.25 a save moves them to memory/archive/ "
            "with a cold-storage banner. Nothing is ever deleted.",
            "Every search is logged (ids and counts, never content) in memory/retrieval-log.jsonl.",
            "Nothing leaves this machine: every byte of its I/O is local file access in one "
            "module that imports no network, subprocess or environment access.",
        )

    def check(self) -> ProviderStatus:
        try:
            self.store.search("capability check", top_k=1, record=False)
        except (OSError, OrcamemError) as exc:
            return ProviderStatus(
                self.name,
                NOT_AVAILABLE,
                f"the workspace's memory folder cannot be read: {exc}",
                f"make {self.store.root} readable, or pick another workspace",
                self.notes(),
                self.capabilities,
            )
        return ProviderStatus(
            self.name,
            READY,
            f"memories in {self.store.root} (created on the first save)",
            "",
            self.notes(),
            self.capabilities,
        )

    def search(
        self,
        query: str,
        *,
        top_k: int,
        include_archived: bool = False,
        scope: Scope | None = None,
        destination: str = "main-context",
    ) -> list[Recalled]:
        try:
            found = self.store.search(
                query,
                top_k=top_k,
                include_archived=include_archived,
                scope=(scope or Scope()).as_dict(),
                destination=destination,
            )
        except OSError as exc:
            raise ProviderError(f"the Markdown memory could not be searched: {exc}") from exc
        return [
            Recalled(
                text=hit.entry.text,
                id=hit.entry.id,
                archived=hit.entry.archived,
                relevance=round(hit.score, 4),
                tags=hit.entry.tags,
                extra={
                    "importance": hit.entry.weight,
                    "decay": round(hit.decay, 4),
                    "match": round(hit.match.score, 4),
                    "path": str(hit.entry.path),
                },
            )
            for hit in found.hits
        ]

    def save(
        self,
        text: str,
        *,
        importance: float = 0.5,
        tags: tuple[str, ...] = (),
        scope: Scope | None = None,
    ) -> str | None:
        try:
            entry = self.store.save(
                text, importance=importance, tags=tags, scope=(scope or Scope()).as_dict()
            )
        except OSError as exc:
            raise ProviderError(f"the Markdown memory could not be written: {exc}") from exc
        return entry.id

    def close(self) -> None:
        """Nothing to release (no handles are kept open)."""

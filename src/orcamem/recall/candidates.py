"""What recall needs from a store: the candidate queries, and the rows they answer with.

The hybrid pipeline pushes everything it can into the store (BM25 top-N, vector top-N,
session windows) and scores only the small candidate set in Python. Any engine store that
answers :class:`CandidateSource` can be recalled from; the engine's ``Store`` includes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np

from .._kernel.model import MemoryRecord
from .filters import SearchFilter

__all__ = ["CandidateSource", "EntitySeeds", "LineRow"]


EntitySeeds = tuple[dict[str, tuple[int, int]], list[tuple[int | str, int, int]]]
"""``entity_sources``' answer: ``name → (entity id, fan)``, then ``(episode or memory id,
entity id, fan)`` for each entity those name."""


class LineRow(NamedTuple):
    """A line joined with the episode fields recall needs. A named tuple, not a dataclass:
    every search builds hundreds from query rows, and a frozen dataclass's ``__init__`` took
    about 3% of a search's CPU (docs/recall.md, "What a search costs")."""

    id: int
    episode_id: int
    seq: int
    text: str
    space: str
    kind: str
    role: str | None
    session_id: str | None
    turn_id: str | None
    occurred_at: str
    episode_text: str


class CandidateSource(Protocol):
    """The candidate queries of one space. Synchronous and thread-safe."""

    def lexical_lines(
        self,
        space: str,
        match: str,
        limit: int,
        weights: tuple[float, float] = (1.0, 0.4),
        *,
        where: SearchFilter | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 top-``limit`` lines for an FTS5 ``match`` (text, context column weights), of
        the episodes ``where`` admits (its clauses in the query)."""
        ...

    def vector_lines(
        self, space: str, vector: np.ndarray, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[int, float]]:
        """Cosine top-``limit`` lines for a unit query vector, scoring only the lines of the
        episodes ``where`` admits."""
        ...

    def lines(self, ids: Sequence[int]) -> list[LineRow]: ...
    def episode_lines(
        self, space: str, episode_ids: Sequence[int], *, first_only: bool = False
    ) -> list[LineRow]: ...
    def session_window(
        self, space: str, episode_ids: Sequence[int], radius: int
    ) -> dict[int, list[tuple[int, int]]]:
        """For each episode, its session neighbours within ``radius`` turns: (offset, id)."""
        ...

    def line_vectors(self, space: str, ids: Sequence[int]) -> dict[int, np.ndarray]: ...
    def superseded_lines(self, space: str, line_ids: Sequence[int]) -> dict[int, str]:
        """Lines cited by a memory that a newer one superseded: line id -> newer memory id."""
        ...

    def term_counts(self, space: str, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The space's lines and active memories, and for each word how many hold it
        (stemmed as the full-text index stems; a count may stop at a cap)."""
        ...

    def noise_floor(self, space: str, percentile: float) -> float:
        """The cosine a random query reaches in this space (vector hits below it are noise)."""
        ...

    def entity_fans(self, space: str, names: Sequence[str]) -> dict[str, tuple[int, int]]:
        """The entity graph: ``name → (entity id, fan)`` for the names the space knows."""
        ...

    def entities_of(
        self, space: str, episode_ids: Sequence[int], memory_ids: Sequence[str]
    ) -> list[tuple[int | str, int, int]]:
        """The entities those episodes and memories name: ``(episode or memory id, entity
        id, fan)``."""
        ...

    def entity_sources(
        self,
        space: str,
        names: Sequence[str],
        episode_ids: Sequence[int],
        memory_ids: Sequence[str],
    ) -> EntitySeeds:
        """``entity_fans(space, names)`` and ``entities_of(space, episode_ids,
        memory_ids)`` together: activation's seeds, in one round trip where that costs."""
        ...

    def entity_mentions(
        self, space: str, entity_ids: Sequence[int], limit: int
    ) -> list[tuple[int, int, int]]:
        """Where those entities are named: ``(entity id, episode id, line id)``, at most
        ``limit`` rows an entity."""
        ...

    def lexical_memories(
        self, space: str, match: str, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[str, float]]: ...
    def vector_memories(
        self, space: str, vector: np.ndarray, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[str, float]]: ...
    def memories_by_id(self, space: str, ids: Sequence[str]) -> list[MemoryRecord]: ...
    def get_memory(self, space: str, memory_id: str) -> MemoryRecord: ...
    def list_memories(
        self, space: str, *, include_inactive: bool = False, prohibited: bool | None = None
    ) -> list[MemoryRecord]: ...

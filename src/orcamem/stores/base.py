"""The ``Store`` protocol: what every storage engine must do, and the records it trades in.

Stores hold episodes (append-only, split into lines), memories and per-space metadata, and
answer the candidate queries of the recall pipeline (lexical top-N, vector top-N). They never
format prompts or score beyond their own index. ``tests/test_store_contract.py`` is the
contract every store must pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..foundation.model import Episode, MemoryRecord, NewEpisode, NewMemory

__all__ = [
    "CAPABILITIES",
    "AutomationNote",
    "EpisodeWrite",
    "LineRow",
    "MemoryUpdate",
    "SpaceInfo",
    "Store",
]

CAPABILITIES = frozenset(
    {"episodes", "vectors", "lexical", "scopes", "decay", "jobs", "retrieval_log"}
)


@dataclass(frozen=True)
class EpisodeWrite:
    """One episode to append, with its lines and their vectors already computed."""

    episode: NewEpisode
    lines: Sequence[str]
    """The episode's sentences, in order; their ids become ``s1, s2, …``."""
    vectors: np.ndarray
    """``(len(lines), dim)`` float32 unit vectors from the space's embedder."""
    embedder_id: str
    occurred_at: str
    created_at: str


@dataclass(frozen=True)
class LineRow:
    """A line joined with the episode fields recall needs."""

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


@dataclass(frozen=True)
class SpaceInfo:
    name: str
    created_at: str
    embedder_id: str | None
    dim: int | None
    episodes: int = 0
    lines: int = 0
    memories: int = 0


@dataclass(frozen=True)
class MemoryUpdate:
    """Fields to change on a stored memory; ``None`` leaves a field as it is."""

    active: bool | None = None
    superseded_by: str | None = None
    archived_at: str | None = None
    staleness: float | None = None


@dataclass(frozen=True)
class AutomationNote:
    """The one short note an automation keeps between firings (written by its agent)."""

    automation_id: str
    note: str
    updated_at: str


class Store(Protocol):
    """The storage contract. All methods are synchronous and thread-safe."""

    capabilities: frozenset[str]

    def writing(self) -> AbstractContextManager[Any]:
        """One atomic write; nested use joins the outer one (a savepoint)."""
        ...

    # spaces
    def ensure_space(self, space: str, embedder_id: str, dim: int, now: str) -> SpaceInfo: ...
    def space_info(self, space: str) -> SpaceInfo | None: ...
    def list_spaces(self) -> list[SpaceInfo]: ...

    # episodes and lines
    def append_episodes(self, writes: Sequence[EpisodeWrite]) -> list[Episode]: ...
    def get_episode(self, space: str, episode_id: int) -> Episode: ...
    def iter_episodes(self, space: str) -> Iterator[Episode]: ...
    def delete_episode(self, space: str, episode_id: int) -> None: ...
    def find_episode(
        self,
        space: str,
        text_digest: str,
        occurred_at: str,
        session_id: str | None,
        turn_id: str | None,
    ) -> int | None: ...
    def line_ids(self, space: str, episode_id: int) -> dict[int, int]: ...
    def line_positions(self, ids: Sequence[int]) -> dict[int, tuple[int, int]]: ...
    def last_episode(self, space: str, session_id: str) -> Episode | None: ...
    def lines(self, ids: Sequence[int]) -> list[LineRow]: ...
    def episode_lines(
        self, space: str, episode_ids: Sequence[int], *, first_only: bool = False
    ) -> list[LineRow]: ...
    def session_window(
        self, space: str, episode_ids: Sequence[int], radius: int
    ) -> dict[int, list[tuple[int, int]]]: ...
    def lexical_lines(
        self, space: str, match: str, limit: int, weights: tuple[float, float] = (1.0, 0.4)
    ) -> list[tuple[int, float]]: ...
    def vector_lines(
        self, space: str, vector: np.ndarray, limit: int
    ) -> list[tuple[int, float]]: ...
    def line_vectors(self, space: str, ids: Sequence[int]) -> dict[int, np.ndarray]: ...

    # memories
    def put_memory(
        self, memory: NewMemory, vector: np.ndarray, embedder_id: str, now: str
    ) -> MemoryRecord: ...
    def restore_memory(self, record: MemoryRecord, vector: np.ndarray) -> str | None: ...
    def get_memory(self, space: str, memory_id: str) -> MemoryRecord: ...
    def list_memories(
        self, space: str, *, include_inactive: bool = False, prohibited: bool | None = None
    ) -> list[MemoryRecord]: ...
    def memories_by_id(self, space: str, ids: Sequence[str]) -> list[MemoryRecord]: ...
    def update_memory(
        self, space: str, memory_id: str, update: MemoryUpdate, now: str
    ) -> MemoryRecord: ...
    def delete_memory(self, space: str, memory_id: str) -> None: ...
    def lexical_memories(self, space: str, match: str, limit: int) -> list[tuple[str, float]]: ...
    def vector_memories(
        self, space: str, vector: np.ndarray, limit: int
    ) -> list[tuple[str, float]]: ...
    def mark_accessed(self, space: str, memory_ids: Sequence[str], now: str) -> None: ...

    # consolidation
    def pending_episodes(self, space: str, limit: int) -> list[Episode]: ...
    def mark_consolidated(self, space: str, last_episode_id: int, now: str) -> None: ...
    def last_episode_created(self, space: str) -> str | None: ...
    def add_audit(
        self, space: str, job_id: str | None, item: dict, reason: str, now: str
    ) -> None: ...
    def audit_log(self, space: str, limit: int = 100) -> list[dict]: ...
    def superseded_lines(self, space: str, line_ids: Sequence[int]) -> dict[int, str]: ...

    # maintenance
    def noise_floor(self, space: str, percentile: float) -> float: ...
    def replace_vectors(
        self,
        space: str,
        embedder_id: str,
        dim: int,
        line_vectors: dict[int, np.ndarray],
        memory_vectors: dict[str, np.ndarray],
    ) -> None: ...
    def iter_texts_for_embedding(
        self, space: str
    ) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]: ...
    def counts(self) -> dict[str, int]: ...
    def size_bytes(self) -> int: ...
    def close(self) -> None: ...

    # REST API reads and automation notes
    def page_episodes(
        self, space: str, *, after: int = 0, limit: int = 100, session_id: str | None = None
    ) -> list[Episode]:
        """Up to ``limit`` episodes with ``id > after``, oldest first (an id cursor)."""
        ...

    def get_automation_note(self, automation_id: str) -> AutomationNote | None: ...
    def put_automation_note(self, automation_id: str, note: str, now: str) -> AutomationNote: ...
    def delete_automation_note(self, automation_id: str) -> bool: ...

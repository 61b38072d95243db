"""The engine's ``Store``: a few small role protocols, and the records they trade in.

A store holds episodes (append-only, split into lines), memories and per-space metadata
(:class:`EpisodeLog`, :class:`MemoryTable`), answers the recall pipeline's candidate queries
(``recall.candidates.CandidateSource``: lexical top-N, vector top-N), keeps its maintenance
chores (:class:`Admin`), checks its derived data against the authority (:class:`Health`),
and hands out the role stores that share its connection: ``keys``
(API key rows), ``notes`` (automation notes) and ``jobs`` (the rows of the durable job queue).
A store never formats prompts or scores beyond its own index. ``tests/test_store_contract.py``
is the contract every store must pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..._kernel.jobs import JobStore
from ..._kernel.model import Episode, MemoryRecord, NewEpisode, NewMemory
from ...errors import EmbedderMismatchError
from ...recall.candidates import CandidateSource, LineRow
from ...recall.entities import entities

__all__ = [
    "CAPABILITIES",
    "Admin",
    "AutomationNote",
    "BlockEntry",
    "BlockLog",
    "CandidateSource",
    "EpisodeKey",
    "EpisodeLog",
    "EpisodeWrite",
    "Health",
    "KeyRows",
    "LineRow",
    "MemoryTable",
    "MemoryUpdate",
    "NoteRows",
    "Problem",
    "SpaceInfo",
    "SpaceRow",
    "Store",
    "same_embedder",
]

CAPABILITIES = frozenset(
    {"episodes", "vectors", "lexical", "scopes", "decay", "jobs", "retrieval_log"}
)


EpisodeKey = tuple[str, str, str | None, str | None, str | None, str]
"""What makes two episodes the same to an import: ``(digest, occurred_at, session_id,
turn_id, role, kind)`` (a user's "Yes." and the assistant's, said in one session at one
time, are two turns)."""


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
    names: Sequence[Sequence[str]] = ()
    """Each line's entities (``recall.entities``), found with the line (a bulk ingest's child
    process finds them); left empty, they are found here."""

    def __post_init__(self) -> None:
        if not self.names and self.lines:
            object.__setattr__(self, "names", [entities(line) for line in self.lines])


@dataclass(frozen=True)
class SpaceRow:
    """A space's own record, without counts: what opening it for a read or a write needs
    (``space_info`` sums every text's length, which a first search at a million lines felt)."""

    name: str
    created_at: str
    embedder_id: str | None
    dim: int | None
    embedder_spec: str | None = None


@dataclass(frozen=True)
class SpaceInfo:
    name: str
    created_at: str
    embedder_id: str | None
    dim: int | None
    episodes: int = 0
    lines: int = 0
    memories: int = 0
    last_activity: str | None = None
    """When the space was last written: its newest episode or memory change (UTC)."""
    embedder_spec: str | None = None
    """What rebuilds the space's embedder (``make_embedder``); ``None``: an embedder object, or
    a space from before specs were recorded."""
    size_bytes: int = 0
    """What the space's rows hold: its episodes' and memories' text (UTF-8 bytes) and a 4-byte
    float a vector dimension of each line and memory (indexes and pages not counted)."""


def same_embedder(space: str, found_id: str, found_dim: int, embedder_id: str, dim: int) -> None:
    """Refuse to mix vectors: the space records ``found_id``/``found_dim``, the writer has
    ``embedder_id``/``dim`` (every store checks it the same way)."""
    if found_id != embedder_id or found_dim != dim:
        raise EmbedderMismatchError(
            f"space {space!r} was embedded with {found_id} (dim {found_dim}) but this "
            f"Memory uses {embedder_id} (dim {dim}): run `orcamem reembed --space {space}` to "
            "re-embed it with the current embedder, or open it with the embedder it was made with"
        )


def lacking_vectors(
    conn: Any, param: str, space: str, lines: Mapping[int, Any], memories: Mapping[str, Any]
) -> tuple[list[int], list[str]]:
    """The ids of ``space``'s lines and memories a re-embed's maps do not hold (every SQL
    store's ``replace_vectors`` asks in its write transaction, ``param`` its marker)."""
    line_ids, memory_ids = (
        sorted(
            row[0]
            for row in conn.execute(f"SELECT id FROM {table} WHERE space = {param}", (space,))
            if row[0] not in given
        )
        for table, given in (("lines", lines), ("memories", memories))
    )
    return line_ids, memory_ids


@dataclass(frozen=True)
class MemoryUpdate:
    """Fields to change on a stored memory; ``None`` leaves a field as it is."""

    active: bool | None = None
    superseded_by: str | None = None
    archived_at: str | None = None
    staleness: float | None = None
    pinned: bool | None = None


@dataclass(frozen=True)
class AutomationNote:
    """The one short note an automation keeps between firings (written by its agent)."""

    automation_id: str
    note: str
    updated_at: str


@dataclass(frozen=True)
class BlockEntry:
    """One block injected before a turn, as the opt-in log keeps it (``engine.blocklog``)."""

    space: str
    created_at: str
    surface: str
    """Who injected it: ``proxy``, ``sdk``, ``rest`` or ``mcp``."""
    item_ids: tuple[str, ...]
    """The ids of the items the block holds (memories, rules, passages), in block order."""
    tokens: int
    query_hash: str
    """``sha256:`` of the query: equal queries match, the words are not kept."""
    query: str | None = None
    """The query and the block themselves: only with ``pack.log_block_content``."""
    block: str | None = None
    id: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "item_ids": list(self.item_ids)}


class EpisodeLog(Protocol):
    """Spaces and the append-only episode log, with its lines and the consolidation mark."""

    def writing(self) -> AbstractContextManager[Any]:
        """One atomic write; nested use joins the outer one (a savepoint)."""
        ...

    def ensure_space(
        self, space: str, embedder_id: str, dim: int, now: str, *, spec: str | None = None
    ) -> SpaceInfo: ...
    def space_row(self, space: str) -> SpaceRow | None:
        """The space's record (name, embedder) or ``None``: one indexed row, no counts."""
        ...

    def space_info(self, space: str) -> SpaceInfo | None: ...
    def list_spaces(self) -> list[SpaceInfo]: ...
    def append_episodes(self, writes: Sequence[EpisodeWrite]) -> list[Episode]: ...
    def get_episode(self, space: str, episode_id: int) -> Episode: ...
    def iter_episodes(self, space: str) -> Iterator[Episode]: ...
    def page_episodes(
        self, space: str, *, after: int = 0, limit: int = 100, session_id: str | None = None
    ) -> list[Episode]:
        """Up to ``limit`` episodes with ``id > after``, oldest first (an id cursor)."""
        ...

    def delete_episode(self, space: str, episode_id: int) -> None: ...
    def delete_space(self, space: str) -> dict[str, int]:
        """Delete the space and all it holds in one transaction; what went, by table."""
        ...

    def find_episodes(self, space: str, keys: Sequence[EpisodeKey]) -> dict[EpisodeKey, list[int]]:
        """The ids of the episodes already stored that each of ``keys`` names, ascending (a
        key said twice in a session is two episodes): what an idempotent import skips,
        asked once a batch."""
        ...

    def last_texts(self, space: str, session_ids: Sequence[str]) -> dict[str, str]:
        """The newest episode's text of each of these sessions that holds one."""
        ...

    def find_turn(
        self, space: str, session_id: str | None, turn_id: str, role: str | None
    ) -> Episode | None:
        """The first episode of ``role`` stored under this session and turn id, if any."""
        ...

    def line_ids(self, space: str, episode_id: int) -> dict[int, int]: ...
    def line_positions(self, ids: Sequence[int]) -> dict[int, tuple[int, int]]: ...
    def pending_episodes(self, space: str, limit: int) -> list[Episode]: ...
    def mark_consolidated(self, space: str, last_episode_id: int, now: str) -> None: ...
    def last_episode_created(self, space: str) -> str | None: ...


class MemoryTable(Protocol):
    """Durable memories (facts, states, events, rules) and the consolidation audit."""

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
    def mark_accessed(self, space: str, memory_ids: Sequence[str], now: str) -> None: ...
    def add_audit(
        self, space: str, job_id: str | None, item: dict, reason: str, now: str
    ) -> None: ...
    def audit_log(self, space: str, limit: int = 100) -> list[dict]: ...


class BlockLog(Protocol):
    """The bounded log of injected blocks (in the database, so replicas share it)."""

    def log_block(self, entry: BlockEntry, *, keep: int, since: str) -> None:
        """Append ``entry``; then drop the space's entries older than ``since`` and all but
        its newest ``keep``, in the same transaction."""
        ...

    def injected_blocks(self, space: str, limit: int = 100) -> list[BlockEntry]:
        """The space's logged blocks, newest first."""
        ...


class Admin(Protocol):
    """Re-embedding, sizes and closing."""

    def replace_vectors(
        self,
        space: str,
        embedder_id: str,
        dim: int,
        line_vectors: dict[int, np.ndarray],
        memory_vectors: dict[str, np.ndarray],
        *,
        spec: str | None = None,
        partial: bool = False,
    ) -> tuple[list[int], list[str]]:
        """Swap every vector of ``space`` and its embedder record in one transaction, when
        the maps cover every line and memory it holds; else write nothing and return the
        ids they lack (written while the caller embedded: embed those and call again).
        ``partial``: write only these (a repair's, by the space's own embedder)."""
        ...

    def iter_texts_for_embedding(
        self, space: str
    ) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]: ...
    def counts(self) -> dict[str, int]: ...
    def size_bytes(self) -> int: ...
    def warm(self, space: str) -> None:
        """Load what searches of ``space`` keep in this process (its vectors, and the postings
        of a space the lexical index answers) and wait for the loads: the first searches
        would otherwise each wait for them, or run in SQL beside them."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Problem:
    """One thing a check found wrong, said in one line that ends with what to run next."""

    kind: str
    """``sqlite``, ``fts``, ``orphans``, ``vectors``, ``digest``, ``lineage`` or ``graph``."""
    message: str
    space: str | None = None
    repairable: bool = True
    """Whether ``orcamem repair`` can fix it (derived data); ``False`` needs a backup."""


class Health(Protocol):
    """Check the derived data (indexes, vectors, lineage) against the authority; rebuild it.

    ``problems`` reads only; ``repair_derived`` fixes what needs no embedder, in one
    transaction, and says what it did; vectors are re-embedded by the caller, which has the
    space's embedder, from ``stale_vectors``.
    """

    def problems(self) -> list[Problem]: ...
    def repair_derived(self) -> list[str]: ...
    def stale_vectors(self, space: str) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
        """``(line id, text)`` and ``(memory id, content)`` whose vector is missing or not
        the space's size."""
        ...


class KeyRows(Protocol):
    """API key rows: hashes only (``engine.keys`` owns the rules)."""

    def add(
        self, key_id: str, digest: str, name: str, spaces: Sequence[str], admin: bool, now: str
    ) -> None: ...
    def list(self) -> list[dict]: ...
    def revoke(self, key_id: str, now: str) -> bool: ...
    def active(self, digest: str) -> tuple[str, str, list[str], bool] | None: ...


class NoteRows(Protocol):
    """Automation notes keyed by automation id (``engine.automations`` owns the rules)."""

    def get(self, automation_id: str) -> AutomationNote | None: ...
    def put(self, automation_id: str, note: str, now: str) -> AutomationNote: ...
    def delete(self, automation_id: str) -> bool: ...


class Store(EpisodeLog, MemoryTable, BlockLog, CandidateSource, Admin, Health, Protocol):
    """The whole engine store: its roles, plus the role stores on the same connection."""

    capabilities: frozenset[str]

    @property
    def keys(self) -> KeyRows: ...
    @property
    def notes(self) -> NoteRows: ...
    @property
    def jobs(self) -> JobStore: ...

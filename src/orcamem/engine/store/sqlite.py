"""``SQLiteStore``: episodes, lines, memories and spaces in one SQLite file.

One writer connection per store, guarded by a lock (the SDK is thread-safe), and a pool of
read-only connections (``engine.store.readers``) that reads borrow, so searches run in parallel
and never wait behind a write; a read on the thread inside ``writing()`` uses the writer, so it
sees its own uncommitted rows. ``":memory:"`` is private to one connection, so an in-memory
store has only the writer and every read takes its lock. WAL so readers never wait for a
writer; ``BEGIN IMMEDIATE`` for every write so read-modify-write cannot interleave with another
process; a busy timeout so concurrent writers queue instead of failing. Driver errors are
translated at this boundary: no ``sqlite3`` exception escapes.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path

import numpy as np

from ..._kernel.files import make_dirs
from ..._kernel.jobs.sqlite import SQLiteJobStore
from ..._kernel.model import Episode, MemoryRecord, NewMemory, digest, new_memory_id
from ..._kernel.redact import safe_url
from ...errors import (
    ClosedError,
    CorruptStoreError,
    InvalidInputError,
    NotFoundError,
    OrcamemError,
    ReadOnlyStoreError,
    SchemaTooNewError,
    StoreError,
)
from ...recall.candidates import EntitySeeds
from ...recall.filters import SearchFilter
from . import check, graph
from .base import (
    CAPABILITIES,
    BlockEntry,
    EpisodeKey,
    EpisodeWrite,
    LineRow,
    MemoryUpdate,
    Problem,
    SpaceInfo,
    SpaceRow,
    lacking_vectors,
    same_embedder,
)
from .inserts import insert_rows, variable_limit
from .lexical_index import LexicalIndex
from .line_rows import ROW_COLUMNS, LineRows, line_rows
from .migrations import LATEST, MIGRATIONS
from .readers import ReaderPool
from .relink import unlink_episode
from .rows import BlockTable, KeyTable, NoteTable
from .scope import (
    LINE_COLUMNS,
    LINE_JOIN,
    SQLITE,
    episode_clauses,
    joined_line_clauses,
    line_clauses,
    line_mask,
    memory_clauses,
)
from .vector_index import VectorIndex, encode_vector

__all__ = ["APPLICATION_ID", "SQLiteStore"]

_SQLITE_MAGIC = b"SQLite format 3\x00"

APPLICATION_ID = 0x4F52434D
"""``PRAGMA application_id`` of every orcamem database: ``0x4F52434D``, ASCII ``ORCM``.

Set on every file orcamem creates or migrates. A non-empty SQLite file that has tables but
neither this id nor orcamem's own ``schema_version`` table is another application's and is
refused unmodified (files from orcamem versions before the id have ``application_id`` 0 and
orcamem's tables: they open and get the id).
"""

_WRITER_CACHE_KIB = 65_536
_EPISODE_COLUMNS = (
    "id, space, kind, role, text, session_id, turn_id, occurred_at, created_at, digest, meta"
)
_MEMORY_COLUMNS = (
    "id, space, category, content, summary, confidence, importance, tags, source, entity, "
    "attribute, value, condition, prohibited, event_date, session_id, turn_id, cited_lines, "
    "created_at, updated_at, last_accessed_at, access_count, staleness, archived_at, active, "
    "superseded_by, event_end, pinned"
)


def _translate(exc: sqlite3.Error, path: str) -> StoreError:
    """Map a driver error to the most specific orcamem error, with the next step."""
    message = str(exc)
    lowered = message.lower()
    if "readonly" in lowered or "read-only" in lowered or "unable to open" in lowered:
        return ReadOnlyStoreError(
            f"cannot write the memory database {path} ({message}): check that the file and "
            "its directory are writable, or pass another path (--db / path=)"
        )
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return CorruptStoreError(
            f"{path} is not a usable orcamem database ({message}): move it aside and start a "
            "new one, or restore it from an `orcamem export` file"
        )
    if "locked" in lowered or "busy" in lowered:
        return StoreError(
            f"the memory database {path} stayed locked by another process ({message}): retry, "
            "or raise busy_timeout_ms"
        )
    return StoreError(f"SQLite error on {path}: {message}")


_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def _refuse_url(path: str) -> None:
    """A database URL is refused before anything is created: ``postgresql://…`` taken as a file
    name would make a directory ``postgresql:`` and a SQLite file inside it (issue 16)."""
    scheme = _URL.match(path)
    if scheme:
        raise InvalidInputError(
            f"{safe_url(path)}: {scheme.group(1)}:// databases are "
            "not supported by this orcamem; pass the path of an SQLite file (e.g. memory.db)"
        )


def _create_space(
    conn: sqlite3.Connection,
    space: str,
    embedder_id: str,
    dim: int,
    now: str,
    spec: str | None = None,
) -> None:
    """Create the space's row unless it exists (then it is left as it is: ``ensure_space``
    checks it). Every write calls it too: another process may have deleted the space
    (``delete_space``) after this one checked it, and the write starts it anew, as a first
    write would. A new row's ``vector_epoch`` is random, so a process that still holds vectors
    of a deleted space of that name sees a changed epoch and reloads instead of reusing them."""
    conn.execute(
        "INSERT OR IGNORE INTO spaces (name, created_at, embedder_id, dim, vector_epoch, "
        "embedder_spec) VALUES (?, ?, ?, ?, ?, ?)",
        (space, now, embedder_id, dim, secrets.randbits(62), spec),
    )
    found = conn.execute("SELECT embedder_id, dim FROM spaces WHERE name = ?", (space,)).fetchone()
    same_embedder(space, found[0], found[1], embedder_id, dim)


class SQLiteStore:
    """A ``Store`` on one SQLite file (or ``":memory:"``).

    Args:
        path: the database file; parent directories are created.
        synchronous: SQLite ``synchronous`` pragma (FULL: an acknowledged write survives power
            loss; NORMAL: it survives a process crash).
        busy_timeout_ms: how long a writer waits for another process's write lock.
        blas_threads: BLAS threads for vector search.
        prune_above: search a space of more vectors than this in two steps (a projection,
            then the exact score of the best few thousand: ``engine.store.vector_index``);
            ``None``: always exact.
        lexical_above: answer the unfiltered BM25 query of a space of more lines than this
            from an in-process index (``engine.store.lexical_index``, FTS5's exact scores);
            ``None``: always FTS5.

    Raises:
        CorruptStoreError: the file exists but is not an SQLite database, or is damaged.
        ReadOnlyStoreError: the file or its directory cannot be written.
        SchemaTooNewError: a newer orcamem wrote the file.
    """

    capabilities = frozenset({"episodes", "vectors", "lexical"}) & CAPABILITIES
    PARAM = "?"  # the parameter marker of the shared row tables (``store.rows``)
    TIE_ORDER = "rowid"  # and what orders rows created in the same instant

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 10_000,
        blas_threads: int = 1,
        prune_above: int | None = None,
        lexical_above: int | None = None,
    ) -> None:
        self.path = str(path)
        _refuse_url(self.path)
        self._lock = threading.RLock()  # the writer connection's
        self._depth = 0  # nesting of writing() on the lock-holding thread
        self._owner: int | None = None  # the thread inside writing()
        self._closed = False
        self._readers: ReaderPool | None = None
        self._lexical = LexicalIndex()  # before the connections: closing stops its loads
        if self.path != ":memory:":
            self._check_file(Path(self.path))
        try:
            self._conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if self.path != ":memory:":
                self._check_owner(self._conn, self.path)
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if self.path != ":memory:" and mode.lower() != "wal":
                raise ReadOnlyStoreError(f"cannot switch {self.path} to WAL mode (got {mode})")
            self._conn.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            # 64 MiB of pages for the writer (default 2 MiB): a bulk add at 60,000 lines
            # ran 599 -> 808 turns/s, the index pages it updates stay cached (docs/storage.md)
            self._conn.execute(f"PRAGMA cache_size = {-_WRITER_CACHE_KIB}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
            if self.path != ":memory:":
                check.warn_on_open(self._conn, self.path)
                self._readers = ReaderPool(self.path, busy_timeout_ms=busy_timeout_ms)
        except sqlite3.Error as exc:
            self._close_quietly()
            raise _translate(exc, self.path) from exc
        except Exception:
            self._close_quietly()
            raise
        self._index_lock = threading.Lock()
        # the refresh's clock (``_refresh``): ticks taken in order, by any thread
        self._ticks = itertools.count(1)
        self._written = 0  # the tick after the writer's last commit
        self._fresh = 0  # the tick before the last refresh read the database
        self._fresh_version: int | None = None  # and the file's data_version then
        self._line_index = VectorIndex(
            "lines",
            "id",
            blas_threads=blas_threads,
            prune_above=prune_above,
            columns=LINE_COLUMNS,
            join=LINE_JOIN,
        )
        self._memory_index = VectorIndex(
            "memories", "id", blas_threads=blas_threads, prune_above=prune_above
        )
        self._lexical_above = lexical_above
        self._rows = LineRows()

    # -- opening ---------------------------------------------------------------------------

    @staticmethod
    def _check_file(path: Path) -> None:
        if path.is_dir():
            raise CorruptStoreError(f"{path} is a directory: pass a file path for the database")
        if path.exists() and path.stat().st_size > 0:
            with path.open("rb") as handle:
                if handle.read(16) != _SQLITE_MAGIC:
                    raise CorruptStoreError(
                        f"{path} is not an SQLite database: move it aside, or point orcamem at "
                        "another file (ORCA_HOME, --db, path=)"
                    )
            if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
                raise ReadOnlyStoreError(
                    f"{path} (or its directory) is read-only: orcamem needs to write the file and "
                    "its -wal/-shm companions; fix the permissions or choose another path"
                )
            return
        try:
            make_dirs(path.parent, mode=0o777)  # each new directory fsynced into its parent
        except StoreError as exc:
            cause = exc.__cause__  # make_dirs raises from the OSError
            reason = cause.strerror if isinstance(cause, OSError) else None
            raise ReadOnlyStoreError(
                f"cannot create the directory {path.parent} ({reason or cause}): choose a "
                "writable location with ORCA_HOME or path="
            ) from cause
        if not os.access(path.parent, os.W_OK):
            raise ReadOnlyStoreError(
                f"the directory {path.parent} is read-only: choose a writable location with "
                "ORCA_HOME or path="
            )

    @staticmethod
    def _check_owner(conn: sqlite3.Connection, path: str) -> None:
        """Refuse, before anything is written, an SQLite file that another application owns.

        Ours: ``application_id`` is :data:`APPLICATION_ID`, or the file has no tables yet, or
        (written before the id existed) ``application_id`` is 0 and its ``schema_version``
        table records orcamem's first migration.
        """
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if app_id == APPLICATION_ID:
            return
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        if app_id == 0 and not tables:
            return
        if app_id == 0 and "schema_version" in tables:
            with suppress(sqlite3.Error):
                row = conn.execute(
                    "SELECT description FROM schema_version WHERE version = 1"
                ).fetchone()
                if row is not None and row[0] == MIGRATIONS[0][1]:
                    return
        shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
        owner = f"application_id 0x{app_id & 0xFFFFFFFF:08X}, " if app_id else ""
        raise CorruptStoreError(
            f"{path} is another application's SQLite database ({owner}tables: "
            f"{shown or 'none'}), not an orcamem store; it was left unchanged: point orcamem "
            "at another file (ORCA_HOME, --db, path=)"
        )

    def _migrate(self) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version "
                "(version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            current = conn.execute(
                "SELECT coalesce(max(version), 0) FROM schema_version"
            ).fetchone()[0]
            if current > LATEST:
                raise SchemaTooNewError(
                    f"{self.path} has schema version {current}, newer than this orcamem "
                    f"({LATEST}): upgrade orcamem (pip install -U orcamem)"
                )
            for version, description, statements in MIGRATIONS:
                if version <= current:
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
                    (version, description),
                )
            if current < graph.VERSION <= LATEST:  # a file from before the graph: derive it
                for (space,) in conn.execute("SELECT name FROM spaces").fetchall():
                    graph.rebuild(conn, space)
            if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def schema_version(self) -> int:
        with self.reading() as conn:
            return conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def _serial(self) -> Iterator[sqlite3.Connection]:
        """The writer connection under its lock; driver errors become ``StoreError``."""
        with self._lock:
            if self._closed:
                raise ClosedError("this store is closed: open a new Memory")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise _translate(exc, self.path) from exc

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection to read with: a pooled read-only one, or the writer on the thread
        inside ``writing()`` (and always for ``":memory:"``)."""
        if self._readers is None or self._owner == threading.get_ident():
            with self._serial() as conn:
                yield conn
            return
        if self._closed:
            raise ClosedError("this store is closed: open a new Memory")
        try:
            with self._readers.connection() as conn:
                yield conn
        except sqlite3.Error as exc:
            raise _translate(exc, self.path) from exc

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any error rolls back and nothing is written.

        Nested use (a job's publish step calling store writes) becomes a savepoint inside the
        outer transaction, so the whole publish commits or rolls back as one.
        """
        with self._serial() as conn:
            depth = self._depth
            self._depth += 1
            self._owner = threading.get_ident()
            try:
                if depth:
                    conn.execute(f"SAVEPOINT nested_{depth}")
                else:
                    conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    if depth:
                        conn.execute(f"RELEASE nested_{depth}")
                    else:
                        conn.execute("COMMIT")
                        self._written = next(self._ticks)
                except BaseException:
                    if depth:
                        conn.execute(f"ROLLBACK TO nested_{depth}")
                        conn.execute(f"RELEASE nested_{depth}")
                    elif conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            finally:
                self._depth -= 1
                if not self._depth:
                    self._owner = None

    def _refresh(self, conn: sqlite3.Connection) -> None:
        """Bring the vector indexes up to date with every commit made before this call.

        The file's ``data_version`` (``ReaderPool.data_version``) moves when another process
        or this process's writer commits, and the writer ticks ``_written`` after each of its
        commits. A refresh reads everything committed before it began (``_fresh``, with the
        version then), so a caller finds nothing to do when neither has moved since, and
        needs no refresh of its own when one began after its call did. Under load each
        commit had made every search refresh again, one at a time behind the lock (41% of
        the server's search samples at 32 clients, docs/storage.md). Searches read a
        snapshot of the index outside this lock.
        """
        called = next(self._ticks)
        version = self._readers.data_version() if self._readers is not None else 0
        if version == self._fresh_version and self._written < self._fresh:
            return  # nothing committed since the last refresh began
        with self._index_lock:
            if self._fresh < called:  # no refresh began while this call waited
                began = next(self._ticks)
                version = self._readers.data_version() if self._readers is not None else 0
                self._line_index.refresh(conn)
                self._memory_index.refresh(conn)
                self._fresh, self._fresh_version = began, version

    # -- spaces ----------------------------------------------------------------------------

    def ensure_space(
        self, space: str, embedder_id: str, dim: int, now: str, *, spec: str | None = None
    ) -> SpaceInfo:
        """Create the space (recording ``spec``, what rebuilds its embedder), or check that it
        was embedded by ``embedder_id`` with ``dim``.

        Raises:
            EmbedderMismatchError: the space records another embedder or dimension.
        """
        with self.reading() as conn:
            row = conn.execute(
                "SELECT name, created_at, embedder_id, dim FROM spaces WHERE name = ?", (space,)
            ).fetchone()
        if row is None:
            with self.writing() as conn:
                _create_space(conn, space, embedder_id, dim, now, spec)
                row = conn.execute(
                    "SELECT name, created_at, embedder_id, dim FROM spaces WHERE name = ?", (space,)
                ).fetchone()
        info = SpaceInfo(*row)
        same_embedder(space, info.embedder_id, info.dim, embedder_id, dim)
        return info

    def space_row(self, space: str) -> SpaceRow | None:
        with self.reading() as conn:
            row = conn.execute(
                "SELECT name, created_at, embedder_id, dim, embedder_spec FROM spaces "
                "WHERE name = ?",
                (space,),
            ).fetchone()
        return SpaceRow(*row) if row else None

    def space_info(self, space: str) -> SpaceInfo | None:
        with self.reading() as conn:
            row = conn.execute(
                "SELECT name, created_at, embedder_id, dim, "
                "(SELECT count(*) FROM episodes WHERE space = s.name), "
                "(SELECT count(*) FROM lines WHERE space = s.name), "
                "(SELECT count(*) FROM memories WHERE space = s.name), "
                # the newest line's episode (lines_space index, backwards: no scan) or the
                # newest memory change, whichever is later
                "nullif(max(coalesce((SELECT e.created_at FROM lines l JOIN episodes e "
                "ON e.id = l.episode_id WHERE l.space = s.name ORDER BY l.id DESC LIMIT 1), ''), "
                "coalesce((SELECT max(updated_at) FROM memories WHERE space = s.name), '')), ''), "
                "embedder_spec, "
                "(SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM episodes "
                "WHERE space = s.name) + (SELECT coalesce(sum(length(CAST(content AS BLOB))), 0) "
                "FROM memories WHERE space = s.name) + 4 * coalesce(dim, 0) * ("
                "(SELECT count(*) FROM lines WHERE space = s.name) + "
                "(SELECT count(*) FROM memories WHERE space = s.name)) "
                "FROM spaces s WHERE name = ?",
                (space,),
            ).fetchone()
        return SpaceInfo(*row) if row else None

    def list_spaces(self) -> list[SpaceInfo]:
        with self.reading() as conn:
            names = [r[0] for r in conn.execute("SELECT name FROM spaces ORDER BY name")]
        return [info for name in names if (info := self.space_info(name)) is not None]

    def delete_space(self, space: str) -> dict[str, int]:
        """Delete the space and everything recorded under it, in one transaction.

        Episodes (their lines, FTS rows and graph links go by cascade and triggers),
        memories, the consolidation audit and progress, its jobs and the space row itself.
        API keys naming the space are kept: a key is the host's, and a space written again
        under that name is the same tenant. Returns what was deleted, by table.
        """
        with self.writing() as conn:
            if conn.execute("SELECT 1 FROM spaces WHERE name = ?", (space,)).fetchone() is None:
                raise NotFoundError(
                    f"no space {space!r}: list them with `orcamem spaces` (nothing was deleted)"
                )
            gone = {
                table: conn.execute(f"DELETE FROM {table} WHERE space = ?", (space,)).rowcount
                for table in ("episodes", "memories", "consolidation_audit", "jobs")
            }
            for table in ("consolidation_progress", "entities", "injected_blocks"):
                conn.execute(f"DELETE FROM {table} WHERE space = ?", (space,))
            conn.execute("DELETE FROM spaces WHERE name = ?", (space,))
        self._line_index.drop(space)
        self._memory_index.drop(space)
        return gone

    # -- episodes --------------------------------------------------------------------------

    def append_episodes(self, writes: Sequence[EpisodeWrite]) -> list[Episode]:
        """Append episodes with their lines in one transaction: all land, or none.

        Episodes and lines go in as multi-row inserts (:func:`_insert_rows`): FTS5 flushes its
        pending terms at the end of every statement, so a statement a line (``executemany``)
        wrote a segment a line and ingest spent most of its time merging them."""
        rows: list[tuple] = []
        positions: dict[tuple[str, str], int] = {}
        with self.writing() as conn:
            for write in {w.episode.space: w for w in writes}.values():
                dim = int(write.vectors.shape[-1])
                _create_space(conn, write.episode.space, write.embedder_id, dim, write.created_at)
            sessions = {(w.episode.space, w.episode.session_id) for w in writes}
            for space in {space for space, _ in sessions}:  # a query per 500 sessions
                ids = sorted(s for sp, s in sessions if sp == space and s is not None)
                positions.update(
                    ((space, session), last)
                    for session, last in _per_session(conn, "max(session_seq)", space, ids)
                )
            for write in writes:
                ep = write.episode
                session_seq = None
                if ep.session_id is not None:
                    key = (ep.space, ep.session_id)
                    session_seq = positions[key] = positions.get(key, 0) + 1
                rows.append(
                    (
                        ep.space,
                        ep.kind,
                        ep.role,
                        ep.text,
                        ep.session_id,
                        session_seq,
                        ep.turn_id,
                        write.occurred_at,
                        write.created_at,
                        digest(ep.text),
                        json.dumps(ep.meta, ensure_ascii=False, sort_keys=True)
                        if ep.meta
                        else "{}",
                    )
                )
            episode_ids = insert_rows(
                conn,
                "episodes (space, kind, role, text, session_id, session_seq, turn_id, "
                "occurred_at, created_at, digest, meta)",
                rows,
            )
            lines = [
                (episode_id, write.episode.space, seq, line, write.episode.context, vector)
                for episode_id, write in zip(episode_ids, writes, strict=True)
                for seq, (line, vector) in enumerate(
                    zip(write.lines, map(encode_vector, write.vectors), strict=True), start=1
                )
            ]
            line_ids = insert_rows(
                conn, "lines (episode_id, space, seq, text, context, vector)", lines
            )
            names = (names for write in writes for names in write.names)
            named: dict[str, list[tuple[int, int, Sequence[str]]]] = {}
            for line_id, (episode_id, space, *_), line_names in zip(
                line_ids, lines, names, strict=True
            ):
                named.setdefault(space, []).append((line_id, episode_id, line_names))
            for space, batch in named.items():
                graph.link_lines(conn, space, batch)
        return [
            Episode(episode_id, *row[:5], *row[6:10], meta=dict(write.episode.meta))
            for episode_id, row, write in zip(episode_ids, rows, writes, strict=True)
        ]

    def _episode(self, row: tuple) -> Episode:
        *head, meta = row
        return Episode(*head, meta=json.loads(meta))

    def get_episode(self, space: str, episode_id: int) -> Episode:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE space = ? AND id = ?",
                (space, episode_id),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no episode {episode_id} in space {space!r}")
        return self._episode(row)

    def iter_episodes(self, space: str) -> Iterator[Episode]:
        last = 0
        while True:
            with self.reading() as conn:
                rows = conn.execute(
                    f"SELECT {_EPISODE_COLUMNS} "
                    "FROM episodes WHERE space = ? AND id > ? "
                    "ORDER BY id LIMIT 500",
                    (space, last),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield self._episode(row)
            last = rows[-1][0]

    def last_texts(self, space: str, session_ids: Sequence[str]) -> dict[str, str]:
        """Each session's newest text (a query per 500 sessions: a bulk ingest asks for
        thousands). SQLite gives a bare column of a ``max()`` group from the row that won."""
        with self.reading() as conn:
            return {
                session: text
                for session, text, _ in _per_session(
                    conn, "text, max(session_seq)", space, session_ids
                )
            }

    def find_episodes(self, space: str, keys: Sequence[EpisodeKey]) -> dict[EpisodeKey, list[int]]:
        """The stored episodes ``keys`` name (for idempotent imports): one query a batch,
        the keys a ``VALUES`` table joined to the episodes by the ``(space, digest)`` index."""
        found: dict[EpisodeKey, list[int]] = {}
        unique = list(dict.fromkeys(keys))
        with self.reading() as conn:
            step = max(1, variable_limit(conn) // 6 - 1)
            for start in range(0, len(unique), step):
                chunk = unique[start : start + step]
                for *named, ids in conn.execute(
                    "WITH k(d, o, s, t, r, n) AS (VALUES "
                    + ",".join(["(?,?,?,?,?,?)"] * len(chunk))
                    + ") SELECT k.d, k.o, k.s, k.t, k.r, k.n, group_concat(e.id) FROM k "
                    "JOIN episodes e ON e.space = ? AND e.digest = k.d AND e.occurred_at = k.o "
                    "AND e.session_id IS k.s AND e.turn_id IS k.t AND e.role IS k.r "
                    "AND e.kind = k.n GROUP BY 1, 2, 3, 4, 5, 6",
                    [*(value for key in chunk for value in key), space],
                ):
                    found[tuple(named)] = sorted(int(i) for i in ids.split(","))
        return found

    def find_turn(
        self, space: str, session_id: str | None, turn_id: str, role: str | None
    ) -> Episode | None:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE space = ? AND turn_id = ? "
                "AND session_id IS ? AND role IS ? ORDER BY id LIMIT 1",
                (space, turn_id, session_id, role),
            ).fetchone()
        return self._episode(row) if row else None

    def delete_episode(self, space: str, episode_id: int) -> None:
        """Delete an episode and its lines, and take its words out of the next turn's
        lexical context and its memories' summaries (:mod:`.relink`), in one transaction."""
        with self.writing() as conn:
            unlink_episode(conn, self.PARAM, space, episode_id)
            ids = {
                r[0]
                for r in conn.execute(
                    "SELECT id FROM lines WHERE episode_id = ? AND space = ?", (episode_id, space)
                )
            }
            conn.execute("DELETE FROM episodes WHERE space = ? AND id = ?", (space, episode_id))
            conn.execute(
                "UPDATE spaces SET vector_epoch = vector_epoch + 1 WHERE name = ?", (space,)
            )
        self._line_index.discard(space, ids)

    def lines(self, ids: Sequence[int]) -> list[LineRow]:
        """The rows of those lines that exist, by id; each read once a process
        (:class:`line_rows.LineRows`)."""
        if not ids:
            return []
        with self.reading() as conn:
            rows, missing, epochs = self._held(conn, self._rows.lines, ids)
            if missing:
                marks = ",".join("?" * len(missing))
                read = conn.execute(
                    f"SELECT {ROW_COLUMNS} FROM lines l JOIN episodes e ON e.id = l.episode_id "
                    f"WHERE l.id IN ({marks})",
                    missing,
                ).fetchall()
                rows += self._kept(read, epochs)
        return sorted(rows)  # by id, as the query answers

    def episode_lines(
        self, space: str, episode_ids: Sequence[int], *, first_only: bool = False
    ) -> list[LineRow]:
        """The lines of those episodes (or only each one's first line, each read once a
        process), in order."""
        if not episode_ids:
            return []
        with self.reading() as conn:
            rows, missing, epochs = (
                self._held(conn, self._rows.firsts, episode_ids)
                if first_only
                else ([], list(episode_ids), None)
            )
            if missing:
                marks = ",".join("?" * len(missing))
                first = " AND l.seq = 1" if first_only else ""
                # "+l.space" keeps SQLite on the (episode_id, seq) index: the space index
                # would scan the whole space (5-7 ms at 10k lines instead of ~1 ms).
                read = conn.execute(
                    f"SELECT {ROW_COLUMNS} FROM lines l JOIN episodes e ON e.id = l.episode_id "
                    f"WHERE +l.space = ? AND l.episode_id IN ({marks}){first} "
                    "ORDER BY l.episode_id, l.seq",
                    [space, *missing],
                ).fetchall()
                rows += self._kept(read, epochs)
        rows = [row for row in rows if row.space == space]
        return sorted(rows, key=lambda row: row.episode_id) if first_only else rows

    def _held(
        self,
        conn: sqlite3.Connection,
        lookup: Callable[[Sequence[int], Callable[[str], int | None]], tuple[list, list[int]]],
        keys: Sequence[int],
    ) -> tuple[list[LineRow], list[int], dict[str, int] | None]:
        """The rows ``lookup`` holds for ``keys`` under the epochs just refreshed, the keys
        to read, and the epochs to keep what is read under (taken before it is read, so a
        delete committed meanwhile leaves it stale); inside ``writing()`` every key is read
        and nothing kept (its deletes are not committed, its rows may roll back)."""
        if self._owner == threading.get_ident():
            return [], list(dict.fromkeys(keys)), None
        self._refresh(conn)
        epochs = self._line_index.epochs()
        return (*lookup(keys, epochs.get), epochs)

    def _kept(self, read: list[tuple], epochs: dict[str, int] | None) -> list[LineRow]:
        """``read`` as rows, remembered under ``epochs`` (``None``: not remembered)."""
        rows = line_rows(read)
        if epochs is not None:
            self._rows.keep(rows, epochs.get)
        return rows

    def session_window(
        self, space: str, episode_ids: Sequence[int], radius: int
    ) -> dict[int, list[tuple[int, int]]]:
        """For each episode, the episodes of its session within ``radius`` turns, as
        ``(episode id, offset)`` pairs (offset -1 is the turn before)."""
        if not episode_ids or radius < 1:
            return {}
        marks = ",".join("?" * len(episode_ids))
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT e.id, n.id, n.session_seq - e.session_seq FROM episodes e "
                "JOIN episodes n ON n.space = e.space AND n.session_id = e.session_id "
                "AND n.session_seq BETWEEN e.session_seq - ? AND e.session_seq + ? "
                f"WHERE +e.space = ? AND e.id IN ({marks}) AND n.id != e.id",
                [radius, radius, space, *episode_ids],
            ).fetchall()
        window: dict[int, list[tuple[int, int]]] = {}
        for episode_id, other, offset in rows:
            window.setdefault(episode_id, []).append((other, offset))
        return window

    def lexical_lines(
        self,
        space: str,
        match: str,
        limit: int,
        weights: tuple[float, float] = (1.0, 0.4),
        *,
        where: SearchFilter | None = None,
    ) -> list[tuple[int, float]]:
        """BM25 top ``limit`` lines of ``space`` for an FTS5 ``match`` (higher is better),
        of the episodes ``where`` admits: each matched line's episode joined, or for a
        session the subquery of its episodes (:func:`scope.joined_line_clauses`). An
        unfiltered query of a big space is answered by the in-process index, same scores."""
        found = None if where else self._indexed_lexical(space, match, limit, weights)
        if found is not None:
            return found
        scope = joined_line_clauses(where, SQLITE, space) if where else None
        join = " JOIN episodes e ON e.id = l.episode_id" if scope else ""
        if where and scope is None:
            scope = line_clauses(where, SQLITE, "l", space)
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT f.rowid, -bm25(lines_fts, ?, ?) AS score FROM lines_fts f "
                f"JOIN lines l ON l.id = f.rowid{join} WHERE lines_fts MATCH ? AND l.space = ?"
                f"{scope.sql if scope else ''} ORDER BY score DESC LIMIT ?",
                (weights[0], weights[1], match, space, *(scope.params if scope else ()), limit),
            ).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def _indexed_lexical(
        self, space: str, match: str, limit: int, weights: tuple[float, float]
    ) -> list[tuple[int, float]] | None:
        """The index's answer, or ``None`` (FTS5 answers): the space is small, its index is
        still loading (a thread started by the first query above the threshold), the query
        is not one it answers exactly, or this is the writer inside ``writing()`` (FTS5
        sees its uncommitted rows, the index does not). Refresh and scores read one snapshot."""
        if self._lexical_above is None:
            return None
        with self.reading() as conn:
            # the size is the vector index's count: a process's first query waits for its load
            # (as the search's vector channel does) rather than reading the space as empty
            self._refresh(conn)
            if self._line_index.count(space) <= self._lexical_above:
                return None
            if not self._lexical.loaded(space):
                self._lexical.load_later(self.reading, space, (OrcamemError, sqlite3.Error))
                return None
            if conn.in_transaction:
                return None
            conn.execute("BEGIN")
            try:
                self._lexical.refresh(conn, space)
                return self._lexical.search(conn, space, match, limit, weights)
            finally:
                conn.execute("COMMIT")

    def vector_lines(
        self, space: str, vector: np.ndarray, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[int, float]]:
        """Cosine top ``limit`` lines; with ``where``, among the rows it admits: masked from
        the episode fields the index keeps beside each vector (:data:`scope.LINE_COLUMNS`),
        or, for a metadata pair, the ids one indexed query of the episodes returns."""
        with self.reading() as conn:
            self._refresh(conn)
            allowed = None
            mask = line_mask(where) if where else None
            if mask is not None:
                found = self._line_index.search(space, vector, limit, mask=mask)
                return [(int(k), s) for k, s in found]
            if where:  # driven from the episodes index; a line's id comes from (episode, seq)
                scope = episode_clauses(where, SQLITE, space)
                allowed = [
                    row[0]
                    for row in conn.execute(
                        "SELECT l.id FROM episodes e JOIN lines l ON l.episode_id = e.id "
                        f"WHERE {scope.sql}",
                        scope.params,
                    )
                ]
            found = self._line_index.search(space, vector, limit, allowed=allowed)
            return [(int(k), s) for k, s in found]

    def line_vectors(self, space: str, ids: Sequence[int]) -> dict[int, np.ndarray]:
        with self.reading() as conn:
            self._refresh(conn)
            return self._line_index.vectors(space, list(ids))

    # -- memories --------------------------------------------------------------------------

    def put_memory(
        self, memory: NewMemory, vector: np.ndarray, embedder_id: str, now: str
    ) -> MemoryRecord:
        memory_id = memory.id or new_memory_id()
        with self.writing() as conn:
            _create_space(conn, memory.space, embedder_id, int(vector.shape[-1]), now)
            while (
                memory.id is None
                and conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone()
            ):
                memory_id = new_memory_id()
            try:
                conn.execute(
                    "INSERT INTO memories (id, space, category, content, summary, confidence, "
                    "importance, tags, source, entity, attribute, value, condition, prohibited, "
                    "event_date, session_id, turn_id, cited_lines, created_at, updated_at, vector, "
                    "event_end) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        memory_id,
                        memory.space,
                        memory.category,
                        memory.content,
                        memory.summary,
                        memory.confidence,
                        memory.importance,
                        json.dumps(list(memory.tags)),
                        memory.source,
                        memory.entity,
                        memory.attribute,
                        memory.value,
                        memory.condition,
                        int(memory.prohibited),
                        memory.event_date,
                        memory.session_id,
                        memory.turn_id,
                        json.dumps(list(memory.cited_lines)),
                        now,
                        now,
                        encode_vector(vector),
                        memory.event_end,
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"memory id {memory_id} already exists: pick another id") from exc
            self._cite(conn, memory.space, memory_id, memory.cited_lines)
            names = graph.memory_names(memory.content, memory.entity, memory.value)
            graph.link_memory(conn, memory.space, memory_id, names)
        return self.get_memory(memory.space, memory_id)

    @staticmethod
    def _cite(conn: sqlite3.Connection, space: str, memory_id: str, lines: Sequence[int]) -> None:
        """Index which lines a memory cites (only lines of its own space)."""
        conn.executemany(
            "INSERT OR IGNORE INTO memory_citations (memory_id, line_id) "
            "SELECT ?, id FROM lines WHERE id = ? AND space = ?",
            [(memory_id, line, space) for line in lines],
        )

    def restore_memory(self, record: MemoryRecord, vector: np.ndarray) -> str | None:
        """Insert a memory exactly as exported (lifecycle included).

        Returns the id it was stored under: its own, or a fresh one when another space
        already uses that id; ``None`` when the same space already has it (nothing written).
        """
        names = [name.strip() for name in _MEMORY_COLUMNS.split(",")]
        with self.writing() as conn:
            owner = conn.execute("SELECT space FROM memories WHERE id = ?", (record.id,)).fetchone()
            if owner is not None and owner[0] == record.space:
                return None
            if (
                owner is not None
                and conn.execute(  # imported here before, under a fresh id
                    "SELECT 1 FROM memories WHERE space = ? AND category = ? AND content = ? "
                    "AND created_at = ?",
                    (record.space, record.category, record.content, record.created_at),
                ).fetchone()
            ):
                return None
            memory_id = record.id
            while owner is not None:
                memory_id = new_memory_id()
                owner = conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone()
            data = record.to_dict()
            data.update(
                id=memory_id,
                tags=json.dumps(data["tags"]),
                cited_lines=json.dumps(data["cited_lines"]),
                prohibited=int(data["prohibited"]),
                active=int(data["active"]),
                pinned=int(data["pinned"]),
            )
            values = [data[name] for name in names] + [encode_vector(vector)]
            conn.execute(
                f"INSERT INTO memories ({_MEMORY_COLUMNS}, vector) "
                f"VALUES ({','.join('?' * len(values))})",
                values,
            )
            self._cite(conn, record.space, memory_id, record.cited_lines)
            names = graph.memory_names(record.content, record.entity, record.value)
            graph.link_memory(conn, record.space, memory_id, names)
        return memory_id

    def line_ids(self, space: str, episode_id: int) -> dict[int, int]:
        """``seq → line id`` of one episode."""
        with self.reading() as conn:
            return dict(
                conn.execute(
                    "SELECT seq, id FROM lines WHERE space = ? AND episode_id = ?",
                    (space, episode_id),
                ).fetchall()
            )

    def line_positions(self, ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        """``line id → (episode id, seq)``: how exports name lines portably."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self.reading() as conn:
            return {
                r[0]: (r[1], r[2])
                for r in conn.execute(
                    f"SELECT id, episode_id, seq FROM lines WHERE id IN ({marks})", list(ids)
                )
            }

    @staticmethod
    def _memory(row: tuple) -> MemoryRecord:
        values = list(row)
        values[7] = tuple(json.loads(values[7]))
        values[13] = bool(values[13])
        values[17] = tuple(json.loads(values[17]))
        values[24] = bool(values[24])
        values[27] = bool(values[27])
        return MemoryRecord(*values)

    def get_memory(self, space: str, memory_id: str) -> MemoryRecord:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE space = ? AND id = ?",
                (space, memory_id),
            ).fetchone()
        if row is None:
            raise NotFoundError(
                f"no memory {memory_id!r} in space {space!r}: list them with "
                "`orcamem facts --history`"
            )
        return self._memory(row)

    def memories_by_id(self, space: str, ids: Sequence[str]) -> list[MemoryRecord]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE space = ? AND id IN ({marks})",
                [space, *ids],
            ).fetchall()
        return [self._memory(row) for row in rows]

    def list_memories(
        self, space: str, *, include_inactive: bool = False, prohibited: bool | None = None
    ) -> list[MemoryRecord]:
        where = "" if include_inactive else " AND active = 1"
        if prohibited is not None:
            where += f" AND prohibited = {int(prohibited)}"
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE space = ?{where} ORDER BY seq",
                (space,),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def update_memory(
        self, space: str, memory_id: str, update: MemoryUpdate, now: str
    ) -> MemoryRecord:
        changes = {k: v for k, v in vars(update).items() if v is not None}
        for flag in ("active", "pinned"):
            if flag in changes:
                changes[flag] = int(changes[flag])
        with self.writing() as conn:
            found = conn.execute(
                "SELECT 1 FROM memories WHERE space = ? AND id = ?", (space, memory_id)
            ).fetchone()
            if not found:
                raise NotFoundError(f"no memory {memory_id!r} in space {space!r}")
            if changes:
                sets = ", ".join(f"{name} = ?" for name in changes)
                conn.execute(
                    f"UPDATE memories SET {sets}, updated_at = ? WHERE id = ?",
                    [*changes.values(), now, memory_id],
                )
        return self.get_memory(space, memory_id)

    def delete_memory(self, space: str, memory_id: str) -> None:
        """Delete one memory and repair the lineage through it, in one transaction.

        The memories it superseded stay closed (``active = 0``, history); their
        ``superseded_by`` moves on to what the deleted one was superseded by, or becomes
        ``NULL`` when it was current, so no pointer is left dangling.
        """
        with self.writing() as conn:
            row = conn.execute(
                "SELECT superseded_by FROM memories WHERE space = ? AND id = ?",
                (space, memory_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(
                    f"no memory {memory_id!r} in space {space!r}: list them with "
                    "`orcamem facts --history`"
                )
            successor = row[0] if row[0] != memory_id else None
            conn.execute(
                "UPDATE memories SET superseded_by = ? WHERE space = ? AND superseded_by = ?",
                (successor, space, memory_id),
            )
            conn.execute("DELETE FROM memories WHERE space = ? AND id = ?", (space, memory_id))
            conn.execute(
                "UPDATE spaces SET vector_epoch = vector_epoch + 1 WHERE name = ?", (space,)
            )
        self._memory_index.discard(space, {memory_id})

    # -- the log of injected blocks (engine.blocklog decides what goes in) -----------------

    def log_block(self, entry: BlockEntry, *, keep: int, since: str) -> None:
        BlockTable(self).log(entry, keep=keep, since=since)

    def injected_blocks(self, space: str, limit: int = 100) -> list[BlockEntry]:
        return BlockTable(self).recent(space, limit)

    # -- the entity graph (engine.store.graph writes it) ------------------------------------

    def entity_fans(self, space: str, names: Sequence[str]) -> dict[str, tuple[int, int]]:
        if not names:
            return {}
        marks = ",".join("?" * len(names))
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT name, id, fan FROM entities WHERE space = ? AND name IN ({marks})",
                [space, *names],
            ).fetchall()
        return {name: (entity_id, fan) for name, entity_id, fan in rows}

    def entities_of(
        self, space: str, episode_ids: Sequence[int], memory_ids: Sequence[str]
    ) -> list[tuple[int | str, int, int]]:
        found: list[tuple[int | str, int, int]] = []
        with self.reading() as conn:
            for table, column, ids in (
                ("entity_lines", "episode_id", episode_ids),
                ("entity_memories", "memory_id", memory_ids),
            ):
                if ids:
                    marks = ",".join("?" * len(ids))
                    found.extend(
                        conn.execute(
                            f"SELECT DISTINCT l.{column}, e.id, e.fan FROM {table} l "
                            f"JOIN entities e ON e.id = l.entity_id "
                            f"WHERE l.{column} IN ({marks}) AND +e.space = ?",
                            [*ids, space],
                        ).fetchall()
                    )
        return found

    def entity_sources(
        self,
        space: str,
        names: Sequence[str],
        episode_ids: Sequence[int],
        memory_ids: Sequence[str],
    ) -> EntitySeeds:
        return self.entity_fans(space, names), self.entities_of(space, episode_ids, memory_ids)

    def entity_mentions(
        self, space: str, entity_ids: Sequence[int], limit: int
    ) -> list[tuple[int, int, int]]:
        if not entity_ids:
            return []
        marks = ",".join("?" * len(entity_ids))
        with self.reading() as conn:  # "+e.space": the (space, name) index would scan the space
            rows = conn.execute(
                "SELECT l.entity_id, l.episode_id, l.line_id FROM entities e "
                "JOIN entity_lines l ON l.entity_id = e.id "
                f"WHERE l.entity_id IN ({marks}) AND +e.space = ? "
                "ORDER BY l.entity_id, l.episode_id",
                [*entity_ids, space],
            ).fetchall()
        taken: dict[int, int] = {}
        found = []
        for row in rows:  # a fan-capped caller never meets the limit; it bounds any other
            if taken.get(row[0], 0) < limit:
                taken[row[0]] = taken.get(row[0], 0) + 1
                found.append(row)
        return found

    def lexical_memories(
        self, space: str, match: str, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[str, float]]:
        scope = memory_clauses(where, SQLITE, "m") if where else None
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT m.id, -bm25(memories_fts, 1.0, 0.5, 0.4) AS score FROM memories_fts f "
                "JOIN memories m ON m.seq = f.rowid WHERE memories_fts MATCH ? AND m.space = ? "
                f"AND m.active = 1{scope.sql if scope else ''} ORDER BY score DESC, m.seq LIMIT ?",
                (match, space, *(scope.params if scope else ()), limit),
            ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def vector_memories(
        self, space: str, vector: np.ndarray, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[str, float]]:
        with self.reading() as conn:
            self._refresh(conn)
            if where:  # the active memories it admits, scored alone
                scope = memory_clauses(where, SQLITE, "m")
                allowed = [
                    row[0]
                    for row in conn.execute(
                        f"SELECT m.id FROM memories m WHERE m.space = ? AND m.active = 1"
                        f"{scope.sql}",
                        (space, *scope.params),
                    )
                ]
                found = self._memory_index.search(space, vector, limit, allowed=allowed)
                return [(str(k), s) for k, s in found]
            hits = self._memory_index.search(space, vector, limit * 2 + 8)
            if not hits:
                return []
            marks = ",".join("?" * len(hits))
            active = {
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM memories WHERE active = 1 AND id IN ({marks})",
                    [key for key, _ in hits],
                )
            }
        return [(str(k), s) for k, s in hits if k in active][:limit]

    def mark_accessed(self, space: str, memory_ids: Sequence[str], now: str) -> None:
        if not memory_ids:
            return
        marks = ",".join("?" * len(memory_ids))
        with self.writing() as conn:
            conn.execute(
                f"UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? "
                f"WHERE space = ? AND id IN ({marks})",
                [now, space, *memory_ids],
            )

    # -- consolidation ---------------------------------------------------------------------

    def pending_episodes(self, space: str, limit: int) -> list[Episode]:
        """The oldest episodes of ``space`` not yet consolidated (above its watermark)."""
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE space = ? AND id > "
                "coalesce((SELECT last_episode_id FROM consolidation_progress WHERE space = ?), 0) "
                "ORDER BY id LIMIT ?",
                (space, space, limit),
            ).fetchall()
        return [self._episode(row) for row in rows]

    def last_episode_created(self, space: str) -> str | None:
        """When the space's newest episode was appended (``None`` for an empty space)."""
        with self.reading() as conn:
            row = conn.execute(
                "SELECT created_at FROM episodes WHERE space = ? ORDER BY id DESC LIMIT 1",
                (space,),
            ).fetchone()
        return row[0] if row else None

    def mark_consolidated(self, space: str, last_episode_id: int, now: str) -> None:
        """Move the space's watermark forward (never back)."""
        with self.writing() as conn:
            conn.execute(
                "INSERT INTO consolidation_progress (space, last_episode_id, updated_at) "
                "VALUES (?, ?, ?) ON CONFLICT(space) DO UPDATE SET "
                "last_episode_id = max(last_episode_id, excluded.last_episode_id), "
                "updated_at = excluded.updated_at",
                (space, last_episode_id, now),
            )

    def add_audit(self, space: str, job_id: str | None, item: dict, reason: str, now: str) -> None:
        """Keep a rejected or skipped claim with the reason (never shown to recall)."""
        with self.writing() as conn:
            conn.execute(
                "INSERT INTO consolidation_audit (space, job_id, item, reason, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (space, job_id, json.dumps(item, ensure_ascii=False, sort_keys=True), reason, now),
            )

    def audit_log(self, space: str, limit: int = 100) -> list[dict]:
        """The newest audit entries of the space, newest first."""
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT id, job_id, item, reason, created_at FROM consolidation_audit "
                "WHERE space = ? ORDER BY id DESC LIMIT ?",
                (space, limit),
            ).fetchall()
        return [
            {
                "id": r[0],
                "job_id": r[1],
                "item": json.loads(r[2]),
                "reason": r[3],
                "created_at": r[4],
            }
            for r in rows
        ]

    def superseded_lines(self, space: str, line_ids: Sequence[int]) -> dict[int, str]:
        """For lines cited by a memory that has since been superseded, the id of the memory
        that superseded it (follow ``superseded_by`` to reach the current one)."""
        if not line_ids:
            return {}
        marks = ",".join("?" * len(line_ids))
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT c.line_id, m.superseded_by FROM memory_citations c "
                "JOIN memories m ON m.id = c.memory_id "
                f"WHERE m.space = ? AND m.active = 0 AND m.superseded_by IS NOT NULL "
                f"AND c.line_id IN ({marks})",
                [space, *line_ids],
            ).fetchall()
        return {line: newer for line, newer in rows}

    # -- maintenance -----------------------------------------------------------------------

    def term_counts(
        self, space: str, words: Sequence[str], cap: int = 1000
    ) -> tuple[int, dict[str, int]]:
        """Lines and active memories of ``space``, and per word (a content word, safe to quote)
        the lines and memories holding it, counted up to ``cap`` each (bounded work; idf past
        a thousand texts hardly moves). ``CROSS JOIN`` keeps the full-text match first: left
        to the planner, SQLite walks every line of the space and probes the index per line.
        The lines are counted by the vector index (every line has its vector; ``orcamem check``
        reports one that does not): ``count(*)`` over a space's lines costs 5 ms at 100,000.
        When the space holds every line of the file (two seeks of the ``lines_space`` index
        find no other), the lines are counted in the full-text index alone: the join to
        ``lines`` per match read up to a thousand scattered rows a word (19 ms a query at a
        million lines, docs/storage.md)."""
        with self.reading() as conn:
            self._refresh(conn)
            alone = not conn.execute(
                "SELECT EXISTS(SELECT 1 FROM lines WHERE space < ?) "
                "OR EXISTS(SELECT 1 FROM lines WHERE space > ?)",
                (space, space),
            ).fetchone()[0]
            lines_sql = (
                "SELECT count(*) FROM (SELECT 1 FROM lines_fts WHERE lines_fts MATCH ? LIMIT ?)"
                if alone
                else "SELECT count(*) FROM (SELECT 1 FROM lines_fts f CROSS JOIN lines l ON "
                "l.id = f.rowid WHERE lines_fts MATCH ? AND l.space = ? LIMIT ?)"
            )
            total = (
                self._line_index.count(space)
                + conn.execute(
                    "SELECT count(*) FROM memories WHERE space = ? AND active = 1 AND prohibited = 0",
                    (space,),
                ).fetchone()[0]
            )
            counts = {}
            for word in words:
                match = f'text : "{word}"'
                lines = conn.execute(
                    lines_sql, (match, cap) if alone else (match, space, cap)
                ).fetchone()[0]
                memories = conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memories_fts f CROSS JOIN memories m ON "
                    "m.seq = f.rowid WHERE memories_fts MATCH ? AND m.space = ? AND "
                    "m.active = 1 AND m.prohibited = 0 LIMIT ?)",
                    (f'content : "{word}"', space, cap),
                ).fetchone()[0]
                counts[word] = int(lines) + int(memories)
        return int(total), counts

    def warm(self, space: str) -> None:
        with self.reading() as conn:
            self._refresh(conn)
        if self._lexical_above is not None and self._line_index.count(space) > self._lexical_above:
            self._lexical.load_later(self.reading, space, (OrcamemError, sqlite3.Error))
            if (loading := self._lexical.loading(space)) is not None:
                loading.join()

    def noise_floor(self, space: str, percentile: float) -> float:
        with self.reading() as conn:
            self._refresh(conn)
            return self._line_index.noise_floor(space, percentile)

    def iter_texts_for_embedding(
        self, space: str
    ) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
        with self.reading() as conn:
            lines = conn.execute(
                "SELECT id, text FROM lines WHERE space = ? ORDER BY id", (space,)
            ).fetchall()
            memories = conn.execute(
                "SELECT id, content FROM memories WHERE space = ? ORDER BY seq", (space,)
            ).fetchall()
        return lines, memories

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
        """Swap every vector of ``space`` and its embedder record (id, dim, ``spec``) in one
        transaction, if the maps cover the space (:meth:`Admin.replace_vectors`)."""
        with self.writing() as conn:
            lacking = (
                ([], [])
                if partial
                else lacking_vectors(conn, self.PARAM, space, line_vectors, memory_vectors)
            )
            if any(lacking):
                return lacking
            conn.executemany(
                "UPDATE lines SET vector = ? WHERE id = ? AND space = ?",
                [(encode_vector(v), k, space) for k, v in line_vectors.items()],
            )
            conn.executemany(
                "UPDATE memories SET vector = ? WHERE id = ? AND space = ?",
                [(encode_vector(v), k, space) for k, v in memory_vectors.items()],
            )
            conn.execute(
                "UPDATE spaces SET embedder_id = ?, dim = ?, embedder_spec = ?, "
                "vector_epoch = vector_epoch + 1 WHERE name = ?",
                (embedder_id, dim, spec, space),
            )
        return lacking

    def counts(self) -> dict[str, int]:
        with self.reading() as conn:
            return {
                table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("spaces", "episodes", "lines", "memories")
            }

    def size_bytes(self) -> int:
        if self.path == ":memory:":
            return 0
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))

    def integrity_check(self) -> str:
        with self.reading() as conn:
            return conn.execute("PRAGMA integrity_check").fetchone()[0]

    def problems(self) -> list[Problem]:
        """What ``orcamem check`` finds wrong (``engine.store.check`` says what it verifies);
        on the writer: FTS5's integrity-check is an ``INSERT`` a read-only connection refuses."""
        with self._serial() as conn:
            return check.problems(conn)

    def repair_derived(self) -> list[str]:
        """Rebuild what needs no embedder, in one transaction; one line per action."""
        with self.writing() as conn:
            return check.repair_derived(conn)

    def stale_vectors(self, space: str) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
        with self.reading() as conn:
            return check.stale_vectors(conn, space)

    def close(self) -> None:
        """Close the connections; idempotent. Later calls raise ``ClosedError``."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close_quietly()

    def _close_quietly(self) -> None:
        self._lexical.stop()  # a space's postings still loading on their thread: cut short
        if self._readers is not None:
            self._readers.close()
        with suppress(AttributeError, sqlite3.Error):
            self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the role stores on this connection ---------------------------------------------------

    @cached_property
    def keys(self) -> KeyTable:
        """The API key rows (hashes only) in this file; the rules live in ``engine.keys``."""
        return KeyTable(self)

    @cached_property
    def notes(self) -> NoteTable:
        """The automation notes in this file (``engine.automations`` owns their rules)."""
        return NoteTable(self)

    @cached_property
    def jobs(self) -> SQLiteJobStore:
        """The durable job rows in this file (the queue in ``_kernel.jobs`` drives them)."""
        return SQLiteJobStore(self)

    # -- REST API reads -----------------------------------------------------------------------

    def page_episodes(
        self, space: str, *, after: int = 0, limit: int = 100, session_id: str | None = None
    ) -> list[Episode]:
        """Up to ``limit`` episodes of the space with ``id > after``, oldest first."""
        where = " AND session_id = ?" if session_id is not None else ""
        params: list[object] = [space, after]
        if session_id is not None:
            params.append(session_id)
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE space = ? AND id > ?{where} "
                "ORDER BY id LIMIT ?",
                [*params, limit],
            ).fetchall()
        return [self._episode(row) for row in rows]


def _per_session(
    conn: sqlite3.Connection, columns: str, space: str, session_ids: Sequence[str]
) -> Iterator[tuple]:
    """``session_id, {columns}`` of each of ``space``'s sessions in ``session_ids``, grouped by
    session: a query per 500 sessions (a bulk ingest asks about thousands)."""
    for start in range(0, len(session_ids), 500):
        chunk = session_ids[start : start + 500]
        yield from conn.execute(
            f"SELECT session_id, {columns} FROM episodes WHERE space = ? "
            f"AND session_id IN ({','.join('?' * len(chunk))}) GROUP BY session_id",
            [space, *chunk],
        )

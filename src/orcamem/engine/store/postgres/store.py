"""``PostgresStore``: the engine's store on PostgreSQL + pgvector, for several processes and
machines on one database.

A psycopg 3 connection pool; reads run in parallel, each on a pooled connection. Writes keep the
SQLite store's rule, one writer at a time: the outermost ``writing()`` takes one transaction
advisory lock (:data:`WRITE_LOCK`, the equivalent of SQLite's ``BEGIN IMMEDIATE``), so every
read-modify-write the engine does (an idempotent import, a consolidation that supersedes a
state, a job claim and its publish) stays atomic across replicas; nested ``writing()`` and
every read made inside it run on the same connection, as savepoints. Driver errors are
translated at this boundary (:func:`_translate`): no ``psycopg`` exception escapes, and a
password in the URL is never shown.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cached_property
from typing import Any

import numpy as np
import psycopg
import psycopg.conninfo
from pgvector.psycopg import register_vector
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from ...._kernel.jobs.postgres import PostgresJobStore
from ...._kernel.model import Episode, MemoryRecord, NewMemory, digest, new_memory_id
from ...._kernel.redact import safe_url
from ....errors import (
    ClosedError,
    InvalidInputError,
    NotFoundError,
    OrcamemError,
    ReadOnlyStoreError,
    SchemaTooNewError,
    StoreError,
)
from ....recall.candidates import EntitySeeds
from ....recall.filters import SearchFilter
from .. import check
from ..base import (
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
from ..graph import memory_names
from ..line_rows import ROW_COLUMNS, LineRows, line_rows
from ..relink import unlink_episode
from ..rows import BlockTable, KeyTable, NoteTable
from ..scope import POSTGRES, Clauses, episode_clauses, line_mask, memory_clauses
from . import graph, lexical, vectors
from .schema import LATEST, MIGRATIONS, TABLES, above

__all__ = ["STATEMENT_TIMEOUT_S", "WRITE_LOCK", "PostgresStore", "admitted_lines", "safe_url"]

WRITE_LOCK = 0x4F52434D
"""The advisory lock every write transaction holds (``ORCM``, as SQLite's application id)."""

STATEMENT_TIMEOUT_S = 60.0
"""How long one read statement may run before PostgreSQL cancels it (``statement_timeout``
of every pooled connection; a write transaction lifts it for itself): a runaway plan
becomes an orcamem error instead of a request that never returns (docs/storage.md)."""

_EPISODE_COLUMNS = (
    "id, space, kind, role, text, session_id, turn_id, occurred_at, created_at, digest, meta"
)
_MEMORY_COLUMNS = (
    "id, space, category, content, summary, confidence, importance, tags, source, entity, "
    "attribute, value, condition, prohibited, event_date, session_id, turn_id, cited_lines, "
    "created_at, updated_at, last_accessed_at, access_count, staleness, archived_at, active, "
    "superseded_by, event_end, pinned"
)
_MEMORY_NAMES = [name.strip() for name in _MEMORY_COLUMNS.split(",")]


def _translate(exc: psycopg.Error, url: str) -> StoreError:
    """Map a driver error to the most specific orcamem error, with the next step."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pg_errors.QueryCanceled):  # an OperationalError, but the server is up
        return StoreError(
            f"PostgreSQL cancelled a query on {url} ({message}): a read ran past its "
            "statement_timeout (PostgresStore(statement_timeout_s=…), 60 s unless set) or was "
            "cancelled by an operator; run ANALYZE on the database and retry, and report the "
            "query if it happens again"
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction | pg_errors.InsufficientPrivilege):
        return ReadOnlyStoreError(
            f"cannot write the memory database {url} ({message}): connect as a role that may "
            "write it, or to the primary rather than a read replica"
        )
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(
            f"cannot reach the memory database {url} ({message}): check that PostgreSQL "
            "runs there and the URL (host, port, user, database) is right, then retry"
        )
    return StoreError(f"PostgreSQL error on {url}: {message}")


class _Local(threading.local):
    conn: Any = None


class PostgresStore:
    """A ``Store`` on one PostgreSQL database (``postgresql://user:pass@host:port/db``).

    Args:
        url: the database; it must have pgvector installed, or let this role create it.
        pool_size: most connections this process opens (reads run in parallel on them).
        timeout_s: how long to wait for the server, or for a free pooled connection.
        cache_vectors: line vectors this process keeps in memory for exact search
            (:class:`vectors.LineCache`); a space bigger than that is searched in SQL.
        index_lines: lines whose postings this process keeps for BM25
            (:class:`lexical.LineIndex`); a space past that is ranked in SQL.
        statement_timeout_s: the longest one read statement may run (PostgreSQL's
            ``statement_timeout`` on every pooled connection; write transactions are not
            limited); past it the read fails with a ``StoreError``. ``None`` keeps the
            server's or the URL's own setting.

    Raises:
        StoreError: the server cannot be reached or the schema cannot be made.
        SchemaTooNewError: a newer orcamem wrote the schema.
    """

    capabilities = frozenset({"episodes", "vectors", "lexical"}) & CAPABILITIES
    PARAM = "%s"  # the parameter marker of the shared row tables (``store.rows``)
    TIE_ORDER = "seq"  # and what orders rows created in the same instant

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 8,
        timeout_s: float = 30.0,
        cache_vectors: int = vectors.CACHED_VECTORS,
        index_lines: int = lexical.INDEXED_LINES,
        statement_timeout_s: float | None = STATEMENT_TIMEOUT_S,
    ) -> None:
        refuse_bad_url(url)
        if statement_timeout_s is not None and not (
            isinstance(statement_timeout_s, (int, float))
            and not isinstance(statement_timeout_s, bool)
            and 0.001 <= statement_timeout_s < float("inf")
        ):
            raise InvalidInputError(
                f"statement_timeout_s={statement_timeout_s!r}: use a number of seconds of at "
                "least 0.001, or None to keep the server's statement_timeout"
            )
        self.url = url
        self._timeout_ms = None if statement_timeout_s is None else int(statement_timeout_s * 1000)
        self.path = safe_url(url)
        self._local = _Local()
        self._closed = False
        self._lexicon = lexical.Lexicon()
        self._lexical = lexical.LineIndex(self._lexicon, index_lines)
        self._floors: dict[str, tuple[int, int, float, float]] = {}
        self._seen: dict[str, tuple[int, int]] = {}  # space -> (lines, epoch) at the last query
        self._cache = vectors.LineCache(cache_vectors)
        self._rows = LineRows()
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=int(timeout_s)) as conn:
                self._migrate(conn)
            self._pool = ConnectionPool(
                url,
                min_size=1,
                max_size=max(1, pool_size),
                kwargs={"autocommit": True},
                configure=self._configure,
                timeout=timeout_s,
                name="orcamem",
                open=False,
            )
            self._pool.open(wait=True, timeout=timeout_s)
        except psycopg.Error as exc:
            raise _translate(exc, self.path) from None
        except PoolTimeout as exc:
            raise StoreError(
                f"cannot reach the memory database {self.path} ({exc}): check that "
                "PostgreSQL runs there and accepts this user, then retry"
            ) from None

    def _configure(self, conn: psycopg.Connection) -> None:
        register_vector(conn)
        if self._timeout_ms is not None:
            conn.execute(f"SET statement_timeout = {self._timeout_ms}")
        for setting in vectors.SETTINGS:
            with suppress(
                pg_errors.UndefinedObject, pg_errors.InvalidName, pg_errors.InvalidParameterValue
            ):
                conn.execute(
                    setting
                )  # iterative scans need pgvector 0.8; without, HNSW still works

    # -- opening ---------------------------------------------------------------------------

    def _migrate(self, conn: psycopg.Connection) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))  # two replicas
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                "description TEXT NOT NULL, applied_at TEXT NOT NULL)"
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
                    try:
                        conn.execute(statement)
                    except pg_errors.InsufficientPrivilege as exc:
                        raise StoreError(
                            f"cannot set up {self.path} ({str(exc).strip()}): a superuser must "
                            "run `CREATE EXTENSION vector` in that database once (pgvector), "
                            "and this role must own the database or its public schema"
                        ) from None
                conn.execute(
                    "INSERT INTO schema_version VALUES (%s, %s, to_char(now() AT TIME ZONE "
                    "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'))",
                    (version, description),
                )

    def schema_version(self) -> int:
        with self.reading() as conn:
            return conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[psycopg.Connection]:
        """A pooled connection (the write transaction's own, inside ``writing()``)."""
        if self._closed:
            raise ClosedError("this store is closed: open a new Memory")
        if self._local.conn is not None:
            yield self._local.conn
            return
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise _translate(exc, self.path) from None
        except PoolTimeout as exc:
            raise StoreError(
                f"no free connection to {self.path} ({exc}): raise pool_size, or retry"
            ) from None

    @contextmanager
    def writing(self) -> Iterator[psycopg.Connection]:
        """One transaction under the write lock; nested use is a savepoint inside it. Any
        error rolls back and nothing is written."""
        if self._local.conn is not None:
            try:
                with self._local.conn.transaction():
                    yield self._local.conn
            except psycopg.Error as exc:
                raise _translate(exc, self.path) from None
            return
        with self.reading() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    conn.execute(  # one round trip, simple protocol: a write (and its
                        # wait for the lock) has no read timeout; a bulk one may be long
                        f"SET LOCAL statement_timeout = 0; SELECT pg_advisory_xact_lock({WRITE_LOCK})",
                        prepare=False,
                    )
                    yield conn
            except psycopg.Error as exc:
                raise _translate(exc, self.path) from None
            finally:
                self._local.conn = None

    # -- spaces ----------------------------------------------------------------------------

    def ensure_space(
        self, space: str, embedder_id: str, dim: int, now: str, *, spec: str | None = None
    ) -> SpaceInfo:
        """Create the space (recording ``spec``, what rebuilds its embedder), or check that it
        was embedded by ``embedder_id`` with ``dim``.

        Raises:
            EmbedderMismatchError: the space records another embedder or dimension.
        """
        query = "SELECT name, created_at, embedder_id, dim FROM spaces WHERE name = %s"
        with self.reading() as conn:
            row = conn.execute(query, (space,)).fetchone()
        if row is None:
            with self.writing() as conn:
                self._create_space(conn, space, embedder_id, dim, now, spec)
                row = conn.execute(query, (space,)).fetchone()
        info = SpaceInfo(*row)
        same_embedder(space, info.embedder_id, info.dim, embedder_id, dim)
        return info

    def _create_space(
        self,
        conn: psycopg.Connection,
        space: str,
        embedder_id: str,
        dim: int,
        now: str,
        spec: str | None = None,
    ) -> None:
        """The space's row unless it exists (then it is checked). Every write calls it too:
        another replica may have deleted the space after this one checked it, and the write
        starts it anew, as a first write would (the SQLite store does the same). A new row's
        ``vector_epoch`` is random, as on SQLite: it started at 0 again, so a replica that
        held the deleted space's lines saw its epoch unchanged and kept answering them."""
        found = conn.execute(  # one round trip: the row made, or the one there before
            "WITH made AS (INSERT INTO spaces (name, created_at, embedder_id, dim, "
            "embedder_spec, vector_epoch) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO "
            "NOTHING RETURNING embedder_id, dim) SELECT * FROM made UNION ALL "
            "SELECT embedder_id, dim FROM spaces WHERE name = %s",
            (space, now, embedder_id, dim, spec, secrets.randbits(62), space),
        ).fetchone()
        same_embedder(space, found[0], found[1], embedder_id, dim)

    def space_row(self, space: str) -> SpaceRow | None:
        with self.reading() as conn:
            row = conn.execute(
                "SELECT name, created_at, embedder_id, dim, embedder_spec FROM spaces "
                "WHERE name = %s",
                (space,),
            ).fetchone()
        return SpaceRow(*row) if row else None

    def space_info(self, space: str) -> SpaceInfo | None:
        with self.reading() as conn:
            row = conn.execute(
                "SELECT name, created_at, embedder_id, dim, "
                "(SELECT count(*) FROM episodes WHERE space = s.name), line_count, "
                "(SELECT count(*) FROM memories WHERE space = s.name), "
                # the newest episode or memory change, whichever is later
                "nullif(greatest(coalesce((SELECT created_at FROM episodes WHERE space = s.name "
                "ORDER BY id DESC LIMIT 1), ''), coalesce((SELECT max(updated_at) FROM memories "
                "WHERE space = s.name), '')), ''), embedder_spec, "
                "(SELECT coalesce(sum(octet_length(text)), 0) FROM episodes WHERE space = s.name) "
                "+ (SELECT coalesce(sum(octet_length(content)), 0) FROM memories "
                "WHERE space = s.name) + 4 * coalesce(dim, 0) * (line_count + "
                "(SELECT count(*) FROM memories WHERE space = s.name)) "
                "FROM spaces s WHERE name = %s",
                (space,),
            ).fetchone()
        return SpaceInfo(*row) if row else None

    def list_spaces(self) -> list[SpaceInfo]:
        with self.reading() as conn:
            names = [r[0] for r in conn.execute("SELECT name FROM spaces ORDER BY name")]
        return [info for name in names if (info := self.space_info(name)) is not None]

    def delete_space(self, space: str) -> dict[str, int]:
        """Delete the space and everything recorded under it, in one transaction (as the
        SQLite store does: API keys naming it are kept). Returns what was deleted, by table."""
        with self.writing() as conn:
            if conn.execute("SELECT 1 FROM spaces WHERE name = %s", (space,)).fetchone() is None:
                raise NotFoundError(
                    f"no space {space!r}: list them with `orcamem spaces` (nothing was deleted)"
                )
            gone = {
                table: conn.execute(f"DELETE FROM {table} WHERE space = %s", (space,)).rowcount
                for table in ("episodes", "memories", "consolidation_audit", "jobs")
            }
            for table in ("consolidation_progress", "entities", "injected_blocks"):
                conn.execute(f"DELETE FROM {table} WHERE space = %s", (space,))
            conn.execute("DELETE FROM spaces WHERE name = %s", (space,))
            self._seen.pop(space, None)
            self._floors.pop(space, None)
        self._cache.drop(space)
        return gone

    # -- episodes --------------------------------------------------------------------------

    def append_episodes(self, writes: Sequence[EpisodeWrite]) -> list[Episode]:
        """Append episodes with their lines in one transaction: all land, or none.

        Bulk by design (an import is thousands of turns): one query for the sessions' last
        positions, ids drawn from the sequences in one query a table, episodes and lines
        written by ``COPY`` (binary: vectors go as float16), the graph linked in one batch.
        """
        if not writes:
            return []
        with self.writing() as conn:
            for write in {w.episode.space: w for w in writes}.values():
                dim = int(write.vectors.shape[-1])
                self._create_space(
                    conn, write.episode.space, write.embedder_id, dim, write.created_at
                )
            sessions = sorted(
                {(w.episode.space, w.episode.session_id) for w in writes if w.episode.session_id}
            )
            positions: dict[tuple[str, str], int] = {}
            if sessions:
                positions = {
                    (space, session): last
                    for space, session, last in conn.execute(
                        "SELECT e.space, e.session_id, max(e.session_seq) FROM episodes e JOIN "
                        "unnest(%s::text[], %s::text[]) AS k(space, session_id) ON "
                        "e.space = k.space AND e.session_id = k.session_id GROUP BY 1, 2",
                        ([s for s, _ in sessions], [t for _, t in sessions]),
                    )
                }
            episode_ids, drawn = self._ids(conn, len(writes), sum(len(w.lines) for w in writes))
            line_ids = iter(drawn)
            episodes: list[Episode] = []
            seqs: list[int | None] = []
            lines: list[tuple] = []
            for episode_id, write in zip(episode_ids, writes, strict=True):
                ep = write.episode
                session_seq = None
                if ep.session_id is not None:
                    key = (ep.space, ep.session_id)
                    session_seq = positions[key] = (positions.get(key) or 0) + 1
                episodes.append(
                    Episode(
                        episode_id, ep.space, ep.kind, ep.role, ep.text, ep.session_id,
                        ep.turn_id, write.occurred_at, write.created_at, digest(ep.text),
                        dict(ep.meta),
                    )
                )  # fmt: skip
                seqs.append(session_seq)
                lines += [
                    (next(line_ids), episode_id, ep.space, seq, line, ep.context,
                     vectors.encode(write.vectors[seq - 1]))
                    for seq, line in enumerate(write.lines, start=1)
                ]  # fmt: skip
            with conn.cursor() as cursor:
                with cursor.copy(
                    "COPY episodes (id, space, kind, role, text, session_id, session_seq, "
                    "turn_id, occurred_at, created_at, digest, meta) FROM STDIN"
                ) as copy:
                    for e, seq in zip(episodes, seqs, strict=True):
                        copy.write_row(
                            (e.id, e.space, e.kind, e.role, e.text, e.session_id, seq,
                             e.turn_id, e.occurred_at, e.created_at, e.digest,
                             json.dumps(e.meta, ensure_ascii=False, sort_keys=True))
                        )  # fmt: skip
                with cursor.copy(
                    "COPY lines (id, episode_id, space, seq, text, context, vector) "
                    "FROM STDIN (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(["int8", "int8", "text", "int4", "text", "text", "halfvec"])
                    for row in lines:
                        copy.write_row(row)
            names = (names for write in writes for names in write.names)
            written: dict[str, list[tuple[int, int, Sequence[str]]]] = {}
            for (line_id, episode_id, space, *_), line_names in zip(lines, names, strict=True):
                written.setdefault(space, []).append((line_id, episode_id, line_names))
            for space, batch in written.items():
                graph.link_lines(conn, space, batch)
                self._seen.pop(space, None)
        return episodes

    @staticmethod
    def _ids(conn: psycopg.Connection, episodes: int, lines: int) -> tuple[list[int], list[int]]:
        """New episode and line ids, ascending, in one query (writes hold the write lock, so
        ids still grow in commit order, as the rowid watermark of the SQLite store does)."""
        drawn = (
            "array(SELECT nextval(pg_get_serial_sequence('{}', 'id')) FROM generate_series(1, %s))"
        )
        row = conn.execute(
            f"SELECT {drawn.format('episodes')}, {drawn.format('lines')}", (episodes, lines)
        ).fetchone()
        return sorted(row[0]), sorted(row[1])

    @staticmethod
    def _episode(row: tuple) -> Episode:
        *head, meta = row
        return Episode(*head, meta=json.loads(meta))

    def get_episode(self, space: str, episode_id: int) -> Episode:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE space = %s AND id = %s",
                (space, episode_id),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no episode {episode_id} in space {space!r}")
        return self._episode(row)

    def iter_episodes(self, space: str) -> Iterator[Episode]:
        last = 0
        while page := self.page_episodes(space, after=last, limit=500):
            yield from page
            last = page[-1].id

    def page_episodes(
        self, space: str, *, after: int = 0, limit: int = 100, session_id: str | None = None
    ) -> list[Episode]:
        """Up to ``limit`` episodes of the space with ``id > after``, oldest first."""
        where = " AND session_id = %(session)s" if session_id is not None else ""
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE "
                f"{above('%(space)s', '%(after)s')}{where} ORDER BY space, id LIMIT %(limit)s",
                {"space": space, "after": after, "session": session_id, "limit": limit},
            ).fetchall()
        return [self._episode(row) for row in rows]

    def last_texts(self, space: str, session_ids: Sequence[str]) -> dict[str, str]:
        """Each session's newest text, by its position (``session_seq`` grows with the id):
        the session index in order. By ``id`` the planner walked a bulk load's whole space
        backwards for a new session until statistics caught up (10 ms a call at 100,000)."""
        with self.reading() as conn:
            return dict(
                conn.execute(
                    "SELECT DISTINCT ON (session_id) session_id, text FROM episodes "
                    "WHERE space = %s AND session_id = ANY(%s) "
                    "ORDER BY session_id, session_seq DESC",
                    (space, list(session_ids)),
                ).fetchall()
            )

    def find_episodes(self, space: str, keys: Sequence[EpisodeKey]) -> dict[EpisodeKey, list[int]]:
        """The stored episodes ``keys`` name (for idempotent imports): one query a batch,
        the keys six arrays joined to the episodes by the ``(space, digest)`` index."""
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT k.d, k.o, k.s, k.t, k.r, k.n, array_agg(e.id ORDER BY e.id) FROM "
                "unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                "%s::text[]) AS k(d, o, s, t, r, n) JOIN episodes e ON e.space = %s "
                "AND e.digest = k.d AND e.occurred_at = k.o "
                "AND e.session_id IS NOT DISTINCT FROM k.s "
                "AND e.turn_id IS NOT DISTINCT FROM k.t AND e.role IS NOT DISTINCT FROM k.r "
                "AND e.kind = k.n GROUP BY 1, 2, 3, 4, 5, 6",
                [*(list(column) for column in zip(*unique, strict=True)), space],
            ).fetchall()
        return {tuple(key): list(ids) for *key, ids in rows}

    def find_turn(
        self, space: str, session_id: str | None, turn_id: str, role: str | None
    ) -> Episode | None:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE space = %s AND turn_id = %s "
                "AND session_id IS NOT DISTINCT FROM %s AND role IS NOT DISTINCT FROM %s "
                "ORDER BY id LIMIT 1",
                (space, turn_id, session_id, role),
            ).fetchone()
        return self._episode(row) if row else None

    def delete_episode(self, space: str, episode_id: int) -> None:
        """Delete an episode and its lines, and take its words out of the next turn's
        lexical context and its memories' summaries (:mod:`..relink`), in one transaction."""
        with self.writing() as conn:
            unlink_episode(conn, self.PARAM, space, episode_id)
            conn.execute("DELETE FROM episodes WHERE space = %s AND id = %s", (space, episode_id))
            self._bump(conn, space)

    def _bump(self, conn: psycopg.Connection, space: str) -> None:
        """Vectors of the space went away or changed: cached noise floors are stale."""
        conn.execute("UPDATE spaces SET vector_epoch = vector_epoch + 1 WHERE name = %s", (space,))
        self._seen.pop(space, None)

    def lines(self, ids: Sequence[int]) -> list[LineRow]:
        """The rows of those lines that exist, by id; each read once a process while its
        space keeps the vector epoch of the last search (:meth:`_epochs`)."""
        if not ids:
            return []
        with self.reading() as conn:
            epochs = self._epochs(conn)
            rows, missing = (
                self._rows.lines(ids, epochs.get) if epochs else ([], list(dict.fromkeys(ids)))
            )
            if missing:
                read = conn.execute(  # each by its primary key: left to the planner, a
                    # space ANALYZE had not seen was hash-joined with all its episodes
                    f"SELECT {ROW_COLUMNS} FROM unnest(%s::bigint[]) k(id) CROSS JOIN "
                    "LATERAL (SELECT * FROM lines WHERE id = k.id OFFSET 0) l CROSS JOIN "
                    "LATERAL (SELECT * FROM episodes WHERE id = l.episode_id OFFSET 0) e",
                    (missing,),
                ).fetchall()
                rows += self._kept(read, epochs)
        return sorted(rows)  # by id

    def _epochs(self, conn: psycopg.Connection) -> dict[str, int] | None:
        """The vector epoch of each space as this process last read it: a search's first
        statement (the line cache's refresh in :meth:`vector_lines`) reads it, and a delete
        or re-embedding on any replica moves it, so rows held under it are current for the
        search. ``None`` inside ``writing()``: its rows may roll back and its deletes are
        not committed, so nothing is kept or answered from the held rows (as on SQLite)."""
        if conn is self._local.conn:
            return None
        return {space: epoch for space, (_, epoch) in list(self._seen.items())}

    def _kept(self, read: list[tuple], epochs: dict[str, int] | None) -> list[LineRow]:
        rows = line_rows(read)
        if epochs:
            self._rows.keep(rows, epochs.get)
        return rows

    def episode_lines(
        self, space: str, episode_ids: Sequence[int], *, first_only: bool = False
    ) -> list[LineRow]:
        if not episode_ids:
            return []
        first = " AND seq = 1" if first_only else ""
        with self.reading() as conn:
            epochs = self._epochs(conn) if first_only else None
            rows, missing = (
                self._rows.firsts(episode_ids, epochs.get)
                if epochs
                else ([], list(dict.fromkeys(episode_ids)))
            )
            if missing:
                read = conn.execute(  # per episode by its (episode_id, seq) key: left to the
                    # planner, a fresh space's lines are AND-ed with its whole space index
                    f"SELECT {ROW_COLUMNS} FROM unnest(%s::bigint[]) k(id) CROSS JOIN "
                    f"LATERAL (SELECT * FROM lines WHERE episode_id = k.id{first} OFFSET 0) l "
                    "JOIN episodes e ON e.id = l.episode_id WHERE l.space = %s "
                    "ORDER BY l.episode_id, l.seq",
                    (missing, space),
                ).fetchall()
                rows += self._kept(read, epochs)
        rows = [row for row in rows if row.space == space]
        return sorted(rows, key=lambda row: (row.episode_id, row.seq))

    def session_window(
        self, space: str, episode_ids: Sequence[int], radius: int
    ) -> dict[int, list[tuple[int, int]]]:
        if not episode_ids or radius < 1:
            return {}
        with self.reading() as conn:
            rows = conn.execute(
                WINDOW_SQL, {"ids": list(episode_ids), "radius": radius, "space": space}
            ).fetchall()
        window: dict[int, list[tuple[int, int]]] = {}
        for episode_id, other, offset in rows:
            window.setdefault(episode_id, []).append((other, offset))
        return window

    def line_ids(self, space: str, episode_id: int) -> dict[int, int]:
        with self.reading() as conn:
            return dict(
                conn.execute(
                    "SELECT seq, id FROM lines WHERE space = %s AND episode_id = %s",
                    (space, episode_id),
                ).fetchall()
            )

    def line_positions(self, ids: Sequence[int]) -> dict[int, tuple[int, int]]:
        if not ids:
            return {}
        with self.reading() as conn:
            return {
                r[0]: (r[1], r[2])
                for r in conn.execute(
                    "SELECT id, episode_id, seq FROM lines WHERE id = ANY(%s)", (list(ids),)
                )
            }

    # -- candidates ------------------------------------------------------------------------

    def _bm25(
        self, table: str, key: str, space: str, match: str, limit: int, weights: Sequence[float],
        where: str = "", scope: Clauses | None = None, source: str = "",
    ) -> list[tuple[Any, float]]:  # fmt: skip
        with self.reading() as conn:
            terms = self._lexicon.terms(conn, match)
            if not terms or limit < 1:
                return []
            rows = conn.execute(
                lexical.bm25_sql(table, key, weights, where + (scope.sql if scope else ""), source),
                {
                    "lexemes": terms,
                    "query": lexical.tsquery(terms),
                    "space": space,
                    "limit": limit,
                    **(scope.params if scope else {}),
                },
            ).fetchall()
        return [(r[0], float(r[1])) for r in rows]

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
        of the episodes ``where`` admits; unfiltered, from the in-process index once it holds
        the space (:class:`lexical.LineIndex`, the same scores), until then (and filtered) in
        SQL."""
        found = None if where else self._indexed_lexical(space, match, limit, weights)
        if found is not None:
            return found
        if not where:
            return self._bm25("lines", "id", space, match, limit, weights)
        source, scope = admitted_lines(where, space)
        return self._bm25("lines", "id", space, match, limit, weights, scope=scope, source=source)

    def _indexed_lexical(
        self, space: str, match: str, limit: int, weights: tuple[float, float]
    ) -> list[tuple[int, float]] | None:
        """The index's answer, or ``None`` (SQL answers): its load (a thread the space's first
        query starts) has not finished, or this is the writer inside ``writing()`` (SQL sees
        its uncommitted rows). Refresh and figures read one snapshot (repeatable read)."""
        if self._local.conn is not None:
            return None
        if not self._lexical.loaded(space):
            self._lexical.load_later(self.reading, space, (OrcamemError, psycopg.Error))
            return None
        with self.reading() as conn:
            if conn is not self._local.conn:
                found = self._lexical.search_current(conn, space, match, limit, weights)
                if found is not None:
                    return found
        with self._snapshot() as conn:
            self._lexical.refresh(conn, space)
            return self._lexical.search(conn, space, match, limit, weights)

    @contextmanager
    def _snapshot(self) -> Iterator[psycopg.Connection]:
        """A read-only repeatable-read transaction (the writer's own, inside ``writing()``):
        the in-process index's refresh and the figures read with it see one snapshot."""
        with self.reading() as conn:
            if conn is self._local.conn:
                yield conn
                return
            conn.isolation_level, conn.read_only = psycopg.IsolationLevel.REPEATABLE_READ, True
            try:  # said in the BEGIN psycopg sends: no statement of their own
                with conn.transaction():
                    yield conn
            finally:
                conn.isolation_level, conn.read_only = None, None

    def lexical_memories(
        self, space: str, match: str, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[str, float]]:
        scope = memory_clauses(where, POSTGRES, "d") if where else None
        return self._bm25(
            "memories", "id", space, match, limit, (1.0, 0.5, 0.4), " AND d.active", scope
        )

    def vector_lines(
        self, space: str, vector: np.ndarray, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[int, float]]:
        """Cosine top ``limit`` lines; with ``where``, of the lines of the episodes it admits:
        the held rows masked by their episodes' role, session and time (``scope.line_mask``,
        the SQLite index's rule), or, for a metadata filter or a space the cache does not
        hold, the exact scores read episode by episode (:func:`vectors.admitted_nearest`)."""
        mask = line_mask(where) if where else None
        with self.reading() as conn:
            if not where or mask is not None:  # the held rows answer it, masked as on SQLite
                held, seen = self._cache.refresh(conn, space)
                if seen is None:
                    self._seen.pop(space, None)
                    return []
                self._seen[space] = seen
                if held is not None:
                    return vectors.top(held, vector, limit, mask(held.fields()) if mask else None)
            if where:
                inner = episode_clauses(where, POSTGRES, space)
                return vectors.admitted_nearest(conn, vector, limit, inner.sql, inner.params)
            return vectors.nearest(
                conn, "lines", "id", space, vector, limit, counted=True, seen=self._seen
            )

    def warm(self, space: str) -> None:
        with self.reading() as conn:
            _, seen = self._cache.refresh(conn, space)
        if seen is None:  # no such space: nothing to load
            self._seen.pop(space, None)
            return
        self._seen[space] = seen
        self._lexical.load_later(self.reading, space, (OrcamemError, psycopg.Error))
        if (loading := self._lexical.loading(space)) is not None:
            loading.join()

    def vector_memories(
        self, space: str, vector: np.ndarray, limit: int, *, where: SearchFilter | None = None
    ) -> list[tuple[str, float]]:
        scope = memory_clauses(where, POSTGRES, "memories") if where else Clauses("", {})
        with self.reading() as conn:  # memories are few: always the exact scan
            return vectors.nearest(
                conn,
                "memories",
                "id",
                space,
                vector,
                limit,
                " AND active" + scope.sql,
                params=scope.params,
            )

    def line_vectors(self, space: str, ids: Sequence[int]) -> dict[int, np.ndarray]:
        if not ids:
            return {}
        found: dict[int, np.ndarray] = {}
        held = self._cache.held(space)
        if held is not None:  # what the last search read (rows only ever appended)
            wanted = np.asarray(list(ids), dtype=np.int64)
            at = np.minimum(np.searchsorted(held.keys, wanted), max(held.count - 1, 0))
            for key, i in zip(wanted, at, strict=True):
                if held.count and held.keys[i] == key:
                    found[int(key)] = held.rows[i].copy()
        missing = [key for key in ids if key not in found]
        if not missing:
            return found
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT id, vector FROM lines WHERE space = %s AND id = ANY(%s) "
                "AND vector IS NOT NULL",
                (space, missing),
                binary=True,
            ).fetchall()
        return found | {key: vectors.decode(vector) for key, vector in rows}

    def noise_floor(self, space: str, percentile: float) -> float:
        """Cached until the space grows by a quarter or loses or changes vectors, as in the
        SQLite index; the space's size is the one its last vector query saw (a search asks
        for vectors first), else read here."""
        with self.reading() as conn:
            if space not in self._seen:
                row = conn.execute(
                    "SELECT line_count, vector_epoch FROM spaces WHERE name = %s", (space,)
                ).fetchone()
                if row is None:
                    return 0.0
                self._seen[space] = row
            count, epoch = self._seen[space]
            cached = self._floors.get(space)
            if (
                cached
                and cached[1] == epoch
                and cached[0] * 1.25 >= count
                and cached[2] == percentile
            ):
                return cached[3]
            held = self._cache.held(space)
            if held is not None and (held.count, held.epoch) == (count, epoch):
                floor = vectors.cached_floor(held, percentile)
            else:
                floor = vectors.noise_floor(conn, space, count, percentile)
        self._floors[space] = (count, epoch, percentile, floor)
        return floor

    def term_counts(
        self, space: str, words: Sequence[str], cap: int = 1000
    ) -> tuple[int, dict[str, int]]:
        """Lines and active, unprohibited memories of ``space``, and per word the lines
        (text column) and memories (content column) holding it, counted up to ``cap`` each:
        the lines by the in-process index when it holds the space (the same counts; in SQL
        each word's weight-A match re-read up to ``cap`` rows, 40 ms a search at 100,000
        lines, docs/storage.md), the rest in one statement, one snapshot."""
        if self._lexical.loaded(space):
            with self.reading() as conn:
                if conn is not self._local.conn:
                    found = self._lexicon.lexemes(conn, words)
                    asked = [word for word in words if found[word]]
                    queries = [lexical.tsquery(found[w], joiner=" & ", weight="A") for w in asked]
                    current = self._lexical.current_counts(
                        conn, space, [found[w] for w in asked], queries, cap
                    )
                    if current is not None:
                        total, memories, lines = current
                        counts = dict.fromkeys(words, 0)
                        for i, word in enumerate(asked):
                            counts[word] = int(memories[i]) + lines[i]
                        return total, counts
        with self._snapshot() as conn:
            found = self._lexicon.lexemes(conn, words)
            asked = [word for word in words if found[word]]
            lines = None
            if conn is not self._local.conn and self._lexical.loaded(space):
                self._lexical.refresh(conn, space)
                lines = self._lexical.counts(space, [found[w] for w in asked], cap)
            queries = [lexical.tsquery(found[w], joiner=" & ", weight="A") for w in asked]
            total, memories = conn.execute(
                lexical.term_counts_sql(lines=lines is None),
                {"space": space, "cap": cap, "queries": queries},
            ).fetchone()
        counts = dict.fromkeys(words, 0)
        for i, word in enumerate(asked):
            counts[word] = int(memories[i]) + (lines[i] if lines is not None else 0)
        return int(total), counts

    # -- the entity graph ------------------------------------------------------------------

    def entity_fans(self, space: str, names: Sequence[str]) -> dict[str, tuple[int, int]]:
        return self.entity_sources(space, names, [], [])[0] if names else {}

    def entities_of(
        self, space: str, episode_ids: Sequence[int], memory_ids: Sequence[str]
    ) -> list[tuple[int | str, int, int]]:
        return self.entity_sources(space, [], episode_ids, memory_ids)[1]

    def entity_sources(
        self,
        space: str,
        names: Sequence[str],
        episode_ids: Sequence[int],
        memory_ids: Sequence[str],
    ) -> EntitySeeds:
        """The names' entities and those of the episodes and memories, in one statement
        (``SOURCES_SQL``): activation's seeds were three round trips."""
        if not (names or episode_ids or memory_ids):
            return {}, []
        with self.reading() as conn:
            rows = conn.execute(
                SOURCES_SQL,
                {
                    "space": space,
                    "names": list(names),
                    "episodes": list(episode_ids),
                    "memories": list(memory_ids),
                },
            ).fetchall()
        fans = {source: (entity, fan) for kind, source, entity, fan in rows if kind == "n"}
        episodes = sorted((int(s), e, f) for kind, s, e, f in rows if kind == "e")
        memories = sorted((s, e, f) for kind, s, e, f in rows if kind == "m")
        return fans, [*episodes, *memories]

    def entity_mentions(
        self, space: str, entity_ids: Sequence[int], limit: int
    ) -> list[tuple[int, int, int]]:
        if not entity_ids:
            return []
        with self.reading() as conn:
            rows = conn.execute(
                MENTIONS_SQL, {"ids": list(entity_ids), "limit": limit, "space": space}
            ).fetchall()
        return [tuple(row) for row in rows]

    # -- memories --------------------------------------------------------------------------

    def put_memory(
        self, memory: NewMemory, vector: np.ndarray, embedder_id: str, now: str
    ) -> MemoryRecord:
        memory_id = memory.id or new_memory_id()
        with self.writing() as conn:
            self._create_space(conn, memory.space, embedder_id, int(vector.shape[-1]), now)
            while (
                memory.id is None
                and conn.execute("SELECT 1 FROM memories WHERE id = %s", (memory_id,)).fetchone()
            ):
                memory_id = new_memory_id()
            try:
                with conn.transaction():
                    conn.execute(
                        "INSERT INTO memories (id, space, category, content, summary, "
                        "confidence, importance, tags, source, entity, attribute, value, "
                        "condition, prohibited, event_date, session_id, turn_id, cited_lines, "
                        "created_at, updated_at, vector, event_end) VALUES "
                        "(%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%b,%s)",
                        (
                            memory_id, memory.space, memory.category, memory.content,
                            memory.summary, memory.confidence, memory.importance,
                            json.dumps(list(memory.tags)), memory.source, memory.entity,
                            memory.attribute, memory.value, memory.condition,
                            bool(memory.prohibited), memory.event_date, memory.session_id,
                            memory.turn_id, json.dumps(list(memory.cited_lines)), now, now,
                            vectors.encode(vector), memory.event_end,
                        ),
                    )  # fmt: skip
            except pg_errors.UniqueViolation as exc:
                raise StoreError(f"memory id {memory_id} already exists: pick another id") from exc
            self._cite(conn, memory.space, memory_id, memory.cited_lines)
            names = memory_names(memory.content, memory.entity, memory.value)
            graph.link_memory(conn, memory.space, memory_id, names)
            return self.get_memory(memory.space, memory_id)

    @staticmethod
    def _cite(conn: psycopg.Connection, space: str, memory_id: str, lines: Sequence[int]) -> None:
        """Index which lines a memory cites (only lines of its own space)."""
        if lines:
            conn.execute(
                "INSERT INTO memory_citations (memory_id, line_id) SELECT %s, id FROM lines "
                "WHERE id = ANY(%s) AND space = %s ON CONFLICT DO NOTHING",
                (memory_id, [int(line) for line in lines], space),
            )

    def restore_memory(self, record: MemoryRecord, vector: np.ndarray) -> str | None:
        """Insert a memory exactly as exported (lifecycle included); the id it was stored
        under, or ``None`` when the same space already has it (nothing written)."""
        with self.writing() as conn:
            owner = conn.execute(
                "SELECT space FROM memories WHERE id = %s", (record.id,)
            ).fetchone()
            if owner is not None and owner[0] == record.space:
                return None
            if (
                owner is not None
                and conn.execute(  # imported here before, under a fresh id
                    "SELECT 1 FROM memories WHERE space = %s AND category = %s AND content = %s "
                    "AND created_at = %s",
                    (record.space, record.category, record.content, record.created_at),
                ).fetchone()
            ):
                return None
            memory_id = record.id
            while owner is not None:
                memory_id = new_memory_id()
                owner = conn.execute(
                    "SELECT 1 FROM memories WHERE id = %s", (memory_id,)
                ).fetchone()
            data = record.to_dict()
            data.update(
                id=memory_id,
                tags=json.dumps(data["tags"]),
                cited_lines=json.dumps(data["cited_lines"]),
                prohibited=bool(data["prohibited"]),
                active=bool(data["active"]),
                pinned=bool(data["pinned"]),
            )
            values = [data[name] for name in _MEMORY_NAMES] + [vectors.encode(vector)]
            conn.execute(
                f"INSERT INTO memories ({_MEMORY_COLUMNS}, vector) "
                f"VALUES ({','.join(['%s'] * (len(values) - 1))}, %b)",
                values,
            )
            self._cite(conn, record.space, memory_id, record.cited_lines)
            names = memory_names(record.content, record.entity, record.value)
            graph.link_memory(conn, record.space, memory_id, names)
        return memory_id

    @staticmethod
    def _memory(row: tuple) -> MemoryRecord:
        values = list(row)
        values[7] = tuple(json.loads(values[7]))
        values[17] = tuple(json.loads(values[17]))
        return MemoryRecord(*values)

    def get_memory(self, space: str, memory_id: str) -> MemoryRecord:
        with self.reading() as conn:
            row = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE space = %s AND id = %s",
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
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE space = %s AND id = ANY(%s) "
                "ORDER BY seq",
                (space, list(ids)),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def list_memories(
        self, space: str, *, include_inactive: bool = False, prohibited: bool | None = None
    ) -> list[MemoryRecord]:
        where = "" if include_inactive else " AND active"
        if prohibited is not None:
            where += " AND prohibited" if prohibited else " AND NOT prohibited"
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE space = %s{where} ORDER BY seq",
                (space,),
            ).fetchall()
        return [self._memory(row) for row in rows]

    def update_memory(
        self, space: str, memory_id: str, update: MemoryUpdate, now: str
    ) -> MemoryRecord:
        changes = {k: v for k, v in vars(update).items() if v is not None}
        with self.writing() as conn:
            found = conn.execute(
                "SELECT 1 FROM memories WHERE space = %s AND id = %s", (space, memory_id)
            ).fetchone()
            if not found:
                raise NotFoundError(f"no memory {memory_id!r} in space {space!r}")
            if changes:
                sets = ", ".join(f"{name} = %s" for name in changes)
                conn.execute(
                    f"UPDATE memories SET {sets}, updated_at = %s WHERE space = %s AND id = %s",
                    [*changes.values(), now, space, memory_id],
                )
            return self.get_memory(space, memory_id)

    def delete_memory(self, space: str, memory_id: str) -> None:
        """Delete one memory and repair the lineage through it, in one transaction."""
        with self.writing() as conn:
            row = conn.execute(
                "SELECT superseded_by FROM memories WHERE space = %s AND id = %s",
                (space, memory_id),
            ).fetchone()
            if row is None:
                raise NotFoundError(
                    f"no memory {memory_id!r} in space {space!r}: list them with "
                    "`orcamem facts --history`"
                )
            successor = row[0] if row[0] != memory_id else None
            conn.execute(
                "UPDATE memories SET superseded_by = %s WHERE space = %s AND superseded_by = %s",
                (successor, space, memory_id),
            )
            conn.execute("DELETE FROM memories WHERE space = %s AND id = %s", (space, memory_id))

    def mark_accessed(self, space: str, memory_ids: Sequence[str], now: str) -> None:
        if not memory_ids:
            return
        with self.writing() as conn:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s "
                "WHERE space = %s AND id = ANY(%s)",
                (now, space, list(memory_ids)),
            )

    def superseded_lines(self, space: str, line_ids: Sequence[int]) -> dict[int, str]:
        if not line_ids:
            return {}
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT c.line_id, m.superseded_by FROM memory_citations c "
                "JOIN memories m ON m.id = c.memory_id WHERE m.space = %s AND NOT m.active "
                "AND m.superseded_by IS NOT NULL AND c.line_id = ANY(%s)",
                (space, list(line_ids)),
            ).fetchall()
        return {line: newer for line, newer in rows}

    # -- consolidation ---------------------------------------------------------------------

    def pending_episodes(self, space: str, limit: int) -> list[Episode]:
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT {_EPISODE_COLUMNS} FROM episodes WHERE "
                + above(
                    "%(space)s",
                    "coalesce((SELECT last_episode_id FROM consolidation_progress "
                    "WHERE space = %(space)s), 0)",
                )
                + " ORDER BY space, id LIMIT %(limit)s",
                {"space": space, "limit": limit},
            ).fetchall()
        return [self._episode(row) for row in rows]

    def last_episode_created(self, space: str) -> str | None:
        with self.reading() as conn:
            row = conn.execute(
                "SELECT created_at FROM episodes WHERE space = %s ORDER BY id DESC LIMIT 1",
                (space,),
            ).fetchone()
        return row[0] if row else None

    def mark_consolidated(self, space: str, last_episode_id: int, now: str) -> None:
        """Move the space's watermark forward (never back)."""
        with self.writing() as conn:
            conn.execute(
                "INSERT INTO consolidation_progress (space, last_episode_id, updated_at) "
                "VALUES (%s, %s, %s) ON CONFLICT (space) DO UPDATE SET last_episode_id = "
                "greatest(consolidation_progress.last_episode_id, excluded.last_episode_id), "
                "updated_at = excluded.updated_at",
                (space, last_episode_id, now),
            )

    def log_block(self, entry: BlockEntry, *, keep: int, since: str) -> None:
        BlockTable(self).log(entry, keep=keep, since=since)

    def injected_blocks(self, space: str, limit: int = 100) -> list[BlockEntry]:
        return BlockTable(self).recent(space, limit)

    def add_audit(self, space: str, job_id: str | None, item: dict, reason: str, now: str) -> None:
        with self.writing() as conn:
            conn.execute(
                "INSERT INTO consolidation_audit (space, job_id, item, reason, created_at) "
                "VALUES (%s, %s, %s, %s, %s)",
                (space, job_id, json.dumps(item, ensure_ascii=False, sort_keys=True), reason, now),
            )

    def audit_log(self, space: str, limit: int = 100) -> list[dict]:
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT id, job_id, item, reason, created_at FROM consolidation_audit "
                "WHERE space = %s ORDER BY id DESC LIMIT %s",
                (space, limit),
            ).fetchall()
        return [
            {"id": r[0], "job_id": r[1], "item": json.loads(r[2]), "reason": r[3],
             "created_at": r[4]}
            for r in rows
        ]  # fmt: skip

    # -- maintenance -----------------------------------------------------------------------

    def iter_texts_for_embedding(
        self, space: str
    ) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
        with self.reading() as conn:
            lines = conn.execute(
                "SELECT id, text FROM lines WHERE space = %s ORDER BY id", (space,)
            ).fetchall()
            memories = conn.execute(
                "SELECT id, content FROM memories WHERE space = %s ORDER BY seq", (space,)
            ).fetchall()
        return [tuple(r) for r in lines], [tuple(r) for r in memories]

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
        """Swap every vector of ``space`` and its embedder record (``spec``: what rebuilds
        the embedder) in one transaction, if the maps cover the space."""
        with self.writing() as conn:
            lacking = (
                ([], [])
                if partial
                else lacking_vectors(conn, self.PARAM, space, line_vectors, memory_vectors)
            )
            if any(lacking):
                return lacking
            with conn.cursor() as cursor:
                for table, given in (("lines", line_vectors), ("memories", memory_vectors)):
                    cursor.executemany(
                        f"UPDATE {table} SET vector = %b WHERE id = %s AND space = %s",
                        [(vectors.encode(v), k, space) for k, v in given.items()],
                    )
            conn.execute(
                "UPDATE spaces SET embedder_id = %s, dim = %s, embedder_spec = %s WHERE name = %s",
                (embedder_id, dim, spec, space),
            )
            self._bump(conn, space)
        return lacking

    def counts(self) -> dict[str, int]:
        with self.reading() as conn:
            return {
                table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("spaces", "episodes", "lines", "memories")
            }

    def size_bytes(self) -> int:
        """The bytes orcamem's tables and their indexes take in the database."""
        with self.reading() as conn:
            return int(
                conn.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) "
                    "FROM unnest(%s::text[]) AS t",
                    (list(TABLES),),
                ).fetchone()[0]
            )

    def problems(self) -> list[Problem]:
        """What ``orcamem check`` finds wrong: vectors, digests, lineage, graph, counters
        (foreign keys are enforced by the server, and a ``tsv`` is written with its row)."""
        with self.reading() as conn:
            return [
                *self._vector_problems(conn),
                *self._digest_problems(conn),
                *check.lineage(conn),
                *(
                    Problem(
                        "graph",
                        f"space {space!r}: the entity graph is out of step ({why}), so "
                        f"spreading activation misses links: {check.REPAIR}",
                        space,
                    )
                    for space, why in graph.drift(conn).items()
                ),
            ]

    @staticmethod
    def _vector_problems(conn: psycopg.Connection) -> list[Problem]:
        found = []
        rows = conn.execute(
            "SELECT s.name, s.embedder_id, s.dim, t.name, t.missing, t.wrong FROM spaces s "
            "CROSS JOIN LATERAL (SELECT 'lines' AS name, count(*) FILTER (WHERE vector IS NULL) "
            "AS missing, count(*) FILTER (WHERE vector_dims(vector) != s.dim) AS wrong "
            "FROM lines WHERE space = s.name UNION ALL SELECT 'memories', count(*) FILTER "
            "(WHERE vector IS NULL), count(*) FILTER (WHERE vector_dims(vector) != s.dim) "
            "FROM memories WHERE space = s.name) t ORDER BY s.name, t.name"
        ).fetchall()
        for space, embedder, dim, table, missing, wrong in rows:
            if missing:
                found.append(
                    Problem(
                        "vectors",
                        f"space {space!r}: {missing} of its {table} have no vector, so vector "
                        f"search cannot find them: {check.REPAIR}",
                        space,
                    )
                )
            if wrong:
                found.append(
                    Problem(
                        "vectors",
                        f"space {space!r}: {wrong} of its {table} have vectors of another size "
                        f"than its embedder {embedder} makes ({dim}): {check.REPAIR}",
                        space,
                    )
                )
        return found

    @staticmethod
    def _digest_problems(conn: psycopg.Connection) -> list[Problem]:
        found = []
        for episode_id, space, text, stored in conn.execute(
            "SELECT id, space, text, digest FROM episodes ORDER BY id"
        ):
            if digest(text) != stored:
                found.append(
                    Problem(
                        "digest",
                        f"episode {episode_id} in space {space!r} no longer matches its "
                        f"digest (its text or digest was changed outside orcamem): "
                        f"{check.restore_episode(episode_id, space)}",
                        space,
                        repairable=False,
                    )
                )
        return found

    def repair_derived(self) -> list[str]:
        """Clear dangling ``superseded_by``, rebuild drifted graphs, recount the BM25 and
        line counters; one line per action."""
        done = []
        with self.writing() as conn:
            dangling = [
                row[0]
                for row in conn.execute(
                    "SELECT m.id FROM memories m WHERE m.superseded_by IS NOT NULL AND "
                    "(m.superseded_by = m.id OR NOT EXISTS (SELECT 1 FROM memories n "
                    "WHERE n.id = m.superseded_by AND n.space = m.space)) ORDER BY m.seq"
                )
            ]
            if dangling:
                conn.execute(
                    "UPDATE memories SET superseded_by = NULL WHERE id = ANY(%s)", (dangling,)
                )
                done.append(f"cleared the dangling superseded_by of {', '.join(dangling)}")
            for space in graph.drift(conn):
                graph.rebuild(conn, space)
                done.append(
                    f"rebuilt the entity graph of space {space!r} from its lines and memories"
                )
        return done

    def stale_vectors(self, space: str) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
        wrong = (
            "space = %(s)s AND (vector IS NULL OR vector_dims(vector) != "
            "(SELECT dim FROM spaces WHERE name = %(s)s))"
        )
        with self.reading() as conn:
            lines = conn.execute(
                f"SELECT id, text FROM lines WHERE {wrong} ORDER BY id", {"s": space}
            )
            memories = conn.execute(
                f"SELECT id, content FROM memories WHERE {wrong} ORDER BY seq", {"s": space}
            )
            return [tuple(r) for r in lines], [tuple(r) for r in memories]

    def close(self) -> None:
        """Close the pool; idempotent. Later calls raise ``ClosedError``. A lexical index
        load still running on its thread is cancelled and joined first (it held a pooled
        connection and read on after the store closed)."""
        if not self._closed:
            self._closed = True
            self._lexical.stop()
            with suppress(Exception):
                self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the role stores on this database ----------------------------------------------------

    @cached_property
    def keys(self) -> KeyTable:
        return KeyTable(self)

    @cached_property
    def notes(self) -> NoteTable:
        return NoteTable(self)

    @cached_property
    def jobs(self) -> PostgresJobStore:
        return PostgresJobStore(self)


SOURCES_SQL = (
    "(SELECT 'n', name, id, fan FROM entities "
    "WHERE space = %(space)s AND name = ANY(%(names)s::text[])) UNION ALL "
    + " UNION ALL ".join(
        f"(SELECT DISTINCT '{kind}', k.id::text, e.id, e.fan FROM unnest(%({ids})s::{type_}[]) "
        f"k(id) CROSS JOIN LATERAL (SELECT entity_id FROM {table} WHERE {column} = k.id "
        "OFFSET 0) l CROSS JOIN LATERAL (SELECT id, fan, space FROM entities "
        "WHERE id = l.entity_id OFFSET 0) e WHERE e.space = %(space)s)"
        for kind, ids, type_, table, column in (
            ("e", "episodes", "bigint", "entity_lines", "episode_id"),
            ("m", "memories", "text", "entity_memories", "memory_id"),
        )
    )
)
"""``entity_sources``: ``('n', name, entity, fan)`` for the names the space knows, then
``('e' | 'm', episode or memory id, entity, fan)`` for what those name, each id by its
index and each entity by its key alone (a plain join hashed all the entities of a space
ANALYZE had not seen, 10 ms at 100,000 lines; with the space beside the key the planner
could take the ``(space, name)`` index with the id as a filter, every entity of the space
once per link: 280 ms a search on a 100,000-line space just loaded)."""


MENTIONS_SQL = (
    "SELECT e.id, l.episode_id, l.line_id FROM unnest(%(ids)s::bigint[]) k(id) "
    "CROSS JOIN LATERAL (SELECT id, space FROM entities WHERE id = k.id OFFSET 0) e "
    "CROSS JOIN LATERAL (SELECT episode_id, line_id FROM entity_lines "
    "WHERE entity_id = e.id ORDER BY episode_id, line_id LIMIT %(limit)s) l "
    "WHERE e.space = %(space)s ORDER BY 1, 2, 3"
)
"""``entity_mentions``: the first ``limit`` links of each entity in its key's order, each
entity looked up by its key alone (with the space beside it, a space ANALYZE had not seen
AND-ed its whole ``(space, name)`` index into the look-up: 1 ms of a 10 ms search)."""


WINDOW_SQL = (
    "SELECT e.id, n.id, n.session_seq - e.session_seq FROM unnest(%(ids)s::bigint[]) k(id) "
    "CROSS JOIN LATERAL (SELECT * FROM episodes WHERE id = k.id OFFSET 0) e "
    "CROSS JOIN LATERAL (SELECT n.id, n.session_seq FROM episodes n "
    "WHERE n.space = e.space AND n.session_id = e.session_id "
    "AND n.session_seq BETWEEN e.session_seq - %(radius)s AND e.session_seq + %(radius)s "
    "AND n.id != e.id OFFSET 0) n WHERE e.space = %(space)s ORDER BY e.id, n.id"
)
"""``session_window``: each asked episode by its key, then its neighbours by the session
index. A plain join with the asked ids was hash-joined with every episode of a space whose
statistics were stale (1.7 of a 10 ms search at 10,000 lines, bulk-loaded and not yet
analyzed); the neighbours' look-up was a scan of the space until ANALYZE had seen it."""


def admitted_lines(where: SearchFilter, space: str) -> tuple[str, Clauses]:
    """A filtered BM25 query's lines ``d`` (a FROM item) and the clauses that admit them,
    in a shape the planner cannot turn into a scan per episode whatever the statistics
    (a plain ``IN`` subquery on a never-analyzed 100,000-line space was planned for 2
    of 50,000 episodes, each AND-ing the space's whole line index: minutes). A session's
    episodes come first, each one's lines by their ``(episode_id, seq)`` key; any other
    filter keeps the lines the text index matches and looks each one's episode up by its
    primary key. Both sit behind ``OFFSET 0``, so neither is flattened, and the look-up
    holds only the key: with the role beside it, a space ANALYZE had not seen read each
    line's episode from the ``(space, role, …)`` index, 5,000 entries a line (1.7 s)."""
    inner = episode_clauses(where, POSTGRES, space)
    if where.session is not None:
        source = (
            f"(SELECT e.id FROM episodes e WHERE {inner.sql} OFFSET 0) a CROSS JOIN "
            "LATERAL (SELECT * FROM lines WHERE episode_id = a.id OFFSET 0) d"
        )
        return source, Clauses("", inner.params)
    source = (
        "lines d CROSS JOIN LATERAL (SELECT * FROM episodes WHERE id = d.episode_id OFFSET 0) e"
    )
    return source, Clauses(f" AND {inner.sql}", inner.params)


def refuse_bad_url(url: str) -> None:
    """A ``postgresql://`` URL that psycopg cannot parse is bad input, said before connecting."""
    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise InvalidInputError(
            f"{safe_url(url)} is not a PostgreSQL URL psycopg can read ({exc}): use "
            "postgresql://user:password@host:5432/database"
        ) from None

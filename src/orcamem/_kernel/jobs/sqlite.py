"""``SQLiteJobStore``: job rows in the ``jobs`` table of an orcamem SQLite file.

Only row access lives here; the job rules (idempotency, admission, leases, fencing, attempts,
retention) are in :class:`~orcamem._kernel.jobs.queue.JobQueue`. Every change runs inside
``SQLiteStore.writing()`` — ``BEGIN IMMEDIATE``, so a claim or a publish excludes every other
writer, in this process or another, until it commits — and store writes made inside it (a
publish's ``apply``) join the same transaction as savepoints.

SQL is built by pure ``_prepare_*`` functions that return ``(sql, params)``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

__all__ = ["Connections", "SQLiteJobStore"]


class Connections(Protocol):
    """What the rows need from a SQLite store: its reads and its ``BEGIN IMMEDIATE`` writes
    (the engine's ``SQLiteStore`` answers it)."""

    def reading(self) -> AbstractContextManager[sqlite3.Connection]: ...
    def writing(self) -> AbstractContextManager[sqlite3.Connection]: ...


COLUMNS = (
    "id",
    "space",
    "kind",
    "session_id",
    "turn_id",
    "source_digest",
    "payload",
    "status",
    "attempts",
    "max_attempts",
    "lease_owner",
    "lease_expires_at",
    "fence",
    "not_before",
    "error",
    "result",
    "provenance",
    "created_at",
    "updated_at",
)
"""The ``jobs`` columns (SQLite migration 2), and the keys of every row dict."""

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM jobs"
_UPDATABLE = frozenset(COLUMNS) - {"id", "space", "kind", "session_id", "turn_id", "source_digest"}

Row = dict[str, Any]


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def _prepare_next_claimable(
    now: str, kinds: Collection[str] | None, spaces: Collection[str] | None
) -> tuple[str, list[Any]]:
    """The oldest ready pending job, or running job whose lease expired."""
    where = (
        "((status = 'pending' AND coalesce(not_before, '') <= ?) "
        "OR (status = 'running' AND coalesce(lease_expires_at, '') <= ?))"
    )
    params: list[Any] = [now, now]
    if kinds is not None:
        kinds = list(kinds)
        where += f" AND kind IN ({_marks(kinds)})"
        params += kinds
    if spaces is not None:
        spaces = list(spaces)
        where += f" AND space IN ({_marks(spaces)})"
        params += spaces
    return f"{_SELECT} WHERE {where} ORDER BY created_at, rowid LIMIT 1", params


def _prepare_update(job_id: str, changes: Row) -> tuple[str, list[Any]]:
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise ValueError(f"cannot update job columns {sorted(unknown)}")
    names = sorted(changes)
    sets = ", ".join(f"{name} = ?" for name in names)
    return f"UPDATE jobs SET {sets} WHERE id = ?", [changes[n] for n in names] + [job_id]


def _prepare_prune_done(space: str, keep: int) -> tuple[str, list[Any]]:
    return (
        "DELETE FROM jobs WHERE space = ? AND status = 'done' AND rowid NOT IN ("
        "SELECT rowid FROM jobs WHERE space = ? AND status = 'done' "
        "ORDER BY updated_at DESC, rowid DESC LIMIT ?)",
        [space, space, keep],
    )


def _prepare_list(
    space: str | None, statuses: Collection[str] | None, limit: int
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if space is not None:
        clauses.append("space = ?")
        params.append(space)
    if statuses is not None:
        statuses = list(statuses)
        clauses.append(f"status IN ({_marks(statuses)})")
        params += statuses
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return f"{_SELECT}{where} ORDER BY created_at DESC, rowid DESC LIMIT ?", [*params, limit]


class _Rows:
    """``JobRows`` on one connection, inside the caller's transaction (or autocommit reads)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _one(self, sql: str, params: Sequence[Any]) -> Row | None:
        row = self._conn.execute(sql, params).fetchone()
        return dict(zip(COLUMNS, row, strict=True)) if row is not None else None

    def get(self, job_id: str) -> Row | None:
        return self._one(f"{_SELECT} WHERE id = ?", (job_id,))

    def count_active(self, space: str) -> int:
        return self._conn.execute(
            "SELECT count(*) FROM jobs WHERE space = ? AND status IN ('pending', 'running')",
            (space,),
        ).fetchone()[0]

    def next_claimable(
        self, now: str, kinds: Collection[str] | None, spaces: Collection[str] | None
    ) -> Row | None:
        return self._one(*_prepare_next_claimable(now, kinds, spaces))

    def insert(self, row: Row) -> None:
        self._conn.execute(
            f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES ({_marks(COLUMNS)})",
            [row[name] for name in COLUMNS],
        )

    def update(self, job_id: str, changes: Row) -> None:
        self._conn.execute(*_prepare_update(job_id, changes))

    def prune_done(self, space: str, keep: int) -> int:
        return self._conn.execute(*_prepare_prune_done(space, keep)).rowcount

    def list(self, space: str | None, statuses: Collection[str] | None, limit: int) -> list[Row]:
        rows = self._conn.execute(*_prepare_list(space, statuses, limit)).fetchall()
        return [dict(zip(COLUMNS, row, strict=True)) for row in rows]

    def counts(self, space: str | None) -> dict[str, int]:
        where, params = ("WHERE space = ?", (space,)) if space is not None else ("", ())
        return dict(
            self._conn.execute(
                f"SELECT status, count(*) FROM jobs {where} GROUP BY status", params
            ).fetchall()
        )


class SQLiteJobStore:
    """The job store of one SQLite store (same file, same connection, same lock).

    >>> from orcamem._kernel.jobs import JobQueue
    >>> from orcamem.engine.store import SQLiteStore
    >>> queue = JobQueue(SQLiteStore(":memory:").jobs)
    """

    capabilities = frozenset({"jobs"})

    def __init__(self, store: Connections) -> None:
        self.store = store

    @contextmanager
    def writing(self) -> Iterator[_Rows]:
        """One ``BEGIN IMMEDIATE`` transaction (a savepoint when already inside one)."""
        with self.store.writing() as conn:
            yield _Rows(conn)

    @contextmanager
    def reading(self) -> Iterator[_Rows]:
        with self.store.reading() as conn:
            yield _Rows(conn)

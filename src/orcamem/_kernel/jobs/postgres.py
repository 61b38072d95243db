"""``PostgresJobStore``: job rows in the ``jobs`` table of an orcamem PostgreSQL database.

Only row access lives here; the rules are :class:`~orcamem._kernel.jobs.queue.JobQueue`'s, the
same as on SQLite. Every change runs inside the store's ``writing()`` (one transaction, nested
store writes join it as savepoints). Claims take the oldest ready row ``FOR UPDATE SKIP
LOCKED``, so workers on several machines never wait on, or take, a row another claimer holds;
inside a write, :meth:`_Rows.get` locks the row it reads (``FOR UPDATE``), so a fence checked at
publish cannot change before the publish commits.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from .sqlite import COLUMNS

__all__ = ["PostgresJobStore"]

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM jobs"
_UPDATABLE = frozenset(COLUMNS) - {"id", "space", "kind", "session_id", "turn_id", "source_digest"}

Row = dict[str, Any]


class Connections(Protocol):
    """What the rows need: the store's reads and its transactions (``PostgresStore``)."""

    def reading(self) -> AbstractContextManager[Any]: ...
    def writing(self) -> AbstractContextManager[Any]: ...


class _Rows:
    def __init__(self, conn: Any, *, locking: bool) -> None:
        self._conn = conn
        self._lock = " FOR UPDATE" if locking else ""

    def _one(self, sql: str, params: Sequence[Any]) -> Row | None:
        row = self._conn.execute(sql, params).fetchone()
        return dict(zip(COLUMNS, row, strict=True)) if row is not None else None

    def get(self, job_id: str) -> Row | None:
        return self._one(f"{_SELECT} WHERE id = %s{self._lock}", (job_id,))

    def count_active(self, space: str) -> int:
        return self._conn.execute(
            "SELECT count(*) FROM jobs WHERE space = %s AND status IN ('pending', 'running')",
            (space,),
        ).fetchone()[0]

    def next_claimable(
        self, now: str, kinds: Collection[str] | None, spaces: Collection[str] | None
    ) -> Row | None:
        where = (
            "((status = 'pending' AND coalesce(not_before, '') <= %s) "
            "OR (status = 'running' AND coalesce(lease_expires_at, '') <= %s))"
        )
        params: list[Any] = [now, now]
        if kinds is not None:
            where += " AND kind = ANY(%s)"
            params.append(list(kinds))
        if spaces is not None:
            where += " AND space = ANY(%s)"
            params.append(list(spaces))
        return self._one(
            f"{_SELECT} WHERE {where} ORDER BY created_at, seq LIMIT 1 FOR UPDATE SKIP LOCKED",
            params,
        )

    def insert(self, row: Row) -> None:
        self._conn.execute(
            f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES ({','.join(['%s'] * len(COLUMNS))})",
            [row[name] for name in COLUMNS],
        )

    def update(self, job_id: str, changes: Row) -> None:
        unknown = set(changes) - _UPDATABLE
        if unknown:
            raise ValueError(f"cannot update job columns {sorted(unknown)}")
        names = sorted(changes)
        self._conn.execute(
            f"UPDATE jobs SET {', '.join(f'{name} = %s' for name in names)} WHERE id = %s",
            [changes[name] for name in names] + [job_id],
        )

    def prune_done(self, space: str, keep: int) -> int:
        return self._conn.execute(
            "DELETE FROM jobs WHERE space = %s AND status = 'done' AND seq NOT IN ("
            "SELECT seq FROM jobs WHERE space = %s AND status = 'done' "
            "ORDER BY updated_at DESC, seq DESC LIMIT %s)",
            (space, space, keep),
        ).rowcount

    def list(self, space: str | None, statuses: Collection[str] | None, limit: int) -> list[Row]:
        clauses, params = ["true"], []
        if space is not None:
            clauses.append("space = %s")
            params.append(space)
        if statuses is not None:
            clauses.append("status = ANY(%s)")
            params.append(list(statuses))
        rows = self._conn.execute(
            f"{_SELECT} WHERE {' AND '.join(clauses)} ORDER BY created_at DESC, seq DESC LIMIT %s",
            [*params, limit],
        ).fetchall()
        return [dict(zip(COLUMNS, row, strict=True)) for row in rows]

    def counts(self, space: str | None) -> dict[str, int]:
        where, params = ("WHERE space = %s", (space,)) if space is not None else ("", ())
        return dict(
            self._conn.execute(
                f"SELECT status, count(*) FROM jobs {where} GROUP BY status", params
            ).fetchall()
        )


class PostgresJobStore:
    """The job store of one PostgreSQL store (same pool, same transactions)."""

    capabilities = frozenset({"jobs"})

    def __init__(self, store: Connections) -> None:
        self.store = store

    @contextmanager
    def writing(self) -> Iterator[_Rows]:
        with self.store.writing() as conn:
            yield _Rows(conn, locking=True)

    @contextmanager
    def reading(self) -> Iterator[_Rows]:
        with self.store.reading() as conn:
            yield _Rows(conn, locking=False)

"""The vector channel on PostgreSQL: exact scores, in the process's line cache or in SQL.

Vectors are ``halfvec``: the float16 the SQLite store keeps. A score is always the exact one
the SQLite index computes, the float32 dot product of the stored float16 row and the float32
query (``vector <#> query`` on ``vector`` casts), so both engines rank alike. A search scores
the space's rows in :class:`LineCache`; a space the cache cannot take is searched in SQL, and
one of up to :data:`EXACT_UP_TO` vectors is scanned exactly there. A larger one takes the
:data:`CANDIDATES` × ``limit`` rows nearest by float16 distance, scores those exactly and keeps
the top ``limit``: a scan of the space, or the walk of an HNSW index when an operator made one
(:func:`schema.hnsw_index`; orcamem stopped making it in migration 7, since keeping it was
most of a write), with ``hnsw.ef_search`` = :data:`EF_SEARCH` and iterative scans on.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import numpy as np
from pgvector import HalfVector, Vector

from ..vector_index import WIDE, Columns, blas_limit
from .schema import above

__all__ = [
    "CACHED_VECTORS",
    "CANDIDATES",
    "EF_SEARCH",
    "EXACT_UP_TO",
    "LineCache",
    "admitted_nearest",
    "admitted_sql",
    "decode",
    "encode",
    "nearest",
    "noise_floor",
]

CACHED_VECTORS = 1_000_000
"""Line vectors a process keeps in memory (float32, about 1 GB at 256 values), over all its
spaces. A space is taken in when it fits beside those already held (none is dropped to make
room: spaces taking turns would each read all their rows again); one that does not fit is
searched in the database (exactly up to :data:`EXACT_UP_TO`, else by float16 candidates)."""

EXACT_UP_TO = 5_000
"""A space with at most this many vectors is scanned exactly (its rows by the space index):
at that size an exact scan is cheaper than a filtered HNSW walk (measured: docs/storage.md)."""

EF_SEARCH = 100
"""``hnsw.ef_search`` of every connection (pgvector's default is 40): the candidate list the
HNSW walk keeps; recall of the ANN step rises with it, latency too."""
CANDIDATES = 4
"""Candidates fetched per wanted hit, re-scored exactly."""
SETTINGS = (
    f"SET hnsw.ef_search = {EF_SEARCH}",
    "SET hnsw.iterative_scan = relaxed_order",
)


def encode(vector: np.ndarray) -> HalfVector:
    return HalfVector(np.ascontiguousarray(vector, dtype=np.float16))


def decode(value: HalfVector) -> np.ndarray:
    return value.to_numpy().astype(np.float32)


def nearest(
    conn: Any,
    table: str,
    key: str,
    space: str,
    query: np.ndarray,
    limit: int,
    where: str = "",
    *,
    counted: bool = False,
    seen: dict[str, tuple[int, int]] | None = None,
    params: Any = None,
) -> list[tuple[Any, float]]:
    """Top ``limit`` ``(key, cosine)`` of ``space`` for a unit ``query``, in one statement.

    ``counted``: the table's rows are counted in ``spaces.line_count``, so a space over
    :data:`EXACT_UP_TO` takes its candidates by float16 distance, from HNSW when an operator
    made the index (the count gates each branch once,
    before any row is read), and ``seen[space]`` gets its ``(line count, vector epoch)``;
    otherwise the space is scanned exactly. ``params``: those ``where`` names.
    """
    dim = int(query.shape[0])
    if limit < 1 or dim < 1:
        return []
    score = f"-(vector::vector({dim}) <#> %(query)s::vector({dim}))"
    scope = f"space = %(space)s AND vector_dims(vector) = {dim}{where}"
    exact = f"SELECT {key}, {score} AS score FROM {table} WHERE {scope}"
    order = f"ORDER BY score DESC, {key} LIMIT %(limit)s"
    if counted:
        count = "(SELECT line_count FROM spaces WHERE name = %(space)s)"
        sql = (
            f"({exact} AND {count} <= {int(EXACT_UP_TO)} {order}) UNION ALL "
            f"(SELECT {key}, score FROM ({exact} AND {count} > {int(EXACT_UP_TO)} "
            f"ORDER BY vector::halfvec({dim}) <#> %(half)s::halfvec({dim}) "
            f"LIMIT %(candidates)s) c {order})"
        )  # the index orders candidates by its float16 distance; each is then scored exactly
        sql = (  # and the space's count and epoch come along (the noise floor's cache key)
            f"SELECT h.*, s.line_count, s.vector_epoch FROM ({sql}) h "
            "CROSS JOIN spaces s WHERE s.name = %(space)s"
        )
    else:
        sql = f"{exact} {order}"
    vector = np.ascontiguousarray(query, dtype=np.float32)
    found = conn.execute(
        sql,
        {
            "query": Vector(vector),
            "half": encode(vector),
            "space": space,
            "limit": limit,
            "candidates": max(limit * CANDIDATES, 64),
            **(params or {}),
        },
    ).fetchall()
    if counted and found and seen is not None:
        seen[space] = (found[0][2], found[0][3])
    return [(row[0], float(row[1])) for row in found]


def admitted_nearest(
    conn: Any, query: np.ndarray, limit: int, episodes: str, params: Any
) -> list[tuple[int, float]]:
    """Top ``limit`` ``(line id, cosine)`` of the lines of the episodes ``e`` that
    ``episodes`` (a WHERE naming the space) admits, the exact scores :func:`nearest` gives.

    The episodes are read first and each one's lines by its ``(episode_id, seq)`` key, both
    behind ``OFFSET 0`` so the planner can neither flatten them nor AND the space's whole
    line index into each look-up: on a bulk-loaded space ANALYZE had not seen, the plain
    ``IN`` subquery was planned for 2 of 50,000 episodes and read the 100,000 entries of
    ``lines_space`` once per episode (a role-filtered search ran for minutes)."""
    dim = int(query.shape[0])
    if limit < 1 or dim < 1:
        return []
    params = {"query": Vector(np.ascontiguousarray(query, dtype=np.float32)), "limit": limit,
              **params}  # fmt: skip
    found = conn.execute(admitted_sql(dim, episodes), params).fetchall()
    return [(row[0], float(row[1])) for row in found]


def admitted_sql(dim: int, episodes: str) -> str:
    """:func:`admitted_nearest`'s statement (parameters ``query``, ``limit`` and those of
    ``episodes``)."""
    return (
        f"SELECT l.id, -(l.vector::vector({dim}) <#> %(query)s::vector({dim})) AS score "
        f"FROM (SELECT e.id FROM episodes e WHERE {episodes} OFFSET 0) a "
        "CROSS JOIN LATERAL (SELECT id, vector FROM lines WHERE episode_id = a.id OFFSET 0) l "
        f"WHERE vector_dims(l.vector) = {dim} ORDER BY score DESC, l.id LIMIT %(limit)s"
    )


def noise_floor(conn: Any, space: str, count: int, percentile: float, sample: int = 256) -> float:
    """The ``percentile`` of cosine between random pairs of the space's line vectors: the same
    seeded sample of positions (lines in id order) as the SQLite index takes."""
    if count < 8:
        return 0.0
    picks = np.random.default_rng(1234).choice(count, size=min(sample, count), replace=False)
    rows = conn.execute(
        "SELECT vector FROM (SELECT vector, row_number() OVER (ORDER BY id) - 1 AS pos "
        "FROM lines WHERE space = %s AND vector IS NOT NULL) x WHERE pos = ANY(%s)",
        (space, [int(p) for p in picks]),
        binary=True,
    ).fetchall()
    if len(rows) < 2:
        return 0.0
    block = np.stack([decode(row[0]) for row in rows])
    sims = block @ block.T
    return float(np.percentile(sims[np.triu_indices(len(rows), k=1)], percentile))


class _Column(NamedTuple):
    """One episode field beside each held row (what ``scope.Columns`` reads)."""

    values: np.ndarray  # int32 codes, or UTF-8 bytes when ordered
    codes: dict[str | None, int]  # grows only, shared by the snapshots of a space
    ordered: bool


class _Rows(NamedTuple):
    epoch: int
    last: int  # the highest line id held (ids grow in commit order: writes hold WRITE_LOCK)
    count: int
    dim: int
    keys: np.ndarray  # int64 line ids, ascending
    rows: np.ndarray  # float32, one unit vector a line
    columns: dict[str, _Column] | None = None  # the episode's role, session, occurred_at

    def fields(self) -> Columns:
        """The held rows' episode fields, as the SQLite index's filtered search masks them."""
        return Columns(self.count, self.columns or {})


_FIELDS = (("role", False), ("session", False), ("occurred_at", True))
"""The episode fields kept beside each row, as ``scope.LINE_COLUMNS`` names them: a filtered
search masks the held rows (``scope.line_mask``) as the SQLite store does, no SQL."""


def _columns(held: _Rows | None, fresh: list[tuple]) -> dict[str, _Column]:
    """The held columns with ``fresh``'s values (row[5:8]) appended, in new arrays."""
    made = {}
    for at, (name, ordered) in enumerate(_FIELDS, start=5):
        old = held.columns[name] if held is not None and held.columns else None
        codes = old.codes if old is not None else {}
        items = [row[at] for row in fresh]
        if ordered:
            values = np.array([(item or "").encode() for item in items], dtype=np.bytes_)
        else:
            for item in dict.fromkeys(items):
                codes.setdefault(item, len(codes))
            values = np.fromiter(map(codes.__getitem__, items), np.int32, len(items))
        if old is not None:
            values = np.concatenate([old.values, values])
        made[name] = _Column(values, codes, ordered)
    return made


def _unpack(blobs: list[bytes], dim: int) -> np.ndarray:
    """``halfvec_send`` values (an int16 size, an unused int16, then big-endian float16s) as
    one float32 matrix, decoded in one numpy call."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), 4 + 2 * dim)
    return raw[:, 4:].copy().view(">f2").astype(np.float32)


REFRESH_SQL = (
    "SELECT s.line_count, s.vector_epoch, s.dim, l.id, halfvec_send(l.vector), "
    "e.role, e.session_id, e.occurred_at "
    f"FROM spaces s LEFT JOIN lines l ON {above('%(space)s', '%(after)s', 'l')} "
    "AND l.vector IS NOT NULL AND vector_dims(l.vector) = s.dim AND (SELECT "
    "s.line_count <= %(room)s AND (%(epoch)s::bigint IS NULL OR s.vector_epoch = %(epoch)s)) "
    "LEFT JOIN LATERAL (SELECT role, session_id, occurred_at FROM episodes "
    "WHERE id = l.episode_id OFFSET 0) e ON true "  # by its key, whatever the statistics
    "WHERE s.name = %(space)s ORDER BY l.id"
)
""":meth:`LineCache.refresh`: the space's count and epoch, and its rows past ``after`` with
their episodes' fields (none when the epoch moved or the space outgrew ``room``)."""


class LineCache:
    """The line vectors of the spaces this process searches, exact, in memory: the SQLite
    store's exact index (``engine.store.vector_index``) on PostgreSQL. A query first reads
    only what changed since it last looked, in the same statement that reads the space's
    count and vector epoch: the rows above the highest line id it holds (a write holds the
    write lock from drawing its ids to its commit, so ids become visible in order), or the
    whole space again when the epoch moved (a delete or a re-embedding, on any replica).
    The score is the SQLite index's: the float32 dot product of the float16 rows, in numpy,
    ties by id; a search multiplies a snapshot outside the lock.
    """

    def __init__(self, budget: int = CACHED_VECTORS) -> None:
        self.budget = budget
        self._spaces: dict[str, _Rows] = {}
        self._lock = threading.Lock()

    def drop(self, space: str) -> None:
        with self._lock:
            self._spaces.pop(space, None)

    def held(self, space: str) -> _Rows | None:
        with self._lock:
            return self._spaces.get(space)

    def refresh(self, conn: Any, space: str) -> tuple[_Rows | None, tuple[int, int] | None]:
        """The space's rows brought up to date, and its ``(line count, epoch)``; the rows are
        ``None`` when the space is gone or does not fit in the budget (then search in SQL)."""
        with self._lock:
            held = self._spaces.get(space)
            room = self.budget - sum(r.count for n, r in self._spaces.items() if n != space)
        after = held.last if held is not None else 0
        found = conn.execute(
            REFRESH_SQL,
            {
                "after": after,
                "room": room,
                "epoch": held.epoch if held is not None else None,
                "space": space,
            },
            binary=True,
        ).fetchall()
        if not found:
            self.drop(space)
            return None, None
        count, epoch, dim = found[0][0], found[0][1], found[0][2]
        seen = (count, epoch)
        if count > room or not dim:
            self.drop(space)
            return None, seen
        if held is not None and held.epoch != epoch:  # rows changed: read the space again
            self.drop(space)
            return self.refresh(conn, space)
        fresh = [row for row in found if row[3] is not None]
        if held is not None and not fresh:
            return held, seen
        keys = np.fromiter((row[3] for row in fresh), dtype=np.int64, count=len(fresh))
        rows = _unpack([row[4] for row in fresh], dim)
        if held is not None and held.dim != dim:
            held = None
        columns = _columns(held, fresh)
        if held is not None:
            keys, rows = np.concatenate([held.keys, keys]), np.concatenate([held.rows, rows])
        made = _Rows(epoch, int(keys[-1]) if len(keys) else 0, len(keys), dim, keys, rows,
                     columns)  # fmt: skip
        with self._lock:
            self._spaces[space] = made
        return made, seen


_TIE = 6
"""Decimals two scores share to tie: BLAS rounds the same row differently by its position,
so identical vectors (a line said twice) differ in the 8th decimal, not in the 6th."""


def top(
    rows: _Rows, query: np.ndarray, limit: int, marked: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """Top ``limit`` ``(line id, cosine)`` of the held rows (only those ``marked``, a mask
    over them, when given), exact, ties (to :data:`_TIE` decimals) by id, as the SQL scan
    orders them."""
    if limit < 1 or rows.count == 0 or query.shape[0] != rows.dim:
        return []
    vector = np.ascontiguousarray(query, dtype=np.float32)
    keys, matrix = rows.keys, rows.rows
    if marked is not None:
        positions = np.flatnonzero(marked)
        if positions.size == 0:
            return []
        if positions.size * WIDE < rows.count:  # a session: score its few rows only
            keys, matrix, marked = keys[positions], matrix[positions], None
    with blas_limit(1):  # as the SQLite index (one thread is fastest on a busy machine)
        scores = matrix @ vector
    rank = -np.round(scores, _TIE)  # one line said twice is one tie, broken by id
    if marked is not None:
        limit = min(limit, int(marked.sum()))
        rank[~marked] = np.inf
    limit = min(limit, keys.size)
    best = np.argpartition(rank, limit - 1)[:limit]
    cut = rank[best].max()
    best = np.union1d(best, np.flatnonzero(rank == cut))  # every row tied at the cut
    best = best[np.lexsort((keys[best], rank[best]))][:limit]
    return [(int(keys[i]), float(scores[i])) for i in best]


def cached_floor(rows: _Rows, percentile: float, sample: int = 256) -> float:
    """:func:`noise_floor` over the held rows (the same seeded positions, in id order)."""
    if rows.count < 8:
        return 0.0
    picks = np.random.default_rng(1234).choice(rows.count, size=min(sample, rows.count),
                                               replace=False)  # fmt: skip
    block = rows.rows[np.sort(picks)]
    with blas_limit(1):  # as the SQLite index (one thread is fastest on a busy machine)
        sims = block @ block.T
    return float(np.percentile(sims[np.triu_indices(len(picks), k=1)], percentile))

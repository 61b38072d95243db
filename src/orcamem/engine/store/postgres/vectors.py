"""The vector channel on PostgreSQL: exact scores, pgvector HNSW to choose candidates.

Vectors are ``halfvec``: the float16 the SQLite store keeps. A score is always the exact one
the SQLite index computes, the float32 dot product of the stored float16 row and the float32
query (``vector <#> query`` on ``vector`` casts), so both engines rank alike. A space of up to
:data:`EXACT_UP_TO` vectors is scanned exactly. A larger one asks its HNSW index
(:func:`schema.hnsw_index`, inner product on unit vectors) for :data:`CANDIDATES` × ``limit``
rows with ``hnsw.ef_search`` = :data:`EF_SEARCH` and iterative scans on (so a space inside a
bigger table still fills its list), scores those exactly and keeps the top ``limit``: the ANN
index only chooses whom to score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pgvector import HalfVector, Vector

__all__ = ["CANDIDATES", "EF_SEARCH", "EXACT_UP_TO", "decode", "encode", "nearest", "noise_floor"]

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
    :data:`EXACT_UP_TO` takes its candidates from HNSW (the count gates each branch once,
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

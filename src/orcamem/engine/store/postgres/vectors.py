"""The vector channel on PostgreSQL: pgvector HNSW for candidates, numpy for the exact score.

Vectors are ``halfvec``: the float16 the SQLite store keeps, so both engines score the same
numbers. A query asks the space's HNSW index (:func:`schema.hnsw_index`, inner product on unit
vectors) for :data:`CANDIDATES` × ``limit`` rows with ``hnsw.ef_search`` = :data:`EF_SEARCH`
and iterative scans on (so a small space inside a big table still fills its list), then
re-scores those candidates exactly as the SQLite index does (float32 dot product of the
decoded float16 rows) and keeps the top ``limit``: the ANN index only chooses whom to score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pgvector import HalfVector

__all__ = ["CANDIDATES", "EF_SEARCH", "decode", "encode", "nearest", "noise_floor"]

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


def _top(rows: Sequence[tuple[Any, HalfVector]], query: np.ndarray, limit: int) -> list:
    if not rows:
        return []
    scores = np.stack([decode(vector) for _, vector in rows]) @ query
    order = np.argsort(-scores, kind="stable")[:limit]
    return [(rows[i][0], float(scores[i])) for i in order]


def nearest(
    conn: Any, table: str, key: str, space: str, query: np.ndarray, limit: int, where: str = ""
) -> list[tuple[Any, float]]:
    """Top ``limit`` ``(key, cosine)`` of ``space`` for a unit ``query``."""
    dim = int(query.shape[0])
    if limit < 1 or dim < 1:
        return []
    rows = conn.execute(
        f"SELECT {key}, vector FROM {table} WHERE space = %s AND vector_dims(vector) = {dim}"
        f"{where} ORDER BY vector::halfvec({dim}) <#> %b::halfvec({dim}) LIMIT %s",
        (space, encode(query), max(limit * CANDIDATES, 64)),
        binary=True,
    ).fetchall()
    return _top(rows, np.asarray(query, dtype=np.float32), limit)


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

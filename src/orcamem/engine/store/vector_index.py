"""An in-process exact vector index over vectors stored as BLOBs, refreshed incrementally.

Vectors are stored as float16 BLOBs; each space keeps a growing float32 matrix in memory. ``refresh`` reads only rows above a rowid
watermark, so a process sees another process's writes at the cost of one small query;
a per-space ``vector_epoch`` (bumped on delete and re-embed) forces that space to reload.
A stored vector whose size is not the space's recorded ``dim`` is refused with an error that
says to run ``orcamem repair``, never dropped in silence (``orcamem check`` lists them all).
Exact numpy cosine with one BLAS thread is ~1 ms at 10k×384 on a busy 2-core machine,
against ~28 ms with the default thread pool (DESIGN.md), hence ``threadpool_limits``.
Thread-safe: a lock guards the matrices while they change, and a search takes a snapshot under
it (rows are only ever appended, or replaced by a fresh matrix) and multiplies outside it, so
concurrent searches run in parallel (numpy releases the GIL).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from ...errors import CorruptStoreError

__all__ = ["BYTES_PER_VALUE", "VectorIndex", "decode_vector", "encode_vector"]

BYTES_PER_VALUE = 2
"""Bytes of one stored vector value (float16)."""


def encode_vector(vector: np.ndarray) -> bytes:
    """Vectors are stored as float16 BLOBs: half the disk of float32, and cosine rankings
    move by less than the default model's own float16 weights do."""
    return np.ascontiguousarray(vector, dtype=np.float16).tobytes()


def decode_vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float16).astype(np.float32)


_CONTROLLER: ThreadpoolController | None = None


def _blas_limit(threads: int) -> Any:
    """Limit BLAS threads for one product; the controller is built once (~0.4 ms each)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=threads, user_api="blas")


class _SpaceMatrix:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.keys: list[Hashable] = []
        self.rows = np.zeros((64, dim), dtype=np.float32)
        self.count = 0
        self.position: dict[Hashable, int] = {}

    def extend(self, keys: Sequence[Hashable], vectors: np.ndarray) -> None:
        """Append rows; a reader's snapshot (rows, count) stays valid: rows below ``count``
        never change, and a grown matrix is a new array."""
        needed = self.count + len(keys)
        if needed > self.rows.shape[0]:
            grown = np.zeros((max(needed, self.rows.shape[0] * 2), self.dim), dtype=np.float32)
            grown[: self.count] = self.rows[: self.count]
            self.rows = grown
        self.rows[self.count : needed] = vectors
        for offset, key in enumerate(keys):
            self.position[key] = self.count + offset
        self.keys.extend(keys)
        self.count = needed


class VectorIndex:
    """Exact cosine top-N per space over ``table``'s ``vector`` BLOB column.

    Args:
        table: ``lines`` or ``memories``; rows need ``rowid``, ``space`` and ``vector``.
        key_column: the column returned as a hit's key (``id``).
        blas_threads: BLAS threads used for the matrix product (1 is fastest when busy).
    """

    def __init__(self, table: str, key_column: str, *, blas_threads: int = 1) -> None:
        self._table = table
        self._key = key_column
        self._threads = blas_threads
        self._spaces: dict[str, _SpaceMatrix] = {}
        self._watermark = 0
        self._epochs: dict[str, int] = {}
        self._dims: dict[str, int | None] = {}
        self._floors: dict[str, tuple[int, float, float]] = {}
        self._lock = threading.Lock()

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Bring the index up to date with the database (cheap when nothing changed)."""
        with self._lock:
            spaces = conn.execute("SELECT name, vector_epoch, dim FROM spaces").fetchall()
            epochs = {name: epoch for name, epoch, _ in spaces}
            self._dims = {name: dim for name, _, dim in spaces}
            stale = [name for name, epoch in self._epochs.items() if epochs.get(name) != epoch]
            for name in stale:
                self._reload(conn, name, epochs.get(name))
            for name, epoch in epochs.items():
                self._epochs.setdefault(name, epoch)
            rows = conn.execute(
                f"SELECT space, {self._key}, vector, rowid FROM {self._table} "
                f"WHERE rowid > ? AND vector IS NOT NULL ORDER BY rowid",
                (self._watermark,),
            ).fetchall()
            by_space: dict[str, list[tuple]] = {}
            for row in rows:
                by_space.setdefault(row[0], []).append(row)
            for space, found in by_space.items():
                self._add(space, found)
            if rows:
                self._watermark = rows[-1][3]

    def _reload(self, conn: sqlite3.Connection, space: str, epoch: int | None) -> None:
        self._spaces.pop(space, None)
        self._floors.pop(space, None)
        if epoch is None:
            self._epochs.pop(space, None)
            return
        rows = conn.execute(
            f"SELECT space, {self._key}, vector FROM {self._table} "
            f"WHERE space = ? AND rowid <= ? AND vector IS NOT NULL ORDER BY rowid",
            (space, self._watermark),
        ).fetchall()
        if rows:
            self._add(space, rows)
        self._epochs[space] = epoch  # only once loaded: a refused row is met again next time

    def _add(self, space: str, rows: Sequence[tuple]) -> None:
        """Append ``(space, key, blob, …)`` rows of one space, decoded in one numpy call."""
        dim = self._dims.get(space) or len(rows[0][2]) // BYTES_PER_VALUE
        for _, key, blob, *_ in rows:
            if len(blob) != dim * BYTES_PER_VALUE:
                raise CorruptStoreError(
                    f"space {space!r} has a vector of {len(blob) // BYTES_PER_VALUE} values "
                    f"({self._table} row {key}) where its embedder makes {dim}: run `orcamem "
                    f"repair` to re-embed the rows that need it (or `orcamem reembed --space "
                    f"{space}` for all of them)"
                )
        block = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float16)
        matrix = self._spaces.get(space)
        if matrix is None:
            matrix = self._spaces[space] = _SpaceMatrix(dim)
        matrix.extend([row[1] for row in rows], block.reshape(len(rows), dim))

    def discard(self, space: str, keys: set[Hashable]) -> None:
        """Drop keys at once (own deletes; other processes reload through the epoch)."""
        with self._lock:
            matrix = self._spaces.get(space)
            if matrix is None or not keys:
                return
            keep = [i for i, key in enumerate(matrix.keys[: matrix.count]) if key not in keys]
            fresh = _SpaceMatrix(matrix.dim)
            fresh.extend([matrix.keys[i] for i in keep], matrix.rows[keep])
            self._spaces[space] = fresh

    def _snapshot(self, space: str) -> tuple[np.ndarray, list[Hashable]] | None:
        """The space's rows and keys as they are now, safe to read outside the lock."""
        with self._lock:
            matrix = self._spaces.get(space)
            if matrix is None or matrix.count == 0:
                return None
            return matrix.rows[: matrix.count], matrix.keys

    def drop(self, space: str) -> None:
        """Forget a deleted space at once (other processes drop it on their next refresh)."""
        for cache in (self._spaces, self._floors, self._epochs):
            cache.pop(space, None)

    def search(
        self, space: str, query: np.ndarray, limit: int, allowed: set[Hashable] | None = None
    ) -> list[tuple[Hashable, float]]:
        """Top ``limit`` keys by cosine (vectors are unit length, so a dot product)."""
        snapshot = self._snapshot(space)
        if snapshot is None or query.shape[0] != snapshot[0].shape[1]:
            return []
        rows, keys = snapshot
        with _blas_limit(self._threads):
            scores = rows @ query
        if allowed is not None:
            mask = np.fromiter((key in allowed for key in keys), bool, len(rows))
            scores = np.where(mask, scores, -2.0)
        limit = min(limit, len(rows))
        top = np.argpartition(-scores, limit - 1)[:limit]
        top = top[np.argsort(-scores[top])]
        return [(keys[i], float(scores[i])) for i in top if scores[i] > -2.0]

    def count(self, space: str) -> int:
        """How many vectors the space has: its rows, without a scan of the table."""
        with self._lock:
            matrix = self._spaces.get(space)
            return 0 if matrix is None else matrix.count

    def vectors(self, space: str, keys: list[Hashable]) -> dict[Hashable, np.ndarray]:
        """The stored vectors of those keys that the space has."""
        with self._lock:
            matrix = self._spaces.get(space)
            if matrix is None:
                return {}
            return {
                key: matrix.rows[matrix.position[key]].copy()
                for key in keys
                if key in matrix.position
            }

    def noise_floor(self, space: str, percentile: float, *, sample: int = 256) -> float:
        """The ``percentile`` of cosine between random pairs of the space's vectors.

        Cached until the space grows by a quarter; deterministic (seeded) sampling.
        """
        snapshot = self._snapshot(space)
        if snapshot is None or len(snapshot[0]) < 8:
            return 0.0
        rows = snapshot[0]
        cached = self._floors.get(space)
        if cached and cached[0] * 1.25 >= len(rows) and cached[1] == percentile:
            return cached[2]
        rng = np.random.default_rng(1234)
        picks = rng.choice(len(rows), size=min(sample, len(rows)), replace=False)
        block = rows[picks]
        with _blas_limit(self._threads):
            sims = block @ block.T
        upper = sims[np.triu_indices(len(picks), k=1)]
        floor = float(np.percentile(upper, percentile))
        self._floors[space] = (len(rows), percentile, floor)
        return floor

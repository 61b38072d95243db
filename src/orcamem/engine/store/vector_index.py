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

**Pruning** (``prune_above``): a space with more vectors than that is searched in two steps.
Each row is also kept projected on the space's first :data:`PRUNED_DIMS` principal axes
(fitted once on a seeded sample of its rows); a query scores those short rows, the best
:func:`candidates` of them are re-scored exactly, and the top ``limit`` of that exact score
is returned. It reads 96 of 256 values a row; on 200,000 turns of the latency bench's corpus
its top 100 held 0.99 of the exact top 100 at about half the time (docs/storage.md). A
filtered search (``mask``) of a pruned space does the same among the rows it admits.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Collection, Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np
from threadpoolctl import ThreadpoolController

from ...errors import CorruptStoreError

__all__ = [
    "BYTES_PER_VALUE",
    "PRUNED_DIMS",
    "WIDE",
    "Column",
    "Columns",
    "VectorIndex",
    "blas_limit",
    "candidates",
    "decode_vector",
    "encode_vector",
]

BYTES_PER_VALUE = 2
"""Bytes of one stored vector value (float16)."""


def encode_vector(vector: np.ndarray) -> bytes:
    """Vectors are stored as float16 BLOBs: half the disk of float32, and cosine rankings
    move by less than the default model's own float16 weights do."""
    return np.ascontiguousarray(vector, dtype=np.float16).tobytes()


def decode_vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float16).astype(np.float32)


_CONTROLLER: ThreadpoolController | None = None


def blas_limit(threads: int) -> Any:
    """Limit BLAS threads for one product; the controller is built once (~0.4 ms each)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=threads, user_api="blas")


PRUNED_DIMS = 96
"""Principal axes a pruned space's rows are projected on: 64 kept 0.91 of the exact top 100
at 2,000 candidates, 96 kept 0.99, 128 1.00 at nearly the exact cost (200,000 turns)."""
_SAMPLE = 10_000


_CHUNK = 20_000
"""Rows a load reads and decodes at a time."""

WIDE = 4
"""A mask of at least 1/WIDE of a space's rows scores the whole matrix and drops the rest:
reading every row once costs less than copying a quarter of them out first."""


def candidates(limit: int) -> int:
    """How many rows a pruned search re-scores exactly for a top ``limit``."""
    return max(2000, 20 * limit)


def _grown(array: np.ndarray, count: int, needed: int) -> np.ndarray:
    """``array`` with room for ``needed`` rows (a new array when it grows, so a snapshot of
    the old one stays valid)."""
    if needed <= array.shape[0]:
        return array
    grown = np.zeros((max(needed, array.shape[0] * 2), array.shape[1]), dtype=np.float32)
    grown[:count] = array[:count]
    return grown


class Column(NamedTuple):
    """A value kept beside each row, so a filtered search masks rows in numpy instead of
    reading the ids it admits from SQL on every query. Only for values a row never changes
    (an episode's role, session, time: the log is append-only; a delete or re-embed reloads
    the space through its epoch)."""

    name: str
    sql: str
    """Its expression in the refresh query (over the index's table ``t`` and its join)."""
    ordered: bool = False
    """Kept as UTF-8 bytes and compared in order (SQLite's BINARY collation: a fixed-width
    time stamp sorts like the time); else as integer codes, compared for equality."""


def _grown1(array: np.ndarray, count: int, needed: int) -> np.ndarray:
    """:func:`_grown` for a column (one value a row)."""
    if needed <= array.shape[0]:
        return array
    grown = np.zeros(max(needed, array.shape[0] * 2), dtype=array.dtype)
    grown[:count] = array[:count]
    return grown


class _ColumnValues:
    """One column of a space: codes (``values`` their ``int32`` array) or ordered bytes."""

    def __init__(self, ordered: bool) -> None:
        self.ordered = ordered
        self.codes: dict[str | None, int] = {}  # grows only, so a snapshot may share it
        self.values = np.zeros(64, dtype="S1" if ordered else np.int32)

    def encode(self, items: Sequence[str | None]) -> np.ndarray:
        if self.ordered:  # None (no value) is b"", below every stamp, and never in a range
            return np.array([(item or "").encode() for item in items], dtype=np.bytes_)
        codes = self.codes
        for item in dict.fromkeys(items):  # the new values, in order, each given the next code
            codes.setdefault(item, len(codes))
        return np.fromiter(map(codes.__getitem__, items), np.int32, len(items))

    def extend(self, count: int, encoded: np.ndarray) -> None:
        needed = count + len(encoded)
        values = _grown1(self.values, count, needed)
        if self.ordered and encoded.dtype.itemsize > values.dtype.itemsize:
            values = values.astype(encoded.dtype)  # a new array: snapshots keep the old one
        values[count:needed] = encoded
        self.values = values


class Columns:
    """A snapshot of a space's columns (rows ``0 … count``): a filtered search's mask."""

    def __init__(self, count: int, columns: dict[str, _ColumnValues]) -> None:
        self._count = count
        self._columns = {
            name: (c.values[:count], c.codes, c.ordered) for name, c in columns.items()
        }

    def all(self) -> np.ndarray:
        return np.ones(self._count, dtype=bool)

    def equal(self, name: str, value: str) -> np.ndarray:
        """Rows whose ``name`` is ``value`` (a row without one never is)."""
        values, codes, ordered = self._columns[name]
        if ordered:
            return values == value.encode()
        code = codes.get(value)
        return np.zeros(self._count, dtype=bool) if code is None else values == code

    def within(self, name: str, low: str | None, high: str | None) -> np.ndarray:
        """Rows whose ordered ``name`` is at or after ``low`` and at or before ``high``."""
        values = self._columns[name][0]
        mask = values != b""
        if low is not None:
            mask &= values >= low.encode()
        if high is not None:
            mask &= values <= high.encode()
        return mask


class _SpaceMatrix:
    def __init__(
        self,
        dim: int,
        basis: np.ndarray | None = None,
        columns: Sequence[Column] = (),
    ) -> None:
        self.dim = dim
        self.keys: list[Hashable] = []
        self.rows = np.zeros((64, dim), dtype=np.float32)
        self.count = 0
        self.position: dict[Hashable, int] = {}
        self.basis = basis  # dim × PRUNED_DIMS once the space is pruned
        self.projected = np.zeros((64, PRUNED_DIMS), dtype=np.float32)
        self.columns = {column.name: _ColumnValues(column.ordered) for column in columns}

    def reserve(self, needed: int) -> None:
        """Room for ``needed`` rows, so a load of many chunks allocates its matrices once."""
        self.rows = _grown(self.rows, self.count, needed)
        if self.basis is not None:
            self.projected = _grown(self.projected, self.count, needed)
        for values in self.columns.values():
            values.values = _grown1(values.values, self.count, needed)

    def extend(
        self, keys: Sequence[Hashable], vectors: np.ndarray, columns: Sequence[np.ndarray] = ()
    ) -> None:
        """Append rows (and their encoded column values, in the order of ``columns``); a
        reader's snapshot (rows, count) stays valid: rows below ``count`` never change, and
        a grown matrix is a new array."""
        needed = self.count + len(keys)
        self.rows = _grown(self.rows, self.count, needed)
        self.rows[self.count : needed] = vectors
        for values, encoded in zip(self.columns.values(), columns, strict=True):
            values.extend(self.count, encoded)
        if self.basis is not None:
            self.projected = _grown(self.projected, self.count, needed)
            self.projected[self.count : needed] = self.rows[self.count : needed] @ self.basis
        self.position.update(zip(keys, range(self.count, needed), strict=True))
        self.keys.extend(keys)
        self.count = needed

    def prune(self) -> None:
        """Fit the principal axes on a seeded sample of the rows and project every row."""
        rng = np.random.default_rng(1234)
        sample = self.rows[rng.choice(self.count, size=min(_SAMPLE, self.count), replace=False)]
        _, _, axes = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
        basis = np.ascontiguousarray(axes[:PRUNED_DIMS].T, dtype=np.float32)
        projected = np.zeros((self.rows.shape[0], PRUNED_DIMS), dtype=np.float32)
        np.matmul(self.rows[: self.count], basis, out=projected[: self.count])
        self.projected, self.basis = projected, basis


class _Snapshot(NamedTuple):
    rows: np.ndarray
    keys: list[Hashable]
    projected: np.ndarray | None
    basis: np.ndarray | None


class VectorIndex:
    """Exact cosine top-N per space over ``table``'s ``vector`` BLOB column.

    Args:
        table: ``lines`` or ``memories``; rows need ``rowid``, ``space`` and ``vector``.
        key_column: the column returned as a hit's key (``id``).
        blas_threads: BLAS threads used for the matrix product (1 is fastest when busy).
        prune_above: search a space with more vectors than this in two steps (see the
            module docs); ``None``: always exact.
        columns: values kept beside each row for :meth:`search`'s ``mask`` (see
            :class:`Column`), read with the vectors through ``join`` (SQL after ``{table} t``).
    """

    def __init__(
        self,
        table: str,
        key_column: str,
        *,
        blas_threads: int = 1,
        prune_above: int | None = None,
        columns: Sequence[Column] = (),
        join: str = "",
    ) -> None:
        self._table = table
        self._key = key_column
        self._columns = tuple(columns)
        extra = "".join(f", {column.sql}" for column in self._columns)
        self._select = (
            f"SELECT t.space, t.{key_column}, t.vector, t.rowid{extra} FROM {table} t {join} "
        )
        self._threads = blas_threads
        self._prune_above = prune_above
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
            top = conn.execute(f"SELECT max(rowid) FROM {self._table}").fetchone()[0] or 0
            cursor = conn.execute(
                f"{self._select}WHERE t.rowid > ? AND t.vector IS NOT NULL ORDER BY t.rowid",
                (self._watermark,),
            )
            new = top - self._watermark  # rows written since: a bound on any space's new rows
            self._load(cursor, conn, new if new > _CHUNK else 0, advance=True)

    def _reload(self, conn: sqlite3.Connection, space: str, epoch: int | None) -> None:
        self._spaces.pop(space, None)
        self._floors.pop(space, None)
        if epoch is None:
            self._epochs.pop(space, None)
            return
        cursor = conn.execute(
            f"{self._select}WHERE t.space = ? AND t.rowid <= ? AND t.vector IS NOT NULL "
            "ORDER BY t.rowid",
            (space, self._watermark),
        )
        self._load(cursor, conn, self._watermark, advance=False)
        self._epochs[space] = epoch  # only once loaded: a refused row is met again next time

    def _load(
        self, cursor: sqlite3.Cursor, conn: sqlite3.Connection, new: int, *, advance: bool
    ) -> None:
        """Append the ``(space, key, blob, rowid, *columns)`` rows ``cursor`` returns,
        :data:`_CHUNK` at a time, each chunk's vectors decoded in one numpy call straight into
        its space's matrix; a space is pruned once, after the last chunk. With ``new`` (a
        bound on the rows to come, 0 for a few), a space's matrices are first sized for
        what it may get (its row count, one index count): a million rows held as Python
        tuples, then joined and copied, peaked at 4.8 GB resident. ``advance``: move the
        watermark past each chunk appended (a refresh; a reload reads below it)."""
        touched: set[str] = set()
        while rows := cursor.fetchmany(_CHUNK):
            by_space: dict[str, list[tuple]] = {}
            for row in rows:
                by_space.setdefault(row[0], []).append(row)
            decoded = {space: self._decode(space, found) for space, found in by_space.items()}
            for space, (keys, block, encoded) in decoded.items():  # all decoded: none refused
                matrix = self._spaces[space]
                if new and space not in touched:
                    held = conn.execute(
                        f"SELECT count(*) FROM {self._table} WHERE space = ?", (space,)
                    ).fetchone()[0]
                    matrix.reserve(matrix.count + min(new, max(held - matrix.count, 0)))
                touched.add(space)
                matrix.extend(keys, block, encoded)
            if advance:  # a row refused in a later chunk is met again, these ones are not
                self._watermark = rows[-1][3]
        for space in touched:
            matrix = self._spaces[space]
            if (
                self._prune_above is not None
                and matrix.basis is None
                and matrix.count > max(self._prune_above, candidates(1))  # else nothing to prune
                and matrix.dim > PRUNED_DIMS
            ):
                with blas_limit(self._threads):
                    matrix.prune()

    def _decode(
        self, space: str, rows: Sequence[tuple]
    ) -> tuple[list[Hashable], np.ndarray, list[np.ndarray]]:
        """One space's rows of a chunk as its keys, its float16 vectors (one numpy call) and
        its encoded column values, the space's matrix made on its first row."""
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
            matrix = self._spaces[space] = _SpaceMatrix(dim, columns=self._columns)
        encoded = [
            values.encode([row[4 + i] for row in rows])
            for i, values in enumerate(matrix.columns.values())
        ]
        return [row[1] for row in rows], block.reshape(len(rows), dim), encoded

    def discard(self, space: str, keys: set[Hashable]) -> None:
        """Drop keys at once (own deletes; other processes reload through the epoch), found
        by their positions: a delete at a million rows scanned every key in Python and
        projected every row again."""
        with self._lock:
            matrix = self._spaces.get(space)
            if matrix is None or not keys:
                return
            gone = [matrix.position[key] for key in keys if key in matrix.position]
            keep = np.delete(np.arange(matrix.count), gone)
            fresh = _SpaceMatrix(matrix.dim, columns=self._columns)
            for name, values in fresh.columns.items():
                values.codes = matrix.columns[name].codes  # only grows: safe to share
            fresh.extend(
                [matrix.keys[i] for i in keep.tolist()],
                matrix.rows[keep],
                [values.values[keep] for values in matrix.columns.values()],
            )
            if matrix.basis is not None:  # each row keeps its projection: not made again
                fresh.basis, fresh.projected = matrix.basis, matrix.projected[keep]
            self._spaces[space] = fresh

    def _snapshot(self, space: str) -> _Snapshot | None:
        """The space's rows and keys as they are now, safe to read outside the lock."""
        with self._lock:
            matrix = self._spaces.get(space)
            if matrix is None or matrix.count == 0:
                return None
            count = matrix.count
            pruned = matrix.basis is not None and self._prune_above is not None
            return _Snapshot(
                matrix.rows[:count],
                matrix.keys,
                matrix.projected[:count] if pruned else None,
                matrix.basis if pruned else None,
            )

    def drop(self, space: str) -> None:
        """Forget a deleted space at once (other processes drop it on their next refresh)."""
        with self._lock:
            for cache in (self._spaces, self._floors, self._epochs):
                cache.pop(space, None)

    def search(
        self,
        space: str,
        query: np.ndarray,
        limit: int,
        *,
        allowed: Collection[Hashable] | None = None,
        mask: Callable[[Columns], np.ndarray] | None = None,
    ) -> list[tuple[Hashable, float]]:
        """Top ``limit`` keys by cosine (vectors are unit length, so a dot product).

        ``allowed``: only those keys are scored (a filtered search's rows, from one indexed
        query), exactly, whatever the space's size; the rest of the matrix is never read.
        ``mask``: only the rows it marks (a boolean array over the space's :class:`Columns`)
        are scored, exactly, as ``allowed`` would with their keys; in a pruned space, in the
        two steps of the module docs among them.
        """
        if allowed is not None:
            return self._search_among(space, query, limit, allowed)
        if mask is not None:
            return self._search_masked(space, query, limit, mask)
        snapshot = self._snapshot(space)
        if snapshot is None or query.shape[0] != snapshot.rows.shape[1]:
            return []
        rows = snapshot.rows
        limit = min(limit, len(rows))
        with blas_limit(self._threads):
            if snapshot.basis is not None and candidates(limit) < len(rows):
                coarse = snapshot.projected @ (snapshot.basis.T @ query)
                picked = np.argpartition(-coarse, candidates(limit) - 1)[: candidates(limit)]
                exact = rows[picked] @ query
            else:
                picked, exact = None, rows @ query
        top = np.argpartition(-exact, limit - 1)[:limit]
        top = top[np.argsort(-exact[top])]
        found = top if picked is None else picked[top]
        return [
            (snapshot.keys[i], float(score)) for i, score in zip(found, exact[top], strict=True)
        ]

    def _search_among(
        self, space: str, query: np.ndarray, limit: int, allowed: Collection[Hashable]
    ) -> list[tuple[Hashable, float]]:
        with self._lock:  # rows below ``count`` never change: the picked ones are a snapshot
            matrix = self._spaces.get(space)
            if matrix is None or query.shape[0] != matrix.dim:
                return []
            picked = [matrix.position[key] for key in allowed if key in matrix.position]
            if not picked or limit < 1:
                return []
            positions = np.fromiter(picked, dtype=np.intp, count=len(picked))
            rows, keys = matrix.rows, matrix.keys
        with blas_limit(self._threads):
            exact = rows[positions] @ query
        limit = min(limit, len(positions))
        top = np.argpartition(-exact, limit - 1)[:limit]
        top = top[np.argsort(-exact[top])]
        return [(keys[positions[i]], float(exact[i])) for i in top]

    def _search_masked(
        self, space: str, query: np.ndarray, limit: int, mask: Callable[[Columns], np.ndarray]
    ) -> list[tuple[Hashable, float]]:
        with self._lock:  # rows and column values below ``count`` never change
            matrix = self._spaces.get(space)
            if matrix is None or query.shape[0] != matrix.dim or limit < 1:
                return []
            count, rows, keys = matrix.count, matrix.rows, matrix.keys
            columns = Columns(count, matrix.columns)
            pruned = matrix.basis is not None and self._prune_above is not None
            projected, basis = (matrix.projected, matrix.basis) if pruned else (None, None)
        marked = mask(columns)
        positions = np.flatnonzero(marked)
        if not len(positions):
            return []
        limit = min(limit, len(positions))
        wide = len(positions) * WIDE >= count  # one pass over the matrix beats a gather
        with blas_limit(self._threads):
            if basis is not None and candidates(limit) < len(positions):
                # the admitted rows' best short scores, re-scored exactly (module docs)
                short = basis.T @ query
                if wide:
                    coarse = projected[:count] @ short
                    coarse[~marked] = -np.inf
                    positions = np.argpartition(-coarse, candidates(limit) - 1)
                else:
                    coarse = projected[positions] @ short
                    positions = positions[np.argpartition(-coarse, candidates(limit) - 1)]
                positions = positions[: candidates(limit)]
                exact = rows[positions] @ query
            elif wide:
                exact = rows[:count] @ query
                exact[~marked] = -np.inf
                positions = None
            else:
                exact = rows[positions] @ query
        top = np.argpartition(-exact, limit - 1)[:limit]
        top = top[np.argsort(-exact[top])]
        found = top if positions is None else positions[top]
        return [(keys[i], float(exact[j])) for i, j in zip(found, top, strict=True)]

    def epochs(self) -> dict[str, int]:
        """Each loaded space's ``vector_epoch`` as of the last refresh."""
        with self._lock:
            return dict(self._epochs)

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
        if snapshot is None or len(snapshot.rows) < 8:
            return 0.0
        rows = snapshot.rows
        cached = self._floors.get(space)
        if cached and cached[0] * 1.25 >= len(rows) and cached[1] == percentile:
            return cached[2]
        rng = np.random.default_rng(1234)
        picks = rng.choice(len(rows), size=min(sample, len(rows)), replace=False)
        block = rows[picks]
        with blas_limit(self._threads):
            sims = block @ block.T
        upper = sims[np.triu_indices(len(picks), k=1)]
        floor = float(np.percentile(upper, percentile))
        self._floors[space] = (len(rows), percentile, floor)
        return floor

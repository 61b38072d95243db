"""Line rows kept in process, so a search reads each candidate's row once, not once a search.

A line and its episode are never updated, only deleted, and every delete moves its space's
``vector_epoch`` in the same transaction (docs/storage.md): a row remembered with the epoch
its space had is current for as long as the space keeps that epoch. The caller passes the
epochs it has just refreshed (the vector index's), so a delete by another process is seen
as soon as that process's commit is. Rows read inside a write transaction are never kept
(they may roll back) and never answered from here (the transaction may have deleted them).
Bounded: past ``limit`` rows the cache starts over (a search reads a few hundred rows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .base import LineRow

__all__ = ["LineRows"]

Epoch = Callable[[str], int | None]


class LineRows:
    """Rows by line id, and each episode's first line by episode id. Thread-safe (each
    read and write is one dict operation)."""

    def __init__(self, limit: int = 50_000) -> None:
        self._limit = limit
        self._lines: dict[int, tuple[int | None, LineRow]] = {}
        self._firsts: dict[int, tuple[int | None, LineRow]] = {}

    def lines(self, ids: Sequence[int], epoch: Epoch) -> tuple[list[LineRow], list[int]]:
        """The current rows held for ``ids`` and the ids not held."""
        return _split(self._lines, ids, epoch)

    def firsts(self, episode_ids: Sequence[int], epoch: Epoch) -> tuple[list[LineRow], list[int]]:
        """The current first lines held for ``episode_ids`` and the episodes not held."""
        return _split(self._firsts, episode_ids, epoch)

    def keep(self, rows: Iterable[LineRow], epoch: Epoch) -> None:
        """Remember rows just read (a first line under its episode too)."""
        if len(self._lines) > self._limit:
            self._lines.clear()
            self._firsts.clear()
        for row in rows:
            held = (epoch(row.space), row)
            self._lines[row.id] = held
            if row.seq == 1:
                self._firsts[row.episode_id] = held


def _split(
    held: dict[int, tuple[int | None, LineRow]], keys: Sequence[int], epoch: Epoch
) -> tuple[list[LineRow], list[int]]:
    found, missing = [], []
    for key in dict.fromkeys(keys):
        entry = held.get(key)
        if entry is not None and entry[0] is not None and entry[0] == epoch(entry[1].space):
            found.append(entry[1])
        else:
            missing.append(key)
    return found, missing

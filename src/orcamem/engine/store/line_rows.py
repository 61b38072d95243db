"""Line rows kept in process, so a search reads each candidate's row once, not once a search.

A line's text and its episode are never updated, only deleted, and every delete moves its space's
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

__all__ = ["ROW_COLUMNS", "LineRows", "line_rows"]

ROW_COLUMNS = (
    "l.id, l.episode_id, l.seq, l.text, l.space, e.kind, e.role, e.session_id, e.turn_id, "
    "e.occurred_at, CASE WHEN row_number() OVER (PARTITION BY l.episode_id ORDER BY l.seq) = 1 "
    "THEN e.text END"
)
"""A line with its episode's fields, for both engines (``lines l JOIN episodes e``): the
episode's text once a result, on its first line there (:func:`line_rows`)."""


def line_rows(read: Sequence[tuple]) -> list[LineRow]:
    r"""Rows of :data:`ROW_COLUMNS` as :class:`LineRow`\ s sharing one text an episode. Each
    line carried its episode's text: a 1 MB turn of 3,000 sentences came back as 3,000
    copies, and one sleep of it took the server to 17.8 GB before the kernel killed it."""
    texts = {row[1]: row[-1] for row in read if row[-1] is not None}
    return [LineRow(*row[:-1], texts[row[1]]) for row in read]


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

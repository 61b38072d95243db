"""Multi-row inserts into an SQLite store, with the ids of the rows they made.

FTS5 flushes its pending terms at the end of every *statement*: an ``executemany`` of one row
a statement wrote an index segment a line, and bulk ingest spent most of its time merging
them (docs/storage.md). So rows go in a few thousand to a statement, and their
``AUTOINCREMENT`` ids are known without reading them back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ...errors import StoreError

__all__ = ["ROWS_PER_STATEMENT", "insert_rows", "variable_limit"]

ROWS_PER_STATEMENT = 5_000
"""At most this many rows a statement (and no more parameters than SQLite takes)."""


def variable_limit(conn: sqlite3.Connection) -> int:
    """How many ``?`` parameters one statement may take (999 where Python cannot ask)."""
    if hasattr(conn, "getlimit"):
        return conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    return 999


def insert_rows(conn: sqlite3.Connection, into: str, rows: Sequence[tuple]) -> range:
    """Insert ``rows`` into ``into`` (``table (columns)``) a few thousand to a statement, and
    return their ids in order. ``AUTOINCREMENT`` gives each new row one more than the largest
    id the table ever held and the write lock keeps every other writer out, so a statement's
    rows get consecutive ids ending at ``lastrowid``."""
    if not rows:
        return range(0)
    width = len(rows[0])
    step = max(1, min(ROWS_PER_STATEMENT, variable_limit(conn) // width))
    marks = "(" + ",".join("?" * width) + ")"
    first = None
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        cursor = conn.execute(
            f"INSERT INTO {into} VALUES {','.join([marks] * len(chunk))}",
            [value for row in chunk for value in row],
        )
        if first is None:
            first = (cursor.lastrowid or 0) - len(chunk) + 1
    if first is None or cursor.lastrowid != first + len(rows) - 1:
        raise StoreError(
            f"{into}: the ids of a multi-row insert were not consecutive, so nothing was "
            "written: retry, and run `orcamem check` if it happens again"
        )
    return range(first, first + len(rows))

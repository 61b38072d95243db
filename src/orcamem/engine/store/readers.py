"""Read-only WAL connections for one SQLite file, lent to one reading thread at a time.

One writer and many readers (as datasette does it): the store's one writer connection takes
every write under its lock, while each search borrows a read-only connection from this pool,
so concurrent searches run in parallel (SQLite and numpy release the GIL) and never wait
behind ``mark_accessed``, an import or another process's write. In WAL mode a reader's
statement sees every transaction committed before it began, so a write acknowledged on any
thread is visible to the next read on every thread. The pool grows to the number of readers
that ever ran at once and never beyond; a connection is closed when it comes back to a closed
pool, never while a thread uses it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

__all__ = ["ReaderPool"]

_MMAP_BYTES = 1 << 30


class ReaderPool:
    """Read-only connections to ``path`` (an existing WAL database)."""

    def __init__(self, path: str, *, busy_timeout_ms: int) -> None:
        self._uri = Path(path).resolve().as_uri() + "?mode=ro"
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._uri,
            uri=True,
            isolation_level=None,
            check_same_thread=False,  # lent to one thread at a time, closed by any
            timeout=self._busy_timeout_ms / 1000,
        )
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        conn.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
        return conn

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """A connection of this thread's own until the block ends."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._open()
        try:
            yield conn
        finally:
            if conn.in_transaction:  # a read never leaves one open; be sure before lending
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            with self._lock:
                if not self._closed:
                    self._idle.append(conn)
                    conn = None
            if conn is not None:
                conn.close()

    def close(self) -> None:
        """Close the idle connections now, and each lent one when it is given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            with suppress(sqlite3.Error):
                conn.close()

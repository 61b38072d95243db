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
        self._watch: sqlite3.Connection | None = None  # data_version's own connection
        self._watch_lock = threading.Lock()

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

    def data_version(self) -> int:
        """A number that changes whenever any other connection to the file commits: this
        process's writer or another process (``PRAGMA data_version`` on a connection kept
        for asking it, which never writes)."""
        with self._watch_lock:
            if self._watch is None:
                if self._closed:  # never a connection opened after close() to leak
                    raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
                self._watch = self._open()
            return self._watch.execute("PRAGMA data_version").fetchone()[0]

    def close(self) -> None:
        """Close the idle connections now, and each lent one when it is given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        with self._watch_lock:
            if self._watch is not None:
                idle.append(self._watch)
                self._watch = None
        for conn in idle:
            with suppress(sqlite3.Error):
                conn.close()

"""The default store: one SQLite file (WAL, FTS5, vectors as BLOBs)."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]

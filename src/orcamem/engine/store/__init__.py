"""The default store: one SQLite file (WAL, FTS5, vectors as BLOBs)."""

from .sqlite import SQLiteStore

__all__ = ["SQLiteStore"]

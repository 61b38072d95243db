"""``index.sqlite3``: the derived FTS5 index of a project's candidate ledger.

The index is a cache. It records the fingerprint (``sha256`` of ``candidates.jsonl``) it was
built from; an index whose fingerprint differs from the ledger's is stale, and a missing or
unreadable one is rebuilt the same way: in memory, then written over the index whole and durably
(``orcamem._kernel.files.write_atomic``). No lock is needed — two processes that rebuild at once each publish a whole index,
and one built from an older ledger is simply stale again at the next look.

Candidates are indexed by their normalized content words (stop words removed, porter stems),
the words a query is searched with (``orcamem._kernel.text.fts_query``: quoted, OR-ed), and
ranked by BM25, then by record time (newest first).

SQL is built by pure ``_prepare_*`` functions that return ``(sql, params)``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from .._kernel.files import write_atomic
from .._kernel.text import content_words, fts_query
from ..errors import IndexUnavailable, StoreError

__all__ = ["IndexUnavailable", "build", "indexed_text", "matches", "search"]

INDEX_FORMAT = "orcamem-candidate-index-1"


class _Indexed(Protocol):
    id: str
    text: str
    category: str
    recorded_at: str


def indexed_text(text: str) -> str:
    """A candidate's normalized tokens, as indexed."""
    return " ".join(content_words(text))


def _prepare_search(query: str, limit: int) -> tuple[str, list[Any]]:
    return (
        "SELECT cid FROM entries WHERE entries MATCH ? "
        "ORDER BY bm25(entries), recorded_at DESC LIMIT ?",
        [query, limit],
    )


def build(path: Path, fingerprint: str, candidates: Iterable[_Indexed]) -> None:
    """Build the index of ``candidates`` for ``fingerprint`` and replace ``path`` with it.

    Raises:
        IndexUnavailable: it could not be written (disk, permissions, no FTS5).
    """
    try:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        try:
            conn.execute("BEGIN")
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "CREATE VIRTUAL TABLE entries USING fts5("
                "text, cid UNINDEXED, category UNINDEXED, recorded_at UNINDEXED, "
                "tokenize='porter unicode61')"
            )
            conn.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("format", INDEX_FORMAT), ("fingerprint", fingerprint)],
            )
            conn.executemany(
                "INSERT INTO entries (text, cid, category, recorded_at) VALUES (?, ?, ?, ?)",
                [(indexed_text(c.text), c.id, c.category, c.recorded_at) for c in candidates],
            )
            conn.execute("COMMIT")
            image = conn.serialize()
        finally:
            conn.close()
        write_atomic(path, image)
    except (StoreError, sqlite3.Error) as exc:
        raise IndexUnavailable(f"cannot build {path}: {exc}") from exc


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise IndexUnavailable(f"{path} does not exist")
    try:
        return sqlite3.connect(path.as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise IndexUnavailable(f"cannot open {path}: {exc}") from exc


def _fingerprint(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
    return row[0] if row else None


def matches(path: Path, fingerprint: str) -> bool:
    """Is ``path`` a readable index built for ``fingerprint``?"""
    try:
        conn = _open(path)
    except IndexUnavailable:
        return False
    try:
        return _fingerprint(conn) == fingerprint
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def search(path: Path, fingerprint: str, query: str, limit: int) -> list[str]:
    """Candidate ids matching ``query``, best BM25 first, then newest.

    Raises:
        IndexUnavailable: the index is missing, stale (another fingerprint) or corrupt.
    """
    match = fts_query(query)
    conn = _open(path)
    try:
        try:
            found = _fingerprint(conn)
            if found != fingerprint:
                raise IndexUnavailable(f"{path} is stale (built for {found}, not {fingerprint})")
            if match is None:
                return []
            return [row[0] for row in conn.execute(*_prepare_search(match, limit))]
        except sqlite3.Error as exc:
            raise IndexUnavailable(f"{path} is unreadable: {exc}") from exc
    finally:
        conn.close()

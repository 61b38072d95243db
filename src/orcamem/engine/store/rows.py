"""API key, automation note and injected-block rows, one implementation for every SQL store.

The statements are plain SQL that SQLite and PostgreSQL both accept; the only difference is
the parameter marker (``?`` / ``%s``) and what breaks a tie of creation times in insertion
order (SQLite's ``rowid``; PostgreSQL's ``seq`` identity column, its migration 4), which each store names as ``PARAM``
and ``TIE_ORDER``. The rules live
elsewhere (what a key may reach: ``engine.keys``; a note's size and framing:
``engine.automations``; what a logged block holds: ``engine.blocklog``); this is row access
inside the store's own transactions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .base import AutomationNote, BlockEntry

__all__ = ["BlockTable", "KeyTable", "NoteTable"]


class SQLStore(Protocol):
    """What the row tables need of a store: its marker and its two transaction kinds."""

    PARAM: str
    TIE_ORDER: str

    def reading(self) -> AbstractContextManager[Any]: ...

    def writing(self) -> AbstractContextManager[Any]: ...


class _Table:
    def __init__(self, store: SQLStore) -> None:
        self._store = store

    def _sql(self, statement: str) -> str:
        return statement.replace("?", self._store.PARAM)

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._store.reading() as conn:
            return conn.execute(self._sql(statement), params).fetchall()

    def _change(self, statement: str, params: Sequence[Any]) -> int:
        with self._store.writing() as conn:
            return conn.execute(self._sql(statement), params).rowcount


class KeyTable(_Table):
    """The ``api_keys`` table: hashes only, never a secret."""

    def add(
        self, key_id: str, digest: str, name: str, spaces: Sequence[str], admin: bool, now: str
    ) -> None:
        self._change(
            "INSERT INTO api_keys (id, hash, name, spaces, admin, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (key_id, digest, name, json.dumps(sorted(spaces)), bool(admin), now),
        )

    def list(self) -> list[dict]:
        """Every key's record, oldest first."""
        rows = self._rows(
            "SELECT id, name, spaces, admin, created_at, revoked_at FROM api_keys "
            f"ORDER BY created_at, {self._store.TIE_ORDER}"
        )
        return [
            {"id": r[0], "name": r[1], "spaces": json.loads(r[2]), "admin": bool(r[3]),
             "created_at": r[4], "revoked_at": r[5]}
            for r in rows
        ]  # fmt: skip

    def revoke(self, key_id: str, now: str) -> bool:
        """Revoke an active key; False when there is none with that id."""
        return bool(
            self._change(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (now, key_id),
            )
        )

    def active(self, digest: str) -> tuple[str, str, list[str], bool] | None:
        """``(id, hash, spaces, admin)`` of the active key with that hash, if any."""
        for row in self._rows(
            "SELECT id, hash, spaces, admin FROM api_keys WHERE hash = ? AND revoked_at IS NULL",
            (digest,),
        ):
            return row[0], row[1], json.loads(row[2]), bool(row[3])
        return None


class NoteTable(_Table):
    """The ``automation_notes`` table: automations belong to the host, so one note an id."""

    def get(self, automation_id: str) -> AutomationNote | None:
        for row in self._rows(
            "SELECT automation_id, note, updated_at FROM automation_notes WHERE automation_id = ?",
            (automation_id,),
        ):
            return AutomationNote(*row)
        return None

    def put(self, automation_id: str, note: str, now: str) -> AutomationNote:
        """Replace the automation's note (there is only ever one)."""
        self._change(
            "INSERT INTO automation_notes (automation_id, note, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (automation_id) DO UPDATE SET note = excluded.note, "
            "updated_at = excluded.updated_at",
            (automation_id, note, now),
        )
        return AutomationNote(automation_id, note, now)

    def delete(self, automation_id: str) -> bool:
        """Remove the automation's note; False if it had none."""
        return bool(
            self._change("DELETE FROM automation_notes WHERE automation_id = ?", (automation_id,))
        )


class BlockTable(_Table):
    """The ``injected_blocks`` table: the opt-in log, bounded per space as each entry lands."""

    def log(self, entry: BlockEntry, *, keep: int, since: str) -> None:
        """Add ``entry``, then drop its space's entries older than ``since`` or beyond the
        newest ``keep`` (one transaction)."""
        with self._store.writing():
            self._change(
                "INSERT INTO injected_blocks (space, created_at, surface, item_ids, tokens, "
                "query_hash, query, block) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (entry.space, entry.created_at, entry.surface, json.dumps(list(entry.item_ids)),
                 entry.tokens, entry.query_hash, entry.query, entry.block),
            )  # fmt: skip
            self._change(
                "DELETE FROM injected_blocks WHERE space = ? AND (created_at < ? OR id <= "
                "coalesce((SELECT id FROM injected_blocks WHERE space = ? ORDER BY id DESC "
                "LIMIT 1 OFFSET ?), 0))",
                (entry.space, since, entry.space, keep),
            )

    def recent(self, space: str, limit: int) -> list[BlockEntry]:
        """The space's entries, newest first."""
        rows = self._rows(
            "SELECT space, created_at, surface, item_ids, tokens, query_hash, query, block, id "
            "FROM injected_blocks WHERE space = ? ORDER BY id DESC LIMIT ?",
            (space, limit),
        )
        return [BlockEntry(*row[:3], tuple(json.loads(row[3])), *row[4:]) for row in rows]

"""API key rows in an orcamem SQLite file: hashes only, never a secret.

The rules (what a key may reach, how a secret is made and checked) live in ``engine.keys``;
this is row access on the store's connection, inside its transactions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .sqlite import SQLiteStore

__all__ = ["SQLiteKeys"]


class SQLiteKeys:
    """The ``api_keys`` table of one :class:`SQLiteStore` (same file, lock and connection)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def add(
        self, key_id: str, digest: str, name: str, spaces: Sequence[str], admin: bool, now: str
    ) -> None:
        with self._store.writing() as conn:
            conn.execute(
                "INSERT INTO api_keys (id, hash, name, spaces, admin, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (key_id, digest, name, json.dumps(sorted(spaces)), int(admin), now),
            )

    def list(self) -> list[dict]:
        """Every key's record, oldest first."""
        with self._store.reading() as conn:
            rows = conn.execute(
                "SELECT id, name, spaces, admin, created_at, revoked_at FROM api_keys "
                "ORDER BY created_at"
            ).fetchall()
        return [
            {"id": r[0], "name": r[1], "spaces": json.loads(r[2]), "admin": bool(r[3]),
             "created_at": r[4], "revoked_at": r[5]}
            for r in rows
        ]  # fmt: skip

    def revoke(self, key_id: str, now: str) -> bool:
        """Revoke an active key; False when there is none with that id."""
        with self._store.writing() as conn:
            return bool(
                conn.execute(
                    "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                    (now, key_id),
                ).rowcount
            )

    def active(self, digest: str) -> tuple[str, str, list[str], bool] | None:
        """``(id, hash, spaces, admin)`` of the active key with that hash, if any."""
        with self._store.reading() as conn:
            row = conn.execute(
                "SELECT id, hash, spaces, admin FROM api_keys WHERE hash = ? AND revoked_at IS NULL",
                (digest,),
            ).fetchone()
        if row is None:
            return None
        return row[0], row[1], json.loads(row[2]), bool(row[3])

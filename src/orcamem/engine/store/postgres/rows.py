"""API key and automation note rows in a PostgreSQL store (the rules: ``engine.keys``,
``engine.automations``; the SQLite twins: ``engine.store.keys``, ``engine.store.notes``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..base import AutomationNote

if TYPE_CHECKING:
    from .store import PostgresStore

__all__ = ["PostgresKeys", "PostgresNotes"]


class PostgresKeys:
    """The ``api_keys`` table: hashes only, never a secret."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def add(
        self, key_id: str, digest: str, name: str, spaces: Sequence[str], admin: bool, now: str
    ) -> None:
        with self._store.writing() as conn:
            conn.execute(
                "INSERT INTO api_keys (id, hash, name, spaces, admin, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (key_id, digest, name, json.dumps(sorted(spaces)), bool(admin), now),
            )

    def list(self) -> list[dict]:
        with self._store.reading() as conn:
            rows = conn.execute(
                "SELECT id, name, spaces, admin, created_at, revoked_at FROM api_keys "
                "ORDER BY created_at, id"
            ).fetchall()
        return [
            {"id": r[0], "name": r[1], "spaces": json.loads(r[2]), "admin": bool(r[3]),
             "created_at": r[4], "revoked_at": r[5]}
            for r in rows
        ]  # fmt: skip

    def revoke(self, key_id: str, now: str) -> bool:
        with self._store.writing() as conn:
            return bool(
                conn.execute(
                    "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                    (now, key_id),
                ).rowcount
            )

    def active(self, digest: str) -> tuple[str, str, list[str], bool] | None:
        with self._store.reading() as conn:
            row = conn.execute(
                "SELECT id, hash, spaces, admin FROM api_keys "
                "WHERE hash = %s AND revoked_at IS NULL",
                (digest,),
            ).fetchone()
        return None if row is None else (row[0], row[1], json.loads(row[2]), bool(row[3]))


class PostgresNotes:
    """The ``automation_notes`` table: one note an automation."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    def get(self, automation_id: str) -> AutomationNote | None:
        with self._store.reading() as conn:
            row = conn.execute(
                "SELECT automation_id, note, updated_at FROM automation_notes "
                "WHERE automation_id = %s",
                (automation_id,),
            ).fetchone()
        return AutomationNote(*row) if row else None

    def put(self, automation_id: str, note: str, now: str) -> AutomationNote:
        with self._store.writing() as conn:
            conn.execute(
                "INSERT INTO automation_notes (automation_id, note, updated_at) "
                "VALUES (%s, %s, %s) ON CONFLICT (automation_id) DO UPDATE SET "
                "note = excluded.note, updated_at = excluded.updated_at",
                (automation_id, note, now),
            )
        return AutomationNote(automation_id, note, now)

    def delete(self, automation_id: str) -> bool:
        with self._store.writing() as conn:
            return bool(
                conn.execute(
                    "DELETE FROM automation_notes WHERE automation_id = %s", (automation_id,)
                ).rowcount
            )

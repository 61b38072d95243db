"""Automation note rows in an orcamem SQLite file (``automation_notes``, migration 4).

Automations belong to the host, not to a space, so a note is keyed by automation id alone.
The rules (size, framing, the block a run receives) live in ``engine.automations``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import AutomationNote

if TYPE_CHECKING:
    from .sqlite import SQLiteStore

__all__ = ["SQLiteNotes"]


class SQLiteNotes:
    """The ``automation_notes`` table of one :class:`SQLiteStore`."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def get(self, automation_id: str) -> AutomationNote | None:
        with self._store.reading() as conn:
            row = conn.execute(
                "SELECT automation_id, note, updated_at FROM automation_notes "
                "WHERE automation_id = ?",
                (automation_id,),
            ).fetchone()
        return AutomationNote(*row) if row else None

    def put(self, automation_id: str, note: str, now: str) -> AutomationNote:
        """Replace the automation's note (there is only ever one)."""
        with self._store.writing() as conn:
            conn.execute(
                "INSERT INTO automation_notes (automation_id, note, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (automation_id) DO UPDATE SET note = excluded.note, "
                "updated_at = excluded.updated_at",
                (automation_id, note, now),
            )
        return AutomationNote(automation_id, note, now)

    def delete(self, automation_id: str) -> bool:
        """Remove the automation's note; False if it had none."""
        with self._store.writing() as conn:
            return bool(
                conn.execute(
                    "DELETE FROM automation_notes WHERE automation_id = ?", (automation_id,)
                ).rowcount
            )

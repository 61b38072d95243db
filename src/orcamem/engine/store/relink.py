"""A forgotten turn's words taken out of the next turn's lexical context, for every SQL store.

Ingest indexes each line with its session's previous turn as context (``engine.ingest``), so
the turn after a forgotten one kept its words: found by them and holding them in the file.
The statements are plain SQL both engines accept, with the store's parameter marker; each
engine's index follows an update of ``lines.context`` by trigger (SQLite migration 12: FTS5;
PostgreSQL migration 8: ``tsv``, ``doc_len``, ``fts_terms``, ``fts_stats``).
"""

from __future__ import annotations

from typing import Any

from ..lexical_context import relinked_context

__all__ = ["relink_next_turn"]


def relink_next_turn(
    conn: Any, param: str, space: str, session: str, seq: int, forgotten: str
) -> None:
    """The lines of the turn after ``seq`` in ``session`` relinked past ``forgotten`` (the
    text of the turn at ``seq``, deleted in the same transaction)."""
    near = "FROM episodes WHERE space = ? AND session_id = ? AND session_seq {} ? "
    before = conn.execute(
        ("SELECT text " + near.format("<") + "ORDER BY session_seq DESC LIMIT 1").replace(
            "?", param
        ),
        (space, session, seq),
    ).fetchone()
    lines = conn.execute(
        (
            "SELECT id, context FROM lines WHERE episode_id = (SELECT id "
            + near.format(">")
            + "ORDER BY session_seq LIMIT 1)"
        ).replace("?", param),
        (space, session, seq),
    ).fetchall()
    for line_id, context in lines:
        relinked = relinked_context(context, forgotten, before[0] if before else None)
        if relinked != context:
            conn.execute(
                f"UPDATE lines SET context = {param} WHERE id = {param}", (relinked, line_id)
            )

"""A forgotten turn's words taken out of what was derived from it, for every SQL store.

Ingest indexes each line with its session's previous turn as context (``engine.ingest``),
and consolidation keeps the lines a memory was distilled from as its ``summary``, searched
with it: the turn after a forgotten one and the memories citing it kept its words, were found
by them and held them in the file. The statements are plain SQL both engines accept, with the
store's parameter marker; each engine's index follows an update of ``lines.context`` or
``memories.summary`` by trigger (SQLite migration 12: FTS5; PostgreSQL migration 8: ``tsv``,
``doc_len``, ``fts_terms``, ``fts_stats``). The memory itself stays: forget it to drop the fact.
"""

from __future__ import annotations

import json
from typing import Any

from ..._kernel.redact import summary_of
from ...errors import NotFoundError
from ..lexical_context import relinked_context

__all__ = ["unlink_episode"]


def unlink_episode(conn: Any, param: str, space: str, episode_id: int) -> None:
    """Before the episode is deleted in the same transaction: the next turn of its session
    relinked past it, and the summaries of the memories that cite its lines made again from
    their other lines.

    Raises:
        NotFoundError: no such episode in the space (nothing is changed).
    """
    row = conn.execute(
        _sql(
            "SELECT text, session_id, session_seq FROM episodes WHERE space = ? AND id = ?", param
        ),
        (space, episode_id),
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no episode {episode_id} in space {space!r}")
    forgotten, session, seq = row
    if session is not None:
        _relink_next_turn(conn, param, space, session, seq, forgotten)
    _summarise_again(conn, param, space, episode_id)


def _sql(statement: str, param: str) -> str:
    return statement.replace("?", param)


def _relink_next_turn(
    conn: Any, param: str, space: str, session: str, seq: int | None, forgotten: str
) -> None:
    near = "FROM episodes WHERE space = ? AND session_id = ? AND session_seq {} ? "
    before = conn.execute(
        _sql("SELECT text " + near.format("<") + "ORDER BY session_seq DESC LIMIT 1", param),
        (space, session, seq),
    ).fetchone()
    lines = conn.execute(
        _sql(
            "SELECT id, context FROM lines WHERE episode_id = (SELECT id "
            + near.format(">")
            + "ORDER BY session_seq LIMIT 1)",
            param,
        ),
        (space, session, seq),
    ).fetchall()
    for line_id, context in lines:
        relinked = relinked_context(context, forgotten, before[0] if before else None)
        if relinked != context:
            conn.execute(
                _sql("UPDATE lines SET context = ? WHERE id = ?", param), (relinked, line_id)
            )


def _summarise_again(conn: Any, param: str, space: str, episode_id: int) -> None:
    """A memory's summary is its cited lines' texts joined and redacted (``summary_of``, as
    ``consolidate.gate`` makes it): the same without the episode's lines, or none."""
    gone = {
        row[0]
        for row in conn.execute(
            _sql("SELECT id FROM lines WHERE episode_id = ? AND space = ?", param),
            (episode_id, space),
        )
    }
    if not gone:
        return
    marks = ",".join([param] * len(gone))
    citing = conn.execute(
        f"SELECT DISTINCT m.id, m.cited_lines FROM memories m JOIN memory_citations c "
        f"ON c.memory_id = m.id WHERE c.line_id IN ({marks}) AND m.summary IS NOT NULL",
        list(gone),
    ).fetchall()
    for memory_id, cited in citing:
        kept = [line for line in json.loads(cited) if line not in gone]
        texts = dict(
            conn.execute(
                f"SELECT id, text FROM lines WHERE id IN ({','.join([param] * len(kept))})",
                kept,
            ).fetchall()
            if kept
            else []
        )
        summary = summary_of(texts[line] for line in kept if line in texts)
        conn.execute(
            _sql("UPDATE memories SET summary = ? WHERE id = ?", param), (summary, memory_id)
        )

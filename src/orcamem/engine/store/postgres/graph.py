"""The entity graph's rows on PostgreSQL (what and why: ``engine.store.graph``).

The names come from the same :func:`~orcamem.recall.entities.entities` and
:func:`~orcamem.engine.store.graph.memory_names` as in SQLite; only the SQL is PostgreSQL's:
entities made with ``ON CONFLICT DO NOTHING``, fans added and links inserted in one statement,
and the delete trigger of migration 1 takes a link off its fan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ....recall.entities import entities
from ..graph import memory_names
from .schema import above

__all__ = ["drift", "link_lines", "link_memory", "rebuild"]

_CHUNK = 5000


_KEYS = {
    "entity_lines": {"line_id": "bigint", "episode_id": "bigint"},
    "entity_memories": {"memory_id": "text"},
}


def _link(conn: Any, table: str, space: str, named: Sequence[tuple]) -> None:
    """Link each ``(*keys, name)`` in one statement (a round trip a write, not four): the
    names missing from ``space`` are made with their fan (only those: a conflicting insert
    costs a speculative one), the others' fans grow (the ``UPDATE`` runs on the statement's
    snapshot, so it never sees a row made beside it)."""
    if not named:
        return
    keys = _KEYS[table]
    columns = ", ".join(keys)
    arrays = ", ".join(f"%s::{kind}[]" for kind in keys.values())
    conn.execute(
        f"""WITH named AS (SELECT DISTINCT * FROM unnest({arrays}, %s::text[])
                AS n({columns}, name)),
            counts AS (SELECT name, count(*) AS n FROM named GROUP BY name),
            made AS (INSERT INTO entities (space, name, fan) SELECT %s, c.name, c.n
                FROM counts c WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.space = %s
                AND e.name = c.name) ORDER BY c.name ON CONFLICT DO NOTHING RETURNING id, name),
            grown AS (UPDATE entities e SET fan = e.fan + c.n FROM counts c
                WHERE e.space = %s AND e.name = c.name RETURNING e.id, e.name)
        INSERT INTO {table} (entity_id, {columns})
        SELECT i.id, {", ".join(f"n.{column}" for column in keys)} FROM named n
        JOIN (SELECT * FROM made UNION ALL SELECT * FROM grown) i USING (name)""",
        [*(list(column) for column in zip(*named, strict=True)), space, space, space],
    )


def link_lines(conn: Any, space: str, lines: Iterable[tuple[int, int, Sequence[str]]]) -> None:
    """Link each new ``(line id, episode id, names)`` of ``space`` to the entities it names
    (``names``: ``entities`` of the line's text)."""
    named = [(line, episode, name) for line, episode, names in lines for name in names]
    _link(conn, "entity_lines", space, named)


def link_memory(conn: Any, space: str, memory_id: str, names: Sequence[str]) -> None:
    _link(conn, "entity_memories", space, [(memory_id, name) for name in names])


def _expected(conn: Any, space: str) -> tuple[int, int]:
    lines = sum(
        len(entities(text))
        for (text,) in conn.execute("SELECT text FROM lines WHERE space = %s", (space,))
    )
    memories = sum(
        len(memory_names(*row))
        for row in conn.execute(
            "SELECT content, entity, value FROM memories WHERE space = %s", (space,)
        )
    )
    return lines, memories


def drift(conn: Any) -> dict[str, str]:
    """Spaces whose graph is out of step with their lines and memories, and how."""
    found = {}
    for (space,) in conn.execute("SELECT name FROM spaces ORDER BY name").fetchall():
        lines, memories = _expected(conn, space)
        held_lines, held_memories, fans = conn.execute(
            "SELECT (SELECT count(*) FROM entity_lines l JOIN entities e ON e.id = l.entity_id "
            "WHERE e.space = %(s)s), (SELECT count(*) FROM entity_memories m JOIN entities e "
            "ON e.id = m.entity_id WHERE e.space = %(s)s), "
            "(SELECT coalesce(sum(fan), 0) FROM entities WHERE space = %(s)s)",
            {"s": space},
        ).fetchone()
        if (held_lines, held_memories) != (lines, memories):
            found[space] = (
                f"it links {held_lines} of {lines} entity mentions in lines and "
                f"{held_memories} of {memories} in memories"
            )
        elif fans != lines + memories:
            found[space] = f"its fans add up to {fans}, not {lines + memories}"
    return found


def rebuild(conn: Any, space: str) -> None:
    """Make the graph of ``space`` again from its lines and memories (inside a transaction)."""
    conn.execute("DELETE FROM entities WHERE space = %s", (space,))
    last = 0
    while rows := conn.execute(
        f"SELECT id, episode_id, text FROM lines WHERE {above('%(space)s', '%(last)s')} "
        "ORDER BY space, id LIMIT %(limit)s",
        {"space": space, "last": last, "limit": _CHUNK},
    ).fetchall():
        link_lines(conn, space, [(line, episode, entities(text)) for line, episode, text in rows])
        last = rows[-1][0]
    for memory_id, content, entity, value in conn.execute(
        "SELECT id, content, entity, value FROM memories WHERE space = %s ORDER BY seq", (space,)
    ).fetchall():
        link_memory(conn, space, memory_id, memory_names(content, entity, value))

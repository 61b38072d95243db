"""The entity graph in an SQLite store: who names what, kept beside the rows it is derived from.

``entities(space, id, name, fan)`` and two link tables, ``entity_lines`` (entity ↔ line, with
the line's episode) and ``entity_memories`` (entity ↔ memory), each indexed both ways so
recall walks from a hit to its entities and from an entity to its other mentions with index
lookups (migration 6). Links are written in the same transaction as the line or memory they
come from, at ingest and when consolidation writes a state, never per query, and add to
``fan`` (the entity's link count, Anderson's fan) as they are written; they cascade away with
their line or memory, and a trigger takes them off the fan and drops an entity no link names. The graph is derived: :func:`rebuild` makes it again
from the lines and memories (``orcamem repair``), :func:`drift` tells whether it must.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain

from ...recall.entities import entities
from .inserts import insert_rows

__all__ = [
    "VERSION",
    "drift",
    "link_lines",
    "link_memory",
    "memory_names",
    "rebuild",
]

VERSION = 6
"""The migration that made the graph's tables: a file migrated past it is graphed then."""
_CHUNK = 500
_NOBODY = frozenset({"user", "assistant", "system", "me", "i"})


def memory_names(content: str, entity: str | None, value: str | None) -> list[str]:
    """A memory's entities: its content's names, its value as a phrase ("Dr. Rao",
    "Bangalore") and its entity when that is someone other than the user."""
    names = entities(content)
    if value:
        names += entities(value, phrase=True)
    if entity and entity.strip().lower() not in _NOBODY:
        names += entities(entity, phrase=True)
    return list(dict.fromkeys(names))


def _ids(conn: sqlite3.Connection, space: str, fans: Counter[str]) -> dict[str, int]:
    """The ids of the names ``fans`` counts in ``space``, their fans raised by those counts.

    The names the space holds are read first and only the new ones inserted, in name order
    (the ids every earlier writer gave them), with their fans already counted: at 100,000
    turns an ``INSERT OR IGNORE`` of a batch's every name and an ``UPDATE`` of every fan took
    a third of the graph's time in SQLite."""
    ordered = sorted(fans)
    ids: dict[str, int] = {}
    for start in range(0, len(ordered), _CHUNK):
        chunk = ordered[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        ids.update(
            conn.execute(
                f"SELECT name, id FROM entities WHERE space = ? AND name IN ({marks})",
                [space, *chunk],
            )
        )
    conn.executemany(
        "UPDATE entities SET fan = fan + ? WHERE id = ?",
        [(fans[name], entity_id) for name, entity_id in ids.items()],
    )
    new = [name for name in ordered if name not in ids]
    made = insert_rows(conn, "entities (space, name, fan)", [(space, n, fans[n]) for n in new])
    ids.update(zip(new, made, strict=True))
    return ids


def _link(
    conn: sqlite3.Connection,
    table: str,
    columns: str,
    space: str,
    named: Sequence[tuple[tuple, Sequence[str]]],
) -> None:
    """Insert a link row for each ``(item…)`` and each of its names (distinct, as
    :func:`entities` and :func:`memory_names` give them) and add them to the fans in bulk
    (one update per entity, not a trigger per row: ingest stays at about the speed it had)."""
    ids = _ids(conn, space, Counter(chain.from_iterable(names for _, names in named)))
    rows = [(ids[name], *item) for item, names in named for name in names]
    if rows:
        marks = ",".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def link_lines(
    conn: sqlite3.Connection, space: str, lines: Iterable[tuple[int, int, Sequence[str]]]
) -> None:
    """Link each new ``(line id, episode id, names)`` of ``space`` to the entities it names
    (``names``: :func:`entities` of the line's text)."""
    named = [((line, episode), names) for line, episode, names in lines]
    _link(conn, "entity_lines", "entity_id, line_id, episode_id", space, named)


def link_memory(conn: sqlite3.Connection, space: str, memory_id: str, names: Sequence[str]) -> None:
    """Link one new memory of ``space`` to its entities (:func:`memory_names`)."""
    _link(
        conn,
        "entity_memories",
        "entity_id, memory_id",
        space,
        [((memory_id,), list(dict.fromkeys(names)))],
    )


def _expected(conn: sqlite3.Connection, space: str) -> tuple[int, int]:
    """How many line links and memory links ``space`` should hold."""
    lines = sum(
        len(entities(text))
        for (text,) in conn.execute("SELECT text FROM lines WHERE space = ?", (space,))
    )
    memories = sum(
        len(memory_names(*row))
        for row in conn.execute(
            "SELECT content, entity, value FROM memories WHERE space = ?", (space,)
        )
    )
    return lines, memories


def _held(conn: sqlite3.Connection, space: str) -> tuple[int, int, int]:
    """Line links, memory links and the sum of fans ``space`` holds."""
    return conn.execute(
        "SELECT (SELECT count(*) FROM entity_lines l JOIN entities e ON e.id = l.entity_id "
        "WHERE e.space = :s), (SELECT count(*) FROM entity_memories m JOIN entities e "
        "ON e.id = m.entity_id WHERE e.space = :s), "
        "(SELECT coalesce(sum(fan), 0) FROM entities WHERE space = :s)",
        {"s": space},
    ).fetchone()


def drift(conn: sqlite3.Connection) -> dict[str, str]:
    """Spaces whose graph is out of step with their lines and memories, and how."""
    found = {}
    for (space,) in conn.execute("SELECT name FROM spaces ORDER BY name").fetchall():
        lines, memories = _expected(conn, space)
        held_lines, held_memories, fans = _held(conn, space)
        if (held_lines, held_memories) != (lines, memories):
            found[space] = (
                f"it links {held_lines} of {lines} entity mentions in lines and "
                f"{held_memories} of {memories} in memories"
            )
        elif fans != lines + memories:
            found[space] = f"its fans add up to {fans}, not {lines + memories}"
    return found


def rebuild(conn: sqlite3.Connection, space: str) -> None:
    """Make the graph of ``space`` again from its lines and memories (inside a transaction)."""
    conn.execute("DELETE FROM entities WHERE space = ?", (space,))
    last = 0
    while rows := conn.execute(
        "SELECT id, episode_id, text FROM lines WHERE space = ? AND id > ? ORDER BY id LIMIT ?",
        (space, last, _CHUNK * 10),
    ).fetchall():
        link_lines(conn, space, [(line, episode, entities(text)) for line, episode, text in rows])
        last = rows[-1][0]
    for memory_id, content, entity, value in conn.execute(
        "SELECT id, content, entity, value FROM memories WHERE space = ? ORDER BY seq", (space,)
    ).fetchall():
        link_memory(conn, space, memory_id, memory_names(content, entity, value))

"""A SearchFilter as the WHERE clauses of a store's candidate queries, for SQLite and PostgreSQL.

One function per table says which columns a filter reads; the dialect only says how a
parameter is written and how an episode's metadata is matched (SQLite's ``json_extract``,
PostgreSQL's ``jsonb`` containment), so the two stores filter by the same rules. A line
matches through its episode: an indexed subquery on ``episodes`` of the same space (the
session index serves a session filter). Every clause is ANDed onto a query that already
names its space; none can widen it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...recall.filters import SearchFilter
from .vector_index import Column, Columns

__all__ = [
    "LINE_COLUMNS",
    "LINE_JOIN",
    "POSTGRES",
    "SQLITE",
    "Clauses",
    "Dialect",
    "episode_clauses",
    "joined_line_clauses",
    "line_clauses",
    "line_mask",
    "memory_clauses",
]


@dataclass(frozen=True)
class Dialect:
    named: bool
    """PostgreSQL's ``%(f0)s`` parameters (a dict), else SQLite's ``?`` (a list)."""

    def meta(self, key: str, value: str) -> tuple[str, list[Any]]:
        """One metadata pair: the value at the top-level ``key`` is that string."""
        if self.named:  # jsonb holds no NUL: one in any value failed every filter of the space
            return "replace(e.meta, '\\u0000', '\\ufffd')::jsonb @> {}::jsonb", [
                json.dumps({key: value})
            ]
        path = f'$."{key}"'  # META_KEY allows no quote, so the path is the key
        return "(json_type(e.meta, {}) = 'text' AND json_extract(e.meta, {}) = {})", [
            path,
            path,
            value,
        ]


SQLITE = Dialect(named=False)
POSTGRES = Dialect(named=True)


@dataclass(frozen=True)
class Clauses:
    """`` AND …`` to append to a WHERE, and its parameters in the dialect's form."""

    sql: str
    params: list[Any] | dict[str, Any]


def _render(dialect: Dialect, parts: list[tuple[str, list[Any]]], prefix: str) -> Clauses:
    """Join ``parts`` (SQL with ``{}`` for each of its values) into one ``AND`` chain, each
    ``{}`` written as the dialect's parameter (``prefix`` keeps PostgreSQL names apart)."""
    sql, values = [], []
    for text, items in parts:
        marks = []
        for item in items:
            marks.append(f"%({prefix}{len(values)})s" if dialect.named else "?")
            values.append(item)
        sql.append(text.format(*marks))
    joined = "".join(f" AND {text}" for text in sql)
    if dialect.named:
        return Clauses(joined, {f"{prefix}{i}": value for i, value in enumerate(values)})
    return Clauses(joined, values)


def episode_clauses(where: SearchFilter, dialect: Dialect, space: str) -> Clauses:
    """Episodes ``e`` of ``space`` that match ``where`` (the WHERE itself, no leading AND):
    role, session, ``occurred_at`` within since/until, every metadata pair."""
    parts: list[tuple[str, list[Any]]] = [("e.space = {}", [space])]
    if where.session is not None:
        parts.append(("e.session_id = {}", [where.session]))
    if where.role is not None:
        parts.append(("e.role = {}", [where.role]))
    if where.since is not None:
        parts.append(("e.occurred_at >= {}", [where.since]))
    if where.until is not None:
        parts.append(("e.occurred_at <= {}", [where.until]))
    parts.extend(dialect.meta(key, value) for key, value in where.metadata)
    inner = _render(dialect, parts, "fl")
    return Clauses(inner.sql.removeprefix(" AND "), inner.params)


def line_clauses(where: SearchFilter, dialect: Dialect, lines: str, space: str) -> Clauses:
    """Lines (table or alias ``lines``) whose episode matches ``where``: one subquery of the
    episodes (:func:`episode_clauses`), evaluated once."""
    inner = episode_clauses(where, dialect, space)
    subquery = f" AND {lines}.episode_id IN (SELECT e.id FROM episodes e WHERE {inner.sql})"
    return Clauses(subquery, inner.params)


def joined_line_clauses(where: SearchFilter, dialect: Dialect, space: str) -> Clauses | None:
    """:func:`line_clauses` for a query that joins each line's episode as ``e`` (``JOIN
    episodes e ON e.id = <lines>.episode_id``): a primary-key look-up per line the query
    already met, where the subquery builds the list of every admitted episode first (at
    100k turns a role or time filter's BM25 query took 40–70 ms that way, ~10 ms joined).
    ``None`` for a session filter: its subquery seeks the session index and stays short."""
    if where.session is not None:
        return None
    inner = episode_clauses(where, dialect, space)
    return Clauses(f" AND {inner.sql}", inner.params)


def memory_clauses(where: SearchFilter, dialect: Dialect, memories: str) -> Clauses:
    """Memories (table or alias ``memories``) that match ``where``: session, category, and
    the event date (else the creation time) within since/until."""
    moment = f"COALESCE({memories}.event_date, {memories}.created_at)"
    parts: list[tuple[str, list[Any]]] = []
    if where.session is not None:
        parts.append((f"{memories}.session_id = {{}}", [where.session]))
    if where.category is not None:
        parts.append((f"{memories}.category = {{}}", [where.category]))
    if where.since is not None:
        parts.append((f"{moment} >= {{}}", [where.since]))
    if where.until is not None:
        parts.append((f"{moment} <= {{}}", [where.until]))
    return _render(dialect, parts, "fm")


LINE_COLUMNS = (
    Column("role", "e.role"),
    Column("session", "e.session_id"),
    Column("occurred_at", "e.occurred_at", ordered=True),
)
"""What SQLite's line index keeps beside each vector: the episode fields a filter reads
(all but metadata), so a filtered vector search needs no SQL (an episode never changes)."""
LINE_JOIN = "LEFT JOIN episodes e ON e.id = t.episode_id"


def line_mask(where: SearchFilter) -> Callable[[Columns], np.ndarray] | None:
    """:func:`line_clauses` as a mask over :data:`LINE_COLUMNS`, the same rows by the same
    rules (equal role and session, ``occurred_at`` within since/until as text); ``None``
    when the filter needs SQL (a metadata pair: the JSON stays in the database)."""
    if where.metadata:
        return None

    def mask(columns: Columns) -> np.ndarray:
        parts = []  # integer codes first: a role or a session compares 4 bytes a row
        if where.role is not None:
            parts.append(columns.equal("role", where.role))
        if where.session is not None:
            parts.append(columns.equal("session", where.session))
        if where.since is not None or where.until is not None or not parts:
            # every episode has a time: a row without one is a line the join found no
            # episode for, which the SQL's join of the episodes never returns either (a
            # role or session never matches it: its codes are those of no value)
            parts.append(columns.within("occurred_at", where.since, where.until))
        marked = parts[0]
        for part in parts[1:]:
            marked &= part
        return marked

    return mask

"""What ``orcamem check`` verifies in an SQLite store, and what ``repair`` rebuilds.

Episodes are the authority; the FTS5 indexes, the vectors, the citation rows, the entity
graph and the ``superseded_by`` pointers are derived from them or checked against them. ``PRAGMA
integrity_check`` does not look inside an FTS5 index (after ``'delete-all'`` it still says ok
while search finds nothing), so each index is also checked against its content table. A check
only reads; a repair rebuilds derived rows and never changes an episode. :func:`warn_on_open`
is the cheap part run on every open: two ``max(rowid)`` lookups an index, no scan.
"""

from __future__ import annotations

import logging
import sqlite3

import numpy as np

from ..._kernel.model import digest
from . import graph
from .base import Problem
from .migrations import FTS_TABLES
from .vector_index import BYTES_PER_VALUE

__all__ = [
    "lineage",
    "problems",
    "repair_derived",
    "restore_episode",
    "stale_vectors",
    "warn_on_open",
]

log = logging.getLogger("orcamem")

REPAIR = "run `orcamem repair`"
RESTORE = "restore it from an `orcamem export` file or a backup (repair cannot know which is right)"


def restore_episode(episode_id: int, space: str) -> str:
    """What to do about an episode whose text no longer matches its digest: an import skips
    an episode the space holds, so the damaged one goes first (repair cannot know which text
    is right)."""
    return (
        f"forget it (`orcamem forget ep-{episode_id} --space {space}`), then import an "
        "`orcamem export` file or a backup that holds it (repair cannot know which is right)"
    )


_DERIVED = {
    "lines": "line(s) whose episode is missing",
    "memory_citations": "citation row(s)",
    "entity_lines": "entity link row(s)",
    "entity_memories": "entity link row(s)",
}
_LINKS = (  # (links, column, parent): the graph's links, kept by triggers, not foreign keys
    ("entity_lines", "entity_id", "entities"),
    ("entity_lines", "line_id", "lines"),
    ("entity_memories", "entity_id", "entities"),
    ("entity_memories", "memory_id", "memories"),
)
_BATCH = 500
_warned: set[str] = set()


def problems(conn: sqlite3.Connection) -> list[Problem]:
    """Everything found wrong, file first, then indexes, vectors, digests and lineage.

    The checks after FTS5's (an ``INSERT``, so outside any read transaction) read one
    snapshot: a server writing meanwhile had made the graph's mentions and links, counted by
    two statements, differ by what it committed between them ("out of step … run `orcamem
    repair`" on a healthy file)."""
    found = [*_sqlite(conn), *_fts(conn)]
    conn.execute("BEGIN")
    try:
        return [
            *found,
            *_orphans(conn),
            *_vectors(conn),
            *_digests(conn),
            *lineage(conn),
            *_graph(conn),
        ]
    finally:
        conn.execute("COMMIT")


def repair_derived(conn: sqlite3.Connection) -> list[str]:
    """Rebuild damaged FTS indexes, drop orphaned derived rows and clear dangling or
    self-pointing ``superseded_by``; returns one line per action (none when healthy).

    Run inside one write transaction. Indexes are rebuilt first so the delete triggers of the
    orphan rows meet a consistent index.
    """
    done = []
    for name, table in FTS_TABLES.items():
        if _fts_damage(conn, name, table):
            conn.execute(f"INSERT INTO {name}({name}) VALUES ('rebuild')")
            rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            done.append(f"rebuilt the full-text index {name} from its {rows} {table}")
    for table, what in _DERIVED.items():
        rowids = [row[1] for row in conn.execute(f"PRAGMA foreign_key_check({table})")]
        if rowids:
            marks = ",".join("?" * len(rowids))
            if table == "lines":  # the vector indexes of those spaces reload
                conn.execute(
                    "UPDATE spaces SET vector_epoch = vector_epoch + 1 WHERE name IN "
                    f"(SELECT space FROM lines WHERE rowid IN ({marks}))",
                    rowids,
                )
            conn.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", rowids)
            done.append(f"removed {len(rowids)} {what} from {table}")
    for links, column, parent in _LINKS:
        removed = conn.execute(
            f"DELETE FROM {links} WHERE {_dangling(links, column, parent)}"
        ).rowcount
        if removed:
            done.append(f"removed {removed} {_DERIVED[links]} from {links}")
    dangling = [
        row[0]
        for row in conn.execute(
            "SELECT m.id FROM memories m WHERE m.superseded_by IS NOT NULL AND "
            "(m.superseded_by = m.id OR NOT EXISTS (SELECT 1 FROM memories n "
            "WHERE n.id = m.superseded_by AND n.space = m.space)) ORDER BY m.seq"
        )
    ]
    if dangling:
        marks = ",".join("?" * len(dangling))
        conn.execute(f"UPDATE memories SET superseded_by = NULL WHERE id IN ({marks})", dangling)
        done.append(f"cleared the dangling superseded_by of {', '.join(dangling)}")
    for space in graph.drift(conn):
        graph.rebuild(conn, space)
        done.append(f"rebuilt the entity graph of space {space!r} from its lines and memories")
    return done


def stale_vectors(
    conn: sqlite3.Connection, space: str
) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """Lines and memories of ``space`` whose vector is missing or not the space's size."""
    row = conn.execute("SELECT dim FROM spaces WHERE name = ?", (space,)).fetchone()
    if row is None or row[0] is None:
        return [], []
    size = row[0] * BYTES_PER_VALUE
    wrong = "space = ? AND (vector IS NULL OR length(vector) != ?)"
    lines = conn.execute(f"SELECT id, text FROM lines WHERE {wrong} ORDER BY id", (space, size))
    memories = conn.execute(
        f"SELECT id, content FROM memories WHERE {wrong} ORDER BY seq", (space, size)
    )
    return (
        sorted([*lines.fetchall(), *_non_finite(conn, "lines", "id", "text", space, size)]),
        [*memories.fetchall(), *_non_finite(conn, "memories", "id", "content", space, size)],
    )


def _non_finite(
    conn: sqlite3.Connection, table: str, key: str, text: str, space: str, size: int
) -> list[tuple]:
    """The rows of ``space`` whose vector is of the right size but holds a NaN or an infinity
    (written outside orcamem, or a bad disk): it scores nothing, and a size check passes it.
    Read a batch at a time, as float16, one numpy call a batch."""
    found = []
    rows = conn.execute(
        f"SELECT {key}, {text}, vector FROM {table} WHERE space = ? AND length(vector) = ?",
        (space, size),
    )
    while batch := rows.fetchmany(_BATCH):
        matrix = np.frombuffer(b"".join(r[2] for r in batch), dtype=np.float16)
        bad = ~np.isfinite(matrix.reshape(len(batch), -1)).all(axis=1)
        found += [batch[i][:2] for i in np.flatnonzero(bad)]
    return found


def warn_on_open(conn: sqlite3.Connection, path: str) -> None:
    """Log once per file and process when an FTS index has drifted from its rows.

    Compares the newest rowid of each index with its table's (O(log n)): it catches a cleared
    or truncated index; ``orcamem check`` finds the rest.
    """
    if path in _warned:
        return
    drifted = [
        name
        for name, table in FTS_TABLES.items()
        if conn.execute(
            f"SELECT (SELECT max(rowid) FROM {table}) IS NOT (SELECT max(rowid) FROM {name}_docsize)"
        ).fetchone()[0]
    ]
    if drifted:
        _warned.add(path)
        log.warning(
            "the full-text index %s of %s is out of step with its rows, so search misses "
            "what was saved: run `orcamem repair --db %s` (`orcamem check` lists what is wrong)",
            " and ".join(drifted),
            path,
            path,
        )


def _sqlite(conn: sqlite3.Connection) -> list[Problem]:
    rows = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
    if rows == ["ok"]:
        return []
    return [
        Problem(
            "sqlite",
            f"the SQLite file is damaged ({row}): copy it aside, then {RESTORE}",
            repairable=False,
        )
        for row in rows
    ]


def _fts_damage(conn: sqlite3.Connection, name: str, table: str) -> str | None:
    """Why the index ``name`` does not match ``table``, or ``None``."""
    try:  # rank 1: compare the index with the content table, not only with itself
        conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        return f"its integrity-check fails: {exc}"
    indexed = conn.execute(f"SELECT count(*) FROM {name}_docsize").fetchone()[0]
    rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return None if indexed == rows else f"it indexes {indexed} of {rows} {table}"


def _fts(conn: sqlite3.Connection) -> list[Problem]:
    found = []
    for name, table in FTS_TABLES.items():
        damage = _fts_damage(conn, name, table)
        if damage:
            found.append(
                Problem(
                    "fts",
                    f"the full-text index {name} is damaged ({damage}), so lexical "
                    f"search misses {table}: {REPAIR}",
                )
            )
    return found


def _dangling(links: str, column: str, parent: str) -> str:
    """The condition of a row of ``links`` whose ``column`` names no row of ``parent``."""
    return f"NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.id = {links}.{column})"


def _orphans(conn: sqlite3.Connection) -> list[Problem]:
    counts: dict[tuple[str, str], int] = {}
    for table, _, parent, _ in conn.execute("PRAGMA foreign_key_check"):
        counts[table, parent] = counts.get((table, parent), 0) + 1
    for links, column, parent in _LINKS:
        query = f"SELECT count(*) FROM {links} WHERE {_dangling(links, column, parent)}"
        if count := conn.execute(query).fetchone()[0]:
            counts[links, parent] = counts.get((links, parent), 0) + count
    return [
        Problem(
            "orphans",
            f"{count} row(s) of {table} point at missing {parent}: "
            + (f"{REPAIR} (it removes them)" if table in _DERIVED else RESTORE),
            repairable=table in _DERIVED,
        )
        for (table, parent), count in sorted(counts.items())
    ]


def _vectors(conn: sqlite3.Connection) -> list[Problem]:
    found = []
    spaces = conn.execute("SELECT name, embedder_id, dim FROM spaces ORDER BY name").fetchall()
    for space, embedder, dim in spaces:
        for table in ("lines", "memories"):
            missing = conn.execute(
                f"SELECT count(*) FROM {table} WHERE space = ? AND vector IS NULL", (space,)
            ).fetchone()[0]
            if missing:
                found.append(
                    Problem(
                        "vectors",
                        f"space {space!r}: {missing} of its {table} have no "
                        f"vector, so vector search cannot find them: {REPAIR}",
                        space,
                    )
                )
            if dim is None:
                continue
            sizes = conn.execute(
                f"SELECT length(vector) / {BYTES_PER_VALUE}, count(*) FROM {table} "
                "WHERE space = ? AND length(vector) != ? GROUP BY 1 ORDER BY 1",
                (space, dim * BYTES_PER_VALUE),
            )
            for size, count in sizes:
                found.append(
                    Problem(
                        "vectors",
                        f"space {space!r}: {count} of its {table} have vectors "
                        f"of {size} values where its embedder {embedder} makes {dim}: "
                        f"{REPAIR}",
                        space,
                    )
                )
            key, text = ("id", "text") if table == "lines" else ("id", "content")
            broken = len(_non_finite(conn, table, key, text, space, dim * BYTES_PER_VALUE))
            if broken:
                found.append(
                    Problem(
                        "vectors",
                        f"space {space!r}: {broken} of its {table} have vectors holding NaN "
                        f"or infinity, so vector search cannot find them: {REPAIR}",
                        space,
                    )
                )
    return found


def _digests(conn: sqlite3.Connection) -> list[Problem]:
    found = []
    last = 0
    while rows := conn.execute(
        "SELECT id, space, text, digest FROM episodes WHERE id > ? ORDER BY id LIMIT ?",
        (last, _BATCH),
    ).fetchall():
        for episode_id, space, text, stored in rows:
            if digest(text) != stored:
                found.append(
                    Problem(
                        "digest",
                        f"episode {episode_id} in space {space!r} no longer "
                        "matches its digest (its text or digest was changed outside "
                        f"orcamem): {restore_episode(episode_id, space)}",
                        space,
                        repairable=False,
                    )
                )
        last = rows[-1][0]
    return found


def _graph(conn: sqlite3.Connection) -> list[Problem]:
    return [
        Problem(
            "graph",
            f"space {space!r}: the entity graph is out of step ({why}), so spreading "
            f"activation misses links: {REPAIR}",
            space,
        )
        for space, why in graph.drift(conn).items()
    ]


def lineage(conn: sqlite3.Connection) -> list[Problem]:
    """Self-pointing, cross-space and cyclic ``superseded_by`` chains. Its SQL is
    dialect-neutral: the PostgreSQL store runs it on its own connection too."""
    found = []
    successor: dict[str, str] = {}
    space_of: dict[str, str] = {}
    rows = conn.execute(
        "SELECT m.space, m.id, m.superseded_by, n.space FROM memories m "
        "LEFT JOIN memories n ON n.id = m.superseded_by "
        "WHERE m.superseded_by IS NOT NULL ORDER BY m.seq"
    )
    for space, memory_id, newer, newer_space in rows:
        if newer == memory_id:
            why = "is marked superseded by itself"
        elif newer_space != space:
            why = f"is superseded by {newer}, which is not in that space"
        else:
            successor[memory_id], space_of[memory_id] = newer, space
            continue
        found.append(
            Problem(
                "lineage",
                f"memory {memory_id} in space {space!r} {why}: {REPAIR} (it clears the pointer)",
                space,
            )
        )
    done: set[str] = set()
    for start in successor:
        path: list[str] = []
        node: str | None = start
        while node is not None and node not in done and node not in path:
            path.append(node)
            node = successor.get(node)
        if node is not None and node in path:
            cycle = path[path.index(node) :]
            found.append(
                Problem(
                    "lineage",
                    f"memories {' -> '.join([*cycle, node])} in space "
                    f"{space_of[node]!r} supersede each other in a cycle (changed outside "
                    "orcamem): forget the wrong ones (`orcamem forget <id>`), then "
                    f"{REPAIR}",
                    space_of[node],
                    repairable=False,
                )
            )
        done.update(path)
    return found

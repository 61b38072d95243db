"""A filtered search's vector scan masks the SQLite line index's own columns (role, session,
time, kept beside each vector) and its BM25 query joins each line's episode: both must rank
exactly what the filter's SQL admits. The oracle here reads the file with its own SQL and
ranks in Python, so it shares no code with either path."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.embed import embed_texts
from orcamem._kernel.text import fts_query
from orcamem.engine import SearchFilter
from orcamem.engine.store.vector_index import Column, VectorIndex, encode_vector

NOW = "2026-11-01T10:00:00Z"
WORDS = [
    "harbour",
    "dog",
    "tea",
    "lisbon",
    "helm",
    "civic",
    "vaccine",
    "rain",
    "garden",
    "train",
    "piano",
    "bread",
]
QUERIES = ["dog harbour walk", "green tea morning", "train to lisbon", "piano bread rain"]
FILTERS = [
    SearchFilter(role="user"),
    SearchFilter(role="assistant"),
    SearchFilter(role="nobody"),
    SearchFilter(session="s3"),
    SearchFilter(session="s0", role="user"),
    SearchFilter(since="2026-10-10"),
    SearchFilter(until="2026-10-04T12:00:00Z"),
    SearchFilter(since="2026-10-05", until="2026-10-08"),
    SearchFilter(kind="passage"),
    SearchFilter(role="user", since="2026-10-03", until="2026-10-20"),
    SearchFilter(metadata={"source": "import"}),
    SearchFilter(metadata={"source": "chat"}, role="user"),
    SearchFilter(metadata={"source": "chat"}, session="s2"),
]


def fill(mem: Memory, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 5))
        mem.add(
            f"Entry {i} mentions {words}.",
            kind="turn" if i % 7 else "note",
            role=None if i % 7 == 0 else ("user" if i % 2 else "assistant"),
            session_id=None if i % 11 == 0 else f"s{i % 6}",
            occurred_at=f"2026-10-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
            meta={"source": "import" if i % 3 == 0 else "chat"},
        )


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", clock=FrozenClock(NOW)) as memory:
        fill(memory, 240)
        yield memory


def admitted(path: Path, where: SearchFilter) -> set[int]:
    """The line ids ``where`` admits, by the rule in recall/filters.py, read independently."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT l.id, e.role, e.session_id, e.occurred_at, e.meta FROM lines l "
            "JOIN episodes e ON e.id = l.episode_id WHERE l.space = 'default'"
        ).fetchall()
    import json

    keep = set()
    for line_id, role, session, moment, meta in rows:
        pairs = json.loads(meta)
        if where.role is not None and role != where.role:
            continue
        if where.session is not None and session != where.session:
            continue
        if where.since is not None and moment < where.since:
            continue
        if where.until is not None and moment > where.until:
            continue
        if any(pairs.get(key) != value for key, value in where.metadata):
            continue
        keep.add(line_id)
    return keep


def expected_vectors(mem: Memory, query: str, keep: set[int], limit: int) -> list[int]:
    vector = embed_texts(mem.embedder_of("default"), [query])[0]
    stored = mem.store.line_vectors("default", sorted(keep))
    scored = sorted(((float(v @ vector), k) for k, v in stored.items()), reverse=True)
    return [k for _, k in scored[:limit]]


def check(mem: Memory, path: Path) -> None:
    store = mem.store
    vectors = {q: embed_texts(mem.embedder_of("default"), [q])[0] for q in QUERIES}
    for where in FILTERS:
        keep = admitted(path, where)
        for query in QUERIES:
            for limit in (1, 5, 100):
                found = store.vector_lines("default", vectors[query], limit, where=where)
                want = expected_vectors(mem, query, keep, limit)
                assert [k for k, _ in found] == want, (where, query, limit)
                match = fts_query(query)
                everything = store.lexical_lines("default", match, 10_000)
                lexical = store.lexical_lines("default", match, limit, where=where)
                assert lexical == [hit for hit in everything if hit[0] in keep][:limit], where


def test_filtered_candidates_are_exactly_what_the_filter_admits(
    mem: Memory, tmp_path: Path
) -> None:
    check(mem, tmp_path / "m.db")
    assert len(admitted(tmp_path / "m.db", SearchFilter(role="user"))) > 60  # a wide mask
    assert 0 < len(admitted(tmp_path / "m.db", SearchFilter(session="s3"))) < 60  # a narrow one


def test_the_columns_follow_appends_from_another_process_and_deletes(
    mem: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "m.db"
    vector = embed_texts(mem.embedder_of("default"), ["dog"])[0]
    mem.store.vector_lines("default", vector, 5, where=SearchFilter(role="user"))  # loaded
    with Memory(path, clock=FrozenClock(NOW)) as other:  # another writer's rows: a refresh
        fill(other, 60, start=240)
    check(mem, path)
    with sqlite3.connect(path) as conn:
        victims = [r[0] for r in conn.execute("SELECT id FROM episodes WHERE id % 5 = 0")]
    for episode_id in victims:
        mem.forget(episode_id)
    check(mem, path)


def test_a_mask_ranks_as_the_same_keys_given_as_allowed() -> None:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(500, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    roles = [None if i % 9 == 0 else ("user" if i % 2 else "assistant") for i in range(500)]
    # a stamp longer than the first ones widens the ordered column mid-space
    stamps = [
        f"2026-10-{1 + i % 28:02d}" + ("T12:00:00.000000Z" if i > 300 else "") for i in range(500)
    ]
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE spaces (name TEXT, vector_epoch INTEGER, dim INTEGER);"
        "CREATE TABLE items (id INTEGER PRIMARY KEY, space TEXT, vector BLOB, role TEXT, at TEXT);"
        "INSERT INTO spaces VALUES ('a', 0, 16);"
    )
    index = VectorIndex(
        "items", "id", columns=(Column("role", "t.role"), Column("at", "t.at", ordered=True))
    )
    for lo, hi in ((0, 200), (200, 500)):  # two refreshes: the columns grow with the rows
        conn.executemany(
            "INSERT INTO items VALUES (?, 'a', ?, ?, ?)",
            [(i + 1, encode_vector(rows[i]), roles[i], stamps[i]) for i in range(lo, hi)],
        )
        index.refresh(conn)
    query = rows[7]
    cases = {
        "user": lambda c: c.equal("role", "user"),  # wide: the whole matrix, masked
        "none": lambda c: c.equal("role", "nobody"),
        "narrow": lambda c: c.equal("role", "user") & c.within("at", "2026-10-03", "2026-10-04"),
        "late": lambda c: c.within("at", "2026-10-20T12:00:00.000000Z", None),
        "all": lambda c: c.all(),
    }
    keep = {
        "user": [i for i in range(500) if roles[i] == "user"],
        "none": [],
        "narrow": [
            i
            for i in range(500)
            if roles[i] == "user" and "2026-10-03" <= stamps[i] <= "2026-10-04"
        ],
        "late": [i for i in range(500) if stamps[i] >= "2026-10-20T12:00:00.000000Z"],
        "all": list(range(500)),
    }
    for name, mask in cases.items():
        allowed = [i + 1 for i in keep[name]]
        for limit in (1, 10, 1000):
            by_mask = index.search("a", query, limit, mask=mask)
            by_keys = index.search("a", query, limit, allowed=allowed)
            assert [k for k, _ in by_mask] == [k for k, _ in by_keys], name
            assert np.allclose([s for _, s in by_mask], [s for _, s in by_keys], atol=1e-6)
    index.discard("a", {2, 4, 6, 8})  # a delete keeps each row's values with it
    by_mask = index.search("a", query, 1000, mask=cases["user"])
    assert [k for k, _ in by_mask] == [
        k for k, _ in index.search("a", query, 1000, allowed=[i + 1 for i in keep["user"]])
    ]
    assert not {2, 4, 6, 8} & {k for k, _ in by_mask}


def test_a_line_without_its_episode_is_never_admitted(mem: Memory, tmp_path: Path) -> None:
    """The index reads each line's episode through a LEFT JOIN (a vector is never dropped);
    a filter admits a line only through its episode, as the SQL's join does."""
    with sqlite3.connect(tmp_path / "m.db") as conn:  # foreign keys are off in this one
        line_id, blob = conn.execute("SELECT id, vector FROM lines ORDER BY id LIMIT 1").fetchone()
        conn.execute(
            "INSERT INTO lines (episode_id, space, seq, text, vector) "
            "VALUES (999999, 'default', 0, 'orphan', ?)",
            (blob,),
        )
        orphan = conn.execute("SELECT max(id) FROM lines").fetchone()[0]
    vector = mem.store.line_vectors("default", [line_id])[line_id]
    unfiltered = {k for k, _ in mem.store.vector_lines("default", vector, 2)}
    assert unfiltered == {line_id, orphan}
    for where in (SearchFilter(kind="passage"), SearchFilter(since="2000-01-01")):
        found = {k for k, _ in mem.store.vector_lines("default", vector, 1000, where=where)}
        assert line_id in found and orphan not in found

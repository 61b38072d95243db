"""The in-process lexical index must answer what FTS5 answers: the same top lines with the
same ``-bm25`` scores, after adds and deletes (its own and another process's), per space, and
FTS5 must keep answering what the index cannot (filters, a query it does not parse). The
oracle is FTS5's own query on the same real file."""

from __future__ import annotations

import sqlite3
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orcamem import Memory
from orcamem._kernel.config import Config, StorageConfig
from orcamem._kernel.text import fts_query
from orcamem.engine import SearchFilter
from orcamem.engine.store.lexical_index import Tokenizer, tokenize_option
from orcamem.errors import InvalidInputError

FTS5 = (
    "SELECT f.rowid, -bm25(lines_fts, ?, ?) AS score FROM lines_fts f JOIN lines l "
    "ON l.id = f.rowid WHERE lines_fts MATCH ? AND l.space = ? ORDER BY score DESC, f.rowid"
)
WORDS = ["running", "runs", "harbour", "Harbours", "tea", "café", "naïve", "x9", "dog", "dogs"]
INDEXED = Config(storage=StorageConfig(lexical_index_threshold=0))
TEXT = st.text(
    alphabet=st.sampled_from([*string.ascii_letters, *string.digits, *" .,'-_\n", *"éßİﬁ\u0301"]),
    max_size=40,
)


def fts5(path: Path, space: str, match: str) -> list[tuple[int, float]]:
    with sqlite3.connect(path) as conn:
        return [(int(i), s) for i, s in conn.execute(FTS5, (1.0, 0.4, match, space))]


def indexed(mem: Memory, space: str, match: str, limit: int = 1000) -> list[tuple[int, float]]:
    """The index's own answer (never FTS5's): the store's first query of a space starts its
    load, which is waited for."""
    store = mem.store
    store.lexical_lines(space, match, limit)
    loading = store._lexical.loading(space)
    if loading is not None:
        loading.join()
    found = store._indexed_lexical(space, match, limit, (1.0, 0.4))
    assert found is not None
    assert store.lexical_lines(space, match, limit) == found
    return found


def assert_same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_tokens_are_fts5s(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(a, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    conn.execute("INSERT INTO t(a) VALUES (?)", (text,))
    expected = [t for _, t in sorted((o, t) for t, o in conn.execute("SELECT term, offset FROM v"))]
    tokenizer = Tokenizer(tokenize_option(conn, "t"))
    assert tokenizer.tokens(text) == expected
    names, table = tokenizer.rows([(text, text)])
    for column in (0, 1):
        assert sorted(names[t] for _, c, t in table.tolist() if c == column) == sorted(expected)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.lists(st.sampled_from(WORDS), max_size=8), TEXT),
        min_size=1,
        max_size=30,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
)
def test_scores_are_fts5s(tmp_path_factory: pytest.TempPathFactory, lines, query) -> None:
    path = tmp_path_factory.mktemp("lex") / "m.db"
    with Memory(path, config=INDEXED) as mem:
        for space, words, noise in lines:
            mem.add(" ".join(["line", *words, noise]), space=space, kind="turn", role="user")
        match = fts_query(" ".join(query))
        assert match is not None
        for space in {space for space, _, _ in lines}:
            assert_same(indexed(mem, space, match), fts5(path, space, match))


def test_refresh_follows_adds_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    match = fts_query("harbour tea dog")
    assert match is not None
    with Memory(path, config=INDEXED) as mem, Memory(path) as other:
        first = mem.add("the dog at the harbour", space="s", kind="turn", role="user")
        mem.add("tea at noon", space="s", kind="turn", role="user")
        assert_same(indexed(mem, "s", match), fts5(path, "s", match))
        other.add("harbour tea, harbour dog", space="s", kind="turn", role="user")  # another Memory
        other.add("tea elsewhere", space="t", kind="turn", role="user")  # moves N and n
        assert len(indexed(mem, "s", match, 10)) == 3
        assert_same(indexed(mem, "s", match, 10), fts5(path, "s", match))
        mem.forget(first.id, space="s")
        assert_same(indexed(mem, "s", match, 10), fts5(path, "s", match))
        mem.forget(mem.remember("tea is green", space="s").id, space="s")  # moves the epoch too
        assert_same(indexed(mem, "s", match, 10), fts5(path, "s", match))
        other.forget(other.add("dog dog", space="s", kind="turn", role="user").id, space="s")
        assert_same(indexed(mem, "s", match, 10), fts5(path, "s", match))
        mem.delete_space("s")
        assert mem.store.lexical_lines("s", match, 10) == []  # an empty space: FTS5 answers
        mem.add("a dog again", space="s", kind="turn", role="user")
        assert_same(indexed(mem, "s", match, 10), fts5(path, "s", match))


def test_a_forgotten_turn_leaves_the_index_of_every_process(tmp_path: Path) -> None:
    """The next turn's context is rewritten by a forget: each process's index loads the space
    again (no watermark shows the rewrite), and none finds it by the forgotten words."""
    path = tmp_path / "m.db"
    match = fts_query("quillfeather harbour")
    assert match is not None
    with Memory(path, config=INDEXED) as mem, Memory(path, config=INDEXED) as other:
        turns = [
            mem.add(text, space="s", kind="turn", role="user", session_id="chat")
            for text in ("the harbour at dawn", "my hint is quillfeather", "noted, thanks")
        ]
        before = [i for i, _ in indexed(other, "s", match)]
        assert len(before) == 3  # the hint, and the turn after it by its context
        mem.forget(turns[1].id, space="s")
        for each in (mem, other):
            assert_same(indexed(each, "s", match), fts5(path, "s", match))
            assert len(indexed(each, "s", fts_query("quillfeather"))) == 0
            assert len(indexed(each, "s", match)) == 2  # the harbour, and the turn after it


def test_a_process_s_first_query_of_a_big_space_starts_its_load(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path) as mem:
        mem.add("the dog at the harbour", space="s", kind="turn", role="user")
    match = fts_query("harbour dog")
    assert match is not None
    with Memory(path, config=INDEXED) as mem:  # nothing of the file loaded in this process yet
        assert mem.store.lexical_lines("s", match, 10) == fts5(path, "s", match)
        assert mem.store._lexical.loading("s") is not None


def test_spaces_stay_apart_and_the_limit_holds(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    match = fts_query("harbour dog")
    assert match is not None
    with Memory(path, config=INDEXED) as mem:
        for i in range(30):
            mem.add(f"harbour {'dog ' * (i % 4)}entry {i}", space="a", kind="turn", role="user")
            mem.add(f"dog {i}", space="b", kind="turn", role="user")
        found = indexed(mem, "a", match, limit=7)
        assert_same(found, fts5(path, "a", match)[:7])
        ids = {line.id for line in mem.store.lines([i for i, _ in found]) if line.space == "a"}
        assert ids == {i for i, _ in found}


def test_fts5_answers_filters_and_what_the_index_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory(path, config=INDEXED) as mem:
        mem.add("the dog said don't", space="s", kind="turn", role="user")
        mem.add("the dog ate", space="s", kind="turn", role="assistant")
        match = fts_query("dog")
        assert match is not None
        indexed(mem, "s", match)
        user = mem.store.lexical_lines("s", match, 10, where=SearchFilter(role="user"))
        assert len(user) == 1
        for expression in ('"dog" AND "ate"', '"don\'t"', "dog"):
            assert mem.store._lexical.search(None, "s", expression, 10) is None  # type: ignore[arg-type]
            assert_same(mem.store.lexical_lines("s", expression, 10), fts5(path, "s", expression))


def test_the_threshold_is_checked() -> None:
    assert StorageConfig().lexical_index_threshold == 200_000
    with pytest.raises(InvalidInputError, match="lexical_index_threshold"):
        StorageConfig(lexical_index_threshold=-1)


def test_close_stops_the_lexical_loader(tmp_path: Path) -> None:
    """A big space's first query loads its postings on a thread; ``close()`` ends that load
    and joins the thread, which keeps nothing. The load's batch here waits until the store
    is stopping, so it cannot end by itself first: before, ``close()`` returned with the
    thread still reading."""
    path = tmp_path / "m.db"
    with Memory(path) as mem:
        mem.add("the dog at the harbour", space="s", kind="turn", role="user")
    match = fts_query("harbour dog")
    assert match is not None
    mem = Memory(path, config=INDEXED)
    index = mem.store._lexical
    read_batch = index._batch

    def batch(conn, space, after):  # the index's own signature
        index._stopping.wait(60)  # bounded only so that a failing run does not hang
        return read_batch(conn, space, after)

    index._batch = batch
    mem.store.lexical_lines("s", match, 10)  # FTS5 answers; the load starts
    loader = index.loading("s")
    assert loader is not None and loader.is_alive()
    mem.close()
    assert not loader.is_alive()
    assert not index.loaded("s")


def test_warm_loads_a_big_spaces_postings_before_any_search(tmp_path: Path) -> None:
    """``Memory.warm`` waits for the load a first search would only start: before, the
    bench timed its searches while the postings loaded beside them."""
    path = tmp_path / "m.db"
    with Memory(path) as mem:
        mem.add_many(["the dog at the harbour", "tea with my sister"], space="s")
    with Memory(path, config=INDEXED) as mem:
        assert not mem.store._lexical.loaded("s")
        mem.warm(space="s")
        assert mem.store._lexical.loaded("s")
        mem.warm(space="s")  # again: nothing to do
        mem.warm(space="nobody")  # a space with no lines: nothing to load, no error
        assert not mem.store._lexical.loaded("nobody")
        assert mem.search("harbour dog", space="s").hits[0].text.startswith("the dog")

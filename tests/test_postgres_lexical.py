"""PostgreSQL's in-process BM25 (``postgres.lexical.LineIndex``) must answer what the SQL BM25
answers: the same top lines with the same scores, after adds (its own and another replica's)
and after a delete, per space; filtered queries and the writer stay in SQL. The oracle is the
store's SQL query on the same real database (``tests/pg_server.py``)."""

from __future__ import annotations

import random

import pytest

from orcamem import Memory
from orcamem._kernel.text import fts_query
from orcamem.engine import SearchFilter
from orcamem.engine.store.postgres import PostgresStore

WORDS = [
    "dentist",
    "pune",
    "rao",
    "dog",
    "biscuit",
    "running",
    "runs",
    "ran",
    "harbour",
    "tea",
    "café",
    "naïve",
    "x9",
    "spring",
    "sister",
    "mumbai",
    "conference",
    "march",
    "peanut",
    "butter",
    "allergic",
    "moved",
    "bangalore",
    "week",
]
QUERIES = ["dentist pune", "running dog", "café naïve tea", "harbour x9 spring", "zebra", "rao"]


def corpus(rng: random.Random, count: int) -> list[dict]:
    return [
        {"text": " ".join(rng.choices(WORDS, k=rng.randint(1, 12))), "session_id": f"s{i % 3}"}
        for i in range(count)
    ]


def sql(mem: Memory, space: str, match: str, limit: int) -> list[tuple[int, float]]:
    return mem.store._bm25("lines", "id", space, match, limit, (1.0, 0.4))


def indexed(mem: Memory, space: str, match: str, limit: int) -> list[tuple[int, float]]:
    """The index's own answer (never SQL's): the first query of a space starts its load,
    which is waited for."""
    store = mem.store
    store.lexical_lines(space, match, limit)
    loading = store._lexical.loading(space)
    assert loading is not None
    loading.join()
    found = store._indexed_lexical(space, match, limit, (1.0, 0.4))
    assert found is not None
    assert store.lexical_lines(space, match, limit) == found
    return found


def assert_same(mem: Memory, space: str, limit: int = 20) -> None:
    for query in QUERIES:
        match = fts_query(query)
        found, expected = indexed(mem, space, match, limit), sql(mem, space, match, limit)
        assert [i for i, _ in found] == [i for i, _ in expected], query
        assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-9)


def test_the_index_scores_what_the_sql_bm25_scores_through_adds_and_deletes(
    pg_url: str,
) -> None:
    rng = random.Random(7)
    with Memory(pg_url, space="a") as mem, Memory(pg_url, space="a") as other:
        mem.add_many(corpus(rng, 120))
        mem.add_many(corpus(rng, 60), space="b")
        assert_same(mem, "a")
        assert_same(mem, "b")
        assert indexed(mem, "a", fts_query("zebra"), 5) == []
        mem.add_many(corpus(rng, 40))  # this replica's adds
        other.add_many(corpus(rng, 30))  # and another's, to both spaces
        other.add_many(corpus(rng, 30), space="b")
        assert_same(mem, "a")
        assert_same(mem, "b")
        lines = {i for i, _ in indexed(mem, "a", fts_query("dentist"), 1000)}
        episode = mem.store.line_positions([min(lines)])[min(lines)][0]
        other.forget(episode)
        assert_same(mem, "a")
        assert_same(mem, "b")
        after = {i for i, _ in indexed(mem, "a", fts_query("dentist"), 1000)}
        assert after and after < lines
        held_b = {i for i, _ in indexed(mem, "b", fts_query("dentist"), 1000)}
        assert held_b and not held_b & lines  # two spaces, two sets of lines


def test_filtered_queries_and_the_writer_keep_the_sql_bm25(pg_url: str) -> None:
    with Memory(pg_url, space="f") as mem:
        mem.add_many(corpus(random.Random(3), 50))
        match = fts_query("dentist pune")
        indexed(mem, "f", match, 10)
        store = mem.store
        only = SearchFilter(session="s1")
        filtered = store.lexical_lines("f", match, 10, where=only)
        assert filtered and len(filtered) < len(sql(mem, "f", match, 1000))
        with store.writing():
            assert store._indexed_lexical("f", match, 10, (1.0, 0.4)) is None


def loaded(mem: Memory, space: str, match: str) -> bool:
    """Whether the index took ``space`` in, once its first query's load has run."""
    mem.store.lexical_lines(space, match, 5)
    loading = mem.store._lexical.loading(space)
    if loading is not None:
        loading.join()
    return mem.store._lexical.loaded(space)


def test_term_counts_from_the_index_are_the_sql_counts(pg_url: str) -> None:
    """Lines holding a word in their text (not their context), all of a word's lexemes, up
    to the cap: the index's counts against a store that never holds the space."""
    rng = random.Random(11)
    words = [*WORDS, "peanut-butter", "zebra", "Running"]
    turns = [*corpus(rng, 80), {"text": "peanut-butter on toast", "session_id": "s1"}]
    with (
        Memory(pg_url, space="t") as mem,
        Memory(space="t", store=PostgresStore(pg_url, index_lines=0)) as plain,
    ):
        mem.add_many(turns)
        assert loaded(mem, "t", fts_query("dentist"))
        assert not loaded(plain, "t", fts_query("dentist"))
        for cap in (1000, 7):
            assert mem.store.term_counts("t", words, cap) == plain.store.term_counts(
                "t", words, cap
            )
        episode = mem.store.line_positions([min(mem.store._lexical._spaces["t"].ids)])
        plain.forget(next(iter(episode.values()))[0])  # another replica's delete
        assert mem.store.term_counts("t", words) == plain.store.term_counts("t", words)
        counts = mem.store.term_counts("t", words)[1]
        assert counts["peanut-butter"] >= 1 and counts["zebra"] == 0


def test_spaces_past_the_lexical_budget_are_ranked_in_sql(pg_url: str) -> None:
    rng = random.Random(5)
    match = fts_query("dentist pune")
    with Memory(space="a", store=PostgresStore(pg_url, index_lines=100)) as mem:
        mem.add_many(corpus(rng, 60))
        mem.add_many(corpus(rng, 60), space="b")
        assert loaded(mem, "a", match)
        assert not loaded(mem, "b", match)  # 60 lines do not fit beside a's 60
        assert mem.store.lexical_lines("b", match, 20) == sql(mem, "b", match, 20)
        mem.add_many(corpus(rng, 50))  # a outgrows the budget: dropped, SQL answers
        assert mem.store.lexical_lines("a", match, 20) == sql(mem, "a", match, 20)
        assert not mem.store._lexical.loaded("a")


def test_warm_loads_the_postings_and_vectors_before_any_search(pg_url: str) -> None:
    rng = random.Random(3)
    with Memory(pg_url, space="w") as writer:
        writer.add_many(corpus(rng, 40))
    with Memory(pg_url, space="w") as mem:  # a fresh process's store: nothing held yet
        assert not mem.store._lexical.loaded("w")
        mem.warm()
        assert mem.store._lexical.loaded("w")
        assert "w" in mem.store._seen  # the line cache read the space
        mem.warm(space="absent")
        assert not mem.store._lexical.loaded("absent")
        assert_same(mem, "w")  # the index answers, as the SQL BM25 does

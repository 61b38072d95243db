"""Lexical pruning (issue 16): in a big space a BM25 OR-query leaves out the terms that very
many lines hold while a rarer term remains (capped postings); below the size, or switched off,
every term is searched and results are what they were."""

from __future__ import annotations

import pytest

from orcamem import Config, InvalidInputError, Memory
from orcamem.engine import StorageConfig
from orcamem.engine.store.sqlite import SQLiteStore

COMMON, RARE = "harbour", "zeppelin"


def texts() -> list[str]:
    """300 lines say the common word, 3 of them also the rare one, 3 more only the rare one."""
    lines = [f"the {COMMON} log entry number {i} was filed" for i in range(300)]
    lines += [f"a {RARE} flew over the {COMMON} at dawn, entry {i}" for i in range(3)]
    lines += [f"nobody saw the {RARE} again after day {i}" for i in range(3)]
    return lines


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "lexical.db"
    with Memory(path, space="s") as mem:
        mem.add_many(texts())
        mem.add_many([f"{COMMON} {COMMON} in another space {i}" for i in range(50)], space="t")
    return path


MATCH = f'"{COMMON}" OR "{RARE}"'


def lexical(path, **options) -> list[tuple[int, float]]:
    with SQLiteStore(path, **options) as store:
        return store.lexical_lines("s", MATCH, 100)


def test_a_pruned_query_leaves_out_the_term_at_the_cap(path) -> None:
    full = lexical(path)
    assert len(full) == 100  # the common word alone fills the top 100
    pruned = lexical(path, lexical_prune_above=0, lexical_term_cap=100)
    with SQLiteStore(path) as store:
        rare_only = store.lexical_lines("s", f'"{RARE}"', 100)
    assert pruned == rare_only and len(pruned) == 6
    # the lines that hold both words, ranked first by the full query, are all kept
    assert {key for key, _ in full[:3]} <= {key for key, _ in pruned}


def test_the_cap_counts_every_space_and_a_rare_term_is_never_left_out(path) -> None:
    # 306 lines of "s" and 50 of "t" say the common word: a cap of 340 is reached only
    # because the count is over the whole index, whose postings the query's cost is
    assert lexical(path, lexical_prune_above=0, lexical_term_cap=340) == lexical(
        path, lexical_prune_above=0, lexical_term_cap=10
    )
    # a cap above every term's count, or every term at the cap: the query is unchanged
    assert lexical(path, lexical_prune_above=0, lexical_term_cap=10_000) == lexical(path)
    assert lexical(path, lexical_prune_above=0, lexical_term_cap=1) == lexical(path)


def test_below_the_threshold_every_term_is_searched(path) -> None:
    assert lexical(path, lexical_prune_above=306, lexical_term_cap=100) == lexical(path)
    assert lexical(path, lexical_prune_above=305, lexical_term_cap=100) != lexical(path)


def test_other_match_expressions_are_left_alone(path) -> None:
    with SQLiteStore(path, lexical_prune_above=0, lexical_term_cap=100) as store:
        for match in (f'"{COMMON}"', f'"{COMMON}" AND "{RARE}"', f"text : ({MATCH})"):
            with SQLiteStore(path) as plain:
                assert store.lexical_lines("s", match, 100) == plain.lexical_lines("s", match, 100)


def test_lexical_pruning_is_a_config_switch(path) -> None:
    storage = StorageConfig()
    assert storage.lexical_pruning is True and storage.lexical_pruning_threshold > 100_000
    with pytest.raises(InvalidInputError, match="lexical_term_cap"):
        StorageConfig(lexical_term_cap=0)
    with pytest.raises(InvalidInputError, match="lexical_pruning_threshold"):
        StorageConfig(lexical_pruning_threshold=-1)
    found = {}
    for name, storage in (
        ("default", StorageConfig()),  # 306 lines: far below the threshold
        ("off", StorageConfig(lexical_pruning=False)),
        ("forced", StorageConfig(lexical_pruning_threshold=0, lexical_term_cap=100)),
    ):
        with Memory(path, space="s", config=Config(storage=storage)) as mem:
            found[name] = [hit.text for hit in mem.search(f"the {COMMON} {RARE}").hits]
    assert found["default"] == found["off"]
    assert found["forced"] and RARE in found["forced"][0]

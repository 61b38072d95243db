"""Vector pruning (issue 16): above a size a space is searched on a short projection of every
row, then the best few thousand are scored exactly; it is a Config switch, exact below it."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from orcamem import Config, InvalidInputError, Memory
from orcamem.engine import StorageConfig
from orcamem.engine.store import vector_index
from orcamem.engine.store.vector_index import VectorIndex, candidates, encode_vector

DIM, ROWS = 256, 6000


def corpus(rows: int = ROWS, seed: int = 3) -> np.ndarray:
    """Unit vectors with the structure text embeddings have: most variance on a few axes."""
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, 24)) @ rng.normal(size=(24, DIM))
    matrix += 0.3 * rng.normal(size=(rows, DIM))
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def _space_of(rows: np.ndarray) -> sqlite3.Connection:
    """A database whose space ``s`` holds ``rows`` as lines 1, 2, …"""
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE spaces (name TEXT, vector_epoch INTEGER, dim INTEGER);"
        "CREATE TABLE lines (id INTEGER PRIMARY KEY, space TEXT, vector BLOB);"
    )
    conn.execute("INSERT INTO spaces VALUES ('s', 0, ?)", (DIM,))
    conn.executemany(
        "INSERT INTO lines (id, space, vector) VALUES (?, 's', ?)",
        [(i + 1, encode_vector(v)) for i, v in enumerate(rows)],
    )
    return conn


@pytest.fixture
def conn() -> sqlite3.Connection:
    return _space_of(corpus())


def test_a_pruned_search_keeps_the_exact_hits_and_their_exact_scores(conn) -> None:
    exact = VectorIndex("lines", "id")
    pruned = VectorIndex("lines", "id", prune_above=1000)
    for index in (exact, pruned):
        index.refresh(conn)
    assert candidates(10) < ROWS  # the pruned path really runs
    queries = corpus(40, seed=11)
    shared = []
    for query in queries:
        want, got = exact.search("s", query, 10), pruned.search("s", query, 10)
        assert len(got) == 10 and [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        scores = dict(want)
        for key, score in got:  # a re-scored hit carries its exact cosine
            assert score == pytest.approx(scores.get(key, score), abs=1e-6)
        shared.append(len({k for k, _ in want} & {k for k, _ in got}) / 10)
    assert np.mean(shared) >= 0.95


def test_rows_written_after_pruning_began_are_found(conn) -> None:
    index = VectorIndex("lines", "id", prune_above=1000)
    index.refresh(conn)
    fresh = corpus(1, seed=99)[0]
    conn.execute(
        "INSERT INTO lines (id, space, vector) VALUES (?, 's', ?)", (ROWS + 1, encode_vector(fresh))
    )
    index.refresh(conn)  # appended rows are projected as they come
    assert index.search("s", fresh, 5)[0][0] == ROWS + 1
    index.discard("s", {ROWS + 1})  # a delete keeps the space pruned, without the row
    assert ROWS + 1 not in {key for key, _ in index.search("s", fresh, 5)}
    assert index.search("s", corpus()[7], 1)[0][0] == 8


def test_a_load_in_chunks_is_the_load_in_one(conn, monkeypatch) -> None:
    """Rows read a chunk at a time land where one read puts them, and the space is pruned
    once, after the last chunk: the same hits with the same scores, before and after a
    delete (which moves each kept row's projection with it)."""
    whole = VectorIndex("lines", "id", prune_above=1000)
    whole.refresh(conn)
    monkeypatch.setattr(vector_index, "_CHUNK", 700)  # 6,000 rows: nine chunks
    chunked = VectorIndex("lines", "id", prune_above=1000)
    chunked.refresh(conn)
    exact = VectorIndex("lines", "id")
    exact.refresh(conn)
    queries = corpus(20, seed=5)
    for step in range(2):
        one, many = whole._spaces["s"], chunked._spaces["s"]  # the same axes, the same rows
        assert many.basis is not None and np.array_equal(many.basis, one.basis)
        assert np.array_equal(many.projected[: many.count], one.projected[: one.count])
        for query in queries:
            assert chunked.search("s", query, 10) == whole.search("s", query, 10)
        shared = [
            len(
                {k for k, _ in exact.search("s", q, 10)}
                & {k for k, _ in chunked.search("s", q, 10)}
            )
            for q in queries
        ]
        assert np.mean(shared) >= 9.5
        if step == 0:
            gone = {key for key, _ in whole.search("s", queries[0], 3)} | {1, 2, ROWS}
            for index in (whole, chunked, exact):
                index.discard("s", gone)
            assert chunked.count("s") == ROWS - len(gone)
            assert not gone & {key for key, _ in chunked.search("s", queries[0], 10)}


def test_pruning_is_a_config_switch_with_a_threshold(tmp_path) -> None:
    assert StorageConfig().vector_pruning is True and StorageConfig().pruning_threshold >= 100_000
    with pytest.raises(InvalidInputError, match="vector_pruning"):
        StorageConfig(vector_pruning="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="pruning_threshold"):
        StorageConfig(pruning_threshold=-1)
    texts = [f"note {i}: the {w} report for week {i % 52}" for i, w in enumerate(["sales"] * 2500)]
    path = tmp_path / "pruned.db"
    with Memory(path, space="s") as mem:
        mem.add_many(texts)
    results = {}
    for name, storage in (
        ("exact", StorageConfig(vector_pruning=False)),
        ("pruned", StorageConfig(pruning_threshold=0)),
    ):
        with Memory(path, space="s", config=Config(storage=storage)) as mem:
            results[name] = [hit.id for hit in mem.search("the sales report for week 7").hits]
    assert results["pruned"] and results["pruned"] == results["exact"]


@pytest.mark.parametrize("every", [2, 5])  # half the rows (one masked pass), a fifth (a gather)
def test_a_filtered_search_of_a_pruned_space_prunes_among_the_rows_it_admits(every: int) -> None:
    """The same two steps among the admitted rows only: nothing outside the mask, each hit
    with its exact cosine, and the exact filtered top 10 all but kept."""
    rows = corpus(12_000, seed=8)
    conn = _space_of(rows)
    exact, pruned = VectorIndex("lines", "id"), VectorIndex("lines", "id", prune_above=1000)
    for index in (exact, pruned):
        index.refresh(conn)
    admitted = 12_000 // every
    assert candidates(10) < admitted and (admitted * vector_index.WIDE >= 12_000) == (every == 2)

    def mask(columns: vector_index.Columns) -> np.ndarray:
        return np.arange(len(columns.all())) % every == 0  # ids 1, 1 + every, …

    shared = []
    for query in corpus(30, seed=12):
        want = dict(exact.search("s", query, 10, mask=mask))
        got = pruned.search("s", query, 10, mask=mask)
        assert len(got) == 10 and all((key - 1) % every == 0 for key, _ in got)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        for key, score in got:
            assert score == pytest.approx(float(rows[key - 1] @ query), abs=1e-3)
        shared.append(len(want.keys() & {key for key, _ in got}) / 10)
    assert np.mean(shared) >= 0.95
    query = corpus(1, seed=13)[0]  # the short step decides: a best hit whose short row says
    best = exact.search("s", query, 1, mask=mask)[0][0]  # "far" is not re-scored at all
    matrix = pruned._spaces["s"]
    matrix.projected[matrix.position[best]] = -(matrix.basis.T @ query)
    assert best not in {key for key, _ in pruned.search("s", query, 10, mask=mask)}

"""The PostgreSQL engine store beyond the contract: it is reached by URL from every entry point,
it answers what SQLite answers (same BM25, same cosine, same block), a bad or unreachable URL
is a clear error that shows no password, and two stores on one database (two replicas) see
each other's writes at once and never lose or duplicate one.

Real PostgreSQL 18 + pgvector (``tests/pg_server.py``); time is a ``FrozenClock``.
"""

from __future__ import annotations

import io
import json
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from orcamem import InvalidInputError, Memory, StoreError
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.embed import embed_texts
from orcamem._kernel.text import fts_query
from orcamem.engine.store import open_store
from orcamem.interfaces.cli.main import app
from servers import free_port

TEXTS = [
    "I live in Pune and my dentist is Dr Rao.",
    "The weather was sunny yesterday in Pune.",
    "My sister works as a dentist in Mumbai.",
    "We adopted a dog named Biscuit last spring.",
    "Running every morning keeps me sane; I ran 5 km today.",
    "The dentists' conference is in March.",
    "I'm allergic to peanuts, so no peanut butter please.",
    "I moved from Pune to Bangalore last week.",
]
QUERIES = ["dentist Pune", "running", "peanut allergy", "dog named Biscuit", "where do I live?"]
_MEMORY_ID = re.compile(r"mem-[0-9a-f]{8}")


def _observed(mem: Memory) -> dict:
    """Everything a user sees of one scenario, with random memory ids masked."""
    for text in TEXTS:
        mem.observe("user", text, session_id="s1")
    seen: dict = {
        "lexical": {
            q: [(line, round(score, 9)) for line, score in mem.store.lexical_lines("x", m, 10)]
            for q in QUERIES[:4]
            if (m := fts_query(q))
        },
        "search": {q: [(h.text, round(h.score, 6)) for h in mem.search(q).hits] for q in QUERIES},
        "block": mem.context([{"role": "user", "content": "Who is my dentist?"}]).block,
    }
    report = mem.sleep()
    seen["stored"] = len(report.stored)
    seen["states"] = sorted((m.attribute, m.value, m.active) for m in mem.facts())
    seen["after_sleep"] = mem.context([{"role": "user", "content": "Where do I live?"}]).block
    mem.forget(1)
    out = io.StringIO()
    mem.export(out)
    seen["export"] = [
        {k: v for k, v in json.loads(line).items() if k not in ("id", "superseded_by")}
        for line in out.getvalue().splitlines()
    ]
    return json.loads(_MEMORY_ID.sub("mem-…", json.dumps(seen, default=str)))


def test_memory_on_postgres_answers_what_sqlite_answers(tmp_path: Path, pg_url: str) -> None:
    """add, search, the recall block, sleep -> states, delete and export, side by side."""
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(tmp_path / "m.db", space="x", clock=clock) as sqlite:
        expected = _observed(sqlite)
    with Memory.connect(pg_url, space="x", clock=FrozenClock("2026-11-01T10:00:00Z")) as pg:
        assert type(pg.store).__name__ == "PostgresStore"
        got = _observed(pg)
    assert got == expected
    assert expected["stored"] >= 1 and expected["states"]
    assert "Dr Rao" in expected["block"] and "Bangalore" in expected["after_sleep"]


def test_two_stores_on_one_database_share_every_write(pg_url: str) -> None:
    """Two replicas: concurrent writers through both, every acknowledged write read back
    through both at once (read-after-write), nothing duplicated, spaces kept apart."""
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(pg_url, clock=clock) as one, Memory(pg_url, clock=clock) as two:
        acknowledged: list[tuple[str, int]] = []
        lock = threading.Lock()

        def writer(mem: Memory, name: str) -> None:
            for i in range(15):
                episode = mem.add(f"{name} wrote note number {i}", space=name)
                assert two.store.get_episode(name, episode.id).text.endswith(f"number {i}")
                with lock:
                    acknowledged.append((name, episode.id))

        threads = [
            threading.Thread(target=writer, args=(mem, name))
            for mem, name in ((one, "alpha"), (two, "beta"), (one, "gamma"), (two, "delta"))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(acknowledged) == 60 and len(set(acknowledged)) == 60
        for mem in (one, two):
            for name in ("alpha", "beta", "gamma", "delta"):
                texts = [e.text for e in mem.store.iter_episodes(name)]
                assert texts == [f"{name} wrote note number {i}" for i in range(15)]
                hits = mem.search("wrote note number 7", space=name).hits
                assert hits and all(h.text.startswith(name) for h in hits)


def test_an_unreachable_postgres_is_a_clear_error_without_the_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"postgresql://orca:s3cret@127.0.0.1:{free_port()}/orcamem"
    with pytest.raises(StoreError, match="cannot reach the memory database") as info:
        Memory(url)
    assert "s3cret" not in str(info.value) and "orca:…@127.0.0.1" in str(info.value)
    result = CliRunner().invoke(app, ["stats", "--db", url])
    assert result.exit_code == 1 and "cannot reach" in result.output
    assert "s3cret" not in result.output
    assert list(tmp_path.iterdir()) == []  # no "postgresql:" directory, no file


def test_a_malformed_postgres_url_is_bad_input() -> None:
    with pytest.raises(InvalidInputError, match="postgresql://user:password@host"):
        open_store("postgresql://orca:s3cret@127.0.0.1/db?no_such_option=1")


def test_the_cli_takes_a_postgres_url_for_db(pg_url: str) -> None:
    runner = CliRunner()
    added = runner.invoke(app, ["add", "--db", pg_url, "My dentist is Dr Rao."])
    assert added.exit_code == 0, added.output
    found = runner.invoke(app, ["search", "--db", pg_url, "--json", "who is my dentist"])
    assert found.exit_code == 0, found.output
    assert "Dr Rao" in found.output


def test_check_and_repair_on_postgres(pg_url: str) -> None:
    """A healthy database checks clean; a dangling ``superseded_by``, a wrong-size vector and a
    damaged graph are found, and repair fixes them (the vector re-embedded by the space's
    embedder); an episode whose text no longer matches its digest is left for a backup."""
    with Memory(pg_url, space="x", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.observe("user", "My dentist is Dr Rao in Kothrud.")
        fact = mem.remember("Lives in Pune")
        assert mem.check().ok
        with mem.store.writing() as conn:
            conn.execute(
                "UPDATE memories SET superseded_by = 'mem-00000000' WHERE id = %s", (fact.id,)
            )
            conn.execute("UPDATE lines SET vector = '[1,0,0]'::halfvec WHERE seq = 1")
            conn.execute("DELETE FROM entity_lines")
        kinds = sorted({problem.kind for problem in mem.check().problems})
        assert kinds == ["graph", "lineage", "vectors"]
        repaired = mem.repair()
        assert not repaired.remaining and mem.check().ok
        assert mem.search("who is my dentist").hits[0].text.startswith("My dentist")
        with mem.store.writing() as conn:
            conn.execute("ALTER TABLE episodes DISABLE TRIGGER episodes_append_only")
            conn.execute("UPDATE episodes SET text = 'rewritten'")
        [problem] = mem.check().problems
        assert problem.kind == "digest" and not problem.repairable


def test_the_hnsw_path_scores_exactly_what_the_exact_scan_scores(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A space held in the process's line cache is scored there; one bigger than the cache
    over ``EXACT_UP_TO`` vectors takes its candidates from HNSW when an operator made the
    index (orcamem does not: schema migration 7); each is scored exactly, so both give the
    exact scan's hits with the same scores (500 lines, two spaces)."""
    from orcamem.engine.store.postgres import PostgresStore, vectors  # needs the pg extra
    from orcamem.engine.store.postgres.schema import hnsw_index

    rng = np.random.default_rng(7)
    with Memory(pg_url, space="x", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        for space in ("x", "y"):
            mem.add_many([{"text": f"{space} line {i} " + " ".join(rng.choice(TEXTS, 2))}
                          for i in range(250)], space=space)  # fmt: skip
        queries = embed_texts(mem.embedder, QUERIES)
        dim = mem.embedder.dim
    with PostgresStore(pg_url, pool_size=1) as store:
        with store.writing() as conn:
            conn.execute(hnsw_index("lines", dim))
        with store.reading() as conn:
            exact = [vectors.nearest(conn, "lines", "id", "x", q, 10) for q in queries]
        cached = [store.vector_lines("x", q, 10) for q in queries]
        assert store._cache.held("x") is not None
    with PostgresStore(pg_url, pool_size=1, cache_vectors=0) as store:
        monkeypatch.setattr(vectors, "EXACT_UP_TO", 0)
        with store.reading() as conn:  # 500 rows: left alone, the planner would scan them
            conn.execute("SET enable_seqscan = off")
            conn.execute("SET enable_bitmapscan = off")
        approximate = [store.vector_lines("x", q, 10) for q in queries]
        assert store._cache.held("x") is None
        with store.reading() as conn:  # the index was walked, once a query
            conn.execute("SELECT pg_stat_force_next_flush()")
            conn.execute("SELECT pg_stat_clear_snapshot()")
            walks = conn.execute(
                "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s",
                (f"lines_hnsw_{dim}",),
            ).fetchone()[0]
    assert all(len(hits) == 10 for hits in exact)
    assert approximate == exact  # HNSW chose every row the exact scan scores best
    for want, fast in zip(exact, cached, strict=True):  # numpy and pgvector round apart
        assert [k for k, _ in fast] == [k for k, _ in want]  # ... in the 8th decimal
        assert np.allclose([s for _, s in fast], [s for _, s in want], rtol=0, atol=1e-6)
    assert walks >= len(QUERIES)


def test_the_line_cache_follows_every_replica_s_writes_and_deletes(pg_url: str) -> None:
    """One store holds a space's vectors in memory; another store (a second replica) adds
    lines and deletes an episode: the first one's next search sees each change
    (new rows above its highest id, a reload when the space's vector epoch moved); a space
    that does not fit beside the one held is searched in the database, with the same hits."""
    from orcamem.engine.store.postgres import PostgresStore, vectors

    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(pg_url, space="x", clock=clock) as writer:
        first = writer.add("the lighthouse keeper paints boats")
        writer.add_many([{"text": "a quiet market sells figs"}, {"text": "and dates"}], space="y")
        query = embed_texts(writer.embedder, ["lighthouse keeper boats"])[0]
        with PostgresStore(pg_url, pool_size=1, cache_vectors=2) as reader:
            [(line, _)] = reader.vector_lines("x", query, 1)
            assert reader.episode_lines("x", [first.id])[0].id == line
            later = writer.add("lighthouse keeper boats, again, today")
            [(newest, _)] = reader.vector_lines("x", query, 1)
            assert reader.episode_lines("x", [later.id])[0].id == newest
            assert len(reader.vector_lines("x", query, 5)) == 2
            writer.forget(later.id)
            assert [k for k, _ in reader.vector_lines("x", query, 5)] == [line]
            held = reader.vector_lines("x", query, 5)
            assert reader._cache.held("x") is not None  # 1 of 2 cached vectors
            elsewhere = reader.vector_lines("y", query, 5)  # 2 more do not fit beside it
            assert reader._cache.held("y") is None and len(elsewhere) == 2
            with reader.reading() as conn:
                exact = vectors.nearest(conn, "lines", "id", "y", query, 5)
            assert [k for k, _ in elsewhere] == [k for k, _ in exact]
            assert reader.vector_lines("x", query, 5) == held


def test_bm25_document_frequencies_follow_every_insert_and_delete(pg_url: str) -> None:
    """``fts_terms`` (BM25's ``n`` per lexeme, kept by triggers) always equals a recount of
    the rows holding each lexeme: after bulk and single adds, memories, a forgotten episode,
    a deleted memory and a deleted space; and the scores stay SQLite's (the side-by-side
    test above compares them to nine decimals)."""
    recount = (
        "SELECT name, lexeme, docs FROM fts_terms WHERE docs > 0 EXCEPT ALL (SELECT 'lines', "
        "u.lexeme, count(*) FROM lines t, unnest(t.tsv) u GROUP BY 2 UNION ALL SELECT "
        "'memories', u.lexeme, count(*) FROM memories t, unnest(t.tsv) u GROUP BY 2)"
    )
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(pg_url, space="x", clock=clock) as mem:
        mem.add_many([{"text": text, "session_id": "s1"} for text in TEXTS])
        gone = mem.add("the dentist moved to Pune, said the dentist")
        mem.add_many([{"text": text} for text in TEXTS[:3]], space="y")
        mem.sleep()
        kept = mem.remember("My dentist is Dr Rao", category="fact")
        with mem.store.reading() as conn:
            held = conn.execute("SELECT count(*) FROM fts_terms WHERE docs > 0").fetchone()[0]
            assert held > 20 and conn.execute(recount).fetchall() == []
        mem.forget(gone.id)
        mem.forget(kept.id)
        mem.store.delete_space("y")
        with mem.store.reading() as conn:
            assert conn.execute(recount).fetchall() == []
            dentist = conn.execute(
                "SELECT docs FROM fts_terms WHERE name = 'lines' AND lexeme = 'dentist'"
            ).fetchone()[0]
        assert dentist >= 3  # three lines say it (and the lines after them, as context)


def test_writes_keep_no_hnsw_and_the_graph_without_foreign_keys(pg_url: str) -> None:
    """Schema 7 writes no HNSW index and links the entity graph without foreign keys: after
    bulk and single adds, an import (savepoints inside one transaction), a state, a forgotten
    episode and memory and a deleted space, no link names a row that is gone, the fans
    add up (``orcamem check`` finds no drift) and the search still finds what was said."""
    from orcamem.engine.store.postgres import graph

    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(pg_url, space="x", clock=clock) as mem:
        mem.add_many([{"text": text, "session_id": "s1"} for text in TEXTS])
        gone = mem.add("Dr Rao moved his clinic to Pune Camp.", session_id="s1")
        mem.add_many([{"text": text} for text in TEXTS[:3]], space="y")
        out = io.StringIO()
        mem.export(out, space="x")
        assert mem.import_jsonl(out.getvalue().splitlines(), space="z")["episodes"] == 9
        kept = mem.remember("My dentist is Dr Rao", category="fact")
        mem.forget(gone.id)
        mem.forget(kept.id)
        mem.store.delete_space("y")
        with mem.store.reading() as conn:
            orphans = conn.execute(
                "SELECT (SELECT count(*) FROM entity_lines l WHERE NOT EXISTS (SELECT 1 FROM "
                "lines WHERE id = l.line_id) OR NOT EXISTS (SELECT 1 FROM entities WHERE id = "
                "l.entity_id)) + (SELECT count(*) FROM entity_memories m WHERE NOT EXISTS "
                "(SELECT 1 FROM memories WHERE id = m.memory_id) OR NOT EXISTS (SELECT 1 FROM "
                "entities WHERE id = m.entity_id))"
            ).fetchone()[0]
            links = conn.execute("SELECT count(*) FROM entity_lines").fetchone()[0]
            hnsw = conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexdef ILIKE '%USING hnsw%'"
            ).fetchone()[0]
            assert graph.drift(conn) == {}
        assert (orphans, hnsw) == (0, 0) and links > 20
        assert mem.check().ok
        assert mem.search("who is my dentist").hits[0].text.startswith("I live in Pune")
        assert mem.search("dentist", space="z").hits

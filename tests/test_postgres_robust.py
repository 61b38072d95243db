"""The PostgreSQL store does not hang: a filtered search's plan stays linear on a space the
planner has no statistics for, a read that runs away is cancelled into a clear error, and
``close()`` stops the lexical index's loader instead of leaving it reading.

Real PostgreSQL 18 + pgvector (``tests/pg_server.py``); nothing here waits on the clock: a
lock held by another connection makes a read wait for as long as it takes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import suppress

import numpy as np
import pytest

from orcamem import Memory, OrcamemError, StoreError

psycopg = pytest.importorskip("psycopg")


def _turns(count: int) -> list[dict]:
    return [
        {
            "text": f"turn {i}: the dentist said the trip to Pune is on, and the sister agreed",
            "role": "user" if i % 2 else "assistant",
            "session_id": f"s{i // 20}",
        }
        for i in range(count)
    ]


def _nodes(plan: dict) -> Iterator[dict]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def test_filtered_queries_read_lines_by_episode_on_a_space_never_analyzed(pg_url: str) -> None:
    """A freshly bulk-loaded space (autovacuum off for it: no statistics at all). The
    filtered vector and BM25 queries, as the store builds them, never scan the space's line
    index once per episode: the plain ``IN (SELECT … FROM episodes …)`` of before was planned
    for ~2 of the 1,000 episodes a role admits and AND-ed ``lines_space`` (every line of
    the space) into each episode's look-up, 1,000 times (at 100,000 lines: minutes)."""
    from pgvector import Vector
    from pgvector.psycopg import register_vector

    from orcamem.engine.store.postgres import lexical, vectors
    from orcamem.engine.store.postgres.store import MENTIONS_SQL, WINDOW_SQL, admitted_lines
    from orcamem.engine.store.scope import POSTGRES, episode_clauses
    from orcamem.recall.filters import SearchFilter

    with Memory(pg_url, space="big") as mem:
        mem.add("opening the schema")
        with psycopg.connect(pg_url, autocommit=True) as conn:
            for table in ("episodes", "lines", "entities", "entity_lines"):
                conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        mem.add_many(_turns(2000))
        mem.add_many(  # a space of many names: the planner guesses how few are "big"'s
            [{"text": f"Ana met Rahul{i} and Meera{i} in Kochi{i}."} for i in range(2000)],
            space="names",
        )
        query = mem.embedder.embed(["dentist trip"])[0]
        hits = mem.store.vector_lines("big", query, 50, where=SearchFilter(role="user"))
        assert len(hits) == 50  # what the store answers through these statements
        named = mem.store.entity_fans("big", ["dentist", "pune", "sister"])
        entity_ids = [entity_id for entity_id, _ in named.values()]
        assert len(mem.store.entity_mentions("big", entity_ids, 10)) == 30
        asked = sorted({row.episode_id for row in mem.store.lines([i for i, _ in hits[:20]])})
        assert mem.store.session_window("big", asked, 2)
    terms = ["dentist", "trip", "sister"]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        register_vector(conn)
        analyzed = conn.execute(
            "SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('episodes', 'lines') "
            "AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)"
        ).fetchone()[0]
        assert analyzed == 0  # the planner sees no statistics
        for where in (SearchFilter(role="user"), SearchFilter(session="s7")):
            inner = episode_clauses(where, POSTGRES, "big")
            source, scope = admitted_lines(where, "big")
            statements = [
                (
                    vectors.admitted_sql(len(query), inner.sql),
                    {"query": Vector(query), "limit": 50, **inner.params},
                ),
                (
                    lexical.bm25_sql("lines", "id", (1.0, 0.4), scope.sql, source),
                    {
                        "lexemes": terms,
                        "query": lexical.tsquery(terms),
                        "space": "big",
                        "limit": 50,
                        **scope.params,
                    },
                ),
            ]
            for sql, params in statements:
                assert _looped_lookups(conn, sql, params) == [], (where, sql)
        mentions = _plan(conn, MENTIONS_SQL, {"ids": entity_ids, "limit": 10, "space": "big"})
        assert {node.get("Index Name") for node in mentions} == {
            None,  # each entity by its key, not AND-ed with every entity of the space
            "entities_pkey",
            "entity_lines_pkey",
        }
        window = _plan(conn, WINDOW_SQL, {"ids": asked, "radius": 2, "space": "big"})
        assert {  # each asked episode by its key, its neighbours by the session index
            (node.get("Relation Name"), node.get("Index Name"), node["Node Type"])
            for node in window
            if node.get("Relation Name")
        } == {
            ("episodes", "episodes_pkey", "Index Scan"),
            ("episodes", "episodes_space_session", "Index Scan"),
        }


def _plan(conn: psycopg.Connection, sql: str, params: dict) -> list[dict]:
    """The nodes of ``sql``'s plan as it ran; it found rows."""
    [[plan]] = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params).fetchone()
    assert plan["Plan"]["Actual Rows"] > 0
    return list(_nodes(plan["Plan"]))


def _looped_lookups(conn: psycopg.Connection, sql: str, params: dict) -> list[str]:
    """The index scans ``sql`` repeats (a loop per row) on anything but a key, or on the
    space's whole line index: each row's episode must be read by its primary key (a
    role-filtered BM25 once read each line's episode from the ``(space, role, …)`` index,
    5,000 entries a line)."""
    return [
        node.get("Index Name") or node["Node Type"]
        for node in _plan(conn, sql, params)
        if node["Actual Loops"] > 1
        and (
            node.get("Index Name") == "lines_space"
            or (
                node.get("Relation Name") == "episodes"
                and node.get("Index Name") != "episodes_pkey"
            )
        )
    ]


def test_a_runaway_read_is_a_clear_error_and_writes_have_no_read_timeout(pg_url: str) -> None:
    """A read past ``statement_timeout_s`` is cancelled by the server and raised as a
    ``StoreError`` that says so (it was "cannot reach the memory database" before, and
    without the timeout the read waited as long as the lock was held); a write transaction
    lifts the read timeout for itself."""
    from orcamem.engine.store.postgres import PostgresStore

    with PostgresStore(pg_url, pool_size=1, statement_timeout_s=0.2) as store:
        store.ensure_space("x", "e", 4, "2026-11-01T10:00:00Z")
        with store.reading() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone()[0] == "200ms"
        with store.writing() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"
        with store.reading() as conn:  # and back on for reads after the write
            assert conn.execute("SHOW statement_timeout").fetchone()[0] == "200ms"
        with psycopg.connect(pg_url) as other:  # a transaction that holds the table
            other.execute("LOCK TABLE spaces IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreError, match="statement_timeout") as raised:
                store.space_row("x")
            assert "cannot reach" not in str(raised.value)
            other.rollback()
        assert store.space_row("x") is not None


def test_close_stops_the_lexical_loader_it_started(pg_url: str) -> None:
    """A space's first unfiltered lexical query starts loading its postings on a thread;
    ``close()`` cancels that load and joins the thread. Here the load waits on a lock
    another connection holds on ``lines``, so it cannot have finished by itself: before,
    the thread (and its pooled connection) lived on after ``close()`` returned."""
    from orcamem.engine.store.postgres import PostgresStore

    with Memory(pg_url, space="x") as mem:
        mem.add_many(_turns(40))
    store = PostgresStore(pg_url, pool_size=4)
    other = psycopg.connect(pg_url)
    other.execute("LOCK TABLE lines IN ACCESS EXCLUSIVE MODE")

    def search() -> None:  # its own query (SQL, until the index is in) waits on the lock too
        with suppress(OrcamemError):
            store.lexical_lines("x", '"dentist"', 5)

    asked = threading.Thread(target=search, daemon=True)
    asked.start()
    waiting = 0
    for _ in range(10_000):  # until the loader and the search both wait on the lock
        with psycopg.connect(pg_url, autocommit=True) as watch:
            waiting = watch.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'lines'::regclass"
            ).fetchone()[0]
        if waiting >= 2:
            break
    assert waiting >= 2
    loader = store._lexical.loading("x")
    assert loader is not None and loader.is_alive()
    try:
        store.close()
        assert not loader.is_alive()
        assert not store._lexical.loaded("x")  # a load cut short keeps nothing
    finally:
        other.rollback()
        other.close()
        asked.join()


def test_a_filtered_vector_search_from_the_held_rows_is_the_sql_answer(pg_url: str) -> None:
    """A role, session or time filter is answered from the process's line cache, its rows
    masked by their episodes' fields (the SQLite index's rule): the same lines, in the same
    order, as the SQL that reads the admitted episodes' lines (a store without the cache)."""
    from orcamem.engine.store.postgres import PostgresStore
    from orcamem.recall.filters import SearchFilter

    with Memory(pg_url, space="f") as mem:
        mem.add_many(
            [{**turn, "occurred_at": f"2026-0{1 + i // 100}-01T10:00:00Z"}
             for i, turn in enumerate(_turns(400))]
        )  # fmt: skip
        query = mem.embedder.embed(["dentist trip sister"])[0]
    filters = [
        SearchFilter(role="user"),
        SearchFilter(session="s3"),
        SearchFilter(role="assistant", since="2026-02-01T00:00:00Z"),
        SearchFilter(until="2026-01-31T00:00:00Z"),
        SearchFilter(session="nowhere"),
    ]
    with PostgresStore(pg_url) as held, PostgresStore(pg_url, cache_vectors=0) as sql:
        for where in filters:
            fast = held.vector_lines("f", query, 30, where=where)
            slow = sql.vector_lines("f", query, 30, where=where)
            assert [k for k, _ in fast] == [k for k, _ in slow], where
            assert np.allclose([s for _, s in fast], [s for _, s in slow], rtol=0, atol=1e-6)
        assert held._cache.held("f") is not None and sql._cache.held("f") is None
        assert len(held.vector_lines("f", query, 30, where=SearchFilter(session="s3"))) == 20


@pytest.mark.parametrize("bad", [0, -1, 0.0001, float("nan"), float("inf"), "60", True])
def test_a_bad_statement_timeout_is_refused_before_connecting(bad: object) -> None:
    """A timeout that is no positive number of seconds is said, not clamped to 1 ms (every
    read would fail) nor left to a late type error."""
    from orcamem import InvalidInputError
    from orcamem.engine.store.postgres import PostgresStore

    with pytest.raises(InvalidInputError, match="statement_timeout_s"):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none", statement_timeout_s=bad)  # type: ignore[arg-type]


def test_a_space_written_before_a_bigger_one_reads_only_its_own_new_lines(pg_url: str) -> None:
    """The statements that read a space's rows past an id (the vector cache's refresh, the
    lexical index's check, the graph's rebuild, the episode pages) go by the ``(space, id)``
    index. The planner's statistics taken before a bigger space was loaded estimate "ids
    above the small space's last" at a row or two, and the refresh walked the primary key
    from there, reading every line of the bigger space at each search."""
    from orcamem.engine.store.postgres.schema import above
    from orcamem.engine.store.postgres.vectors import REFRESH_SQL

    with Memory(pg_url, space="early") as mem:
        mem.add_many(_turns(200))
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE lines")
            conn.execute("ANALYZE episodes")
            for table in ("episodes", "lines"):
                conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        mem.add_many(_turns(3000), space="later")
        assert len(mem.search("dentist trip").hits) > 0  # the refresh, as a search runs it
    with psycopg.connect(pg_url, autocommit=True) as conn:
        last = conn.execute("SELECT max(id) FROM lines WHERE space = 'early'").fetchone()[0]
        statements = [
            (REFRESH_SQL, {"space": "early", "after": last, "room": 10**6, "epoch": None}),
            (
                f"SELECT id FROM lines WHERE {above('%(space)s', '%(after)s')} "
                "ORDER BY space, id LIMIT 1",
                {"space": "early", "after": last},
            ),
            (
                f"SELECT id FROM episodes WHERE {above('%(space)s', '%(after)s')} "
                "ORDER BY space, id LIMIT 100",
                {"space": "early", "after": 0},
            ),
        ]
        for sql, params in statements:
            [[plan]] = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params).fetchone()
            read = [
                (node.get("Index Name") or node["Node Type"], node["Actual Rows"])
                for node in _nodes(plan["Plan"])
                if node.get("Relation Name") in ("lines", "episodes")
            ]
            assert read and all(
                name in ("lines_space", "episodes_space_id", "episodes_pkey") for name, _ in read
            ), (
                sql,
                read,
            )
            removed = sum(node.get("Rows Removed by Filter", 0) for node in _nodes(plan["Plan"]))
            assert removed == 0, (sql, read)


def test_the_entities_a_space_grew_since_its_statistics_are_read_by_key(pg_url: str) -> None:
    """Activation's seeds (``SOURCES_SQL``) read each link's entity by its primary key.
    With statistics taken before the space was loaded (another space's entities only), the
    planner took the ``(space, name)`` index with the id as a filter: every entity of the
    space once per link (280 ms a search on a 100,000-line space loaded moments before)."""
    from orcamem.engine.store.postgres.store import SOURCES_SQL

    with Memory(pg_url, space="grown") as mem:
        mem.add_many([{"text": f"Ana met Rahul{i} in Kochi{i}."} for i in range(50)], space="other")
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE entities")
            conn.execute("ANALYZE entity_lines")
            for table in ("entities", "entity_lines"):
                conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        mem.add_many([{"text": f"Ana met Rahul{i} and Meera{i} in Kochi{i}."} for i in range(3000)])
        asked = [episode.id for episode in mem.store.page_episodes("grown", limit=20)]
        fans, links = mem.store.entity_sources("grown", ["kochi7"], asked, [])
        assert set(fans) == {"kochi7"} and {source for source, _, _ in links} == set(asked)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        plan = _plan(
            conn,
            SOURCES_SQL,
            {"space": "grown", "names": ["kochi7"], "episodes": asked, "memories": []},
        )
    looped = {node.get("Index Name") for node in plan if node["Actual Loops"] > 1}
    assert "entities_pkey" in looped and "entities_space_name_key" not in looped, looped

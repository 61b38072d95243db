"""The entity graph: extracted at ingest and consolidation, isolated per space, forgotten with
its rows, rebuilt by repair (engine.store.graph, recall.entities)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from orcamem._kernel.model import NewEpisode, NewMemory
from orcamem.engine.store.base import EpisodeWrite
from orcamem.engine.store.migrations import LATEST, MIGRATIONS
from orcamem.engine.store.sqlite import SQLiteStore
from orcamem.recall.activation import association, spread
from orcamem.recall.entities import entities

NOW = "2026-11-01T10:00:00.000000Z"
DIM = 8


def _write(space: str, *lines: str) -> EpisodeWrite:
    vectors = np.eye(DIM, dtype=np.float32)[: len(lines)]
    return EpisodeWrite(
        episode=NewEpisode(space=space, kind="turn", text=" ".join(lines), role="user"),
        lines=lines,
        vectors=vectors,
        embedder_id="test",
        occurred_at=NOW,
        created_at=NOW,
    )


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    opened = SQLiteStore(tmp_path / "graph.db")
    for space in ("a", "b"):
        opened.ensure_space(space, "test", DIM, NOW)
    return opened


def _fan(store: SQLiteStore, space: str, name: str) -> int | None:
    found = store.entity_fans(space, [name])
    return found[name][1] if name in found else None


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("My dentist is Dr. Rao.", ["rao", "dentist"]),
        ("Dr. Rao's clinic is on MG Road.", ["rao", "mg road", "clinic", "road"]),
        (
            "Yesterday I went to Pune with Caroline in May.",
            ["pune", "caroline", "yesterday", "went"],
        ),
        ("How are you? I am ok, thanks.", []),
    ],
)
def test_entities_are_names_then_content_words_never_stop_words(
    text: str, names: list[str]
) -> None:
    assert entities(text) == names


def test_a_state_value_is_a_name_from_its_first_word() -> None:
    assert entities("New Delhi", phrase=True) == ["new delhi", "delhi"]
    assert entities("New Delhi") == ["delhi"]  # a sentence's first word is not a name


def test_the_fan_effect_divides_a_source_among_its_mentions() -> None:
    assert association(2) == 0.5 and association(60) == pytest.approx(1 / 60)
    sources = {"rao": [(1.0, "dentist")], "pune": [(1.0, None)]}
    links = [("rao", "clinic"), ("rao", "dentist"), ("pune", "clinic"), ("rao", "clinic")]
    lifted = spread(sources, {"rao": 2, "pune": 60}, links)
    # a repeated link counts once; the line that brought "rao" is not lifted by it
    assert lifted == {"clinic": pytest.approx(0.5 + 1 / 60)}


def test_an_item_takes_the_best_weight_that_is_not_its_own() -> None:
    sources = {"rao": [(1.0, "a"), (0.4, "b")]}
    lifted = spread(sources, {"rao": 4}, [("rao", "a"), ("rao", "b"), ("rao", "c")])
    assert lifted == {"a": pytest.approx(0.1), "b": pytest.approx(0.25), "c": pytest.approx(0.25)}


def test_ingest_links_lines_to_entities_and_counts_fans(store: SQLiteStore) -> None:
    first, second = store.append_episodes(
        [_write("a", "My dentist is Dr. Rao."), _write("a", "Dr. Rao's clinic is on MG Road.")]
    )
    assert _fan(store, "a", "rao") == 2 and _fan(store, "a", "mg road") == 1
    rao = store.entity_fans("a", ["rao"])["rao"][0]
    assert {episode for _, episode, _ in store.entity_mentions("a", [rao], 10)} == {
        first.id,
        second.id,
    }
    assert (first.id, rao, 2) in store.entities_of("a", [first.id], [])


def test_the_graph_is_isolated_per_space(store: SQLiteStore) -> None:
    store.append_episodes([_write("a", "Dr. Rao's clinic is on MG Road.")])
    store.append_episodes([_write("b", "Dr. Rao plays chess."), _write("b", "Dr. Rao sings.")])
    assert _fan(store, "a", "rao") == 1 and _fan(store, "b", "rao") == 2
    assert _fan(store, "b", "clinic") is None
    rao_b = store.entity_fans("b", ["rao"])["rao"][0]
    assert store.entity_mentions("a", [rao_b], 10) == []


def test_forgetting_removes_links_and_names_no_longer_said(store: SQLiteStore) -> None:
    first, second = store.append_episodes(
        [_write("a", "My dentist is Dr. Rao."), _write("a", "Dr. Rao's clinic is on MG Road.")]
    )
    store.delete_episode("a", second.id)
    assert _fan(store, "a", "rao") == 1 and _fan(store, "a", "mg road") is None
    store.delete_episode("a", first.id)
    assert store.entity_fans("a", ["rao", "dentist"]) == {}


def _dentist() -> NewMemory:
    return NewMemory(
        space="a",
        category="state",
        content="user · dentist: Dr. Rao",
        entity="user",
        attribute="dentist",
        value="Dr. Rao",
    )


def test_a_state_links_its_value_and_goes_with_the_memory(store: SQLiteStore) -> None:
    store.append_episodes([_write("a", "My dentist is Dr. Rao.")])
    memory = store.put_memory(_dentist(), np.eye(DIM, dtype=np.float32)[0], "test", NOW)
    assert _fan(store, "a", "rao") == 2
    assert {entity for _, entity, _ in store.entities_of("a", [], [memory.id])} >= {
        store.entity_fans("a", ["rao"])["rao"][0]
    }
    store.delete_memory("a", memory.id)
    assert _fan(store, "a", "rao") == 1


def test_both_directions_of_a_link_are_index_lookups(store: SQLiteStore) -> None:
    with store.reading() as conn:
        for query in (
            "SELECT line_id FROM entity_lines WHERE entity_id = 1",
            "SELECT entity_id FROM entity_lines WHERE line_id = 1",
            "SELECT entity_id FROM entity_lines WHERE episode_id = 1",
            "SELECT memory_id FROM entity_memories WHERE entity_id = 1",
            "SELECT entity_id FROM entity_memories WHERE memory_id = 'mem-00000001'",
        ):
            plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}"))
            assert "USING" in plan and "SCAN" not in plan, (query, plan)


def test_repair_rebuilds_a_damaged_graph(store: SQLiteStore, tmp_path: Path) -> None:
    store.append_episodes([_write("a", "Dr. Rao's clinic is on MG Road."), _write("a", "Dr. Rao.")])
    before = store.entity_fans("a", ["rao", "mg road", "clinic"])
    assert store.problems() == []
    with sqlite3.connect(tmp_path / "graph.db") as other:
        other.execute("DELETE FROM entity_lines WHERE entity_id IN (SELECT id FROM entities)")
    found = [problem for problem in store.problems() if problem.kind == "graph"]
    assert len(found) == 1 and found[0].space == "a" and "orcamem repair" in found[0].message
    assert store.entity_fans("a", ["rao"]) == {}  # the triggers dropped the unlinked names
    actions = store.repair_derived()
    assert actions == ["rebuilt the entity graph of space 'a' from its lines and memories"]
    assert {name: fan for name, (_, fan) in store.entity_fans("a", list(before)).items()} == {
        name: fan for name, (_, fan) in before.items()
    }
    assert store.problems() == [] and store.repair_derived() == []


def test_a_file_from_before_the_graph_gets_one_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SQLiteStore(path) as old:
        old.ensure_space("a", "test", DIM, NOW)
        old.append_episodes([_write("a", "Dr. Rao's clinic is on MG Road.")])
    with sqlite3.connect(path) as conn:  # what migration 5 left: no graph tables
        for trigger in ("lines_unlink", "memories_unlink", "lines_au", "memories_au"):  # 11, 12
            conn.execute(f"DROP TRIGGER {trigger}")
        for table in ("entity_lines", "entity_memories", "entities"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("ALTER TABLE memories DROP COLUMN event_end")  # migration 7's
        conn.execute("ALTER TABLE spaces DROP COLUMN embedder_spec")  # migration 8's
        conn.execute("ALTER TABLE memories DROP COLUMN pinned")  # migration 9's
        conn.execute("DROP TABLE injected_blocks")
        conn.execute("DROP INDEX episodes_filter")  # migration 10's
        conn.execute("DELETE FROM schema_version WHERE version >= 6")
    with SQLiteStore(path) as reopened:
        assert reopened.schema_version() == LATEST
        assert _fan(reopened, "a", "rao") == 1 and reopened.problems() == []


def _schema(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE name LIKE 'entity_%'"))


def test_a_file_from_migration_10_keeps_its_links_without_foreign_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v10.db"
    monkeypatch.setattr("orcamem.engine.store.sqlite.MIGRATIONS", MIGRATIONS[:10])
    monkeypatch.setattr("orcamem.engine.store.sqlite.LATEST", 10)
    with SQLiteStore(path) as old:  # links written with migration 6's foreign keys
        old.ensure_space("a", "test", DIM, NOW)
        first, second = old.append_episodes(
            [_write("a", "My dentist is Dr. Rao."), _write("a", "Dr. Rao's clinic is on MG Road.")]
        )
        old.put_memory(_dentist(), np.eye(DIM, dtype=np.float32)[0], "test", NOW)
        before = old.entity_fans("a", ["rao", "mg road", "dentist"])
        with old.reading() as conn:
            assert "REFERENCES lines" in _schema(conn)["entity_lines"]
    monkeypatch.undo()
    with SQLiteStore(path) as reopened:
        assert reopened.schema_version() == LATEST
        with reopened.reading() as conn:
            keys = _schema(conn)
        assert "REFERENCES" not in keys["entity_lines"] + keys["entity_memories"]
        assert {"entity_lines_line", "entity_lines_episode", "entity_memories_memory"} <= set(keys)
        assert reopened.entity_fans("a", list(before)) == before and reopened.problems() == []
        reopened.delete_episode("a", second.id)  # the triggers stand where the cascades were
        assert _fan(reopened, "a", "rao") == 2 and _fan(reopened, "a", "mg road") is None
        reopened.delete_episode("a", first.id)
        assert _fan(reopened, "a", "rao") == 1 and reopened.problems() == []


def test_a_link_to_a_missing_line_or_entity_is_found_and_removed(
    store: SQLiteStore, tmp_path: Path
) -> None:
    (episode,) = store.append_episodes([_write("a", "Dr. Rao's clinic is on MG Road.")])
    with sqlite3.connect(tmp_path / "graph.db") as other:  # no foreign key refuses either
        other.execute("INSERT INTO entity_lines VALUES (999999, 1, ?)", (episode.id,))
        other.execute("INSERT INTO entity_memories VALUES (1, 'mem-99999999')")
    found = [problem for problem in store.problems() if problem.kind == "orphans"]
    assert [problem.message.split(" point at")[0] for problem in found] == [
        "1 row(s) of entity_lines",
        "1 row(s) of entity_memories",
    ]
    assert "orcamem repair" in found[0].message and all(p.repairable for p in found)
    actions = store.repair_derived()
    assert "removed 1 entity link row(s) from entity_lines" in actions
    assert "removed 1 entity link row(s) from entity_memories" in actions
    assert store.problems() == [] and _fan(store, "a", "rao") == 1

"""The Store contract: every engine store (sqlite-memory, sqlite-file, postgres) passes every
test here through the ``store`` fixture (``store_target`` names what it is opened from)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from orcamem import EmbedderMismatchError, InvalidInputError, NotFoundError, StoreError
from orcamem._kernel.model import NewEpisode, NewMemory, digest
from orcamem.engine.lexical_context import lexical_context
from orcamem.engine.store import is_postgres, open_store
from orcamem.engine.store.base import BlockEntry, EpisodeWrite, MemoryUpdate, Store
from orcamem.recall.filters import SearchFilter

NOW = "2026-11-01T10:00:00.000000Z"
DIM = 8


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def write(
    space: str,
    text: str,
    *,
    seed: int = 0,
    session: str | None = None,
    lines: list[str] | None = None,
) -> EpisodeWrite:
    lines = lines or [text]
    return EpisodeWrite(
        episode=NewEpisode(
            space=space,
            kind="turn",
            text=text,
            role="user",
            session_id=session,
            context="extra context words",
        ),
        lines=lines,
        vectors=np.stack([unit(seed + i) for i in range(len(lines))]),
        embedder_id="test",
        occurred_at=NOW,
        created_at=NOW,
    )


@pytest.fixture
def ready(store: Store) -> Store:
    store.ensure_space("a", "test", DIM, NOW)
    store.ensure_space("b", "test", DIM, NOW)
    return store


def test_spaces_record_their_embedder(store: Store) -> None:
    info = store.ensure_space("a", "model-x", 8, NOW)
    assert (info.name, info.embedder_id, info.dim) == ("a", "model-x", 8)
    assert store.ensure_space("a", "model-x", 8, NOW).created_at == NOW
    with pytest.raises(EmbedderMismatchError, match="orcamem reembed"):
        store.ensure_space("a", "model-y", 8, NOW)
    with pytest.raises(EmbedderMismatchError):
        store.ensure_space("a", "model-x", 16, NOW)
    assert store.space_info("missing") is None and store.space_row("missing") is None
    assert [s.name for s in store.list_spaces()] == ["a"]
    row = store.space_row("a")
    assert (row.name, row.created_at, row.embedder_id, row.dim) == ("a", NOW, "model-x", 8)


def test_append_and_read_episodes(ready: Store) -> None:
    [first, second] = ready.append_episodes(
        [
            write("a", "One. Two.", lines=["One.", "Two."], session="s1"),
            write("a", "Three.", seed=5, session="s1"),
        ]
    )
    assert second.id > first.id
    assert ready.get_episode("a", first.id).text == "One. Two."
    assert [row.seq for row in ready.episode_lines("a", [first.id])] == [1, 2]
    assert [e.id for e in ready.iter_episodes("a")] == [first.id, second.id]
    assert ready.last_texts("a", ["s1", "s2"]) == {"s1": "Three."}
    assert ready.session_window("a", [first.id, second.id], 2) == {
        first.id: [(second.id, 1)],
        second.id: [(first.id, -1)],
    }
    with pytest.raises(NotFoundError):
        ready.get_episode("b", first.id)  # ids never cross spaces


def test_append_is_all_or_nothing(ready: Store) -> None:
    broken = EpisodeWrite(
        episode=NewEpisode(space="a", kind=None, text="bad"),  # type: ignore[arg-type]
        lines=["bad"],
        vectors=np.stack([unit(1)]),
        embedder_id="test",
        occurred_at=NOW,
        created_at=NOW,
    )
    with pytest.raises(StoreError):
        ready.append_episodes([write("a", "good"), broken])
    assert list(ready.iter_episodes("a")) == []


def test_lexical_search_is_scoped_and_uses_context(ready: Store) -> None:
    [ep] = ready.append_episodes([write("a", "The dentist is Dr Rao.")])
    ready.append_episodes([write("b", "Another dentist lives here.")])
    hits = ready.lexical_lines("a", '"dentist"', 10)
    assert [ready.lines([line])[0].episode_id for line, _ in hits] == [ep.id]
    assert ready.lexical_lines("a", '"context"', 10)  # the lexical context is indexed too
    assert ready.lexical_lines("a", '"nothing"', 10) == []


def test_vector_search_is_scoped(ready: Store) -> None:
    [ep] = ready.append_episodes([write("a", "alpha", seed=11)])
    ready.append_episodes([write("b", "beta", seed=11)])
    hits = ready.vector_lines("a", unit(11), 5)
    assert len(hits) == 1 and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert ready.lines([hits[0][0]])[0].episode_id == ep.id
    assert ready.vector_lines("c", unit(11), 5) == []


def test_delete_episode_removes_lines_everywhere(ready: Store) -> None:
    [ep] = ready.append_episodes([write("a", "erase me please", seed=3)])
    assert ready.vector_lines("a", unit(3), 1)
    ready.delete_episode("a", ep.id)
    assert ready.lexical_lines("a", '"erase"', 5) == []
    assert ready.vector_lines("a", unit(3), 1) == []
    with pytest.raises(NotFoundError):
        ready.delete_episode("a", ep.id)


def test_a_deleted_turn_leaves_the_next_turn_s_context(ready: Store) -> None:
    """Ingest indexes a turn with the one before it as context: after a delete the next turn
    is found by the turn before the deleted one, never by the deleted one's words."""
    texts = ["we met at the harbour", "my password hint is quillfeather", "sounds good to me"]
    written, previous = [], None
    for seed, text in enumerate(texts):
        episode = NewEpisode(space="a", kind="turn", text=text, role="user", session_id="s")
        context = lexical_context(episode, NOW, previous, include_own=False)
        written.append(
            replace(
                write("a", text, seed=seed, session="s"), episode=replace(episode, context=context)
            )
        )
        previous = text
    first, second, third = ready.append_episodes(written)
    [next_line] = ready.line_ids("a", third.id).values()
    assert next_line in {i for i, _ in ready.lexical_lines("a", '"quillfeather"', 5)}
    ready.delete_episode("a", second.id)
    assert ready.lexical_lines("a", '"quillfeather"', 5) == []
    assert {i for i, _ in ready.lexical_lines("a", '"harbour"', 5)} == {
        *ready.line_ids("a", first.id).values(),
        next_line,
    }
    ready.delete_episode("a", first.id)  # no turn before it: the next one keeps its own words
    assert ready.lexical_lines("a", '"harbour"', 5) == []
    assert [i for i, _ in ready.lexical_lines("a", '"sounds"', 5)] == [next_line]


def test_the_lines_of_an_episode_share_one_copy_of_its_text(ready: Store) -> None:
    """Each line's row carried its episode's text: a 1 MB turn of 3,000 sentences was 3,000
    copies, and one sleep of it took the server to 17.8 GB before the kernel killed it."""
    said = "One. Two. Three."
    [ep] = ready.append_episodes([write("a", said, seed=5, lines=["One.", "Two.", "Three."])])
    rows = ready.episode_lines("a", [ep.id])
    assert [row.text for row in rows] == ["One.", "Two.", "Three."]
    assert all(row.episode_text is rows[0].episode_text == said for row in rows)
    later = sorted(ready.line_ids("a", ep.id).values())[1:]  # no first line in the answer
    assert [row.episode_text for row in ready.lines(later)] == [said, said]


def test_rows_read_before_a_delete_are_not_answered_after_it(ready: Store) -> None:
    [ep] = ready.append_episodes([write("a", "gone soon", seed=4, lines=["gone", "soon"])])
    ids = sorted(ready.line_ids("a", ep.id).values())
    assert sorted(row.id for row in ready.lines(ids)) == ids
    assert [row.id for row in ready.episode_lines("a", [ep.id], first_only=True)] == ids[:1]
    ready.delete_episode("a", ep.id)
    assert ready.lines(ids) == []
    assert ready.episode_lines("a", [ep.id], first_only=True) == []


def test_memories_lifecycle(ready: Store) -> None:
    first = ready.put_memory(
        NewMemory(
            space="a",
            content="Lives in Pune",
            category="state",
            entity="user",
            attribute="home city",
            value="Pune",
        ),
        unit(20),
        "test",
        NOW,
    )
    assert first.id.startswith("mem-") and len(first.id) == 12 and first.active
    second = ready.put_memory(
        NewMemory(space="a", content="Lives in Bangalore"), unit(21), "test", NOW
    )
    updated = ready.update_memory(
        "a", first.id, MemoryUpdate(active=False, superseded_by=second.id), NOW
    )
    assert not updated.active and updated.superseded_by == second.id
    assert [m.id for m in ready.list_memories("a")] == [second.id]
    assert [m.id for m in ready.list_memories("a", include_inactive=True)] == [first.id, second.id]
    assert ready.lexical_memories("a", '"pune"', 5) == []  # inactive ones are not candidates
    assert [k for k, _ in ready.vector_memories("a", unit(21), 5)] == [second.id]
    ready.mark_accessed("a", [second.id], NOW)
    assert ready.get_memory("a", second.id).access_count == 1
    with pytest.raises(NotFoundError):
        ready.get_memory("b", second.id)
    ready.delete_memory("a", second.id)
    assert ready.vector_memories("a", unit(21), 5) == []
    kept = ready.get_memory("a", first.id)  # what it superseded stays closed, pointing nowhere
    assert (kept.active, kept.superseded_by) == (False, None)
    with pytest.raises(NotFoundError):
        ready.delete_memory("a", second.id)


def test_deleting_a_middle_state_relinks_its_predecessor(ready: Store) -> None:
    ids = [
        ready.put_memory(NewMemory(space="a", content=f"Lives in {city}"), unit(n), "test", NOW).id
        for n, city in enumerate(("Pune", "Bangalore", "Mysore"), start=30)
    ]
    for older, newer in itertools.pairwise(ids):
        ready.update_memory("a", older, MemoryUpdate(active=False, superseded_by=newer), NOW)
    ready.delete_memory("a", ids[1])
    pune = ready.get_memory("a", ids[0])
    assert (pune.active, pune.superseded_by) == (False, ids[2])


def test_prohibited_filter(ready: Store) -> None:
    ready.put_memory(
        NewMemory(space="a", content="never do X", prohibited=True), unit(1), "test", NOW
    )
    ready.put_memory(NewMemory(space="a", content="a fact"), unit(2), "test", NOW)
    assert [m.content for m in ready.list_memories("a", prohibited=True)] == ["never do X"]


def test_memories_that_rank_alike_go_in_the_order_they_were_written(ready: Store) -> None:
    """Recall ranks the memories once and activation takes its seeds from the top of that
    ranking, so a shorter ranking must be a prefix of a longer one: ties in write order, on
    every store (memory ids are random, so an id order would change from run to run)."""
    made = [
        ready.put_memory(
            NewMemory(space="a", content="Moved to Pune"), unit(40 + i), "test", NOW
        ).id
        for i in range(6)
    ]
    ranked = [key for key, _ in ready.lexical_memories("a", '"pune"', 6)]
    assert ranked == made
    assert [key for key, _ in ready.lexical_memories("a", '"pune"', 2)] == made[:2]


def test_activation_seeds_in_one_call_are_the_fans_and_the_links(ready: Store) -> None:
    """``entity_sources`` answers what ``entity_fans`` and ``entities_of`` answer (one round
    trip on PostgreSQL), within the space."""
    first, second = ready.append_episodes(
        [write("a", "My dentist is Dr. Rao."), write("a", "Dr. Rao's clinic is on MG Road.")]
    )
    ready.append_episodes([write("b", "Dr. Rao plays chess in Pune.")])
    state = ready.put_memory(
        NewMemory(space="a", category="state", content="user · dentist: Dr. Rao",
                  entity="user", attribute="dentist", value="Dr. Rao"),
        unit(50), "test", NOW,
    )  # fmt: skip
    names, episodes, memories = ["rao", "pune", "mg road"], [first.id, second.id], [state.id]
    fans, links = ready.entity_sources("a", names, episodes, memories)
    assert fans == ready.entity_fans("a", names) and set(fans) == {"rao", "mg road"}
    assert sorted(links, key=str) == sorted(ready.entities_of("a", episodes, memories), key=str)
    assert {source for source, _, _ in links} == {first.id, second.id, state.id}
    assert ready.entity_sources("b", names, episodes, memories)[1] == []
    assert ready.entity_sources("a", [], [], []) == ({}, [])


def test_replace_vectors_switches_the_embedder(ready: Store) -> None:
    [ep] = ready.append_episodes([write("a", "text", seed=1)])
    line = ready.episode_lines("a", [ep.id])[0].id
    fresh = np.ones(4, dtype=np.float32) / 2
    assert ready.replace_vectors("a", "other", 4, {line: fresh}, {}) == ([], [])
    info = ready.space_info("a")
    assert (info.embedder_id, info.dim) == ("other", 4)
    assert ready.vector_lines("a", fresh, 1)[0][0] == line


def test_replace_vectors_writes_nothing_unless_it_covers_the_space(ready: Store) -> None:
    """A line or memory written while a re-embed embedded would keep the old embedder's
    vector in a space recording the new one: the swap names what it lacks instead."""
    [ep] = ready.append_episodes([write("a", "text", seed=1)])
    [line] = ready.line_ids("a", ep.id).values()
    [later] = ready.append_episodes([write("a", "said meanwhile", seed=2)])
    [late_line] = ready.line_ids("a", later.id).values()
    kept = ready.put_memory(NewMemory(space="a", content="A fact"), unit(3), "test", NOW)
    fresh = np.ones(4, dtype=np.float32) / 2
    lacking = ready.replace_vectors("a", "other", 4, {line: fresh}, {})
    assert lacking == ([late_line], [kept.id])
    assert (ready.space_info("a").embedder_id, ready.space_info("a").dim) == ("test", DIM)
    assert ready.replace_vectors(
        "a", "other", 4, {line: fresh, late_line: fresh}, {kept.id: fresh}
    ) == ([], [])
    assert ready.space_info("a").dim == 4
    assert ready.replace_vectors("a", "other", 4, {line: fresh}, {}, partial=True) == ([], [])


def test_noise_floor_is_a_percentile_of_random_pairs(ready: Store) -> None:
    ready.append_episodes([write("a", f"t{i}", seed=100 + i) for i in range(40)])
    floor = ready.noise_floor("a", 50.0)
    assert -0.5 < floor < 0.5
    assert ready.noise_floor("a", 90.0) > floor
    assert ready.noise_floor("empty", 50.0) == 0.0


def test_episodes_cannot_be_updated(ready: Store) -> None:
    [ep] = ready.append_episodes([write("a", "original")])
    with pytest.raises(StoreError, match="append-only"), ready.writing() as conn:
        conn.execute(f"UPDATE episodes SET text = 'rewritten' WHERE id = {int(ep.id)}")
    assert ready.get_episode("a", ep.id).text == "original"


def _migrations(target: str) -> list[int]:
    if is_postgres(target):
        from orcamem.engine.store.postgres.schema import MIGRATIONS
    else:
        from orcamem.engine.store.migrations import MIGRATIONS
    return [number for number, _, _ in MIGRATIONS]


def test_migrations_apply_once(store_target: str) -> None:
    for _ in range(2):
        with open_store(store_target) as opened:
            assert opened.schema_version() == _migrations(store_target)[-1]
            with opened.reading() as conn:
                rows = conn.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()
            assert [r[0] for r in rows] == _migrations(store_target)


def test_nested_writes_are_savepoints(ready: Store) -> None:
    with pytest.raises(RuntimeError), ready.writing():
        ready.append_episodes([write("a", "outer")])
        raise RuntimeError("publish failed")
    assert list(ready.iter_episodes("a")) == []  # the nested append rolled back too
    with ready.writing():
        ready.append_episodes([write("a", "kept")])
        with pytest.raises(NotFoundError):
            ready.delete_episode("a", 999)  # inner failure, outer goes on
    assert [e.text for e in ready.iter_episodes("a")] == ["kept"]


def test_a_space_records_the_spec_that_rebuilds_its_embedder(store: Store) -> None:
    store.ensure_space("a", "test", DIM, NOW, spec="static")
    assert store.space_info("a").embedder_spec == "static"
    store.replace_vectors("a", "other", DIM, {}, {}, spec="st:other")
    info = store.space_info("a")
    assert (info.embedder_id, info.embedder_spec) == ("other", "st:other")
    row = store.space_row("a")
    assert (row.embedder_id, row.embedder_spec) == ("other", "st:other")


def test_last_activity_is_the_newest_episode_or_memory_change(ready: Store) -> None:
    assert ready.space_info("a").last_activity is None
    ready.append_episodes([write("a", "first")])
    assert ready.space_info("a").last_activity == NOW
    later = "2026-11-02T10:00:00.000000Z"
    ready.put_memory(NewMemory(space="a", content="a fact"), unit(3), "test", later)
    assert ready.space_info("a").last_activity == later
    assert ready.space_info("b").last_activity is None


def test_delete_space_takes_everything_of_that_space_and_nothing_else(ready: Store) -> None:
    ready.append_episodes([write("a", "alpha words", seed=1), write("b", "beta words", seed=2)])
    ready.put_memory(NewMemory(space="a", content="a fact"), unit(3), "test", NOW)
    gone = ready.delete_space("a")
    assert gone["episodes"] == 1 and gone["memories"] == 1
    assert ready.space_info("a") is None and [s.name for s in ready.list_spaces()] == ["b"]
    assert ready.lexical_lines("a", "alpha", 5) == [] and ready.vector_lines("a", unit(1), 5) == []
    assert [e.text for e in ready.page_episodes("b")] == ["beta words"]
    with pytest.raises(NotFoundError, match="orcamem spaces"):
        ready.delete_space("a")


def test_a_write_to_a_deleted_space_starts_it_anew_and_keeps_its_embedder_rule(
    ready: Store,
) -> None:
    ready.delete_space("a")
    [ep] = ready.append_episodes([write("a", "again")])
    assert ready.space_info("a").episodes == 1 and ep.space == "a"
    ready.delete_space("a")
    ready.ensure_space("a", "another", DIM, NOW)
    with pytest.raises(EmbedderMismatchError):
        ready.append_episodes([write("a", "mixed vectors")])
    with pytest.raises(EmbedderMismatchError):
        ready.put_memory(NewMemory(space="a", content="x"), unit(4), "test", NOW)
    assert ready.space_info("a").episodes == 0


def test_key_rows_keep_hashes_list_in_insertion_order_and_revoke_once(store: Store) -> None:
    # created in the same instant: the list still comes in the order they were made
    for key_id, name in (("k-2", "second"), ("k-1", "first-by-id"), ("k-3", "third")):
        store.keys.add(key_id, f"hash-{key_id}", name, ["b", "a"], key_id == "k-3", NOW)
    assert [k["name"] for k in store.keys.list()] == ["second", "first-by-id", "third"]
    assert store.keys.active("hash-k-3") == ("k-3", "hash-k-3", ["a", "b"], True)
    assert store.keys.revoke("k-3", NOW) and not store.keys.revoke("k-3", NOW)
    assert store.keys.active("hash-k-3") is None and store.keys.active("nope") is None
    assert store.keys.list()[2]["revoked_at"] == NOW


def test_note_rows_replace_read_and_delete(store: Store) -> None:
    assert store.notes.get("nightly") is None
    store.notes.put("nightly", "first", NOW)
    assert store.notes.put("nightly", "second", NOW).note == "second"
    assert store.notes.get("nightly").note == "second"
    assert store.notes.delete("nightly") and not store.notes.delete("nightly")


# -- pinned memories and the log of injected blocks (issue 17) ---------------------------------


def test_a_pin_is_stored_changed_and_restored_as_exported(ready: Store) -> None:
    made = ready.put_memory(NewMemory(space="a", content="Lives in Pune"), unit(30), "test", NOW)
    assert made.pinned is False
    pinned = ready.update_memory("a", made.id, MemoryUpdate(pinned=True), NOW)
    assert pinned.pinned is True and ready.get_memory("a", made.id).pinned is True
    assert ready.update_memory("a", made.id, MemoryUpdate(active=False), NOW).pinned is True
    restored = ready.restore_memory(replace(pinned, space="b"), unit(30))
    assert ready.get_memory("b", restored).pinned is True
    assert ready.update_memory("a", made.id, MemoryUpdate(pinned=False), NOW).pinned is False


def _entry(space: str, at: str, query: str = "q") -> BlockEntry:
    return BlockEntry(
        space=space,
        created_at=at,
        surface="sdk",
        item_ids=("mem-00000001", "line-3"),
        tokens=12,
        query_hash=f"sha256:{query}",
    )


def test_the_block_log_keeps_the_newest_per_space_within_its_retention(ready: Store) -> None:
    for day in range(1, 6):
        ready.log_block(
            _entry("a", f"2026-11-0{day}T10:00:00.000000Z", f"q{day}"), keep=3, since=""
        )
    ready.log_block(_entry("b", "2026-11-01T10:00:00.000000Z"), keep=3, since="")
    kept = ready.injected_blocks("a")
    assert [e.query_hash for e in kept] == ["sha256:q5", "sha256:q4", "sha256:q3"]  # newest first
    assert kept[0].item_ids == ("mem-00000001", "line-3") and kept[0].query is None
    assert [e.space for e in ready.injected_blocks("b")] == ["b"]  # another space's bound
    ready.log_block(_entry("a", "2026-11-06T10:00:00.000000Z", "q6"), keep=3, since="2026-11-05")
    assert [e.query_hash for e in ready.injected_blocks("a")] == ["sha256:q6", "sha256:q5"]
    assert len(ready.injected_blocks("a", limit=1)) == 1
    ready.delete_space("a")
    assert ready.injected_blocks("a") == [] and len(ready.injected_blocks("b")) == 1


def _episode(
    text: str, *, seed: int, session: str, role: str, day: int, meta: dict
) -> EpisodeWrite:
    when = f"2026-10-{day:02d}T09:00:00.000000Z"
    return EpisodeWrite(
        episode=NewEpisode(
            space="a", kind="turn", text=text, role=role, session_id=session, meta=meta
        ),
        lines=[text],
        vectors=np.stack([unit(seed)]),
        embedder_id="test",
        occurred_at=when,
        created_at=NOW,
    )


@pytest.fixture
def filtered(ready: Store) -> tuple[Store, dict[str, int]]:
    """Six turns about a harbour in space a (two sessions, two roles, six days, two sources)
    and one in space b; returns the line id of each text."""
    texts = [
        ("harbour boats at dawn", "s1", "user", 1, {"source": "chat"}),
        ("harbour harbour fog", "s1", "assistant", 2, {"source": "import"}),
        ("the harbour wall", "s2", "user", 3, {"source": "chat", "app": "cli"}),
        ("harbour lights", "s2", "assistant", 4, {"source": "chat"}),
        ("harbour harbour harbour", "s2", "user", 5, {"source": 5}),
        ("harbour market", "s1", "user", 6, {"source": "import"}),
    ]
    episodes = ready.append_episodes(
        [
            _episode(text, seed=40 + i, session=s, role=r, day=d, meta=m)
            for i, (text, s, r, d, m) in enumerate(texts)
        ]
    )
    ready.append_episodes([write("b", "harbour of space b", seed=40, session="s1")])
    ids = {ep.text: ready.episode_lines("a", [ep.id])[0].id for ep in episodes}
    return ready, ids


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            {"session": "s1"},
            {"harbour boats at dawn", "harbour harbour fog", "harbour market"},
        ),
        ({"role": "assistant"}, {"harbour harbour fog", "harbour lights"}),
        (
            {"since": "2026-10-02T00:00:00Z", "until": "2026-10-04T09:00:00Z"},
            {"harbour harbour fog", "the harbour wall", "harbour lights"},
        ),
        ({"metadata": {"source": "import"}}, {"harbour harbour fog", "harbour market"}),
        ({"metadata": {"source": "chat", "app": "cli"}}, {"the harbour wall"}),
        ({"metadata": {"source": "5"}}, set()),  # a number is not the string "5"
        ({"session": "s2", "role": "user"}, {"the harbour wall", "harbour harbour harbour"}),
    ],
)
def test_a_filter_is_in_both_candidate_queries_and_keeps_their_order(
    filtered: tuple[Store, dict[str, int]], where: dict, expected: set[str]
) -> None:
    store, ids = filtered
    text_of = {line: text for text, line in ids.items()}
    scope = SearchFilter.of(where)
    for unfiltered, narrowed in (
        (store.lexical_lines("a", '"harbour"', 50), store.lexical_lines(
            "a", '"harbour"', 50, where=scope
        )),
        (store.vector_lines("a", unit(44), 50), store.vector_lines(
            "a", unit(44), 50, where=scope
        )),
    ):  # fmt: skip
        assert {text_of[line] for line, _ in narrowed} == expected
        kept = [(line, score) for line, score in unfiltered if line in dict(narrowed)]
        assert [line for line, _ in narrowed] == [line for line, _ in kept]
        assert [score for _, score in narrowed] == pytest.approx([score for _, score in kept])
    assert len(store.vector_lines("a", unit(44), 1, where=scope)) == min(1, len(expected))


def test_an_empty_filter_is_the_unfiltered_query(filtered: tuple[Store, dict[str, int]]) -> None:
    store, _ = filtered
    empty = SearchFilter()
    assert store.lexical_lines("a", '"harbour"', 3, where=empty) == store.lexical_lines(
        "a", '"harbour"', 3
    )
    assert store.vector_lines("a", unit(44), 3, where=empty) == store.vector_lines("a", unit(44), 3)
    assert store.lexical_memories("a", '"harbour"', 3, where=empty) == store.lexical_memories(
        "a", '"harbour"', 3
    )


def test_a_filter_never_reaches_another_space(filtered: tuple[Store, dict[str, int]]) -> None:
    store, ids = filtered
    scope = SearchFilter(session="s1")
    found = {line for line, _ in store.lexical_lines("a", '"harbour"', 50, where=scope)}
    found |= {line for line, _ in store.vector_lines("a", unit(40), 50, where=scope)}
    assert found <= set(ids.values())
    assert store.vector_lines("c", unit(40), 5, where=scope) == []


def test_memories_filter_by_session_category_and_event_date(ready: Store) -> None:
    made = {}
    for seed, (content, category, session, day) in enumerate(
        [
            ("harbour fact", "fact", "s1", None),
            ("harbour trip", "event", "s1", "2026-09-01T00:00:00Z"),
            ("harbour preference", "preference", "s2", None),
        ]
    ):
        record = ready.put_memory(
            NewMemory(
                space="a",
                content=content,
                category=category,
                session_id=session,
                event_date=day and "2026-09-01T00:00:00.000000Z",
            ),
            unit(60 + seed),
            "test",
            NOW,
        )
        made[record.id] = content

    def found(where: dict) -> tuple[set[str], set[str]]:
        scope = SearchFilter.of(where)
        lexical = {made[key] for key, _ in ready.lexical_memories("a", '"harbour"', 9, where=scope)}
        vector = {made[key] for key, _ in ready.vector_memories("a", unit(61), 9, where=scope)}
        return lexical, vector

    assert found({"session": "s1"}) == ({"harbour fact", "harbour trip"},) * 2
    assert found({"category": "event"}) == ({"harbour trip"},) * 2
    assert found({"until": "2026-10-01T00:00:00Z"}) == ({"harbour trip"},) * 2  # its event date
    assert (
        found({"since": "2026-10-01T00:00:00Z", "session": "s2"}) == ({"harbour preference"},) * 2
    )


def test_a_space_reports_the_bytes_its_rows_hold(ready: Store) -> None:
    assert ready.space_info("a").size_bytes == 0
    text = "Zoë moved to Łódź. She likes it."  # two lines; non-ASCII counts in UTF-8 bytes
    ready.append_episodes([write("a", text, lines=["Zoë moved to Łódź.", "She likes it."])])
    ready.put_memory(NewMemory(space="a", content="Lives in Łódź"), unit(3), "test", NOW)
    expected = len(text.encode()) + len("Lives in Łódź".encode()) + 4 * DIM * (2 + 1)
    assert ready.space_info("a").size_bytes == expected
    assert ready.space_info("b").size_bytes == 0  # another space's rows are not counted


def test_find_episodes_names_every_stored_episode_of_each_key(ready: Store) -> None:
    """A key said twice is two episodes, and the role and kind are part of it: an older
    backup's user "Yes." is not the assistant's "Yes." of the same session and time."""
    first, again, noted = ready.append_episodes(
        [write("a", "Same words.", session="s1"), write("a", "Same words.", session="s1"),
         write("a", "A note.")]
    )  # fmt: skip
    ready.append_episodes([write("b", "Same words.", session="s1")])
    same = (digest("Same words."), NOW, "s1", None, "user", "turn")
    note = (digest("A note."), NOW, None, None, "user", "turn")
    missing = [
        (digest("Same words."), NOW, "s2", None, "user", "turn"),
        (digest("Other."), NOW, "s1", None, "user", "turn"),
        (digest("Same words."), NOW, "s1", None, "assistant", "turn"),
        (digest("Same words."), NOW, "s1", None, "user", "note"),
    ]
    assert again.id > first.id
    assert ready.find_episodes("a", [same, note, same, *missing]) == {
        same: [first.id, again.id],
        note: [noted.id],
    }
    assert ready.find_episodes("b", [note]) == {}
    assert ready.find_episodes("a", []) == {}


def test_a_space_deleted_by_another_process_never_answers_from_its_old_rows(
    store_target: str,
) -> None:
    """PostgreSQL started a re-made space at vector epoch 0 again: a process that had read
    the deleted space saw the epoch unchanged and kept answering its lines (a GDPR delete
    leaked on every other replica until it restarted)."""
    if store_target == ":memory:":
        pytest.skip("one process's own database: no other process to hold it")
    from orcamem import Memory

    with Memory(store_target) as holder, Memory(store_target) as other:
        for i in range(5):
            holder.add(f"Secret {i}: the vault code of alice is {1000 + i}", space="alice")
        assert holder.search("vault code", space="alice").hits
        other.delete_space("alice")
        holder.add("A brand new note about gardening", space="alice")
        assert [h.text for h in holder.search("vault code", space="alice").hits] == []
        assert "vault" not in holder.recall("What is the vault code?", space="alice")


def test_a_nul_in_an_episode_s_meta_leaves_metadata_filters_working(store_target: str) -> None:
    """PostgreSQL cast each row's meta to jsonb, which holds no NUL: one episode with one in
    its meta made every metadata-filtered search of the space a StoreError."""
    from orcamem import Memory

    with Memory(store_target) as mem:
        mem.add("We deploy the API with Helm.", meta={"source": "wiki"})
        mem.add("A pasted log line.", meta={"source": "wiki", "raw": "a\x00b"})
        hits = mem.search("deploy", filters={"metadata": {"source": "wiki"}}).hits
        assert [h.text for h in hits][:1] == ["We deploy the API with Helm."]
        with pytest.raises(InvalidInputError, match="lone surrogate"):
            mem.add("half an emoji", meta={"raw": "\ud83d"})


def test_a_forgotten_turn_s_words_leave_the_summaries_of_its_memories(store_target: str) -> None:
    """A consolidated memory keeps the lines it was distilled from as its summary, searched
    with it: after the turn was forgotten, its words still found the memory."""
    from orcamem import Memory

    with Memory(store_target) as mem:
        said = mem.observe(
            "user", "I moved to Lisbon last spring for a pharmacy job.", session_id="s"
        )
        mem.observe("user", "I really love my new flat.", session_id="s")
        mem.sleep()
        [moved] = [m for m in mem.facts() if "Lisbon" in m.content]
        assert moved.summary == said.text
        assert [i for i, _ in mem.store.lexical_memories("default", '"pharmacy"', 5)] != []
        mem.forget(said.id)
        assert mem.store.lexical_memories("default", '"pharmacy"', 5) == []
        assert mem.store.get_memory("default", moved.id).summary is None  # the fact stays
        assert mem.search("Where do I live?").hits

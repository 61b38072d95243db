"""Curating what memory holds (issue 17): edit a memory in place (a new version, history
kept), pin one (no decay, never injected where it is unrelated), and the opt-in, bounded log
of the blocks actually injected before turns."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from orcamem import Config, InvalidInputError, Memory, NotFoundError
from orcamem._kernel.clock import FrozenClock
from orcamem.engine import PackConfig, StorageConfig

FACTS = (
    "My home city is Bangalore.", "I work as a nurse at the city hospital.",
    "My daughter is allergic to peanuts.", "I drive a blue Honda Civic.",
    "My partner teaches chemistry.", "I am training for a half marathon.",
    "My favourite band is Indian Ocean.", "Our cat is called Pepper.",
    "I am learning Japanese on Thursdays.", "My dentist appointment is in March.",
)  # fmt: skip
UNRELATED = ("What is the capital of France?", "Explain quicksort.", "How are you?")


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def facts(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    """A memory-only space of ten explicit facts (the test_recall abstention space)."""
    with Memory(tmp_path / "facts.db", clock=clock) as memory:
        for fact in FACTS:
            memory.remember(fact)
        yield memory


def by_content(memory: Memory, text: str) -> str:
    return next(m.id for m in memory.facts() if m.content == text)


# -- edit in place -------------------------------------------------------------------------------


def test_an_edit_is_a_new_version_that_supersedes_the_old_one(mem: Memory) -> None:
    old = mem.remember(
        "I live in Pune.", category="state", entity="user", attribute="home_city", value="Pune"
    )
    mem.pin(old.id)
    new = mem.edit_memory(old.id, "I live in Mumbai.", importance=0.9)
    assert new.id != old.id and new.content == "I live in Mumbai." and new.active
    assert (new.entity, new.attribute, new.value) == ("user", "home_city", None)
    assert new.importance == 0.9 and new.source == "explicit" and new.pinned  # the pin follows
    closed = mem.memory(old.id)
    assert (closed.active, closed.superseded_by, closed.content) == (False, new.id, old.content)
    assert [m.id for m in mem.facts()] == [new.id]
    assert [m.id for m in mem.facts(include_history=True)] == [old.id, new.id]
    assert mem.audit_log()[0]["item"] == {"edited": old.id, "into": new.id, "content": old.content}
    # re-indexed at once, by its words and its vector; the old words find no current memory
    assert [h.id for h in mem.search("Mumbai").hits if h.memory] == [new.id]
    assert "Mumbai" in mem.recall("Where do I live?") and "Pune" not in mem.recall("Pune")


def test_an_edit_keeps_the_value_while_the_text_is_the_same(mem: Memory) -> None:
    old = mem.remember(
        "I live in Pune.", category="state", entity="user", attribute="home_city", value="Pune"
    )
    assert mem.edit_memory(old.id, "I live in Pune.", confidence=0.5).value == "Pune"


def test_only_the_current_version_can_be_edited_or_pinned(mem: Memory) -> None:
    old = mem.remember("The user prefers tea.", category="preference")
    new = mem.edit_memory(old.id, "The user prefers green tea.")
    for act in (lambda: mem.edit_memory(old.id, "coffee"), lambda: mem.pin(old.id)):
        with pytest.raises(InvalidInputError, match=f"closed by {new.id}.*{new.id} instead"):
            act()
    closed = mem.remember("A fact to close.")
    mem.close_memory(closed.id)
    with pytest.raises(InvalidInputError, match="no longer current"):
        mem.edit_memory(closed.id, "changed")
    assert len(mem.facts(include_history=True)) == 3  # nothing was written


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"text": "   "}, "memory text"),
        ({"text": "my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"}, "secret"),
        ({"text": "ok", "importance": 2}, "importance=2"),
        ({"text": "ok", "category": "flavour"}, "category='flavour'"),
        ({"text": "ok", "category": "rule"}, "not a rule"),
        ({"text": "ok", "tags": "one"}, "tags"),
    ],
)
def test_a_bad_edit_is_refused_and_changes_nothing(mem: Memory, change: dict, says: str) -> None:
    old = mem.remember("The user prefers tea.", category="preference")
    text = change.pop("text")
    with pytest.raises(InvalidInputError, match=says):
        mem.edit_memory(old.id, text, **change)
    assert mem.facts(include_history=True) == [mem.memory(old.id)] and mem.memory(old.id).active


def test_a_rule_stays_a_rule_and_ids_are_checked(mem: Memory) -> None:
    rule = mem.forbid("Never suggest peanuts.")
    edited = mem.edit_memory(rule.id, "Never suggest peanuts or cashews.")
    assert edited.prohibited and edited.category == "rule"
    with pytest.raises(InvalidInputError, match="forbidden rule"):
        mem.edit_memory(edited.id, "x", category="fact")
    with pytest.raises(InvalidInputError, match="not a memory id"):
        mem.edit_memory("ep-1", "x")
    with pytest.raises(NotFoundError):
        mem.edit_memory("mem-00000000", "x")


# -- pin -------------------------------------------------------------------------------------------


def test_a_pinned_memory_does_not_decay_and_ranks_first_where_relevant(
    facts: Memory, clock: FrozenClock
) -> None:
    facts.remember("My home city used to be Mysore.")
    pinned = facts.pin(by_content(facts, "My home city used to be Mysore."))
    assert pinned.pinned and facts.pin(pinned.id).updated_at == pinned.updated_at  # no-op
    clock.advance(days=365)
    hits = {h.id: h for h in facts.search("Which city is my home?").hits if h.memory}
    kept, other = hits[pinned.id], hits[by_content(facts, "My home city is Bangalore.")]
    signals = facts.config.signals
    assert kept.breakdown["pinned"] == signals.pinned_weight
    for name in ("recency", "hawkes", "ebbinghaus"):  # a year on: the others have decayed
        assert kept.breakdown[name] > 10 * other.breakdown[name], name
    assert kept.breakdown["recency"] == pytest.approx(signals.recency_weight)
    assert next(iter(hits)) == pinned.id  # ranked first
    facts.pin(pinned.id, False)
    unpinned = next(h for h in facts.search("Which city is my home?").hits if h.id == pinned.id)
    assert "pinned" not in unpinned.breakdown
    assert unpinned.breakdown["ebbinghaus"] < kept.breakdown["ebbinghaus"] / 10


def test_a_pinned_memory_is_never_injected_where_it_is_unrelated(facts: Memory) -> None:
    for memory in facts.facts():
        facts.pin(memory.id)
    for query in UNRELATED:
        assert facts.search(query).hits == [], query
        assert facts.build_context(ask(query)) == ask(query), query
    assert "Bangalore" in facts.recall("Which city is my home?")


def test_a_pin_survives_export_and_import(mem: Memory, tmp_path: Path) -> None:
    kept = mem.pin(mem.remember("Our cat is called Pepper.").id)
    out = io.StringIO()
    mem.export(out)
    with Memory(tmp_path / "copy.db") as copy:
        copy.import_jsonl(out.getvalue().splitlines())
        assert copy.memory(kept.id).pinned is True
    with pytest.raises(InvalidInputError, match="pinned=1"):
        mem.pin(kept.id, 1)  # type: ignore[arg-type]


def test_an_export_says_version_2_and_a_version_1_file_without_pins_still_imports(
    mem: Memory, tmp_path: Path
) -> None:
    import json

    mem.remember("Our cat is called Pepper.")
    out = io.StringIO()
    mem.export(out)
    lines = out.getvalue().splitlines()
    assert json.loads(lines[0])["version"] == 2
    older = [json.dumps({**json.loads(lines[0]), "version": 1})]
    for line in lines[1:]:
        record = json.loads(line)
        record.pop("pinned", None)  # what orcamem wrote before memories carried a pin
        older.append(json.dumps(record))
    with Memory(tmp_path / "old.db") as copy:
        assert copy.import_jsonl(older)["memories"] == 1
        assert [m.pinned for m in copy.facts(include_history=True)] == [False]
    newer = [json.dumps({**json.loads(lines[0]), "version": 3}), *lines[1:]]
    with Memory(tmp_path / "new.db") as copy:
        with pytest.raises(
            InvalidInputError, match=r"reads export versions 1, 2 .*upgrade orcamem"
        ):
            copy.import_jsonl(newer)
        assert copy.facts(include_history=True) == []


def test_a_memory_reads_its_own_recalls_in_facts_memory_and_export(mem: Memory) -> None:
    """access_count is written off the hot path; this Memory's next read waits for it."""
    import json
    import threading

    kept = mem.remember("Our cat is called Pepper.", category="preference")
    gate = threading.Event()
    mark = mem.store.mark_accessed

    def slow_mark(*args: object) -> None:
        gate.wait(30)  # released only after the read below has started
        mark(*args)

    mem.store.mark_accessed = slow_mark  # type: ignore[method-assign]
    assert mem.context([{"role": "user", "content": "What is my cat called?"}]).block
    threading.Timer(0.2, gate.set).start()
    assert mem.memory(kept.id).access_count == 1
    assert [m.access_count for m in mem.facts()] == [1]
    out = io.StringIO()
    mem.export(out)
    assert [json.loads(line)["access_count"] for line in out.getvalue().splitlines()[1:]] == [1]


# -- the injected-block log ------------------------------------------------------------------------


def logging(memory: Memory, **pack: object) -> None:
    memory.config = Config(pack=PackConfig(log_blocks=True, **pack))  # type: ignore[arg-type]


def test_the_log_is_off_by_default_and_writes_nothing(facts: Memory) -> None:
    assert facts.build_context(ask("Which city is my home?"))[0]["role"] == "system"
    assert facts.injected_blocks() == []


def test_each_injected_block_is_logged_once_without_its_text(
    facts: Memory, clock: FrozenClock
) -> None:
    logging(facts)
    built = facts.context(ask("Which city is my home?"))
    facts.build_context(ask(UNRELATED[0]))  # nothing injected: nothing logged
    facts.recall("Which city is my home?")  # a preview, not an injection
    [entry] = facts.injected_blocks()
    home = by_content(facts, "My home city is Bangalore.")
    assert (entry.space, entry.surface, entry.created_at) == (
        "default",
        "sdk",
        "2026-11-01T10:00:00.000000Z",
    )
    assert home in entry.item_ids and entry.tokens > 10
    assert entry.query_hash.startswith("sha256:") and "city" not in entry.query_hash
    assert entry.query is None and entry.block is None
    assert "Bangalore" not in repr(entry) and built.block
    facts.recall("Which city is my home?", surface="mcp")
    assert [e.surface for e in facts.injected_blocks()] == ["mcp", "sdk"]
    assert facts.injected_blocks()[0].query_hash == entry.query_hash  # equal queries match
    with pytest.raises(InvalidInputError, match="surface='cli'"):
        facts.context(ask("Which city is my home?"), surface="cli")


def test_the_query_and_block_are_kept_only_with_the_second_switch(facts: Memory) -> None:
    logging(facts, log_block_content=True)
    built = facts.context(ask("Which city is my home?"))
    [entry] = facts.injected_blocks()
    assert entry.query == "Which city is my home?" and entry.block == built.block


def test_the_log_is_bounded_per_space_and_by_its_retention(
    facts: Memory, clock: FrozenClock
) -> None:
    logging(facts, log_blocks_keep=3, log_blocks_days=2.0)
    for _ in range(5):
        facts.context(ask("Which city is my home?"))
        clock.advance(hours=1)
    assert len(facts.injected_blocks()) == 3
    facts.remember("The office is in Koramangala.", space="work")
    facts.context(ask("Where is the office?"), space="work")
    clock.advance(days=2, hours=1)  # the first space's entries are now past the retention
    facts.context(ask("What is our cat called?"))
    [only] = facts.injected_blocks()
    assert only.created_at == "2026-11-03T16:00:00.000000Z"
    assert len(facts.injected_blocks(space="work")) == 1  # each space its own bound
    facts.delete_space("work")
    assert facts.injected_blocks(space="work") == []


def test_a_log_that_cannot_be_written_costs_the_turn_nothing(
    tmp_path: Path, clock: FrozenClock, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "busy.db"
    config = Config(pack=PackConfig(log_blocks=True), storage=StorageConfig(busy_timeout_ms=0))
    with Memory(path, clock=clock, config=config) as memory:
        for fact in FACTS:
            memory.remember(fact)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        try:
            built = memory.context(ask("Which city is my home?"))
            assert memory.injected_blocks() == []  # its write failed while the lock was held
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert "Bangalore" in built.block  # the block still reached the turn
        assert "side effect failed" in caplog.text and "locked" in caplog.text

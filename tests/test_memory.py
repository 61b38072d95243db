"""The SDK as a user drives it: the issue's walkthrough, isolation, packing, explanations."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orcamem import AsyncMemory, ClosedError, Config, Memory, NotFoundError
from orcamem._kernel.clock import FrozenClock
from orcamem.engine import PackConfig, RecallConfig
from orcamem.engine.store.base import MemoryUpdate


def test_walkthrough_from_the_issue(mem: Memory, tmp_path: Path) -> None:
    notes = tmp_path / "project_notes.md"
    notes.write_text(
        "# Project\n\nThe billing service is written in Go.\n\n"
        "# Deploys\n\nWe deploy on Fridays with Argo CD.\n",
        encoding="utf-8",
    )
    mem.add("I work as a backend engineer and I live in Pune.")
    passages = mem.add_file(notes)
    assert len(passages) == 2 and all(p.kind == "document" for p in passages)
    mem.observe(role="user", text="I moved from Pune to Bangalore last week.", session_id="s1")

    result = mem.search("Where is my home?")
    texts = [hit.text for hit in result.hits]
    assert "I moved from Pune to Bangalore last week." in texts[:2]

    deploy = mem.search("when do we deploy?").hits[0]
    assert "Fridays" in deploy.text

    messages = [{"role": "user", "content": "Where do I live?"}]
    built = mem.build_context(messages)
    assert built[0]["role"] == "system" and built[1:] == messages
    assert built[0]["content"].startswith("## Memory\n")
    assert "Bangalore" in built[0]["content"]

    preference = mem.remember("Prefers dark mode", category="preference")
    rule = mem.forbid("Never chain PowerShell commands with semicolons")
    assert {m.id for m in mem.facts()} == {preference.id, rule.id}
    block = mem.recall("write a PowerShell build script")
    assert block.splitlines()[3].startswith(
        "[FORBIDDEN: Never chain PowerShell commands with semicolons]"
    )
    mem.forget(preference.id)
    assert [m.id for m in mem.facts()] == [rule.id]
    stats = mem.stats()
    assert stats["episodes"] == 4 and stats["rules"] == 1 and stats["memories"] == 0


def test_spaces_are_isolated(mem: Memory) -> None:
    mem.add("Alice likes green tea.", space="user_alice")
    mem.add("Bob likes black coffee.", space="user_bob")
    alice = mem.search("what does she like to drink?", space="user_alice")
    assert [h.text for h in alice.hits] == ["Alice likes green tea."]
    assert all(h.space == "user_alice" for h in alice.hits)
    assert "Bob" not in mem.recall("coffee or tea?", space="user_alice")
    mem.forbid("Never mention Bob", space="user_bob")
    assert mem.search("Bob", space="user_alice").rules == []
    assert mem.search("anything", space="nobody").hits == []
    assert "nobody" not in mem.spaces()  # reads never create spaces


def test_forget_episode_removes_it_from_both_indexes(mem: Memory) -> None:
    episode = mem.add("The spare key is under the blue flowerpot.")
    mem.add("The car is parked on level three.")
    assert mem.search("where is the spare key?").hits[0].episode_id == episode.id
    mem.forget(f"ep-{episode.id}")
    ids = [hit.episode_id for hit in mem.search("where is the spare key?").hits]
    assert episode.id not in ids
    with pytest.raises(NotFoundError, match="no episode"):
        mem.forget(episode.id)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("ep-99999999999999999999", "no episode 99999999999999999999"),  # was OverflowError
        ("9" * 5000, "no episode 999"),  # int() refuses > 4300 digits
        ("ep-9223372036854775808", "no episode 9223372036854775808"),  # 2**63
        ("ep-\u00b2", "neither a memory id"),  # superscript two: was ValueError
        ("ep-\u0661\u0662", "neither a memory id"),  # Arabic-Indic 12: deleted episode 12
        ("\u0661\u0662", "neither a memory id"),
    ],
)
def test_forget_accepts_only_ascii_episode_ids_in_range(mem: Memory, given: str, says: str) -> None:
    episodes = [mem.add(f"Line number {n}.") for n in range(12)]
    with pytest.raises(NotFoundError, match=says):
        mem.forget(given)
    assert [e.id for e in mem.iter_episodes()] == [e.id for e in episodes]  # nothing deleted
    mem.forget("ep-0012")  # ASCII digits, leading zeros and all, still work
    assert 12 not in [e.id for e in mem.iter_episodes()]


def test_breakdown_explains_every_hit(mem: Memory) -> None:
    mem.add("My dentist is Dr. Rao in Kothrud.")
    hit = mem.search("Who is my dentist?").hits[0]
    assert hit.breakdown["lexical"] > 0 and hit.breakdown["vector"] > 0
    assert hit.score == pytest.approx(sum(hit.breakdown.values()))
    assert set(hit.to_dict()) >= {"kind", "id", "text", "score", "breakdown", "line"}


def test_novelty_gate_drops_near_duplicates(tmp_path: Path, clock: FrozenClock) -> None:
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        for _ in range(3):
            mem.add("The wifi password is hunter2.")
        mem.add("The guest wifi password is different.")
        hits = mem.search("wifi password").hits
        assert [h.text for h in hits].count("The wifi password is hunter2.") == 1
    with Memory(
        tmp_path / "m.db", clock=clock, config=Config(recall=RecallConfig(novelty_threshold=1.0))
    ) as mem:
        hits = mem.search("wifi password").hits
        assert [h.text for h in hits].count("The wifi password is hunter2.") == 3


def test_classic_packing_has_sections(tmp_path: Path, clock: FrozenClock) -> None:
    with Memory(
        tmp_path / "m.db", clock=clock, config=Config(pack=PackConfig(enable_sutra_packing=False))
    ) as mem:
        mem.observe(
            "user", "I live in Bangalore.", session_id="s1", occurred_at="2026-10-17T10:00:00Z"
        )
        mem.remember("Prefers dark mode", category="preference")
        mem.forbid("Never use semicolons to chain commands")
        block = mem.recall("where do I live, which theme, how to chain commands?")
    assert "Forbidden (never do these):\n- Never use semicolons" in block
    assert "Known about the user:\n- user.preference: Prefers dark mode" in block
    assert "Said before:\n- 2026-10-17 user: I live in Bangalore." in block
    assert "[" not in block.split("\n", 2)[2].replace("[FORBIDDEN", "")


def test_dense_packing_format(mem: Memory) -> None:
    mem.observe(
        "user", "I'm Sahil and I live in Pune.", session_id="s1", occurred_at="2026-10-10T09:00:00Z"
    )
    mem.remember("black coffee", category="preference", attribute="morning drink")
    block = mem.recall("What do I drink in the morning and where do I live?")
    lines = block.splitlines()
    assert lines[0] == "## Memory"
    assert lines[1].endswith("Today is 2026-11-01.")
    assert "[user.morning drink: black coffee]" in lines[2]
    assert "[LOG: 2026-10-10 user: I'm Sahil and I live in Pune.]" in lines[2]


def test_budget_caps_the_block(tmp_path: Path, clock: FrozenClock) -> None:
    with Memory(
        tmp_path / "m.db", clock=clock, config=Config(pack=PackConfig(context_budget_tokens=120))
    ) as mem:
        for i in range(30):
            mem.add(f"Project note {i}: the deploy pipeline step {i} runs the integration suite.")
        block = mem.recall("deploy pipeline integration suite")
    assert 0 < len(block) <= 120 * 4 + 40


def test_recall_marks_memories_accessed_off_the_hot_path(
    tmp_path: Path, clock: FrozenClock
) -> None:
    path = tmp_path / "m.db"
    with Memory(path, clock=clock) as mem:
        fact = mem.remember("My cat is called Miso", category="fact")
        assert "Miso" in mem.recall("what is my cat called?")
    with Memory(path, clock=clock) as mem:  # close() waited for the side effect
        assert mem.facts()[0].access_count == 1 and fact.access_count == 0


def test_build_context_without_user_text_or_memory_is_unchanged(mem: Memory) -> None:
    messages = [{"role": "system", "content": "be brief"}]
    assert mem.build_context(messages) == messages
    assert mem.build_context([{"role": "user", "content": "hello"}]) == [
        {"role": "user", "content": "hello"}
    ]
    mem.add("Hello is how I greet people.")
    parts = [{"role": "user", "content": [{"type": "text", "text": "how do I greet people"}]}]
    assert mem.build_context(parts)[0]["role"] == "system"


def test_closed_memory_refuses_calls(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "m.db")
    mem.close()
    mem.close()  # idempotent
    with pytest.raises(ClosedError):
        mem.add("too late")


def test_default_path_honours_orca_home(tmp_path: Path) -> None:
    with Memory() as mem:
        mem.add("stored in ORCA_HOME")
        assert Path(mem.stats()["path"]) == tmp_path / "orca-home" / "memory.db"


def test_async_memory_mirrors_the_sync_api(tmp_path: Path) -> None:
    async def main() -> list[str]:
        async with AsyncMemory(tmp_path / "a.db") as mem:
            await mem.add("Async notes are stored too.")
            result = await mem.search("async notes")
            return [hit.text for hit in result.hits]

    assert asyncio.run(main()) == ["Async notes are stored too."]


def test_occurred_at_is_kept_and_created_at_is_now(mem: Memory, clock: FrozenClock) -> None:
    episode = mem.observe("user", "It rained.", occurred_at="2023-05-08T13:56:00+02:00")
    assert episode.occurred_at == "2023-05-08T11:56:00.000000Z"
    assert episode.created_at == "2026-11-01T10:00:00.000000Z"
    assert mem.add("now").occurred_at == "2026-11-01T10:00:00.000000Z"


def test_single_reads_stay_inside_their_space(mem: Memory) -> None:
    first = mem.add("first note", space="a")
    second = mem.observe("user", "second", space="a", session_id="s")
    fact = mem.remember("a fact", space="a")
    assert mem.episode(first.id, space="a").text == "first note"
    assert [e.id for e in mem.episodes_page(space="a", after=first.id)] == [second.id]
    assert [e.id for e in mem.episodes_page(space="a", session_id="s")] == [second.id]
    assert mem.memory(fact.id, space="a").content == "a fact"
    assert mem.space_info("a").episodes == 2 and mem.space_info("b") is None
    assert [i.name for i in mem.space_infos()] == ["a"]
    for read in (lambda: mem.episode(first.id, space="b"), lambda: mem.memory(fact.id, space="b")):
        with pytest.raises(NotFoundError):
            read()


def test_import_refuses_a_dangling_superseded_by_before_writing(
    mem: Memory, tmp_path: Path
) -> None:
    import io
    import json

    from orcamem import InvalidInputError

    old = mem.remember("Lives in Pune", category="state")
    new = mem.remember("Lives in Bangalore", category="state")
    mem.store.update_memory(
        "default", old.id, MemoryUpdate(active=False, superseded_by=new.id), "2026-11-01T10:00Z"
    )
    out = io.StringIO()
    mem.export(out)
    header, first, second = out.getvalue().splitlines()
    assert json.loads(first)["superseded_by"] == new.id
    with Memory(tmp_path / "other.db") as target:
        with pytest.raises(InvalidInputError, match=f"line 2: memory {old.id} has superseded_by"):
            target.import_jsonl([header, first])  # the 3-line export without its successor
        assert target.facts(include_history=True) == [] and target.spaces() == []
        assert target.import_jsonl([header, first, second])["memories"] == 2
        pune = next(m for m in target.facts(include_history=True) if m.id == old.id)
        assert pune.superseded_by == new.id
        target.search("Where does the user live?")  # the read path follows it cleanly


def test_import_under_fresh_ids_keeps_the_lineage_pointing_inside_the_space(
    mem: Memory, tmp_path: Path
) -> None:
    import io

    old = mem.remember("Lives in Pune", category="state")
    new = mem.remember("Lives in Bangalore", category="state")
    mem.store.update_memory(
        "default", old.id, MemoryUpdate(active=False, superseded_by=new.id), "2026-11-01T10:00Z"
    )
    out = io.StringIO()
    mem.export(out)
    lines = out.getvalue().splitlines()
    mem.import_jsonl(lines, space="copy")  # the ids are taken by "default": fresh ids here
    copied = {m.content: m for m in mem.facts(space="copy", include_history=True)}
    pune, bangalore = copied["Lives in Pune"], copied["Lives in Bangalore"]
    assert {pune.id, bangalore.id}.isdisjoint({old.id, new.id})
    assert (pune.active, pune.superseded_by) == (False, bangalore.id)  # was new.id: another space

"""The SDK as a user drives it: the issue's walkthrough, isolation, packing, explanations."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from orcamem import AsyncMemory, ClosedError, Config, InvalidInputError, Memory, NotFoundError
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


def test_novelty_gate_keeps_passages_that_only_share_a_stock_line(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """Two turns whose best line is the same "Thanks, Maria!" say different things: the
    gate compares the passages, not only the line that stands for each."""
    first = "Thanks, Maria! I was really excited about the new assistant manager role."
    second = "Thanks, Maria! The trophy commemorates my journey and all the obstacles."
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        mem.add_many([{"text": text, "role": "John"} for text in (first, second, first)])
        texts = [h.text for h in mem.search("thanks Maria").hits]
    assert texts.count(first) == 1  # a verbatim repeat is still dropped
    assert second in texts


def test_a_stock_line_gets_no_vector_credit(tmp_path: Path, clock: FrozenClock) -> None:
    """ "Thanks, Caroline!" is close to every query that names Caroline; it says nothing, so
    the vector channel does not rank it (its words still count for the lexical one)."""
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        mem.add_many(
            [
                {"text": "Thanks, Caroline!", "role": "Melanie", "session_id": "s1"},
                {"text": "I started a new job as a school counselor.", "role": "Caroline"},
                {"text": "The pottery class was fun with the kids.", "role": "Melanie"},
            ]
        )
        hits = mem.search("What is Caroline's work these days?").hits
    stock = [hit for hit in hits if hit.text == "Thanks, Caroline!"]
    assert all(hit.breakdown["vector"] == 0 for hit in stock)
    assert hits[0].text == "I started a new job as a school counselor."


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


def test_the_block_leaves_out_what_the_conversation_already_holds(mem: Memory) -> None:
    """A chat's own earlier turns are recorded as it goes (the proxy does); they came back as
    memory in the same chat, and a tool loop's second step got its own question. What an
    older chat said still comes, and a memory always does."""
    mem.add("I planted tomatoes in the raised beds of my new house in Leeds.", role="user")
    mem.add("Book a table for two at Casa Nostra in Lisbon at 7pm.", role="user")
    mem.remember("The garden is in Leeds", category="fact")
    chat = [
        {"role": "user", "content": "Book a table for two at Casa Nostra in Lisbon at 7pm."},
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "user", "content": "Is there a cancellation fee for my Casa Nostra booking?"},
    ]
    assert "Casa Nostra" not in (mem.context(chat).block or "")
    assert "Casa Nostra" in mem.recall("Is there a cancellation fee for my Casa Nostra booking?")
    garden = [
        {
            "role": "user",
            "content": "I planted tomatoes in the raised beds of my new house in Leeds.",
        },
        {"role": "user", "content": "Where is my garden, and what did I plant?"},
    ]
    block = mem.context(garden).block or ""
    assert "garden is in Leeds" in block and "planted tomatoes" not in block
    assert "planted tomatoes" in mem.recall("Where is my garden, and what did I plant?")


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


# -- import: the whole file is checked before anything is written --------------------------------


def _rows(path: Path) -> dict[str, int]:
    """Row counts of every table of the database file (what "nothing was written" means)."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def _export_lines(memory: Memory) -> list[str]:
    import io

    out = io.StringIO()
    memory.export(out)
    return out.getvalue().split("\n")


def _rich_export(path: Path) -> list[str]:
    with Memory(path) as source:
        for i in range(4):
            source.observe("user", f"I moved to city {i} last year.", session_id="s1")
        source.add("A document about tea.\u2028Second part.", meta={"k": [1]})
        old = source.remember("Lives in Pune", category="state", tags=["home"])
        new = source.remember("Lives in Bangalore", category="state")
        source.store.update_memory(
            "default", old.id, MemoryUpdate(active=False, superseded_by=new.id), "2026-11-01T10:00Z"
        )
        source.remember("Prefers tea", category="preference")
        return _export_lines(source)


@pytest.mark.parametrize(
    ("line", "field", "value", "says"),
    [
        (-2, "active", "yes", "active must be true or false"),  # the last memory
        (-2, "confidence", "high", "confidence must be a number"),
        (-2, "created_at", 12345, "created_at must be an ISO-8601 time"),
        (-2, "tags", [1, 2], "tag must be"),
        (-2, "cited_lines", [[1]], "cited_lines must be a list of"),
        (-2, "access_count", -1, "access_count must be a whole number"),
        (-2, "bogus", 1, "unknown field 'bogus'"),
        (-2, "content", "", "content is empty"),
        (5, "created_at", {"a": 1}, "created_at must be an ISO-8601 time"),  # the last episode
        (5, "occurred_at", "yesterday", "occurred_at"),
        (5, "id", "3", "id must be a whole number"),
        (5, "meta", [1], "meta must be an object"),
        (5, "kind", "poem", "kind='poem'"),
    ],
)
def test_import_refuses_a_bad_field_on_any_line_and_writes_nothing(
    tmp_path: Path, line: int, field: str, value: object, says: str
) -> None:
    import json

    from orcamem import InvalidInputError

    lines = _rich_export(tmp_path / "source.db")
    index = line % len(lines)
    record = json.loads(lines[index])
    record[field] = value
    lines[index] = json.dumps(record)
    with Memory(tmp_path / "target.db") as target:
        target.add("Already here.")
        before = _rows(tmp_path / "target.db")
        with pytest.raises(InvalidInputError, match=f"line {index + 1} ") as caught:
            target.import_jsonl(lines)
        assert says in str(caught.value) and "nothing was imported" in str(caught.value)
        assert _rows(tmp_path / "target.db") == before
        target.import_jsonl(_rich_export(tmp_path / "again.db"))  # and it still works after


def test_import_refuses_a_truncated_last_line_and_a_duplicate_id(tmp_path: Path) -> None:
    from orcamem import InvalidInputError

    lines = _rich_export(tmp_path / "source.db")
    with Memory(tmp_path / "target.db") as target:
        cut = [*lines[:-2], lines[-2][: len(lines[-2]) // 2]]
        with pytest.raises(InvalidInputError, match=f"line {len(cut)} is not an orcamem export"):
            target.import_jsonl(cut)
        with pytest.raises(InvalidInputError, match=r"line 3 .*already used on line 2"):
            target.import_jsonl([lines[0], lines[1], lines[1]])
        with pytest.raises(InvalidInputError, match=r"line 3 .*second export header"):
            target.import_jsonl([lines[0], lines[1], lines[0]])
        assert target.spaces() == []


_ODD_VALUES = [None, 0, -1, 1.5, 10**30, float("nan"), "", " ", "x", "\x00", True, [], {}, [[1]],
               [["a", 1]], "2026-13-45", "s1"]  # fmt: skip


def test_import_of_a_mutated_export_is_all_or_nothing(tmp_path: Path) -> None:
    import json
    import tempfile

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from orcamem.errors import OrcamemError

    lines = _rich_export(tmp_path / "source.db")
    records = [json.loads(line) for line in lines if line]

    @st.composite
    def mutated(draw: st.DrawFn) -> list[str]:
        out: list[Any] = [dict(record) for record in records]  # a str once it is broken
        for _ in range(draw(st.integers(1, 3))):
            index = draw(st.integers(0, len(out) - 1))
            record = out[index]
            if isinstance(record, str) or not record:
                continue
            action = draw(st.sampled_from(["drop", "replace", "truncate", "retype", "junk"]))
            name = draw(st.sampled_from(sorted(record)))
            if action == "drop":
                record.pop(name)
            elif action == "replace":
                record[name] = draw(st.sampled_from(_ODD_VALUES) | st.text(max_size=5))
            elif action == "retype":
                value = record[name]
                record[name] = [value] if not isinstance(value, list) else str(value)
            elif action == "truncate":
                text = json.dumps(record)
                out[index] = text[: draw(st.integers(0, len(text) - 1))]
            else:
                out[index] = draw(st.sampled_from(["[]", "1", '"x"', "null", "{}", "{"]))
        return [item if isinstance(item, str) else json.dumps(item) for item in out]

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(mutated())
    def check(candidate: list[str]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "target.db"
            with Memory(path) as target:
                target.add("Already here.")
                before = _rows(path)
                try:
                    target.import_jsonl(candidate)
                except OrcamemError:
                    assert _rows(path) == before
                else:
                    expected = sum(
                        1 for line in candidate if line and '"episode"' in line
                    )  # every episode of an accepted file landed (none was already there)
                    assert _rows(path)["episodes"] == before["episodes"] + expected

    check()


def test_forbidding_a_rule_twice_keeps_one_rule(tmp_path: Path) -> None:
    with Memory(tmp_path / "f.db") as mem:
        first = mem.forbid("Never verify TLS certificates")
        again = mem.forbid("  never verify   TLS certificates. ")
        other = mem.forbid("Never verify TLS certificates", space="other")
        assert again == first and other.id != first.id
        assert [m.id for m in mem.facts() if m.prohibited] == [first.id]
        assert (
            mem.recall("Should I verify TLS certificates?").count("[FORBIDDEN: Never verify") == 1
        )


def test_observe_once_records_a_turn_of_a_session_and_turn_id_once(mem: Memory) -> None:
    first = mem.observe("user", "Where do I live?", session_id="s", turn_id="t-1", once=True)
    again = mem.observe("user", "Where do I live now?", session_id="s", turn_id="t-1", once=True)
    reply = mem.observe("assistant", "In Pune.", session_id="s", turn_id="t-1", once=True)
    other = mem.observe("user", "Where do I live?", session_id="s2", turn_id="t-1", once=True)
    assert again == first and again.text == "Where do I live?"  # the first one stands
    assert len({first.id, reply.id, other.id}) == 3
    assert [e.id for e in mem.iter_episodes()] == [first.id, reply.id, other.id]
    with pytest.raises(InvalidInputError, match="needs a turn_id"):
        mem.observe("user", "no id", session_id="s", once=True)
    assert len(list(mem.iter_episodes())) == 3


def test_an_import_indexes_each_turn_with_the_turn_before_it_as_the_original(
    tmp_path: Path, clock: FrozenClock
) -> None:
    # more turns than one import batch: the first turn of the second batch keeps its context
    turns = [f"Turn {n} mentions the word marker{n}." for n in range(530)]
    with Memory(tmp_path / "a.db", clock=clock) as original:
        original.add_many(
            [{"text": t, "kind": "turn", "role": "user", "session_id": "s"} for t in turns]
        )
        exported = _export_lines(original)
    with Memory(tmp_path / "b.db", clock=clock) as copy:
        copy.import_jsonl(exported)

    def contexts(path: Path) -> list[str]:
        with sqlite3.connect(path) as conn:
            return [row[0] for row in conn.execute("SELECT context FROM lines ORDER BY id")]

    assert contexts(tmp_path / "b.db") == contexts(tmp_path / "a.db")


def test_remember_checks_every_field_it_quotes_or_lists(mem: Memory) -> None:
    """value and condition are quoted in blocks as the text is, and tags, entity and
    attribute are listed by the API: each is checked, and a secret in any is refused."""
    key = "sk-" + "Ab3dEf9hIjKlMnOpQrStUvWx1234567890abcd"
    bad = [
        {"value": 5},
        {"value": ["a"]},
        {"value": "Pu\x00ne"},
        {"condition": "mornings\x1b[2J"},
        {"value": "x" * (1024 * 1024 + 1)},
        {"tags": "work"},
        {"tags": [key]},
        {"attribute": key},
        {"entity": key},
        {"value": key},
    ]
    for fields in bad:
        with pytest.raises(InvalidInputError):
            mem.remember("I live in Pune", **fields)
    assert mem.facts() == []
    assert mem.remember("I drink coffee", tags=None).tags == ()


@pytest.mark.parametrize(
    "text",
    [
        "db password\u00a0=\u00a0Tr0ub4dor&3",  # non-breaking spaces
        "openai key sk-\u200bAb3dEf9hIjKlMnOpQrStUvWx1234567890abcd",  # a zero-width space
    ],
)
def test_a_secret_spelt_with_unicode_spaces_is_refused_and_never_quoted(
    mem: Memory, text: str
) -> None:
    with pytest.raises(InvalidInputError, match="secret"):
        mem.remember(text)
    mem.add(text, role="user")
    block = mem.recall("db password openai key")
    assert "REDACTED" in block
    assert "Tr0ub4dor" not in block and "Ab3dEf9h" not in block


def test_meta_must_be_json_with_finite_numbers(mem: Memory) -> None:
    for meta in ({"a": float("nan")}, {"b": float("inf")}):
        with pytest.raises(InvalidInputError, match="finite"):
            mem.add("hi there", meta=meta)
    assert mem.stats()["episodes"] == 0


def test_an_import_refuses_what_remember_would(mem: Memory) -> None:
    """A memory id that is not mem-<8 hex> could never be read back or forgotten; a secret
    in any quoted or listed field, NaN in meta and an empty file are refused too, and nothing
    is imported."""
    mem.add("I live in Pune", role="user")
    mem.remember("I drink coffee", tags=["drinks"])
    out = io.StringIO()
    mem.export(out)
    lines = out.getvalue().splitlines()
    memory = next(json.loads(line) for line in lines if '"type": "memory"' in line)
    episode = next(json.loads(line) for line in lines if '"type": "episode"' in line)
    key = "sk-" + "Ab3dEf9hIjKlMnOpQrStUvWx1234567890abcd"
    bad = [
        {**memory, "id": "../c723b4"},
        {**memory, "content": f"my key is {key}"},
        {**memory, "value": key},
        {**memory, "tags": [key]},
        {**episode, "meta": {"a": float("nan")}},
    ]
    for record in bad:
        with pytest.raises(InvalidInputError, match="nothing was imported"):
            mem.import_jsonl([lines[0], json.dumps(record)], space="copy")
    for empty in ([], [""]):
        with pytest.raises(InvalidInputError, match="not an orcamem export"):
            mem.import_jsonl(empty, space="copy")
    assert "copy" not in mem.spaces()
    assert mem.import_jsonl(lines, space="copy")["memories"] == 1


def test_an_episode_id_past_the_store_s_integers_is_bad_input(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="whole number from 1"):
        mem.episode(2**70)  # SQLite raised OverflowError


def test_a_key_s_label_is_checked_and_its_spaces_kept_once(mem: Memory) -> None:
    now = "2026-06-01T00:00:00Z"
    with pytest.raises(InvalidInputError, match="control character"):
        mem.keys.create(spaces=["a"], admin=False, name="a\x00b", now=now)
    assert mem.keys.list() == []
    mem.keys.create(spaces=["a", "b", "a"], admin=False, name="ci", now=now)
    assert [key["spaces"] for key in mem.keys.list()] == [["a", "b"]]


def test_a_forgotten_turn_is_neither_found_nor_kept_through_the_next_turn(
    mem: Memory, tmp_path: Path
) -> None:
    """Each turn is indexed with the one before it as context: forgetting a turn took it out
    of the file but the next turn still held its words, and search found them there."""
    said = [
        mem.add(text, kind="turn", role=role, session_id="chat")
        for text, role in [
            ("Let me tell you about my cat.", "user"),
            ("My bank password is Quillfeather.", "user"),
            ("I will keep that in mind.", "assistant"),
        ]
    ]

    def found_by_the_word() -> set[int]:
        lines = [i for i, _ in mem.store.lexical_lines("default", '"quillfeather"', 10)]
        return {episode for episode, _ in mem.store.line_positions(lines).values()}

    assert found_by_the_word() == {said[1].id, said[2].id}
    mem.forget(said[1].id)
    assert found_by_the_word() == set()
    assert "Quillfeather" not in mem.recall("What is my bank password?")
    with sqlite3.connect(tmp_path / "memory.db") as conn:
        held = conn.execute(
            "SELECT count(*) FROM lines WHERE text LIKE '%Quillfeather%' "
            "OR context LIKE '%Quillfeather%'"
        ).fetchone()[0]
        found = conn.execute(
            "SELECT count(*) FROM lines_fts WHERE lines_fts MATCH 'quillfeather'"
        ).fetchone()[0]
        assert (held, found) == (0, 0)
        assert (
            "cat"
            in conn.execute(  # the next turn follows the turn before the forgotten one
                "SELECT context FROM lines WHERE episode_id = ?", (said[2].id,)
            ).fetchone()[0]
        )


def test_restoring_an_older_then_a_newer_backup_keeps_every_turn(tmp_path: Path) -> None:
    """The import's "already present" key left out the role, the kind and how often a text
    was said: a user's "Yes." restored from an older backup made the assistant's "Yes.", a
    second "Yes." and a note of the same session and time "already present" (1 of 4 kept)."""
    at = "2024-05-01T10:00:00Z"  # one date a session, as ChatGPT's and LoCoMo's imports give

    def said(role: str | None, kind: str = "turn") -> dict[str, Any]:
        return {"text": "Yes.", "role": role, "kind": kind, "session_id": "s1", "occurred_at": at}

    with Memory(tmp_path / "source.db") as source:
        source.add_many([said("user")])
        older = io.StringIO()
        source.export(older)
        source.add_many([said("assistant"), said("user"), said(None, "note")])
        newer = io.StringIO()
        source.export(newer)
        kept = [(e.role, e.kind) for e in source.iter_episodes()]
    with Memory(tmp_path / "restored.db") as restored:
        restored.import_jsonl(older.getvalue().splitlines())
        assert restored.import_jsonl(newer.getvalue().splitlines())["episodes"] == 3
        assert [(e.role, e.kind) for e in restored.iter_episodes()] == kept
        assert restored.import_jsonl(newer.getvalue().splitlines())["episodes"] == 0


def test_a_newer_backup_brings_its_memories_newer_state(tmp_path: Path) -> None:
    """Monday's backup restored, then Tuesday's imported: the fact edited on Tuesday stayed
    active beside its new version (restore skipped every id it held), and recall injected
    both employers."""
    with Memory(tmp_path / "source.db") as source:
        old = source.remember("Works at Acme", category="fact", entity="user",
                              attribute="employer", value="Acme")  # fmt: skip
        monday = io.StringIO()
        source.export(monday)
        new = source.edit_memory(old.id, "Works at Globex")
        source.pin(new.id)
        tuesday = io.StringIO()
        source.export(tuesday)
    with Memory(tmp_path / "restored.db") as restored:
        restored.import_jsonl(monday.getvalue().splitlines())
        counts = restored.import_jsonl(tuesday.getvalue().splitlines())
        assert (counts["memories"], counts["updated"]) == (1, 1)
        assert [m.content for m in restored.facts()] == ["Works at Globex"]
        [closed] = [m for m in restored.facts(include_history=True) if not m.active]
        assert (closed.id, closed.superseded_by) == (old.id, new.id)
        assert "Acme" not in restored.recall("Where do I work?")
        again = restored.import_jsonl(tuesday.getvalue().splitlines())
        assert (again["memories"], again["updated"]) == (0, 0)
        restored.import_jsonl(monday.getvalue().splitlines())  # an older file changes nothing
        assert [m.content for m in restored.facts()] == ["Works at Globex"]


def test_a_copy_into_another_space_keeps_every_memory_as_exported(tmp_path: Path) -> None:
    """The renamed chain's pointer was set again after the insert with the import's clock:
    the copy's superseded memory carried another updated_at than the export's."""
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        first = mem.remember("Works at Acme", category="fact")
        clock.advance(hours=1)
        mem.edit_memory(first.id, "Works at Globex")
        exported = io.StringIO()
        mem.export(exported)
        clock.advance(days=1)
        mem.import_jsonl(exported.getvalue().splitlines(), space="copy")
        copied = io.StringIO()
        mem.export(copied, space="copy")

    def states(export: io.StringIO) -> list[tuple[str, bool, str]]:
        records = [json.loads(line) for line in export.getvalue().splitlines()]
        return [(r["content"], r["active"], r["updated_at"]) for r in records
                if r.get("type") == "memory"]  # fmt: skip

    assert states(copied) == states(exported)


def test_a_cursor_or_limit_past_the_database_s_integers_is_a_clear_error(mem: Memory) -> None:
    """2**63 raised a raw OverflowError on SQLite and 'bigint out of range' on PostgreSQL."""
    for call in (
        lambda: mem.episodes_page(after=2**63),
        lambda: mem.episodes_page(limit=2**63),
        lambda: mem.audit_log(limit=2**63),
    ):
        with pytest.raises(InvalidInputError, match="9223372036854775807"):
            call()


def test_an_edit_that_restates_a_state_s_attribute_keeps_it_as_the_value(mem: Memory) -> None:
    """The dashboard offers a state's content ("home city: Berlin") to edit: saving "home
    city: Porto" cleared the value, and the block showed "user.home city: home city: Porto"."""
    berlin = mem.remember(
        "home city: Berlin", category="state", entity="user", attribute="home city", value="Berlin"
    )
    porto = mem.edit_memory(berlin.id, "Home City: Porto")
    assert porto.value == "Porto"
    block = mem.recall("Where do I live?")
    assert "[user.home city: Porto" in block and "home city: home city" not in block
    assert mem.edit_memory(porto.id, "Moved to Lisbon").value is None  # no attribute stated
    hers = mem.remember("caroline · home city: Leeds", category="state", entity="caroline",
                        attribute="home city", value="Leeds")  # fmt: skip
    assert mem.edit_memory(hers.id, "caroline · home city: York").value == "York"

"""The Memory Bank service: saving (and the processor's three fallbacks), recall with the
relevance breakdown, listing, deleting, injection with its caps and opt-in, access tracking off
the hot path, conductor read-through, bad input, and concurrent writers on a shared directory.

The real S3 server's tests are in ``test_memory_bank_s3.py``; REST and MCP in
``test_memory_bank_api.py``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from orcamem import InvalidInputError, NotFoundError
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.llm import OpenAIChat
from orcamem.bank import BankMemory, MemoryBank, MemoryProcessor, space_for
from orcamem.bank.bank import MAX_RAW_INPUT_BYTES, REFRESH_TTL_S
from orcamem.bank.objects import (
    FileObjectStore,
    MemoryObjectStore,
    ObjectStore,
    PreconditionFailedError,
)
from orcamem.bank.processor import PROCESSOR_DEADLINE_S
from servers import free_port

pytest_plugins = ["llm_server"]

NOW = "2026-11-01T10:00:00Z"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def bank(clock: FrozenClock) -> Iterator[MemoryBank]:
    with MemoryBank(
        profiles={"researcher": ["@default", "@memory"], "writer": ["@default"]}, clock=clock
    ) as instance:
        yield instance


def home() -> dict[str, str]:
    """An ``environ`` for ``from_env`` with only the test's ``ORCA_HOME``."""
    return {"ORCA_HOME": os.environ["ORCA_HOME"]}


class FakeClock:
    """Monotonic seconds that only move when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- saving ---------------------------------------------------------------------------------------


def test_a_pre_structured_save_is_stored_as_given(bank: MemoryBank) -> None:
    saved = bank.save(
        "researcher", content="The user is allergic to peanuts.", category="fact", confidence=0.9
    )
    assert saved.id.startswith("mem-") and len(saved.id) == 12
    assert (saved.profile_name, saved.category, saved.confidence, saved.source) == (
        "researcher",
        "fact",
        0.9,
        "explicit",
    )
    assert saved.raw_input == saved.processed_content == "The user is allergic to peanuts."
    assert saved.summary == "The user is allergic to peanuts."[:50]
    assert (saved.access_count, saved.last_accessed_at, saved.is_active, saved.version) == (
        0,
        None,
        True,
        1,
    )
    assert saved.created_at == "2026-11-01T10:00:00.000000Z"
    # staleness at save: (1 - 0.9) * 0.3 * fact weight 0.7
    assert saved.staleness_score == pytest.approx(0.1 * 0.3 * 0.7)
    stored = bank.objects.get(f"memory/researcher/{saved.id}.json")
    data = json.loads(stored.body)
    assert (
        data["processedContent"] == saved.processed_content and data["profileName"] == "researcher"
    )
    assert BankMemory.decode(stored.body, stored.key) == saved
    assert bank.get("researcher", saved.id) == saved
    assert space_for("researcher") == "profile:researcher"


def test_without_a_model_a_raw_save_keeps_what_was_given(bank: MemoryBank) -> None:
    raw = "Remember that the staging database is reset every Monday at 06:00 UTC."
    saved = bank.save("researcher", raw_input=raw)
    assert (saved.raw_input, saved.processed_content) == (raw, raw)
    assert (saved.category, saved.confidence) == ("general", 1.0)
    assert saved.summary == raw[:50]
    given = bank.save("researcher", raw_input=raw, category="fact", confidence=0.7)
    assert (given.category, given.confidence) == ("fact", 0.7)


def test_from_env_without_a_bucket_keeps_memories_under_orca_home(tmp_path: Path) -> None:
    """Issue 11 item 5: the default is durable, a directory ``$ORCA_HOME/bank``."""
    environ = {"ORCA_HOME": str(tmp_path / "home")}
    with MemoryBank.from_env(profiles={"p": []}, environ=environ) as bank:
        assert bank.processor.model is None
        assert bank.objects.durable
        assert bank.objects.location == f"file://{tmp_path / 'home' / 'bank'}"
        saved = bank.save("p", raw_input="Prefers metric units.")
        assert (saved.category, saved.confidence) == ("general", 1.0)
    with MemoryBank.from_env(profiles={"p": []}, environ=environ) as again:
        assert again.get("p", saved.id) == saved


@pytest.mark.parametrize("how", ["env", "argument"])
def test_from_env_in_memory_only_when_asked_and_warns(
    how: str, caplog: pytest.LogCaptureFixture
) -> None:
    environ = {**home(), "ORCAMEM_BANK": "memory"} if how == "env" else home()
    storage = "memory" if how == "argument" else None
    with caplog.at_level(logging.WARNING, logger="orcamem.bank"):
        bank = MemoryBank.from_env(profiles={"p": []}, environ=environ, storage=storage)
    try:
        assert bank.objects.location == "memory" and not bank.objects.durable
        assert any("in memory only" in r.getMessage() for r in caplog.records)
    finally:
        bank.close()


def test_from_env_refuses_an_unknown_storage() -> None:
    with pytest.raises(InvalidInputError, match="ORCAMEM_BANK"):
        MemoryBank.from_env(environ={**home(), "ORCAMEM_BANK": "tape"})
    with pytest.raises(InvalidInputError, match="storage"):
        MemoryBank.from_env(environ=home(), storage="tape")


def test_from_env_reads_the_profiles_file(tmp_path: Path) -> None:
    orca_home = Path(os.environ["ORCA_HOME"])
    orca_home.mkdir(parents=True, exist_ok=True)
    (orca_home / "profiles.json").write_text(
        json.dumps([{"name": "researcher", "tools": ["@default", "@memory"]}, {"name": "plain"}])
    )
    with MemoryBank.from_env(environ=home()) as bank:
        assert [(p.name, p.tools, p.injects) for p in bank.profiles()] == [
            ("plain", (), False),
            ("researcher", ("@default", "@memory"), True),
        ]
    elsewhere = tmp_path / "other.json"
    elsewhere.write_text('{"name": "not a list"}')
    with pytest.raises(InvalidInputError, match="must be a JSON list"):
        MemoryBank.from_env(environ={**home(), "ORCAMEM_PROFILES": str(elsewhere)})
    elsewhere.write_text('[{"name": "../x"}]')
    with pytest.raises(InvalidInputError, match="invalid profile name"):
        MemoryBank.from_env(environ={**home(), "ORCAMEM_PROFILES": str(elsewhere)})
    for entries, said in (
        ('[{"name": "r", "tools": null}]', "profile 'r': tools must be a list of tool names"),
        ('[{"name": "r", "tools": {"@memory": 1}}]', "profile 'r': tools must be a list"),
        ('[{"tools": ["@memory"]}]', 'profile #1 has no "name"'),
        ('[{"name": "r", "tools": ["@memory"]}, {"name": "r", "tools": []}]', "given twice"),
    ):
        elsewhere.write_text(entries)
        with pytest.raises(InvalidInputError, match=re.escape(f"{elsewhere}: ")) as refused:
            MemoryBank.from_env(environ={**home(), "ORCAMEM_PROFILES": str(elsewhere)})
        assert said in str(refused.value)


# -- the processor: a loopback Anthropic-shaped server ---------------------------------------------


class FakeAnthropic:
    """A loopback ``POST /v1/messages`` server answering scripted replies (a JSON payload, or
    ``bytes`` sent as they are)."""

    def __init__(self) -> None:
        self.reply: Callable[[dict[str, Any]], tuple[int, Any]] = lambda body: (
            500,
            {},
        )
        self.answering = threading.Event()
        """Cleared: a request waits (up to a minute) before it is answered."""
        self.answering.set()
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length))
                fake.requests.append((dict(self.headers), body))
                fake.answering.wait(60)
                status, payload = fake.reply(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.answering.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()
    yield fake
    fake.close()


def tool_answer(answer: Any) -> tuple[int, dict[str, Any]]:
    return 200, {
        "content": [{"type": "tool_use", "name": "answer", "input": {"answer": answer}}],
        "stop_reason": "tool_use",
    }


def anthropic_bank(fake: FakeAnthropic, clock: FrozenClock, **env: str) -> MemoryBank:
    return MemoryBank.from_env(
        profiles={"researcher": ["@memory"]},
        clock=clock,
        environ={**home(), "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": fake.url, **env},
    )


def test_the_processor_extracts_with_the_memory_model(
    anthropic: FakeAnthropic, clock: FrozenClock
) -> None:
    anthropic.reply = lambda body: tool_answer(
        {
            "processedContent": "The user prefers answers in British English.",
            "summary": "Prefers British English",
            "category": "preference",
            "confidence": 0.8,
        }
    )
    with anthropic_bank(anthropic, clock) as bank:
        saved = bank.save("researcher", raw_input="pls always use british spelling, colour etc")
    assert (saved.processed_content, saved.summary, saved.category, saved.confidence) == (
        "The user prefers answers in British English.",
        "Prefers British English",
        "preference",
        0.8,
    )
    assert saved.raw_input == "pls always use british spelling, colour etc"  # the audit trail
    headers, body = anthropic.requests[0]
    assert body["model"] == "claude-haiku-4-5-20251001"  # the spec's default
    assert headers["x-api-key"] == "sk-test"
    assert body["messages"][0]["content"] == "pls always use british spelling, colour etc"
    with anthropic_bank(anthropic, clock, ANTHROPIC_MEMORY_MODEL="claude-other") as bank:
        bank.save("researcher", raw_input="x y z")
    assert anthropic.requests[-1][1]["model"] == "claude-other"


@pytest.mark.parametrize("case", ["key-unset", "non-2xx", "unreachable"])
def test_no_key_or_a_failed_call_saves_as_given_with_confidence_1(
    anthropic: FakeAnthropic, clock: FrozenClock, case: str
) -> None:
    anthropic.reply = lambda body: (529, {"type": "error", "error": {"type": "overloaded_error"}})
    env = {
        "key-unset": {"ANTHROPIC_API_KEY": ""},  # blank is unset
        "non-2xx": {},
        "unreachable": {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{free_port()}"},
    }[case]
    with anthropic_bank(anthropic, clock, **env) as bank:
        saved = bank.save("researcher", raw_input="The deploy key rotates quarterly.")
        assert (saved.processed_content, saved.category, saved.confidence) == (
            "The deploy key rotates quarterly.",
            "general",
            1.0,
        )
        assert len(anthropic.requests) == (1 if case == "non-2xx" else 0)
        assert bank.get("researcher", saved.id) == saved


def test_a_call_past_the_deadline_counts_as_failed(
    anthropic: FakeAnthropic, clock: FrozenClock
) -> None:
    anthropic.answering.clear()  # the model answers only after the save has returned
    anthropic.reply = lambda body: tool_answer({"processedContent": "late"})
    bank = MemoryBank(
        profiles={"researcher": []},
        clock=clock,
        processor=MemoryProcessor(bank_model(anthropic), deadline_s=0.3),
    )
    with bank:
        saved = bank.save("researcher", raw_input="Slow models must not block saves.")
        assert len(anthropic.requests) == 1  # the model was asked, and had not answered
        assert (saved.processed_content, saved.confidence) == (
            "Slow models must not block saves.",
            1.0,
        )
        anthropic.answering.set()


def bank_model(fake: FakeAnthropic) -> Any:
    from orcamem._kernel.llm import AnthropicChat

    return AnthropicChat(api_key="sk-test", base_url=fake.url, model="claude-haiku-4-5-20251001")


def test_the_processor_deadline_is_5_seconds() -> None:
    seen: list[float] = []

    class Spy:
        id = "spy"

        def complete_json(self, system: str, user: str, schema: dict, **options: Any) -> Any:
            seen.append(options["deadline_s"])
            return {
                "processedContent": user,
                "summary": user[:50],
                "category": "fact",
                "confidence": 1.0,
            }

        def close(self) -> None:
            pass

    assert PROCESSOR_DEADLINE_S == 5.0
    with MemoryBank(profiles={"p": []}, processor=Spy()) as bank:  # type: ignore[arg-type]
        bank.save("p", raw_input="anything")
    assert seen == [5.0]


def test_an_unparseable_answer_gives_the_deterministic_preview(
    anthropic: FakeAnthropic, clock: FrozenClock
) -> None:
    raw = "The on-call rotation changes every second Tuesday; ping #ops before paging anyone."
    anthropic.reply = lambda body: (
        200,
        {
            "content": [{"type": "text", "text": "Sure! I'll remember that."}],
            "stop_reason": "end_turn",
        },
    )
    with anthropic_bank(anthropic, clock) as bank:
        saved = bank.save("researcher", raw_input=raw)
        assert (saved.processed_content, saved.summary, saved.category, saved.confidence) == (
            raw,
            raw[:50],
            "general",
            0.5,
        )
        anthropic.reply = lambda body: tool_answer({"processedContent": "x", "category": "wisdom"})
        off_schema = bank.save("researcher", raw_input=raw)
        assert (off_schema.category, off_schema.confidence) == ("general", 0.5)


@pytest.mark.parametrize(
    "body",
    [
        b"<html>502 Bad Gateway</html>",  # HTTP 200, not JSON
        b'{"id": "msg_1", "type": "message"}',  # JSON, not a Messages reply (no content)
        b'{"content": "remember it"}',  # content of the wrong type
    ],
)
def test_a_200_answer_that_cannot_be_parsed_gives_the_preview_not_a_failed_call(
    anthropic: FakeAnthropic, clock: FrozenClock, body: bytes
) -> None:
    raw = "Staging resets every Monday at 06:00 UTC, so never demo from staging on Mondays."
    anthropic.reply = lambda _: (200, body)
    with anthropic_bank(anthropic, clock) as bank:
        saved = bank.save("researcher", raw_input=raw)
    assert (saved.processed_content, saved.summary, saved.category, saved.confidence) == (
        raw,
        raw[:50],
        "general",
        0.5,
    )


@pytest.mark.slow
def test_a_real_local_model_extracts_a_valid_record(llama_server: str) -> None:
    model = OpenAIChat("smollm2", llama_server, structured="json_object")
    processor = MemoryProcessor(model, deadline_s=120)  # a 135M model on one thread
    with MemoryBank(profiles={"p": ["@memory"]}, processor=processor) as bank:
        saved = bank.save("p", raw_input="I am vegetarian and I never eat fish.")
    model.close()
    assert saved.category in ("preference", "fact", "behavior", "context", "general")
    assert 0.0 <= saved.confidence <= 1.0 and 0 < len(saved.summary) <= 50
    assert (
        saved.processed_content.strip()
        and saved.raw_input == "I am vegetarian and I never eat fish."
    )


# -- recall, list, delete ----------------------------------------------------------------------------


def test_recall_ranks_by_topic_with_the_breakdown_and_bumps_access(
    bank: MemoryBank, clock: FrozenClock
) -> None:
    peanuts = bank.save("researcher", content="The user is allergic to peanuts.", category="fact")
    deploy = bank.save("researcher", content="We deploy the API with Helm.", category="behavior")
    bank.save("writer", content="The user is allergic to cats.", category="fact")
    hits = bank.recall("researcher", "what diet should we plan for dinner?")
    assert [h.memory.id for h in hits] == [peanuts.id]  # cluster match, no shared word
    hit = hits[0].to_dict()
    assert hit["memory"]["id"] == peanuts.id and hit["score"] == hit["relevance"]["score"]
    breakdown = hit["relevance"]
    assert breakdown["recency"] == 1.0 and breakdown["usage"] == 0.6
    assert breakdown["maturity"] == 0.0 and breakdown["confidenceMultiplier"] == 1.0
    assert breakdown["weights"] == {"recency": 0.5, "usage": 0.0, "topic": 0.5}
    bank.flush()
    assert bank.get("researcher", peanuts.id).access_count == 1
    assert bank.get("researcher", deploy.id).access_count == 0
    clock.advance(days=30)
    bank.recall("researcher", "deploy the API")
    bank.flush()
    bumped = bank.get("researcher", deploy.id)
    assert (bumped.access_count, bumped.last_accessed_at) == (1, "2026-12-01T10:00:00.000000Z")
    stored = BankMemory.decode(bank.objects.get(f"memory/researcher/{deploy.id}.json").body)
    assert stored.access_count == 1  # persisted, not only indexed
    # search is the same ranking without side effects
    bank.search("researcher", "deploy the API")
    bank.flush()
    assert bank.get("researcher", deploy.id).access_count == 1


def test_recall_respects_limit_and_min_score(bank: MemoryBank, clock: FrozenClock) -> None:
    for i in range(5):
        bank.save(
            "researcher", content=f"Deploy note number {i}.", category="behavior", confidence=0.5
        )
    # Recall counts an access in the background, which moves later scores: check the floor
    # first (nothing returned, nothing counted), then the exact score, then the limit.
    assert bank.recall("researcher", "deploy", min_score=0.76) == []
    # fresh, on topic, confidence 0.5: (0.5 * 1 + 0.5 * 1) * 0.75
    assert [h.score for h in bank.recall("researcher", "deploy", min_score=0.75)] == [0.75] * 5
    bank.flush()
    assert len(bank.recall("researcher", "deploy", limit=3)) == 3


def test_list_is_newest_first_paged_and_read_only(bank: MemoryBank, clock: FrozenClock) -> None:
    ids = []
    for i in range(5):
        ids.append(bank.save("researcher", content=f"Note {i}.").id)
        clock.advance(minutes=1)
    page = bank.list("researcher", limit=2)
    assert [m.id for m in page.memories] == [ids[4], ids[3]]
    assert (page.total, page.next_offset) == (5, 2)
    last = bank.list("researcher", limit=2, offset=4)
    assert [m.id for m in last.memories] == [ids[0]] and last.next_offset is None
    bank.flush()
    assert all(m.access_count == 0 for m in bank.list("researcher").memories)
    assert bank.list("writer").memories == []


def test_delete_removes_the_memory_and_its_object(bank: MemoryBank) -> None:
    saved = bank.save("researcher", content="Temporary.")
    bank.delete("researcher", saved.id)
    with pytest.raises(NotFoundError, match=saved.id):
        bank.get("researcher", saved.id)
    assert list(bank.objects.list("memory/")) == []
    with pytest.raises(NotFoundError):
        bank.delete("researcher", saved.id)


# -- injection ------------------------------------------------------------------------------------


def test_injection_renders_core_then_query_tier(bank: MemoryBank) -> None:
    pref = bank.save(
        "researcher",
        content="The agent prefers returning structured JSON whenever the caller supplies a schema.",
        category="preference",
    )
    fact = bank.save(
        "researcher",
        content="Plans are persisted as JSONL objects at plans/<planId>.jsonl in the artefact bucket.",
        category="fact",
        confidence=0.9,
    )
    behavior = bank.save(
        "researcher",
        content="Before reading a file, the agent should call list_dir on the parent directory first.",
        category="behavior",
    )
    bank.save("researcher", content="Quarterly budget review is in March.", category="context")
    prompt = "Read the config file and summarise it."
    assert bank.inject("researcher", prompt) == (
        "--- CONTEXT FROM MEMORY ---\n"
        "Core knowledge (always apply):\n"
        f"* [preference] {pref.processed_content}\n"
        f"* [fact] {fact.processed_content}\n"
        "\n"
        "Relevant to this task:\n"
        f"* [behavior] {behavior.processed_content}\n"
        "---\n"
        f"{prompt}"
    )
    bank.flush()
    counts = {m.id: m.access_count for m in bank.list("researcher").memories}
    assert counts == {
        pref.id: 1,
        fact.id: 1,
        behavior.id: 1,
        **{k: 0 for k in counts if k not in (pref.id, fact.id, behavior.id)},
    }


def test_only_opted_in_profiles_get_injection(clock: FrozenClock) -> None:
    profiles = {
        "plain": ["@default"],
        "capability": ["@default", "@memory"],
        "one_tool": ["memory_recall"],
    }
    with MemoryBank(profiles=profiles, clock=clock) as bank:
        for name in profiles:
            bank.save(name, content="The user prefers tea.", category="preference")
        assert bank.inject("plain", "Hello") == "Hello"
        assert bank.inject("capability", "Hello").startswith("--- CONTEXT FROM MEMORY ---\n")
        assert bank.inject("one_tool", "Hello").startswith("--- CONTEXT FROM MEMORY ---\n")
        bank.flush()
        assert bank.list("plain").memories[0].access_count == 0
        with pytest.raises(NotFoundError, match="unknown profile 'stranger'"):
            bank.inject("stranger", "Hello")


def test_the_query_tier_takes_8_results_scoring_at_least_0_05(
    bank: MemoryBank, clock: FrozenClock
) -> None:
    # an old, doubtful memory that shares one word of ten (and no cluster) scores under 0.05
    faint = bank.save(
        "researcher", content="Zanzibar ferry timetable.", category="general", confidence=0.0
    )
    clock.advance(days=1000)
    fresh = [
        bank.save("researcher", content=f"Deploy step {i} uses Helm.", category="behavior")
        for i in range(12)
    ]
    prompt = "deploy zanzibar alpha beta gamma delta epsilon zeta eta theta"
    ranked = bank.search("researcher", prompt, min_score=0.0, limit=100)
    assert ranked[-1].memory.id == faint.id and 0 < ranked[-1].score < 0.05
    assert len(ranked) == 13
    injection = bank.context("researcher", prompt)
    assert len(injection.ids) == 8
    assert set(injection.ids) <= {m.id for m in fresh} and faint.id not in injection.ids
    assert injection.block.count("* [behavior]") == 8
    bank.flush()
    # the only match shares one word of ten: it scores under 0.05 and stays out
    few = bank.context("researcher", "zanzibar alpha beta gamma delta epsilon zeta eta theta iota")
    assert few == type(few)("", [])


def test_the_query_tier_excludes_core_ids_and_is_trimmed_first(bank: MemoryBank) -> None:
    core = [
        bank.save("researcher", content=f"Deploy fact {i}: " + "x" * 300, category="fact")
        for i in range(5)
    ]
    query = [
        bank.save("researcher", content=f"Deploy behaviour {i}: " + "y" * 300, category="behavior")
        for i in range(5)
    ]
    injection = bank.context("researcher", "deploy")
    assert len(injection.block) <= 2000
    assert set(injection.ids) == {m.id for m in core}  # core facts matched too: never twice
    assert not set(injection.ids) & {m.id for m in query}


def test_mark_accessed_never_delays_the_run(clock: FrozenClock) -> None:
    gate = threading.Event()

    class SlowWrites(MemoryObjectStore):
        def put(self, key: str, body: bytes, **conditions: Any) -> str:
            if conditions.get("if_match"):
                gate.wait(10)
            return super().put(key, body, **conditions)

    with MemoryBank(SlowWrites(), profiles={"p": ["@memory"]}, clock=clock) as bank:
        saved = bank.save("p", content="The user prefers tea.", category="preference")
        assert bank.inject("p", "Hi").startswith("--- CONTEXT FROM MEMORY ---")
        bank.recall("p", "tea")
        # both returned while their access writes are still held at the gate
        assert not gate.is_set() and bank.get("p", saved.id).access_count == 0
        gate.set()
        bank.flush()
        assert bank.get("p", saved.id).access_count == 2


# -- bad input --------------------------------------------------------------------------------------


def test_raw_input_is_capped_at_4_kib(bank: MemoryBank) -> None:
    assert MAX_RAW_INPUT_BYTES == 4096
    assert bank.save("researcher", raw_input="a" * 4096).raw_input == "a" * 4096
    for too_big in ("a" * 4097, "é" * 2049):  # bytes, not characters
        with pytest.raises(InvalidInputError, match="over the 4 KiB"):
            bank.save("researcher", raw_input=too_big)
    with pytest.raises(InvalidInputError, match="over the 4 KiB"):
        bank.save("researcher", content="b" * 4097)
    assert len(list(bank.objects.list("memory/"))) == 1  # only the first save was written


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"content": "x", "category": "wisdom"}, "unknown category 'wisdom'"),
        ({"content": "x", "category": "rule"}, "unknown category"),
        ({"content": "x", "confidence": 1.01}, "confidence=1.01"),
        ({"content": "x", "confidence": -0.1}, "confidence=-0.1"),
        ({"content": "x", "confidence": float("nan")}, "confidence=nan"),
        ({"content": "x", "confidence": True}, "confidence=True"),
        ({"content": "x", "confidence": "0.5"}, "confidence='0.5'"),
        ({}, "nothing to save"),
        ({"raw_input": "   "}, "rawInput is empty"),
        ({"content": "a\x00b"}, "control character"),
        ({"content": 12}, "must be a string"),
    ],
)
def test_bad_saves_are_refused_before_anything_is_written(
    bank: MemoryBank, fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidInputError, match=says.replace("(", r"\(").replace(".", r"\.")):
        bank.save("researcher", **fields)
    assert list(bank.objects.list("")) == []


def test_unknown_profiles_and_ids(bank: MemoryBank) -> None:
    for call in (
        lambda: bank.save("nobody", content="x"),
        lambda: bank.recall("nobody", "x"),
        lambda: bank.list("nobody"),
        lambda: bank.get("nobody", "mem-00000000"),
        lambda: bank.delete("nobody", "mem-00000000"),
    ):
        # the error names no other profile: a caller scoped to one tenant reads it too
        with pytest.raises(NotFoundError, match=r"unknown profile 'nobody': declare it"):
            call()
    with pytest.raises(NotFoundError, match="no memory 'mem-00000000' in profile 'researcher'"):
        bank.get("researcher", "mem-00000000")
    with pytest.raises(NotFoundError):
        bank.delete("researcher", "mem-00000000")
    with pytest.raises(InvalidInputError, match="not a memory id"):
        bank.get("researcher", "mem-XYZ")
    for bad in ("../etc", "a/b", "", ".", "x" * 65, "has space"):
        with pytest.raises(InvalidInputError, match="invalid profile name"):
            bank.list(bad)
    with pytest.raises(InvalidInputError, match="limit=0"):
        bank.list("researcher", limit=0)
    with pytest.raises(InvalidInputError, match=r"blank|empty"):
        bank.recall("researcher", " ")


def test_malformed_objects_are_skipped_and_reported(clock: FrozenClock) -> None:
    objects = MemoryObjectStore()
    with MemoryBank(objects, profiles={"p": []}, clock=clock) as writer:
        good = writer.save("p", content="Valid memory.")
    body = json.loads(objects.get(f"memory/p/{good.id}.json").body)
    bad = {
        "memory/p/mem-0000000a.json": b"{not json",
        "memory/p/mem-0000000b.json": json.dumps({"id": "mem-0000000b"}).encode(),
        "memory/p/mem-0000000c.json": json.dumps({**body, "confidence": 7}).encode(),
        "memory/q/mem-0000000d.json": json.dumps(body).encode(),  # its key names another one
        "memory/p/notes.txt": b"hello",
        "memory/p/mem-0000000e.json": b"\xff\xfe",
        "memory/p/mem-0000000f.json": b"[1, 2]",
    }
    for key, value in bad.items():
        objects.put(key, value)
    with MemoryBank(objects, clock=clock) as bank:
        report = bank.last_load
        assert report.loaded == 1 and [m.id for m in bank.list("p").memories] == [good.id]
        reasons = {item.key: item.reason for item in report.skipped}
        assert set(reasons) == set(bad)
        assert "not JSON" in reasons["memory/p/mem-0000000a.json"]
        assert "missing" in reasons["memory/p/mem-0000000b.json"]
        assert "confidence" in reasons["memory/p/mem-0000000c.json"]
        assert "do not match its key" in reasons["memory/q/mem-0000000d.json"]
        assert "not a memory object name" in reasons["memory/p/notes.txt"]
        stats = bank.stats()
        assert stats["totalMemories"] == 1 and len(stats["skipped"]) == len(bad)
        with pytest.raises(NotFoundError):
            bank.list("q")  # a profile made only of a bad object is not known


# -- the conductor's read-through ---------------------------------------------------------------------


def test_a_conductor_sees_runner_saves_after_the_2_second_ttl(clock: FrozenClock) -> None:
    assert REFRESH_TTL_S == 2.0
    objects = MemoryObjectStore()
    ticker = FakeClock()
    with (
        MemoryBank(objects, profiles={"p": ["@memory"]}, clock=clock) as runner,
        MemoryBank(objects, role="conductor", clock=clock, ticker=ticker) as conductor,
    ):
        first = runner.save("p", content="First.")
        ticker.now += 1.99
        with pytest.raises(NotFoundError, match="unknown profile"):
            conductor.list("p")  # not synced yet: p has no memory there
        ticker.now += 0.01
        assert [m.id for m in conductor.list("p").memories] == [first.id]
        runner.recall("p", "first")
        runner.flush()
        second = runner.save("p", content="Second.")
        runner.delete("p", first.id)
        assert [m.id for m in conductor.list("p").memories] == [first.id]  # within the TTL
        ticker.now += 2.0
        page = conductor.list("p")
        assert [m.id for m in page.memories] == [second.id]
        assert conductor.stats()["perProfile"] == {"p": 1}


def test_a_conductors_own_writes_survive_its_refresh(clock: FrozenClock) -> None:
    objects = MemoryObjectStore()
    ticker = FakeClock()
    with MemoryBank(
        objects, profiles={"p": []}, role="conductor", clock=clock, ticker=ticker
    ) as conductor:
        saved = conductor.save("p", content="Saved from the dashboard.")
        ticker.now += 5
        assert [m.id for m in conductor.list("p").memories] == [saved.id]


# -- concurrent writers -----------------------------------------------------------------------------


def _two_writers(make: Callable[[], ObjectStore], clock: FrozenClock) -> None:
    """Two runners on one storage each save 15 memories and count 20 accesses of one shared
    memory, at the same time: a fresh bank must see every save and all 40 accesses."""
    with MemoryBank(make(), profiles={"p": []}, clock=clock) as seed:
        shared = seed.save("p", content="Shared memory.")
    runners = [MemoryBank(make(), profiles={"p": []}, clock=clock) for _ in range(2)]
    start = threading.Barrier(2)

    def work(bank: MemoryBank) -> None:
        start.wait()
        for i in range(20):
            bank.mark_accessed("p", [shared.id])
            if i < 15:
                bank.save("p", content=f"Save {i} of {id(bank)}.")
        bank.flush()

    threads = [threading.Thread(target=work, args=(b,)) for b in runners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for runner in runners:
        runner.close()
    with MemoryBank(make(), clock=clock) as fresh:
        assert fresh.list("p").total == 31
        assert fresh.get("p", shared.id).access_count == 40


def test_two_runners_on_one_directory_lose_no_update(tmp_path: Path, clock: FrozenClock) -> None:
    _two_writers(lambda: FileObjectStore(tmp_path / "bank"), clock)


def test_two_runners_in_memory_lose_no_update(clock: FrozenClock) -> None:
    shared = MemoryObjectStore()
    _two_writers(lambda: shared, clock)


RUNNER = """
import sys
from orcamem.bank.bank import MemoryBank
from orcamem.bank.objects import FileObjectStore
bank = MemoryBank(FileObjectStore(sys.argv[1]), profiles={"p": []})
for _ in range(15):
    bank.mark_accessed("p", [sys.argv[2]])
bank.save("p", content="from a process")
bank.close()
"""


def test_two_runner_processes_lose_no_update(tmp_path: Path, clock: FrozenClock) -> None:
    root = tmp_path / "bank"
    with MemoryBank(FileObjectStore(root), profiles={"p": []}, clock=clock) as seed:
        shared = seed.save("p", content="Shared.")
    processes = [
        subprocess.Popen([sys.executable, "-c", RUNNER, str(root), shared.id]) for _ in range(2)
    ]
    assert [p.wait(60) for p in processes] == [0, 0]
    with MemoryBank(FileObjectStore(root), clock=clock) as fresh:
        assert fresh.get("p", shared.id).access_count == 30
        assert fresh.list("p").total == 3


def test_the_file_store_honours_both_preconditions(tmp_path: Path) -> None:
    store = FileObjectStore(tmp_path)
    etag = store.put("memory/p/a.json", b"1", if_none_match=True)
    with pytest.raises(PreconditionFailedError, match="already exists"):
        store.put("memory/p/a.json", b"2", if_none_match=True)
    with pytest.raises(PreconditionFailedError, match="changed"):
        store.put("memory/p/a.json", b"2", if_match="0" * 32)
    newer = store.put("memory/p/a.json", b"2", if_match=etag)
    store.delete("memory/p/a.json")
    with pytest.raises(PreconditionFailedError, match="deleted"):
        store.put("memory/p/a.json", b"3", if_match=newer)
    with pytest.raises(InvalidInputError):
        store.put("../escape", b"x")
    assert [info.key for info in store.list("")] == []


# -- the CLI (``register(app)`` in interfaces/bank_cli.py) ------------------------------------------


def test_the_bank_commands_over_a_directory(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from orcamem.interfaces.cli.bank import register

    orca_home = Path(os.environ["ORCA_HOME"])
    orca_home.mkdir(parents=True, exist_ok=True)
    (orca_home / "profiles.json").write_text(json.dumps([{"name": "cli", "tools": ["@memory"]}]))
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """orcamem"""

    register(app)
    runner = CliRunner()
    where = ["--dir", str(tmp_path / "bank")]

    def run(*args: str) -> Any:
        return runner.invoke(app, ["bank", *args, *where])

    saved = run("save", "cli", "The user is allergic to peanuts.", "--category", "fact", "--json")
    assert saved.exit_code == 0, saved.output
    memory_id = json.loads(saved.output)["id"]
    assert memory_id in run("list", "cli").output
    recalled = run("recall", "cli", "diet plan", "--json")
    assert json.loads(recalled.output)[0]["memory"]["id"] == memory_id
    assert run("inject", "cli", "Plan dinner.").output.startswith("--- CONTEXT FROM MEMORY ---")
    injected = json.loads(run("inject", "cli", "Plan dinner.", "--json").output)
    assert injected["ids"] == [memory_id] and "allergic to peanuts" in injected["block"]
    stats = json.loads(run("stats").output)
    assert stats["perProfile"] == {"cli": 1} and stats["durable"] is True
    listed = json.loads(run("list", "cli", "--json").output)
    assert listed["memories"][0]["accessCount"] == 3  # the recall and the two injections
    too_big = run("save", "cli", "x" * 4097)
    assert too_big.exit_code == 2 and "4 KiB" in too_big.output
    assert run("list", "nobody").exit_code == 1
    deleted = run("delete", "cli", memory_id, "--json")
    assert deleted.exit_code == 0 and json.loads(deleted.output) == {
        "deleted": memory_id,
        "profile": "cli",
    }
    assert run("delete", "cli", memory_id).exit_code == 1

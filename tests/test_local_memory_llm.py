"""The extraction path against a scripted model on loopback (what is kept, exactly) and a real
one (SmolLM2-135M on llama.cpp, tests/llm_server.py).

A model this small is not wise: it answers NOTHING for 10 of 10 realistic exchanges
(scripts/tiny_model_quality.py, docs/local-memory.md), so the real-model test records each
answer and asserts the exact handling of it: what leaves the machine is the turn's user and assistant
messages only, redacted and bounded; an attempt is retried only after an answer that is not
NOTHING and not well-formed candidates; NOTHING ends the job done with no candidates;
well-formed candidates are kept or rejected one by one, none invented; three failed attempts
fail the job; whatever reaches the ledger is classified, secret-free, attributed and projected.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from local_memory_helpers import turn
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.llm import NOTHING, OpenAIChat
from orcamem._kernel.redact import find_secrets
from orcamem.errors import ModelOutputError
from orcamem.local.extract import MAX_CANDIDATES_PER_TURN, MAX_SOURCE_BYTES
from orcamem.local.ledger import CATEGORIES, MAX_CANDIDATE_CHARS
from orcamem.local.memory import LocalMemory
from orcamem.local.transcript import JsonlTranscript

pytest_plugins = ["llm_server"]

TOKEN = "ghp_" + "Q7w8" * 9


class Recording:
    """Passes calls to the real client and keeps what was sent and what came back (the
    answer, or the error it raised)."""

    def __init__(self, inner: OpenAIChat) -> None:
        self.inner = inner
        self.sent: list[str] = []
        self.answers: list[Any] = []

    @property
    def id(self) -> str:
        return self.inner.id

    def complete_json(self, system: str, user: str, schema: dict, **kw: Any) -> Any:
        self.sent.append(system + "\n" + user)
        try:
            answer = self.inner.complete_json(system, user, schema, **kw)
        except Exception as exc:
            self.answers.append(exc)
            raise
        self.answers.append(answer)
        return answer

    def close(self) -> None:
        self.inner.close()


def test_a_scripted_model_on_loopback_extracts_the_turn_and_every_guarantee_holds(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """The same turn as the real-model test below, against a scripted OpenAI-compatible server
    on loopback that always answers two candidates: the real HTTP client and the whole path
    run, and the test can say exactly what must reach the ledger (the real model usually
    answers nothing for it)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from servers import serve

    answer = {
        "candidates": [
            {"category": "feedback", "text": "Answer in British English."},
            {"category": "project", "text": "The API is deployed with Helm on Fridays."},
        ]
    }
    received: list[dict[str, Any]] = []

    async def chat(request: Request) -> JSONResponse:
        received.append(await request.json())
        content = json.dumps(answer)
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": content}}]})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    project = tmp_path / "api"
    project.mkdir()
    transcript = JsonlTranscript(tmp_path / "transcript.jsonl")
    turn(
        transcript,
        "t1",
        f"From now on answer in British English. We decided to deploy the API with Helm on "
        f"Fridays. My GitHub token is {TOKEN}.",
        "Understood: British English from now on, and API deploys go out with Helm on Fridays.",
        extra=[("tool", "tool", "TOOL-OUTPUT-MARKER kubectl get pods: 3 running")],
    )
    with (
        serve(app, lifespan="off") as url,
        OpenAIChat("scripted", f"{url}/v1") as model,
        LocalMemory(
            project, session_id="s1", model=model, transcript=transcript, clock=clock,
            start=False, root=tmp_path / "orca",
        ) as memory,
    ):  # fmt: skip
        job = memory.finish_turn("t1").job
        assert job is not None
        memory.run_jobs()
        final = memory.jobs.get(job.id)
        kept = memory.candidates().candidates
        snapshot = memory.begin_turn("t2", "How do we deploy the API?")
        extractor = model.id
    assert final.status == "done" and final.attempts == 1
    assert [(c.category, c.text, c.extractor) for c in kept] == [
        ("feedback", "Answer in British English.", extractor),
        ("project", "The API is deployed with Helm on Fridays.", extractor),
    ]
    (request,) = received
    sent = json.dumps(request)
    assert TOKEN not in sent and "[REDACTED:github_token]" in sent
    assert "TOOL-OUTPUT-MARKER" not in sent
    assert "Helm on Fridays" in snapshot.text


@pytest.mark.slow
def test_real_model_extraction_keeps_every_guarantee(
    llama_server: str, tmp_path: Path, clock: FrozenClock
) -> None:
    project = tmp_path / "api"
    project.mkdir()
    transcript = JsonlTranscript(tmp_path / "transcript.jsonl")
    turn(
        transcript,
        "t1",
        f"From now on answer in British English. We decided to deploy the API with Helm on "
        f"Fridays. My GitHub token is {TOKEN}.",
        "Understood: British English from now on, and API deploys go out with Helm on Fridays.",
        extra=[("tool", "tool", "TOOL-OUTPUT-MARKER kubectl get pods: 3 running")],
    )
    model = Recording(OpenAIChat("smollm2", llama_server))
    with LocalMemory(
        project,
        session_id="s1",
        model=model,
        transcript=transcript,
        clock=clock,
        start=False,
        deadline_s=60,
    ) as memory:
        job = memory.finish_turn("t1").job
        assert job is not None
        ran = memory.run_jobs()
        final = memory.jobs.get(job.id)
        state = memory.candidates()
        snapshot = memory.begin_turn("t2", "How do we deploy the API?")
        stale = memory.ledger.stale_projections(state) if state.candidates else []
        files = sorted(p for p in memory.files.dir.rglob("*") if p.is_file())
        stored = {p.name: p.read_text(encoding="utf-8", errors="replace") for p in files}
    model.close()

    # what left the machine: this turn's user and assistant text, redacted, bounded
    assert model.sent and len(model.sent) == final.attempts
    for sent in model.sent:
        assert TOKEN not in sent and "[REDACTED:github_token]" in sent
        assert "TOOL-OUTPUT-MARKER" not in sent
        assert len(sent.split("\n[user]\n", 1)[-1].encode()) <= MAX_SOURCE_BYTES + 64
    # each answer handled exactly: retried only after a failed attempt, then done or failed
    assert final.status in ("done", "failed"), [r.outcome for r in ran]
    assert len(model.answers) == final.attempts
    *retried, last = model.answers
    assert all(attempt_fails(answer) for answer in retried), retried
    mine = [c for c in state.candidates if c.job_id == job.id]
    if final.status == "failed":
        assert final.attempts == 3 and attempt_fails(last) and final.error
        assert mine == []
    elif isinstance(last, str):  # the job is done: the last answer did not fail, so NOTHING
        assert not attempt_fails(last), last
        assert final.result is None and mine == []
    else:
        assert not attempt_fails(last), last
        items = last["candidates"] if isinstance(last, dict) else last
        assert set(final.result) == {"candidates", "rejected"}
        assert len(final.result["candidates"]) + len(final.result["rejected"]) == len(items)
        answered = {(item["category"], " ".join(item["text"].split())) for item in items}
        assert {(c.category, c.text) for c in mine} <= answered  # nothing invented
        assert [c.id for c in mine] == final.result["candidates"]
    # whatever reached the ledger keeps its guarantees
    for candidate in state.candidates:
        assert candidate.category in CATEGORIES
        assert 0 < len(candidate.text) <= MAX_CANDIDATE_CHARS
        assert not find_secrets(candidate.text) and TOKEN not in candidate.text
        assert (candidate.session_id, candidate.turn_id, candidate.job_id) == ("s1", "t1", job.id)
        assert candidate.extractor == model.id
    assert stale == []
    assert len(snapshot.text.encode()) <= 3072 and len(snapshot.entries) <= 6
    # the token is in no file the memory keeps, whatever the model said
    assert stored and not [name for name, text in stored.items() if TOKEN in text]


def attempt_fails(answer: Any) -> bool:
    """The spec's failed attempt: the client's error, or an answer that is neither NOTHING nor
    well-formed candidates (a list of one to eight, each a known category and a non-blank text
    of at most MAX_CANDIDATE_CHARS; an empty list is not NOTHING)."""
    if isinstance(answer, Exception):
        return True
    if isinstance(answer, str) and answer.strip().strip("\"'`").upper() == NOTHING:
        return False
    items = answer.get("candidates") if isinstance(answer, dict) else answer
    if not isinstance(items, list) or not 0 < len(items) <= MAX_CANDIDATES_PER_TURN:
        return True
    return not all(
        isinstance(item, dict)
        and item.get("category") in CATEGORIES
        and isinstance(item.get("text"), str)
        and 0 < len(item["text"].strip()) <= MAX_CANDIDATE_CHARS
        for item in items
    )


def test_the_failed_attempt_oracle_is_the_spec() -> None:
    """The oracle above, on answers a small model does give."""
    assert attempt_fails(ModelOutputError("not JSON")) and not attempt_fails(NOTHING)
    assert not attempt_fails({"candidates": [{"category": "user", "text": "Prefers tabs."}]})
    assert attempt_fails({"candidates": []})  # only NOTHING is empty
    assert attempt_fails({"candidates": [{"category": "gossip", "text": "x"}]})
    assert attempt_fails({"candidates": [{"category": "user", "text": "  "}]})
    assert attempt_fails({"facts": ["x"]}) and attempt_fails("maybe")
    assert attempt_fails({"candidates": [{"category": "user", "text": "x"}] * 9})

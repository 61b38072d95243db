"""Local memory with no model (issue 18, items 3 and 4): the verified rule-based extractor
captures what the user plainly said, names itself, and a capture is a durable job before
``finish_turn`` returns; closing the session while the extractor answers costs no attempt and
does not wait for the answer."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from local_memory_helpers import ScriptedModel, items, turn, wait_until
from orcamem._kernel.clock import FrozenClock
from orcamem.local.memory import LocalMemory
from orcamem.local.transcript import JsonlTranscript

T0 = "2026-11-01T10:00:00Z"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(T0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


@pytest.fixture
def transcript(tmp_path: Path) -> JsonlTranscript:
    return JsonlTranscript(tmp_path / "transcript.jsonl")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "orca"))
    return tmp_path / "orca"


def local(project: Path, transcript: JsonlTranscript, clock: FrozenClock, **kw) -> LocalMemory:
    kw.setdefault("start", False)
    return LocalMemory(project, session_id="s1", transcript=transcript, clock=clock, **kw)


def test_without_a_model_the_rules_extract_what_the_user_said_and_say_so(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    turn(
        transcript,
        "t1",
        "I prefer pytest over unittest. Never commit directly to main, please.",
        "Understood. I prefer tabs myself, and never use eval.",  # the assistant sets nothing
    )
    with local(project, transcript, clock) as memory:
        assert memory.extractor == "rules"
        job = memory.finish_turn("t1").job
        assert [r.outcome for r in memory.run_jobs()] == ["done"]
        kept = memory.candidates().candidates
        assert [(c.category, c.text, c.extractor) for c in kept] == [
            ("user", "The user prefers pytest.", "rules"),
            ("feedback", "Never commit directly to main.", "rules"),
        ]
        assert memory.jobs.get(job.id).provenance["extractor"] == "rules"
        snapshot = memory.begin_turn("t2", "Which test runner do I like, pytest?")
        assert "The user prefers pytest." in snapshot.text
        assert "tabs" not in snapshot.text and "eval" not in snapshot.text


def test_a_turn_with_nothing_durable_is_an_explicit_nothing(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    turn(transcript, "t1", "What does this function return?", "A list of ids.")
    with local(project, transcript, clock) as memory:
        job = memory.finish_turn("t1").job
        assert [r.outcome for r in memory.run_jobs()] == ["done"]
        done = memory.jobs.get(job.id)
        assert (done.status, done.result, done.provenance["extractor"]) == ("done", None, "rules")
        assert memory.candidates().candidates == ()


def test_the_job_names_the_extractor_that_ran_not_the_session_that_queued_it(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    turn(transcript, "t1", "I prefer dark roast coffee.", "Noted.")
    with local(project, transcript, clock) as queued_without_a_model:
        job = queued_without_a_model.finish_turn("t1").job
    model = ScriptedModel(items(("user", "The user likes dark roast.")))
    with local(project, transcript, clock, model=model) as with_a_model:
        assert [r.outcome for r in with_a_model.run_jobs()] == ["done"]
        done = with_a_model.jobs.get(job.id)
    assert done.provenance["extractor"] == "scripted:test"


def test_a_capture_is_a_durable_job_before_finish_turn_returns(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    """With a session worker busy on a model that never answers, the turn's job is on disk
    when ``finish_turn`` returns, so a session that ends right then loses nothing."""
    started, release = threading.Event(), threading.Event()

    def hang() -> dict:
        started.set()
        release.wait(60)
        return items(("user", "Never published."))

    model = ScriptedModel(hang)
    memory = local(project, transcript, clock, model=model, start=True)
    try:
        turn(transcript, "t1", "Which region do we deploy to?", "eu-west-1.")
        first = memory.finish_turn("t1")
        wait_until(started.is_set)  # the worker is inside the model call for t1
        turn(transcript, "t2", "I prefer short answers.", "Sure.")
        second = memory.finish_turn("t2")
        assert not second.queued and second.job is not None
        stored = json.loads((memory.files.jobs / f"{second.job.id}.json").read_text())
        assert stored["status"] == "pending" and stored["turn_id"] == "t2"
        memory.close()
        assert not release.is_set()  # close() returned while the model was still answering
        for job in (first.job, second.job):
            after = memory.jobs.get(job.id)
            assert (after.status, after.attempts, after.lease_owner) == ("pending", 0, None)
    finally:
        release.set()
    with local(project, transcript, clock, model=ScriptedModel()) as later:
        assert [r.outcome for r in later.run_jobs()] == ["done", "done"]


def test_three_closes_mid_answer_never_fail_the_job(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    """Three short-lived processes that each exit while the model answers used to use the
    job's three attempts; each close now gives the lease back and the fourth run succeeds."""
    turn(transcript, "t1", "We pin Node to 22.", "Noted.")
    with local(project, transcript, clock) as queue_it:
        job = queue_it.finish_turn("t1").job
    for _ in range(3):
        started, release = threading.Event(), threading.Event()

        def hang(started=started, release=release) -> dict:
            started.set()
            release.wait(60)
            return items(("project", "Node is pinned to 22."))

        memory = local(project, transcript, clock, model=ScriptedModel(hang), start=True)
        try:
            wait_until(started.is_set)
            memory.close()
        finally:
            release.set()
        after = memory.jobs.get(job.id)
        assert (after.status, after.attempts) == ("pending", 0)
    model = ScriptedModel(items(("project", "Node is pinned to 22.")))
    with local(project, transcript, clock, model=model) as last:
        assert [r.outcome for r in last.run_jobs()] == ["done"]
        assert [c.text for c in last.candidates().candidates] == ["Node is pinned to 22."]


def test_the_memory_folders_are_private(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock, home: Path
) -> None:
    """Issue 18 item 6: ``projects/`` was created 0755 (only the last folder of a path got
    the private mode)."""
    turn(transcript, "t1", "I prefer tea.", "Noted.")
    with local(project, transcript, clock) as memory:
        memory.finish_turn("t1")
        folders = [memory.layout.root, memory.files.dir.parent, memory.files.dir, memory.files.jobs]
    assert [oct(f.stat().st_mode & 0o777) for f in folders] == ["0o700"] * 4


def test_a_worker_process_terminated_while_the_model_answers_uses_no_attempt(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock, home: Path
) -> None:
    """``orcamem memory work`` is a short-lived process too: SIGTERM while its model answers
    gives the job's lease back without using an attempt (three such exits used to fail the
    job for good)."""
    import asyncio
    import os
    import signal
    import subprocess
    import sys

    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from servers import serve

    asked = threading.Event()

    async def hang(request) -> JSONResponse:
        asked.set()
        await asyncio.sleep(3600)
        return JSONResponse({})

    app = Starlette(routes=[Route("/v1/chat/completions", hang, methods=["POST"])])
    turn(transcript, "t1", "We pin Node to 22.", "Noted.")
    with local(project, transcript, clock) as queue_it:
        job = queue_it.finish_turn("t1").job
    env = {**os.environ, "ORCA_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    with serve(app, lifespan="off") as url:
        for _ in range(3):
            asked.clear()
            worker = subprocess.Popen(
                [sys.executable, "-m", "orcamem", "memory", "work", "--upstream", f"{url}/v1",
                 "--model", "m", "--cwd", str(project)],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            wait_until(lambda worker=worker: asked.is_set() or worker.poll() is not None)
            assert asked.is_set(), worker.communicate()
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
            with local(project, transcript, clock) as look:
                after = look.jobs.get(job.id)
            assert (after.status, after.attempts, after.lease_owner) == ("pending", 0, None)

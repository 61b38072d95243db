"""Seed 000 statements that no other test pins (rows of docs/conformance.md)."""

from __future__ import annotations

import json
from pathlib import Path

from local_memory_helpers import ScriptedModel, items, turn
from orcamem._kernel.clock import FrozenClock
from orcamem.local.memory import LocalMemory
from orcamem.local.transcript import JsonlTranscript


def test_deleting_only_the_ledger_leaves_the_job_evidence_and_the_user_facts(
    tmp_path: Path,
) -> None:
    project = tmp_path / "work" / "api"
    project.mkdir(parents=True)
    transcript = JsonlTranscript(tmp_path / "transcript.jsonl")
    clock = FrozenClock("2026-11-01T10:00:00Z")
    model = ScriptedModel(items(("project", "Invoices are archived after seven years.")))
    with LocalMemory(
        project, transcript=transcript, clock=clock, model=model, start=False, session_id="s1"
    ) as memory:
        memory.remember("Prefers short answers.")
        turn(transcript, "t1", "How long do we keep invoices?", "Seven years, then archived.")
        job = memory.finish_turn("t1").job
        assert [r.outcome for r in memory.run_jobs()] == ["done"]
        [kept] = memory.candidates().ids()
        memory.files.candidates.unlink()
        # the job still holds the redacted turn it was extracted from and what it produced
        evidence = json.loads((memory.files.jobs / f"{job.id}.json").read_text())
        assert evidence["result"]["candidates"] == [kept]
        assert "How long do we keep invoices?" in json.dumps(evidence["payload"])
        assert "Prefers short answers." in memory.session_context()  # user.md is separate


def test_the_extractor_is_told_the_four_categories_and_what_to_reject(tmp_path: Path) -> None:
    project = tmp_path / "work" / "api"
    project.mkdir(parents=True)
    transcript = JsonlTranscript(tmp_path / "transcript.jsonl")
    clock = FrozenClock("2026-11-01T10:00:00Z")
    model = ScriptedModel("NOTHING")
    with LocalMemory(
        project, transcript=transcript, clock=clock, model=model, start=False, session_id="s1"
    ) as memory:
        turn(transcript, "t1", "Please fix the failing test.", "Fixed: a missing import.")
        memory.finish_turn("t1")
        assert [r.outcome for r in memory.run_jobs()] == ["done"]
    [system] = model.systems
    for category in ("- user:", "- feedback:", "- project:", "- reference:"):
        assert category in system
    for rejected in (
        "transient task state", "summaries of code", "raw tool output", "credentials",
        "private values", "claims nobody confirmed",
    ):  # fmt: skip
        assert rejected in " ".join(system.split())
    assert "answer NOTHING" in system

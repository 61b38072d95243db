"""The extraction path against a real model (SmolLM2-135M on llama.cpp, tests/llm_server.py).

A model this small is not wise; the test asserts the guarantees that hold whatever it says:
what leaves the machine is the turn's user and assistant messages only, redacted and bounded;
the job ends done or failed, never as an unexplained zero-candidate success; whatever reaches
the ledger is classified, secret-free, attributed and projected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from local_memory_helpers import turn
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.llm import OpenAIChat
from orcamem._kernel.redact import find_secrets
from orcamem.local.extract import MAX_SOURCE_BYTES
from orcamem.local.ledger import CATEGORIES, MAX_CANDIDATE_CHARS
from orcamem.local.memory import LocalMemory
from orcamem.local.transcript import JsonlTranscript

pytest_plugins = ["llm_server"]

TOKEN = "ghp_" + "Q7w8" * 9


class Recording:
    """Passes calls to the real client and keeps what was sent."""

    def __init__(self, inner: OpenAIChat) -> None:
        self.inner = inner
        self.sent: list[str] = []

    @property
    def id(self) -> str:
        return self.inner.id

    def complete_json(self, system: str, user: str, schema: dict, **kw: Any) -> Any:
        self.sent.append(system + "\n" + user)
        return self.inner.complete_json(system, user, schema, **kw)

    def close(self) -> None:
        self.inner.close()


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
    model.close()

    # what left the machine: this turn's user and assistant text, redacted, bounded
    assert model.sent and len(model.sent) == final.attempts
    for sent in model.sent:
        assert TOKEN not in sent and "[REDACTED:github_token]" in sent
        assert "TOOL-OUTPUT-MARKER" not in sent
        assert len(sent.split("\n[user]\n", 1)[-1].encode()) <= MAX_SOURCE_BYTES + 64
    # an outcome, never a silent zero-candidate success
    assert final.status in ("done", "failed"), [r.outcome for r in ran]
    if final.status == "failed":
        assert final.attempts == 3 and final.error
        assert not any(c.job_id == job.id for c in state.candidates)
    elif final.result is not None:
        assert set(final.result) == {"candidates", "rejected"}
    # whatever reached the ledger keeps its guarantees
    for candidate in state.candidates:
        assert candidate.category in CATEGORIES
        assert 0 < len(candidate.text) <= MAX_CANDIDATE_CHARS
        assert not find_secrets(candidate.text) and TOKEN not in candidate.text
        assert (candidate.session_id, candidate.turn_id, candidate.job_id) == ("s1", "t1", job.id)
        assert candidate.extractor == model.id
    assert stale == []
    assert len(snapshot.text.encode()) <= 3072 and len(snapshot.entries) <= 6
    assert TOKEN not in memory.files.candidates.read_text() if state.candidates else True

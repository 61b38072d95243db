"""Consolidation on durable jobs: fencing, model fallback, the background sleeper, and a real
local model end to end."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from orcamem import Config, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.jobs import JobWorker
from orcamem._kernel.llm import OpenAIChat
from orcamem._kernel.text import STOPWORDS
from orcamem.engine import SleepConfig
from orcamem.engine.consolidate.jobs import CONSOLIDATE
from orcamem.engine.consolidate.verify import normal_words
from orcamem.engine.sleeper import Sleeper
from orcamem.errors import LeaseLostError

pytest_plugins = ["llm_server"]


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock("2026-11-01T10:00:00Z")


@pytest.fixture
def mem(tmp_path: Path, clock: FrozenClock) -> Memory:
    with Memory(tmp_path / "m.db", clock=clock) as memory:
        yield memory


def test_a_worker_whose_lease_expired_cannot_write(mem: Memory, clock: FrozenClock) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    slow, fast = Sleeper(mem), Sleeper(mem)
    job = slow.jobs.enqueue_next("default", 32)
    claimed = slow.queue.claim("slow-worker", 60, clock.now())
    assert claimed is not None and claimed.id == job.id
    result = slow.jobs.handle(claimed)  # the "model" answered, but too late:
    clock.advance(seconds=61)
    assert (
        JobWorker(fast.queue, {CONSOLIDATE: fast.jobs.handle}, clock, "fast").run_once().outcome
        == "done"
    )
    with pytest.raises(LeaseLostError):
        slow.queue.publish(claimed, result.value, clock.now(), apply=result.apply)
    assert [m.value for m in mem.facts()] == ["Pune"]  # written once, by the lease holder
    assert mem.sleep().episodes == 0


def test_unreachable_model_falls_back_to_rules_on_the_last_attempt(mem: Memory) -> None:
    mem.observe("user", "I moved to Lisbon yesterday.", occurred_at="2026-10-10T09:00:00Z")
    dead = OpenAIChat("nothing-here", "http://127.0.0.1:9/v1")
    report = mem.sleep(model=dead)
    assert [m.value for m in mem.facts()] == ["Lisbon"]
    assert report.extractors == ["rules"]
    assert len(report.failures) == 2 and all("127.0.0.1:9" in f for f in report.failures)
    job = Sleeper(mem).queue.list("default")[0]
    assert (job.status, job.attempts) == ("done", 3)


def test_background_sleeper_consolidates_idle_spaces(tmp_path: Path) -> None:
    config = Config(sleep=SleepConfig(auto=True, idle_seconds=0.2, batch_threshold=1000))
    with Memory(tmp_path / "bg.db", config=config) as mem:
        mem.observe("user", "I live in Quito.", space="alice")
        mem.observe("user", "I live in Lima.", space="bob")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
            mem.facts(space="alice") and mem.facts(space="bob")
        ):
            time.sleep(0.1)
        assert [m.value for m in mem.facts(space="alice")] == ["Quito"]
        assert [m.value for m in mem.facts(space="bob")] == ["Lima"]


def test_background_sleeper_batch_threshold(tmp_path: Path, clock: FrozenClock) -> None:
    config = Config(sleep=SleepConfig(idle_seconds=3600, batch_threshold=3))
    with Memory(tmp_path / "t.db", config=config, clock=clock) as mem:
        sleeper = Sleeper(mem)
        mem.observe("user", "I live in Oslo.")
        assert sleeper.tick() == []  # neither idle nor over the threshold
        mem.observe("user", "I prefer tea.")
        mem.observe("user", "I'm allergic to cats.")
        assert sleeper.tick() == ["default"]
        clock.advance(hours=2)
        mem.observe("user", "I live in Bergen.", space="other")
        clock.advance(hours=2)
        assert sleeper.tick() == ["other"]  # idle now; "default" already has its job queued


@pytest.mark.slow
def test_real_model_keeps_the_pipelines_guarantees(tmp_path: Path, llama_server: str) -> None:
    """SmolLM2 writes poor facts; what must hold is that nothing ungrounded is stored, the
    baseline survives, episodes are untouched and every job ends done or failed cleanly."""
    with Memory(tmp_path / "real.db") as mem:
        baseline = mem.remember("Prefers dark mode", category="preference")
        for text in (
            "I live in Pune and I work as a backend engineer.",
            "I moved from Pune to Bangalore last week.",
            "My sister's name is Anika.",
            "Never chain PowerShell commands with semicolons.",
        ):
            mem.observe("user", text, session_id="s1")
        before = [e.__dict__ for e in mem.iter_episodes()]
        with OpenAIChat("smollm2", llama_server) as model:
            report = mem.sleep(model=model)
        assert report.episodes == 4
        assert [e.__dict__ for e in mem.iter_episodes()] == before
        assert mem.facts()[0].id == baseline.id and mem.facts()[0].active
        said = set(normal_words(" ".join(e.text for e in mem.iter_episodes())))
        for memory in mem.facts(include_history=True):
            if memory.id == baseline.id:
                continue
            assert memory.cited_lines, memory
            words = [w for w in normal_words(memory.value or "") if w not in STOPWORDS]
            missing = [w for w in words if w not in said]
            assert len(missing) <= (len(words) // 4 if len(words) >= 4 else 0), memory
        jobs = Sleeper(mem).queue.list("default")
        assert jobs and all(job.status in ("done", "failed") for job in jobs)

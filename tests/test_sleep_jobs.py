"""Consolidation on durable jobs: fencing, model fallback, the background sleeper, and a real
local model end to end."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from orcamem import Config, Memory
from orcamem._kernel.claims.verify import normal_words
from orcamem._kernel.clock import FrozenClock, parse_time
from orcamem._kernel.embed import make_embedder
from orcamem._kernel.jobs import JobWorker
from orcamem._kernel.llm import OpenAIChat
from orcamem._kernel.text import STOPWORDS
from orcamem.engine import SleepConfig
from orcamem.engine.consolidate.jobs import CONSOLIDATE, ConsolidationJobs
from orcamem.engine.sleeper import Sleeper
from orcamem.engine.store.vector_index import encode_vector
from orcamem.errors import AttemptFailed, InvalidInputError, LeaseLostError

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


def test_background_sleeper_consolidates_idle_spaces(tmp_path: Path, clock: FrozenClock) -> None:
    """The background thread polls; idleness is measured on the memory's clock, so the test
    decides when the spaces become idle and only waits (hang guard, not a window) for the
    worker thread to finish."""
    config = Config(sleep=SleepConfig(auto=True, idle_seconds=0.2, batch_threshold=1000))
    with Memory(tmp_path / "bg.db", config=config, clock=clock) as mem:
        mem.observe("user", "I live in Quito.", space="alice")
        mem.observe("user", "I live in Lima.", space="bob")
        assert mem.facts(space="alice") == [] and mem.facts(space="bob") == []
        clock.advance(seconds=1)  # both spaces are idle from now on
        done = threading.Event()

        def consolidated() -> None:
            while not (mem.facts(space="alice") and mem.facts(space="bob")):
                time.sleep(0.05)
            done.set()

        threading.Thread(target=consolidated, daemon=True).start()
        assert done.wait(300), "the background sleeper never consolidated the idle spaces"
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


# -- issue 11: a failed batch and a dead lease stop sleep and are reported -------------------


def _bounded_enqueues(monkeypatch: pytest.MonkeyPatch, limit: int = 25) -> list[int]:
    """Fail (instead of hanging) if sleep keeps queueing past ``limit`` passes."""
    calls: list[int] = []
    original = ConsolidationJobs.enqueue_next

    def counted(self: ConsolidationJobs, space: str, batch_size: int):
        calls.append(1)
        assert len(calls) <= limit, "sleep() is spinning: enqueue_next called without progress"
        return original(self, space, batch_size)

    monkeypatch.setattr(ConsolidationJobs, "enqueue_next", counted)
    return calls


def _kill_three_workers(mem: Memory, clock: FrozenClock) -> str:
    """Three workers claim the batch and die; its last lease has expired."""
    sleeper = Sleeper(mem)
    job = sleeper.jobs.enqueue_next("default", 32)
    for n in range(3):
        assert sleeper.queue.claim(f"dead-{n}", 60, clock.now()) is not None
        clock.advance(seconds=61)
    return job.id


def _fail_by_dead_workers(mem: Memory, clock: FrozenClock) -> str:
    """Three workers claim the batch and die; the next claim marks the job failed."""
    job_id = _kill_three_workers(mem, clock)
    queue = Sleeper(mem).queue
    assert queue.claim("reaper", 60, clock.now()) is None
    assert queue.get(job_id).status == "failed"
    return job_id


def test_sleep_reports_a_failed_batch_and_never_spins_on_it(
    mem: Memory, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    job_id = _fail_by_dead_workers(mem, clock)
    _bounded_enqueues(monkeypatch)
    for _ in range(2):  # every later sleep reports it, and returns
        report = mem.sleep()
        assert report.episodes == 0 and report.waiting is None
        assert [b["job"] for b in report.failed_batches] == [job_id]
        assert "expired on attempt 3 of 3" in report.failed_batches[0]["error"]
        assert report.failed_batches[0]["batch"] == report.to_dict()["failed_batches"][0]["batch"]
    assert mem.facts() == []
    assert Sleeper(mem).tick() == []  # the background sleeper does not queue it either


def test_the_sleep_whose_claim_fails_the_batch_reports_it(
    mem: Memory, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    job_id = _kill_three_workers(mem, clock)
    _bounded_enqueues(monkeypatch)
    report = mem.sleep()  # its own claim finds the last lease expired and fails the job
    assert report.episodes == 0 and report.waiting is None
    assert [b["job"] for b in report.failed_batches] == [job_id]
    assert "expired on attempt 3 of 3" in report.failed_batches[0]["error"]


def test_sleep_retry_failed_reopens_the_failed_batch_once(
    mem: Memory, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    job_id = _fail_by_dead_workers(mem, clock)
    _bounded_enqueues(monkeypatch)
    report = mem.sleep(retry_failed=True)
    assert report.failed_batches == [] and report.episodes == 1
    assert [m.value for m in mem.facts()] == ["Pune"]
    job = Sleeper(mem).queue.get(job_id)
    assert (job.status, job.attempts) == ("done", 1)
    assert [e["event"] for e in job.history].count("retried") == 1
    assert mem.sleep().to_dict()["failed_batches"] == []


def test_retry_failed_runs_a_failing_batch_once_more_then_reports_it(
    mem: Memory, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    job_id = _fail_by_dead_workers(mem, clock)
    _bounded_enqueues(monkeypatch)

    def broken(self: ConsolidationJobs, job):
        raise AttemptFailed("rules: broken")

    monkeypatch.setattr(ConsolidationJobs, "handle", broken)
    report = mem.sleep(retry_failed=True)
    assert [(b["job"], b["error"]) for b in report.failed_batches] == [(job_id, "rules: broken")]
    assert Sleeper(mem).queue.get(job_id).attempts == 3  # one retry: three fresh attempts


def test_retry_refuses_a_job_that_is_not_failed(mem: Memory) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    sleeper = Sleeper(mem)
    job = sleeper.jobs.enqueue_next("default", 32)
    with pytest.raises(InvalidInputError, match="not failed"):
        sleeper.queue.retry(job.id, mem.clock.now())


def test_sleep_reports_episodes_waiting_behind_a_live_lease(
    mem: Memory, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    mem.observe("user", "I drink black coffee every morning.", occurred_at="2026-10-10T09:01:00Z")
    sleeper = Sleeper(mem)
    job = sleeper.jobs.enqueue_next("default", 32)
    crashed = sleeper.queue.claim("crashed-worker", 120, clock.now())  # then the process died
    assert crashed is not None
    _bounded_enqueues(monkeypatch)
    report = mem.sleep()
    assert report.episodes == 0 and report.failed_batches == []
    assert report.waiting == {
        "job": job.id,
        "batch": job.turn_id,
        "episodes": 2,
        "worker": "crashed-worker",
        "until": crashed.lease_expires_at,
    }
    assert report.to_dict()["waiting"]["until"] == crashed.lease_expires_at
    assert mem.facts() == []


def test_sleep_wait_takes_over_a_dead_lease_and_fences_the_old_worker(
    mem: Memory, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
    sleeper = Sleeper(mem)
    sleeper.jobs.enqueue_next("default", 32)
    crashed = sleeper.queue.claim("crashed-worker", 120, clock.now())
    late = sleeper.jobs.handle(crashed)  # it had an answer, but never published
    _bounded_enqueues(monkeypatch)
    report = mem.sleep(wait=True)
    assert report.waiting is None and report.episodes == 1
    assert clock.now() >= parse_time(crashed.lease_expires_at)  # it waited for the lease
    assert [m.value for m in mem.facts()] == ["Pune"]
    with pytest.raises(LeaseLostError):
        sleeper.queue.publish(crashed, late.value, clock.now(), apply=late.apply)
    assert [m.value for m in mem.facts()] == ["Pune"]


class _LockProbe:
    """The shipped embedder, asking at every call whether another connection could take
    the database's write lock at once (it cannot while a write transaction is open)."""

    def __init__(self, path: Path) -> None:
        self.inner = make_embedder()
        self.path = path
        self.locked: list[bool] = []

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.path.exists():
            probe = sqlite3.connect(self.path, timeout=0, isolation_level=None)
            try:
                probe.execute("BEGIN IMMEDIATE")
                probe.execute("ROLLBACK")
                self.locked.append(False)
            except sqlite3.OperationalError:
                self.locked.append(True)
            finally:
                probe.close()
        return self.inner.embed(texts)


def test_consolidation_embeds_before_it_takes_the_write_lock(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """The gate's vectors (a new state, and the preference it replaces, compared by meaning)
    are made before the publishing transaction, and are the vectors of the memory's text."""
    path = tmp_path / "m.db"
    probe = _LockProbe(path)
    with Memory(path, clock=clock, embedder=probe) as mem:
        mem.observe("user", "I live in Pune.", session_id="s1")
        mem.observe("user", "I prefer tea in the morning.", session_id="s1")
        mem.sleep()
        mem.observe("user", "I moved from Pune to Bangalore last week.", session_id="s1")
        mem.observe("user", "Actually I prefer coffee now.", session_id="s1")
        probe.locked.clear()
        report = mem.sleep()
        assert report.stored and report.superseded
    assert probe.locked and not any(probe.locked)
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT content, summary, vector FROM memories").fetchall()
    finally:
        conn.close()
    assert len(rows) >= 3
    for content, summary, vector in rows:
        text = f"{content}. {summary}" if summary else content
        assert vector == encode_vector(probe.inner.embed([text])[0])

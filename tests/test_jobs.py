"""Durable jobs: idempotent, admitted, leased, fenced, retried three times, resumed after a crash.

Every test runs on both row backends of an engine store: a real SQLite file and a real
PostgreSQL database (``tests/pg_server.py``); time is a ``FrozenClock`` the test moves. Two
tests race real processes and one SIGKILLs a worker mid-job.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from orcamem._kernel.clock import FrozenClock, format_time, parse_time
from orcamem._kernel.jobs import (
    NOTHING,
    Job,
    JobQueue,
    JobResult,
    JobWorker,
    check_items,
    classify_output,
)
from orcamem.engine.store import is_postgres, open_store
from orcamem.engine.store.base import Store
from orcamem.errors import (
    AttemptFailed,
    InvalidInputError,
    InvalidSpaceError,
    JobCancelled,
    LeaseLostError,
    NotFoundError,
    QueueFullError,
    TransientError,
)

T0 = "2026-11-01T10:00:00Z"


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the jobs live: an SQLite file, or a PostgreSQL database."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return str(tmp_path / "jobs.db")


@pytest.fixture
def db(target: str) -> Iterator[Store]:
    store = open_store(target, synchronous="NORMAL")
    with store.writing() as conn:
        conn.execute("CREATE TABLE effects (who TEXT NOT NULL, job_id TEXT NOT NULL)")
    yield store
    store.close()


@pytest.fixture
def queue(db: Store) -> JobQueue:
    return JobQueue(db.jobs)


def put(
    queue: JobQueue,
    clock: FrozenClock,
    turn: str = "t1",
    *,
    space: str = "alice",
    kind: str = "extract",
) -> Job:
    return queue.enqueue(
        space, kind, "s1", turn, f"sha256:{turn}", {"text": f"turn {turn}"}, clock.now()
    )


def effect(store: Store, who: str, job: Job) -> Callable[[], None]:
    """An ``apply`` step: one row that must land exactly once, with the job's done mark."""
    mark = "%s" if is_postgres(getattr(store, "url", "")) else "?"

    def apply() -> None:
        with store.writing() as conn:
            conn.execute(f"INSERT INTO effects VALUES ({mark}, {mark})", (who, job.id))

    return apply


def effects(store: Store) -> list[tuple[str, str]]:
    with store.reading() as conn:
        rows = conn.execute("SELECT who, job_id FROM effects ORDER BY who, job_id").fetchall()
    return [tuple(row) for row in rows]


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.005)


def later(clock: FrozenClock, seconds: float) -> str:
    return format_time(clock.now() + timedelta(seconds=seconds))


# -- enqueue -----------------------------------------------------------------------------------


def test_enqueue_is_idempotent_by_space_kind_session_turn_and_digest(
    queue: JobQueue, clock: FrozenClock
) -> None:
    first = put(queue, clock)
    clock.advance(seconds=5)
    again = queue.enqueue(
        "alice", "extract", "s1", "t1", "sha256:t1", {"text": "other"}, clock.now()
    )
    assert again == first  # the existing job, payload and times unchanged
    assert again.payload == {"text": "turn t1"}
    assert queue.counts("alice")["pending"] == 1
    # any part of the key makes a new job
    assert put(queue, clock, "t2").id != first.id
    assert queue.enqueue("bob", "extract", "s1", "t1", "sha256:t1", {}, clock.now()).id != first.id
    assert queue.enqueue("alice", "sleep", "s1", "t1", "sha256:t1", {}, clock.now()).id != first.id
    # a finished job is returned as is, not run again
    job = queue.claim("w", 30, clock.now())
    assert job is not None and job.id == first.id
    queue.publish(job, NOTHING, clock.now())
    assert put(queue, clock).status == "done"


def test_bad_input_is_refused_before_anything_is_written(
    queue: JobQueue, clock: FrozenClock
) -> None:
    with pytest.raises(InvalidSpaceError):
        queue.enqueue("no/slashes", "extract", None, None, "d", {}, clock.now())
    with pytest.raises(InvalidInputError, match="JSON-serializable"):
        queue.enqueue("alice", "extract", None, None, "d", {"x": object()}, clock.now())
    with pytest.raises(InvalidInputError, match="1 MiB"):
        queue.enqueue("alice", "extract", None, None, "d", {"x": "a" * 1_100_000}, clock.now())
    with pytest.raises(InvalidInputError, match="source_digest"):
        queue.enqueue("alice", "extract", None, None, "", {}, clock.now())
    assert queue.list() == []


def test_admission_is_limited_per_space_and_exhausted_jobs_free_capacity(
    queue: JobQueue, clock: FrozenClock
) -> None:
    jobs = [put(queue, clock, f"t{i}") for i in range(64)]
    with pytest.raises(QueueFullError, match="64 active jobs"):
        put(queue, clock, "t64")
    assert queue.counts("alice")["pending"] == 64  # nothing was written
    assert put(queue, clock, "t0") == jobs[0]  # an existing key is still answered
    assert put(queue, clock, "t0", space="bob").status == "pending"  # other spaces unaffected
    # a job that used its attempts no longer counts; neither does a done one
    for _ in range(3):
        job = queue.claim("w", 30, clock.now())
        assert job is not None and job.id == jobs[0].id
        queue.fail(job, "malformed output", clock.now())
    assert queue.get(jobs[0].id).status == "failed"
    put(queue, clock, "t64")
    with pytest.raises(QueueFullError):
        put(queue, clock, "t65")
    job = queue.claim("w", 30, clock.now())
    assert job is not None
    queue.publish(job, {"items": 1}, clock.now())
    put(queue, clock, "t65")


# -- claim -------------------------------------------------------------------------------------


def test_claim_takes_the_oldest_ready_job_of_the_handled_kinds(
    queue: JobQueue, clock: FrozenClock
) -> None:
    a = put(queue, clock, "a")
    clock.advance(seconds=1)
    b = put(queue, clock, "b")
    clock.advance(seconds=1)
    c = put(queue, clock, "c", kind="sleep")
    first = queue.claim("w", 30, clock.now())
    assert first is not None and first.id == a.id
    assert (first.status, first.lease_owner, first.fence, first.attempts) == ("running", "w", 1, 1)
    assert first.lease_expires_at == later(clock, 30)
    queue.reschedule(first, clock.now())  # waits 30 s
    assert queue.claim("w", 30, clock.now(), kinds=["sleep"]).id == c.id
    assert queue.claim("w", 30, clock.now(), kinds=["extract"]).id == b.id
    assert queue.claim("w", 30, clock.now()) is None
    clock.advance(seconds=30)
    assert queue.claim("w", 30, clock.now()).id == a.id
    assert queue.claim("w", 30, clock.now(), spaces=["bob"]) is None


def test_an_expired_lease_is_taken_over_and_the_old_worker_cannot_write(
    queue: JobQueue, db: Store, clock: FrozenClock
) -> None:
    put(queue, clock)
    old = queue.claim("old", 30, clock.now())
    assert old is not None
    clock.advance(seconds=29)
    assert queue.claim("new", 30, clock.now()) is None  # still leased
    clock.advance(seconds=2)
    new = queue.claim("new", 30, clock.now())
    assert new is not None and new.id == old.id
    assert (new.fence, new.attempts, new.lease_owner) == (2, 2, "new")
    # the old worker comes back: every write it tries is refused, and its apply leaves no trace
    with pytest.raises(LeaseLostError, match="fence 1"):
        queue.publish(old, {"items": 3}, clock.now(), apply=effect(db, "old", old))
    for call in (queue.renew, queue.cancel, queue.reschedule):
        with pytest.raises(LeaseLostError):
            call(old, clock.now())
    with pytest.raises(LeaseLostError):
        queue.fail(old, "late", clock.now())
    assert effects(db) == []
    assert queue.get(new.id).lease_owner == "new"
    done = queue.publish(new, {"items": 3}, clock.now(), apply=effect(db, "new", new))
    assert effects(db) == [("new", new.id)]
    assert done.status == "done" and done.result == {"items": 3}
    assert done.provenance["published_by"] == "new"
    assert [e["event"] for e in done.history] == [
        "queued",
        "claimed",
        "lease expired",
        "claimed",
        "done",
    ]


def test_an_expired_lease_cannot_publish_even_before_a_takeover(
    queue: JobQueue, db: Store, clock: FrozenClock
) -> None:
    put(queue, clock)
    job = queue.claim("w", 30, clock.now())
    assert job is not None
    clock.advance(seconds=30)
    with pytest.raises(LeaseLostError, match="expired"):
        queue.publish(job, {"items": 1}, clock.now(), apply=effect(db, "w", job))
    with pytest.raises(LeaseLostError):
        queue.renew(job, clock.now())
    assert effects(db) == []
    assert queue.claim("next", 30, clock.now()).fence == 2


def test_publish_is_one_transaction_with_apply(
    queue: JobQueue, db: Store, clock: FrozenClock
) -> None:
    put(queue, clock)
    job = queue.claim("w", 30, clock.now())
    assert job is not None

    def half_then_crash() -> None:
        effect(db, "w", job)()
        raise RuntimeError("disk full halfway")

    with pytest.raises(RuntimeError):
        queue.publish(job, {"items": 1}, clock.now(), apply=half_then_crash)
    assert effects(db) == []
    assert queue.get(job.id).status == "running"
    with pytest.raises(InvalidInputError, match="NOTHING"):
        queue.publish(job, [], clock.now())
    queue.publish(job, {"items": 1}, clock.now(), apply=effect(db, "w", job))
    assert effects(db) == [("w", job.id)]


# -- the worker --------------------------------------------------------------------------------


def test_renewal_keeps_a_silent_handler_alive_while_time_passes(
    queue: JobQueue, clock: FrozenClock
) -> None:
    started, release = threading.Event(), threading.Event()

    def handler(job: Job) -> dict:
        started.set()  # then silent, like a model that streams nothing
        assert release.wait(10)
        return {"items": 1}

    job = put(queue, clock)
    worker = JobWorker(queue, {"extract": handler}, clock, "slow", lease_s=10, renew_every_s=0.01)
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(worker.run_once()))
    thread.start()
    assert started.wait(5)
    original_expiry = queue.get(job.id).lease_expires_at
    for _ in range(4):
        clock.advance(seconds=4)
        wanted = later(clock, 10)
        wait_until(lambda wanted=wanted: queue.get(job.id).lease_expires_at == wanted)
    assert clock.now() > parse_time(original_expiry)  # past the original lease, still owned
    assert queue.claim("thief", 10, clock.now()) is None
    release.set()
    thread.join(5)
    assert outcome[0].outcome == "done"
    assert queue.get(job.id).attempts == 1


def test_a_worker_that_loses_its_lease_mid_handler_writes_nothing(
    queue: JobQueue, db: Store, clock: FrozenClock
) -> None:
    started, release = threading.Event(), threading.Event()
    job = put(queue, clock)

    def handler(job: Job) -> JobResult:
        started.set()
        assert release.wait(10)
        return JobResult({"items": 1}, effect(db, "slow", job))

    worker = JobWorker(queue, {"extract": handler}, clock, "slow", lease_s=10, renew_every_s=0.01)
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(worker.run_once()))
    thread.start()
    assert started.wait(5)
    clock.advance(seconds=11)  # e.g. the laptop slept: the lease is gone
    thief = queue.claim("thief", 10, clock.now())
    assert thief is not None and thief.fence == 2
    release.set()
    thread.join(5)
    assert outcome[0].outcome == "lost"
    assert effects(db) == []
    assert queue.get(job.id).lease_owner == "thief"


def test_three_failed_attempts_then_failed(queue: JobQueue, clock: FrozenClock) -> None:
    calls = []

    def handler(job: Job) -> None:
        calls.append(job.attempts)
        raise AttemptFailed(f"malformed output: attempt {job.attempts}")

    job = put(queue, clock)
    worker = JobWorker(queue, {"extract": handler}, clock, "w")
    assert [worker.run_once().outcome for _ in range(4)] == ["retry", "retry", "failed", "idle"]
    failed = queue.get(job.id)
    assert (failed.status, failed.attempts, failed.error) == (
        "failed",
        3,
        "malformed output: attempt 3",
    )
    assert calls == [1, 2, 3]
    assert [e["event"] for e in failed.history][-3:] == ["attempt failed", "claimed", "failed"]
    assert queue.counts("alice") == {"pending": 0, "running": 0, "done": 0, "failed": 1}


def test_a_lease_that_expires_on_the_last_attempt_fails_the_job(
    queue: JobQueue, clock: FrozenClock
) -> None:
    job = put(queue, clock)
    for _ in range(3):  # three workers die holding it
        assert queue.claim("dies", 30, clock.now()) is not None
        clock.advance(seconds=31)
    assert queue.claim("w", 30, clock.now()) is None
    failed = queue.get(job.id)
    assert failed.status == "failed" and "expired on attempt 3 of 3" in failed.error


@pytest.mark.parametrize("empty", [None, [], {}, "", "   "])
def test_an_empty_result_is_a_failed_attempt(queue: JobQueue, clock: FrozenClock, empty) -> None:
    job = put(queue, clock)
    ran = JobWorker(queue, {"extract": lambda job: empty}, clock, "w").run_once()
    assert ran.outcome == "retry" and "NOTHING" in ran.error
    assert queue.get(job.id).status == "pending"


def test_nothing_is_a_successful_empty_result(
    queue: JobQueue, db: Store, clock: FrozenClock
) -> None:
    a, b = put(queue, clock, "a"), put(queue, clock, "b")
    worker = JobWorker(queue, {"extract": lambda job: NOTHING}, clock, "w")
    assert worker.run_once().outcome == "done"
    assert queue.get(a.id).result is None and queue.get(a.id).status == "done"
    # NOTHING with an apply step (e.g. move a watermark) still applies it
    worker = JobWorker(
        queue, {"extract": lambda job: JobResult(NOTHING, effect(db, "w", job))}, clock, "w"
    )
    assert worker.run_once().outcome == "done"
    assert effects(db) == [("w", b.id)]


def test_a_handler_error_is_a_failed_attempt(queue: JobQueue, clock: FrozenClock) -> None:
    def broken(job: Job) -> dict:
        raise ValueError("the model server answered 500")

    job = put(queue, clock)
    ran = JobWorker(queue, {"extract": broken}, clock, "w").run_once()
    assert ran.outcome == "retry" and "ValueError: the model server answered 500" in ran.error
    assert queue.get(job.id).attempts == 1


def test_cancel_releases_the_lease_without_using_an_attempt(
    queue: JobQueue, clock: FrozenClock
) -> None:
    job = put(queue, clock)
    claimed = queue.claim("w", 30, clock.now())
    cancelled = queue.cancel(claimed, clock.now())
    assert (cancelled.status, cancelled.attempts, cancelled.lease_owner) == ("pending", 0, None)
    again = queue.claim("w2", 30, clock.now())  # at once, no waiting
    assert (again.attempts, again.fence) == (1, 2)
    queue.cancel(again, clock.now())

    def stopped(job: Job) -> dict:
        raise JobCancelled("the session ended")

    worker = JobWorker(queue, {"extract": stopped}, clock, "w")
    for _ in range(5):  # however often it is cancelled, no attempt is used
        assert worker.run_once().outcome == "cancelled"
    assert queue.get(job.id).attempts == 0

    def interrupted(job: Job) -> dict:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        JobWorker(queue, {"extract": interrupted}, clock, "w").run_once()
    job = queue.get(job.id)
    assert (job.status, job.attempts, job.lease_owner) == ("pending", 0, None)


def test_a_transient_failure_reschedules_after_30_seconds(
    queue: JobQueue, db: Store, clock: FrozenClock
) -> None:
    job = put(queue, clock)
    claimed = queue.claim("w", 30, clock.now())
    later_job = queue.reschedule(claimed, clock.now())
    assert later_job.not_before == later(clock, 30)
    assert (later_job.status, later_job.attempts) == ("pending", 0)
    clock.advance(seconds=29.9)
    assert queue.claim("w", 30, clock.now()) is None
    clock.advance(seconds=0.1)
    claimed = queue.claim("w", 30, clock.now())
    assert claimed is not None and claimed.attempts == 1
    queue.cancel(claimed, clock.now())

    def locked(job: Job) -> dict:
        raise TransientError("the ledger lock is held by another process")

    ran = JobWorker(queue, {"extract": locked}, clock, "w").run_once()
    assert ran.outcome == "rescheduled" and ran.job.not_before == later(clock, 30)

    def store_busy_in_apply(job: Job) -> JobResult:
        def apply() -> None:
            from orcamem.errors import StoreError

            raise StoreError("database is locked")

        return JobResult({"items": 1}, apply)

    clock.advance(seconds=30)
    ran = JobWorker(queue, {"extract": store_busy_in_apply}, clock, "w").run_once()
    assert ran.outcome == "rescheduled"
    assert queue.get(job.id).attempts == 0


def test_classify_output_and_check_items() -> None:
    parse = json.loads
    assert classify_output(" nothing ", parse) == NOTHING
    assert classify_output('"NOTHING"', parse) == NOTHING
    assert classify_output('{"items": [1]}', parse) == {"items": [1]}
    for text, reason in [
        (None, "empty"),
        ("  ", "empty"),
        ("[]", "empty"),
        ("{not json", "malformed"),
        ("[" + "1," * 20_000 + "1]", "over-limit"),
    ]:
        with pytest.raises(AttemptFailed, match=reason):
            classify_output(text, parse)
    items = [{"category": "user"}, {"category": "project"}]
    assert check_items(items, allowed={"user", "project"}) == items
    for bad, reason in [
        ([{"category": "gossip"}], "unclassified"),
        ([{"text": "no category"}], "unclassified"),
        ([], "empty"),
        ("x", "malformed"),
        (items * 5, "over-limit"),
    ]:
        with pytest.raises(AttemptFailed, match=reason):
            check_items(bad, allowed={"user", "project"}, max_items=8)


# -- retention, audit, lifecycle ---------------------------------------------------------------


def test_only_the_newest_128_done_jobs_are_kept_per_space(
    queue: JobQueue, clock: FrozenClock
) -> None:
    other = put(queue, clock, "x", space="bob")
    queue.publish(queue.claim("w", 30, clock.now()), NOTHING, clock.now())
    ids = []
    for number in range(130):
        clock.advance(seconds=1)
        ids.append(put(queue, clock, f"t{number}").id)
        queue.publish(queue.claim("w", 30, clock.now()), {"n": number}, clock.now())
    kept = queue.list("alice", status="done", limit=500)
    assert len(kept) == 128
    assert {job.id for job in kept} == set(ids[2:])
    for pruned in ids[:2]:
        with pytest.raises(NotFoundError):
            queue.get(pruned)
    assert queue.get(other.id).status == "done"


def test_jobs_are_readable_for_audit(queue: JobQueue, clock: FrozenClock) -> None:
    job = queue.enqueue(
        "alice",
        "extract",
        "s1",
        "t1",
        "sha256:t1",
        {"text": "hi"},
        clock.now(),
        provenance={"extractor": "rules", "source": "turn"},
    )
    claimed = queue.claim("w1", 30, clock.now())
    queue.fail(claimed, "malformed output: no items", clock.now())
    clock.advance(seconds=1)
    claimed = queue.claim("w2", 30, clock.now())
    queue.publish(claimed, {"items": 2}, clock.now(), provenance={"model": "smollm2"})
    audit = queue.get(job.id).to_dict()
    assert audit["status"] == "done" and audit["attempts"] == 2
    assert audit["error"] == "malformed output: no items"  # the last failure stays visible
    assert audit["provenance"] == {
        "extractor": "rules",
        "source": "turn",
        "model": "smollm2",
        "published_by": "w2",
        "fence": 2,
    }
    assert [(e["event"], e.get("worker")) for e in audit["history"]] == [
        ("queued", None),
        ("claimed", "w1"),
        ("attempt failed", None),
        ("claimed", "w2"),
        ("done", "w2"),
    ]
    json.dumps(audit)


def test_pending_jobs_resume_in_a_new_store_and_worker(target: str, clock: FrozenClock) -> None:
    with open_store(target) as store:
        job = put(JobQueue(store.jobs), clock)
    with open_store(target) as store:
        queue = JobQueue(store.jobs)
        assert (
            JobWorker(queue, {"extract": lambda job: {"ok": 1}}, clock).run_once().outcome == "done"
        )
        assert queue.get(job.id).status == "done"


def test_a_worker_thread_runs_jobs_until_stopped(
    queue: JobQueue, db: Store, clock: FrozenClock
) -> None:
    worker = JobWorker(queue, {"extract": lambda job: {"ok": 1}}, clock, "bg", idle_s=5)
    with worker:
        assert worker.running
        job = put(queue, clock)
        worker.wake()  # no need to wait out idle_s
        wait_until(lambda: queue.get(job.id).status == "done")
    assert not worker.running
    # a worker whose store is closed ends by itself
    worker = JobWorker(queue, {"extract": lambda job: {"ok": 1}}, clock, "bg", idle_s=0.01).start()
    db.close()
    wait_until(lambda: not worker.running)
    assert worker.stop(timeout=1)


# -- processes ---------------------------------------------------------------------------------

RACER = textwrap.dedent("""
    import os, sys, time
    from orcamem._kernel.jobs import JobQueue
    from orcamem.engine.store import open_store
    path, name, now, go = sys.argv[1:5]
    queue = JobQueue(open_store(path, synchronous="NORMAL").jobs)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    claimed = []
    while (job := queue.claim(name, 60, now)) is not None:
        claimed.append(job.id)
    print(" ".join(claimed), flush=True)
""")


def spawn(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("jobs", [1, 40])
def test_racing_processes_never_claim_the_same_job(
    queue: JobQueue, target: str, clock: FrozenClock, tmp_path: Path, jobs: int
) -> None:
    ids = {put(queue, clock, f"t{i}").id for i in range(jobs)}
    go = tmp_path / "go"
    racers = [spawn(RACER, target, name, T0, str(go)) for name in ("p1", "p2")]
    for proc in racers:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    claimed = []
    for proc in racers:
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        claimed.append(out.split())
    assert sorted(claimed[0] + claimed[1]) == sorted(ids)  # every job once, none twice
    assert not set(claimed[0]) & set(claimed[1])
    if jobs == 1:
        assert sorted(len(c) for c in claimed) == [0, 1]  # exactly one winner
    assert all(queue.get(i).fence == 1 for i in ids)


VICTIM = textwrap.dedent("""
    import sys, time
    from orcamem._kernel.clock import FrozenClock
    from orcamem._kernel.jobs import JobQueue, JobResult, JobWorker
    from orcamem.engine.store import is_postgres, open_store
    path, now, where = sys.argv[1:4]
    store = open_store(path, synchronous="NORMAL")
    queue = JobQueue(store.jobs)
    mark = "%s" if is_postgres(path) else "?"

    def handler(job):
        if where == "handler":
            print("killing me now", flush=True)
            time.sleep(60)

        def apply():
            with store.writing() as conn:
                conn.execute(f"INSERT INTO effects VALUES ('victim', {mark})", (job.id,))
            print("killing me now", flush=True)  # mid-publish, the transaction still open
            time.sleep(60)

        return JobResult({"items": 1}, apply)

    worker = JobWorker(queue, {"extract": handler}, FrozenClock(now), "victim", lease_s=30,
                       renew_every_s=0.05)
    worker.run_once()
""")


@pytest.mark.parametrize("where", ["handler", "apply"])
def test_a_worker_killed_mid_job_is_taken_over_and_applied_exactly_once(
    queue: JobQueue, db: Store, target: str, clock: FrozenClock, where: str
) -> None:
    job = put(queue, clock)
    victim = spawn(VICTIM, target, T0, where)
    assert victim.stdout is not None
    assert victim.stdout.readline().strip() == "killing me now", victim.stderr.read()
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=10)
    clock.advance(seconds=10)
    assert queue.claim("early", 30, clock.now()) is None  # its lease still holds
    assert queue.get(job.id).lease_owner == "victim"
    clock.advance(seconds=21)
    rescuer = JobWorker(
        queue,
        {"extract": lambda job: JobResult({"items": 1}, effect(db, "rescuer", job))},
        clock,
        "rescuer",
    )
    ran = rescuer.run_once()
    assert ran.outcome == "done" and ran.job.attempts == 2 and ran.job.fence == 2
    assert effects(db) == [("rescuer", job.id)]  # applied once, by the new worker
    assert rescuer.run_once().outcome == "idle"
    assert all(problem.kind != "sqlite" for problem in db.problems())

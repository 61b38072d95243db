"""Running consolidation: now (``Memory.sleep``) or in the background.

The background sleeper wakes every few seconds and, for each space, queues a consolidation
batch once the space has been idle for ``config.sleep.idle_seconds`` (120 s: no new episode)
or has ``config.sleep.batch_threshold`` episodes pending; a ``JobWorker`` thread runs the
queued jobs with leases, so another process's worker (or a later one) can take over any job
it leaves.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from .._kernel.claims.anchor import zone
from .._kernel.clock import parse_time, stamp
from .._kernel.jobs import Job, JobQueue, JobWorker
from .consolidate.extract import ModelExtractor
from .consolidate.jobs import CONSOLIDATE, ConsolidationJobs
from .consolidate.sleep import SleepReport

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Sleeper"]

log = logging.getLogger("orcamem")


def _failed(job: Job) -> dict:
    return {"job": job.id, "batch": job.turn_id, "error": job.error}


class Sleeper:
    """Consolidation jobs for one ``Memory`` (and, with a model, its extractor)."""

    def __init__(self, memory: Memory, model: Any = None) -> None:
        self.memory = memory
        self.queue = JobQueue(memory.store.jobs)
        self.jobs = ConsolidationJobs(
            store=memory.store,
            queue=self.queue,
            embedder_of=memory.embedder_of,
            tz=zone(memory.config.sleep.timezone),
            now=partial(stamp, memory.clock),
            model_extractor=ModelExtractor(model) if model is not None else None,
            defeasible=memory.config.sleep.enable_defeasible_logic,
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._worker: JobWorker | None = None

    def _worker_for(self, spaces: list[str] | None) -> JobWorker:
        return JobWorker(
            self.queue,
            {CONSOLIDATE: self.jobs.handle},
            self.memory.clock,
            lease_s=self.memory.config.sleep.lease_seconds,
            spaces=spaces,
        )

    def run(
        self,
        space: str,
        progress: Any = None,
        *,
        retry_failed: bool = False,
        wait: bool = False,
    ) -> SleepReport:
        """Consolidate ``space`` until a pass makes no progress.

        Each pass queues the next batch and runs one job. The loop stops as soon as the
        worker finds nothing it can run (idle, rescheduled, store unavailable), so it is
        bounded whatever the queue holds; it looks once more when the pass queued nothing,
        since the claim that found nothing may just have failed a job whose last lease expired. Why it stopped is in the report: a batch whose job
        is ``failed`` is listed in ``failed_batches`` (with ``retry_failed`` it is re-opened
        once, for fresh attempts, and run); a batch another worker holds under an unexpired
        lease is ``waiting`` (with ``wait`` this waits, on the Memory's clock, until the lease
        expires and then takes the job over through the normal expired-lease claim; the
        fence keeps the old worker from writing).
        """
        worker = self._worker_for([space])
        report = SleepReport()
        batch = self.memory.config.sleep.batch_size
        retried: set[str] = set()
        waited: set[tuple[str, int, str | None]] = set()
        rechecked = False
        while True:
            queued = self.jobs.enqueue_next(space, batch)
            if queued is not None and queued.status == "failed":
                if not retry_failed or queued.id in retried:
                    report.failed_batches.append(_failed(queued))
                    break
                retried.add(queued.id)
                self.queue.retry(queued.id, self.memory.clock.now(), "sleep(retry_failed=True)")
            ran = worker.run_once()
            if ran.outcome == "done" and ran.job is not None:
                done = self.jobs.reports.pop(ran.job.id, None)
                if done is not None:
                    report.add(done)
            if progress:
                progress(
                    report.episodes,
                    report.episodes + len(self.memory.store.pending_episodes(space, 10_000)),
                )
            if ran.outcome not in ("idle", "store_error", "rescheduled", "cancelled"):
                continue  # a job moved on: done, or one of its bounded attempts was used
            held = self._held_by_other(space, worker.worker_id)
            if held is None:
                if queued is None and not rechecked:
                    rechecked = True  # this claim may have failed a job whose last lease expired
                    continue
                break
            key = (held.id, held.fence, held.lease_expires_at)
            if wait and key not in waited:
                waited.add(key)
                left = (parse_time(held.lease_expires_at) - self.memory.clock.now()).total_seconds()
                getattr(self.memory.clock, "sleep", time.sleep)(max(left, 0.0) + 0.01)
                continue
            report.waiting = {
                "job": held.id,
                "batch": held.turn_id,
                "episodes": len(self.memory.store.pending_episodes(space, 10_000)),
                "worker": held.lease_owner,
                "until": held.lease_expires_at,
            }
            break
        report.failures = list(self.jobs.failures)
        self.jobs.failures.clear()
        return report

    def _held_by_other(self, space: str, worker_id: str) -> Job | None:
        """The space's consolidation job another worker holds under an unexpired lease."""
        now = stamp(self.memory.clock)
        for job in self.queue.list(space, status="running"):
            if (
                job.kind == CONSOLIDATE
                and job.lease_owner != worker_id
                and (job.lease_expires_at or "") > now
            ):
                return job
        return None

    # -- background --------------------------------------------------------------------------

    def start(self) -> Sleeper:
        """Start the background sleeper and its job worker (daemon threads)."""
        if self._thread is None:
            self._worker = self._worker_for(None).start()
            self._thread = threading.Thread(target=self._loop, name="orcamem-sleeper", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        config = self.memory.config
        every = max(0.05, min(5.0, config.sleep.idle_seconds / 4))
        while not self._stop.wait(every):
            try:
                self.tick()
            except Exception as exc:
                log.warning("background sleep check failed: %s", exc)

    def tick(self) -> list[str]:
        """Queue a batch for every space that is idle or over the threshold; returns them."""
        config, store = self.memory.config, self.memory.store
        now = self.memory.clock.now()
        queued = []
        for info in store.list_spaces():
            pending = store.pending_episodes(info.name, config.sleep.batch_threshold)
            if not pending:
                continue
            newest = store.last_episode_created(info.name)
            idle = newest is None or (now - parse_time(newest)).total_seconds() >= (
                config.sleep.idle_seconds
            )
            if not (idle or len(pending) >= config.sleep.batch_threshold):
                continue
            job = self.jobs.enqueue_next(info.name, config.sleep.batch_size)
            if job is not None and job.active:  # a failed batch waits for sleep(retry_failed)
                queued.append(info.name)
        if queued and self._worker is not None:
            self._worker.wake()
        return queued

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop checking; the worker finishes the job it holds."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._worker is not None:
            self._worker.stop(timeout)

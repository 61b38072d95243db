"""``JobWorker``: claims jobs from a :class:`~orcamem._kernel.jobs.queue.JobQueue`, runs their
handlers under a renewed lease, and files each outcome (done, retry, failed, rescheduled,
cancelled, lost); plus the output checks every handler shares (``classify_output``,
``check_items``)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

from ...errors import (
    AttemptFailed,
    ClosedError,
    InvalidInputError,
    JobCancelled,
    LeaseLostError,
    StoreError,
    TransientError,
)
from ..clock import Clock
from ..llm.protocol import NOTHING, is_nothing
from .queue import RESCHEDULE_DELAY_S, Job, JobQueue, JobResult, is_empty

__all__ = ["Handler", "JobWorker", "Ran", "check_items", "classify_output"]

log = logging.getLogger("orcamem.jobs")


class Ran(NamedTuple):
    """What :meth:`JobWorker.run_once` did.

    ``outcome`` is ``idle`` (nothing to claim), ``done``, ``retry`` (a failed attempt, retried
    later), ``failed`` (the last attempt failed), ``rescheduled``, ``cancelled``, ``lost`` (the
    lease was lost; another worker has the job) or ``store_error`` (the store could not be used).
    """

    outcome: str
    job: Job | None = None
    error: str | None = None


Handler = Callable[[Job], Any]


def classify_output(
    text: str | None,
    parse: Callable[[str], Any],
    *,
    max_chars: int = 32 * 1024,
) -> Any:
    """Turn a model's raw output into a value a handler can publish, or fail the attempt.

    ``NOTHING`` (the whole reply, any case, quotes allowed) is the explicit empty success.
    ``parse`` turns the text into the value; it may raise ``ValueError``/``KeyError``/
    ``TypeError`` (malformed) or :class:`AttemptFailed` itself (e.g. unclassified items).

    Raises:
        AttemptFailed: the output is empty, over ``max_chars``, malformed, or parses to nothing
            (an empty list is not NOTHING).
    """
    if text is None or not text.strip():
        raise AttemptFailed(
            "empty output: the model returned nothing (only NOTHING is an empty success)"
        )
    if len(text) > max_chars:
        raise AttemptFailed(
            f"over-limit output: {len(text):,} characters (the limit is {max_chars:,})"
        )
    if is_nothing(text):
        return NOTHING
    try:
        value = parse(text)
    except AttemptFailed:
        raise
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise AttemptFailed(f"malformed output: {exc}") from None
    if is_nothing(value):
        return NOTHING
    if is_empty(value):
        raise AttemptFailed("empty output: it parsed to nothing (answer NOTHING for no items)")
    return value


def check_items(
    items: Any,
    *,
    allowed: Collection[str],
    field: str = "category",
    max_items: int | None = None,
) -> list[Mapping[str, Any]]:
    """Check a parsed list of items: non-empty, within ``max_items``, each classified.

    Raises:
        AttemptFailed: not a list of objects, empty, over ``max_items``, or an item whose
            ``field`` is missing or not in ``allowed`` (unclassified).
    """
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise AttemptFailed("malformed output: expected a list of objects")
    if not items:
        raise AttemptFailed("empty output: no items (answer NOTHING for no items)")
    if max_items is not None and len(items) > max_items:
        raise AttemptFailed(f"over-limit output: {len(items)} items (the limit is {max_items})")
    for number, item in enumerate(items, 1):
        if item.get(field) not in allowed:
            raise AttemptFailed(
                f"unclassified output: item {number} has {field}={item.get(field)!r}, not one of "
                f"{sorted(allowed)}"
            )
    return items


def _default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class JobWorker:
    """Claims jobs and runs their handlers, one at a time, renewing the lease meanwhile.

    Args:
        queue: the job queue.
        handlers: ``kind → handler(job)``; only these kinds are claimed. A handler returns a
            result, a :class:`JobResult` (result + ``apply``), or :data:`NOTHING`; it raises
            :class:`AttemptFailed` for unusable output, :class:`TransientError` to retry in
            30 s without using an attempt, :class:`JobCancelled` to give the job back.
        clock: the time used for leases (renewal is paced by real sleeps, timed by this clock).
        worker_id: the lease owner name (default ``host:pid:random``).
        lease_s: lease length; a job whose worker stops renewing is taken over after this.
        renew_every_s: real seconds between renewals (default a third of ``lease_s``).
        idle_s: real seconds to wait when there is nothing to claim (``wake()`` cuts it short).
        retry_delay_s: real seconds to wait after the store failed (30).
        spaces: claim only jobs of these spaces (a session-owned worker); default all.

    One worker runs one job at a time; run several workers for parallelism. ``start()`` runs
    :meth:`run_forever` in a daemon thread; ``stop()`` ends it after the current job.
    """

    def __init__(
        self,
        queue: JobQueue,
        handlers: Mapping[str, Handler],
        clock: Clock,
        worker_id: str | None = None,
        *,
        lease_s: float = 60.0,
        renew_every_s: float | None = None,
        idle_s: float = 1.0,
        retry_delay_s: float = RESCHEDULE_DELAY_S,
        spaces: Collection[str] | None = None,
    ) -> None:
        if not handlers:
            raise InvalidInputError("a JobWorker needs at least one handler")
        if lease_s <= 0:
            raise InvalidInputError(f"lease_s={lease_s} must be positive")
        renew = lease_s / 3 if renew_every_s is None else renew_every_s
        if not 0 < renew < lease_s:
            raise InvalidInputError(
                f"renew_every_s={renew} must be positive and shorter than lease_s={lease_s}"
            )
        self.queue = queue
        self.handlers = dict(handlers)
        self.clock = clock
        self.worker_id = worker_id or _default_worker_id()
        self.lease_s = lease_s
        self.renew_every_s = renew
        self.idle_s = idle_s
        self.retry_delay_s = retry_delay_s
        self.spaces = list(spaces) if spaces is not None else None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    # -- one job -------------------------------------------------------------------------------

    def run_once(self) -> Ran:
        """Claim one job and run it to an outcome (see :class:`Ran`)."""
        try:
            job = self.queue.claim(
                self.worker_id,
                self.lease_s,
                self.clock.now(),
                kinds=list(self.handlers),
                spaces=self.spaces,
            )
        except (StoreError, TransientError) as exc:
            log.warning("job store unavailable, retrying in %.0f s: %s", self.retry_delay_s, exc)
            return Ran("store_error", None, str(exc))
        if job is None:
            return Ran("idle")
        try:
            with self._renewing(job) as lost:
                value, apply, provenance = self._run_handler(job)
            if lost.is_set():
                raise LeaseLostError(f"job {job.id}: the lease was lost while the handler ran")
            done = self.queue.publish(
                job, value, self.clock.now(), apply=apply, provenance=provenance
            )
            return Ran("done", done)
        except LeaseLostError as exc:
            log.info("gave up job %s: %s", job.id, exc)
            return Ran("lost", job, str(exc))
        except (KeyboardInterrupt, SystemExit):
            self._settle(job, "cancel", "interrupted")
            raise
        except JobCancelled as exc:
            return self._settle(job, "cancel", str(exc) or "cancelled")
        except (TransientError, StoreError) as exc:
            return self._settle(job, "reschedule", f"{type(exc).__name__}: {exc}")
        except AttemptFailed as exc:
            return self._settle(job, "fail", str(exc))
        except ClosedError:  # the lease expires and the job returns to another worker
            raise
        except Exception as exc:  # a handler bug or a model error: a failed attempt
            log.warning("job %s attempt %d failed", job.id, job.attempts, exc_info=True)
            return self._settle(job, "fail", f"{type(exc).__name__}: {exc}")

    def _run_handler(
        self, job: Job
    ) -> tuple[Any, Callable[[], object] | None, Mapping[str, Any] | None]:
        handler = self.handlers[job.kind]
        outcome = handler(job)
        if not isinstance(outcome, JobResult):
            outcome = JobResult(outcome)
        value, apply = outcome.value, outcome.apply
        if not is_nothing(value) and is_empty(value):
            raise AttemptFailed(
                f"empty result ({value!r}) from the {job.kind!r} handler: return NOTHING for an "
                "explicit empty result"
            )
        return value, apply, outcome.provenance

    def _settle(self, job: Job, action: str, reason: str) -> Ran:
        now = self.clock.now()
        try:
            if action == "fail":
                settled = self.queue.fail(job, reason, now)
                return Ran("failed" if settled.status == "failed" else "retry", settled, reason)
            if action == "cancel":
                return Ran("cancelled", self.queue.cancel(job, now, reason), reason)
            return Ran("rescheduled", self.queue.reschedule(job, now, reason=reason), reason)
        except LeaseLostError as exc:
            return Ran("lost", job, str(exc))
        except (StoreError, TransientError, ClosedError) as exc:
            # The lease will expire and the job return by itself.
            log.warning("could not record the outcome of job %s: %s", job.id, exc)
            return Ran("store_error", job, f"{reason}; then {exc}")

    @contextmanager
    def _renewing(self, job: Job) -> Iterator[threading.Event]:
        """Renew ``job``'s lease every ``renew_every_s`` real seconds while the block runs.

        Yields an event that is set if the lease was lost. The renewal does not depend on the
        handler making progress: a model that streams nothing keeps its job.
        """
        finished = threading.Event()
        lost = threading.Event()

        def loop() -> None:
            while not finished.wait(self.renew_every_s):
                try:
                    self.queue.renew(job, self.clock.now(), lease_s=self.lease_s)
                except LeaseLostError as exc:
                    log.warning("lost the lease of job %s: %s", job.id, exc)
                    lost.set()
                    return
                except (StoreError, TransientError) as exc:  # try again next tick
                    log.warning("could not renew the lease of job %s: %s", job.id, exc)
                except ClosedError:
                    return

        thread = threading.Thread(target=loop, name=f"orcamem-lease-{job.id}", daemon=True)
        thread.start()
        try:
            yield lost
        finally:
            finished.set()
            thread.join()

    # -- the loop ------------------------------------------------------------------------------

    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Run jobs until ``stop`` (default: this worker's own stop event) is set.

        Idle: waits ``idle_s`` (or until :meth:`wake`). Store down: waits ``retry_delay_s``.
        Store closed: returns.
        """
        stop = stop or self._stop
        while not stop.is_set() and not self._stop.is_set():
            try:
                ran = self.run_once()
            except ClosedError:  # the store was closed under us: nothing left to do
                log.info("job worker %s stops: its store is closed", self.worker_id)
                return
            except Exception:  # never let the worker thread die silently
                log.exception("job worker %s failed; retrying", self.worker_id)
                ran = Ran("store_error")
            if ran.outcome == "idle":
                self._pause(self.idle_s)
            elif ran.outcome == "store_error":
                self._pause(self.retry_delay_s)

    def _pause(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def wake(self) -> None:
        """Look for work now (e.g. right after an enqueue) instead of after the idle wait."""
        self._wake.set()

    def start(self) -> JobWorker:
        """Run :meth:`run_forever` in a daemon thread. Returns ``self``."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._stop.clear()
        self._thread = threading.Thread(
            target=self.run_forever, name=f"orcamem-jobs-{self.worker_id}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> bool:
        """Stop after the current job (its handler is not interrupted). Idempotent.

        Returns whether the thread ended within ``timeout``; if not, it ends when its handler
        returns, and a job it never finishes is taken over after its lease expires.
        """
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> JobWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

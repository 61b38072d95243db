"""Durable background jobs: a queue with leases, fencing tokens and bounded retries.

Language-model work (extraction, consolidation) runs off the hot path as jobs. The rules, exactly
as the local-memory spec ("Capture and Recovery") describes them:

- **Idempotent.** A job is identified by ``(space, kind, session_id, turn_id, source_digest)``;
  enqueueing the same key again returns the job that exists, whatever its status.
- **Admission.** At most ``max_active`` (64) active jobs — pending or running — per space; a
  further enqueue raises :class:`QueueFullError` and writes nothing. Done, failed (exhausted)
  jobs no longer count.
- **Leases.** :meth:`JobQueue.claim` takes the oldest pending job whose ``not_before`` has come,
  or a running job whose lease expired (its worker died or hung), marks it running for
  ``lease_s`` seconds and bumps its ``fence`` and ``attempts``. A :class:`JobWorker` renews the
  lease from a background thread by wall clock, so a handler waiting on a model that streams
  nothing keeps its job.
- **Fencing.** :meth:`JobQueue.publish` runs the caller's ``apply()`` and marks the job done in
  one store transaction, only if the caller still holds the current fence and an unexpired
  lease; otherwise it raises :class:`LeaseLostError` and nothing ``apply()`` wrote survives. An
  old worker that comes back after a takeover cannot write.
- **Attempts.** Each claim uses one of ``max_attempts`` (3) attempts; a failed attempt
  (:meth:`JobQueue.fail`) returns the job to pending until the attempts are used, then marks it
  ``failed``. A lease that expires on the last attempt fails the job too. Cancellation
  (:meth:`JobQueue.cancel`) releases the lease and gives the attempt back. A transient store or
  lock failure (:meth:`JobQueue.reschedule`) gives it back too and makes the job wait 30 s.
- **Retry.** A ``failed`` job stays failed (enqueueing its key again returns it) until someone
  re-opens it explicitly (:meth:`JobQueue.retry`): pending again with fresh attempts, its last
  error and history kept. Nothing re-opens a failed job on its own.
- **Outcomes.** A handler returns a result (or a :class:`JobResult` with an ``apply`` step), or
  :data:`NOTHING` (the model's own, ``orcamem._kernel.llm.NOTHING``) for an explicit empty
  success. ``None`` or an empty container is a failed
  attempt, never a zero-item success; so is :class:`AttemptFailed` (empty, malformed,
  unclassified or over-limit output). :class:`TransientError` (and a ``StoreError``) reschedules;
  :class:`JobCancelled` cancels.
- **Recovery.** All state is in the store: pending and expired jobs resume when any worker
  (a new process, after a crash) next claims. Nothing in memory is needed.
- **Retention.** The newest ``keep_done`` (128) done jobs per space are kept; older done jobs are
  pruned when a job is published. Failed jobs are kept for audit.
- **Audit.** Every job records its status, attempts, last error, provenance (caller metadata plus
  who published it) and a bounded history of what happened to it.

The rules live here, once; a store supplies only row access inside its transactions
(:class:`JobStore`: ``sqlite.py`` rows in a SQLite file, ``files.py`` one JSON file a job);
``worker.py`` runs them.

>>> from orcamem._kernel.clock import FrozenClock
>>> from orcamem.engine.store import SQLiteStore
>>> from orcamem._kernel.jobs import JobWorker
>>> store = SQLiteStore(":memory:")
>>> queue = JobQueue(store.jobs)
>>> clock = FrozenClock("2026-11-01T10:00:00Z")
>>> job = queue.enqueue("user_a", "extract", "s1", "t1", "sha256:ab12", {"text": "hi"}, clock.now())
>>> worker = JobWorker(queue, {"extract": lambda job: NOTHING}, clock, "w1")
>>> worker.run_once().outcome
'done'
>>> queue.get(job.id).status
'done'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from ...errors import (
    InvalidInputError,
    LeaseLostError,
    NotFoundError,
    QueueFullError,
)
from ..clock import format_time, parse_time
from ..ids import stable_id
from ..llm.protocol import NOTHING, is_nothing
from ..model import validate_space

__all__ = [
    "JOB_STATUSES",
    "KEEP_DONE",
    "MAX_ACTIVE",
    "MAX_ATTEMPTS",
    "NOTHING",
    "RESCHEDULE_DELAY_S",
    "Job",
    "JobQueue",
    "JobResult",
    "JobRows",
    "JobStore",
    "is_empty",
    "job_id",
]

log = logging.getLogger("orcamem.jobs")

MAX_ATTEMPTS = 3
MAX_ACTIVE = 64
KEEP_DONE = 128
RESCHEDULE_DELAY_S = 30.0
MAX_PAYLOAD_BYTES = 1024 * 1024
HISTORY_LIMIT = 32
JOB_STATUSES = ("pending", "running", "done", "failed")

Row = dict[str, Any]


# -- records -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A durable unit of background work, as stored (times are stored strings, UTC ``Z``)."""

    id: str
    space: str
    kind: str
    session_id: str | None
    turn_id: str | None
    source_digest: str
    payload: dict[str, Any]
    status: str
    """``pending`` | ``running`` | ``done`` | ``failed`` (failed = its attempts are used)."""
    attempts: int
    """Attempts used, counting the running one."""
    max_attempts: int
    lease_owner: str | None
    lease_expires_at: str | None
    fence: int
    """Bumped by every claim: the token a worker must still hold to renew or publish."""
    not_before: str | None
    error: str | None
    """The last failure's reason (kept when a later attempt succeeds, for audit)."""
    result: Any
    """The published result (JSON); ``None`` for :data:`NOTHING` and while not done."""
    provenance: dict[str, Any]
    """The caller's metadata (extractor, model, source) plus ``published_by`` once done."""
    created_at: str
    updated_at: str
    history: tuple[dict[str, Any], ...] = field(default=())
    """What happened to the job, oldest first (the newest 32 events)."""

    @property
    def active(self) -> bool:
        return self.status in ("pending", "running")

    @property
    def lease_s(self) -> float | None:
        """The lease length the current owner claimed with."""
        for event in reversed(self.history):
            if event.get("event") == "claimed":
                return event.get("lease_s")
        return None

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["history"] = list(self.history)
        return data


@dataclass(frozen=True)
class JobResult:
    """What a handler returns when publishing must also write something.

    ``apply`` runs inside the publishing transaction, after the lease and fence are checked;
    its store writes (``store.writing()`` on the *same* store) join that transaction, so they
    commit with the job's ``done`` mark or not at all. ``provenance`` is merged into the job's
    (e.g. the extractor that ran), with :data:`NOTHING` as well as with a value.
    """

    value: Any
    apply: Callable[[], object] | None = None
    provenance: Mapping[str, Any] | None = None


def job_id(
    space: str, kind: str, session_id: str | None, turn_id: str | None, source_digest: str
) -> str:
    """The job id of an idempotency key: the same in every process and store."""
    return stable_id("job-", space, kind, session_id or "", turn_id or "", source_digest, length=24)


# -- the store interface -----------------------------------------------------------------------


class JobRows(Protocol):
    """Row access inside one store transaction (rows are ``dict``\\ s keyed by column)."""

    def get(self, job_id: str) -> Row | None: ...
    def count_active(self, space: str) -> int: ...
    def next_claimable(
        self, now: str, kinds: Collection[str] | None, spaces: Collection[str] | None
    ) -> Row | None:
        """The oldest (by ``created_at``) pending row with ``not_before <= now``, or running row
        with ``lease_expires_at <= now``."""
        ...

    def insert(self, row: Row) -> None: ...
    def update(self, job_id: str, changes: Row) -> None: ...
    def prune_done(self, space: str, keep: int) -> int:
        """Delete all but the newest ``keep`` done rows of ``space`` (by ``updated_at``)."""
        ...

    def list(
        self, space: str | None, statuses: Collection[str] | None, limit: int
    ) -> list[Row]: ...
    def counts(self, space: str | None) -> dict[str, int]: ...


class JobStore(Protocol):
    """Where jobs live. ``writing()`` is one atomic transaction that blocks other writers (in any
    process) until it ends; nested store writes inside it join it."""

    def writing(self) -> AbstractContextManager[JobRows]: ...
    def reading(self) -> AbstractContextManager[JobRows]: ...


# -- encoding ----------------------------------------------------------------------------------


def _dump(value: Any, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"the job {what} must be JSON-serializable: {exc}") from None


def _job(row: Row) -> Job:
    provenance = json.loads(row["provenance"] or "{}")
    history = tuple(provenance.pop("history", ()))
    return Job(
        id=row["id"],
        space=row["space"],
        kind=row["kind"],
        session_id=row["session_id"],
        turn_id=row["turn_id"],
        source_digest=row["source_digest"],
        payload=json.loads(row["payload"]),
        status=row["status"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        fence=row["fence"],
        not_before=row["not_before"],
        error=row["error"],
        result=json.loads(row["result"]) if row["result"] is not None else None,
        provenance=provenance,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        history=history,
    )


def _provenance(job: Job, **changes: Any) -> str:
    """The provenance column: caller metadata plus the bounded history."""
    data = {**job.provenance, **changes.get("provenance", {})}
    data["history"] = list(changes.get("history", job.history))[-HISTORY_LIMIT:]
    return _dump(data, "provenance")


def _stamp(now: datetime | str) -> str:
    try:
        return format_time(parse_time(now))
    except (TypeError, ValueError):
        raise InvalidInputError(f"now={now!r} is not a time: pass clock.now()") from None


def _later(now: str, seconds: float) -> str:
    return format_time(parse_time(now) + timedelta(seconds=seconds))


def is_empty(value: Any) -> bool:
    """``None``, blank text or an empty container: a failed attempt, never a success."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, (list, tuple, dict, set, frozenset)) and not value


# -- the queue ---------------------------------------------------------------------------------


class JobQueue:
    """The job rules over a :class:`JobStore`. Safe to share between threads and processes.

    Args:
        store: where the jobs live (a store's ``jobs``, e.g. ``SQLiteStore.jobs``).
        max_active: active (pending + running) jobs admitted per space.
        keep_done: done jobs kept per space.
        max_attempts: attempts before a job is marked failed.
        reschedule_delay_s: how long a rescheduled job waits.
    """

    def __init__(
        self,
        store: JobStore,
        *,
        max_active: int = MAX_ACTIVE,
        keep_done: int = KEEP_DONE,
        max_attempts: int = MAX_ATTEMPTS,
        reschedule_delay_s: float = RESCHEDULE_DELAY_S,
    ) -> None:
        if max_active < 1 or keep_done < 0 or max_attempts < 1 or reschedule_delay_s < 0:
            raise InvalidInputError(
                "max_active and max_attempts must be at least 1, keep_done and "
                "reschedule_delay_s at least 0"
            )
        self.store = store
        self.max_active = max_active
        self.keep_done = keep_done
        self.max_attempts = max_attempts
        self.reschedule_delay_s = reschedule_delay_s

    # -- producing -----------------------------------------------------------------------------

    def enqueue(
        self,
        space: str,
        kind: str,
        session_id: str | None,
        turn_id: str | None,
        source_digest: str,
        payload: Mapping[str, Any],
        now: datetime | str,
        *,
        provenance: Mapping[str, Any] | None = None,
    ) -> Job:
        """Queue a job, or return the one that already has this key (any status).

        Args:
            space: the space the job works for (its admission budget).
            kind: which handler runs it (``"extract"``, ``"consolidate"``).
            session_id, turn_id: where the source came from (part of the key; may be ``None``).
            source_digest: a digest of the (redacted) source (part of the key).
            payload: the job's input, JSON-serializable, at most 1 MiB — redact it first.
            now: the current time (``clock.now()``).
            provenance: caller metadata kept for audit (extractor, model, source); the key
                ``history`` is reserved for the job's own event log.

        Raises:
            QueueFullError: the space already has ``max_active`` active jobs (nothing written).
            InvalidInputError: a bad space, kind, digest, payload or time.
        """
        validate_space(space)
        if not isinstance(kind, str) or not 0 < len(kind) <= 64:
            raise InvalidInputError(f"job kind {kind!r} must be 1-64 characters, e.g. 'extract'")
        if not isinstance(source_digest, str) or not 0 < len(source_digest) <= 256:
            raise InvalidInputError("source_digest must be a non-empty string (e.g. sha256 hex)")
        stamp = _stamp(now)
        payload_text = _dump(dict(payload), "payload")
        if len(payload_text.encode("utf-8", "surrogatepass")) > MAX_PAYLOAD_BYTES:
            raise InvalidInputError(
                "the job payload is over 1 MiB: store a bounded, redacted excerpt (the spec's "
                "32 KiB source bound) and reference the rest by id"
            )
        ident = job_id(space, kind, session_id, turn_id, source_digest)
        history = [{"at": stamp, "event": "queued"}]
        row = {
            "id": ident,
            "space": space,
            "kind": kind,
            "session_id": session_id,
            "turn_id": turn_id,
            "source_digest": source_digest,
            "payload": payload_text,
            "status": "pending",
            "attempts": 0,
            "max_attempts": self.max_attempts,
            "lease_owner": None,
            "lease_expires_at": None,
            "fence": 0,
            "not_before": stamp,
            "error": None,
            "result": None,
            "provenance": _dump({**(provenance or {}), "history": history}, "provenance"),
            "created_at": stamp,
            "updated_at": stamp,
        }
        with self.store.writing() as rows:
            existing = rows.get(ident)
            if existing is not None:
                return _job(existing)
            active = rows.count_active(space)
            if active >= self.max_active:
                raise QueueFullError(
                    f"space {space!r} already has {active} active jobs (the limit is "
                    f"{self.max_active}): nothing was queued; start a worker (or wait for it) "
                    "and enqueue again later"
                )
            rows.insert(row)
        return _job(row)

    # -- consuming -----------------------------------------------------------------------------

    def claim(
        self,
        worker_id: str,
        lease_s: float,
        now: datetime | str,
        *,
        kinds: Collection[str] | None = None,
        spaces: Collection[str] | None = None,
    ) -> Job | None:
        """Lease the next job, or ``None`` when none is ready.

        The oldest pending job whose ``not_before`` has come, or a running job whose lease
        expired, becomes ``running`` for ``lease_s`` seconds, owned by ``worker_id``, with its
        ``fence`` and ``attempts`` bumped. An expired job that already used its last attempt is
        marked failed instead. Exactly one of several racing claimers (in any process) gets a
        job.
        """
        if not worker_id:
            raise InvalidInputError("worker_id must be a non-empty string")
        if lease_s <= 0:
            raise InvalidInputError(f"lease_s={lease_s} must be positive")
        stamp = _stamp(now)
        kinds = list(kinds) if kinds is not None else None
        spaces = list(spaces) if spaces is not None else None
        with self.store.writing() as rows:
            while True:
                row = rows.next_claimable(stamp, kinds, spaces)
                if row is None:
                    return None
                job = _job(row)
                history = list(job.history)
                if job.status == "running":
                    history.append(
                        {
                            "at": stamp,
                            "event": "lease expired",
                            "worker": job.lease_owner,
                            "fence": job.fence,
                        }
                    )
                    if job.attempts >= job.max_attempts:
                        error = (
                            f"the lease of {job.lease_owner} expired on attempt {job.attempts} "
                            f"of {job.max_attempts} (the worker died or hung)"
                        )
                        history.append({"at": stamp, "event": "failed", "error": error})
                        rows.update(
                            job.id,
                            {
                                "status": "failed",
                                "lease_owner": None,
                                "lease_expires_at": None,
                                "error": error,
                                "provenance": _provenance(job, history=history),
                                "updated_at": stamp,
                            },
                        )
                        continue
                fence = job.fence + 1
                attempts = job.attempts + 1
                history.append(
                    {
                        "at": stamp,
                        "event": "claimed",
                        "worker": worker_id,
                        "fence": fence,
                        "attempt": attempts,
                        "lease_s": lease_s,
                    }
                )
                changes = {
                    "status": "running",
                    "lease_owner": worker_id,
                    "lease_expires_at": _later(stamp, lease_s),
                    "fence": fence,
                    "attempts": attempts,
                    "provenance": _provenance(job, history=history),
                    "updated_at": stamp,
                }
                rows.update(job.id, changes)
                return _job({**row, **changes})

    def renew(self, job: Job, now: datetime | str, *, lease_s: float | None = None) -> Job:
        """Extend the caller's lease to ``now + lease_s`` (default: the length it claimed with).

        Raises:
            LeaseLostError: the lease expired, or another claim has fenced the caller out.
        """
        stamp = _stamp(now)
        with self.store.writing() as rows:
            current = self._owned(rows, job, stamp, unexpired=True)
            length = lease_s if lease_s is not None else (current.lease_s or job.lease_s or 60.0)
            changes = {"lease_expires_at": _later(stamp, length), "updated_at": stamp}
            rows.update(job.id, changes)
        return replace(current, **changes)

    def publish(
        self,
        job: Job,
        result: Any,
        now: datetime | str,
        *,
        apply: Callable[[], object] | None = None,
        provenance: Mapping[str, Any] | None = None,
    ) -> Job:
        """Run ``apply()`` and mark the job done, in one transaction, if the caller still owns it.

        Args:
            job: the job as :meth:`claim` returned it (its ``fence`` is the caller's token).
            result: the JSON-serializable result, or :data:`NOTHING`.
            now: the current time.
            apply: writes that must land exactly once with the result, through the same store
                (nested ``writing()`` joins this transaction). No model calls: the store's write
                lock is held while it runs.
            provenance: metadata merged into the job's provenance (e.g. the model that answered).

        Raises:
            LeaseLostError: the lease expired or was taken over; nothing was written.
            InvalidInputError: ``result`` is empty (``None``, ``""``, ``[]``, ``{}``: return
                NOTHING) or not JSON-serializable.
        """
        if not is_nothing(result) and is_empty(result):
            raise InvalidInputError(
                f"an empty result ({result!r}) is not a success: publish NOTHING for an explicit "
                "empty result, or fail the attempt"
            )
        encoded = None if is_nothing(result) else _dump(result, "result")
        stamp = _stamp(now)
        with self.store.writing() as rows:
            current = self._owned(rows, job, stamp, unexpired=True)
            if apply is not None:
                apply()
            history = [
                *current.history,
                {"at": stamp, "event": "done", "worker": job.lease_owner, "fence": job.fence},
            ]
            extra = {**(provenance or {}), "published_by": job.lease_owner, "fence": job.fence}
            changes = {
                "status": "done",
                "result": encoded,
                "lease_owner": None,
                "lease_expires_at": None,
                "provenance": _provenance(current, provenance=extra, history=history),
                "updated_at": stamp,
            }
            rows.update(job.id, changes)
            rows.prune_done(job.space, self.keep_done)
            row = rows.get(job.id)
        assert row is not None
        return _job(row)

    def fail(self, job: Job, error: str, now: datetime | str) -> Job:
        """A failed attempt: back to pending while attempts remain, else ``failed``.

        Raises:
            LeaseLostError: another claim has fenced the caller out (its failure is moot).
        """
        stamp = _stamp(now)
        reason = str(error)[:2000] or "failed"
        with self.store.writing() as rows:
            current = self._owned(rows, job, stamp, unexpired=False)
            exhausted = current.attempts >= current.max_attempts
            event = {
                "at": stamp,
                "event": "failed" if exhausted else "attempt failed",
                "attempt": current.attempts,
                "error": reason,
            }
            changes = {
                "status": "failed" if exhausted else "pending",
                "lease_owner": None,
                "lease_expires_at": None,
                "not_before": stamp,
                "error": reason,
                "provenance": _provenance(current, history=[*current.history, event]),
                "updated_at": stamp,
            }
            rows.update(job.id, changes)
        return replace(current, **_decoded(changes))

    def retry(self, job_id: str, now: datetime | str, reason: str = "retry requested") -> Job:
        """Re-open a ``failed`` job: pending at once with all its attempts again.

        The last error and the history are kept (the history records the retry). The job
        counts against the space's active budget again.

        Raises:
            NotFoundError: no such job.
            InvalidInputError: the job is not ``failed`` (pending, running and done jobs are
                left alone).
            QueueFullError: the space already has ``max_active`` active jobs.
        """
        stamp = _stamp(now)
        with self.store.writing() as rows:
            row = rows.get(job_id)
            if row is None:
                raise NotFoundError(f"no job {job_id!r}: list jobs with JobQueue.list()")
            current = _job(row)
            if current.status != "failed":
                raise InvalidInputError(
                    f"job {job_id} is {current.status}, not failed: only a failed job is retried"
                )
            active = rows.count_active(current.space)
            if active >= self.max_active:
                raise QueueFullError(
                    f"space {current.space!r} already has {active} active jobs (the limit is "
                    f"{self.max_active}): job {job_id} was not re-opened; retry it later"
                )
            entry = {"at": stamp, "event": "retried", "reason": str(reason)[:2000]}
            changes = {
                "status": "pending",
                "attempts": 0,
                "lease_owner": None,
                "lease_expires_at": None,
                "not_before": stamp,
                "provenance": _provenance(current, history=[*current.history, entry]),
                "updated_at": stamp,
            }
            rows.update(job_id, changes)
        return replace(current, **_decoded(changes))

    def cancel(self, job: Job, now: datetime | str, reason: str = "cancelled") -> Job:
        """Release the lease without using an attempt: the job is pending again at once.

        Raises:
            LeaseLostError: another claim has fenced the caller out.
        """
        return self._release(job, now, delay_s=0.0, event="cancelled", reason=reason)

    def reschedule(
        self,
        job: Job,
        now: datetime | str,
        delay_s: float | None = None,
        reason: str = "transient failure",
    ) -> Job:
        """A transient store or lock failure: pending again after ``delay_s`` (30 s), the
        attempt given back.

        Raises:
            LeaseLostError: another claim has fenced the caller out.
        """
        delay = self.reschedule_delay_s if delay_s is None else delay_s
        return self._release(job, now, delay_s=delay, event="rescheduled", reason=reason)

    def _release(
        self, job: Job, now: datetime | str, *, delay_s: float, event: str, reason: str
    ) -> Job:
        stamp = _stamp(now)
        reason = str(reason)[:2000]
        with self.store.writing() as rows:
            current = self._owned(rows, job, stamp, unexpired=False)
            not_before = _later(stamp, delay_s)
            entry = {"at": stamp, "event": event, "reason": reason, "not_before": not_before}
            changes = {
                "status": "pending",
                "attempts": max(current.attempts - 1, 0),
                "lease_owner": None,
                "lease_expires_at": None,
                "not_before": not_before,
                "error": reason if event == "rescheduled" else current.error,
                "provenance": _provenance(current, history=[*current.history, entry]),
                "updated_at": stamp,
            }
            rows.update(job.id, changes)
        return replace(current, **_decoded(changes))

    @staticmethod
    def _owned(rows: JobRows, job: Job, stamp: str, *, unexpired: bool) -> Job:
        """The stored job, if ``job``'s holder still owns it (current fence, running)."""
        row = rows.get(job.id)
        if row is None:
            raise LeaseLostError(f"job {job.id} no longer exists (it was pruned or deleted)")
        current = _job(row)
        if current.status != "running" or current.fence != job.fence:
            raise LeaseLostError(
                f"job {job.id}: the lease of {job.lease_owner} (fence {job.fence}) is gone — the "
                f"job is {current.status} at fence {current.fence}"
                + (f" owned by {current.lease_owner}" if current.lease_owner else "")
                + "; this worker's result is discarded"
            )
        if current.lease_owner != job.lease_owner:
            raise LeaseLostError(
                f"job {job.id} is owned by {current.lease_owner}, not {job.lease_owner}"
            )
        if unexpired and (current.lease_expires_at or "") <= stamp:
            raise LeaseLostError(
                f"job {job.id}: the lease of {job.lease_owner} expired at "
                f"{current.lease_expires_at} (now {stamp}); another worker may take it over, so "
                "this worker's result is discarded — renew more often than the lease length"
            )
        return current

    # -- audit ---------------------------------------------------------------------------------

    def get(self, job_id: str) -> Job:
        """The job with this id.

        Raises:
            NotFoundError: no such job (never queued, or pruned after it was done).
        """
        with self.store.reading() as rows:
            row = rows.get(job_id)
        if row is None:
            raise NotFoundError(f"no job {job_id!r}: list jobs with JobQueue.list()")
        return _job(row)

    def list(
        self,
        space: str | None = None,
        *,
        status: str | Collection[str] | None = None,
        limit: int = 100,
    ) -> list[Job]:
        """Jobs, newest first, optionally of one space and some statuses."""
        statuses = [status] if isinstance(status, str) else status
        with self.store.reading() as rows:
            return [_job(row) for row in rows.list(space, statuses, limit)]

    def counts(self, space: str | None = None) -> dict[str, int]:
        """``{status: count}`` for every status (zeros included)."""
        with self.store.reading() as rows:
            found = rows.counts(space)
        return {name: found.get(name, 0) for name in JOB_STATUSES}


def _decoded(changes: Row) -> dict[str, Any]:
    """Column changes as :class:`Job` fields (provenance split back into its history)."""
    fields = dict(changes)
    if "provenance" in fields:
        provenance = json.loads(fields.pop("provenance"))
        fields["history"] = tuple(provenance.pop("history", ()))
        fields["provenance"] = provenance
    return fields


# -- handler helpers ---------------------------------------------------------------------------


# -- the worker --------------------------------------------------------------------------------

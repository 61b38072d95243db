"""Durable background jobs with leases and fencing tokens, over any row backend.

``queue.py`` holds the rules (idempotency, admission, leases, fencing, attempts, retention),
``worker.py`` runs jobs, ``sqlite.py`` and ``files.py`` are the two row backends (a table in an
orcamem SQLite file; one JSON file a job under a directory).
"""

from .queue import (
    JOB_STATUSES,
    KEEP_DONE,
    MAX_ACTIVE,
    MAX_ATTEMPTS,
    NOTHING,
    RESCHEDULE_DELAY_S,
    Job,
    JobQueue,
    JobResult,
    JobRows,
    JobStore,
    job_id,
)
from .worker import Handler, JobWorker, Ran, check_items, classify_output

__all__ = [
    "JOB_STATUSES",
    "KEEP_DONE",
    "MAX_ACTIVE",
    "MAX_ATTEMPTS",
    "NOTHING",
    "RESCHEDULE_DELAY_S",
    "Handler",
    "Job",
    "JobQueue",
    "JobResult",
    "JobRows",
    "JobStore",
    "JobWorker",
    "Ran",
    "check_items",
    "classify_output",
    "job_id",
]

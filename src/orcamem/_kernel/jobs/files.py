"""``FileJobStore``: durable jobs as ``jobs/<job-id>.json`` files in a local-memory project.

Only row access lives here; the job rules (idempotency, admission of 64 active jobs, leases,
fencing, three attempts, retention of 128 done jobs) are ``orcamem._kernel.jobs.queue.JobQueue``'s.

- ``writing()`` holds the project's cross-process lock (the same lock the candidate ledger is
  written under) for one transaction: reads see the files as they are, changes are buffered
  and written when the block ends — each job file replaced atomically — or dropped when it
  raises. A publish's ``apply`` (the ledger write) runs inside it, after the fence check, so an
  old worker that lost its lease can never write the ledger.
- Files cannot commit together; the one gap is a crash after ``apply`` wrote the ledger and
  before the job's ``done`` file landed. The job then stays ``running``, its lease expires, it
  runs again, and the ledger — idempotent by job id — adds nothing the second time.
- ``reading()`` takes no lock: every file is replaced whole, so each read is consistent.
- A job file that cannot be parsed (or holds a column of the wrong type, an unknown status) is
  skipped by scans and reported by :meth:`problems`; it is never overwritten (an enqueue of
  the same id fails until it is moved away).
- Failed (exhausted) jobs are kept for audit like done ones, and bounded the same way: the
  newest 128 per project.

A job file holds the row with its JSON columns (``payload``, ``result``, ``provenance`` with
the history) as nested JSON, so it reads like a document.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...errors import CorruptStoreError, StoreError
from ..files import FileLock, make_dirs, remove, remove_stale_temps, store_error, write_atomic
from .queue import JOB_STATUSES

__all__ = ["FileJobStore"]

Row = dict[str, Any]
_JSON_COLUMNS = ("payload", "result", "provenance")
_ACTIVE = ("pending", "running")
_OPTIONAL_TEXT = (
    "session_id", "turn_id", "source_digest", "lease_owner", "lease_expires_at", "not_before",
    "error",
)  # fmt: skip


def _to_file(row: Row) -> dict[str, Any]:
    doc = dict(row)
    for name in _JSON_COLUMNS:
        text = doc.get(name)
        doc[name] = json.loads(text) if text is not None else None
    return doc


def _to_row(doc: dict[str, Any]) -> Row:
    row = dict(doc)
    for name in _JSON_COLUMNS:
        value = row.get(name)
        if name == "result" and value is None:
            row[name] = None
        else:
            row[name] = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    for name in ("id", "space", "kind", "status", "created_at", "updated_at"):
        if not isinstance(row.get(name), str):
            raise ValueError(f"{name} is missing or not a string")
    for name in ("attempts", "max_attempts", "fence"):
        if not isinstance(row.get(name), int):
            raise ValueError(f"{name} is missing or not an integer")
    if row["status"] not in JOB_STATUSES:
        raise ValueError(f"status {row['status']!r} is not one of {', '.join(JOB_STATUSES)}")
    for name in _OPTIONAL_TEXT:
        if not isinstance(row.setdefault(name, None), (str, type(None))):
            raise ValueError(f"{name} is not a string or null")
    if not isinstance(doc.get("provenance") or {}, dict):
        raise ValueError("provenance is not a JSON object")
    return row


class _Files:
    """The job files of one directory, parsed once per change (keyed by mtime, size, inode)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._cache: dict[str, tuple[tuple[int, int, int], Row | None, str | None]] = {}
        self._guard = threading.Lock()

    def path(self, job_id: str) -> Path:
        return self.directory / f"{job_id}.json"

    def _load(self, path: Path) -> tuple[Row | None, str | None]:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise store_error("read", path, exc) from exc
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        with self._guard:
            cached = self._cache.get(path.name)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        try:
            doc = json.loads(path.read_bytes().decode("utf-8"))
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            row, problem = _to_row(doc), None
        except FileNotFoundError:
            return None, None
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            row, problem = None, f"{path} is unreadable ({type(exc).__name__}: {exc})"
        except OSError as exc:
            raise store_error("read", path, exc) from exc
        with self._guard:
            self._cache[path.name] = (key, row, problem)
        return row, problem

    def get(self, job_id: str) -> Row | None:
        row, problem = self._load(self.path(job_id))
        if problem is not None:
            raise CorruptStoreError(
                f"{problem}: it was left as it is; move it out of {self.directory} to let the "
                "job be queued again"
            )
        return row

    def scan(self) -> tuple[list[Row], list[str]]:
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return [], []
        except OSError as exc:
            raise store_error("list", self.directory, exc) from exc
        rows, problems = [], []
        for name in names:
            if not (name.startswith("job-") and name.endswith(".json")):
                continue
            row, problem = self._load(self.directory / name)
            if row is not None:
                rows.append(row)
            elif problem is not None:
                problems.append(problem)
        with self._guard:
            for gone in set(self._cache) - set(names):
                del self._cache[gone]
        return rows, problems


class _Rows:
    """``JobRows`` over the files; changes are buffered until :meth:`commit` (when writing)."""

    def __init__(self, files: _Files, *, writable: bool) -> None:
        self._files = files
        self._writable = writable
        self._changed: dict[str, Row] = {}
        self._deleted: set[str] = set()

    # -- reading (buffer first) ------------------------------------------------------------

    def get(self, job_id: str) -> Row | None:
        if job_id in self._deleted:
            return None
        if job_id in self._changed:
            return dict(self._changed[job_id])
        return self._files.get(job_id)

    def _all(self) -> list[Row]:
        rows, _ = self._files.scan()
        merged = {row["id"]: row for row in rows if row["id"] not in self._deleted}
        merged.update(self._changed)
        return list(merged.values())

    def count_active(self, space: str) -> int:
        return sum(1 for r in self._all() if r["space"] == space and r["status"] in _ACTIVE)

    def next_claimable(
        self, now: str, kinds: Collection[str] | None, spaces: Collection[str] | None
    ) -> Row | None:
        ready = [
            r
            for r in self._all()
            if (
                (r["status"] == "pending" and (r.get("not_before") or "") <= now)
                or (r["status"] == "running" and (r.get("lease_expires_at") or "") <= now)
            )
            and (kinds is None or r["kind"] in kinds)
            and (spaces is None or r["space"] in spaces)
        ]
        return dict(min(ready, key=lambda r: (r["created_at"], r["id"]))) if ready else None

    def list(self, space: str | None, statuses: Collection[str] | None, limit: int) -> list[Row]:
        rows = [
            r
            for r in self._all()
            if (space is None or r["space"] == space)
            and (statuses is None or r["status"] in statuses)
        ]
        rows.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
        return [dict(r) for r in rows[:limit]]

    def counts(self, space: str | None) -> dict[str, int]:
        found: dict[str, int] = {}
        for r in self._all():
            if space is None or r["space"] == space:
                found[r["status"]] = found.get(r["status"], 0) + 1
        return found

    # -- writing ---------------------------------------------------------------------------

    def _check_writable(self) -> None:
        if not self._writable:
            raise StoreError("job rows are read-only outside FileJobStore.writing()")

    def insert(self, row: Row) -> None:
        self._check_writable()
        self._deleted.discard(row["id"])
        self._changed[row["id"]] = dict(row)

    def update(self, job_id: str, changes: Row) -> None:
        self._check_writable()
        current = self.get(job_id)
        if current is None:
            return
        current.update(changes)
        self._changed[job_id] = current

    def prune_done(self, space: str, keep: int) -> int:
        """Keep the newest ``keep`` done jobs of ``space`` (and as many failed ones)."""
        self._check_writable()
        pruned = 0
        for status in ("done", "failed"):
            rows = [r for r in self._all() if r["space"] == space and r["status"] == status]
            rows.sort(key=lambda r: (r["updated_at"], r["id"]), reverse=True)
            for row in rows[keep:]:
                self._changed.pop(row["id"], None)
                self._deleted.add(row["id"])
                pruned += 1
        return pruned

    def commit(self) -> None:
        if not self._changed and not self._deleted:
            return
        make_dirs(self._files.directory)
        for job_id, row in self._changed.items():
            path = self._files.path(job_id)
            remove_stale_temps(path.parent, of=path.name, older_than_s=0)  # the lock is held
            data = json.dumps(_to_file(row), ensure_ascii=False, indent=2, sort_keys=True)
            write_atomic(path, (data + "\n").encode("utf-8"))
        for job_id in self._deleted:
            path = self._files.path(job_id)
            remove(path)


class FileJobStore:
    """The job store of one local-memory project: ``<project>/jobs/<job-id>.json``.

    >>> from orcamem._kernel.jobs import JobQueue
    >>> queue = JobQueue(FileJobStore(tmp / "jobs", FileLock(tmp / ".lock")))  # doctest: +SKIP
    """

    capabilities = frozenset({"jobs"})

    def __init__(self, directory: Path, lock: FileLock) -> None:
        self.directory = directory
        self.lock = lock
        self._files = _Files(directory)
        self._local = threading.local()

    @contextmanager
    def writing(self) -> Iterator[_Rows]:
        """One transaction under the project lock (nested calls in a thread join it).

        Raises:
            TransientError: the lock is held elsewhere longer than its timeout.
        """
        current = getattr(self._local, "rows", None)
        if current is not None:
            yield current
            return
        with self.lock.hold():
            rows = _Rows(self._files, writable=True)
            self._local.rows = rows
            try:
                yield rows
                rows.commit()
            finally:
                self._local.rows = None

    @contextmanager
    def reading(self) -> Iterator[_Rows]:
        current = getattr(self._local, "rows", None)
        yield current if current is not None else _Rows(self._files, writable=False)

    def problems(self) -> list[str]:
        """Job files that could not be read (left in place)."""
        return self._files.scan()[1]

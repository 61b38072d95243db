"""Every project's local memory under one ``memory/`` root, opened by project id.

A ``LocalMemory`` is one session in one working directory; an inspector (``/api/local``, the
dashboard's Local memory page) looks at all projects at once, by the hashed directory name,
whether or not their last seen directory still exists. :class:`Project` is the set of one
project's stores that ``LocalMemory`` also runs on (the ledger, the job files, the explicit
facts), so reading and deleting here is the same code a session uses: reads take no lock, a
delete is the ledger's revisioned one and re-derives both projections.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._kernel.clock import Clock, SystemClock, stamp
from .._kernel.env import memory_dir
from .._kernel.files import FileLock, store_error
from .._kernel.jobs import Job, JobQueue
from .._kernel.jobs.files import FileJobStore
from .._kernel.model import validate_count, validate_id, validate_items
from ..errors import InvalidInputError, NotFoundError
from .ledger import (
    DeleteResult,
    FactFile,
    Ledger,
    LedgerState,
    MemoryLayout,
    ProjectFiles,
    read_facts,
)
from .projection import read_project_json

__all__ = ["LocalProjects", "Project", "ProjectSummary"]

_PROJECT_ID = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ProjectSummary:
    """One project as a list shows it: who it is, where it was last seen, what it holds."""

    id: str
    identity: str | None
    """The normalized Git origin or canonical path (``None``: ``project.json`` missing or
    unreadable; see :attr:`problems`)."""
    kind: str | None
    """``git-origin`` | ``repo-root`` | ``path``."""
    last_seen_cwd: str | None
    created_at: str | None
    updated_at: str | None
    revision: int
    candidates: int
    project_facts: int
    jobs: dict[str, int]
    problems: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """A short name for people: the identity's last path part (``acme/api`` → ``api``)."""
        if not self.identity:
            return self.id[:12]
        return self.identity.rstrip("/").rsplit("/", 1)[-1].removeprefix("file:") or self.id[:12]


class Project:
    """One project's memory stores, by its directory: the ledger, the jobs, the explicit facts.

    Args:
        layout: the ``memory/`` root.
        project_id: the project's sha256 directory name.
        clock: where "now" comes from (deletion stamps, lease expiry).
        lock_timeout_s: how long a write waits for the project lock.
    """

    def __init__(
        self,
        layout: MemoryLayout,
        project_id: str,
        *,
        clock: Clock | None = None,
        lock_timeout_s: float = 10.0,
    ) -> None:
        self.id = project_id
        self.layout = layout
        self.files: ProjectFiles = layout.project(project_id)
        self.clock = clock or SystemClock()
        self.lock = FileLock(self.files.lock, lock_timeout_s)
        self.ledger = Ledger(self.files, self.lock, self.clock)
        self.job_store = FileJobStore(self.files.jobs, self.lock)
        self.jobs = JobQueue(self.job_store)

    @property
    def space(self) -> str:
        """The space its jobs are queued in (``project:<sha256>``)."""
        return f"project:{self.id}"

    def metadata(self) -> tuple[dict[str, Any] | None, str | None]:
        """``project.json`` (identity, last seen cwd) and the problem reading it, if any."""
        return read_project_json(self.files.project_json)

    def facts(self) -> FactFile:
        """The explicit project facts (``memory.md``), as much as a session loads (8 KiB)."""
        return read_facts(self.files.memory_md)

    def read_ledger(self) -> LedgerState:
        """The committed ledger: candidates oldest first, revision, unreadable lines."""
        return self.ledger.read()

    def stale_projections(self, state: LedgerState) -> list[str]:
        """Which derived files do not match ``state`` (none before the first write)."""
        if not self.files.candidates.exists():
            return []
        return self.ledger.stale_projections(state)

    def list_jobs(self, limit: int = 100) -> list[Job]:
        """Extraction jobs, newest first (pending, running, done and failed)."""
        validate_count(limit, what="limit")
        return self.jobs.list(self.space, limit=limit)

    def job_counts(self) -> dict[str, int]:
        return self.jobs.counts(self.space)

    def job_problems(self) -> list[str]:
        """Job files that could not be read (left in place)."""
        return self.job_store.problems()

    def forget(self, ids: list[str] | None, *, revision: int) -> DeleteResult:
        """Delete candidates (``None``: all) as of ``revision``: revisioned and idempotent; the
        Markdown view and the index are derived again from the new ledger.

        Raises:
            RevisionConflictError: the ledger changed since ``revision``; nothing was deleted.
            NotFoundError: an unknown id; nothing was deleted.
        """
        if ids is not None:
            ids = validate_items(ids, what="ids", of="candidate ids")
            for candidate_id in ids:
                validate_id(candidate_id, what="id")
        return self.ledger.delete(ids, revision=revision, now=stamp(self.clock))

    def summary(self) -> ProjectSummary:
        metadata, problem = self.metadata()
        record = metadata or {}
        state = self.read_ledger()
        problems = [problem] if problem else []
        problems += [f"unreadable ledger {c.describe()} (kept)" for c in state.corrupt]
        problems += self.job_problems()
        return ProjectSummary(
            id=self.id,
            identity=record.get("project_identity"),
            kind=record.get("identity_kind"),
            last_seen_cwd=record.get("last_seen_cwd"),
            created_at=record.get("created_at"),
            updated_at=record.get("updated_at"),
            revision=state.revision,
            candidates=len(state.candidates),
            project_facts=len(self.facts().facts),
            jobs=self.job_counts(),
            problems=tuple(problems),
        )


class LocalProjects:
    """The projects under one ``memory/`` root (default ``$ORCA_HOME/memory``, else
    ``~/.orca/memory``: the root every ``LocalMemory``, hook and ``orcamem memory`` command
    uses), and the user-wide facts in its ``user.md``."""

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        clock: Clock | None = None,
        lock_timeout_s: float = 10.0,
    ) -> None:
        self.layout = MemoryLayout(Path(root) if root is not None else memory_dir())
        self.clock = clock or SystemClock()
        self.lock_timeout_s = lock_timeout_s
        self._opened: dict[str, Project] = {}
        """One ``Project`` an id, kept: its job store parses a job file again only when the
        file changed, so listing many projects reads little after the first time."""
        self._guard = threading.Lock()

    @property
    def root(self) -> Path:
        return self.layout.root

    def ids(self) -> list[str]:
        """The project directories (sha256 names; anything else under ``projects/`` is not a
        project and is left out)."""
        try:
            names = os.listdir(self.layout.projects)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise store_error("list", self.layout.projects, exc) from exc
        return sorted(
            n for n in names if _PROJECT_ID.fullmatch(n) and (self.layout.projects / n).is_dir()
        )

    def open(self, project_id: str) -> Project:
        """The project with this id.

        Raises:
            InvalidInputError: not a sha256 project id.
            NotFoundError: no such project directory under this root.
        """
        if not isinstance(project_id, str) or not _PROJECT_ID.fullmatch(project_id):
            raise InvalidInputError(
                f"{project_id!r} is not a project id: use the 64 hex digits of a directory "
                "under memory/projects/ (list them first)"
            )
        with self._guard:
            project = self._opened.get(project_id)
            if project is None:
                project = Project(
                    self.layout, project_id, clock=self.clock, lock_timeout_s=self.lock_timeout_s
                )
        if not project.files.dir.is_dir():
            with self._guard:
                self._opened.pop(project_id, None)
            raise NotFoundError(
                f"no project {project_id} under {self.layout.projects}: list the projects again"
            )
        with self._guard:
            self._opened.setdefault(project_id, project)
        return project

    def summaries(self) -> list[ProjectSummary]:
        """Every project, the most recently seen first."""
        found = [self.open(i).summary() for i in self.ids()]
        return sorted(found, key=lambda s: (s.updated_at or "", s.id), reverse=True)

    def user_facts(self) -> FactFile:
        """The explicit user-wide facts (``user.md``), as much as a session loads (8 KiB)."""
        return read_facts(self.layout.user_md)

"""``/api/local``: local agent memory (seed 000) — the projects under the server's ``memory/``
root, each one's explicit facts, its candidate ledger with provenance, its extraction jobs, and
the revisioned delete of one ledger entry.

Where: the root every ``orcamem memory`` command and agent hook uses, ``$ORCA_HOME/memory``
(``~/.orca/memory`` without it) in the server's environment; ``ServerSettings.local_memory_dir``
overrides it. Never a request parameter, so no caller can point the server at another folder.

Who: admin keys only (and a keyless loopback server, whose caller is admin). Local memory is
not in any space a key can be scoped to: ``user.md`` is user-wide and a project's files hold
what its sessions said, so a key scoped to spaces sees none of it (403).
"""

from __future__ import annotations

import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, Field

from ...._kernel.clock import stamp
from ....errors import RevisionConflictError
from ....local import LocalProjects, ProjectSummary
from ..deps import MemoryDep, SettingsDep
from .common import require_admin
from .schemas import errors

__all__ = ["router"]

ProjectId = Annotated[
    str,
    PathParam(
        pattern=r"^[0-9a-f]{64}$",
        description="The project's id: the sha256 name of its directory under memory/projects/.",
    ),
]
CandidateId = Annotated[
    str,
    PathParam(
        pattern=r"^cand-[A-Za-z0-9._:-]{1,128}$", description="A ledger entry's id (cand-…)."
    ),
]

router = APIRouter(
    prefix="/local",
    tags=["local"],
    dependencies=[Depends(require_admin)],
    responses=errors(401, 403, 503),
)


_OPENING = threading.Lock()


def local_projects(request: Request, memory: MemoryDep, settings: SettingsDep) -> LocalProjects:
    """The server's local-memory root on the server's clock: one per app, resolved on first
    use and kept, so job files are parsed again only when they change."""
    with _OPENING:
        projects = getattr(request.app.state, "local_projects", None)
        if projects is None:
            projects = LocalProjects(settings.local_memory_dir, clock=memory.clock)
            request.app.state.local_projects = projects
    return projects


ProjectsDep = Annotated[LocalProjects, Depends(local_projects)]


# -- response models ----------------------------------------------------------------------------


class ProjectOut(BaseModel):
    id: str = Field(description="The project id (sha256 of its identity): its directory name.")
    name: str = Field(description="A short name: the identity's last path part.")
    identity: str | None = Field(
        description="Normalized Git origin, repository root or path (null: project.json "
        "missing or unreadable, see problems)."
    )
    identity_kind: str | None = Field(description="git-origin, repo-root or path.")
    last_seen_cwd: str | None = Field(description="The working directory a session last ran in.")
    created_at: str | None = Field(description="When project.json was first written (UTC).")
    updated_at: str | None = Field(description="When a session last recorded it (UTC).")
    revision: int = Field(description="The candidate ledger's revision.")
    candidates: int = Field(description="Automatic-memory candidates in the ledger.")
    project_facts: int = Field(description="Explicit project facts a session loads (memory.md).")
    jobs: dict[str, int] = Field(description="Extraction jobs by status.")
    problems: list[str] = Field(description="Unreadable files found (left as they are).")


class ProjectsOut(BaseModel):
    root: str = Field(description="The memory/ root the server reads.")
    user_facts: int = Field(description="Explicit user-wide facts a session loads (user.md).")
    projects: list[ProjectOut] = Field(description="Most recently seen first.")


class FactFileOut(BaseModel):
    path: str
    facts: list[str] = Field(description="The '- fact' lines, as a session loads them.")
    size: int = Field(description="The file's bytes (0: no such file).")
    loaded: int = Field(description="Bytes a session loads (8 KiB at most, cut at a line end).")
    truncated: bool = Field(description="Part of the file is never loaded: shorten it.")


class LocalFactsOut(BaseModel):
    project: str
    user: FactFileOut = Field(description="user.md: facts of every project.")
    project_facts: FactFileOut = Field(description="This project's memory.md.")


class EntryOut(BaseModel):
    id: str = Field(description="The candidate id (cand-…).")
    category: Literal["user", "feedback", "project", "reference"]
    text: str
    session_id: str | None = Field(description="The session of the turn it came from.")
    turn_id: str | None = Field(description="The turn it came from.")
    job_id: str | None = Field(description="The extraction job that published it.")
    source_digest: str | None = Field(description="Digest of the redacted turn source.")
    extractor: str | None = Field(description="What extracted it: a model id, or rules.")
    recorded_at: str = Field(description="When it was published (UTC).")
    revision: int = Field(description="The ledger revision that added it.")


class LedgerOut(BaseModel):
    project: str
    revision: int = Field(description="Send it back to delete an entry.")
    fingerprint: str = Field(description="sha256 of candidates.jsonl: what the index is keyed by.")
    entries: list[EntryOut] = Field(description="Newest first.")
    corrupt_lines: list[str] = Field(description="Unreadable ledger lines (kept verbatim).")
    stale_projections: list[str] = Field(
        description="Derived files that do not match the ledger (rebuilt by the next write)."
    )


class JobOut(BaseModel):
    id: str
    kind: str
    status: Literal["pending", "running", "done", "failed"] = Field(
        description="pending = queued, running = leased to a worker, done, failed = its "
        "attempts are used."
    )
    attempts: int
    max_attempts: int
    lease_owner: str | None = Field(description="The worker holding the lease (running jobs).")
    lease_expires_at: str | None
    lease_expired: bool = Field(description="Running, but the lease ran out: a worker takes it.")
    not_before: str | None = Field(description="Retried no earlier than this (UTC).")
    error: str | None = Field(description="The last failure's reason.")
    extractor: str | None = Field(description="What extracted (or will): a model id, or rules.")
    session_id: str | None
    turn_id: str | None
    candidates: list[str] = Field(description="The candidate ids it published.")
    created_at: str
    updated_at: str


class JobsOut(BaseModel):
    project: str
    counts: dict[str, int] = Field(description="Jobs by status (all of them, not just listed).")
    jobs: list[JobOut] = Field(description="Newest first.")
    problems: list[str] = Field(description="Job files that could not be read (left in place).")


class DeletedOut(BaseModel):
    project: str
    deleted: list[str] = Field(description="The ids this request removed.")
    revision: int = Field(description="The ledger's revision afterwards.")
    repeated: bool = Field(description="The same request was done before: nothing changed.")
    problems: list[str] = Field(description="Derived files not rewritten (the next write does).")


# -- routes -------------------------------------------------------------------------------------


def _project_out(s: ProjectSummary) -> ProjectOut:
    return ProjectOut(
        id=s.id,
        name=s.name,
        identity=s.identity,
        identity_kind=s.kind,
        last_seen_cwd=s.last_seen_cwd,
        created_at=s.created_at,
        updated_at=s.updated_at,
        revision=s.revision,
        candidates=s.candidates,
        project_facts=s.project_facts,
        jobs=s.jobs,
        problems=list(s.problems),
    )


@router.get("/projects", summary="Local agent memory: every project")
def list_projects(projects: ProjectsDep) -> ProjectsOut:
    """The projects under the server's memory/ root, most recently seen first: identity, last
    seen directory, ledger revision and counts."""
    return ProjectsOut(
        root=str(projects.root),
        user_facts=len(projects.user_facts().facts),
        projects=[_project_out(s) for s in projects.summaries()],
    )


@router.get("/projects/{project_id}", summary="One local project", responses=errors(404, 422))
def get_project(projects: ProjectsDep, project_id: ProjectId) -> ProjectOut:
    """The project's identity, last seen directory, ledger revision and counts (404 if the
    server's memory/ root has no project with that id)."""
    return _project_out(projects.open(project_id).summary())


def _fact_file(found: Any) -> FactFileOut:
    """From ``orcamem.local``'s ``FactFile`` (its module is the ledger's, not an interface's)."""
    return FactFileOut(
        path=str(found.path),
        facts=list(found.facts),
        size=found.size,
        loaded=found.loaded,
        truncated=found.size > found.loaded,
    )


@router.get(
    "/projects/{project_id}/facts",
    summary="Explicit facts a session loads",
    responses=errors(404, 422),
)
def get_facts(projects: ProjectsDep, project_id: ProjectId) -> LocalFactsOut:
    """``user.md`` (user-wide) and the project's ``memory.md``, as a session loads them."""
    project = projects.open(project_id)
    return LocalFactsOut(
        project=project_id,
        user=_fact_file(projects.user_facts()),
        project_facts=_fact_file(project.facts()),
    )


@router.get(
    "/projects/{project_id}/ledger",
    summary="The candidate ledger with provenance",
    responses=errors(404, 422),
)
def get_ledger(projects: ProjectsDep, project_id: ProjectId) -> LedgerOut:
    """The automatic-memory candidates, newest first, each with the session, turn, job and
    extractor it came from; the revision to delete with."""
    project = projects.open(project_id)
    state = project.read_ledger()
    return LedgerOut(
        project=project_id,
        revision=state.revision,
        fingerprint=state.fingerprint,
        entries=[
            EntryOut(**{k: v for k, v in c.to_json().items() if k in EntryOut.model_fields})
            for c in reversed(state.candidates)
        ],
        corrupt_lines=[c.describe() for c in state.corrupt],
        stale_projections=project.stale_projections(state),
    )


@router.delete(
    "/projects/{project_id}/ledger/{candidate_id}",
    summary="Delete one ledger entry (revisioned)",
    responses={
        **errors(400, 404, 422),
        409: {**errors(409)[409], "description": "The ledger changed since that revision."},
    },
)
def delete_entry(
    projects: ProjectsDep,
    project_id: ProjectId,
    candidate_id: CandidateId,
    revision: Annotated[
        int, Query(ge=0, description="The ledger revision you read (GET …/ledger).")
    ],
) -> DeletedOut:
    """Delete the entry as of ``revision``: 409 and nothing deleted when the ledger has changed
    since; repeating the same request is a no-op (``repeated``). ``auto-memory.md`` and the
    search index are derived again from the new ledger; the job files are kept (audit)."""
    project = projects.open(project_id)
    try:
        result = project.forget([candidate_id], revision=revision)
    except RevisionConflictError:
        current = project.read_ledger().revision
        raise RevisionConflictError(
            f"the ledger changed since revision {revision} (it is at {current} now): nothing "
            "was deleted; reload the ledger and delete again with its current revision"
        ) from None
    return DeletedOut(
        project=project_id,
        deleted=list(result.deleted),
        revision=result.revision,
        repeated=result.repeated,
        problems=list(result.problems),
    )


@router.get(
    "/projects/{project_id}/jobs",
    summary="Extraction jobs and their states",
    responses=errors(404, 422),
)
def get_jobs(
    projects: ProjectsDep,
    project_id: ProjectId,
    limit: Annotated[int, Query(ge=1, le=500, description="How many jobs, newest first.")] = 100,
) -> JobsOut:
    """Each job's state, attempts, lease (owner, expiry) and last error; never its payload
    (the redacted turn it was given)."""
    project = projects.open(project_id)
    now = stamp(project.clock)
    jobs = []
    for job in project.list_jobs(limit):
        published = job.result.get("candidates") if isinstance(job.result, dict) else None
        extractor = job.provenance.get("extractor")
        expires = job.lease_expires_at
        jobs.append(
            JobOut(
                id=job.id,
                kind=job.kind,
                status=job.status,
                attempts=job.attempts,
                max_attempts=job.max_attempts,
                lease_owner=job.lease_owner if job.status == "running" else None,
                lease_expires_at=expires if job.status == "running" else None,
                lease_expired=job.status == "running" and (expires or "") <= now,
                not_before=job.not_before,
                error=job.error,
                extractor=extractor if isinstance(extractor, str) else None,
                session_id=job.session_id,
                turn_id=job.turn_id,
                candidates=[str(c) for c in published] if isinstance(published, list) else [],
                created_at=job.created_at,
                updated_at=job.updated_at,
            )
        )
    return JobsOut(
        project=project_id,
        counts=project.job_counts(),
        jobs=jobs,
        problems=project.job_problems(),
    )

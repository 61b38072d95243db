"""``ledger``: local agent memory on disk — the layout and the candidate ledger (project identity
is ``identity.py``; the derived ``auto-memory.md`` and ``project.json`` are ``projection.py``).

The layout is exactly the local-memory spec's ("Storage")::

    memory/                              $ORCA_HOME/memory, else ~/.orca/memory
    ├── user.md                          explicit user facts (`orcamem remember "…"`)
    └── projects/
        └── <sha256-project-id>/
            ├── project.json             identity and last_seen_cwd; never sent to a model
            ├── memory.md                explicit project facts (`orcamem remember "project: …"`)
            ├── candidates.jsonl         the authoritative automatic-memory ledger
            ├── auto-memory.md           derived: the newest 64 candidates, provenance comments
            ├── index.sqlite3            derived: FTS5 index keyed by the ledger fingerprint
            └── jobs/<job-id>.json       extraction jobs (``orcamem._kernel.jobs.files``)

Two more files are implementation details, not memory: ``memory/.lock`` and
``projects/<id>/.lock`` are the (empty) files that the cross-process locks
(``orcamem._kernel.files.FileLock``) hold.
Deleting them is harmless once no process runs.

Rules kept here:

- **Authority.** ``candidates.jsonl`` is the only authority of automatic memory. Every change
  is a whole-file atomic replace (``orcamem._kernel.files.write_atomic``) under the project
  lock, so a reader — which takes no lock — sees the old or the new ledger, never a mix. The
  Markdown view and the FTS5 index are derived from it: if either cannot be written the
  ledger stays committed, the failure is reported, and the next write (or recall) rebuilds
  both.
- **Revisions.** The ledger has a revision that every change of its candidates increments.
  Deleting is a revisioned, idempotent operation (:meth:`Ledger.delete`): it names the
  revision its caller saw, and repeating it is a no-op. There is no unversioned clear.
- **Corruption is preserved.** A ledger line that cannot be read is kept verbatim (the next
  write writes it back unchanged) and reported by :attr:`LedgerState.corrupt`; the readable
  lines keep working. ``project.json`` is re-read after taking the lock; if it is corrupt then,
  it is left as it is and reported, never overwritten.
- **Retention.** 128 candidates (the oldest go first), 128 tombstones, 128 applied job ids.
- **Identity.** A project is ``sha256`` of its normalized Git origin (user info, query and
  fragment removed; the scheme too, so SSH and HTTPS clones share memory), else of its
  canonical repository root, else of its canonical path (:func:`project_identity`).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._kernel.clock import Clock, SystemClock
from .._kernel.clock import stamp as clock_stamp
from .._kernel.files import (
    FileLock,
    make_dirs,
    remove_stale_temps,
    store_error,
    write_atomic,
)
from .._kernel.ids import stable_id, tagged
from ..errors import (
    InvalidInputError,
    NotFoundError,
    RevisionConflictError,
    StoreError,
)
from . import index as ledger_index
from .projection import (
    markdown_matches,
    write_markdown,
)

__all__ = [
    "CATEGORIES",
    "KEEP_APPLIED_JOBS",
    "KEEP_CANDIDATES",
    "KEEP_TOMBSTONES",
    "MAX_CANDIDATE_CHARS",
    "MAX_EXPLICIT_BYTES",
    "Candidate",
    "CorruptLine",
    "DeleteResult",
    "FactFile",
    "Ledger",
    "LedgerState",
    "MemoryLayout",
    "ProjectFiles",
    "PublishReport",
    "Tombstone",
    "candidate_id",
    "normalize_fact",
    "read_facts",
]

CATEGORIES = ("user", "feedback", "project", "reference")
"""The four classes a candidate must have (spec, "What Is Captured")."""
KEEP_CANDIDATES = 128
KEEP_TOMBSTONES = 128
KEEP_APPLIED_JOBS = 128
MAX_CANDIDATE_CHARS = 300
"""The longest candidate text kept (the extractor's schema bounds it the same way)."""
MAX_EXPLICIT_BYTES = 8 * 1024
"""``user.md`` and a project's ``memory.md`` are each loaded up to this many bytes."""
LEDGER_FORMAT = "orcamem-candidates"


# -- the layout --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProjectFiles:
    """The paths of one project's directory (nothing is created until it is written)."""

    dir: Path

    @property
    def project_json(self) -> Path:
        return self.dir / "project.json"

    @property
    def memory_md(self) -> Path:
        return self.dir / "memory.md"

    @property
    def candidates(self) -> Path:
        return self.dir / "candidates.jsonl"

    @property
    def auto_memory_md(self) -> Path:
        return self.dir / "auto-memory.md"

    @property
    def index(self) -> Path:
        return self.dir / "index.sqlite3"

    @property
    def jobs(self) -> Path:
        return self.dir / "jobs"

    @property
    def lock(self) -> Path:
        return self.dir / ".lock"


@dataclass(frozen=True)
class MemoryLayout:
    """The ``memory/`` root (``orcamem._kernel.env.memory_dir()`` by default)."""

    root: Path

    @property
    def user_md(self) -> Path:
        return self.root / "user.md"

    @property
    def projects(self) -> Path:
        return self.root / "projects"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    def project(self, project_id: str) -> ProjectFiles:
        if not re.fullmatch(r"[0-9a-f]{64}", project_id):
            raise InvalidInputError(f"{project_id!r} is not a sha256 project id")
        return ProjectFiles(self.projects / project_id)


# -- explicit facts (Markdown) -----------------------------------------------------------------


def read_bounded(path: Path, limit: int = MAX_EXPLICIT_BYTES) -> tuple[str, int]:
    """The first ``limit`` bytes of a text file, cut at a line end; and how many bytes it has.

    A missing file is ``("", 0)``. Never reads more than ``limit`` + 1 bytes.
    """
    try:
        with path.open("rb") as handle:
            head = handle.read(limit + 1)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return "", 0
    except OSError as exc:
        raise store_error("read", path, exc) from exc
    if len(head) > limit:
        head = head[:limit]
        cut = head.rfind(b"\n")
        head = head[: cut + 1] if cut > 0 else head
    return head.decode("utf-8", errors="replace"), size


def _fact_lines(text: str) -> list[str]:
    """The facts of a Markdown fact file: its ``- fact`` lines, without the dash."""
    return [line[2:] for line in text.splitlines() if line.startswith("- ")]


@dataclass(frozen=True)
class FactFile:
    """The explicit facts of ``user.md`` or a project's ``memory.md`` as a session loads them:
    the first 8 KiB, cut at a line end."""

    path: Path
    facts: tuple[str, ...]
    size: int
    """The file's bytes (0: it does not exist)."""
    loaded: int
    """The bytes a session loads (``< size``: the rest is never loaded)."""


def read_facts(path: Path, limit: int = MAX_EXPLICIT_BYTES) -> FactFile:
    """The facts a session would load from ``path`` (:func:`read_bounded`)."""
    text, size = read_bounded(path, limit)
    return FactFile(path, tuple(_fact_lines(text)), size, len(text.encode("utf-8")))


def append_fact(path: Path, lock: FileLock, title: str, fact: str) -> bool:
    """Add ``- fact`` to a Markdown fact file under ``lock``; ``False`` if it is already there."""
    with lock.hold():
        try:
            current = path.read_text(encoding="utf-8", errors="surrogateescape")
        except FileNotFoundError:
            current = ""
        except OSError as exc:
            raise store_error("read", path, exc) from exc
        wanted = normalize_fact(fact)
        if any(normalize_fact(known) == wanted for known in _fact_lines(current)):
            return False
        if not current.strip():
            current = f"# {title}\n\n"
        elif not current.endswith("\n"):
            current += "\n"
        remove_stale_temps(path.parent, of=path.name, older_than_s=0)  # the lock is held
        write_atomic(path, (current + f"- {fact}\n").encode("utf-8", "surrogateescape"))
    return True


# -- candidates --------------------------------------------------------------------------------

_TRIM = " \t\r\n.!;:,\"'`“”‘’"


def normalize_fact(text: str) -> str:
    """The form exact duplicates are found by: NFKC, case-folded, single spaces, no end marks.

    >>> normalize_fact("  We deploy on Fridays. ") == normalize_fact("we  DEPLOY on fridays")
    True
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).strip(_TRIM)


def candidate_id(job_id: str, text: str) -> str:
    """A candidate's id: the same for the same job and fact (a replayed job adds nothing)."""
    return stable_id("cand-", job_id, normalize_fact(text), length=16)


@dataclass(frozen=True)
class Candidate:
    """One automatic-memory candidate with its provenance."""

    id: str
    category: str
    text: str
    session_id: str | None
    turn_id: str | None
    job_id: str | None
    source_digest: str | None
    extractor: str | None
    recorded_at: str
    revision: int = 0
    """The ledger revision that added it."""
    fence: int | None = None
    """The fencing token of the lease it was published under."""

    @property
    def normalized(self) -> str:
        return normalize_fact(self.text)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "candidate",
            "id": self.id,
            "category": self.category,
            "text": self.text,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "job_id": self.job_id,
            "source_digest": self.source_digest,
            "extractor": self.extractor,
            "recorded_at": self.recorded_at,
            "revision": self.revision,
            "fence": self.fence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Candidate:
        ident, category, text = data["id"], data["category"], data["text"]
        if not isinstance(ident, str) or not ident.startswith("cand-"):
            raise ValueError(f"bad candidate id {ident!r}")
        if category not in CATEGORIES:
            raise ValueError(f"unclassified candidate (category {category!r})")
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a candidate without text")
        recorded = data["recorded_at"]
        if not isinstance(recorded, str):
            raise ValueError("recorded_at must be a time string")
        revision = data.get("revision", 0)
        if not isinstance(revision, int) or isinstance(revision, bool):
            raise ValueError("revision must be an integer")

        def text_or_none(name: str) -> str | None:
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string")
            return value

        fence = data.get("fence")
        return cls(
            id=ident,
            category=category,
            text=text,
            session_id=text_or_none("session_id"),
            turn_id=text_or_none("turn_id"),
            job_id=text_or_none("job_id"),
            source_digest=text_or_none("source_digest"),
            extractor=text_or_none("extractor"),
            recorded_at=recorded,
            revision=revision,
            fence=fence if isinstance(fence, int) else None,
        )


@dataclass(frozen=True)
class Tombstone:
    """A deleted candidate id: kept (the newest 128) so a replayed job cannot bring it back and
    a repeated deletion is recognised."""

    id: str
    revision: int
    deleted_at: str
    request: str

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "tombstone",
            "id": self.id,
            "revision": self.revision,
            "deleted_at": self.deleted_at,
            "request": self.request,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tombstone:
        revision = data["revision"]
        if not isinstance(revision, int) or isinstance(revision, bool):
            raise ValueError("revision must be an integer")
        return cls(str(data["id"]), revision, str(data["deleted_at"]), str(data["request"]))


@dataclass(frozen=True)
class CorruptLine:
    """A ledger line that could not be read: kept verbatim, reported, never overwritten."""

    number: int
    raw: bytes
    error: str

    def describe(self) -> str:
        return f"line {self.number}: {self.error}"


@dataclass(frozen=True)
class LedgerState:
    """One consistent reading of ``candidates.jsonl``."""

    revision: int = 0
    candidates: tuple[Candidate, ...] = ()
    """Oldest first (file order)."""
    tombstones: tuple[Tombstone, ...] = ()
    applied_jobs: tuple[str, ...] = ()
    corrupt: tuple[CorruptLine, ...] = ()
    fingerprint: str = ""
    """``sha256:<hex>`` of the file's bytes: the key the index is built for."""

    def ids(self) -> set[str]:
        return {c.id for c in self.candidates}


def fingerprint(data: bytes) -> str:
    return tagged(data)


def parse_ledger(data: bytes) -> LedgerState:
    """Read a ledger; unreadable lines become :class:`CorruptLine`\\ s (never an error)."""
    revision = 0
    applied: list[str] = []
    candidates: list[Candidate] = []
    tombstones: list[Tombstone] = []
    corrupt: list[CorruptLine] = []
    seen: set[str] = set()
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            kind = record.get("type")
            if kind == "header":
                if record.get("format") != LEDGER_FORMAT:
                    raise ValueError(f"unknown ledger format {record.get('format')!r}")
                value = record.get("revision", 0)
                if not isinstance(value, int) or isinstance(value, bool):
                    raise ValueError("revision must be an integer")
                revision = max(revision, value)
                applied.extend(str(j) for j in record.get("applied_jobs", []))
            elif kind == "candidate":
                candidate = Candidate.from_json(record)
                if candidate.id in seen:
                    raise ValueError(f"duplicate candidate id {candidate.id}")
                seen.add(candidate.id)
                candidates.append(candidate)
                revision = max(revision, candidate.revision)
            elif kind == "tombstone":
                tombstone = Tombstone.from_json(record)
                tombstones.append(tombstone)
                revision = max(revision, tombstone.revision)
            else:
                raise ValueError(f"unknown record type {kind!r}")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            corrupt.append(CorruptLine(number, raw, f"{type(exc).__name__}: {exc}"[:300]))
    return LedgerState(
        revision=revision,
        candidates=tuple(candidates),
        tombstones=tuple(tombstones),
        applied_jobs=tuple(dict.fromkeys(applied)),
        corrupt=tuple(corrupt),
        fingerprint=fingerprint(data),
    )


def _dump_line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"


def serialize_ledger(state: LedgerState) -> bytes:
    """The file for ``state``: header, preserved corrupt lines, candidates, tombstones."""
    header = {
        "type": "header",
        "format": LEDGER_FORMAT,
        "version": 1,
        "revision": state.revision,
        "applied_jobs": list(state.applied_jobs[-KEEP_APPLIED_JOBS:]),
    }
    parts = [_dump_line(header)]
    parts.extend(line.raw.rstrip(b"\r") + b"\n" for line in state.corrupt)
    parts.extend(_dump_line(c.to_json()) for c in state.candidates)
    parts.extend(_dump_line(t.to_json()) for t in state.tombstones)
    return b"".join(parts)


@dataclass(frozen=True)
class PublishReport:
    """What a publish did: ``kept`` were added, ``duplicates`` matched an existing fact."""

    kept: tuple[str, ...] = ()
    duplicates: int = 0
    pruned: int = 0
    already_applied: bool = False
    revision: int = 0
    problems: tuple[str, ...] = ()
    """Projections that could not be written (the ledger is committed regardless)."""


@dataclass(frozen=True)
class DeleteResult:
    """A deletion: which ids it removed, the revision after it, and whether it was a repeat."""

    deleted: tuple[str, ...]
    revision: int
    repeated: bool = False
    problems: tuple[str, ...] = ()


@dataclass
class Ledger:
    """The authoritative candidate ledger of one project and its derived projections.

    Reads take no lock (every write is an atomic replace); writes take the project lock.
    """

    files: ProjectFiles
    lock: FileLock
    clock: Clock = field(default_factory=SystemClock)

    # -- reading ---------------------------------------------------------------------------

    def read(self) -> LedgerState:
        """The current ledger (empty when the file does not exist yet)."""
        try:
            data = self.files.candidates.read_bytes()
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise store_error("read", self.files.candidates, exc) from exc
        return parse_ledger(data)

    # -- writing ---------------------------------------------------------------------------

    def _commit(self, state: LedgerState) -> tuple[LedgerState, tuple[str, ...]]:
        """Write ``state`` (the lock is held), then repair the projections."""
        make_dirs(self.files.dir)
        remove_stale_temps(self.files.dir, of=self.files.candidates.name, older_than_s=0)
        data = serialize_ledger(state)
        write_atomic(self.files.candidates, data)
        committed = replace(state, fingerprint=fingerprint(data))
        return committed, self.project(committed)

    def publish(
        self,
        candidates: Sequence[Candidate],
        *,
        job_id: str,
    ) -> PublishReport:
        """Add a job's candidates: exact normalized duplicates are skipped, near-duplicates
        (a correction) kept with their own provenance; the oldest beyond 128 are dropped.

        Idempotent by ``job_id``: a job applied before (a worker killed mid-publish and its
        job run again) adds nothing. Call it with the job's fence checked, under the lock —
        :class:`~orcamem._kernel.jobs.JobQueue` ``publish`` does both.
        """
        with self.lock.hold():
            state = self.read()
            if job_id in state.applied_jobs:
                return PublishReport(
                    already_applied=True,
                    revision=state.revision,
                    problems=self.repair(state),
                )
            known = {c.normalized for c in state.candidates}
            gone = {t.id for t in state.tombstones} | state.ids()
            kept: list[Candidate] = []
            duplicates = 0
            revision = state.revision + 1
            for candidate in candidates:
                key = candidate.normalized
                if not key or candidate.id in gone or key in known:
                    duplicates += 1
                    continue
                known.add(key)
                gone.add(candidate.id)
                kept.append(replace(candidate, revision=revision))
            merged = [*state.candidates, *kept]
            pruned = max(0, len(merged) - KEEP_CANDIDATES)
            new_state = replace(
                state,
                revision=revision if kept else state.revision,
                candidates=tuple(merged[pruned:]),
                applied_jobs=(*state.applied_jobs, job_id)[-KEEP_APPLIED_JOBS:],
            )
            committed, problems = self._commit(new_state)
        return PublishReport(
            kept=tuple(c.id for c in kept),
            duplicates=duplicates,
            pruned=pruned,
            revision=committed.revision,
            problems=problems,
        )

    def delete(
        self, ids: Iterable[str] | None, *, revision: int, now: str | None = None
    ) -> DeleteResult:
        """Delete candidates — ``ids``, or every candidate when ``ids`` is ``None`` — as of
        ``revision``, the revision the caller saw.

        Idempotent: repeating a request (same ids or all, same revision) changes nothing and
        returns what the first one did. Ids deleted by an earlier request count as deleted.

        Raises:
            RevisionConflictError: the ledger moved on since ``revision``; nothing changed.
            NotFoundError: an id that is not in the ledger and was never deleted.
            InvalidInputError: no ids, or a revision that is not a non-negative integer.
        """
        if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
            raise InvalidInputError(f"revision={revision!r}: pass the ledger revision you saw")
        wanted = None if ids is None else sorted(dict.fromkeys(ids))
        if wanted is not None and not wanted:
            raise InvalidInputError("name at least one candidate id (cand-…) to delete")
        request = stable_id(
            "del-", json.dumps([wanted if wanted is not None else "*", revision]), length=16
        )
        stamp = now or clock_stamp(self.clock)
        with self.lock.hold():
            state = self.read()
            earlier = [t.id for t in state.tombstones if t.request == request]
            if earlier:
                return DeleteResult(tuple(earlier), state.revision, repeated=True)
            if state.revision != revision:
                raise RevisionConflictError(
                    f"the ledger is at revision {state.revision}, not {revision}: it changed "
                    "since you looked; list the candidates again (orcamem memory list) and "
                    "delete with the current revision"
                )
            present = state.ids()
            tombstoned = {t.id for t in state.tombstones}
            if wanted is None:
                targets = [c.id for c in state.candidates]
            else:
                unknown = [i for i in wanted if i not in present and i not in tombstoned]
                if unknown:
                    raise NotFoundError(
                        f"no candidate {', '.join(unknown)} in this project's ledger "
                        "(list them with orcamem memory list); nothing was deleted"
                    )
                targets = [i for i in wanted if i in present]
            if not targets:
                return DeleteResult((), state.revision, repeated=False)
            new_revision = state.revision + 1
            drop = set(targets)
            tombstones = [
                *state.tombstones,
                *(Tombstone(i, new_revision, stamp, request) for i in targets),
            ]
            new_state = replace(
                state,
                revision=new_revision,
                candidates=tuple(c for c in state.candidates if c.id not in drop),
                tombstones=tuple(tombstones[-KEEP_TOMBSTONES:]),
            )
            committed, problems = self._commit(new_state)
        return DeleteResult(tuple(targets), committed.revision, problems=problems)

    # -- projections -----------------------------------------------------------------------

    def project(self, state: LedgerState) -> tuple[str, ...]:
        """Write both projections of ``state``; failures are returned, never raised."""
        problems = []
        try:
            write_markdown(self.files.auto_memory_md, state)
        except (OSError, StoreError) as exc:
            problems.append(f"auto-memory.md not written: {exc}")
        try:
            ledger_index.build(self.files.index, state.fingerprint, state.candidates)
        except ledger_index.IndexUnavailable as exc:
            problems.append(f"index.sqlite3 not written: {exc}")
        return tuple(problems)

    def stale_projections(self, state: LedgerState) -> list[str]:
        """Which projections do not match ``state`` (missing, stale or unreadable)."""
        stale = []
        if not markdown_matches(self.files.auto_memory_md, state.fingerprint):
            stale.append("auto-memory.md")
        if not ledger_index.matches(self.files.index, state.fingerprint):
            stale.append("index.sqlite3")
        return stale

    def repair(self, state: LedgerState | None = None) -> tuple[str, ...]:
        """Rebuild whichever projection is missing, stale or corrupt. Needs no lock: each is
        replaced atomically, and a projection of an older ledger is simply stale again."""
        state = state or self.read()
        problems = []
        if not markdown_matches(self.files.auto_memory_md, state.fingerprint):
            try:
                write_markdown(self.files.auto_memory_md, state)
            except (OSError, StoreError) as exc:
                problems.append(f"auto-memory.md not written: {exc}")
        if not ledger_index.matches(self.files.index, state.fingerprint):
            try:
                ledger_index.build(self.files.index, state.fingerprint, state.candidates)
            except ledger_index.IndexUnavailable as exc:
                problems.append(f"index.sqlite3 not written: {exc}")
        return tuple(problems)

    def search_index(self, state: LedgerState, query: str, limit: int) -> list[Candidate]:
        """BM25 (then newest) matches from the FTS5 index, rebuilt first when it is missing,
        stale or corrupt.

        Raises:
            ledger_index.IndexUnavailable: the index cannot be built or read (use the fallback).
        """
        try:
            ids = ledger_index.search(self.files.index, state.fingerprint, query, limit)
        except ledger_index.IndexUnavailable:
            ledger_index.build(self.files.index, state.fingerprint, state.candidates)
            ids = ledger_index.search(self.files.index, state.fingerprint, query, limit)
        by_id = {c.id: c for c in state.candidates}
        return [by_id[i] for i in ids if i in by_id]

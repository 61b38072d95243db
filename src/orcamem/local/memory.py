"""``LocalMemory``: an agent CLI's local memory for one session in one project.

Two paths with different owners (the local-memory spec):

- **Explicit facts.** :meth:`LocalMemory.remember` writes a user fact to ``memory/user.md``,
  or — with a ``project:`` prefix — a project fact to the project's ``memory.md``. Both files
  are loaded at session start, each bounded to 8 KiB (:meth:`LocalMemory.session_context`).
  Turning automatic memory off does not touch them.
- **Automatic memory.** After a successful, durably recorded root turn
  (:meth:`LocalMemory.finish_turn`), a durable extraction job is written — before the call
  returns — from exactly that turn's user and assistant messages, read back from the
  transcript by ``turn_id``; a session-owned worker runs it under a renewed, fenced lease and
  publishes the candidates into the project's ledger. The extractor is the auxiliary model
  when one is configured, else the verified rule-based one consolidation uses
  (``_kernel.claims``: no model, no network); each candidate and job result names the one
  that ran. At the start of each turn
  (:meth:`LocalMemory.begin_turn`) the turn waits at most five seconds behind the worker's
  queued commands, then recalls the candidates relevant to its prompt from the last committed
  ledger; a continuation of the turn keeps that snapshot.

One ``LocalMemory`` is one session: its setting (``auto_memory``) is read when it starts and
holds for its life, so ``auto_memory = false`` stops worker, capture and recall for sessions
started afterwards, and deletes nothing.

>>> with LocalMemory(".", start=False) as memory:          # doctest: +SKIP
...     memory.remember("project: We deploy with Helm on Fridays.")
...     print(memory.session_context())
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._kernel.claims.turn import EXTRACTOR as RULES
from .._kernel.claims.turn import turn_statements
from .._kernel.clock import Clock, SystemClock, stamp
from .._kernel.env import memory_dir
from .._kernel.files import FileLock, remove_stale_temps
from .._kernel.jobs import Job, JobResult, JobWorker, Ran, job_id
from .._kernel.llm import NOTHING, is_nothing
from .._kernel.model import (
    validate_count,
    validate_id,
    validate_prompt,
    validate_text,
)
from .._kernel.redact import refuse_secrets
from ..errors import (
    AttemptFailed,
    ClosedError,
    InvalidInputError,
    JobCancelled,
    ModelError,
    ModelOutputError,
    OrcamemError,
    QueueFullError,
    StoreError,
    TransientError,
)
from ..recall.blocks.local import pack_recall
from ..recall.blocks.quote import quote
from ..recall.ledger import fallback_rank
from . import index as ledger_index
from .extract import (
    CANDIDATES_SCHEMA,
    EXTRACTION_PROMPT,
    MAX_CANDIDATES_PER_TURN,
    build_source,
    parse_candidates,
    render_source,
    screen,
)
from .identity import find_project, project_identity
from .ledger import (
    MAX_EXPLICIT_BYTES,
    Candidate,
    DeleteResult,
    LedgerState,
    MemoryLayout,
    append_fact,
    candidate_id,
    read_bounded,
    read_facts,
)
from .projection import publish_project_json, read_project_json
from .projects import Project
from .setting import read_setting
from .transcript import Transcript, TranscriptRecord
from .worker import SessionWorker

__all__ = [
    "BARRIER_S",
    "EXTRACT",
    "MAX_FACT_CHARS",
    "Capture",
    "Continuation",
    "LocalMemory",
    "RecallSnapshot",
    "Remembered",
]

log = logging.getLogger("orcamem.local")

EXTRACT = "extract"
BARRIER_S = 5.0
"""A new turn waits at most this long behind the session worker's queued commands."""
RETRY_S = 30.0
"""A capture or worker pass that met a busy lock or job store runs again after this long."""
MAX_FACT_CHARS = 1000
RECOVER_TURNS = 64
"""At session start, the newest this many completed turns of the session are checked for a
capture that never became a job (the process stopped first)."""
SNAPSHOTS = 64
RECALL_CANDIDATES = 24
_PROJECT_PREFIX = "project:"


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Remembered:
    """Where an explicit fact went; ``added`` is ``False`` when it was already there."""

    scope: str
    """``user`` or ``project``."""
    path: Path
    fact: str
    added: bool
    loaded: bool = True
    """``False``: the file is over the 8 KiB a session loads and the fact lies past it (it is
    stored, and loads once the file is shortened)."""


@dataclass(frozen=True)
class Capture:
    """What :meth:`LocalMemory.finish_turn` decided for a turn."""

    eligible: bool
    reason: str
    job: Job | None = None
    """The durable extraction job, when it was queued in the foreground."""
    queued: bool = False
    """The capture was handed to the session worker (it builds the job from the transcript)."""


@dataclass(frozen=True)
class RecallSnapshot:
    """The automatic memory chosen for one turn: internal context, never transcript."""

    session_id: str
    turn_id: str
    text: str
    """The block to inject ("" when nothing is relevant)."""
    entries: tuple[Candidate, ...] = ()
    source: str = "empty"
    """``index`` (FTS5 BM25), ``fallback`` (lexical overlap + recency), ``empty``,
    ``disabled``."""
    barrier: str = "none"
    """``reached`` (the worker's queued commands finished), ``timed out`` (the last committed
    ledger was used while the worker goes on), ``none`` (no worker)."""
    revision: int = 0
    fingerprint: str = ""
    restored: bool = False
    """Chosen again after a restart (the original snapshot lived in the old process)."""
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Continuation:
    """A provider continuation of a turn: the turn's own snapshot and its exact messages."""

    snapshot: RecallSnapshot
    records: tuple[TranscriptRecord, ...] = field(default=())


# -- the service -------------------------------------------------------------------------------


class LocalMemory:
    """Local memory of one agent session in one project.

    Args:
        cwd: the session's working directory (default: the process's); it decides the project.
        session_id: the session (default: a fresh id).
        model: the auxiliary chat model (``orcamem._kernel.llm``) that extracts candidates;
            without one, the rule-based extractor does (``extractor == "rules"``).
        transcript: the session's durable history (``orcamem.local.transcript``); without
            one, history is not persistent and no turn is captured.
        history_persistent: ``False`` when the host keeps no durable history this session.
        root: the ``memory/`` directory (default ``$ORCA_HOME/memory`` or ``~/.orca/memory``).
        clock: where "now" comes from (tests pass a ``FrozenClock``).
        trust_project: whether the project's ``.orca/config.toml`` counts (default: listed in
            the user config's ``trusted_projects``).
        start: start the session worker and resume unfinished work (``False``: everything runs
            in the caller, for tools and tests).
        lock_timeout_s, lease_s, renew_every_s, poll_s, barrier_s, deadline_s: the lock wait,
            the job lease (renewed every third by wall clock), the idle poll, the turn-start
            barrier (5 s) and the model call's deadline.
    """

    def __init__(
        self,
        cwd: str | Path | None = None,
        *,
        session_id: str | None = None,
        model: Any = None,
        transcript: Transcript | None = None,
        history_persistent: bool = True,
        root: str | Path | None = None,
        clock: Clock | None = None,
        trust_project: bool | None = None,
        start: bool = True,
        lock_timeout_s: float = 10.0,
        lease_s: float = 60.0,
        renew_every_s: float | None = None,
        poll_s: float = 5.0,
        barrier_s: float = BARRIER_S,
        deadline_s: float = 60.0,
    ) -> None:
        self.layout = MemoryLayout(Path(root) if root is not None else memory_dir())
        found = project_identity(cwd if cwd is not None else Path.cwd())
        self.identity = find_project(found, self.layout.projects)
        self.clock = clock or SystemClock()
        self.project = Project(
            self.layout, self.identity.id, clock=self.clock, lock_timeout_s=lock_timeout_s
        )
        self.files = self.project.files
        self.session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
        self.model = model
        self.transcript = transcript
        self.history_persistent = history_persistent and transcript is not None
        self.lock = self.project.lock
        self.user_lock = FileLock(self.layout.lock, lock_timeout_s)
        self.ledger = self.project.ledger
        self.job_store = self.project.job_store
        self.jobs = self.project.jobs
        self.setting = read_setting(self.identity, trust_project=trust_project)
        self.barrier_s = barrier_s
        self.deadline_s = deadline_s
        self.problems: list[str] = list(self.setting.problems)
        self._snapshots: OrderedDict[tuple[str, str], RecallSnapshot] = OrderedDict()
        self._guard = threading.Lock()
        self._closing = threading.Event()
        self._closed = False
        self._touched = False
        self._running: Job | None = None
        """The job whose handler is running now (``close()`` gives its lease back)."""
        self._job_worker = JobWorker(
            self.jobs,
            {EXTRACT: self._extract},
            self.clock,
            lease_s=lease_s,
            renew_every_s=renew_every_s,
            spaces=[self.identity.space],
        )
        self._worker: SessionWorker | None = None
        remove_stale_temps(self.files.dir, clock=self.clock)  # the project's files and jobs/
        remove_stale_temps(self.layout.root, of=self.layout.user_md.name, clock=self.clock)
        if self.enabled and self.files.dir.is_dir():
            self._touch(quiet=True)
        if self.enabled and start:
            self._worker = SessionWorker(
                self._run_jobs,
                poll_s=poll_s,
                retry_s=RETRY_S,
                name=f"orcamem-local-{self.session_id}",
            )
            if self.history_persistent:
                self._worker.submit(self.recover)
            self._worker.jobs()

    # -- plumbing --------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Automatic memory (worker, capture, recall) is on for this session."""
        return self.setting.enabled

    @property
    def space(self) -> str:
        return self.identity.space

    @property
    def extractor(self) -> str:
        """What extracts this session's candidates: the model's id, or ``rules``."""
        return str(getattr(self.model, "id", None) or "model") if self.model else RULES

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this LocalMemory is closed: start a new session")

    def _problem(self, text: str) -> None:
        log.warning("local memory: %s", text)
        with self._guard:
            if text not in self.problems:
                self.problems.append(text)
                del self.problems[:-32]

    def _touch(self, *, quiet: bool = False) -> None:
        """Create the project directory and record ``project.json`` (identity, last cwd)."""
        if self._touched:
            return
        try:
            problem = publish_project_json(
                self.files,
                self.lock,
                self.identity,
                stamp(self.clock),
                timeout_s=0.5 if quiet else None,
            )
        except TransientError as exc:
            if not quiet:
                raise
            self._problem(f"project.json not updated: {exc}")
            return
        self._touched = True
        if problem:
            self._problem(problem)

    # -- explicit facts --------------------------------------------------------------------

    def remember(self, text: str) -> Remembered:
        """Write an explicit fact: ``"project: …"`` to the project's ``memory.md``, anything
        else to ``memory/user.md``. Works whether automatic memory is on or off.

        Raises:
            InvalidInputError: empty, over 1,000 characters, or holding something the secret
                detector finds (explicit facts are loaded into every session's prompt).
            TransientError: the file's lock is held elsewhere; nothing was written.
        """
        self._check_open()
        if not isinstance(text, str):
            raise InvalidInputError("the fact must be text")
        if text.strip():
            validate_text(text, what="the fact")
        fact = " ".join(text.split())
        scope = "user"
        if fact.lower().startswith(_PROJECT_PREFIX):
            scope, fact = "project", fact[len(_PROJECT_PREFIX) :].strip()
        if not fact:
            raise InvalidInputError(
                "nothing to remember: write the fact after `remember` (or after `project:`)"
            )
        if len(fact) > MAX_FACT_CHARS:
            raise InvalidInputError(
                f"the fact has {len(fact):,} characters; keep it under {MAX_FACT_CHARS:,} "
                "(one durable fact, not a document)"
            )
        refuse_secrets(fact, what="the fact")
        if scope == "project":
            self._touch()
            path = self.files.memory_md
            added = append_fact(path, self.lock, "Project memory", fact)
        else:
            path = self.layout.user_md
            added = append_fact(path, self.user_lock, "User memory", fact)
        return Remembered(scope, path, fact, added, fact in read_facts(path).facts)

    def session_context(self) -> str:
        """The explicit facts loaded at session start: ``user.md`` and the project's
        ``memory.md``, each bounded to 8 KiB (cut at a line end, with a note saying so).
        ``project.json`` is never part of it."""
        self._check_open()
        parts = []
        for label, path in (
            ("User facts (memory/user.md)", self.layout.user_md),
            ("Project facts (this project's memory.md)", self.files.memory_md),
        ):
            text, size = read_bounded(path, MAX_EXPLICIT_BYTES)
            if not text.strip():
                continue
            body = quote(text.rstrip("\n"))  # a hand-edited file may hold a secret or a tag
            loaded = len(text.encode("utf-8"))
            if size > loaded:
                body += (
                    f"\n[truncated: {loaded:,} of {size:,} bytes loaded; the limit is "
                    f"{MAX_EXPLICIT_BYTES:,} bytes — shorten {path.name}]"
                )
            parts.append(f"{label}:\n{body}")
        if not parts:
            return ""
        return (
            "<explicit-memory>\nFacts the user asked to remember.\n\n"
            + "\n\n".join(parts)
            + "\n</explicit-memory>\n"
        )

    # -- capture ---------------------------------------------------------------------------

    def _session(self, session_id: Any) -> str:
        """``session_id`` checked, or this session's id when it is ``None`` or ``""``."""
        if session_id is None or session_id == "":
            return self.session_id
        return validate_id(session_id, what="session_id")

    def _ineligible(self, session_id: str, turn_id: str) -> tuple[str | None, list]:
        """Why a turn may not be captured (``None``: it may), and its records."""
        if not self.enabled:
            return f"automatic memory is disabled ({self.setting.source})", []
        if not self.history_persistent or self.transcript is None:
            return "session history is not persistent", []
        records = self.transcript.turn_records(session_id, turn_id)
        completions = [r for r in records if r.type == "completion"]
        if not completions:
            return "the turn's completion record is not durably committed", records
        done = completions[-1]
        if done.kind != "root":
            return f"a {done.kind} turn is not captured (only root turns are)", records
        if done.status != "succeeded":
            return f"the turn {done.status}", records
        if done.verifier == "failed":
            return "the turn's verifier failed", records
        return None, records

    def finish_turn(self, turn_id: str, *, session_id: str | None = None) -> Capture:
        """After a turn: queue its capture if all four eligibility rules hold.

        1. automatic memory is enabled; 2. session history is persistent; 3. the root turn
        finished successfully, its verifier included; 4. its completion record is durable in
        the transcript. Failed, cancelled, verifier-failed, history-disabled, subagent and
        intermediate tool turns are not captured. The durable job is written before this
        returns (a process that ends next loses nothing); the foreground never waits for the
        extractor. With a session worker, a busy project lock hands the capture to the worker,
        which tries again after 30 s (``queued=True``).

        Raises:
            TransientError: only without a session worker (``start=False``): the project lock
                is busy; nothing was written (the next session's :meth:`recover` rebuilds it).
        """
        self._check_open()
        validate_id(turn_id, what="turn_id")
        session = self._session(session_id)
        reason, _ = self._ineligible(session, turn_id)
        if reason is not None:
            return Capture(False, reason)
        try:
            job, why = self.capture(session, turn_id)
        except (TransientError, StoreError) as exc:
            if self._worker is None:
                raise
            self._retry_capture(session, turn_id, exc)
            return Capture(True, f"handed to the session worker: {exc}", queued=True)
        if self._worker is not None and job is not None:
            self._worker.jobs()
        return Capture(True, why, job)

    def _retry_capture(self, session_id: str, turn_id: str, exc: Exception) -> None:
        self._problem(f"capture of turn {turn_id} retried in 30 s: {exc}")
        if self._worker is not None:
            worker = self._worker
            worker.later(RETRY_S, lambda: self._capture_in_worker(session_id, turn_id))
            worker.later(RETRY_S, worker.jobs)

    def _capture_in_worker(self, session_id: str, turn_id: str) -> None:
        try:
            self.capture(session_id, turn_id)
        except (TransientError, StoreError) as exc:
            self._retry_capture(session_id, turn_id, exc)

    def capture(self, session_id: str, turn_id: str) -> tuple[Job | None, str]:
        """Build the turn's extraction job from its durable transcript records (by
        ``turn_id``, so a restart rebuilds exactly the same source) and queue it.

        Idempotent by session, turn and redacted-source digest. Returns ``(job, why)``.

        Raises:
            TransientError: the project lock is busy (retry later; nothing was written).
        """
        validate_id(session_id, what="session_id")
        validate_id(turn_id, what="turn_id")
        reason, records = self._ineligible(session_id, turn_id)
        if reason is not None:
            return None, reason
        source = build_source(
            [
                {"kind": r.kind, "role": r.role, "text": r.text}
                for r in records
                if r.type == "message"
            ]
        )
        if not source.messages:
            return None, "the turn has no user or assistant message"
        ident = job_id(self.space, EXTRACT, session_id, turn_id, source.digest)
        try:
            existing = self.jobs.get(ident)
        except OrcamemError:
            existing = None
        if existing is not None:
            return existing, f"already queued ({existing.status})"
        if any(
            c.session_id == session_id and c.turn_id == turn_id
            for c in self.ledger.read().candidates
        ):
            return None, "the turn's candidates are already in the ledger"
        self._touch()
        try:
            job = self.jobs.enqueue(
                self.space,
                EXTRACT,
                session_id,
                turn_id,
                source.digest,
                source.payload(),
                self.clock.now(),
                provenance={"source": "turn", "redactions": source.redactions},
            )
        except QueueFullError as exc:
            self._problem(str(exc))
            return None, str(exc)
        return job, "queued"

    def recover(self) -> list[Job]:
        """Queue the captures this session's earlier process accepted but never turned into
        jobs (it stopped first), rebuilding each from the transcript records of its turn."""
        if not self.enabled or self.transcript is None or not self.history_persistent:
            return []
        queued = []
        for record in self.transcript.completions(self.session_id)[-RECOVER_TURNS:]:
            try:
                job, _ = self.capture(record.session_id, record.turn_id)
            except (TransientError, StoreError) as exc:
                self._problem(f"recovery of turn {record.turn_id} postponed: {exc}")
                continue
            if job is not None:
                queued.append(job)
        return queued

    # -- extraction (the job handler) ------------------------------------------------------

    def _extract(self, job: Job) -> Any:
        if self._closing.is_set():
            raise JobCancelled("the session is closing")
        state = self.ledger.read()
        if job.id in state.applied_jobs:
            # Published before the job's done mark landed (the worker was killed): finish it.
            ids = [c.id for c in state.candidates if c.job_id == job.id]
            return JobResult({"candidates": ids, "recovered": True}, self._repair_quietly)
        messages = job.payload.get("messages")
        if not isinstance(messages, list) or not messages:
            raise AttemptFailed("malformed job payload: no messages")
        with self._guard:
            self._running = job
        try:
            found = self._ask_model(messages) if self.model is not None else self._rules(job)
        finally:
            with self._guard:
                self._running = None
        if self._closing.is_set():  # close() gave the lease back while the extractor ran
            raise JobCancelled("the session closed while the extractor answered")
        if is_nothing(found):
            return JobResult(NOTHING, provenance={"extractor": self.extractor})
        return self._publishing(job, found)

    def _rules(self, job: Job) -> Any:
        """The verified rule-based extractor (no model): a rule the user set is ``feedback``,
        anything else they said about themself is ``user``."""
        messages = [m for m in job.payload["messages"] if isinstance(m, dict)]
        found = turn_statements(messages, job.created_at, session_id=job.session_id)
        if not found:
            return NOTHING
        return [
            {"category": "feedback" if s.claim.kind == "rule" else "user", "text": s.text}
            for s in found[:MAX_CANDIDATES_PER_TURN]
        ]

    def _ask_model(self, messages: list) -> Any:
        assert self.model is not None
        try:
            reply = self.model.complete_json(
                EXTRACTION_PROMPT,
                render_source(messages),
                CANDIDATES_SCHEMA,
                deadline_s=self.deadline_s,
                max_tokens=1024,
            )
        except ModelOutputError as exc:
            raise AttemptFailed(f"malformed output: {exc}") from None
        except ModelError as exc:
            if self._closing.is_set():
                raise JobCancelled("the session closed while the model answered") from None
            raise AttemptFailed(f"{type(exc).__name__}: {exc}") from None
        return parse_candidates(reply)

    def _publishing(self, job: Job, parsed: list[dict[str, str]]) -> JobResult:
        kept, rejected = screen(parsed)
        recorded = stamp(self.clock)
        extractor = self.extractor
        candidates = [
            Candidate(
                id=candidate_id(job.id, item["text"]),
                category=item["category"],
                text=item["text"],
                session_id=job.session_id,
                turn_id=job.turn_id,
                job_id=job.id,
                source_digest=job.source_digest,
                extractor=extractor,
                recorded_at=recorded,
                fence=job.fence,
            )
            for item in kept
        ]

        def apply() -> None:
            report = self.ledger.publish(candidates, job_id=job.id)
            for problem in report.problems:
                self._problem(problem)

        value = {
            "candidates": [c.id for c in candidates],
            "rejected": [r.to_json() for r in rejected],
        }
        return JobResult(value, apply, {"extractor": extractor})

    def _repair_quietly(self) -> None:
        for problem in self.ledger.repair():
            self._problem(problem)

    def _run_jobs(self, max_jobs: int = 64) -> str:
        """Run ready jobs until none is left; the last outcome (``store_error`` delays)."""
        if not self.files.jobs.is_dir():  # no job was ever queued: create nothing by looking
            return "idle"
        outcome = "idle"
        for _ in range(max_jobs):
            if self._closing.is_set():
                break
            ran = self._job_worker.run_once()
            outcome = ran.outcome
            if outcome in ("idle", "store_error"):
                break
        return outcome

    def run_jobs(self, max_jobs: int = 64) -> list[Ran]:
        """Run ready extraction jobs now, in the caller (tools, hooks, tests), with this
        session's extractor (the model, or the rules without one)."""
        self._check_open()
        validate_count(max_jobs, what="max_jobs", low=0)
        if not self.files.jobs.is_dir():  # no job was ever queued: create nothing by looking
            return []
        done = []
        for _ in range(max_jobs):
            ran = self._job_worker.run_once()
            if ran.outcome == "idle":
                break
            done.append(ran)
            if ran.outcome == "store_error":
                break
        return done

    # -- recall ----------------------------------------------------------------------------

    def recall(self, prompt: str) -> tuple[str, list[Candidate], str, LedgerState, list[str]]:
        """Select the candidates relevant to ``prompt`` from the committed ledger.

        Returns ``(text, entries, source, ledger state, problems)``. The index is repaired
        first when it is missing, stale or corrupt; if it still cannot be used, bounded
        lexical overlap plus recency ranks instead.
        """
        validate_prompt(prompt, what="prompt")
        state = self.ledger.read()
        problems = [f"unreadable ledger {c.describe()} (kept)" for c in state.corrupt]
        if not state.candidates:
            return "", [], "empty", state, problems
        problems += self.ledger.repair(state)
        try:
            ranked = self.ledger.search_index(state, prompt, RECALL_CANDIDATES)
            source = "index"
        except ledger_index.IndexUnavailable as exc:
            problems.append(f"index unavailable, lexical fallback used: {exc}")
            ranked = fallback_rank(prompt, state.candidates, self.clock.now(), RECALL_CANDIDATES)
            source = "fallback"
        text, entries = pack_recall(ranked, self.clock.now())
        return text, entries, source if entries else "empty", state, problems

    def begin_turn(
        self, turn_id: str, prompt: str, *, session_id: str | None = None
    ) -> RecallSnapshot:
        """The automatic memory for a new turn (internal context; not for the transcript).

        Waits at most five seconds behind the commands already queued in the session worker,
        then recalls from the last committed ledger. Asking again for the same turn (a provider
        continuation) returns the snapshot chosen the first time.
        """
        self._check_open()
        validate_id(turn_id, what="turn_id")
        validate_prompt(prompt, what="prompt")
        session = self._session(session_id)
        key = (session, turn_id)
        with self._guard:
            if key in self._snapshots:
                return self._snapshots[key]
        if not self.enabled:
            snapshot = RecallSnapshot(session, turn_id, "", source="disabled")
        else:
            barrier = "none"
            if self._worker is not None:
                barrier = "reached" if self._worker.barrier(self.barrier_s) else "timed out"
            snapshot = self._select(session, turn_id, prompt, barrier=barrier)
        with self._guard:
            self._snapshots[key] = snapshot
            while len(self._snapshots) > SNAPSHOTS:
                self._snapshots.popitem(last=False)
        return snapshot

    def _select(
        self, session: str, turn_id: str, prompt: str, *, barrier: str, restored: bool = False
    ) -> RecallSnapshot:
        try:
            text, entries, source, state, problems = self.recall(prompt)
        except StoreError as exc:  # the ledger cannot be read: the turn goes on without it
            self._problem(f"recall skipped: {exc}")
            return RecallSnapshot(session, turn_id, "", barrier=barrier, problems=(str(exc),))
        for problem in problems:
            self._problem(problem)
        return RecallSnapshot(
            session,
            turn_id,
            text,
            tuple(entries),
            source,
            barrier,
            state.revision,
            state.fingerprint,
            restored,
            tuple(problems),
        )

    def continue_turn(
        self, turn_id: str, *, prompt: str | None = None, session_id: str | None = None
    ) -> Continuation:
        """A provider continuation: the original turn's recall snapshot, and the turn's exact
        messages from the durable transcript (the records with this ``turn_id``).

        After a restart the snapshot is gone with the old process; it is chosen again from
        the first user message of the turn (``restored=True``) without waiting for the worker.
        """
        self._check_open()
        validate_id(turn_id, what="turn_id")
        if prompt is not None:
            validate_prompt(prompt, what="prompt")
        session = self._session(session_id)
        records = tuple(self.transcript.turn_records(session, turn_id)) if self.transcript else ()
        with self._guard:
            snapshot = self._snapshots.get((session, turn_id))
        if snapshot is None:
            if not self.enabled:
                snapshot = RecallSnapshot(session, turn_id, "", source="disabled")
            else:
                first = next(
                    (r.text for r in records if r.type == "message" and r.role == "user"),
                    prompt or "",
                )
                snapshot = self._select(session, turn_id, first, barrier="none", restored=True)
            with self._guard:
                self._snapshots[(session, turn_id)] = snapshot
        return Continuation(snapshot, records)

    # -- inspecting and deleting -----------------------------------------------------------

    def candidates(self) -> LedgerState:
        """The committed ledger (candidates oldest first, revision, unreadable lines)."""
        return self.ledger.read()

    def forget(self, ids: list[str] | None, *, revision: int) -> DeleteResult:
        """Delete candidates (``None``: all) as of ``revision`` — revisioned and idempotent.

        Raises:
            RevisionConflictError: the ledger changed since ``revision``; nothing was deleted.
            NotFoundError: an unknown id; nothing was deleted.
        """
        self._check_open()
        result = self.project.forget(ids, revision=revision)
        for problem in result.problems:
            self._problem(problem)
        return result

    def repair(self) -> tuple[str, ...]:
        """Rebuild the derived projections (``auto-memory.md``, ``index.sqlite3``) if stale."""
        self._check_open()
        if not self.files.candidates.exists():
            return ()
        return self.ledger.repair()

    def status(self) -> dict[str, Any]:
        """What is where, for people: paths, identity, setting, counts, problems."""
        state = self.ledger.read()
        metadata, metadata_problem = read_project_json(self.files.project_json)
        return {
            "memory_dir": str(self.layout.root),
            "user_md": str(self.layout.user_md),
            "project_dir": str(self.files.dir),
            "project_id": self.identity.id,
            "project_identity": self.identity.identity,
            "identity_kind": self.identity.kind,
            "cwd": str(self.identity.cwd),
            "project_json": metadata,
            "auto_memory": self.enabled,
            "auto_memory_source": self.setting.source,
            "revision": state.revision,
            "candidates": len(state.candidates),
            "corrupt_lines": [c.describe() for c in state.corrupt],
            "stale_projections": self.project.stale_projections(state),
            "jobs": self.jobs.counts(self.space) if self.files.jobs.is_dir() else {},
            "unreadable_jobs": self.job_store.problems(),
            "problems": [p for p in [metadata_problem, *self._oversized(), *self.problems] if p],
        }

    def _oversized(self) -> list[str]:
        """A fact file a session loads only in part: the facts past its 8 KiB never load."""
        found = []
        for path in (self.layout.user_md, self.files.memory_md):
            facts = read_facts(path)
            if facts.size > facts.loaded:
                found.append(
                    f"{path} is {facts.size:,} bytes; a session loads the first "
                    f"{facts.loaded:,}: shorten it, or the facts past that never load"
                )
        return found

    # -- lifecycle -------------------------------------------------------------------------

    def close(self, timeout: float = 5.0) -> None:
        """Stop the session worker. A job it has not started is left pending; a job whose
        extractor is answering gets its lease back at once, without using an attempt, and the
        answer is thrown away when it comes (the worker can no longer publish it). So closing
        never waits on a model. Idempotent."""
        if self._closed:
            return
        self._closing.set()
        self._closed = True
        with self._guard:
            running = self._running
        if running is not None:
            try:
                self.jobs.cancel(running, self.clock.now(), "the session closed mid-answer")
            except OrcamemError as exc:  # its lease expires and a later session takes it
                log.warning("local memory: job %s not released: %s", running.id, exc)
        if self._worker is not None:
            self._worker.stop(0.5 if running is not None else timeout)

    def __enter__(self) -> LocalMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

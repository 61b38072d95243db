"""Local memory driven by a host process per turn: ``orcamem turn start|before|after`` and the
agent-CLI hooks call these, one short-lived process each.

Each call opens the project found from the payload's ``cwd`` (seed 000's identity), does one
thing and closes; nothing is held between calls, so a host that dies between ``before`` and
``after`` loses nothing but that unfinished turn. ``after`` writes the turn's durable
extraction job before it returns; without a model the rule-based extractor then runs at once
(milliseconds), and ``before`` and ``after`` both first finish any job an earlier process left
(killed mid-way), so a capture that became a job is never lost. With a model nothing here
waits on it: the job stays pending for a worker (``orcamem memory work``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._kernel.clock import Clock, SystemClock, stamp
from .._kernel.ids import tagged
from .._kernel.jobs import Ran
from .._kernel.model import validate_id, validate_messages, validate_prompt
from .._kernel.text import message_text
from ..errors import InvalidInputError, OrcamemError
from .ledger import Candidate
from .memory import Capture, LocalMemory, RecallSnapshot
from .transcript import FinishedTurn

__all__ = [
    "HEAL_JOBS",
    "AfterTurn",
    "HostTurn",
    "parse_turn",
    "turn_after",
    "turn_before",
    "turn_start",
]

HEAL_JOBS = 8
"""Ready jobs a no-model ``before`` or ``after`` runs first (left by a process killed mid-way)."""


@dataclass(frozen=True)
class HostTurn:
    """A host's payload, checked: who, where, and the prompt or the finished turn."""

    session_id: str
    cwd: Path
    prompt: str = ""
    turn_id: str = ""
    messages: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AfterTurn:
    """What ``after`` did: the capture decision, the jobs run, what was kept, by which
    extractor."""

    capture: Capture
    extractor: str
    ran: tuple[Ran, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    problems: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        job = self.capture.job
        return {
            "eligible": self.capture.eligible,
            "reason": self.capture.reason,
            "job": job.id if job else None,
            "durable": job is not None or self.capture.queued,
            "extractor": self.extractor,
            "ran": [{"job": r.job.id if r.job else None, "outcome": r.outcome} for r in self.ran],
            "candidates": [c.to_json() for c in self.candidates],
            "problems": list(self.problems),
        }


def parse_turn(data: Any, *, finished: bool) -> HostTurn:
    """Check a payload: ``{"session_id", "cwd", "prompt"}`` (and optionally ``"turn_id"``)
    before a turn, or ``{"session_id",
    "turn_id", "cwd", "messages": [{"role", "content"}, …]}`` after it (``finished``).

    Raises:
        InvalidInputError: not an object, or a field missing or of the wrong type (named).
    """
    if not isinstance(data, Mapping):
        raise InvalidInputError(
            f"the payload must be a JSON object, got {type(data).__name__}: send "
            + (
                '{"session_id", "turn_id", "cwd", "messages"}'
                if finished
                else '{"session_id", "cwd", "prompt"}'
            )
        )
    session = validate_id(data.get("session_id"), what="session_id")
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not Path(cwd).is_absolute():
        raise InvalidInputError(
            f"the payload's cwd must be the session's absolute working directory, got {cwd!r}"
        )
    if not finished:
        prompt = validate_prompt(data.get("prompt"), what="prompt")
        pinned = data.get("turn_id")  # optional before a turn: finds memories pinned to it
        turn = "" if pinned is None else validate_id(pinned, what="turn_id")
        return HostTurn(session, Path(cwd), turn_id=turn, prompt=prompt)
    turn = validate_id(data.get("turn_id"), what="turn_id")
    messages = validate_messages(data.get("messages"), what="messages")
    pairs = tuple(
        (validate_id(m.get("role"), what="a message's role"), message_text(m.get("content")))
        for m in messages
    )
    return HostTurn(session, Path(cwd), turn_id=turn, messages=pairs)


def _heal(memory: LocalMemory) -> tuple[list[Ran], list[str]]:
    """Run the jobs an earlier process left, with the rules (never a model here)."""
    if memory.model is not None or not memory.enabled:
        return [], []
    try:
        return memory.run_jobs(HEAL_JOBS), []
    except OrcamemError as exc:
        return [], [f"pending jobs left for later: {exc}"]


def turn_start(
    turn: HostTurn, *, root: str | Path | None = None, clock: Clock | None = None
) -> str:
    """The explicit facts a session loads at start (``user.md`` and the project's
    ``memory.md``, 8 KiB each)."""
    with LocalMemory(
        turn.cwd, session_id=turn.session_id, start=False, root=root, clock=clock
    ) as m:
        return m.session_context()


def turn_before(
    turn: HostTurn, *, root: str | Path | None = None, clock: Clock | None = None
) -> RecallSnapshot:
    """The automatic memory for the prompt (seed 000: at most six entries, 3,072 bytes)."""
    with LocalMemory(
        turn.cwd, session_id=turn.session_id, start=False, root=root, clock=clock
    ) as m:
        _, problems = _heal(m)
        snapshot = m.begin_turn(f"prompt-{tagged(turn.prompt)[7:23]}", turn.prompt)
    return replace(snapshot, problems=(*snapshot.problems, *problems)) if problems else snapshot


def turn_after(
    turn: HostTurn,
    *,
    model: Any = None,
    root: str | Path | None = None,
    clock: Clock | None = None,
) -> AfterTurn:
    """Make the finished turn an eligible, durable capture; without a model, extract it now."""
    clock = clock or SystemClock()
    transcript = FinishedTurn(turn.session_id, turn.turn_id, list(turn.messages), at=stamp(clock))
    with LocalMemory(
        turn.cwd,
        session_id=turn.session_id,
        transcript=transcript,
        model=model,
        start=False,
        root=root,
        clock=clock,
    ) as memory:
        capture = memory.finish_turn(turn.turn_id)
        ran, problems = _heal(memory) if capture.eligible else ([], [])
        kept = tuple(
            c
            for c in memory.candidates().candidates
            if c.session_id == turn.session_id and c.turn_id == turn.turn_id
        )
        return AfterTurn(capture, memory.extractor, tuple(ran), kept, (*memory.problems, *problems))

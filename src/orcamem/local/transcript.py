"""Session transcripts: the durable record of what was said in a turn, and how the turn ended.

Local memory never writes the transcript (recalled context is not appended to it); it reads
it to decide whether a turn may be captured and to rebuild exactly that turn's messages —
by ``turn_id``, never the whole session — after a restart.

A host brings its own transcript by implementing :class:`Transcript`; :class:`JsonlTranscript`
is a ready one: one JSON object per line, each ``fsync``'d before the call returns, so a
completion record that was acknowledged is durable. :class:`FinishedTurn` is the one turn a
host hands over after it finished (``orcamem turn after``, the agent-CLI hooks): the host's own
history is the durable record, and the capture job written from it is orcamem's.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from .._kernel.files import fsync_dir, make_dirs, store_error
from ..errors import InvalidInputError

__all__ = [
    "MESSAGE_KINDS",
    "TURN_KINDS",
    "TURN_STATUSES",
    "FinishedTurn",
    "JsonlTranscript",
    "Transcript",
    "TranscriptRecord",
]

MESSAGE_KINDS = ("message", "system", "tool")
"""``message`` (a user or assistant message), ``system`` (system context), ``tool`` (a tool
call or its output)."""
TURN_KINDS = ("root", "subagent", "tool")
"""A root turn answers the user; subagent and intermediate tool turns run inside one."""
TURN_STATUSES = ("succeeded", "failed", "cancelled")
VERIFIER_RESULTS = ("passed", "failed")


@dataclass(frozen=True)
class TranscriptRecord:
    """A message (``type="message"``) or a turn's completion record (``type="completion"``)."""

    type: str
    session_id: str
    turn_id: str
    kind: str = "message"
    """For messages: one of :data:`MESSAGE_KINDS`; for completions: one of :data:`TURN_KINDS`."""
    role: str | None = None
    text: str = ""
    status: str | None = None
    """Completions: one of :data:`TURN_STATUSES`."""
    verifier: str | None = None
    """Completions: ``passed``, ``failed``, or ``None`` when the turn had no verifier."""
    at: str | None = None


@runtime_checkable
class Transcript(Protocol):
    """What local memory reads from a session's durable history."""

    def turn_records(self, session_id: str, turn_id: str) -> list[TranscriptRecord]:
        """Every durable record of one turn, in order."""
        ...

    def completions(self, session_id: str) -> list[TranscriptRecord]:
        """The session's durable completion records, oldest first."""
        ...


def _check_id(name: str, value: str) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > 256:
        raise InvalidInputError(f"{name} must be a non-blank string of at most 256 characters")


class JsonlTranscript:
    """A transcript in one JSON-lines file; every append is fsync'd before it returns."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._guard = threading.Lock()

    def _append(self, record: TranscriptRecord) -> TranscriptRecord:
        _check_id("session_id", record.session_id)
        _check_id("turn_id", record.turn_id)
        line = json.dumps(asdict(record), ensure_ascii=False, sort_keys=True) + "\n"
        make_dirs(self.path.parent)
        with self._guard:
            new = not self.path.exists()
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
                try:
                    size = os.fstat(fd).st_size
                    if size and os.pread(fd, 1, size - 1) != b"\n":
                        # a writer killed mid-line left it torn: this record starts its own
                        # line, or it would be read as part of the torn one and skipped
                        line = "\n" + line
                    view = memoryview(line.encode("utf-8"))
                    while view:  # a short write goes on where it stopped
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                raise store_error("append to", self.path, exc) from exc
            if new:  # the file's name, too, must survive a power loss
                fsync_dir(self.path.parent)
        return record

    def message(
        self,
        session_id: str,
        turn_id: str,
        role: str,
        text: str,
        *,
        kind: str = "message",
        at: str | None = None,
    ) -> TranscriptRecord:
        """Append a message of a turn (``kind``: ``message``, ``system`` or ``tool``)."""
        if kind not in MESSAGE_KINDS:
            raise InvalidInputError(f"kind={kind!r}: use one of {', '.join(MESSAGE_KINDS)}")
        return self._append(
            TranscriptRecord("message", session_id, turn_id, kind, role, str(text), at=at)
        )

    def complete(
        self,
        session_id: str,
        turn_id: str,
        *,
        status: str = "succeeded",
        verifier: str | None = None,
        kind: str = "root",
        at: str | None = None,
    ) -> TranscriptRecord:
        """Append the turn's completion record; it is durable when this returns."""
        if status not in TURN_STATUSES:
            raise InvalidInputError(f"status={status!r}: use one of {', '.join(TURN_STATUSES)}")
        if verifier is not None and verifier not in VERIFIER_RESULTS:
            raise InvalidInputError(f"verifier={verifier!r}: use 'passed', 'failed' or None")
        if kind not in TURN_KINDS:
            raise InvalidInputError(f"kind={kind!r}: use one of {', '.join(TURN_KINDS)}")
        return self._append(
            TranscriptRecord(
                "completion", session_id, turn_id, kind, status=status, verifier=verifier, at=at
            )
        )

    def _records(self) -> list[TranscriptRecord]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise store_error("read", self.path, exc) from exc
        records = []
        for raw in data.splitlines():
            try:
                value = json.loads(raw.decode("utf-8"))
                records.append(TranscriptRecord(**value))
            except (ValueError, TypeError, UnicodeDecodeError):
                continue  # a torn last line after a crash: not durable, not a record
        return records

    def turn_records(self, session_id: str, turn_id: str) -> list[TranscriptRecord]:
        return [r for r in self._records() if r.session_id == session_id and r.turn_id == turn_id]

    def completions(self, session_id: str) -> list[TranscriptRecord]:
        return [r for r in self._records() if r.session_id == session_id and r.type == "completion"]


class FinishedTurn:
    """One root turn a host reports as finished successfully and recorded in its own history.

    ``messages`` are ``(role, text)`` pairs in order; a role other than ``user`` or
    ``assistant`` (system context, tool output) is kept as a ``system`` or ``tool`` record, so
    capture leaves it out exactly as it does from a :class:`JsonlTranscript`.
    """

    def __init__(
        self, session_id: str, turn_id: str, messages: list[tuple[str, str]], *, at: str
    ) -> None:
        _check_id("session_id", session_id)
        _check_id("turn_id", turn_id)
        records = [
            TranscriptRecord(
                "message",
                session_id,
                turn_id,
                "message" if role in ("user", "assistant") else _kind(role),
                role,
                text,
                at=at,
            )
            for role, text in messages
        ]
        done = TranscriptRecord(
            "completion", session_id, turn_id, "root", status="succeeded", at=at
        )
        self._records = [*records, done]

    def turn_records(self, session_id: str, turn_id: str) -> list[TranscriptRecord]:
        return [r for r in self._records if r.session_id == session_id and r.turn_id == turn_id]

    def completions(self, session_id: str) -> list[TranscriptRecord]:
        return [r for r in self._records if r.session_id == session_id and r.type == "completion"]


def _kind(role: str) -> str:
    return "tool" if role in ("tool", "function") else "system"

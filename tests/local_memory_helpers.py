"""Shared helpers of the local-memory tests: a scripted model, turns written to a transcript."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orcamem.local.transcript import JsonlTranscript


class ScriptedModel:
    """A chat model that answers from a script (values, exceptions or callables).

    It records what it was sent, so tests can check what left the machine.
    """

    id = "scripted:test"

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.sent: list[str] = []
        self.systems: list[str] = []
        self.lock = threading.Lock()

    def complete_json(
        self,
        system: str,
        user: str,
        schema: dict[str, Any],
        *,
        deadline_s: float = 60.0,
        max_tokens: int = 1024,
    ) -> Any:
        with self.lock:
            self.sent.append(user)
            self.systems.append(system)
            reply = self.replies.pop(0) if self.replies else "NOTHING"
        if callable(reply):
            reply = reply()
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def close(self) -> None:
        pass


def items(*pairs: tuple[str, str]) -> dict[str, Any]:
    """A model reply with these ``(category, text)`` candidates."""
    return {"candidates": [{"category": c, "text": t} for c, t in pairs]}


def turn(
    transcript: JsonlTranscript,
    turn_id: str,
    user: str,
    assistant: str,
    *,
    session: str = "s1",
    status: str = "succeeded",
    verifier: str | None = "passed",
    kind: str = "root",
    complete: bool = True,
    extra: list[tuple[str, str, str]] = (),
) -> None:
    """Write one turn: user message, extra ``(kind, role, text)`` records, assistant message,
    and (unless ``complete=False``) its completion record."""
    transcript.message(session, turn_id, "user", user)
    for record_kind, role, text in extra:
        transcript.message(session, turn_id, role, text, kind=record_kind)
    transcript.message(session, turn_id, "assistant", assistant)
    if complete:
        transcript.complete(session, turn_id, status=status, verifier=verifier, kind=kind)


def wait_until(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    """Poll until ``condition`` holds: it asserts that background work *happens*, never how
    fast, so ``timeout`` only guards against a hang (5 s failed on a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.005)


def tree(root: Path) -> list[str]:
    """Every file under ``root``, relative, sorted (lock files left out)."""
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != ".lock"
    )


class KeyedModel(ScriptedModel):
    """Answers by the first key found in the text it is sent (order-independent jobs)."""

    def __init__(self, replies: dict[str, Any]) -> None:
        super().__init__()
        self.by_key = replies

    def complete_json(self, system: str, user: str, schema: dict[str, Any], **kw: Any) -> Any:
        with self.lock:
            self.sent.append(user)
        reply = next(value for key, value in self.by_key.items() if key in user)
        if isinstance(reply, BaseException):
            raise reply
        return reply

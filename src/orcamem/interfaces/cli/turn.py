"""``orcamem turn start|before|after``: memory for any agent host, one JSON object on stdin.

A thin skin over ``orcamem.local.host`` (or, with ``--memory capability``, the host
capability). Built for hooks: it never waits on a model, and on any error the host gets no
memory (an empty stdout) and one line on stderr: exit 1 when the payload is bad (the line says
what to send), exit 0 otherwise, so the agent's turn goes on.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Annotated, Any

import typer

from ...errors import InvalidInputError
from .console import JsonOption, command_group

__all__ = ["degrade", "read_payload", "register", "turn_app"]

turn_app = command_group(
    "Memory for an agent host: JSON on stdin before and after each turn (see docs/hooks.md)."
)


class MemoryKind(str, Enum):
    local = "local"
    capability = "capability"


MemoryOption = Annotated[
    MemoryKind,
    typer.Option(
        "--memory",
        help="local: seed 000's project memory (default); capability: the workspace's "
        "host capability (its <memory> block and after-turn save).",
    ),
]


def say(line: str) -> None:
    """One line on stderr, whatever the terminal (hosts log it)."""
    sys.stderr.write(" ".join(line.split()) + "\n")


def problems(label: str, found: Sequence[str]) -> None:
    """What went wrong while memory still answered (a corrupt line, a rebuilt index): one line."""
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        say(f"orcamem {label}: {found[0]}{more}")


def degrade(label: str, action: Callable[[], None]) -> None:
    """Run ``action``; on any error print nothing, say one line, and exit 1 (bad payload) or
    0 (anything else: the turn goes on without memory). Library warnings are not printed:
    they reach the host as that one line."""
    logging.getLogger("orcamem").addHandler(logging.NullHandler())
    try:
        action()
    except InvalidInputError as exc:
        say(f"orcamem {label}: bad input, no memory this turn: {exc}")
        raise typer.Exit(1) from None
    except Exception as exc:  # a hook degrades to "no memory", it never breaks the agent
        say(f"orcamem {label}: no memory this turn ({type(exc).__name__}: {exc})")
        raise typer.Exit(0) from None


def read_payload(text: str | None = None) -> Any:
    """The JSON payload (stdin unless given)."""
    raw = sys.stdin.read() if text is None else text
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise InvalidInputError(f"the payload is not JSON ({exc}): send one JSON object") from None


def capability_for(turn: Any) -> Any:
    """The workspace's capability (``cwd``), offered every provider, the engine's included."""
    from ...capability import Capability
    from ..engine_provider import ENGINE

    return Capability(turn.cwd, session_id=turn.session_id, providers=ENGINE)


def emit(data: Any, as_json: bool, text: str) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    elif text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


@turn_app.command("start")
def start(as_json: JsonOption = False) -> None:
    """Print the explicit facts to load at session start; stdin {"session_id", "cwd"}."""

    def run() -> None:
        from ...local.host import parse_turn, turn_start

        data = read_payload()  # parse_turn refuses what is no object; a start has no prompt
        turn = {"prompt": "", **data} if isinstance(data, dict) else data
        text = turn_start(parse_turn(turn, finished=False))
        emit({"memory": "local", "text": text}, as_json, text)

    degrade("turn start", run)


@turn_app.command("before")
def before(as_json: JsonOption = False, memory: MemoryOption = MemoryKind.local) -> None:
    """Print the memory to inject for a prompt; stdin {"session_id", "cwd", "prompt"}."""

    def run() -> None:
        from ...local.host import parse_turn, turn_before

        turn = parse_turn(read_payload(), finished=False)
        if memory is MemoryKind.capability:
            with capability_for(turn) as capability:
                found = capability.before_turn(turn.prompt, turn_id=turn.turn_id or None)
            data = {
                "memory": "capability",
                "text": found.block,
                "entries": [r.text for r in found.recalled],
                "problems": [found.error] if found.error else [],
            }
            emit(data, as_json, found.block)
            return
        snapshot = turn_before(turn)
        problems("turn before", snapshot.problems)
        data = {
            "memory": "local",
            "text": snapshot.text,
            "source": snapshot.source,
            "entries": [c.to_json() for c in snapshot.entries],
            "problems": list(snapshot.problems),
        }
        emit(data, as_json, snapshot.text)

    degrade("turn before", run)


def after_turn(data: Any, memory: MemoryKind, as_json: bool) -> None:
    """``turn after`` for a payload already read (the hooks call it too)."""
    from ...local.host import HostTurn, parse_turn, turn_after

    turn = data if isinstance(data, HostTurn) else parse_turn(data, finished=True)
    if memory is MemoryKind.capability:
        user = "\n".join(text for role, text in turn.messages if role == "user")
        reply = "\n".join(text for role, text in turn.messages if role == "assistant")
        with capability_for(turn) as capability:
            future = capability.after_turn(user, reply)
            outcome = future.result() if future is not None else None
            extractor = capability.extractor
        saved = list(outcome.facts) if outcome else []
        result = {
            "memory": "capability",
            "extractor": extractor,
            "saved": saved,
            "problems": [outcome.error] if outcome and outcome.error else [],
        }
        emit(result, as_json, f"saved {len(saved)} fact(s) (extractor: {extractor})")
        return
    done = turn_after(turn)
    problems("turn after", done.problems)
    result = {"memory": "local", **done.to_json()}
    job = done.capture.job
    if not done.capture.eligible:
        line = f"not captured: {done.capture.reason}"
    else:
        line = (
            f"captured turn {turn.turn_id} as job {job.id if job else '(queued)'} "
            f"(extractor: {done.extractor}): {len(done.candidates)} candidate(s) kept"
        )
    emit(result, as_json, line)


@turn_app.command("after")
def after(as_json: JsonOption = False, memory: MemoryOption = MemoryKind.local) -> None:
    """Capture a finished root turn; stdin {"session_id", "turn_id", "cwd", "messages":
    [{"role", "content"}, ...]}. The turn is a durable job before this returns."""
    degrade("turn after", lambda: after_turn(read_payload(), memory, as_json))


def register(app: typer.Typer) -> None:
    """Add ``orcamem turn …`` to the app."""
    app.add_typer(turn_app, name="turn")

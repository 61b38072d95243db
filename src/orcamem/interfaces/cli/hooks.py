"""``orcamem hooks install|uninstall|status claude-code|codex`` and ``orcamem hooks run …``,
the commands those hooks run. A skin over ``orcamem.local.hooks``; what it writes is shown
in docs/hooks.md.

``python -m orcamem.interfaces.cli.hooks run …`` is what the installed hooks run: this group
alone, so a hook does not load the rest of the CLI (the engine, the servers) on every turn.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ...errors import OrcamemError
from .console import JsonOption, command_group, fail, print_json
from .turn import MemoryKind, after_turn, capability_for, degrade, problems, read_payload

__all__ = ["hooks_app", "register"]

hooks_app = command_group("Memory inside agent CLIs: install their hooks, and run them.")
run_app = command_group("What an installed hook runs (the agent CLI calls these).")
hooks_app.add_typer(run_app, name="run")


class Agent(str, Enum):
    claude_code = "claude-code"
    codex = "codex"


class ClaudeEvent(str, Enum):
    SessionStart = "SessionStart"
    UserPromptSubmit = "UserPromptSubmit"
    Stop = "Stop"


AgentArg = Annotated[Agent, typer.Argument(help="claude-code or codex.")]
ProjectOption = Annotated[
    bool,
    typer.Option(
        "--project/--user",
        help="Claude Code: the project's .claude/settings.json, or ~/.claude/settings.json "
        "(default). Codex has only ~/.codex/config.toml.",
    ),
]
CwdOption = Annotated[
    Path | None, typer.Option("--cwd", help="The project (default: the current directory).")
]
SettingsOption = Annotated[
    Path | None,
    typer.Option("--settings", help="Edit this settings file instead of the default one."),
]


def _target(agent: Agent, project: bool, cwd: Path | None, settings: Path | None) -> Path:
    from ...local import hooks

    if settings is not None:
        return settings
    if agent is Agent.codex:
        return hooks.codex_config()
    return hooks.claude_settings("project" if project else "user", (cwd or Path.cwd()).resolve())


def _change(agent: Agent, path: Path, install: bool) -> Any:
    from ...local import hooks

    try:
        if agent is Agent.codex:
            return hooks.install_codex(path) if install else hooks.uninstall_codex(path)
        return hooks.install_claude(path) if install else hooks.uninstall_claude(path)
    except OrcamemError as exc:
        raise fail(exc) from None


def _report(verb: str, change: Any, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "path": str(change.path),
                "changed": change.changed,
                "backup": str(change.backup) if change.backup else None,
                "entries": change.entries,
            }
        )
        return
    state = f"{verb} in {change.path}" if change.changed else f"already {verb} in {change.path}"
    sys.stdout.write(state + "\n")
    if change.backup:
        sys.stdout.write(f"the previous file is kept as {change.backup}\n")


@hooks_app.command("install")
def install(
    agent: AgentArg,
    project: ProjectOption = False,
    cwd: CwdOption = None,
    settings: SettingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write orcamem's hook entries (idempotent; the old file is backed up first)."""
    _report("installed", _change(agent, _target(agent, project, cwd, settings), True), as_json)


@hooks_app.command("uninstall")
def uninstall(
    agent: AgentArg,
    project: ProjectOption = False,
    cwd: CwdOption = None,
    settings: SettingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove orcamem's hook entries, keeping every other setting."""
    _report("uninstalled", _change(agent, _target(agent, project, cwd, settings), False), as_json)


@hooks_app.command("status")
def status(
    agent: AgentArg,
    project: ProjectOption = False,
    cwd: CwdOption = None,
    settings: SettingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Say which of orcamem's hooks are installed in the settings file."""
    from ...local import hooks

    path = _target(agent, project, cwd, settings)
    try:
        found = hooks.status_codex(path) if agent is Agent.codex else hooks.status_claude(path)
    except OrcamemError as exc:
        raise fail(exc) from None
    if as_json:
        print_json({"path": str(path), "hooks": found})
        return
    for name, installed in found.items():
        sys.stdout.write(f"{name}: {'installed' if installed else 'not installed'} ({path})\n")


def _context(event: str, text: str) -> None:
    """Claude Code's documented way to add context: ``hookSpecificOutput.additionalContext``."""
    if text:
        output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")


@run_app.command("claude-code")
def run_claude(
    event: Annotated[ClaudeEvent, typer.Argument(help="The hook event.")],
    memory: Annotated[
        MemoryKind,
        typer.Option("--memory", help="local (default) or capability: see `orcamem turn`."),
    ] = MemoryKind.local,
) -> None:
    """Read a Claude Code hook payload on stdin and answer it (always exit 0 but for a bad
    payload; errors are one line on stderr)."""

    def run() -> None:
        from ...local import host
        from ...local.hooks import claude_turn

        payload = read_payload()
        if event is ClaudeEvent.Stop:
            after_turn(claude_turn(payload), memory, as_json=False)
            return
        if not isinstance(payload, dict):
            raise OrcamemError("the hook payload must be a JSON object")
        if event is ClaudeEvent.SessionStart:
            _context(
                event.value,
                host.turn_start(host.parse_turn({**payload, "prompt": ""}, finished=False)),
            )
            return
        turn = host.parse_turn(payload, finished=False)
        if memory is MemoryKind.capability:
            with capability_for(turn) as capability:
                _context(
                    event.value,
                    capability.before_turn(turn.prompt, turn_id=turn.turn_id or None).block,
                )
            return
        snapshot = host.turn_before(turn)
        problems(f"hooks run claude-code {event.value}", snapshot.problems)
        _context(event.value, snapshot.text)

    degrade(f"hooks run claude-code {event.value}", run)


@run_app.command("codex")
def run_codex(
    kind: Annotated[str, typer.Argument(help="notify")],
    payload: Annotated[str, typer.Argument(help="The JSON Codex passes as the last argument.")],
) -> None:
    """Codex's ``notify`` program: capture the turn an ``agent-turn-complete`` ended."""

    def run() -> None:
        from ...local.hooks import codex_turn

        if kind != "notify":
            raise OrcamemError(f"unknown Codex hook {kind!r}: use notify")
        turn = codex_turn(read_payload(payload))
        if turn is not None:
            after_turn(turn, MemoryKind.local, as_json=False)

    degrade("hooks run codex notify", run)


def register(app: typer.Typer) -> None:
    """Add ``orcamem hooks …`` to the app."""
    app.add_typer(hooks_app, name="hooks")


if __name__ == "__main__":
    hooks_app()

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

from ...errors import InvalidInputError, OrcamemError
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
        help="The project's .claude/settings.json (Codex: .codex/hooks.json), or the user's "
        "under ~ (default). Codex's notify is always in ~/.codex/config.toml.",
    ),
]
CwdOption = Annotated[
    Path | None, typer.Option("--cwd", help="The project (default: the current directory).")
]
SettingsOption = Annotated[
    Path | None,
    typer.Option(
        "--settings",
        help="Edit this settings file instead of the default one (Codex: its config.toml; "
        "hooks.json is the one beside it).",
    ),
]


def _targets(agent: Agent, project: bool, cwd: Path | None, settings: Path | None) -> list[Path]:
    """The files an agent's hooks live in: Claude Code's settings.json; Codex's config.toml
    (``notify``) and hooks.json (``UserPromptSubmit``)."""
    from ...local import hooks

    scope, where = ("project" if project else "user"), (cwd or Path.cwd()).resolve()
    if agent is Agent.codex:
        if settings is not None:
            return [settings, settings.with_name("hooks.json")]
        return [hooks.codex_config(), hooks.codex_hooks(scope, where)]
    return [settings if settings is not None else hooks.claude_settings(scope, where)]


def _changes(agent: Agent, paths: list[Path], install: bool) -> list[Any]:
    from ...local import hooks

    try:
        if agent is Agent.codex:
            if install:
                return [hooks.install_codex(paths[0]), hooks.install_codex_hooks(paths[1])]
            return [hooks.uninstall_codex(paths[0]), hooks.uninstall_codex_hooks(paths[1])]
        return [hooks.install_claude(paths[0]) if install else hooks.uninstall_claude(paths[0])]
    except OrcamemError as exc:
        raise fail(exc) from None


def _report(verb: str, changes: list[Any], as_json: bool) -> None:
    if as_json:
        found = [
            {
                "path": str(change.path),
                "changed": change.changed,
                "backup": str(change.backup) if change.backup else None,
                "entries": change.entries,
            }
            for change in changes
        ]
        print_json(found[0] if len(found) == 1 else found)
        return
    for change in changes:
        done = f"{verb} in {change.path}"
        sys.stdout.write((done if change.changed else f"already {done}") + "\n")
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
    _report("installed", _changes(agent, _targets(agent, project, cwd, settings), True), as_json)


@hooks_app.command("uninstall")
def uninstall(
    agent: AgentArg,
    project: ProjectOption = False,
    cwd: CwdOption = None,
    settings: SettingsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove orcamem's hook entries, keeping every other setting."""
    paths = _targets(agent, project, cwd, settings)
    _report("uninstalled", _changes(agent, paths, False), as_json)


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

    paths = _targets(agent, project, cwd, settings)
    readers = (
        [hooks.status_codex, hooks.status_codex_hooks]
        if agent is Agent.codex
        else [hooks.status_claude]
    )
    try:
        found = [(path, read(path)) for path, read in zip(paths, readers, strict=True)]
    except OrcamemError as exc:
        raise fail(exc) from None
    if as_json:
        shown = [{"path": str(path), "hooks": each} for path, each in found]
        print_json(shown[0] if len(shown) == 1 else shown)
        return
    for path, each in found:
        for name, installed in each.items():
            state = "installed" if installed else "not installed"
            sys.stdout.write(f"{name}: {state} ({path})\n")


def _context(event: str, text: str) -> None:
    """Claude Code's and Codex's documented way to add context:
    ``hookSpecificOutput.additionalContext``."""
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
            raise InvalidInputError("the hook payload must be a JSON object")
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
    kind: Annotated[str, typer.Argument(help="notify or UserPromptSubmit")],
    payload: Annotated[
        str | None,
        typer.Argument(help="notify: the JSON Codex passes as the last argument."),
    ] = None,
) -> None:
    """Codex's ``notify`` program (capture the turn an ``agent-turn-complete`` ended) and its
    ``UserPromptSubmit`` hook (payload on stdin; the recalled block as additionalContext)."""

    def run() -> None:
        from ...local import host
        from ...local.hooks import codex_turn

        if kind == "UserPromptSubmit":
            snapshot = host.turn_before(host.parse_turn(read_payload(), finished=False))
            problems(f"hooks run codex {kind}", snapshot.problems)
            _context(kind, snapshot.text)
            return
        if kind != "notify":
            raise OrcamemError(f"unknown Codex hook {kind!r}: use notify or UserPromptSubmit")
        if payload is None:
            raise OrcamemError("notify needs the JSON Codex passes as its last argument")
        turn = codex_turn(read_payload(payload))
        if turn is not None:
            after_turn(turn, MemoryKind.local, as_json=False)

    degrade(f"hooks run codex {kind}", run)


def register(app: typer.Typer) -> None:
    """Add ``orcamem hooks …`` to the app."""
    app.add_typer(hooks_app, name="hooks")


if __name__ == "__main__":
    hooks_app()

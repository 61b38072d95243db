"""Local memory inside agent CLIs: the hook entries orcamem writes into their settings, and the
payloads those hooks receive, turned into :mod:`orcamem.local.host` turns.

**Claude Code** (``settings.json``, user ``~/.claude/`` or project ``.claude/``): three
command hooks, each ``<python> -m orcamem.interfaces.cli.hooks run claude-code <Event>`` (the
light entry point: ``hooks`` and ``turn`` only, without the rest of the CLI and the engine).

- ``SessionStart`` → the explicit facts, as ``hookSpecificOutput.additionalContext``;
- ``UserPromptSubmit`` → the recalled block for ``prompt``, the same way;
- ``Stop`` → the turn that just ended, read from the session's ``transcript_path`` (its last
  user prompt, by that record's ``uuid``, and the assistant's text after it; sidechain
  (subagent), meta and tool-result records are left out), captured as an eligible root turn.

**Codex CLI**: its documented ``notify`` program (``~/.codex/config.toml``) gets one JSON
argument per finished turn (``agent-turn-complete``, with ``thread-id``, ``turn-id``, ``cwd``,
``input-messages`` and ``last-assistant-message``), captured the same way; and its
``UserPromptSubmit`` command hook (``hooks.json``, user ``~/.codex/`` or project ``.codex/``,
the same shape as Claude Code's; stdin ``session_id``, ``turn_id``, ``cwd``, ``prompt``, …)
gets the recalled block back as ``hookSpecificOutput.additionalContext``, which Codex adds to
the turn as developer context.

Install is idempotent (orcamem's entries are found by their command and replaced, anything
else is kept) and the previous file is copied to ``<name>.orcamem-backup`` before it changes.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._kernel.files import make_dirs, read_optional, write_atomic
from .._kernel.ids import tagged
from .._kernel.text import message_text
from ..errors import InvalidInputError
from .host import HostTurn, parse_turn
from .setting import tomllib

__all__ = [
    "CLAUDE_EVENTS",
    "Change",
    "claude_settings",
    "claude_turn",
    "codex_config",
    "codex_hooks",
    "codex_turn",
    "hook_command",
    "install_claude",
    "install_codex",
    "install_codex_hooks",
    "status_claude",
    "status_codex",
    "status_codex_hooks",
    "uninstall_claude",
    "uninstall_codex",
    "uninstall_codex_hooks",
]

CLAUDE_EVENTS = {"SessionStart": 10, "UserPromptSubmit": 10, "Stop": 30}
"""The Claude Code events orcamem hooks, with each command's timeout in seconds."""
CODEX_EVENTS = {"UserPromptSubmit": 10}
"""The Codex ``hooks.json`` events orcamem hooks (the finished turn comes by ``notify``)."""
_TRANSCRIPT_TAIL = 4 * 1024 * 1024
"""Only the end of a long session's transcript is read first: the last turn is there..."""
_TRANSCRIPT_MOST = 64 * 1024 * 1024
"""... unless its tool output passed that (60 file reads of 80 KB: 11.8 MB after the prompt,
and the turn was lost): the tail read doubles until it holds the prompt, up to this."""
BACKUP_SUFFIX = ".orcamem-backup"


ENTRY = "orcamem.interfaces.cli.hooks"
"""The module the hooks run: ``orcamem hooks`` without the rest of the CLI (it loads faster)."""


def hook_command(*args: str) -> list[str]:
    """The argv a host runs: this Python and the entry module (no PATH lookup to go wrong)."""
    return [sys.executable, "-m", ENTRY, "run", *args]


def _shell(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


_CLAUDE_MARK = f"-m {ENTRY} run claude-code"
_CODEX_HOOK_MARK = f"-m {ENTRY} run codex"
_CODEX_MARK = f'"-m", "{ENTRY}", "run", "codex"'


@dataclass(frozen=True)
class Change:
    """What an install or uninstall did to one settings file."""

    path: Path
    changed: bool
    backup: Path | None = None
    entries: Mapping[str, Any] | None = None
    """What orcamem's entries are now (``None`` after an uninstall)."""


def claude_settings(scope: str, cwd: Path) -> Path:
    """``~/.claude/settings.json`` (``user``) or ``<cwd>/.claude/settings.json`` (``project``)."""
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return cwd / ".claude" / "settings.json"
    raise InvalidInputError(f"scope={scope!r}: use 'user' or 'project'")


def codex_config() -> Path:
    return Path.home() / ".codex" / "config.toml"


def codex_hooks(scope: str, cwd: Path) -> Path:
    """``~/.codex/hooks.json`` (``user``) or ``<cwd>/.codex/hooks.json`` (``project``)."""
    if scope == "user":
        return Path.home() / ".codex" / "hooks.json"
    if scope == "project":
        return cwd / ".codex" / "hooks.json"
    raise InvalidInputError(f"scope={scope!r}: use 'user' or 'project'")


def _read(path: Path) -> str | None:
    data, problem = read_optional(path)
    if problem:
        raise InvalidInputError(f"cannot read {path}: {problem}; nothing was changed")
    return None if data is None else data.decode("utf-8", errors="replace")


def _write(path: Path, before: str | None, after: str) -> Change:
    if before == after:
        return Change(path, False)
    backup = None
    mode = 0o644
    if before is not None:
        mode = path.stat().st_mode & 0o777
        backup = path.with_name(path.name + BACKUP_SUFFIX)
        write_atomic(backup, before.encode("utf-8"), mode=mode)
    make_dirs(path.parent, mode=0o755)
    write_atomic(path, after.encode("utf-8"), mode=mode)
    return Change(path, True, backup)


# -- Claude Code -----------------------------------------------------------------------------


def _settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    text = _read(path)
    if text is None or not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(
            f"{path} is not valid JSON ({exc}): fix or move it, then install again; nothing "
            "was changed"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise InvalidInputError(f"{path} must be a JSON object whose 'hooks' is an object")
    return text, data


def _ours(group: Any, mark: str) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and mark in str(h.get("command", "")) for h in hooks
    )


def _entries(agent: str, events: Mapping[str, int]) -> dict[str, list[dict[str, Any]]]:
    return {
        event: [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": _shell(hook_command(agent, event)),
                        "timeout": timeout,
                    }
                ]
            }
        ]
        for event, timeout in events.items()
    }


def _without_ours(hooks: dict[str, Any], mark: str) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if isinstance(groups, list):
            groups = [g for g in groups if not _ours(g, mark)]
            if not groups:
                continue
        kept[event] = groups
    return kept


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _install_json(path: Path, agent: str, events: Mapping[str, int], mark: str) -> Change:
    before, data = _settings(path)
    hooks = _without_ours(data.get("hooks", {}), mark)
    entries = _entries(agent, events)
    for event, groups in entries.items():
        hooks[event] = [*hooks.get(event, []), *groups]
    change = _write(path, before, _dump({**data, "hooks": hooks}))
    return Change(change.path, change.changed, change.backup, entries)


def _uninstall_json(path: Path, mark: str) -> Change:
    before, data = _settings(path)
    if before is None:
        return Change(path, False)
    hooks = _without_ours(data.get("hooks", {}), mark)
    rest = {k: v for k, v in data.items() if k != "hooks"}
    return _write(path, before, _dump({**rest, "hooks": hooks} if hooks else rest))


def _status_json(path: Path, events: Mapping[str, int], mark: str) -> dict[str, bool]:
    _, data = _settings(path)
    hooks = data.get("hooks", {})
    return {
        event: isinstance(hooks.get(event), list) and any(_ours(g, mark) for g in hooks[event])
        for event in events
    }


def install_claude(path: Path) -> Change:
    """Write orcamem's SessionStart, UserPromptSubmit and Stop hooks into ``path``."""
    return _install_json(path, "claude-code", CLAUDE_EVENTS, _CLAUDE_MARK)


def uninstall_claude(path: Path) -> Change:
    """Remove orcamem's entries from ``path``, keeping every other hook and setting."""
    return _uninstall_json(path, _CLAUDE_MARK)


def status_claude(path: Path) -> dict[str, bool]:
    """For each hooked event, whether orcamem's entry is in ``path``."""
    return _status_json(path, CLAUDE_EVENTS, _CLAUDE_MARK)


def _tail_records(path: Path, tail: int) -> tuple[list[dict[str, Any]], bool]:
    """The records of the last ``tail`` bytes of ``path``, and whether that was all of it."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - tail))
            data = handle.read()
    except OSError as exc:
        raise InvalidInputError(f"cannot read the transcript {path}: {exc.strerror}") from None
    lines = data.splitlines()[1:] if size > tail else data.splitlines()
    records = []
    for raw in lines:
        try:
            value = json.loads(raw)
        except ValueError:
            continue  # a line being written, or a torn one
        if isinstance(value, dict):
            records.append(value)
    return records, size <= tail


def _prompt_text(record: dict[str, Any]) -> str | None:
    """The text of a user prompt record; ``None`` for tool results, meta and subagent lines."""
    message = record.get("message")
    if record.get("type") != "user" or record.get("isSidechain") or record.get("isMeta"):
        return None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") == "tool_result" for p in content
    ):
        return None
    text = message_text(content)
    return text if text.strip() else None


def claude_turn(payload: Any) -> HostTurn:
    """The turn a Claude Code ``Stop`` payload ended, read from its ``transcript_path``.

    Raises:
        InvalidInputError: the payload is not a Stop payload, or the transcript has no prompt.
    """
    if not isinstance(payload, Mapping) or not isinstance(payload.get("transcript_path"), str):
        raise InvalidInputError("a Stop payload needs 'session_id', 'cwd' and 'transcript_path'")
    path, tail = Path(payload["transcript_path"]).expanduser(), _TRANSCRIPT_TAIL
    while True:
        records, whole = _tail_records(path, tail)
        start = next(
            (i for i in range(len(records) - 1, -1, -1) if _prompt_text(records[i]) is not None),
            None,
        )
        if start is not None or whole or tail >= _TRANSCRIPT_MOST:
            break
        tail *= 2
    if start is None:
        raise InvalidInputError(f"no user prompt in {payload['transcript_path']}")
    prompt = records[start]
    messages = [{"role": "user", "content": _prompt_text(prompt)}]
    for record in records[start + 1 :]:
        message = record.get("message")
        if record.get("type") == "assistant" and not record.get("isSidechain"):
            text = message_text(message.get("content")) if isinstance(message, dict) else ""
            if text.strip():
                messages.append({"role": "assistant", "content": text})
    last = payload.get("last_assistant_message")
    if len(messages) == 1 and isinstance(last, str) and last.strip():
        messages.append({"role": "assistant", "content": last})
    turn_id = prompt.get("uuid") or f"prompt-{tagged(messages[0]['content'])[7:23]}"
    return parse_turn(
        {
            "session_id": payload.get("session_id"),
            "cwd": payload.get("cwd"),
            "turn_id": turn_id,
            "messages": messages,
        },
        finished=True,
    )


# -- Codex CLI -------------------------------------------------------------------------------


def _notify_line() -> str:
    return "notify = " + json.dumps(hook_command("codex", "notify")) + "\n"


def _codex_lines(text: str) -> tuple[list[str], dict[str, Any]]:
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(
            f"the Codex config is not valid TOML ({exc}): fix it, then install again; nothing "
            "was changed"
        ) from None
    return text.splitlines(keepends=True), parsed


def install_codex(path: Path) -> Change:
    """Set Codex's top-level ``notify`` to orcamem's (refusing to replace another program)."""
    before = _read(path) or ""
    lines, parsed = _codex_lines(before)
    notify = parsed.get("notify")
    if notify is not None and _CODEX_MARK not in json.dumps(notify):
        raise InvalidInputError(
            f"{path} already runs notify = {json.dumps(notify)}: Codex takes one notify "
            "program; remove that line (or call orcamem from it), then install again"
        )
    kept = [line for line in lines if not (line.startswith("notify") and _CODEX_MARK in line)]
    after = _notify_line() + "".join(kept)
    _codex_lines(after)  # still valid TOML, or nothing is written
    change = _write(path, before if path.exists() else None, after)
    return Change(
        change.path, change.changed, change.backup, {"notify": hook_command("codex", "notify")}
    )


def uninstall_codex(path: Path) -> Change:
    before = _read(path)
    if before is None:
        return Change(path, False)
    lines, _ = _codex_lines(before)
    after = "".join(
        line for line in lines if not (line.startswith("notify") and _CODEX_MARK in line)
    )
    return _write(path, before, after)


def status_codex(path: Path) -> dict[str, bool]:
    _, parsed = _codex_lines(_read(path) or "")
    return {"notify": _CODEX_MARK in json.dumps(parsed.get("notify"))}


def install_codex_hooks(path: Path) -> Change:
    """Write orcamem's ``UserPromptSubmit`` hook into Codex's ``hooks.json`` at ``path``."""
    return _install_json(path, "codex", CODEX_EVENTS, _CODEX_HOOK_MARK)


def uninstall_codex_hooks(path: Path) -> Change:
    return _uninstall_json(path, _CODEX_HOOK_MARK)


def status_codex_hooks(path: Path) -> dict[str, bool]:
    return _status_json(path, CODEX_EVENTS, _CODEX_HOOK_MARK)


def codex_turn(payload: Any) -> HostTurn | None:
    """The finished turn of a Codex ``notify`` payload (``None``: another notification)."""
    if not isinstance(payload, Mapping):
        raise InvalidInputError("the Codex notify payload must be a JSON object")
    if payload.get("type") != "agent-turn-complete":
        return None
    inputs = payload.get("input-messages") or []
    if not isinstance(inputs, list):
        raise InvalidInputError("'input-messages' must be a list of strings")
    messages = [{"role": "user", "content": str(m)} for m in inputs]
    last = payload.get("last-assistant-message")
    if isinstance(last, str) and last.strip():
        messages.append({"role": "assistant", "content": last})
    return parse_turn(
        {
            "session_id": payload.get("thread-id"),
            "cwd": payload.get("cwd"),
            "turn_id": payload.get("turn-id"),
            "messages": messages,
        },
        finished=True,
    )

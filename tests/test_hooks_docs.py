"""docs/hooks.md runs: its shell blocks in a temporary project and home (they install hooks,
so never in the real ``~``), and the settings it shows are the ones install writes."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import test_docs_commands as docs_commands
from test_docs_commands import FENCE, Shell, run_block

ROOT = Path(__file__).resolve().parents[1]
HOOKS_MD = ROOT / "docs" / "hooks.md"
shell = docs_commands.shell
"""The docs tests' fixture: ``orcamem`` on PATH, a temporary working directory."""


def fenced(lang: str) -> list[str]:
    return [
        body for kind, body in FENCE.findall(HOOKS_MD.read_text(encoding="utf-8")) if kind == lang
    ]


def docs_shell(tmp_path: Path, shell: Shell) -> Shell:
    home = tmp_path / "home"
    home.mkdir()
    return shell.but(HOME=str(home))


def test_the_hooks_docs_blocks_run(tmp_path: Path, shell: Shell) -> None:
    here = docs_shell(tmp_path, shell)
    printed = "".join(run_block(body, here) for body in fenced("bash"))
    assert "The user prefers pytest." in printed  # turn after, then turn before, found it
    assert printed.count(": installed") == 3 and "\nindex\n" in printed
    settings = json.loads((here.cwd / ".claude" / "settings.json").read_text())
    codex_hooks = json.loads((Path(here.env["HOME"]) / ".codex" / "hooks.json").read_text())
    claude, codex = fenced("json")
    assert json.loads(claude.replace("/path/to/python", sys.executable)) == settings
    assert json.loads(codex.replace("/path/to/python", sys.executable)) == codex_hooks
    config = (Path(here.env["HOME"]) / ".codex" / "config.toml").read_text()
    (toml,) = fenced("toml")
    assert toml.replace("/path/to/python", sys.executable) == config


def test_every_block_of_hooks_md_is_run_here() -> None:
    """test_docs_commands.py leaves hooks.md's shell blocks to this file (RUN_ELSEWHERE)."""
    from test_docs_commands import RUN_ELSEWHERE

    for body in fenced("bash"):
        assert any(body.startswith(start) for start in RUN_ELSEWHERE), body.splitlines()[0]
    assert re.search(r"orcamem hooks install claude-code", HOOKS_MD.read_text())

"""The ``orcamem`` command starts light: ``--help``, every command's ``--help`` and ``version``
import none of the four systems, the servers, numpy or the settings model.

Hooks and scripts run ``orcamem`` once per turn; each command imports what it runs inside its
own body, so a help screen costs the CLI's definitions and nothing more. The runner below asks
for every help screen in one fresh interpreter, through ``python -m orcamem`` as a user runs it,
then reports which heavy modules got loaded: a module-level import of one of them anywhere in
the CLI fails this test, with no timing involved.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from orcamem.interfaces.cli.main import app

RUNNER = """
import contextlib, io, json, runpy, sys
argvs, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
results = []
for args in argvs:
    sys.argv = ["orcamem", *args]
    shown = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(shown):
        try:
            runpy.run_module("orcamem", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code or 0
    results.append({"args": args, "code": code, "stdout": shown.getvalue()})
loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
sys.stderr.write("LOADED " + json.dumps({"results": results, "loaded": loaded}) + "\\n")
"""

HEAVY = (
    "numpy",
    "tokenizers",
    "safetensors",
    "sqlite3",
    "httpx",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "jsonschema",
    "pydantic",
    "playwright",
    "pydantic_settings",
    "opentelemetry",
    "rich",
    "orcamem.engine",
    "orcamem.bank",
    "orcamem.capability",
    "orcamem.local",
    "orcamem.recall",
    "orcamem.bench",
    "orcamem.integrations",
    "orcamem.interfaces.http",
    "orcamem.interfaces.mcp",
    "orcamem._kernel.settings",
    "orcamem._kernel.embed",
    "orcamem._kernel.jobs",
)
"""What a help screen must not load: the systems and their stores, numpy and the embedder, the
HTTP and MCP servers, the HTTP client, pydantic (the settings model's; Typer converts a group's
unset ``--help`` through it unless ``console.LightGroup`` makes it ``False``), rich (the
consoles are made on first use: ``console.LazyConsole``)."""


def command_paths(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command and group of the ``orcamem`` tree (Typer's click groups), as the words
    that name it."""
    for name, command in group.commands.items():
        path = (*prefix, name)
        yield path
        if hasattr(command, "commands"):  # a group
            yield from command_paths(command, path)


PATHS = sorted(command_paths(typer.main.get_command(app)))


def run_in_fresh_python(
    argvs: list[list[str]], env: dict[str, str]
) -> tuple[list[dict], list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(argvs), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = [x for x in done.stderr.splitlines() if x.startswith("LOADED ")]
    assert len(lines) == 1, done.stderr
    report = json.loads(lines[0].removeprefix("LOADED "))
    return report["results"], report["loaded"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    import os

    source = str(Path(__file__).resolve().parents[1] / "src")
    return {
        **os.environ,
        "ORCA_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")]),
        "COLUMNS": "200",
    }


def test_the_tree_is_the_whole_cli() -> None:
    """The enumeration reaches the sub-groups' commands, so the test below covers them."""
    assert {("add",), ("bank", "save"), ("memory", "list"), ("hooks", "run", "codex")} <= set(PATHS)
    assert len(PATHS) > 50


def test_help_screens_and_version_load_no_system_server_or_numpy(env: dict[str, str]) -> None:
    argvs = [["--help"], *([*path, "--help"] for path in PATHS), ["version"], ["--version"]]
    results, loaded = run_in_fresh_python(argvs, env)
    for result in results:
        assert result["code"] == 0, result
    helps = {tuple(r["args"][:-1]): r["stdout"] for r in results if r["args"][-1] == "--help"}
    for path in PATHS:
        assert helps[path].startswith("Usage: "), (path, helps[path])
        assert " ".join(path) in helps[path].splitlines()[0], (path, helps[path])
    assert "Commands:" in helps[()] and "search" in helps[()]
    assert "--top-k" in helps[("search",)] and "--since" in helps[("search",)]
    assert "--require-keys" in helps[("up",)] and "--dir" in helps[("bank", "save")]
    version = [r["stdout"] for r in results if r["args"][-1] in ("version", "--version")]
    assert version == ["0.1.0\n", "0.1.0\n"]
    assert loaded == [], f"a help screen or `orcamem version` loaded {loaded}"


@pytest.mark.parametrize(
    ("argv", "absent"),
    [
        # the engine's commands load the engine, not the bank, local memory, servers or MCP
        (["stats", "--json"], ("orcamem.bank", "orcamem.local", "fastapi", "mcp", "httpx")),
        # the bank's commands do not load the engine
        (["bank", "stats", "--dir", "{tmp}/bank"], ("orcamem.engine", "numpy", "fastapi", "mcp")),
        # local memory's do not load the engine or the bank
        (["memory", "show", "--cwd", "{tmp}"], ("orcamem.engine", "orcamem.bank", "fastapi")),
    ],
)
def test_a_command_loads_only_the_system_it_runs(
    env: dict[str, str], tmp_path: Path, argv: list[str], absent: tuple[str, ...]
) -> None:
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    env = {**env, "ORCAMEM_DB": str(tmp_path / "m.db")}
    (result,), loaded = run_in_fresh_python([args], env)
    assert result["code"] == 0, result
    assert result["stdout"].strip()
    assert not [m for m in loaded if any(m == a or m.startswith(a + ".") for a in absent)], loaded

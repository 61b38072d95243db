"""The environment is read in one module (``_kernel/env.py``) and every name it reads is in
``env.NAMES``, which the autouse fixture strips (issue 10). Checked by reading the source's AST
and by running each reader against a mapping that records what was asked of it."""

from __future__ import annotations

import ast
import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orcamem._kernel import env

SRC = Path(env.__file__).resolve().parents[1]
ENV_MODULE = Path(env.__file__).resolve()
ENV_ATTRIBUTES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
"""``os`` names that read (or change) the process environment."""
ENVVAR_KEYWORDS = {"envvar", "auto_envvar_prefix"}
"""Typer/Click options that read a variable themselves."""


def _sources() -> Iterator[Path]:
    yield from sorted(p for p in SRC.rglob("*.py") if p.resolve() != ENV_MODULE)


def _names_env(value: ast.expr) -> bool:
    """True for ``DB_ENV`` or ``env.DB_ENV``: a constant of ``env`` that ``NAMES`` lists."""
    name = value.id if isinstance(value, ast.Name) else getattr(value, "attr", None)
    return name is not None and getattr(env, name, None) in env.NAMES


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module reads the environment itself: ``os.environ``/``getenv`` in any form, or
    an ``envvar=`` that is not a listed constant of ``env``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ENV_ATTRIBUTES:
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [
                (node.lineno, f"from os import {a.name}")
                for a in node.names
                if a.name in ENV_ATTRIBUTES
            ]
        elif (
            isinstance(node, ast.keyword)
            and node.arg in ENVVAR_KEYWORDS
            and not _names_env(node.value)
        ):
            found.append((node.lineno, f"{node.arg}={ast.unparse(node.value)}"))
    return sorted(found)


def test_no_module_outside_env_reads_the_environment() -> None:
    offenders = [
        f"{path.relative_to(SRC.parent)}:{line}: {what}"
        for path in _sources()
        for line, what in _reads(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offenders, "read these through orcamem._kernel.env:\n" + "\n".join(offenders)


def test_the_scan_catches_each_way_of_reading() -> None:
    code = (
        "import os\nfrom os import getenv, path\na = os.environ.get('X')\nb = os.getenv('Y')\n"
        "typer.Option(envvar='Z')\ntyper.Option(envvar=DB_ENV)\ntyper.Option(envvar=MY_ENV)\n"
    )
    assert [what for _, what in _reads(ast.parse(code))] == [
        "from os import getenv",
        ".environ",
        ".getenv",
        "envvar='Z'",
        "envvar=MY_ENV",
    ]


def test_every_name_constant_in_env_is_listed() -> None:
    tree = ast.parse(ENV_MODULE.read_text(encoding="utf-8"))
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.endswith("_ENV")
        and isinstance(node.value, ast.Constant)
    }
    assert constants, "env.py names its variables as *_ENV constants"
    assert {name for name, value in constants.items() if value not in env.NAMES} == set()


class Recording(dict[str, str]):
    """An environment that remembers every name a reader asked for."""

    def __init__(self, values: dict[str, str]) -> None:
        super().__init__(values)
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return super().__contains__(key)


def _readers() -> list[Any]:
    return [
        getattr(env, name)
        for name in env.__all__
        if inspect.isfunction(getattr(env, name))
        and "environ" in inspect.signature(getattr(env, name)).parameters
    ]


@pytest.mark.parametrize(
    "values",
    [
        {},  # every fallback
        {"INTERNAL_S3_BUCKET": "b"},  # the internal bucket's friends, then AWS_*
        {"S3_BUCKET": "b"},  # the shared bucket's friends
        dict.fromkeys(env.NAMES, "x"),  # everything set
    ],
    ids=["unset", "internal-bucket", "shared-bucket", "all-set"],
)
def test_every_name_a_reader_reads_is_in_names(values: dict[str, str]) -> None:
    recorded = Recording(values)
    for reader in _readers():
        reader(recorded)
    outside = sorted(recorded.asked - set(env.NAMES) - set(env.PASSTHROUGH))
    assert not outside, f"add these to env.NAMES: {outside}"


def test_every_name_in_names_is_read() -> None:
    """No stale entries: each listed name is read by a reader or by the CLI's options."""
    asked: set[str] = set()
    for values in ({}, {"INTERNAL_S3_BUCKET": "b"}, {"S3_BUCKET": "b"}):
        recorded = Recording(values)
        for reader in _readers():
            reader(recorded)
        asked |= recorded.asked
    assert set(env.NAMES) - asked == _cli_envvars()
    assert len(set(env.NAMES)) == len(env.NAMES)
    assert not set(env.NAMES) & set(env.PASSTHROUGH)


def _cli_envvars() -> set[str]:
    import typer.main

    from orcamem.interfaces.cli.main import app

    found: set[str] = set()

    def walk(command: Any) -> None:
        for param in getattr(command, "params", []):
            envvar = getattr(param, "envvar", None)
            found.update([envvar] if isinstance(envvar, str) else envvar or [])
        for child in getattr(command, "commands", {}).values():
            walk(child)

    walk(typer.main.get_command(app))
    return found


def test_the_cli_reads_only_listed_variables() -> None:
    """``ORCAMEM_DB`` and the other settings come through ``_kernel.settings``, not Typer."""
    assert _cli_envvars() == {"ORCAMEM_PROFILE"}
    assert _cli_envvars() <= set(env.NAMES)


def test_readers_take_a_mapping_and_ignore_blank_values(tmp_path: Path) -> None:
    environ = {"ORCA_HOME": str(tmp_path), "ORCAMEM_ANTHROPIC_MODEL": "  ", "S3_BUCKET": "b"}
    assert env.default_db_path(environ) == tmp_path / "memory.db"
    assert env.anthropic_model(environ) == env.DEFAULT_ANTHROPIC_MODEL
    s3 = env.memory_bank_s3(environ)
    assert s3 is not None and (s3.source, s3.endpoint) == (
        "S3_BUCKET",
        "https://s3.us-east-1.amazonaws.com",
    )
    assert env.child_environ({"PYTHONPATH": "/src", "ORCA_HOME": "/h"}) == {"PYTHONPATH": "/src"}


def test_a_developers_variables_do_not_reach_a_test(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The autouse fixture's strip, on a shell that has every variable orcamem reads set."""
    import conftest

    for name in env.NAMES:
        monkeypatch.setenv(name, "from-the-developers-shell")
    monkeypatch.setenv("PYTHONPATH", "kept")
    conftest.strip_environment(monkeypatch, tmp_path)
    assert {n for n in env.NAMES if os.environ.get(n) == "from-the-developers-shell"} == set()
    assert os.environ["ORCA_HOME"] == str(tmp_path / "orca-home")  # the test's own home
    assert os.environ["PYTHONPATH"] == "kept"  # what the tests' own subprocesses import by
    for name in ("S3_BUCKET", "INTERNAL_S3_BUCKET", "AWS_ACCESS_KEY_ID", "ANTHROPIC_API_KEY"):
        assert name in env.NAMES


def test_a_child_environment_imports_this_orcamem_first() -> None:
    import orcamem

    here = str(Path(orcamem.__file__).resolve().parents[1])
    child = env.child_environ_importing({"PYTHONPATH": "/other", "ORCA_HOME": "/h"})
    assert child == {"PYTHONPATH": f"{here}{os.pathsep}/other", "ORCA_HOME": "/h"}
    assert env.child_environ_importing({})["PYTHONPATH"] == here

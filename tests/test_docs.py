"""Docs are a contract: their Python examples run, and every CLI command is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orcamem.interfaces.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


@pytest.mark.parametrize(
    ("path", "index"),
    [(p, i) for p in DOCS for i in range(len(python_blocks(p)))],
    ids=lambda value: value.name if isinstance(value, Path) else str(value),
)
def test_python_examples_run(
    path: Path, index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # an example creates every file it reads
    code = python_blocks(path)[index]
    exec(compile(code, f"{path.name}[{index}]", "exec"), {"__name__": "__docs__"})


def command_names() -> list[str]:
    import typer.main

    group = typer.main.get_command(app)
    names = []
    for name, command in group.commands.items():
        sub = getattr(command, "commands", None)
        names.extend(f"{name} {child}" for child in sub) if sub else names.append(name)
    return names


def test_every_command_is_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [name for name in command_names() if f"### `orcamem {name}`" not in text]
    assert not missing, f"document these in docs/cli.md: {missing}"


def test_readme_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```(?:bash|sh)\n(.*?)```", readme, re.S)
    assert first_block is not None
    assert [line for line in first_block.group(1).splitlines() if line.strip()] == [
        "scripts/up",
        "scripts/test",
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/test" in ci


PERFORMANCE = re.compile(r"\d\s?ms\b|turns/s|^\|.*\d\.\d{3}.*\d\.\d{3}.*\d\.\d{3}", re.M)
MEASURED = re.compile(r"[Mm]easured (?:on|before|while)[^.]*?20\d\d-\d\d.*?load", re.S)


def sections(path: Path) -> list[str]:
    """The page cut at its headings (code blocks kept whole)."""
    return re.split(r"^#{1,4} ", path.read_text(encoding="utf-8"), flags=re.M)


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.name)
def test_every_performance_number_says_when_at_what_load_and_how(path: Path) -> None:
    """A latency, a rate or a recall score is only worth quoting with the day, the machine's
    load and the command (or the admission that no shipped command reproduces it)."""
    if path.name == "conformance.md":
        return  # the seeds' own numbers; each row points at the page that measures them
    bare = [
        section.splitlines()[0]
        for section in sections(path)
        if PERFORMANCE.search(section)
        and not (
            MEASURED.search(section)
            and ("orcamem bench" in section or "not in the repository" in section)
        )
    ]
    assert not bare, f"{path.name}: say when, at what load and with which command: {bare}"

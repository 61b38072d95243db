"""``orcamem doctor`` (registered on a bare Typer app here; the ``orcamem`` command gets it
through ``capability_cli.register``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orcamem.capability.settings import load_settings
from orcamem.interfaces.cli import console
from orcamem.interfaces.cli.capability import register

runner = CliRunner()


@pytest.fixture(autouse=True)
def narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 40-column terminal: every path below is longer than that, so a line that Rich wrapped
    or a table cell that it cut would fail the whole-line assertions."""
    for stream in (console.out.console, console.err.console):  # rich's, made on first use
        monkeypatch.setattr(stream, "width", 40)


@pytest.fixture
def app() -> typer.Typer:
    application = typer.Typer()

    @application.callback()
    def root() -> None:
        """A group, like ``orcamem`` (one command alone would become the root)."""

    register(application)
    return application


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace whose path is far longer than the terminal is wide, with square brackets
    (Rich markup, were a path not printed as it is)."""
    folder = tmp_path / ("a-long-folder-name-" * 6) / ("the-[bold]workspace-" * 6)
    folder.mkdir(parents=True)
    return folder


def table_rows(output: str) -> dict[str, list[str]]:
    """The settings table's rows, key → [value, source], from the printed box."""
    rows = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 3:
            rows[cells[0]] = cells[1:]
    return rows


@pytest.fixture
def base(tmp_path: Path) -> Path:
    path = tmp_path / "app" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"memory": {"topK": 9}}), encoding="utf-8")
    return path


def test_register_adds_doctor(app: typer.Typer) -> None:
    assert [command.name for command in app.registered_commands] == ["doctor"]


def test_doctor_shows_origins_state_and_the_providers_own_notes(
    app: typer.Typer, ws: Path, base: Path
) -> None:
    (ws / "config.json").write_text(
        json.dumps({"defaults": {"memory": {"enabled": True, "newKey": 1}}}), encoding="utf-8"
    )
    result = runner.invoke(
        app, ["doctor", "--workspace", str(ws), "--instance-config", str(base), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    rows_json = {row["key"]: row for row in report["settings"]["fields"]}
    assert rows_json["enabled"]["badge"] == "Workspace override"
    assert rows_json["enabled"]["value"] is True
    assert rows_json["enabled"]["clear"] == f"orcamem doctor --clear enabled --workspace {ws}"
    assert rows_json["topK"]["badge"] == "Instance default" and rows_json["topK"]["value"] == 9
    assert report["settings"]["layers"]["workspace"]["ignored"] == ["newKey"]
    assert report["provider"]["state"] == "ready"
    assert any("lexical" in note for note in report["provider"]["notes"])
    assert not (ws / "memory").exists()  # the check created nothing

    text = runner.invoke(
        app, ["doctor", "--workspace", str(ws), "--instance-config", str(base)]
    ).output
    lines = text.splitlines()
    assert f"memory in {ws}: on" in lines
    assert "provider builtin-markdown: Ready" in lines
    rows = table_rows(text)
    assert rows["enabled"] == ["true", "Workspace override"]
    assert rows["topK"] == ["9", "Instance default"]
    assert f"clear the enabled override: {rows_json['enabled']['clear']}" in lines
    assert f"workspace layer {ws / 'config.json'}: unknown keys ignored: newKey" in lines


def test_doctor_reports_a_discarded_layer_and_unreadable_files(
    app: typer.Typer, ws: Path, base: Path
) -> None:
    (ws / "config.json").write_text(
        json.dumps({"defaults": {"memory": {"enabled": True, "topK": 99}}}), encoding="utf-8"
    )
    entries = ws / "memory" / "entries"
    entries.mkdir(parents=True)
    (entries / "bad.md").write_text("no frontmatter", encoding="utf-8")
    result = runner.invoke(app, ["doctor", "-w", str(ws), "--instance-config", str(base)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        f"workspace layer {ws / 'config.json'} discarded whole: "
        "topK=99: must be a whole number from 1 to 50"
    ) in lines
    # the whole layer went, so enabled fell through to the instance's default: off
    assert f"memory in {ws}: off (nothing is searched or saved)" in lines
    assert table_rows(result.output)["enabled"] == ["false", "Instance default"]
    said = " ".join(result.output.split())  # the reason may wrap at the terminal's width
    assert (
        f"unreadable memory file, skipped: {entries / 'bad.md'}: no frontmatter: the file must "
        "start with a '---' line"
    ) in said
    shown = json.loads(
        runner.invoke(
            app, ["doctor", "-w", str(ws), "--instance-config", str(base), "--json"]
        ).stdout
    )
    assert shown["files"]["unreadable_why"] == {
        str(entries / "bad.md"): "no frontmatter: the file must start with a '---' line"
    }


def test_doctor_clear_drops_the_override(app: typer.Typer, ws: Path, base: Path) -> None:
    (ws / "config.json").write_text(
        json.dumps({"defaults": {"memory": {"topK": 2, "enabled": True}}}), encoding="utf-8"
    )
    args = ["doctor", "-w", str(ws), "--instance-config", str(base)]
    result = runner.invoke(app, [*args, "--clear", "topK", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["cleared"] == ["topK"]
    rows = {row["key"]: row for row in report["settings"]["fields"]}
    assert rows["topK"]["value"] == 9 and rows["topK"]["badge"] == "Instance default"
    assert rows["enabled"]["badge"] == "Workspace override"  # only the named field was dropped
    assert load_settings(ws, instance_config=base).settings.top_k == 9
    again = runner.invoke(app, [*args, "--clear", "topK"])
    assert "no override to clear for topK" in again.output
    bad = runner.invoke(app, [*args, "--clear", "colour"])
    assert bad.exit_code == 2 and "unknown memory setting" in bad.output

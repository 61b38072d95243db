"""``orcamem doctor`` (registered on a bare Typer app here; the ``orcamem`` command gets it
through ``capability_cli.register``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orcamem.capability.settings import load_settings
from orcamem.interfaces.cli.capability import register

runner = CliRunner()


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
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


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
    rows = {row["key"]: row for row in report["settings"]["fields"]}
    assert rows["enabled"]["badge"] == "Workspace override" and rows["enabled"]["value"] is True
    assert rows["enabled"]["clear"].startswith("orcamem doctor --clear enabled")
    assert rows["topK"]["badge"] == "Instance default" and rows["topK"]["value"] == 9
    assert report["settings"]["layers"]["workspace"]["ignored"] == ["newKey"]
    assert report["provider"]["state"] == "ready"
    assert any("lexical" in note for note in report["provider"]["notes"])
    assert not (ws / "memory").exists()  # the check created nothing

    text = runner.invoke(
        app, ["doctor", "--workspace", str(ws), "--instance-config", str(base)]
    ).output
    assert "provider builtin-markdown: Ready" in text
    assert "Workspace override" in text and "Instance default" in text
    assert "unknown keys ignored: newKey" in text


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
    assert result.exit_code == 0
    assert "discarded whole" in result.output and "topK=99" in result.output
    assert "memory in" in result.output and ": off" in result.output  # fell through to off
    assert "unreadable memory file, skipped" in result.output and "bad.md" in result.output


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

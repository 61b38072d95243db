"""``orcamem doctor``: the memory capability's settings (and where each came from), the
selected provider's state by one real call, and its own notes; ``--clear KEY`` drops a
workspace override first (the panel's Clear action), ``--set KEY=VALUE`` writes one.

A thin skin over ``capability.capability``: resolve, call, format. Wire it with
``register(app)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...errors import OrcamemError
from .console import (
    err,
    fail,
    out,
    warn,
)

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["register"]


WorkspaceOption = Annotated[
    Path,
    typer.Option("--workspace", "-w", help="The workspace folder (default: the current folder)."),
]
InstanceOption = Annotated[
    Path | None,
    typer.Option(
        "--instance-config",
        help="The app's config.json (default $ORCA_HOME/config.json or ~/.orca/config.json).",
    ),
]


def _value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


_UNBOUNDED = 1_000_000


def _at_natural_width(table: Table) -> Table:
    """``table`` fixed at the width its cells need, whatever the terminal's: Rich otherwise
    shrinks even ``no_wrap`` columns to fit (cutting a long path or badge), so the output
    would depend on the terminal's width. A line wider than the terminal is left to it."""
    from rich.measure import Measurement

    console = out.console
    table.width = Measurement.get(console, console.options.update_width(_UNBOUNDED), table).maximum
    return table


def _assignment(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` → (key, value): JSON when it parses (``true``, ``8``), else the text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise fail(f"--set {text!r}: write KEY=VALUE, e.g. --set topK=8")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def doctor(
    workspace: WorkspaceOption = Path("."),
    instance_config: InstanceOption = None,
    clear: Annotated[
        list[str] | None,
        typer.Option(
            "--clear",
            metavar="KEY",
            help="Drop this workspace's override of KEY first (repeatable), e.g. --clear topK.",
        ),
    ] = None,
    assign: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Write this workspace override first (repeatable), e.g. --set topK=8; the "
            "value is JSON (true, 8, 30.5) or else a string (headroom-mcp).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Memory settings (with where each value came from) and the provider's state and notes."""
    from rich.markup import escape
    from rich.table import Table

    from ...capability import doctor_report
    from ...capability.settings import clear_workspace_override, set_workspace_override

    changes = [_assignment(text) for text in assign or []]
    try:
        for key, value in changes:
            set_workspace_override(workspace, key, value)
            err.print(f"set {key}={json.dumps(value)} (applies to sessions started afterwards)")
        cleared = [key for key in clear or [] if clear_workspace_override(workspace, key)]
        report = doctor_report(workspace, instance_config=instance_config)
    except OrcamemError as exc:
        raise fail(exc) from None
    report["cleared"] = cleared
    for key in clear or []:
        what = "cleared the override of" if key in cleared else "no override to clear for"
        err.print(f"{what} {key} (applies to sessions started afterwards)", highlight=False)
    if as_json:
        out.print_json(json.dumps(report, ensure_ascii=False, default=str))
        return
    state = "on" if report["enabled"] else "off (nothing is searched or saved)"
    out.print(f"memory in {report['workspace']}: {state}", markup=False)
    table = Table()
    for title in ("setting", "value", "source"):
        table.add_column(title, no_wrap=True)
    for row in report["settings"]["fields"]:
        table.add_row(row["key"], _value(row["value"]), row["badge"])
    out.print(_at_natural_width(table))
    for row in report["settings"]["fields"]:
        if row["clear"]:
            out.print(f"clear the {row['key']} override: {row['clear']}", markup=False)
    for name, layer in report["settings"]["layers"].items():
        for problem in layer["problems"]:
            err.print(
                f"[yellow]{name} layer {escape(str(layer['path']))} discarded whole:[/yellow] "
                + escape(str(problem)),
                highlight=False,
            )
        if layer["ignored"]:
            out.print(
                f"{name} layer {layer['path']}: unknown keys ignored: "
                + ", ".join(layer["ignored"]),
                markup=False,
            )
    provider = report["provider"]
    out.print(f"provider {provider['provider']}: {provider['label']}", markup=False)
    out.print(f"  {provider['detail']}", markup=False)
    if provider["action"]:
        out.print(f"  what to do: {provider['action']}", markup=False)
    for note in provider["notes"]:
        out.print(f"  - {note}", markup=False)
    files = report.get("files")
    if files:
        out.print(
            f"files: {files['entries']} hot, {files['archived']} archived in {files['folder']}"
            + ("" if files["exists"] else " (created on the first save)"),
            markup=False,
        )
        why = files.get("unreadable_why", {})
        for path in files["unreadable"]:
            reason = why.get(path)
            warn(f"{path}: {reason}" if reason else str(path), "unreadable memory file, skipped")


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the ``orcamem`` command."""
    app.command("doctor")(doctor)

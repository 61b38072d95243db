"""The memory capability's settings: two JSON layers over built-in defaults.

- **Instance-wide base** — the app's ``config.json`` (``$ORCA_HOME/config.json``), under
  ``memory``.
- **Per workspace** — ``<workspace>/config.json``, under ``defaults.memory``.

A workspace value wins over the instance value, field by field; what neither sets falls through
to the defaults (:data:`DEFAULTS`). A layer with a bad value — a wrong type, an unknown provider
name, a number out of range, a file that is not JSON — is discarded whole and memory falls
through to the layer below, ultimately to off. An unknown key is ignored and the layer still
works. Settings are read once, when a session starts (:func:`load_settings`); each field reports
where its value came from, and :func:`clear_workspace_override` drops a workspace override.

>>> import json, tempfile, pathlib
>>> ws = pathlib.Path(tempfile.mkdtemp())
>>> _ = (ws / "config.json").write_text(json.dumps({"defaults": {"memory": {"enabled": True}}}))
>>> resolved = load_settings(ws, instance_config=ws / "no-such.json")
>>> resolved.settings.enabled, resolved.origin("enabled"), resolved.badge("topK")
(True, 'workspace', 'Instance default')
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .._kernel.env import instance_config_path
from .._kernel.files import remove_stale_temps, write_atomic
from ..errors import InvalidInputError, SettingsFileError

__all__ = [
    "DEFAULTS",
    "FIELDS",
    "PROVIDERS",
    "MemorySettings",
    "ResolvedSettings",
    "SettingsFileError",
    "clear_workspace_override",
    "load_settings",
    "set_workspace_override",
    "validate_layer",
    "workspace_config_path",
]

PROVIDERS = ("builtin-markdown", "headroom-mcp", "orcamem-engine")
"""The provider names ``provider`` accepts."""

Origin = Literal["workspace", "instance", "default"]


@dataclass(frozen=True)
class MemorySettings:
    """The memory capability's settings for one session (JSON names in the docs' table)."""

    enabled: bool = False
    """``enabled`` — the master switch; nothing else has any effect while it is off."""
    provider: str = "builtin-markdown"
    """``provider`` — ``builtin-markdown``, ``headroom-mcp`` or ``orcamem-engine`` (the engine,
    in the host's process: the host passes it, ``Capability(providers=...)``)."""
    top_k: int = 5
    """``topK`` — how many memories a search may return, 1–50."""
    auto_load: bool = True
    """``autoLoad`` — search memory before each turn and splice the results."""
    auto_save: bool = True
    """``autoSave`` — mine finished turns for durable facts."""
    decay_half_life_days: float = 60
    """``decayHalfLifeDays`` — recency weighting for providers with decay, 1–3650."""
    include_archived: bool = False
    """``includeArchived`` — whether searches reach into cold storage."""


DEFAULTS = MemorySettings()

FIELDS: dict[str, str] = {
    "enabled": "enabled",
    "provider": "provider",
    "topK": "top_k",
    "autoLoad": "auto_load",
    "autoSave": "auto_save",
    "decayHalfLifeDays": "decay_half_life_days",
    "includeArchived": "include_archived",
}
"""Config key → ``MemorySettings`` attribute."""


def _bad(key: str, value: Any, rule: str) -> str:
    return f"{key}={json.dumps(value)}: {rule}"


def validate_layer(layer: Any) -> tuple[dict[str, Any], list[str], list[str]]:
    """Check one layer's ``memory`` object.

    Returns:
        ``(values, problems, ignored)``: the known keys it sets (config names), what is wrong
        with it (non-empty: the whole layer is discarded), and the unknown keys it carries.
    """
    if not isinstance(layer, dict):
        return {}, [f"expected an object, got {type(layer).__name__}"], []
    values: dict[str, Any] = {}
    problems: list[str] = []
    ignored = sorted(key for key in layer if key not in FIELDS)
    for key, value in layer.items():
        if key not in FIELDS:
            continue
        if key in ("enabled", "autoLoad", "autoSave", "includeArchived"):
            if not isinstance(value, bool):
                problems.append(_bad(key, value, "must be true or false"))
                continue
        elif key == "provider":
            if not isinstance(value, str) or value not in PROVIDERS:
                problems.append(_bad(key, value, f"must be one of {', '.join(PROVIDERS)}"))
                continue
        elif key == "topK":
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 50:
                problems.append(_bad(key, value, "must be a whole number from 1 to 50"))
                continue
        elif key == "decayHalfLifeDays" and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 1 <= value <= 3650
        ):
            problems.append(_bad(key, value, "must be a number of days from 1 to 3650"))
            continue
        values[key] = value
    return values, problems, ignored


@dataclass(frozen=True)
class LayerReport:
    """What was found in one layer's file."""

    name: Literal["workspace", "instance"]
    path: Path
    present: bool = False
    """The file exists and holds this layer's object."""
    used: bool = False
    """Its values take part (present, and not discarded)."""
    problems: tuple[str, ...] = ()
    """Why it was discarded (empty: it was not)."""
    ignored: tuple[str, ...] = ()
    """Unknown keys, ignored."""
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResolvedSettings:
    """The settings a session runs with, where each field came from, and what was rejected."""

    settings: MemorySettings
    origins: Mapping[str, Origin]
    """Config key → ``workspace``, ``instance`` or ``default``."""
    workspace: LayerReport
    instance: LayerReport

    def origin(self, key: str) -> Origin:
        return self.origins[key]

    def badge(self, key: str) -> str:
        """``Workspace override`` or ``Instance default`` (the instance layer or, where it is
        silent, the built-in default)."""
        return "Workspace override" if self.origins[key] == "workspace" else "Instance default"

    def value(self, key: str) -> Any:
        return getattr(self.settings, FIELDS[key])

    def fields(self) -> list[dict[str, Any]]:
        """One row per setting: key, value, origin, badge, and the clear action if any."""
        rows = []
        for key in FIELDS:
            rows.append(
                {
                    "key": key,
                    "value": self.value(key),
                    "origin": self.origins[key],
                    "badge": self.badge(key),
                    "clear": (
                        f"orcamem doctor --clear {key} --workspace {self.workspace.path.parent}"
                        if self.origins[key] == "workspace"
                        else None
                    ),
                }
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        def layer(report: LayerReport) -> dict[str, Any]:
            return {
                "path": str(report.path),
                "present": report.present,
                "used": report.used,
                "problems": list(report.problems),
                "ignored": list(report.ignored),
            }

        return {
            "fields": self.fields(),
            "layers": {"workspace": layer(self.workspace), "instance": layer(self.instance)},
        }


def workspace_config_path(workspace: str | Path) -> Path:
    return Path(workspace) / "config.json"


def _read_json(path: Path) -> tuple[bool, Any, str | None]:
    """``(exists, data, problem)``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False, None, None
    except (OSError, UnicodeDecodeError) as exc:
        return True, None, f"cannot read the file: {exc}"
    try:
        return True, json.loads(text), None
    except ValueError as exc:
        return True, None, f"not JSON: {exc}"


def _layer(name: Literal["workspace", "instance"], path: Path) -> LayerReport:
    exists, data, problem = _read_json(path)
    if not exists:
        return LayerReport(name, path)
    if problem:
        return LayerReport(name, path, present=True, problems=(problem,))
    keys = ("defaults", "memory") if name == "workspace" else ("memory",)
    node = data
    for depth, key in enumerate(keys):
        if not isinstance(node, dict):
            where = ".".join(keys[:depth]) or "the file"
            return LayerReport(name, path, present=True, problems=(f"{where} is not an object",))
        if key not in node:
            return LayerReport(name, path)
        node = node[key]
    values, problems, ignored = validate_layer(node)
    if problems:
        return LayerReport(
            name, path, present=True, problems=tuple(problems), ignored=tuple(ignored)
        )
    return LayerReport(name, path, present=True, used=True, ignored=tuple(ignored), values=values)


def load_settings(
    workspace: str | Path, *, instance_config: str | Path | None = None
) -> ResolvedSettings:
    """Resolve the settings once, at session start.

    Args:
        workspace: the workspace folder (its ``config.json``'s ``defaults.memory``).
        instance_config: the app's ``config.json`` (its ``memory``); default
            ``$ORCA_HOME/config.json``.
    """
    instance_path = Path(instance_config) if instance_config else instance_config_path()
    work = _layer("workspace", workspace_config_path(workspace))
    base = _layer("instance", instance_path)
    changes: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    for key, attribute in FIELDS.items():
        if work.used and key in work.values:
            changes[attribute], origins[key] = work.values[key], "workspace"
        elif base.used and key in base.values:
            changes[attribute], origins[key] = base.values[key], "instance"
        else:
            origins[key] = "default"
    return ResolvedSettings(replace(DEFAULTS, **changes), origins, work, base)


def _edit_workspace(workspace: str | Path, change: Any) -> None:
    path = workspace_config_path(workspace)
    exists, data, problem = _read_json(path)
    if problem:
        raise SettingsFileError(f"{path}: {problem}; fix or remove the file by hand first")
    data = data if exists else {}
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path} is not a JSON object; fix it by hand first")
    defaults = data.setdefault("defaults", {})
    if not isinstance(defaults, dict):
        raise SettingsFileError(f"{path}: defaults is not an object; fix it by hand first")
    memory = defaults.setdefault("memory", {})
    if not isinstance(memory, dict):
        raise SettingsFileError(f"{path}: defaults.memory is not an object; fix it by hand first")
    change(memory)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    remove_stale_temps(path.parent, of=path.name)  # no lock: only copies older than an hour
    write_atomic(path, text.encode("utf-8"), mode=0o666)  # a workspace file: the umask decides


def _known(key: str) -> None:
    if key not in FIELDS:
        raise InvalidInputError(f"unknown memory setting {key!r}: use one of {', '.join(FIELDS)}")


def clear_workspace_override(workspace: str | Path, key: str) -> bool:
    """Drop ``defaults.memory.<key>`` from the workspace's ``config.json`` (the field reverts to
    the instance default). Everything else in the file is kept. Returns whether there was one.

    Raises:
        InvalidInputError: ``key`` is not a memory setting.
        SettingsFileError: the file is not JSON or not the expected shape.
        StoreError: the file could not be written.
    """
    _known(key)
    if not workspace_config_path(workspace).exists():
        return False
    removed: list[bool] = []
    _edit_workspace(workspace, lambda memory: removed.append(memory.pop(key, _MISSING)))
    return removed[0] is not _MISSING


_MISSING: Any = object()


def set_workspace_override(workspace: str | Path, key: str, value: Any) -> None:
    """Set ``defaults.memory.<key>`` in the workspace's ``config.json`` (validated first: a value
    that would discard the layer is refused).

    Raises:
        InvalidInputError: unknown key or bad value.
        SettingsFileError: the file is not JSON or not the expected shape.
        StoreError: the file could not be written.
    """
    _known(key)
    _, problems, _ = validate_layer({key: value})
    if problems:
        raise InvalidInputError(problems[0])
    _edit_workspace(workspace, lambda memory: memory.__setitem__(key, value))

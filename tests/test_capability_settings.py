"""Memory settings: two JSON layers over the documented defaults, read once per session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orcamem import InvalidInputError
from orcamem._kernel.env import headroom_python, instance_config_path
from orcamem.capability.capability import Capability
from orcamem.capability.settings import (
    DEFAULTS,
    FIELDS,
    SettingsFileError,
    clear_workspace_override,
    load_settings,
    set_workspace_override,
)


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "app" / "config.json"


def workspace_layer(ws: Path, memory: Any) -> None:
    write_json(ws / "config.json", {"defaults": {"memory": memory}})


def instance_layer(base: Path, memory: Any) -> None:
    write_json(base, {"memory": memory})


def test_defaults_match_the_table(ws: Path, base: Path) -> None:
    resolved = load_settings(ws, instance_config=base)
    settings = resolved.settings
    assert settings == DEFAULTS
    assert (
        settings.enabled,
        settings.provider,
        settings.top_k,
        settings.auto_load,
        settings.auto_save,
        settings.decay_half_life_days,
        settings.include_archived,
    ) == (False, "builtin-markdown", 5, True, True, 60, False)
    assert set(resolved.origins.values()) == {"default"}
    assert list(FIELDS) == [
        "enabled",
        "provider",
        "topK",
        "autoLoad",
        "autoSave",
        "decayHalfLifeDays",
        "includeArchived",
    ]


def test_layers_live_where_the_spec_says(ws: Path, base: Path) -> None:
    instance_layer(base, {"topK": 7})
    workspace_layer(ws, {"enabled": True})
    resolved = load_settings(ws, instance_config=base)
    assert resolved.settings.enabled and resolved.settings.top_k == 7
    assert resolved.workspace.path == ws / "config.json"
    assert resolved.instance.path == base


def test_the_instance_layer_defaults_to_orca_home(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "home"))
    assert instance_config_path() == tmp_path / "home" / "config.json"
    instance_layer(tmp_path / "home" / "config.json", {"enabled": True})
    assert load_settings(ws).settings.enabled


def test_workspace_wins_field_by_field_and_the_rest_falls_through(ws: Path, base: Path) -> None:
    instance_layer(base, {"enabled": True, "topK": 9, "autoSave": False})
    workspace_layer(ws, {"topK": 3})
    resolved = load_settings(ws, instance_config=base)
    assert resolved.settings.top_k == 3
    assert resolved.settings.enabled is True and resolved.settings.auto_save is False
    assert resolved.settings.auto_load is True  # neither layer: the default
    assert resolved.origin("topK") == "workspace"
    assert resolved.origin("enabled") == "instance"
    assert resolved.origin("autoLoad") == "default"


BAD_VALUES = [
    ("enabled", "yes"),
    ("enabled", 1),
    ("provider", "pinecone"),
    ("provider", 3),
    ("topK", 0),
    ("topK", 51),
    ("topK", 5.5),
    ("topK", True),
    ("topK", None),
    ("decayHalfLifeDays", 0.5),
    ("decayHalfLifeDays", 3651),
    ("decayHalfLifeDays", "60"),
    ("autoLoad", "on"),
    ("includeArchived", 0),
]


@pytest.mark.parametrize(("key", "value"), BAD_VALUES)
def test_a_bad_workspace_value_discards_the_whole_layer(
    ws: Path, base: Path, key: str, value: Any
) -> None:
    instance_layer(base, {"enabled": True, "topK": 8})
    workspace_layer(ws, {"includeArchived": True, "autoSave": False, key: value})
    resolved = load_settings(ws, instance_config=base)
    # nothing of the workspace layer is trusted, not even its good fields
    assert resolved.settings.include_archived is False and resolved.settings.auto_save is True
    assert resolved.settings.enabled is True and resolved.settings.top_k == 8
    assert not resolved.workspace.used and resolved.workspace.problems
    assert key in resolved.workspace.problems[0]
    assert set(resolved.origins.values()) <= {"instance", "default"}


def test_bad_layers_fall_through_ultimately_to_off(ws: Path, base: Path) -> None:
    instance_layer(base, {"enabled": True, "provider": "nope"})
    workspace_layer(ws, {"enabled": True, "topK": 500})
    resolved = load_settings(ws, instance_config=base)
    assert resolved.settings == DEFAULTS and resolved.settings.enabled is False
    assert resolved.instance.problems and resolved.workspace.problems


@pytest.mark.parametrize(
    "text",
    ["{not json", '["a list"]', '{"defaults": 3}', '{"defaults": {"memory": [1]}}'],
)
def test_a_corrupt_workspace_file_discards_its_layer(ws: Path, base: Path, text: str) -> None:
    instance_layer(base, {"enabled": True})
    write_json(ws / "config.json", text)
    resolved = load_settings(ws, instance_config=base)
    assert resolved.settings.enabled is True and resolved.origin("enabled") == "instance"
    assert resolved.workspace.problems


def test_unknown_keys_are_ignored_and_the_layer_still_works(ws: Path, base: Path) -> None:
    workspace_layer(ws, {"enabled": True, "topK": 4, "futureKnob": {"x": 1}, "embedder": "big"})
    resolved = load_settings(ws, instance_config=base)
    assert resolved.settings.enabled is True and resolved.settings.top_k == 4
    assert resolved.workspace.used and resolved.workspace.ignored == ("embedder", "futureKnob")
    assert not resolved.workspace.problems


def test_ranges_accept_their_ends(ws: Path, base: Path) -> None:
    for top_k, days in ((1, 1), (50, 3650), (5, 0.5 + 0.5)):
        workspace_layer(ws, {"topK": top_k, "decayHalfLifeDays": days})
        settings = load_settings(ws, instance_config=base).settings
        assert (settings.top_k, settings.decay_half_life_days) == (top_k, days)


def test_each_field_has_a_badge(ws: Path, base: Path) -> None:
    instance_layer(base, {"topK": 9})
    workspace_layer(ws, {"enabled": True})
    resolved = load_settings(ws, instance_config=base)
    badges = {row["key"]: row["badge"] for row in resolved.fields()}
    assert badges["enabled"] == "Workspace override"
    assert badges["topK"] == "Instance default"
    assert badges["provider"] == "Instance default"
    assert {row["key"] for row in resolved.fields() if row["clear"]} == {"enabled"}


def test_clear_drops_the_override_and_keeps_the_rest_of_the_file(ws: Path, base: Path) -> None:
    instance_layer(base, {"topK": 9})
    write_json(
        ws / "config.json",
        {"name": "mine", "defaults": {"model": "x", "memory": {"enabled": True, "topK": 2}}},
    )
    assert clear_workspace_override(ws, "topK") is True
    resolved = load_settings(ws, instance_config=base)
    assert resolved.settings.top_k == 9 and resolved.badge("topK") == "Instance default"
    data = json.loads((ws / "config.json").read_text(encoding="utf-8"))
    assert data == {"name": "mine", "defaults": {"model": "x", "memory": {"enabled": True}}}
    assert clear_workspace_override(ws, "topK") is False
    with pytest.raises(InvalidInputError):
        clear_workspace_override(ws, "nope")


def test_clear_refuses_to_rewrite_a_corrupt_file(ws: Path) -> None:
    write_json(ws / "config.json", "{broken")
    with pytest.raises(SettingsFileError):
        clear_workspace_override(ws, "enabled")
    assert (ws / "config.json").read_text(encoding="utf-8") == "{broken"


def test_set_validates_before_writing(ws: Path, base: Path) -> None:
    set_workspace_override(ws, "topK", 12)
    assert load_settings(ws, instance_config=base).settings.top_k == 12
    with pytest.raises(InvalidInputError):
        set_workspace_override(ws, "topK", 51)
    assert load_settings(ws, instance_config=base).settings.top_k == 12


def test_two_workspaces_are_independent(tmp_path: Path, base: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    set_workspace_override(one, "enabled", True)
    set_workspace_override(two, "topK", 3)
    assert load_settings(one, instance_config=base).settings.enabled is True
    assert load_settings(one, instance_config=base).settings.top_k == 5
    assert load_settings(two, instance_config=base).settings.enabled is False
    assert load_settings(two, instance_config=base).settings.top_k == 3


def test_settings_are_read_once_when_a_session_starts(ws: Path, base: Path) -> None:
    set_workspace_override(ws, "enabled", True)
    with Capability(ws, instance_config=base) as session:
        set_workspace_override(ws, "enabled", False)
        set_workspace_override(ws, "topK", 2)
        assert session.enabled is True and session.settings.top_k == 5
    with Capability(ws, instance_config=base) as later:
        assert later.enabled is False and later.settings.top_k == 2


def test_headroom_python_location(tmp_path: Path) -> None:
    assert str(headroom_python({})).endswith(".local/share/uv/tools/headroom-ai/bin/python")
    custom = tmp_path / "hr" / "python3"
    assert headroom_python({"ORCAMEM_HEADROOM_PYTHON": str(custom)}) == custom

"""The local-memory setting: ``auto_memory`` from the user's ``config.toml`` and, for a trusted
project, the project's ``.orca/config.toml`` (seed 000). Explicit facts ignore it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._kernel.env import user_config_file
from .._kernel.files import read_optional
from .identity import ProjectIdentity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["Setting", "read_setting"]


@dataclass(frozen=True)
class Setting:
    """Whether automatic memory is on for a session, and why."""

    enabled: bool
    source: str
    """``default``, or the ``config.toml`` that turned it off."""
    problems: tuple[str, ...] = ()


def _read_toml(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    data, problem = read_optional(path)
    if data is None:
        return None, problem
    try:
        return tomllib.loads(data.decode("utf-8")), None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return None, f"{path} is not valid TOML ({exc})"


def read_setting(identity: ProjectIdentity, *, trust_project: bool | None = None) -> Setting:
    """``auto_memory`` from the user's ``config.toml`` and a trusted project's
    ``<root>/.orca/config.toml``; either one set to ``false`` turns it off. On by default.

    A project config counts only when the project is trusted: ``trust_project=True``, or its
    root listed in the user config's ``trusted_projects``. A config file that cannot be read
    or holds a non-boolean ``auto_memory`` turns automatic memory off (and says why): a
    broken file must not silently re-enable capture that the user turned off.
    """
    problems: list[str] = []
    user_path = user_config_file()
    user, problem = _read_toml(user_path)
    if problem:
        return Setting(False, str(user_path), (problem + "; automatic memory is off",))
    user = user or {}
    trusted = trust_project
    if trusted is None:
        listed = user.get("trusted_projects", [])
        roots = {str(Path(p).expanduser().resolve()) for p in listed if isinstance(p, str)}
        trusted = str(identity.root) in roots
    checks = [(user_path, user)]
    project_path = identity.root / ".orca" / "config.toml"
    project, problem = _read_toml(project_path) if trusted else (None, None)
    if problem:
        return Setting(False, str(project_path), (problem + "; automatic memory is off",))
    if project is not None:
        checks.append((project_path, project))
    elif not trusted and project_path.is_file():
        problems.append(f"{project_path} is ignored: the project is not trusted")
    for path, values in checks:
        if "auto_memory" not in values:
            continue
        value = values["auto_memory"]
        if not isinstance(value, bool):
            return Setting(
                False, str(path), (f"{path}: auto_memory must be true or false, not {value!r}",)
            )
        if value is False:
            return Setting(False, str(path), tuple(problems))
    return Setting(True, "default", tuple(problems))

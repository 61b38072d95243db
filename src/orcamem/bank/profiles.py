"""Profiles: the agent configurations a Memory Bank serves, and the spaces that back them.

A profile is ``{"name": "researcher", "tools": ["@default", "@memory"]}``. Seed 002: "Selecting
@memory (or naming any memory_* tool individually) both registers the tools and enables prompt
injection": ``@memory`` registers all four tools, a ``memory_*`` name registers that tool (a
tool list is a selection: a profile that names only ``memory_recall`` can recall, not save or
delete); either opts the profile in to injection.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._kernel.model import shown
from .._kernel.names import PROFILE
from ..errors import InvalidInputError

__all__ = [
    "MEMORY_CAPABILITY",
    "MEMORY_TOOLS",
    "Profile",
    "profiles_arg",
    "read_profiles_file",
    "space_for",
    "validate_profile",
]


MEMORY_CAPABILITY = "@memory"


MEMORY_TOOLS = ("memory_save", "memory_recall", "memory_list", "memory_delete")


def validate_profile(name: Any) -> str:
    """``name`` if it is a valid profile name: 1-64 of ``A-Z a-z 0-9 . _ -``, not ``.``/``..``."""
    return PROFILE.validate(name)


def space_for(profile: str) -> str:
    """The space that backs a profile (what API keys are scoped to): ``profile:<name>``."""
    return f"profile:{validate_profile(profile)}"


@dataclass(frozen=True)
class Profile:
    """An agent profile as the bank sees it: its name and the tools it selects."""

    name: str
    tools: tuple[str, ...] = ()

    @property
    def memory_tools(self) -> tuple[str, ...]:
        """The ``memory_*`` tools it registers: all four with ``@memory``, else those it names."""
        if MEMORY_CAPABILITY in self.tools:
            return MEMORY_TOOLS
        return tuple(tool for tool in MEMORY_TOOLS if tool in self.tools)

    @property
    def injects(self) -> bool:
        """Opted in: selects ``@memory`` or names any ``memory_*`` tool."""
        return bool(self.memory_tools)


def profiles_arg(
    profiles: Mapping[str, Iterable[str]] | Iterable[Profile | Mapping[str, Any]] | None,
) -> dict[str, Profile]:
    """Profiles by name, each checked: a valid name, ``tools`` a list of strings, no name twice
    (a second entry silently replacing the first could switch injection off).

    Raises:
        InvalidInputError: saying which entry and what to write instead.
    """
    out: dict[str, Profile] = {}
    if profiles is None:
        return out
    if isinstance(profiles, Mapping):
        items: list[Any] = [{"name": name, "tools": tools} for name, tools in profiles.items()]
    else:
        items = list(profiles)
    for at, item in enumerate(items):
        if isinstance(item, Profile):
            item = {"name": item.name, "tools": item.tools}
        if not isinstance(item, Mapping):
            raise InvalidInputError(
                f'profile #{at + 1}: give {{"name": ..., "tools": [...]}}, not {type(item).__name__}'
            )
        if "name" not in item:
            raise InvalidInputError(f'profile #{at + 1} has no "name": give each profile one')
        name = validate_profile(item["name"])
        tools = item.get("tools", [])
        if not isinstance(tools, (list, tuple)) or not all(isinstance(t, str) for t in tools):
            raise InvalidInputError(
                f"profile {name!r}: tools must be a list of tool names "
                f'(e.g. ["@memory"]), not {shown(tools)}'
            )
        if name in out:
            raise InvalidInputError(
                f"profile {name!r} is given twice: keep one entry and merge its tools"
            )
        out[name] = Profile(name, tuple(tools))
    return out


def read_profiles_file(path: str | Path) -> list[Profile]:
    """Profiles from a JSON file: a list of ``{"name": ..., "tools": [...]}`` objects."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"cannot read the profiles file {file}: {exc} (it must be a JSON list of "
            '{"name": ..., "tools": [...]} objects)'
        ) from None
    if not isinstance(data, list) or not all(isinstance(p, dict) for p in data):
        raise InvalidInputError(
            f'{file} must be a JSON list of {{"name": ..., "tools": [...]}} objects'
        )
    try:
        return list(profiles_arg(data).values())
    except InvalidInputError as exc:
        raise InvalidInputError(f"{file}: {exc}") from None

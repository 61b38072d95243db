"""One table of name rules: spaces, profiles, automation ids, memory ids, key ids, object keys.

Validators (``validate_space``, ``validate_profile``, …) and the HTTP and MCP schemas
(``pattern=SPACE.pattern``) read the same :class:`NameRule`, so a name the API accepts is a name
the library accepts, and the error message always states the rule.

>>> SPACE.validate("user_alice")
'user_alice'
>>> SPACE.pattern
'^[A-Za-z0-9._:@-]{1,128}$'
>>> PROFILE.ok("..")
False
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError, InvalidSpaceError

__all__ = [
    "AUTOMATION_ID",
    "KEY_ID",
    "MEMORY_ID",
    "META_KEY",
    "OBJECT_KEY",
    "PROFILE",
    "RULES",
    "SPACE",
    "NameRule",
]


@dataclass(frozen=True)
class NameRule:
    """A kind of name: the characters and length it allows, and how to say so."""

    what: str
    """What the name names, for messages: ``space name``, ``profile name``, …"""
    regex: str
    """The whole name, without anchors (``[A-Za-z0-9._:@-]{1,128}``)."""
    rule: str
    """The rule in words, for messages (``1-128 characters from A-Z a-z 0-9 . _ : @ -``)."""
    example: str
    path_segments: bool = False
    """``/`` separates segments, none empty, ``.`` or ``..``, no leading ``/`` (object keys)."""
    error: type[InvalidInputError] = InvalidInputError
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", re.compile(self.regex))

    @property
    def pattern(self) -> str:
        """The anchored regular expression for JSON Schema / FastAPI ``pattern=``."""
        return f"^{self.regex}$"

    def ok(self, value: Any) -> bool:
        """True if ``value`` is a valid name of this kind (``.`` and ``..`` never are)."""
        if not isinstance(value, str) or not self._compiled.fullmatch(value):
            return False
        if self.path_segments:
            return not value.startswith("/") and all(
                part not in ("", ".", "..") for part in value.split("/")
            )
        return value not in (".", "..")

    def validate(self, value: Any) -> str:
        """``value`` if :meth:`ok`, else this rule's error with the value and the rule."""
        if not self.ok(value):
            raise self.error(
                f"invalid {self.what} {repr(value)[:70]}: use {self.rule}, e.g. {self.example!r}"
            )
        return value


SPACE = NameRule(
    "space name",
    r"[A-Za-z0-9._:@-]{1,128}",
    "1-128 characters from A-Z a-z 0-9 . _ : @ - (no slashes, spaces, control characters, "
    "and not '.' or '..')",
    "user_alice",
    error=InvalidSpaceError,
)
PROFILE = NameRule(
    "profile name", r"[A-Za-z0-9._-]{1,64}", "1-64 characters from A-Z a-z 0-9 . _ -", "researcher"
)
AUTOMATION_ID = NameRule(
    "automation id",
    r"[A-Za-z0-9._:@-]{1,128}",
    "1-128 characters from A-Z a-z 0-9 . _ : @ - (the schedule's own id)",
    "auto-7f3a",
)
MEMORY_ID = NameRule("memory id", r"mem-[0-9a-f]{8}", "mem- and 8 hex digits", "mem-1a2b3c4d")
KEY_ID = NameRule("API key id", r"key-[0-9a-f]{8}", "key- and 8 hex digits", "key-1a2b3c4d")
META_KEY = NameRule(
    "metadata key",
    r"[A-Za-z0-9_.-]{1,64}",
    "1-64 characters from A-Z a-z 0-9 _ . - (a top-level key of an episode's metadata)",
    "source",
)
OBJECT_KEY = NameRule(
    "object key",
    r"[A-Za-z0-9._\-/@:]{1,1024}",
    "1-1024 characters of A-Z a-z 0-9 . _ - / @ : with no empty, '.' or '..' path segment",
    "memory/researcher/mem-1a2b3c4d.json",
    path_segments=True,
)

RULES = {
    "space": SPACE,
    "profile": PROFILE,
    "automation_id": AUTOMATION_ID,
    "memory_id": MEMORY_ID,
    "key_id": KEY_ID,
    "meta_key": META_KEY,
    "object_key": OBJECT_KEY,
}
"""Every name rule by its short name (the docs' table is generated from this)."""

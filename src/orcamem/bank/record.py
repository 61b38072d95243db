"""The stored form of one bank memory: ``memory/<profileName>/<memoryId>.json``, camelCase JSON,
checked field by field on the way in (an object that is not a valid memory is skipped)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from typing import Any

from .._kernel.clock import format_time, parse_time
from .._kernel.model import is_memory_id
from .._kernel.names import MEMORY_ID, PROFILE
from ..errors import InvalidInputError
from ..recall import bank as scoring
from ..recall import signals

__all__ = [
    "KEY_RE",
    "PREFIX",
    "SCHEMA_VERSION",
    "SUMMARY_CHARS",
    "BankMemory",
    "is_count",
    "is_unit",
    "object_key",
    "preview",
]


SUMMARY_CHARS = 50


SCHEMA_VERSION = 1


PREFIX = "memory/"


KEY_RE = re.compile(rf"memory/({PROFILE.regex})/({MEMORY_ID.regex})\.json")


def object_key(profile: str, memory_id: str) -> str:
    """Where a memory persists: ``memory/<profile>/<id>.json``."""
    return f"{PREFIX}{profile}/{memory_id}.json"


def preview(text: str) -> str:
    return " ".join(text.split())[:SUMMARY_CHARS]


@dataclass(frozen=True)
class BankMemory:
    """One memory of a profile (the spec's ``AgentMemory``; JSON keys are camelCase)."""

    id: str
    profile_name: str
    raw_input: str
    """What the agent saved, verbatim (audit trail), at most 4 KiB."""
    processed_content: str
    """The retrieval-friendly text (the processor's, or the caller's ``content``)."""
    summary: str
    """At most 50 characters, for lists."""
    category: str
    source: str
    """``explicit`` for every v1 save (``inferred`` is reserved)."""
    confidence: float
    created_at: str
    last_accessed_at: str | None
    access_count: int
    staleness_score: float
    is_active: bool = True
    version: int = SCHEMA_VERSION

    _FIELDS = (
        ("id", "id"),
        ("profile_name", "profileName"),
        ("raw_input", "rawInput"),
        ("processed_content", "processedContent"),
        ("summary", "summary"),
        ("category", "category"),
        ("source", "source"),
        ("confidence", "confidence"),
        ("created_at", "createdAt"),
        ("last_accessed_at", "lastAccessedAt"),
        ("access_count", "accessCount"),
        ("staleness_score", "stalenessScore"),
        ("is_active", "isActive"),
        ("version", "version"),
    )

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, attr) for attr, name in self._FIELDS}

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True).encode("utf-8")

    @classmethod
    def decode(cls, body: bytes, key: str | None = None) -> BankMemory:
        """Parse and check a stored object.

        Raises:
            InvalidInputError: not JSON, a missing or mistyped field, or an id or profile that does
                not match ``key``.
        """
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidInputError(f"not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise InvalidInputError("not a JSON object")
        values: dict[str, Any] = {}
        for attr, name in cls._FIELDS:
            if name not in data:
                if name in ("isActive", "version", "stalenessScore", "lastAccessedAt"):
                    continue
                raise InvalidInputError(f"missing {name!r}")
            values[attr] = data[name]
        checks: list[tuple[str, bool]] = [
            ("id", isinstance(values["id"], str) and is_memory_id(values["id"])),
            (
                "profileName",
                isinstance(values["profile_name"], str) and PROFILE.ok(values["profile_name"]),
            ),
            *(
                (name, isinstance(values[attr], str) and bool(values[attr].strip()))
                for attr, name in (
                    ("raw_input", "rawInput"),
                    ("processed_content", "processedContent"),
                )
            ),
            ("summary", isinstance(values["summary"], str)),
            ("category", values["category"] in scoring.BANK_CATEGORIES),
            ("source", isinstance(values["source"], str)),
            ("confidence", is_unit(values["confidence"])),
            ("accessCount", is_count(values["access_count"])),
            ("isActive", isinstance(values.get("is_active", True), bool)),
            ("version", is_count(values.get("version", SCHEMA_VERSION))),
            (
                "stalenessScore",
                isinstance(values.get("staleness_score", 0.0), (int, float))
                and not isinstance(values.get("staleness_score", 0.0), bool),
            ),
        ]
        for name, ok in checks:
            if not ok:
                raise InvalidInputError(f"bad {name!r}: {str(data.get(name))[:60]!r}")
        for attr, name in (("created_at", "createdAt"), ("last_accessed_at", "lastAccessedAt")):
            value = values.get(attr)
            if value is None and attr == "last_accessed_at":
                values[attr] = None  # never accessed (or written before the field existed)
                continue
            values[attr] = format_time(parse_time(value, what=name))
        values["confidence"] = float(values["confidence"])
        values["staleness_score"] = float(values.get("staleness_score", 0.0))
        if key is not None:
            match = KEY_RE.fullmatch(key)
            if match is None or match.groups() != (values["profile_name"], values["id"]):
                raise InvalidInputError(
                    f"its id/profile ({values['profile_name']}/{values['id']}) do not match its key"
                )
        return cls(**values)

    def accessed(self, at: str) -> BankMemory:
        """This memory after one more access at ``at`` (staleness recomputed)."""
        last = max(filter(None, (self.last_accessed_at, at)))
        count = self.access_count + 1
        return replace(
            self,
            access_count=count,
            last_accessed_at=last,
            staleness_score=scoring.staleness(
                signals.age_days(parse_time(at), last), count, self.confidence, self.category
            ),
        )

    @property
    def anchor(self) -> str:
        """Recency's anchor: the later of ``createdAt`` and ``lastAccessedAt``."""
        return max(filter(None, (self.created_at, self.last_accessed_at)))


def is_unit(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0

"""The data model: records every layer shares, and the validation run before anything is written."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ..errors import InvalidInputError
from .clock import format_time, parse_time
from .ids import random_id, sha256
from .names import MEMORY_ID, SPACE
from .text import shown

__all__ = [
    "CATEGORIES",
    "DEFAULT_SPACE",
    "EPISODE_KINDS",
    "MAX_ID_CHARS",
    "MAX_TEXT_BYTES",
    "SOURCES",
    "Episode",
    "Hit",
    "Line",
    "MemoryRecord",
    "NewEpisode",
    "NewMemory",
    "digest",
    "inhibitory",
    "new_memory_id",
    "shown",
    "storable_text",
    "validate_count",
    "validate_id",
    "validate_items",
    "validate_messages",
    "validate_prompt",
    "validate_space",
    "validate_text",
    "validate_time",
]

DEFAULT_SPACE = "default"
MAX_TEXT_BYTES = 1024 * 1024
MAX_ID_CHARS = 256
EPISODE_KINDS = ("turn", "note", "document", "tool")
SOURCES = ("explicit", "inferred", "automatic")
CATEGORIES = ("fact", "preference", "state", "event", "rule", "decision", "note")


def validate_space(space: str) -> str:
    """Return ``space`` if it is a valid space name (``names.SPACE``).

    Raises:
        InvalidSpaceError: not 1–128 chars of ``[A-Za-z0-9._:@-]``, or a ``.``/``..`` path part.
    """
    return SPACE.validate(space)


def validate_text(text: Any, *, what: str = "text") -> str:
    """Return clean text: valid UTF-8, not blank, at most 1 MiB.

    Bytes are decoded strictly as UTF-8; NUL and other C0 control characters except tab and
    newlines are refused rather than silently dropped.

    Raises:
        InvalidInputError: for anything else.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"{what} is not valid UTF-8 (bad byte at offset {exc.start}): "
                "decode it first or re-save the file as UTF-8"
            ) from None
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a string, got {type(text).__name__} {shown(text)}")
    if not text.strip():
        raise InvalidInputError(f"{what} is empty: pass some non-blank text")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise InvalidInputError(
            f"{what} is {size:,} bytes, over the 1 MiB limit: split it (add_file splits documents "
            "for you) or store a summary"
        )
    found = _control_character(text)
    if found is not None:
        index, char = found
        raise InvalidInputError(
            f"{what} contains a control character {char!r} at index {index}: remove it "
            "(binary data cannot be stored as text)"
        )
    return text


def storable_text(text: str) -> str:
    """``text`` made what :func:`validate_text` accepts, for a recorder that must not refuse
    what it relays (the proxy's turns): control characters and lone surrogates dropped, cut
    at a character boundary to ``MAX_TEXT_BYTES``."""
    text = _CONTROL.sub("", text)
    data = text.encode("utf-8")
    return data[:MAX_TEXT_BYTES].decode("utf-8", "ignore") if len(data) > MAX_TEXT_BYTES else text


def _control_character(text: str) -> tuple[int, str] | None:
    """The first C0/C1 control character or lone surrogate of ``text`` (tab, CR, LF allowed)."""
    found = _CONTROL.search(text)
    return (found.start(), found.group()) if found else None


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
"""Unicode's ``Cc`` (C0, DEL, C1) but tab, LF and CR, and ``Cs`` (surrogates): one scan of a
text in C, where a category lookup a character cost a bulk ingest 10 % of its time."""


_ID_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Unicode's ``Cc`` and ``Cs``, tab and newline too: an id's characters in one C scan
(a category lookup a character was 2 % of a bulk ingest)."""


def validate_id(value: Any, *, what: str) -> str:
    """Return ``value`` if it is an id-like string: a role, session id, turn id, tag, source.

    Non-blank, at most 256 characters, no control characters (not even tab or newline).

    Raises:
        InvalidInputError: naming ``what``, showing the value and saying what is allowed.
    """
    allowed = f"a non-blank string of at most {MAX_ID_CHARS} characters without control characters"
    if not isinstance(value, str):
        raise InvalidInputError(
            f"{what} must be {allowed}, got {type(value).__name__} {shown(value)}"
        )
    if not value.strip():
        raise InvalidInputError(f"{what} is blank ({shown(value)}): use {allowed}")
    if len(value) > MAX_ID_CHARS:
        raise InvalidInputError(
            f"{what} is {len(value):,} characters ({shown(value)}): use {allowed}"
        )
    if _ID_CONTROL.search(value):
        raise InvalidInputError(
            f"{what} contains a control character ({shown(value)}): use {allowed}"
        )
    return value


def validate_prompt(value: Any, *, what: str) -> str:
    """Return ``value`` if it is a string: a user's prompt, message or query that a hook feeds.

    An empty, oversized or odd message is the hook's to carry on without memory; only a value
    that is not text at all (the caller's bug) is refused.

    Raises:
        InvalidInputError: ``value`` is not a ``str``.
    """
    if not isinstance(value, str):
        raise InvalidInputError(
            f"{what} must be a string (it may be empty), got {type(value).__name__} {shown(value)}"
        )
    return value


def validate_count(value: Any, *, what: str, low: int | None = 0, high: int | None = None) -> int:
    """Return ``value`` if it is a whole number from ``low`` to ``high`` (a limit, a cursor).

    Raises:
        InvalidInputError: a non-integer (``bool`` and ``"3"`` included) or out of range.
    """
    if low is None:
        allowed = "a whole number" + (f" up to {high}" if high is not None else "")
    else:
        allowed = f"a whole number from {low}" + (f" to {high}" if high is not None else " up")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what}={shown(value)}: use {allowed}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise InvalidInputError(f"{what}={value}: use {allowed}")
    return value


def validate_items(value: Any, *, what: str, of: str = "items") -> list[Any]:
    """Return ``value`` as a list if it is a list, tuple or other iterable that is not text.

    Raises:
        InvalidInputError: a string, bytes, mapping or a non-iterable such as a number.
    """
    if isinstance(value, (str, bytes, bytearray, dict)) or not hasattr(value, "__iter__"):
        raise InvalidInputError(
            f"{what} must be a list of {of}, got {type(value).__name__} {shown(value)}"
        )
    return list(value)


def validate_messages(messages: Any, *, what: str = "messages") -> list[dict[str, Any]]:
    """Return chat ``messages`` as a list if each is a dict whose ``content`` is text or parts.

    ``content`` may be a string, a list of parts (OpenAI ``{"type": "text", ...}``) or absent;
    an empty or odd user message is the hook's to handle, a wrong type is refused.

    Raises:
        InvalidInputError: not a list of dicts, or a message whose content is of another type.
    """
    shape = "a list of {'role': ..., 'content': ...} dicts"
    if isinstance(messages, (str, bytes, bytearray, dict)) or not hasattr(messages, "__iter__"):
        raise InvalidInputError(
            f"{what} must be {shape}, got {type(messages).__name__} {shown(messages)}"
        )
    items = list(messages)
    for index, message in enumerate(items):
        if not isinstance(message, dict):
            raise InvalidInputError(
                f"{what}[{index}] must be a dict, got {type(message).__name__} {shown(message)}: "
                f"pass {shape}"
            )
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise InvalidInputError(
                f"{what}[{index}]['content'] must be a string or a list of parts, got "
                f"{type(content).__name__} {shown(content)}"
            )
    return items


def validate_time(value: str | datetime | None, *, what: str = "occurred_at") -> str | None:
    """Normalise a time to stored form, or ``None`` when absent.

    The allowed range is the years 0001–9999 in UTC (stored with a four-digit year); a time
    whose UTC form falls outside it (``0001-01-01T00:00:00+01:00``) is refused.

    Raises:
        InvalidInputError: when the value is not an ISO-8601 time, or not within 0001–9999 UTC.
    """
    if value is None:
        return None
    if isinstance(value, str) and _STORED_TIME.fullmatch(value):
        try:  # already the stored form (an export's times): checked, not rebuilt
            datetime.fromisoformat(value[:-1])
            return value
        except ValueError:
            pass  # parse_time names what is wrong with it
    return format_time(parse_time(value, what=what))


_STORED_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
"""What :func:`format_time` writes: such a time is its own stored form."""


def digest(text: str) -> str:
    """A stable content digest (sha256 hex) used for idempotency and provenance."""
    return sha256(text)


def new_memory_id() -> str:
    """A fresh ``mem-<8hex>`` id."""
    return random_id("mem-")


def is_memory_id(value: str) -> bool:
    return MEMORY_ID.ok(value)


@dataclass(frozen=True)
class NewEpisode:
    """An episode to append (validated by the service before it reaches a store)."""

    space: str
    kind: str
    text: str
    role: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    occurred_at: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    context: str = ""
    """Extra words indexed with every line of this episode for lexical search only
    (speaker, session date, caption, neighbouring turns). Never shown as memory text."""


@dataclass(frozen=True)
class Episode:
    """One appended record, never changed after it is written."""

    id: int
    space: str
    kind: str
    role: str | None
    text: str
    session_id: str | None
    turn_id: str | None
    occurred_at: str
    created_at: str
    digest: str
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Line:
    """A sentence of an episode with its stable id ``s<seq>`` within the episode."""

    id: int
    episode_id: int
    seq: int
    text: str

    @property
    def label(self) -> str:
        return f"s{self.seq}"


INHIBITORY = ("forbidden", "avoid")
"""Seed 003's inhibitory namespaces: a memory whose attribute is ``forbidden_*`` or ``avoid_*``
is an anti-pattern, hoisted as ``[FORBIDDEN: …]`` whoever stored it."""


def inhibitory(attribute: str | None) -> bool:
    """Whether ``attribute`` (``avoid_nuts``, ``avoid nuts``, ``forbidden_x``) is inhibitory."""
    head = (attribute or "").strip().lower().replace(" ", "_").partition("_")[0]
    return head in INHIBITORY


@dataclass(frozen=True)
class NewMemory:
    """A distilled memory to store."""

    space: str
    content: str
    category: str = "fact"
    source: str = "explicit"
    summary: str | None = None
    confidence: float = 1.0
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    entity: str | None = None
    attribute: str | None = None
    value: str | None = None
    condition: str | None = None
    prohibited: bool = False
    event_date: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    cited_lines: tuple[int, ...] = ()
    id: str | None = None
    event_end: str | None = None
    """The last day of an event said as a range ("last week", "in March"); ``event_date`` is
    its first."""


@dataclass(frozen=True)
class MemoryRecord:
    """A stored memory: facts, preferences, states, events and rules share this shape."""

    id: str
    space: str
    category: str
    content: str
    summary: str | None
    confidence: float
    importance: float
    tags: tuple[str, ...]
    source: str
    entity: str | None
    attribute: str | None
    value: str | None
    condition: str | None
    prohibited: bool
    event_date: str | None
    session_id: str | None
    turn_id: str | None
    cited_lines: tuple[int, ...]
    created_at: str
    updated_at: str
    last_accessed_at: str | None
    access_count: int
    staleness: float
    archived_at: str | None
    active: bool
    superseded_by: str | None
    event_end: str | None = None
    """The last day of an event said as a range; ``event_date`` is its first."""
    pinned: bool = False
    """Pinned by a user: time does not lower it and it ranks higher when a query bears on
    it; it is never injected into a block it is not relevant to (docs/recall.md)."""

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        data = asdict(self)
        data["tags"] = list(self.tags)
        data["cited_lines"] = list(self.cited_lines)
        return data


HitKind = Literal["passage", "memory", "rule"]


@dataclass
class Hit:
    """One recalled item with the per-signal breakdown that explains its score."""

    kind: HitKind
    id: str
    text: str
    score: float
    space: str
    breakdown: dict[str, float] = field(default_factory=dict)
    occurred_at: str | None = None
    role: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    episode_id: int | None = None
    line: str | None = None
    memory: MemoryRecord | None = None
    outdated_by: str | None = None
    """The current value that superseded what this passage said (``[outdated: now …]``)."""
    outdated_line: str | None = None
    """The line (``s2``) whose statement was superseded: the block shows it with the mark."""

    @property
    def found_by_outdated(self) -> bool:
        """Whether this passage was found by its superseded statement ("I live in Berlin"
        for "Where do I live?"), not by another sentence of its turn ("I work night shifts
        in the cardiology ward" for "Which ward?"), which stays the evidence it is: only then
        does the current state lead it, or stand in for it."""
        return self.outdated_line is not None and self.outdated_line == self.line

    def to_dict(self) -> dict[str, Any]:
        data = {
            "kind": self.kind,
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 6),
            "space": self.space,
            "breakdown": {k: round(v, 6) for k, v in self.breakdown.items()},
            "occurred_at": self.occurred_at,
            "role": self.role,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "episode_id": self.episode_id,
            "line": self.line,
        }
        if self.memory is not None:
            data["memory"] = self.memory.to_dict()
        return data

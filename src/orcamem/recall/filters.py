"""SearchFilter: what a filtered search may return, checked once before any store sees it.

Every search surface (``Memory.search(filters=)``, REST ``/api/search``, ``orcamem search``,
the MCP ``search`` tool, the dashboard) builds one of these; the stores turn it into the WHERE
clauses of their candidate queries (``engine/store/scope.py``), so a filtered search ranks only
what matches instead of ranking everything and dropping the rest. A filter narrows what a space
shows; the space itself is always part of the query and no filter can widen it.

A field a hit kind does not have excludes that kind: ``role`` and ``metadata`` are episode
fields (passages only), ``category`` is a memory field (memories only). ``since``/``until``
bound a passage's ``occurred_at`` and a memory's event date (else its creation), both
inclusive; a date alone is its midnight UTC.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from .._kernel.model import CATEGORIES, MemoryRecord, validate_id, validate_time
from .._kernel.names import META_KEY
from .._kernel.text import shown
from ..errors import InvalidInputError

__all__ = ["KINDS", "MAX_METADATA", "SearchFilter", "meta_pairs"]

KINDS = ("passage", "memory")
"""The hit kinds a search ranks (forbidden rules come beside them, in ``rules``)."""

MAX_METADATA = 8
"""Metadata pairs one filter may require (each is one more clause in every candidate query)."""


@dataclass(frozen=True)
class SearchFilter:
    """Exact matches a search's hits must meet; every field ``None`` (or empty) means no
    filter, and an empty filter searches exactly as an unfiltered search does.

    ``metadata``: ``{key: value}`` pairs an episode's metadata must hold, each value a string
    compared exactly (a top-level key, :data:`orcamem._kernel.names.META_KEY`).

    Raises:
        InvalidInputError: a value outside what the field allows, or ``until`` before ``since``.
    """

    kind: str | None = None
    role: str | None = None
    session: str | None = None
    since: str | None = None
    until: str | None = None
    category: str | None = None
    metadata: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in KINDS:
            raise InvalidInputError(f"kind={shown(self.kind)}: use one of {', '.join(KINDS)}")
        if self.category is not None and self.category not in CATEGORIES:
            raise InvalidInputError(
                f"category={shown(self.category)}: use one of {', '.join(CATEGORIES)}"
            )
        for name in ("role", "session"):
            value = getattr(self, name)
            if value is not None:
                validate_id(value, what=name)
        for name in ("since", "until"):
            object.__setattr__(self, name, validate_time(getattr(self, name), what=name))
        if self.since and self.until and self.until < self.since:
            raise InvalidInputError(
                f"until={self.until} is before since={self.since}: give an until at or after since"
            )
        object.__setattr__(self, "metadata", _metadata(self.metadata))

    @classmethod
    def of(cls, value: SearchFilter | Mapping[str, Any] | None) -> SearchFilter:
        """A filter from itself, ``None`` (no filter) or a mapping of its field names
        (``{"session": "s1", "metadata": {"source": "import"}}``)."""
        if value is None:
            return cls()
        if isinstance(value, SearchFilter):
            return value
        if not isinstance(value, Mapping):
            raise InvalidInputError(
                f"filters must be a SearchFilter or a mapping of its fields, got "
                f"{type(value).__name__} {shown(value)}"
            )
        allowed = [field.name for field in fields(cls)]
        unknown = sorted(str(key) for key in value if key not in allowed)
        if unknown:
            raise InvalidInputError(
                f"unknown filter {', '.join(unknown)}: use {', '.join(allowed)}"
            )
        return cls(**{key: item for key, item in value.items() if item is not None})

    @property
    def empty(self) -> bool:
        return not any(getattr(self, field.name) for field in fields(self))

    def __bool__(self) -> bool:
        """A filter is true when it filters (``if where:`` is "is anything required?")."""
        return not self.empty

    @property
    def passages(self) -> bool:
        """Whether a passage can match (no ``category``, and ``kind`` allows it)."""
        return self.kind in (None, "passage") and self.category is None

    @property
    def memories(self) -> bool:
        """Whether a memory can match (no ``role`` or ``metadata``, and ``kind`` allows it)."""
        return self.kind in (None, "memory") and self.role is None and not self.metadata

    def admits(self, memory: MemoryRecord) -> bool:
        """Whether a memory met outside the store's filtered queries (a forbidden rule, the
        current state that superseded a passage) matches, as the stores' clauses decide."""
        moment = memory.event_date or memory.created_at
        return (
            self.memories
            and (self.session is None or memory.session_id == self.session)
            and (self.category is None or memory.category == self.category)
            and (self.since is None or moment >= self.since)
            and (self.until is None or moment <= self.until)
        )


def _metadata(value: Any) -> tuple[tuple[str, str], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise InvalidInputError(
            f"metadata={shown(value)}: pass a mapping of key to string value, e.g. "
            "{'source': 'import'}"
        )
    pairs = {}
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise InvalidInputError(f"metadata item {shown(item)}: use (key, value) pairs")
        key, text = item
        META_KEY.validate(key)
        if not isinstance(text, str):
            raise InvalidInputError(
                f"metadata {key}={shown(text)}: a metadata filter matches string values only; "
                f"pass it as a string"
            )
        pairs[key] = validate_id(text, what=f"metadata {key}")
    if len(pairs) > MAX_METADATA:
        raise InvalidInputError(
            f"{len(pairs)} metadata pairs: a filter matches at most {MAX_METADATA}"
        )
    return tuple(sorted(pairs.items()))


def meta_pairs(items: Iterable[str]) -> dict[str, str]:
    """``["source=import", "app=cli"]`` (the CLI's ``--meta``, REST's ``meta`` parameter) as
    a mapping; the value is everything after the first ``=``."""
    pairs: dict[str, str] = {}
    for item in items:
        key, sign, value = item.partition("=")
        if not sign:
            raise InvalidInputError(f"meta {shown(item)}: use key=value, e.g. source=import")
        pairs[key] = value
    return pairs

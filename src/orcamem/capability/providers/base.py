"""What every memory provider is: a search, a save, one real check, and its own notes.

A provider reports one of three states, decided by actually calling it once (never by whether
it launched):

- ``ready`` — it works;
- ``installed-not-set-up`` — present, starts, but calls fail for want of a setup step (finish
  the step, do not reinstall);
- ``not-available`` — missing on this machine (install it, or pick the other provider).

Each state has one message: the ``detail`` a check reports is, word for word, the message of
the :class:`ProviderError` that a search or save raises for the same cause, so what a host logs
from a failed turn is what ``orcamem doctor`` shows.

Its capability notes (what it can and cannot do) come from the provider itself, so they cannot
drift from a list kept beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ...errors import InvalidInputError, ProviderError

__all__ = [
    "LABELS",
    "NOT_AVAILABLE",
    "NOT_SET_UP",
    "READY",
    "MemoryProvider",
    "ProviderCapabilities",
    "ProviderError",
    "ProviderStatus",
    "Recalled",
    "Scope",
]

READY = "ready"
NOT_SET_UP = "installed-not-set-up"
NOT_AVAILABLE = "not-available"
State = Literal["ready", "installed-not-set-up", "not-available"]
LABELS: dict[str, str] = {
    READY: "Ready",
    NOT_SET_UP: "Installed, but not set up",
    NOT_AVAILABLE: "Not available",
}
"""How each state is shown."""


@dataclass(frozen=True)
class Scope:
    """Where a memory is pinned. All empty: the user layer (unscoped), which is what the
    automatic path writes, so a fact saved in one session is found from every later one.

    >>> Scope().layer, Scope(session="s1").layer, Scope(session="s1", turn="t3").as_dict()
    ('user', 'session', {'session': 's1', 'turn': 't3'})
    """

    session: str | None = None
    agent: str | None = None
    turn: str | None = None

    def __post_init__(self) -> None:
        for name in ("session", "agent", "turn"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInputError(f"scope {name} must be a non-blank string or None")

    @property
    def layer(self) -> str:
        """The most specific layer set: ``turn``, ``agent``, ``session`` or ``user``."""
        for name in ("turn", "agent", "session"):
            if getattr(self, name):
                return name
        return "user"

    def as_dict(self) -> dict[str, str]:
        return {
            name: value
            for name in ("session", "agent", "turn")
            if (value := getattr(self, name)) is not None
        }

    @classmethod
    def from_mapping(cls, values: Mapping[str, str] | None) -> Scope:
        values = dict(values or {})
        unknown = sorted(set(values) - {"session", "agent", "turn"})
        if unknown:
            raise InvalidInputError(f"unknown scope key(s) {unknown}: use session, agent, turn")
        return cls(**values)


@dataclass(frozen=True)
class ProviderCapabilities:
    """What a provider can do (the docs' comparison table, as data)."""

    search: str
    """``lexical`` or ``semantic``."""
    scopes: tuple[str, ...]
    """The layers it keeps apart: ``("user", "session", "agent", "turn")`` or ``("user",)``."""
    reads: str
    """``records`` (structured) or ``text`` (formatted lines: content and a relevance only)."""
    decay: bool
    archive: bool
    retrieval_log: bool
    leaves_machine: str
    """What leaves this machine, in words."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "search": self.search,
            "scopes": list(self.scopes),
            "reads": self.reads,
            "decay": self.decay,
            "archive": self.archive,
            "retrieval_log": self.retrieval_log,
            "leaves_machine": self.leaves_machine,
        }


@dataclass(frozen=True)
class ProviderStatus:
    """The result of one real call into a provider."""

    provider: str
    state: State
    detail: str
    """What the check saw: for a state other than ``ready``, the same message a search or save
    raises (as :class:`ProviderError`) for the same cause."""
    action: str
    """What to do about it (empty when ready)."""
    notes: tuple[str, ...]
    """The provider's own notes on what it can and cannot do."""
    capabilities: ProviderCapabilities

    @property
    def label(self) -> str:
        return LABELS[self.state]

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "state": self.state,
            "label": self.label,
            "detail": self.detail,
            "action": self.action,
            "notes": list(self.notes),
            "capabilities": self.capabilities.to_dict(),
        }


@dataclass(frozen=True)
class Recalled:
    """One memory a search returned, as the provider could give it."""

    text: str
    id: str | None = None
    archived: bool = False
    """From cold storage: the text carries its banner and is shown with a warning."""
    relevance: float | None = None
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class MemoryProvider(Protocol):
    """A memory provider. Operations raise :class:`ProviderError` when the provider fails."""

    name: str
    capabilities: ProviderCapabilities

    def notes(self) -> tuple[str, ...]:
        """What this provider can and cannot do, in its own words."""
        ...

    def check(self) -> ProviderStatus:
        """Call the provider once for real and report its state (never raises); its detail is
        the message an operation raises for the same cause."""
        ...

    def search(
        self,
        query: str,
        *,
        top_k: int,
        include_archived: bool = False,
        scope: Scope | None = None,
        destination: str = "main-context",
    ) -> list[Recalled]: ...

    def save(
        self,
        text: str,
        *,
        importance: float = 0.5,
        tags: tuple[str, ...] = (),
        scope: Scope | None = None,
    ) -> str | None:
        """Store one memory; returns its id when the provider says one."""
        ...

    def close(self) -> None: ...

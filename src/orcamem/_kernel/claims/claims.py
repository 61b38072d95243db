"""What an extractor (rules or a model) says it found: claims, not yet memories.

A claim cites the episode lines it came from (``ep-12:s1``). Nothing becomes a memory before
``verify`` has checked the citation, the grounding and the dates, and ``gate`` has decided how
it relates to what is already known.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CLAIMS_SCHEMA",
    "HELPERS",
    "Claim",
    "SourceLine",
    "Verified",
    "claim_from_json",
    "memory_content",
    "speaker_entity",
]

ClaimKind = Literal["state", "event", "preference", "fact", "rule"]
KINDS: tuple[str, ...] = ("state", "event", "preference", "fact", "rule")


HELPERS = frozenset({"assistant", "system", "tool", "developer"})
"""Roles that are not a person speaking about themself: nothing they say is a claim about them."""


def speaker_entity(role: str | None) -> str | None:
    """The entity a turn's speaker is: ``user`` for the user, a named speaker's name in lower
    case (``Caroline`` → ``caroline``: in a chat between people every speaker is an entity),
    ``None`` for the assistant, the system, a tool, or a line without a role."""
    name = " ".join((role or "").split()).lower()
    return None if not name or name in HELPERS else name


@dataclass(frozen=True)
class SourceLine:
    """An episode line as the extractor saw it."""

    ref: str
    """``ep-<episode id>:s<seq>``: how claims cite it."""
    line_id: int
    episode_id: int
    session_id: str | None
    role: str | None
    text: str
    occurred_at: str
    kind: str
    """The episode's kind (``turn``, ``note``, ``document``, ``tool``): who said it, with ``role``."""


@dataclass(frozen=True)
class Claim:
    """One extracted statement about an entity.

    ``kind``: ``state`` (single-valued current truth: a newer value supersedes), ``event``
    (dated happening), ``preference`` and ``fact`` (additive), ``rule`` (``prohibited`` rules
    are forbidden ones).
    """

    kind: str
    attribute: str
    value: str
    cites: tuple[str, ...]
    entity: str = "user"
    condition: str = ""
    prohibited: bool = False
    when: str = ""
    """A time expression as said (``last week``, ``in March``); resolved by code, never by the model."""
    confidence: float = 0.9
    extractor: str = "rules"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "entity": self.entity,
            "attribute": self.attribute,
            "value": self.value,
            "condition": self.condition,
            "prohibited": self.prohibited,
            "when": self.when,
            "cites": list(self.cites),
            "extractor": self.extractor,
        }


_TEXT = {"type": "string", "maxLength": 200}
CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "maxItems": 20,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(KINDS)},
                    "entity": {"type": "string", "maxLength": 60},
                    "attribute": {"type": "string", "maxLength": 60},
                    "value": _TEXT,
                    "condition": _TEXT,
                    "prohibited": {"type": "boolean"},
                    "when": {"type": "string", "maxLength": 60},
                    "cites": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 4,
                        "items": {"type": "string", "maxLength": 40},
                    },
                },
                "required": ["kind", "attribute", "value", "cites"],
            },
        }
    },
    "required": ["items"],
}
"""The length-bounded JSON schema a model must answer with (or the single word NOTHING)."""


def claim_from_json(data: Any, extractor: str) -> Claim:
    """Build a claim from one model item; raises ``ValueError`` naming what is wrong."""
    if not isinstance(data, dict):
        raise ValueError("item is not an object")
    kind = data.get("kind")
    if kind not in KINDS:
        raise ValueError(f"unclassified item (kind={kind!r})")
    attribute, value = data.get("attribute"), data.get("value")
    if not isinstance(attribute, str) or not attribute.strip():
        raise ValueError("item without an attribute")
    if not isinstance(value, str) or not value.strip():
        raise ValueError("item without a value")
    cites = data.get("cites")
    if not isinstance(cites, list) or not cites or not all(isinstance(c, str) for c in cites):
        raise ValueError("item without citations")
    entity = data.get("entity") or "user"
    condition = data.get("condition") or ""
    when = data.get("when") or ""
    if not all(isinstance(x, str) for x in (entity, condition, when)):
        raise ValueError("entity, condition and when must be strings")
    if len(value) > 200 or len(attribute) > 60 or len(condition) > 200:
        raise ValueError("item over the length limits")
    return Claim(
        kind=kind,
        entity=entity.strip().lower(),
        attribute=" ".join(attribute.lower().replace("_", " ").split()),
        value=value.strip(),
        condition=condition.strip(),
        prohibited=bool(data.get("prohibited", False)),
        when=when.strip(),
        cites=tuple(c.strip() for c in cites),
        extractor=extractor,
    )


@dataclass(frozen=True)
class Verified:
    """A claim that passed every check, with its citations resolved to line ids."""

    claim: Claim
    line_ids: tuple[int, ...]
    date: str | None
    """The day it refers to (``YYYY-MM-DD``): an event's date, or since when a state holds."""
    until: str | None = None
    """The last day of a range ("last week": Monday to Sunday), when it is more than one day."""
    said_on: str | None = None
    """The day it was said (its first cited line's ``occurred_at``, local): what orders states."""
    session_id: str | None = None
    turn_id: str | None = None


def memory_content(claim: Claim) -> str:
    """The sentence a memory shows for a claim (what search matches and facts list). Whose it
    is, when not the user's, is part of it: an event or a rule of a named speaker
    ("caroline · went to: a support group") is not the user's."""
    who = "" if claim.entity == "user" else f"{claim.entity} · "
    if claim.kind == "rule" or claim.prohibited:
        rule = claim.value if claim.prohibited else f"always {claim.value}"
        return f"{rule} (for {claim.entity})" if who else rule
    if claim.kind == "preference":
        return f"{who}prefers {claim.value}"
    if claim.kind == "fact":
        return f"{who}{claim.attribute} {claim.value}"
    when = f" when {claim.condition}" if claim.condition else ""
    return f"{who}{claim.attribute}{when}: {claim.value}"

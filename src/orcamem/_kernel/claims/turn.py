"""One finished turn in, verified statements out: the no-model capture of local memory and
the capability.

The turn's messages are split into lines the way ingest splits an episode, read by the same
patterns consolidation uses (``rules``), and kept only when ``verify_claims`` passes them: a
claim cites the user's own words, its value is said there, and nothing in it looks like a
secret. What the assistant says is never a claim about the user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from ..text import split_document
from .claims import Claim, SourceLine
from .rules import rule_claims
from .verify import verify_claims

__all__ = ["EXTRACTOR", "Statement", "statement", "turn_statements"]

EXTRACTOR = "rules"
"""The provenance every no-model capture records (``extractor``): the rule-based one ran."""
_UTC = ZoneInfo("UTC")


@dataclass(frozen=True)
class Statement:
    """A verified claim of the turn and the self-contained sentence that shows it."""

    claim: Claim
    text: str


def statement(claim: Claim) -> str:
    """The sentence a claim is remembered as, readable on its own in a later session."""
    value = claim.value.rstrip(".")
    if claim.kind == "rule" or claim.prohibited:
        if claim.attribute.startswith("avoid_"):
            return f"Avoid {value}."
        if not claim.prohibited:
            return f"Always {value}."
        gerund = value.split()[0].lower().endswith("ing")
        return f"Stop {value}." if gerund else f"Never {value}."
    when = f" when {claim.condition}" if claim.condition else ""
    if claim.kind == "preference":
        return f"The user prefers {value}{when}."
    if claim.kind == "event":
        return f"The user {claim.attribute} {value}" + (f" ({claim.when})." if claim.when else ".")
    if claim.kind == "fact":
        if claim.attribute.endswith(" to"):  # "allergic to"
            return f"The user is {claim.attribute} {value}."
        return f"The user's {claim.attribute}: {value}."
    return f"The user's {claim.attribute}{when}: {value}."


def turn_statements(
    messages: Sequence[Mapping[str, str]], said_at: str, *, session_id: str | None = None
) -> list[Statement]:
    """The verified statements of one turn (``messages``: ``{"role", "text"}``; ``said_at``: the
    turn's UTC stamp, which dates "last week"). Duplicates are said once."""
    lines: list[SourceLine] = []
    for number, message in enumerate(messages, 1):
        for seq, text in enumerate(split_document(str(message.get("text") or "")), 1):
            lines.append(
                SourceLine(
                    ref=f"m{number}:s{seq}",
                    line_id=len(lines) + 1,
                    episode_id=number,
                    session_id=session_id,
                    role=str(message.get("role") or ""),
                    text=text,
                    occurred_at=said_at,
                    kind="turn",
                )
            )
    verified, _ = verify_claims(rule_claims(lines), lines, _UTC)
    out: dict[str, Statement] = {}
    for item in verified:
        if item.claim.entity == "user":
            sentence = statement(item.claim)
            out.setdefault(sentence.lower(), Statement(item.claim, sentence))
    return list(out.values())

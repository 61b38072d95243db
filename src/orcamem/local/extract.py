"""Local agent memory, the pure parts: what is sent to the extractor and what comes back. No
files, no locks, no model calls (``local.memory`` does those).

- **Source.** Only the completed turn's user and assistant messages (system context and tool
  output are excluded), each redacted, rendered and bounded to 32 KiB (:func:`build_source`).
- **Extraction.** The model answers candidates classified ``user`` / ``feedback`` /
  ``project`` / ``reference``, or ``NOTHING``. Empty, malformed, unclassified or over-limit
  output is a failed attempt (:func:`parse_candidates`). Candidates that still match the local
  secret detector — and a few shapes the prompt rejects that code can also see — are rejected
  before persistence (:func:`screen`).
- **Recall** lives with the other scorers and blocks: ``recall.blocks.local.pack_recall``
  (six entries, 3,072 bytes, framed as historical claims) and ``recall.ledger.fallback_rank``
  (when the FTS5 index is unavailable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._kernel.ids import tagged
from .._kernel.jobs import check_items
from .._kernel.llm import NOTHING, is_nothing
from .._kernel.redact import find_secrets, redact
from ..errors import AttemptFailed
from .ledger import CATEGORIES, MAX_CANDIDATE_CHARS

__all__ = [
    "CANDIDATES_SCHEMA",
    "EXTRACTION_PROMPT",
    "MAX_CANDIDATES_PER_TURN",
    "MAX_SOURCE_BYTES",
    "Rejected",
    "Source",
    "build_source",
    "parse_candidates",
    "render_source",
    "screen",
]

MAX_SOURCE_BYTES = 32 * 1024
"""The redacted source sent to the extractor is bounded to 32 KiB (UTF-8)."""
MAX_CANDIDATES_PER_TURN = 8
"""More candidates than this from one turn is over-limit output (a failed attempt)."""

EXTRACTION_PROMPT = """\
You read one completed turn between a user and a coding agent and pick out the few durable \
facts worth remembering in later sessions of this project. Classify each as exactly one of:
- user: a stable preference of the user;
- feedback: confirmed guidance about how the agent should work;
- project: a non-obvious project decision that cannot simply be recovered from the current \
repository or its Git history;
- reference: a stable external reference needed in later work.
Never return transient task state, summaries of code, raw tool output, credentials, private \
values, or claims nobody confirmed. Each fact is one short, self-contained sentence. If \
nothing qualifies, answer NOTHING."""

CANDIDATES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "candidates": {
            "type": "array",
            "maxItems": MAX_CANDIDATES_PER_TURN,
            "items": {
                "type": "object",
                "properties": {
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                    "text": {"type": "string", "maxLength": MAX_CANDIDATE_CHARS},
                },
                "required": ["category", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["candidates"],
    "additionalProperties": False,
}


# -- the source -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """The bounded, redacted extraction input of one turn."""

    messages: tuple[dict[str, str], ...]
    """``{"role", "text"}`` of each user and assistant message kept (redacted, bounded)."""
    text: str
    """What the extractor is sent (:func:`render_source` of ``messages``)."""
    digest: str
    """``sha256:<hex>`` of ``text``: part of the job's idempotency key."""
    truncated: bool
    redactions: int

    def payload(self) -> dict[str, Any]:
        return {
            "messages": [dict(m) for m in self.messages],
            "bytes": len(self.text.encode("utf-8")),
            "truncated": self.truncated,
            "redactions": self.redactions,
        }


def _label(role: str) -> str:
    return f"[{role}]\n"


def render_source(messages: Sequence[Mapping[str, str]]) -> str:
    return "\n\n".join(_label(m["role"]) + m["text"] for m in messages)


def _cut(text: str, limit: int) -> str:
    """The longest prefix of ``text`` within ``limit`` UTF-8 bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: max(0, limit)].decode("utf-8", errors="ignore")


def build_source(messages: Sequence[Mapping[str, Any]]) -> Source:
    """The extraction input from a turn's records: user and assistant messages only,
    redacted, at most 32 KiB. Messages past the bound are cut (the cut one is marked).

    Each item has ``role``, ``text`` and optionally ``kind`` (``message``; ``system`` and
    ``tool`` records are dropped, as are roles other than user and assistant).
    """
    kept: list[dict[str, str]] = []
    redactions = 0
    truncated = False
    used = 0
    marker = " […truncated]"
    for item in messages:
        if item.get("kind", "message") != "message" or item.get("role") not in (
            "user",
            "assistant",
        ):
            continue
        cleaned = redact(str(item.get("text") or ""))
        redactions += len(cleaned.findings)
        text = cleaned.text.strip()
        if not text:
            continue
        role = str(item["role"])
        sep = 2 if kept else 0
        cost = sep + len(_label(role).encode()) + len(text.encode("utf-8"))
        if used + cost > MAX_SOURCE_BYTES:
            room = MAX_SOURCE_BYTES - used - sep - len(_label(role).encode()) - len(marker.encode())
            truncated = True
            if room > 0:
                # a cut can split a secret's marker or expose a fragment: redact the piece again
                piece = redact(_cut(text, room)).text
                piece = _cut(piece, room).rstrip()
                if piece:
                    kept.append({"role": role, "text": piece + marker})
            break
        kept.append({"role": role, "text": text})
        used += cost
    rendered = render_source(kept)
    digest = tagged(rendered)
    return Source(tuple(kept), rendered, digest, truncated, redactions)


# -- the model's answer -----------------------------------------------------------------------


def parse_candidates(reply: Any) -> list[dict[str, str]] | str:
    """The candidates in a model reply, or :data:`NOTHING`.

    Raises:
        AttemptFailed: empty, malformed, unclassified or over-limit output (a failed attempt,
            never a zero-candidate success).
    """
    if is_nothing(reply):
        return NOTHING
    if reply is None or (isinstance(reply, str) and not reply.strip()):
        raise AttemptFailed("empty output: the model returned nothing (only NOTHING is empty)")
    items = reply.get("candidates") if isinstance(reply, dict) else reply
    if items is None:
        raise AttemptFailed("malformed output: no 'candidates' list")
    checked = check_items(items, allowed=CATEGORIES, max_items=MAX_CANDIDATES_PER_TURN)
    out = []
    for number, item in enumerate(checked, 1):
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise AttemptFailed(f"malformed output: candidate {number} has no text")
        if len(text.strip()) > MAX_CANDIDATE_CHARS:
            raise AttemptFailed(
                f"over-limit output: candidate {number} has {len(text.strip())} characters "
                f"(the limit is {MAX_CANDIDATE_CHARS})"
            )
        out.append({"category": str(item["category"]), "text": " ".join(text.split()), "raw": text})
    return out


@dataclass(frozen=True)
class Rejected:
    """A candidate refused before persistence (its text is not kept: it may hold a secret)."""

    category: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"category": self.category, "reason": self.reason}


def screen(items: Sequence[Mapping[str, str]]) -> tuple[list[dict[str, str]], list[Rejected]]:
    """Split parsed candidates into kept and rejected.

    Rejected: anything the local secret detector still finds; text carrying a redaction marker
    (it is about a private value); multi-line text or code fences (raw output, code).
    """
    kept, rejected = [], []
    for item in items:
        text, category = item["text"], item["category"]
        raw = item.get("raw", text)
        kinds = sorted({f.kind for f in [*find_secrets(raw), *find_secrets(text)]})
        if kinds:
            rejected.append(Rejected(category, f"secret detector: {', '.join(kinds)}"))
        elif "[REDACTED" in text or "[REDACTED" in raw:  # a cut may end at the marker's colon
            rejected.append(Rejected(category, "private value (redacted in the source)"))
        elif "\n" in raw.strip() or "```" in text:
            rejected.append(Rejected(category, "raw output or code"))
        else:
            kept.append({"category": category, "text": text})
    return kept, rejected

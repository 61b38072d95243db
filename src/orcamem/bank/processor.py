"""The Memory Bank's processor: one fast model call turns a raw input into a memory record
(processed content, summary, category, confidence) under a 5-second deadline.

Seed 002's three fallbacks, told apart by whether the model answered: no model
(``ANTHROPIC_API_KEY`` unset) or a failed call (unreachable, past the deadline, a non-200
status) skips extraction (the save keeps what the caller supplied, confidence 1.0); an answer
that cannot be used (HTTP 200 but not JSON, not a Messages reply, without the fields or with
the wrong types: ``ModelOutputError``) gives the deterministic preview (confidence 0.5)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from .._kernel.llm import ChatModel, is_nothing
from ..errors import ModelOutputError
from ..recall import bank as scoring
from .record import SUMMARY_CHARS, preview

__all__ = [
    "EXTRACTION_PROMPT",
    "EXTRACTION_SCHEMA",
    "PROCESSOR_DEADLINE_S",
    "Extraction",
    "MemoryProcessor",
]

log = logging.getLogger("orcamem.bank")


PROCESSOR_DEADLINE_S = 5.0
"""The processor's model call gets this many seconds, wall clock."""


EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "processedContent": {"type": "string", "minLength": 1, "maxLength": 1000},
        "summary": {"type": "string", "minLength": 1, "maxLength": SUMMARY_CHARS},
        "category": {"type": "string", "enum": list(scoring.BANK_CATEGORIES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["processedContent", "summary", "category", "confidence"],
    "additionalProperties": False,
}


EXTRACTION_PROMPT = """\
An AI agent wants to remember the note below across its future sessions. Turn it into one \
memory record:
- processedContent: the note restated as one or two short, self-contained sentences that will \
still make sense later (name who or what it is about; no filler).
- summary: a label of at most 50 characters.
- category: preference (how the user or agent likes things done), fact (something true about \
the user, the project or the world), behavior (a procedure the agent should follow), context \
(a short-lived detail of the current situation) or general (anything else).
- confidence: from 0 to 1, how certain and lasting the note is."""


@dataclass(frozen=True)
class Extraction:
    """What the processor made of a raw input.

    ``outcome``: ``extracted`` (the model's fields), ``skipped`` (no model, or the call failed:
    the save proceeds with what the caller supplied) or ``preview`` (the model answered but
    the answer could not be used: the deterministic preview).
    """

    outcome: Literal["extracted", "skipped", "preview"]
    processed_content: str | None = None
    summary: str | None = None
    category: str | None = None
    confidence: float | None = None
    reason: str = ""


class MemoryProcessor:
    """Extracts ``processedContent``, ``summary``, ``category`` and ``confidence`` from a raw
    input with a fast model, under a 5-second deadline.

    Args:
        model: any :class:`~orcamem._kernel.llm.ChatModel` (the bank builds an Anthropic
            client from ``$ANTHROPIC_API_KEY`` and ``$ANTHROPIC_MEMORY_MODEL``); ``None`` skips
            extraction.
        deadline_s: the model call's wall-clock deadline.
    """

    def __init__(self, model: ChatModel | None, *, deadline_s: float = PROCESSOR_DEADLINE_S):
        self.model = model
        self.deadline_s = deadline_s

    def extract(self, raw_input: str) -> Extraction:
        if self.model is None:
            return Extraction("skipped", reason="no model configured (ANTHROPIC_API_KEY unset)")
        try:
            value = self.model.complete_json(
                EXTRACTION_PROMPT,
                raw_input,
                EXTRACTION_SCHEMA,
                deadline_s=self.deadline_s,
                max_tokens=600,
            )
        except ModelOutputError as exc:  # it answered (HTTP 200), with nothing usable
            return Extraction("preview", reason=str(exc))
        except Exception as exc:  # unreachable, refused, timed out: skip, never fail the save
            log.warning("memory processor call failed, saving without extraction: %s", exc)
            return Extraction("skipped", reason=str(exc))
        if is_nothing(value) or not isinstance(value, dict):
            return Extraction("preview", reason="the model answered NOTHING")
        content = " ".join(str(value.get("processedContent", "")).split())
        if not content:
            return Extraction("preview", reason="the model's processedContent is blank")
        return Extraction(
            "extracted",
            processed_content=content,
            summary=" ".join(str(value["summary"]).split())[:SUMMARY_CHARS] or preview(content),
            category=value["category"],
            confidence=float(value["confidence"]),
        )

    def close(self) -> None:
        if self.model is not None:
            self.model.close()

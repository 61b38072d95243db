"""The demo behind ``scripts/up``: a bundled conversation, ingested and consolidated once,
then a few recalls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources

from .memory import Memory

__all__ = ["run_demo", "sample_conversation"]


def sample_conversation() -> dict:
    """The bundled sample (an invented three-session chat)."""
    text = resources.files("orcamem").joinpath("samples/conversation.json").read_text("utf-8")
    return json.loads(text)


def run_demo(mem: Memory) -> Iterator[tuple[str, str]]:
    """Ingest the sample into ``mem``'s default space unless it is there; yield (title, block)."""
    sample = sample_conversation()
    if not mem.stats()["episodes"]:
        items = [
            {
                "text": text,
                "kind": "turn",
                "role": role,
                "session_id": session["id"],
                "turn_id": f"{session['id']}:{number}",
                "occurred_at": session["occurred_at"],
            }
            for session in sample["sessions"]
            for number, (role, text) in enumerate(session["turns"], start=1)
        ]
        mem.add_many(items)
        mem.remember("Prefers dark mode in every editor and terminal", category="preference")
        mem.forbid("Never chain PowerShell commands with semicolons")
        report = mem.sleep()  # rule-based consolidation: no model needed
        yield (
            "ingested",
            (
                f"{len(items)} turns, 1 preference and 1 forbidden rule; sleep kept "
                f"{len(report.stored)} states, events and rules ({len(report.superseded)} superseded)"
            ),
        )
    for question in sample["questions"]:
        yield f"recall: {question}", mem.recall(question) or "(nothing recalled)"

"""OpenAI chat completions (``POST /v1/chat/completions``)."""

from __future__ import annotations

from typing import Any

from ._text import merged_content, parts_text

_SYSTEM = ("system", "developer")
_TEXT = (None, "text")


class _Chat:
    name = "chat completion"
    path = "chat/completions"
    end = b"\ndata: [DONE]"  # at a line's start: a model's text may say [DONE] itself

    def conversation(self, payload: dict[str, Any]) -> list[dict[str, Any]] | None:
        messages = payload.get("messages")
        if not (isinstance(messages, list) and all(isinstance(m, dict) for m in messages)):
            return None
        return [
            {"role": m.get("role"), "content": parts_text(m.get("content"), _TEXT)}
            for m in messages
        ]

    def user(self, payload: dict[str, Any]) -> object:
        return payload.get("user")

    def inject(self, payload: dict[str, Any], block: str) -> None:
        messages = payload["messages"]
        for message in messages:
            if message.get("role") in _SYSTEM:
                message["content"] = merged_content(message.get("content"), block, "text")
                return
        messages.insert(0, {"role": "system", "content": block})

    def event_text(self, event: dict[str, Any]) -> str:
        delta = _first_choice(event).get("delta")
        text = delta.get("content") if isinstance(delta, dict) else None
        return text if isinstance(text, str) else ""

    def answer_text(self, answer: Any) -> str:
        message = _first_choice(answer).get("message")
        return parts_text(message.get("content"), _TEXT) if isinstance(message, dict) else ""


def _first_choice(event: Any) -> dict[str, Any]:
    """Choice 0 of a completion or chunk; ``{}`` for usage chunks (``choices`` empty or null)."""
    choices = event.get("choices") if isinstance(event, dict) else None
    for choice in choices if isinstance(choices, list) else ():
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return {}


CHAT = _Chat()

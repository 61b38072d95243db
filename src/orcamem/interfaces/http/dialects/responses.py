"""OpenAI Responses (``POST /v1/responses``).

``input`` is a string (one user message) or a list of items: messages (``role`` and a
string or ``input_text``/``output_text`` parts) and others (tool calls and their outputs,
which hold no conversation text). ``instructions`` is the system text; the block joins it, or
the input's leading system/developer message when the request has no ``instructions``.
"""

from __future__ import annotations

from typing import Any

from ._text import joined, merged_content, parts_text

_SYSTEM = ("system", "developer")
_TEXT = (None, "text", "input_text", "output_text")


class _Responses:
    name = "response"
    path = "responses"
    end = b'"response.completed"'

    def conversation(self, payload: dict[str, Any]) -> list[dict[str, Any]] | None:
        items = payload.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not (isinstance(items, list) and all(isinstance(i, dict) for i in items)):
            return None
        instructions = payload.get("instructions")
        opening = (
            [{"role": "system", "content": instructions}] if isinstance(instructions, str) else []
        )
        return opening + [
            {"role": item.get("role"), "content": parts_text(item.get("content"), _TEXT)}
            for item in items
            if item.get("type", "message") == "message"
        ]

    def user(self, payload: dict[str, Any]) -> object:
        return payload.get("user")

    def inject(self, payload: dict[str, Any], block: str) -> None:
        instructions = payload.get("instructions")
        items = payload.get("input")
        if not isinstance(instructions, str) and isinstance(items, list):
            for item in items:
                if item.get("role") in _SYSTEM and item.get("type", "message") == "message":
                    item["content"] = merged_content(item.get("content"), block, "input_text")
                    return
        payload["instructions"] = joined(
            instructions if isinstance(instructions, str) else "", block
        )

    def event_text(self, event: dict[str, Any]) -> str:
        if event.get("type") != "response.output_text.delta":
            return ""
        delta = event.get("delta")
        return delta if isinstance(delta, str) else ""

    def answer_text(self, answer: Any) -> str:
        output = answer.get("output") if isinstance(answer, dict) else None
        items = output if isinstance(output, list) else []
        return "".join(
            parts_text(item.get("content"), ("output_text",))
            for item in items
            if isinstance(item, dict) and item.get("type") == "message"
        )


RESPONSES = _Responses()

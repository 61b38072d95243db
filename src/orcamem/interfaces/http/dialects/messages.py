"""Anthropic Messages (``POST /v1/messages``).

``system`` is a string or a list of text blocks, and the block joins it; ``messages`` hold a
string or content blocks (``text``, and ``tool_use``/``tool_result``/images, which hold no
conversation text). The end-user id is ``metadata.user_id``.
"""

from __future__ import annotations

from typing import Any

from ._text import merged_content, parts_text

_TEXT = ("text",)


class _Messages:
    name = "message"
    path = "messages"
    end = b'"message_stop"'

    def conversation(self, payload: dict[str, Any]) -> list[dict[str, Any]] | None:
        messages = payload.get("messages")
        if not (isinstance(messages, list) and all(isinstance(m, dict) for m in messages)):
            return None
        system = parts_text(payload.get("system"), _TEXT)
        opening = [{"role": "system", "content": system}] if system else []
        return opening + [
            {"role": m.get("role"), "content": parts_text(m.get("content"), _TEXT)}
            for m in messages
        ]

    def user(self, payload: dict[str, Any]) -> object:
        metadata = payload.get("metadata")
        return metadata.get("user_id") if isinstance(metadata, dict) else None

    def inject(self, payload: dict[str, Any], block: str) -> None:
        payload["system"] = merged_content(payload.get("system"), block, "text")

    def event_text(self, event: dict[str, Any]) -> str:
        delta = event.get("delta") if event.get("type") == "content_block_delta" else None
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            text = delta.get("text")
            return text if isinstance(text, str) else ""
        return ""

    def answer_text(self, answer: Any) -> str:
        content = answer.get("content") if isinstance(answer, dict) else None
        return parts_text(content, _TEXT)


MESSAGES = _Messages()

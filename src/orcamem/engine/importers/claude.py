"""Claude.ai's data export, ``conversations.json`` (Settings → Privacy → Export data).

A list of conversations (or ``{"conversations": [...]}``), each ``{"uuid", "name",
"created_at", "chat_messages": [{"uuid", "sender": "human" | "assistant", "text",
"content": [{"type": "text", "text"}, ...], "created_at"}]}``, in order. Kept: the text
blocks of each message (its ``text`` when it has no blocks); tool use and results, thinking
and attachments hold no conversation text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ._read import Imported, Source, block_text, field_of

_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def parse(path: Path) -> Iterator[Imported]:
    source = Source(path, "claude", "Claude.ai's conversations.json")
    data = source.json()
    conversations = field_of(data, "conversations") if isinstance(data, dict) else data
    if not isinstance(conversations, list):
        raise source.fail("the file", "not a list of conversations")
    for number, conversation in enumerate(conversations):
        where = f"conversation {number}"
        messages = field_of(conversation, "chat_messages")
        name = field_of(conversation, "uuid")
        if not isinstance(messages, list) or not isinstance(name, str):
            raise source.fail(where, "it has no 'uuid' and 'chat_messages'")
        title = conversation.get("name")
        for index, message in enumerate(messages):
            at = f"{where}, message {index}"
            sender = field_of(message, "sender")
            if sender is not None and not isinstance(sender, str):
                raise source.fail(at, "its 'sender' is not a string ('human' or 'assistant')")
            role = _ROLES.get(sender)
            if role is None:
                continue
            content = message.get("content")
            text = block_text(content) if isinstance(content, list) else ""
            text = (text or str(message.get("text") or "")).strip()
            if not text:
                continue
            yield source.record(
                at,
                text=text,
                occurred_at=source.time(
                    message.get("created_at") or conversation.get("created_at"), at
                ),
                session_id=f"claude:{name}",
                turn_id=str(message.get("uuid") or f"{name}:{index}"),
                role=role,
                meta={"title": title} if isinstance(title, str) and title else {},
            )

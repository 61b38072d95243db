"""ChatGPT's data export, ``conversations.json`` (Settings → Data controls → Export data).

A list of conversations, each ``{"id" | "conversation_id", "title", "create_time",
"current_node", "mapping": {node id: {"message", "parent", "children"}}}``; a message is
``{"id", "author": {"role"}, "create_time" (Unix seconds), "content": {"content_type",
"parts"}, "metadata"}``. The mapping is a tree (an edited or regenerated message branches it):
the conversation as its user last saw it is the path from ``current_node`` up to the root.
Kept: the text of ``user`` and ``assistant`` messages (``text`` and ``multimodal_text``
content, string parts only); system, tool and hidden messages, code runs and browsing hold no
conversation text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..._kernel.ids import sha256
from ._read import Imported, Source, field_of

_KEPT = ("text", "multimodal_text")


def parse(path: Path) -> Iterator[Imported]:
    source = Source(path, "chatgpt", "ChatGPT's conversations.json")
    data = source.json()
    if not isinstance(data, list):
        raise source.fail("the file", "not a list of conversations")
    for number, conversation in enumerate(data):
        where = f"conversation {number}"
        mapping = field_of(conversation, "mapping")
        if not isinstance(mapping, dict):
            raise source.fail(where, "it has no 'mapping' of messages")
        name = conversation.get("conversation_id") or conversation.get("id")
        if not isinstance(name, str):
            opening = [conversation.get("title"), conversation.get("create_time")]
            name = sha256(repr(opening))[:16]
        title = conversation.get("title")
        for node in _branch(mapping, conversation.get("current_node")):
            message = field_of(node, "message")
            role = field_of(field_of(message, "author"), "role")
            if role not in ("user", "assistant"):
                continue
            if field_of(message.get("metadata"), "is_visually_hidden_from_conversation"):
                continue
            content = message.get("content")
            if field_of(content, "content_type") not in _KEPT:
                continue
            parts = field_of(content, "parts") or []
            text = "\n".join(part for part in parts if isinstance(part, str)).strip()
            if not text:
                continue
            at = f"{where}, message {message.get('id')!r}"
            yield source.record(
                at,
                text=text,
                occurred_at=source.time(
                    message.get("create_time") or conversation.get("create_time"), at
                ),
                session_id=f"chatgpt:{name}",
                turn_id=str(message.get("id") or node.get("id")),
                role=role,
                meta={"title": title} if isinstance(title, str) else {},
            )


def _branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root down to ``current`` (else down the last child of each); a
    node id that is not a string names no node."""
    current = _node_id(current)
    if current not in mapping:
        roots = [k for k, n in mapping.items() if _node_id(field_of(n, "parent")) not in mapping]
        current = roots[0] if roots else None
        below: set[str | None] = {current}
        while True:  # down the last child, while it is in the mapping and not seen (a cycle)
            children = field_of(mapping.get(current), "children")
            child = _node_id(children[-1]) if isinstance(children, list) and children else None
            if child not in mapping or child in below:
                break
            below.add(child)
            current = child
    path, seen = [], set()
    while current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        path.append(node if isinstance(node, dict) else {})
        current = _node_id(field_of(node, "parent"))
    return path[::-1]


def _node_id(value: Any) -> str | None:
    return value if isinstance(value, str) else None

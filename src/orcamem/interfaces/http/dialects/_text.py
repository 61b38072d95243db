"""The one rule of how the memory block joins a client's system text, for every dialect."""

from __future__ import annotations

from typing import Any

SEPARATOR = "\n\n"


def joined(own: str, block: str) -> str:
    """The client's own instructions first (they keep their cached prefix), then the block."""
    return f"{own}{SEPARATOR}{block}" if own.strip() else block


def merged_content(content: Any, block: str, part_type: str) -> Any:
    """A system message's content with the block added: a string stays a string; a list of
    parts gets one more text part (of ``part_type``) at its end."""
    if isinstance(content, list):
        return [*content, {"type": part_type, "text": block}]
    return joined(content if isinstance(content, str) else "", block)


def parts_text(content: Any, types: tuple[str | None, ...]) -> str:
    """The text of a content that is a string or a list of parts of the given ``types``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in types
        )
    return ""

"""What the import parsers share: the record they produce, reading a file, times, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..._kernel.clock import format_time, parse_time
from ..._kernel.model import validate_id, validate_text
from ...errors import InvalidInputError


@dataclass(frozen=True)
class Imported:
    """One message or memory of another tool, as the episode it becomes."""

    text: str
    occurred_at: str
    session_id: str
    turn_id: str
    role: str | None = None
    kind: str = "turn"
    meta: dict[str, Any] = field(default_factory=dict)

    def episode(self) -> dict[str, Any]:
        """The ``Memory.add_many`` item."""
        return {
            "text": self.text,
            "kind": self.kind,
            "role": self.role,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "occurred_at": self.occurred_at,
            "meta": {"via": "import", **self.meta},
        }


class Source:
    """One file being parsed: names it, and the record, in every error."""

    def __init__(self, path: Path, fmt: str, what: str) -> None:
        self.path = path
        self.format = fmt
        self.what = what

    def fail(self, where: str, problem: str) -> InvalidInputError:
        return InvalidInputError(
            f"{self.path}: {where}: {problem}; is this {self.what}? "
            f"(`orcamem import --from {self.format}` reads that; nothing was imported)"
        )

    def text(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"cannot read {self.path}: {exc}") from None

    def json(self) -> Any:
        try:
            return json.loads(self.text())
        except ValueError as exc:
            raise self.fail("the file", f"not JSON ({exc})") from None

    def json_lines(self, path: Path | None = None) -> Iterator[tuple[int, Any]]:
        """``(line number, value)`` of each non-blank line of a JSON Lines file."""
        source = self if path is None else Source(path, self.format, self.what)
        for number, line in enumerate(source.text().split("\n"), 1):
            if line.strip():
                try:
                    yield number, json.loads(line)
                except ValueError as exc:
                    raise source.fail(f"line {number}", f"not JSON ({exc})") from None

    def record(
        self,
        where: str,
        *,
        text: str,
        occurred_at: str,
        session_id: str,
        turn_id: str,
        role: str | None = None,
        kind: str = "turn",
        meta: dict[str, Any] | None = None,
    ) -> Imported:
        """A record whose every field passes the engine's validators (else an error naming
        ``where``), so a file is refused whole before anything is written."""
        try:
            return Imported(
                text=validate_text(text, what="text"),
                occurred_at=occurred_at,
                session_id=validate_id(session_id, what="session id"),
                turn_id=validate_id(turn_id, what="message id"),
                role=role,
                kind=kind,
                meta={"source": self.format, **(meta or {})},
            )
        except InvalidInputError as exc:
            raise self.fail(where, str(exc)) from None

    def time(self, value: Any, where: str) -> str:
        """An ISO-8601 string or a Unix time in seconds, as orcamem's UTC stamp."""
        try:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return format_time(datetime.fromtimestamp(value, tz=timezone.utc))
            if isinstance(value, str):
                return format_time(parse_time(value))
        except (InvalidInputError, OverflowError, OSError, ValueError) as exc:
            raise self.fail(where, f"bad time {value!r} ({exc})") from None
        raise self.fail(where, f"no time (got {value!r})")


def field_of(data: Any, name: str) -> Any:
    """``data[name]`` when ``data`` is a dict, else None (a record of another shape)."""
    return data.get(name) if isinstance(data, dict) else None


def block_text(content: Any) -> str:
    """The text of a message content that is a string or a list of ``text`` blocks (Claude's
    and Anthropic's shape; tool calls, tool results, images and thinking hold none)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""

"""The OpenAI Agents SDK's session memory (its ``Session`` protocol) backed by orcamem.

``Runner.run(agent, input, session=OrcamemSession("chat-1", memory, space="alice"))``: the
SDK reads the session's items before a turn and adds the turn's new items after it. Each item
is one episode of the space, in session ``session_id``, the item itself kept whole in
``meta["agents_item"]`` so the history comes back exactly as the SDK wrote it:

- a message (``user``, ``assistant``, ``system``, ``developer``) is a ``turn`` of that role,
  its text the message's text, so it is recalled like any conversation in the space (the
  proxy, ``Memory.recall`` and ``orcamem search`` see it);
- any other item (a function call, its output, reasoning) is a ``tool`` episode whose text
  says what it is (``function_call get_weather {"city": "Lyon"}``).

``pop_item`` and ``clear_session`` delete episodes (the SDK's undo and reset); nothing else
does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

from agents.memory.session import SessionABC

from .._kernel.model import Episode, storable_text, validate_id
from ..engine.memory import Memory
from ..errors import InvalidInputError, NotFoundError

__all__ = ["OrcamemSession"]

_KEY = "agents_item"
_PAGE = 500
_ROLES = ("user", "assistant", "system", "developer")
_TEXT = (None, "text", "input_text", "output_text")


class OrcamemSession(SessionABC):
    """A conversation's items as episodes of ``space`` in session ``session_id``."""

    def __init__(self, session_id: str, memory: Memory, *, space: str | None = None) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInputError(
                f"OrcamemSession needs an orcamem Memory, got {type(memory).__name__}: "
                "OrcamemSession('chat-1', Memory('memory.db'))"
            )
        self.session_id = validate_id(session_id, what="session_id")
        self.memory = memory
        self.space = space

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items oldest first; with ``limit``, the latest ``limit`` of them."""
        items = await asyncio.to_thread(lambda: [item for _, item in self._items()])
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Append the items, in one transaction a batch (``Memory.add_many``)."""
        episodes = [_episode(item, self.session_id) for item in items]
        if episodes:
            await asyncio.to_thread(self.memory.add_many, episodes, space=self.space)

    async def pop_item(self) -> Any | None:
        """Delete the latest item and return it (``None`` when there is none)."""

        def pop() -> Any | None:
            found = list(self._items())
            if not found:
                return None
            episode, item = found[-1]
            self.memory.forget(episode.id, space=self.space)
            return item

        return await asyncio.to_thread(pop)

    async def clear_session(self) -> None:
        """Delete every item of this session (the space's other sessions stay)."""

        def clear() -> None:
            for episode, _ in list(self._items()):
                with suppress(NotFoundError):  # deleted meanwhile
                    self.memory.forget(episode.id, space=self.space)

        await asyncio.to_thread(clear)

    def _items(self) -> Iterator[tuple[Episode, Any]]:
        if self.memory.space_info(self.space) is None:
            return
        after = 0
        while page := self.memory.episodes_page(
            space=self.space, session_id=self.session_id, after=after, limit=_PAGE
        ):
            for episode in page:
                if _KEY in episode.meta:
                    yield episode, episode.meta[_KEY]
            after = page[-1].id


def _episode(item: Any, session_id: str) -> dict[str, Any]:
    """The ``Memory.add_many`` item for one SDK item (a dict of JSON values)."""
    if not isinstance(item, dict):
        raise InvalidInputError(
            f"a session item must be a dict (a Responses input item), got {type(item).__name__}"
        )
    role = item.get("role")
    # the searchable text made storable (a tool's coloured output holds ESC, a pasted log may
    # pass 1 MiB): a session must not fail the run it records; the item itself is kept whole
    text = storable_text(_text(item.get("content"))).strip()
    meta = {"via": "agents", _KEY: item}
    if role in _ROLES and item.get("type", "message") == "message" and text:
        return {"text": text, "kind": "turn", "role": role, "session_id": session_id, "meta": meta}
    kind = str(item.get("type") or "item")
    detail = item.get("name") or ""
    body = item.get("arguments") or item.get("output") or text
    words = " ".join(str(part) for part in (kind, detail, _short(body)) if part)
    return {"text": storable_text(words), "kind": "tool", "session_id": session_id, "meta": meta}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in _TEXT
        )
    return ""


def _short(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"

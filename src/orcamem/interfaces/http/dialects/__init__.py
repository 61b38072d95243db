"""The wire formats the proxy gives memory to, one module each: OpenAI chat completions
(``chat``), OpenAI Responses (``responses``) and Anthropic Messages (``messages``).

A dialect says only what differs between them: where the conversation is in a request (as
plain ``{"role", "content"}`` messages, for recall, the session and the user turn), how the
memory block joins the client's own system text (merged into it: never a second system
message, which picky chat templates refuse), and where the reply's text is in a JSON answer
and in a stream's events. Everything else (spaces, sessions, turn ids, the hold of the
answer's end until the reply is recorded) is the proxy's, once, in ``proxy.py``.
"""

from __future__ import annotations

from typing import Any, Protocol

from .chat import CHAT
from .messages import MESSAGES
from .responses import RESPONSES

__all__ = ["CHAT", "MESSAGES", "RESPONSES", "Dialect"]


class Dialect(Protocol):
    name: str
    """What the route is called in logs and errors."""
    path: str
    """The upstream path under the upstream base (``chat/completions``)."""
    end: bytes
    """The bytes that begin a stream's last event: from them on it is held until the reply is
    recorded (chosen so a model's text, JSON-escaped in a delta, cannot contain them: chat's
    ``[DONE]`` only after a raw line break, which a JSON string never holds)."""

    def conversation(self, payload: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The request's messages as ``{"role", "content": str}``, oldest first; ``None`` when
        the request carries none orcamem can read (it is forwarded without memory)."""

    def user(self, payload: dict[str, Any]) -> object:
        """The request's end-user id field, if the format has one."""

    def inject(self, payload: dict[str, Any], block: str) -> None:
        """Merge the memory block into the request's own system text (or add it there)."""

    def event_text(self, event: dict[str, Any]) -> str:
        """The reply text one stream event adds."""

    def answer_text(self, answer: Any) -> str:
        """The reply text of a whole JSON answer."""

"""What every chat model answers, and its one explicit empty answer, :data:`NOTHING`.

A model, a job handler and an extractor all say "nothing worth keeping" with the same string,
and every caller tells it apart from an empty result with :func:`is_nothing`. This module
imports nothing heavy: the job queue uses it on the engine's offline path.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["NOTHING", "ChatModel", "is_nothing"]

NOTHING = "NOTHING"
"""The explicit "nothing worth keeping" answer, returned as this very string."""

_QUOTES = "\"'`“”‘’"


def is_nothing(value: Any) -> bool:
    """Is ``value`` the explicit empty answer?

    Only a string that is ``NOTHING`` once whitespace and quotes around it are dropped, in any
    case: models write ``nothing``, ``"NOTHING"`` or ```` `Nothing` ````. ``NOTHING.`` or
    ``Nothing to report`` are not it, and neither is an empty value.

    >>> is_nothing(' "nothing" '), is_nothing("NOTHING."), is_nothing([])
    (True, False, False)
    """
    return isinstance(value, str) and value.strip().strip(_QUOTES).strip().upper() == NOTHING


@runtime_checkable
class ChatModel(Protocol):
    """A chat model that answers one JSON value per call, within a deadline."""

    @property
    def id(self) -> str:
        """Provider, model and endpoint, e.g. ``openai:smollm2@http://127.0.0.1:8012/v1``."""
        ...

    def complete_json(
        self,
        system: str,
        user: str,
        schema: dict[str, Any],
        *,
        deadline_s: float = 60.0,
        max_tokens: int = 1024,
    ) -> Any:
        """Ask once; return the parsed JSON value that fits ``schema``, or :data:`NOTHING`.

        Raises:
            ModelTimeoutError: no complete answer within ``deadline_s`` seconds (wall clock).
            ModelOutputError: the reply was empty, not JSON, or did not fit the schema.
            ModelError: the server could not be reached or answered an HTTP error.
        """
        ...

    def close(self) -> None: ...

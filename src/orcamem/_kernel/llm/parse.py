"""A model's reply → one JSON value that fits the schema, or NOTHING (pure: no I/O).

Chat models wrap JSON in code fences and prose, or say NOTHING in any case and quoting;
:func:`parse_json_reply` takes the value out, and :func:`checked_reply` / :func:`checked_value`
also check it against the caller's schema: off-schema output is a :class:`ModelOutputError`,
never a value.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ...errors import ModelOutputError
from .protocol import NOTHING, is_nothing
from .schema import schema_errors

__all__ = ["checked_reply", "checked_value", "excerpt", "parse_json_reply"]

_EXCERPT = 200
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)(?:\n[ \t]*```|```|$)", re.DOTALL)
_MISSING = object()
_DECODER = json.JSONDecoder()


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """``text`` on one line, quoted, cut after ``limit`` characters: for error messages."""
    text = " ".join(text.split())
    return '"' + (text if len(text) <= limit else text[:limit] + "…") + '"'


def parse_json_reply(text: str | None) -> Any:
    """The JSON value in a model's reply, or :data:`NOTHING`.

    Tolerates what chat models wrap around JSON: code fences (```` ```json ````), prose before or
    after it (the first complete object or array is taken), and ``NOTHING`` in any case, quoted
    or fenced.

    >>> parse_json_reply('Sure! ```json\\n{"items": []}\\n``` Hope that helps.')
    {'items': []}
    >>> parse_json_reply(' "nothing" ')
    'NOTHING'

    Raises:
        ModelOutputError: the reply is empty or holds no complete JSON value (the message quotes
            the start of the reply).
    """
    if text is None or not text.strip():
        raise ModelOutputError(
            "the model's reply is empty: retry, or raise max_tokens if it ran out of room"
        )
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1), text] if fenced else [text]
    if any(is_nothing(candidate) for candidate in candidates):
        return NOTHING
    for candidate in candidates:
        value = _first_json(candidate)
        if value is not _MISSING:
            return value
    raise ModelOutputError(
        f"the model's reply holds no complete JSON value: {excerpt(text)} "
        "(a server that ignores the schema, or a reply cut at max_tokens: bound the schema, "
        "raise max_tokens, or use another model)"
    )


def _first_json(text: str) -> Any:
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    tried = 0
    for match in re.finditer(r"[\[{]", stripped):
        tried += 1
        if tried > 64:  # a reply is bounded by max_tokens; this bounds the work on garbage too
            break
        try:
            value, _ = _DECODER.raw_decode(stripped, match.start())
        except ValueError:
            continue
        return value
    return _MISSING


def checked_reply(text: str | None, schema: dict[str, Any], *, truncated: bool) -> Any:
    """The reply text parsed and checked against ``schema`` (NOTHING passes).

    ``truncated``: the server cut the reply at ``max_tokens``, which the error then says.
    """
    try:
        value = parse_json_reply(text)
    except ModelOutputError as exc:
        if truncated:
            raise ModelOutputError(
                f"the model's reply was cut at max_tokens before its JSON was complete: "
                f"{excerpt(text or '')} (raise max_tokens or bound the schema's lengths)"
            ) from None
        raise exc from None
    return checked_value(value, schema, text or "")


def checked_value(value: Any, schema: dict[str, Any], text: str) -> Any:
    """``value`` if it fits ``schema``, :data:`NOTHING` if it is NOTHING (``text``: the reply,
    quoted in the error)."""
    if is_nothing(value):
        return NOTHING
    problems = schema_errors(value, schema)
    if problems:
        shown = "; ".join(problems[:3]) + (
            f"; and {len(problems) - 3} more" if problems[3:] else ""
        )
        raise ModelOutputError(
            f"the model's JSON does not fit the schema ({shown}): {excerpt(text)} "
            "(a server that ignores the schema, or a model too small for it)"
        )
    return value

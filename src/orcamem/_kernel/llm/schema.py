"""The JSON Schemas sent to models: bounded, offered with NOTHING, and checked on the way back.

Schemas should be length-bounded so a small model cannot ramble past ``max_tokens``: set
``maxLength`` on strings and ``maxItems`` on arrays, or pass the schema through :func:`bounded`.
Every schema is sent as "the caller's schema, or the string NOTHING" (:func:`or_nothing`).
What comes back is validated by ``jsonschema`` (:func:`schema_errors`), so every keyword a
server may enforce is checked the way the standard says, not the way a hand-written subset does.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema import Draft202012Validator, SchemaError, ValidationError
from jsonschema.exceptions import best_match

from ...errors import InvalidInputError
from .protocol import NOTHING

__all__ = ["NOTHING_SCHEMA", "bounded", "or_nothing", "schema_errors", "schema_prompt"]

NOTHING_SCHEMA: dict[str, Any] = {"type": "string", "enum": [NOTHING]}
"""The alternative every sent schema carries, so a constrained model can still say NOTHING."""

_SIZES = {
    "maxLength": ("characters", "at most"),
    "minLength": ("characters", "at least"),
    "maxItems": ("items", "at most"),
    "minItems": ("items", "at least"),
}
_SHOWN = 60
"""A value quoted in a reason is cut after this many characters (a model's text can be long)."""


def schema_errors(value: Any, schema: dict[str, Any]) -> list[str]:
    """Where ``value`` breaks ``schema``, as ``"$.items[0].value: …"`` lines (empty: it fits).

    Validation is JSON Schema 2020-12 (``jsonschema``); each line is the JSON path of what is
    wrong and why, with the limit a length or count broke.

    >>> schema_errors({"tags": ["a", "b"]}, {"properties": {"tags": {"maxItems": 1}}})
    ['$.tags: 2 items, at most 1 allowed']

    Raises:
        InvalidInputError: ``schema`` itself is not a valid JSON Schema.
    """
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidInputError(
            f"the schema is not a valid JSON Schema ({_line(exc)}): fix the schema"
        ) from None
    return [_line(error) for error in Draft202012Validator(schema).iter_errors(value)]


def _line(error: ValidationError | SchemaError) -> str:
    return f"{error.json_path}: {_reason(error)}"


def _reason(error: ValidationError | SchemaError) -> str:
    """jsonschema's reason, with the broken limit spelled out and a long value cut short."""
    if error.validator in _SIZES and isinstance(error.instance, (str, list)):
        unit, bound = _SIZES[str(error.validator)]
        return f"{len(error.instance)} {unit}, {bound} {error.validator_value} allowed"
    if error.validator in ("anyOf", "oneOf") and error.context:
        return f"fits none of {error.validator} ({_line(best_match(error.context))})"
    shown = repr(error.instance)
    if len(shown) > _SHOWN:
        return error.message.replace(shown, shown[:_SHOWN] + "…")
    return error.message


def bounded(
    schema: dict[str, Any],
    *,
    max_string: int = 300,
    max_items: int = 20,
    closed: bool = True,
) -> dict[str, Any]:
    """A copy of ``schema`` in which every length is bounded.

    Strings without ``maxLength`` get ``max_string``, arrays without ``maxItems`` get
    ``max_items`` and, with ``closed``, objects without ``additionalProperties`` get ``false``
    (strict OpenAI servers require it; grammar-constrained ones then cannot wander into extra
    keys). Bounds already set are kept. Nested ``properties``, ``items``, ``anyOf``, ``oneOf``,
    ``allOf`` and ``$defs`` are bounded too.

    >>> bounded({"type": "array", "items": {"type": "string"}}, max_string=80, max_items=5)
    {'type': 'array', 'items': {'type': 'string', 'maxLength': 80}, 'maxItems': 5}
    """
    if max_string < 1 or max_items < 1:
        raise InvalidInputError("bounded(): max_string and max_items must be at least 1")
    out = copy.deepcopy(schema)
    _bound(out, max_string, max_items, closed)
    return out


def _bound(schema: Any, max_string: int, max_items: int, closed: bool) -> None:
    if not isinstance(schema, dict):
        return
    types = schema.get("type")
    names = types if isinstance(types, list) else [types]
    if "string" in names:
        schema.setdefault("maxLength", max_string)
    if "array" in names:
        schema.setdefault("maxItems", max_items)
    if "object" in names and closed:
        schema.setdefault("additionalProperties", False)
    for key in ("properties", "$defs", "definitions"):
        for child in (schema.get(key) or {}).values():
            _bound(child, max_string, max_items, closed)
    for key in ("anyOf", "oneOf", "allOf"):
        for child in schema.get(key) or []:
            _bound(child, max_string, max_items, closed)
    for key in ("items", "additionalProperties"):
        _bound(schema.get(key), max_string, max_items, closed)


def schema_prompt(system: str, schema: dict[str, Any]) -> str:
    """``system`` followed by the instruction to answer with JSON that fits ``schema``."""
    return (
        f"{system.rstrip()}\n\n"
        "Answer with a single JSON value that fits this JSON Schema, and nothing else:\n"
        f"{json.dumps(schema, ensure_ascii=False, separators=(',', ':'))}"
    )


def or_nothing(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or the string ``"NOTHING"``: what the clients send.

    A server that decodes under a grammar (llama.cpp, Ollama, vLLM) or a forced tool call
    (Claude) can only produce what the schema allows, so the explicit empty answer must be in
    it. Tested on SmolLM2-135M with llama.cpp: with the alternative at the root it answers
    ``"NOTHING"`` for small talk and the items otherwise; wrapped in an ``{"answer": …}``
    envelope it invented items instead.
    """
    return {"anyOf": [schema, NOTHING_SCHEMA]}

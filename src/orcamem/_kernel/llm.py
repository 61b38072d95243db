"""Chat model clients for the background work: a system and a user message in, one JSON value out.

Models never run on the read path (DESIGN.md, principle 2). Consolidation calls them off the hot
path, under a deadline, and treats what they say as a claim that code verifies. Two clients:

- :class:`OpenAIChat` — any OpenAI-compatible ``POST {base_url}/chat/completions`` server
  (llama.cpp, Ollama, vLLM); ``orcamem sleep --upstream URL --model M``.
- :class:`AnthropicChat` — the Anthropic Messages API with ``$ANTHROPIC_API_KEY``; the model is
  ``$ORCAMEM_ANTHROPIC_MODEL`` or a current Claude model.

:func:`make_chat_model` picks one from the configuration (or none: many users run without a
model). Every client answers :meth:`ChatModel.complete_json`:

>>> model = make_chat_model("http://127.0.0.1:8012/v1", "smollm2")   # doctest: +SKIP
>>> model.complete_json(
...     "Extract the user's stated facts.",
...     "I moved to Pune last week.",
...     bounded({"type": "object", "properties": {"items": {"type": "array",
...              "items": {"type": "string"}}}, "required": ["items"]}),
...     deadline_s=30,
... )                                                                 # doctest: +SKIP
{'items': ['The user moved to Pune.']}

Structured output is sent the way each server accepts it. OpenAI, vLLM and Ollama take
``response_format={"type": "json_schema", ...}``; the llama.cpp servers take
``{"type": "json_object", "schema": ...}`` and turn the schema into a grammar. With
``structured="auto"`` (the default) a client tries the first and, when the server refuses it
(400/422, or any error naming ``response_format``: llama-cpp-python's server answers 500) or
ignores it (the reply does not fit the schema), the second, and keeps using whichever worked. Claude gets the schema as the input schema of a single tool it must call. The schema is
also written into the system prompt, for servers that take neither. Every schema is sent as
"the caller's schema, or the string NOTHING" (:func:`or_nothing`): under a grammar or a forced
tool call a model can only say what the schema allows, and NOTHING is the explicit "nothing
worth keeping" answer that callers tell apart from an empty result. (OpenAI's own API wants an
object at the root of a strict schema, so it refuses this one; it is not a target yet.)

Schemas should be length-bounded so a small model cannot ramble past ``max_tokens``: set
``maxLength`` on strings and ``maxItems`` on arrays, or pass the schema through :func:`bounded`.
Whatever comes back is checked against the schema (:func:`schema_errors`): off-schema output is a
:class:`ModelOutputError`, never a value.

Deadlines are wall-clock totals per call: every HTTP phase gets only the time that is left, a
watchdog cuts a reply that trickles in past the deadline, and a fallback retry shares the same
deadline. Clients hold no global state and no lock shared with any store; one client (one
``httpx.Client``) may be used from many threads.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import socket
import threading
import time
from typing import Any, Literal, Protocol, runtime_checkable

import httpx

from ..errors import ClosedError, InvalidInputError, ModelError, ModelOutputError, ModelTimeoutError
from .config import anthropic_api_key, anthropic_base_url, anthropic_model, openai_api_key

__all__ = [
    "NOTHING",
    "NOTHING_SCHEMA",
    "AnthropicChat",
    "ChatModel",
    "OpenAIChat",
    "bounded",
    "make_chat_model",
    "or_nothing",
    "parse_json_reply",
    "schema_errors",
    "schema_prompt",
]

NOTHING = "NOTHING"
"""A model's explicit "nothing worth keeping" answer, returned as this very string."""

Structured = Literal["auto", "json_schema", "json_object"]

MAX_REPLY_BYTES = 4 * 1024 * 1024
"""A server's answer larger than this is refused (a chat reply is a few kilobytes)."""

_EXCERPT = 200
_ANSWER_TOOL = "answer"


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


# -- parsing and checking replies (pure) --------------------------------------------------------

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)(?:\n[ \t]*```|```|$)", re.DOTALL)
_QUOTES = "\"'`“”‘’"


def _excerpt(text: str, limit: int = _EXCERPT) -> str:
    text = " ".join(text.split())
    return '"' + (text if len(text) <= limit else text[:limit] + "…") + '"'


def _is_nothing(text: str) -> bool:
    return text.strip().strip(_QUOTES).strip().upper() == NOTHING


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
    for candidate in candidates:
        if _is_nothing(candidate):
            return NOTHING
    for candidate in candidates:
        value = _first_json(candidate)
        if value is not _MISSING:
            return value
    raise ModelOutputError(
        f"the model's reply holds no complete JSON value: {_excerpt(text)} "
        "(a server that ignores the schema, or a reply cut at max_tokens: bound the schema, "
        "raise max_tokens, or use another model)"
    )


_MISSING = object()
_DECODER = json.JSONDecoder()


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


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _has_type(value: Any, name: str) -> bool:
    if name in ("number", "integer") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def schema_errors(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema``, as ``"$.items[0].value: …"`` lines (empty: it fits).

    Checks the JSON Schema keywords a structured-output server enforces: ``type``, ``enum``,
    ``const``, ``properties``, ``required``, ``additionalProperties: false``, ``items``,
    ``minItems``/``maxItems``, ``minLength``/``maxLength``, ``minimum``/``maximum`` and
    ``anyOf``. Other keywords are not checked.
    """
    errors: list[str] = []
    if not isinstance(schema, dict):
        return errors
    if "anyOf" in schema:
        options = [schema_errors(value, option, path) for option in schema["anyOf"]]
        if all(options):
            errors.append(f"{path}: fits none of anyOf ({options[0][0]})")
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_has_type(value, name) for name in names):
            return [*errors, f"{path}: expected {' or '.join(names)}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{path}: missing required {name!r}")
        for name, item in value.items():
            if name in properties:
                errors.extend(schema_errors(item, properties[name], f"{path}.{name}"))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected property {name!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors.extend(schema_errors(item, schema["additionalProperties"], f"{path}.{name}"))
    elif isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: {len(value)} items, at most {schema['maxItems']} allowed")
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: {len(value)} items, at least {schema['minItems']} needed")
        if isinstance(schema.get("items"), dict):
            for index, item in enumerate(value):
                errors.extend(schema_errors(item, schema["items"], f"{path}[{index}]"))
    elif isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: {len(value)} characters, at most {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: {len(value)} characters, at least {schema['minLength']}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is above the maximum {schema['maximum']}")
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is below the minimum {schema['minimum']}")
    return errors


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


NOTHING_SCHEMA: dict[str, Any] = {"type": "string", "enum": [NOTHING]}
"""The alternative every sent schema carries, so a constrained model can still say NOTHING."""


def or_nothing(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or the string ``"NOTHING"``: what the clients send.

    A server that decodes under a grammar (llama.cpp, Ollama, vLLM) or a forced tool call
    (Claude) can only produce what the schema allows, so the explicit empty answer must be in
    it. Tested on SmolLM2-135M with llama.cpp: with the alternative at the root it answers
    ``"NOTHING"`` for small talk and the items otherwise; wrapped in an ``{"answer": …}``
    envelope it invented items instead.
    """
    return {"anyOf": [schema, NOTHING_SCHEMA]}


def _checked(text: str | None, schema: dict[str, Any], *, truncated: bool) -> Any:
    """The reply parsed and checked against ``schema`` (NOTHING passes)."""
    try:
        value = parse_json_reply(text)
    except ModelOutputError as exc:
        if truncated:
            raise ModelOutputError(
                f"the model's reply was cut at max_tokens before its JSON was complete: "
                f"{_excerpt(text or '')} (raise max_tokens or bound the schema's lengths)"
            ) from None
        raise exc from None
    return _fitting(value, schema, text or "")


def _fitting(value: Any, schema: dict[str, Any], text: str) -> Any:
    if value is NOTHING or (isinstance(value, str) and _is_nothing(value)):
        return NOTHING
    problems = schema_errors(value, schema)
    if problems:
        shown = "; ".join(problems[:3]) + (
            f"; and {len(problems) - 3} more" if problems[3:] else ""
        )
        raise ModelOutputError(
            f"the model's JSON does not fit the schema ({shown}): {_excerpt(text)} "
            "(a server that ignores the schema, or a model too small for it)"
        )
    return value


# -- HTTP with a wall-clock deadline ------------------------------------------------------------


class _Deadline:
    """A wall-clock budget, measured on the monotonic clock."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0


class _Watchdog:
    """Cuts the connection at the deadline.

    httpx's timeouts bound each connect, write and read, not their sum, and a read timeout
    restarts with every byte, so a reply that trickles in could hold the caller far past the
    deadline. The watchdog learns the socket as soon as it is connected (httpcore's ``trace``
    extension) or, for a pooled connection, when the answer's headers arrive (the
    ``network_stream`` extension), and shuts it down when the time is up: the blocked read then
    fails at once.
    """

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._fired = False
        self._done = False
        self._socket: socket.socket | None = None
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete":
            self.watch(info.get("return_value"))

    def watch(self, stream: Any) -> None:
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._socket = sock
            if self._fired and not self._done:
                self._shutdown()

    def _fire(self) -> None:
        with self._lock:
            self._fired = True
            if not self._done:
                self._shutdown()

    def _shutdown(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):  # already closed: nothing left to cut
                self._socket.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def _timeout_error(label: str, url: str, deadline: _Deadline) -> ModelTimeoutError:
    return ModelTimeoutError(
        f"{label} {url} gave no complete answer within the {deadline.seconds:g} s deadline: "
        "raise deadline_s, lower max_tokens, or use a faster model"
    )


def _post(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    deadline: _Deadline,
    *,
    label: str,
) -> tuple[int, str]:
    """POST ``body`` as JSON; the status and text of the answer, all within ``deadline``."""
    remaining = deadline.remaining()
    if remaining <= 0:
        raise _timeout_error(label, url, deadline)
    watchdog = _Watchdog(remaining)
    request = client.build_request(
        "POST",
        url,
        json=body,
        timeout=httpx.Timeout(remaining),
        extensions={"trace": watchdog.trace},
    )
    try:
        try:
            response = client.send(request, stream=True)
        except httpx.HTTPError as exc:
            if isinstance(exc, httpx.TimeoutException) or deadline.expired():
                raise _timeout_error(label, url, deadline) from exc
            raise ModelError(
                f"{label} {url} is unreachable ({type(exc).__name__}: {exc}): "
                "start it, or fix the URL"
            ) from exc
        try:
            watchdog.watch(response.extensions.get("network_stream"))
            return response.status_code, _read_body(response, deadline, label=label, url=url)
        finally:
            watchdog.cancel()  # before the connection goes back to the pool
            response.close()
    finally:
        watchdog.cancel()


def _read_body(response: httpx.Response, deadline: _Deadline, *, label: str, url: str) -> str:
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():  # decoded
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise ModelError(
                    f"{label} {url} sent more than {MAX_REPLY_BYTES} bytes: is the URL a chat "
                    "completions endpoint?"
                )
            if deadline.expired():
                raise _timeout_error(label, url, deadline)
    except httpx.HTTPError as exc:
        if deadline.expired():
            raise _timeout_error(label, url, deadline) from exc
        raise ModelError(
            f"{label} {url} dropped the connection mid-answer ({type(exc).__name__}: {exc}): "
            "check the server's log"
        ) from exc
    return b"".join(chunks).decode(response.charset_encoding or "utf-8", errors="replace")


def _hint(status: int, key_name: str) -> str:
    if status in (401, 403):
        return f"check the API key ({key_name})"
    if status == 404:
        return "check the URL and the model name"
    if status == 429:
        return "the server is rate limiting: retry later"
    if status in (500, 502, 503, 504, 529):
        return "the server failed or is overloaded: check its log, or retry later"
    return "check the model name and the request"


def _http_error(
    label: str, url: str, status: int, text: str, key_name: str, hint: str | None = None
) -> ModelError:
    return ModelError(
        f"{label} {url} answered {status}: {_excerpt(text, 300)}: {hint or _hint(status, key_name)}"
    )


def _check_call(deadline_s: float, max_tokens: int) -> None:
    if not deadline_s > 0:
        raise InvalidInputError(f"deadline_s={deadline_s!r}: use a positive number of seconds")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInputError(f"max_tokens={max_tokens!r}: use a positive integer")


def _loads(label: str, url: str, text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ModelError(
            f"{label} {url} answered something that is not a JSON object: {_excerpt(text)}"
        )
    return data


# -- OpenAI-compatible servers ------------------------------------------------------------------


class OpenAIChat:
    """Any OpenAI-compatible ``POST {base_url}/chat/completions`` server.

    Args:
        model: the model name the server knows (``None`` sends none: llama.cpp and vLLM then
            use the model they serve).
        base_url: the API root, e.g. ``http://127.0.0.1:8080/v1`` or ``http://localhost:11434/v1``.
        api_key: sent as ``Authorization: Bearer``; local servers need none.
        structured: how the schema is sent: ``json_schema`` (OpenAI, vLLM, Ollama),
            ``json_object`` (llama.cpp: ``{"type": "json_object", "schema": …}``) or ``auto``
            (try the first, fall back to the second when refused or ignored; the choice is
            kept for the client's life).
        temperature: sampling temperature (0: the most likely answer, repeatable).

    >>> with OpenAIChat("smollm2", "http://127.0.0.1:8012/v1") as model:  # doctest: +SKIP
    ...     model.complete_json("Name one colour.", "", {"type": "string", "maxLength": 20})
    'blue'
    """

    def __init__(
        self,
        model: str | None,
        base_url: str,
        *,
        api_key: str | None = None,
        structured: Structured = "auto",
        temperature: float = 0.0,
    ) -> None:
        if structured not in ("auto", "json_schema", "json_object"):
            raise InvalidInputError(
                f"structured={structured!r}: use 'auto', 'json_schema' or 'json_object'"
            )
        _check_url(base_url)
        self._model = model or None
        self._base_url = base_url.rstrip("/")
        self._url = self._base_url + "/chat/completions"
        self._structured: Structured = structured
        self._temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(headers=headers)
        self._closed = False

    @property
    def id(self) -> str:
        return f"openai:{self._model or 'default'}@{self._base_url}"

    @property
    def structured(self) -> Structured:
        """The way schemas are sent now: ``auto`` until a call has shown what the server takes."""
        return self._structured

    def complete_json(
        self,
        system: str,
        user: str,
        schema: dict[str, Any],
        *,
        deadline_s: float = 60.0,
        max_tokens: int = 1024,
    ) -> Any:
        """See :meth:`ChatModel.complete_json`."""
        self._check_open()
        _check_call(deadline_s, max_tokens)
        deadline = _Deadline(deadline_s)
        mode = self._structured
        if mode != "auto":
            return self._ask_checked(mode, system, user, schema, max_tokens, deadline)

        status, text, truncated = self._ask(
            "json_schema", system, user, schema, max_tokens, deadline
        )
        if _refused_format(status, text):  # the server does not take json_schema: try json_object
            value = self._ask_checked("json_object", system, user, schema, max_tokens, deadline)
            self._structured = "json_object"
            return value
        if status != 200:
            raise _http_error("model server", self._url, status, text, "OPENAI_API_KEY")
        try:
            value = _checked(text, schema, truncated=truncated)
        except ModelOutputError:
            if truncated:  # cut short, not ignored: another format would not help
                raise
            # A server that honours json_schema answers within it; this one ignored it.
            value = self._ask_checked("json_object", system, user, schema, max_tokens, deadline)
            self._structured = "json_object"
            return value
        if value is not NOTHING:  # a fitting answer shows the server took the schema
            self._structured = "json_schema"
        return value

    def _ask_checked(
        self,
        mode: Structured,
        system: str,
        user: str,
        schema: dict[str, Any],
        max_tokens: int,
        deadline: _Deadline,
    ) -> Any:
        status, text, truncated = self._ask(mode, system, user, schema, max_tokens, deadline)
        if status != 200:
            hint = None
            if "response_format" in text:
                other = "json_schema" if mode == "json_object" else "json_object"
                hint = (
                    f"the server does not take response_format {mode}: "
                    f"use structured='{other}' or 'auto'"
                )
            raise _http_error("model server", self._url, status, text, "OPENAI_API_KEY", hint)
        return _checked(text, schema, truncated=truncated)

    def _ask(
        self,
        mode: Structured,
        system: str,
        user: str,
        schema: dict[str, Any],
        max_tokens: int,
        deadline: _Deadline,
    ) -> tuple[int, str, bool]:
        """One request: ``(status, reply text or error body, cut at max_tokens)``."""
        sent = or_nothing(schema)
        body: dict[str, Any] = {
            "messages": [
                {"role": "system", "content": schema_prompt(system, sent)},
                {"role": "user", "content": user},
            ],
            "max_tokens": max_tokens,
            "temperature": self._temperature,
            "stream": False,
            "response_format": _response_format(mode, sent),
        }
        if self._model:
            body["model"] = self._model
        status, text = _post(self._client, self._url, body, deadline, label="model server")
        if status != 200:
            return status, text, False
        data = _loads("model server", self._url, text)
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise ModelError(
                f"model server {self._url} sent no OpenAI-style 'choices': {_excerpt(text)}: "
                "is the URL the API root (ending in /v1)?"
            ) from None
        return (
            status,
            content if isinstance(content, str) else "",
            choice.get("finish_reason") == "length",
        )

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        if not self._closed:
            self._closed = True
            self._client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"{self.id} was closed: make a new client")

    def __enter__(self) -> OpenAIChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAIChat({self._model!r}, {self._base_url!r}, structured={self._structured!r})"


def _refused_format(status: int, text: str) -> bool:
    """Did the server refuse ``response_format`` itself? 400/422 do; llama-cpp-python's server
    answers its validation error with 500, naming the field."""
    if status in (400, 422):
        return True
    return status >= 400 and ("response_format" in text or "json_schema" in text)


def _response_format(mode: Structured, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": True},
    }


# -- Anthropic ----------------------------------------------------------------------------------


class AnthropicChat:
    """The Anthropic Messages API (``POST {base_url}/v1/messages``).

    The schema becomes the ``input_schema`` of one tool, ``answer``, which the model is made to
    call (``tool_choice``): its input is ``{"answer": <a value that fits the schema, or
    "NOTHING">}`` (a tool's input must be an object). A reply in plain text instead is parsed
    like any other model's.

    Args:
        api_key: defaults to ``$ANTHROPIC_API_KEY``.
        model: defaults to ``$ORCAMEM_ANTHROPIC_MODEL``, else a current Claude model
            (:data:`orcamem._kernel.config.DEFAULT_ANTHROPIC_MODEL`).
        base_url: defaults to ``$ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``.
        temperature: sampling temperature.

    Raises:
        ModelError: no API key was given or set.
    """

    VERSION = "2023-06-01"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        temperature: float = 0.0,
    ) -> None:
        key = api_key or anthropic_api_key()
        if not key:
            raise ModelError(
                "no Anthropic API key: set ANTHROPIC_API_KEY (or pass api_key=), "
                "or use a local model with --upstream URL"
            )
        self._model = model or anthropic_model()
        self._base_url = (base_url or anthropic_base_url()).rstrip("/")
        _check_url(self._base_url)
        self._url = self._base_url + "/v1/messages"
        self._temperature = temperature
        self._client = httpx.Client(
            headers={
                "x-api-key": key,
                "anthropic-version": self.VERSION,
                "content-type": "application/json",
            }
        )
        self._closed = False

    @property
    def id(self) -> str:
        return f"anthropic:{self._model}"

    @property
    def model(self) -> str:
        return self._model

    def complete_json(
        self,
        system: str,
        user: str,
        schema: dict[str, Any],
        *,
        deadline_s: float = 60.0,
        max_tokens: int = 1024,
    ) -> Any:
        """See :meth:`ChatModel.complete_json`."""
        if self._closed:
            raise ClosedError(f"{self.id} was closed: make a new client")
        _check_call(deadline_s, max_tokens)
        deadline = _Deadline(deadline_s)
        # A tool's input must be an object: the answer (or NOTHING) is its one property.
        input_schema = {
            "type": "object",
            "properties": {"answer": or_nothing(schema)},
            "required": ["answer"],
        }
        body = {
            "model": self._model,
            "max_tokens": max_tokens,
            "temperature": self._temperature,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "tools": [
                {
                    "name": _ANSWER_TOOL,
                    "description": (
                        "Give your answer as `answer`: a JSON value that fits the schema, or "
                        f'the string "{NOTHING}" when there is nothing to give.'
                    ),
                    "input_schema": input_schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": _ANSWER_TOOL},
        }
        status, text = _post(self._client, self._url, body, deadline, label="Anthropic API")
        if status != 200:
            raise _http_error("Anthropic API", self._url, status, text, "ANTHROPIC_API_KEY")
        data = _loads("Anthropic API", self._url, text)
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise ModelError(
                f"Anthropic API {self._url} sent no 'content' list: {_excerpt(text)}: "
                "is the URL the API root (without /v1)?"
            )
        truncated = data.get("stop_reason") == "max_tokens"
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                tool_input = block.get("input")
                as_text = json.dumps(tool_input, ensure_ascii=False)
                if not isinstance(tool_input, dict) or "answer" not in tool_input:
                    raise ModelOutputError(
                        f"the model called the answer tool without an 'answer': {_excerpt(as_text)}"
                    )
                return _fitting(tool_input["answer"], schema, as_text)
        # No tool call: the model answered in prose (e.g. NOTHING), which is parsed as text.
        reply = "".join(
            block.get("text", "")
            for block in blocks
            if isinstance(block, dict) and block.get("type") == "text"
        )
        return _checked(reply, schema, truncated=truncated)

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        if not self._closed:
            self._closed = True
            self._client.close()

    def __enter__(self) -> AnthropicChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AnthropicChat(model={self._model!r}, base_url={self._base_url!r})"


# -- choosing one -------------------------------------------------------------------------------


def _check_url(url: str) -> None:
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise InvalidInputError(
            f"model URL {url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8080/v1)"
        )


def make_chat_model(upstream: str | None = None, model: str | None = None) -> ChatModel | None:
    """The chat model the configuration names, or ``None`` when there is none.

    - ``upstream`` (an OpenAI-compatible API root) → :class:`OpenAIChat` with ``model`` and
      ``$OPENAI_API_KEY`` if set;
    - else ``$ANTHROPIC_API_KEY`` set → :class:`AnthropicChat` (``model`` overrides
      ``$ORCAMEM_ANTHROPIC_MODEL``);
    - else ``None``: callers fall back to the rule-based consolidator.
    """
    if upstream:
        return OpenAIChat(model, upstream, api_key=openai_api_key())
    if anthropic_api_key():
        return AnthropicChat(model=model)
    return None

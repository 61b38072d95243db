"""The memory proxy: an OpenAI- and Anthropic-compatible ``/v1`` that recalls, records the
question, forwards, and records the answer before the client has all of it.

Point any OpenAI client at ``http://127.0.0.1:8080/v1`` (an Anthropic client at
``http://127.0.0.1:8080``) and every chat completion (``/v1/chat/completions``), response
(``/v1/responses``) and message (``/v1/messages``) goes, in the request's own wire format
(``dialects``: one module each):

1. **space** from the ``x-orma-space`` header (or ``x-orcamem-space``), else the request's
   end-user id (``user``; Anthropic's ``metadata.user_id``), else ``default``, resolved
   through the caller's key (``Principal.space``: a key for space A gets 403 for space B);
2. **recall**: ``Memory.context`` (the core engine's packing) for the latest user message,
   run in the threadpool, its block merged into the client's own system text (the first
   system/developer message, ``instructions``, ``system``), or added as that text when there
   is none: never a second system message. A failure inside recall is logged and the request
   goes on without memory (answer header ``x-orcamem-memory: failed``);
3. **record the question**: the latest user message is committed as a ``user`` turn before
   anything is forwarded (a store failure is the client's error; nothing is forwarded);
4. **forward** to ``<upstream>/<the same path>`` with every other field untouched (``model``
   is filled from the settings only when the request names none);
5. **relay** the upstream's status, headers (less hop-by-hop ones) and body byte for byte,
   SSE events included, **holding back the end**: a JSON answer is held whole, a stream from
   its last event on (``[DONE]``, ``response.completed``, ``message_stop``), until the reply
   is committed as an ``assistant`` turn. So a client that has the whole answer has it
   recorded.

The two turns are one exchange: same space, session and ``turn_id``, both written with
``observe(once=True)``. The session is the ``x-orcamem-session`` header, else the conversation's
own (``conversation_session``: a digest of its first system and first user message, which a
client re-sends in every request), so each chat is its own session. The ``turn_id`` (sent back
as ``x-orcamem-turn``) is the request's ``Idempotency-Key``, else ``xch-`` and a digest of the
session, the user's text and the message before it, so the same request re-sent (a regenerate,
a client replaying its history) is the same exchange and is stored once, with its first answer
(a tool loop's later requests: the question's id and ``-<step>``).
A user turn with no assistant turn of its ``turn_id`` is a question whose answer never came
(upstream error, client gone before any text, crash). A client that disconnects mid-stream
closes the upstream call; the text so far is recorded with ``meta.partial = true``.

What is recorded is the turn's own words: orcamem's markup (``## Memory``, ``[LOG: …]``,
``[FORBIDDEN: …]``, ``[EVENT: …]``, ``[user.x: …]``) is stripped from both turns, and from the
reply every run it copied from the block this exchange injected (``recall.blocks.strip``;
``meta.stripped`` counts the characters dropped). A turn that was nothing but that is not kept.

``GET /v1/models`` and every other ``/v1/*`` path are passed through unchanged (method, query,
body, status, headers, body bytes). The upstream's errors come back as they are; orcamem's own
errors use the one JSON shape of ``errors.py``: 502 unreachable upstream, 504 no answer in time,
503 no upstream configured.

Upstream credentials: when the server requires orcamem keys (``require_keys``) the client's
``Authorization``/``x-api-key`` is its *orcamem* key and is never forwarded; the upstream gets
``Bearer $OPENAI_API_KEY`` and ``x-api-key: $ANTHROPIC_API_KEY`` (Anthropic's header) for those
that are set, else no credentials. Without orcamem keys the client's own ``Authorization`` and
``x-api-key`` are forwarded, unless the matching variable is set, which wins.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any
from urllib.parse import quote

import anyio
import httpx
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope, Send

from ..._kernel.env import anthropic_api_key, openai_api_key
from ..._kernel.http import async_client
from ..._kernel.ids import random_id, sha256
from ..._kernel.model import DEFAULT_SPACE, storable_text, validate_id
from ..._kernel.names import SPACE
from ..._kernel.redact import safe_url
from ..._kernel.text import message_text
from ..._kernel.trace import traced
from ...engine.keys import Principal
from ...engine.memory import Memory
from ...errors import (
    InvalidInputError,
    ModelError,
    UpstreamNotConfiguredError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)
from ...recall.blocks.strip import strip
from .deps import get_principal
from .dialects import CHAT, MESSAGES, RESPONSES, Dialect
from .errors import error_body
from .settings import ServerSettings
from .upstream import borrow, hold

__all__ = [
    "UpstreamNotConfiguredError",
    "UpstreamTimeoutError",
    "UpstreamUnreachableError",
    "conversation_session",
    "install",
    "router",
    "user_space",
]

log = logging.getLogger("orcamem.proxy")

SPACE_HEADERS = ("x-orma-space", "x-orcamem-space")
SESSION_HEADER = "x-orcamem-session"
IDEMPOTENCY_HEADER = "idempotency-key"
TURN_HEADER = "x-orcamem-turn"
DEFAULT_SESSION = "proxy"
_OWN_HEADERS = frozenset({*SPACE_HEADERS, SESSION_HEADER})
# RFC 9110 §7.6.1 hop-by-hop fields; ``host`` and ``content-length`` are recomputed per hop.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
     "te", "trailer", "trailers", "transfer-encoding", "upgrade"}
)  # fmt: skip
_NOT_FORWARDED = _HOP_BY_HOP | _OWN_HEADERS | {"host", "content-length", "expect"}
_ORCAMEM_CREDENTIALS = ("authorization", "x-api-key")
_PASS_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
_MAX_REPLY_BYTES = 8 * 1024 * 1024
_STATE = "upstream_http"
_PATH_SAFE = "/:@!$&'()*+,;=-._~"  # RFC 3986 pchar: the decoded path param is re-encoded


# Proxy routes speak OpenAI's wire format (OpenAI publishes that schema); they stay out of
# orcamem's OpenAPI document, whose fuzzing (schemathesis) would otherwise hit the upstream.
router = APIRouter(tags=["proxy"], include_in_schema=False)


# -- lifecycle ----------------------------------------------------------------------------


def _new_client(app: FastAPI) -> httpx.AsyncClient:
    seconds = app.state.settings.upstream_timeout_s
    return async_client(timeout=seconds, connect=min(10.0, seconds), keepalive=32)


def install(app: FastAPI) -> None:
    """Mount the proxy routes and give the app one pooled ``httpx.AsyncClient`` to the upstream,
    open for the app's lifetime (``upstream.hold``)."""
    if getattr(app.state, "proxy_installed", False):
        return  # idempotent: create_app and a test may both install it
    app.state.proxy_installed = True
    app.include_router(router)
    hold(app, _STATE, _new_client)


# -- routes -------------------------------------------------------------------------------
# The dependencies here are async twins of ``deps``: FastAPI runs every sync dependency in the
# threadpool, and on a busy 2-core machine each hop costs ~0.2-0.5 ms of the proxy's 5 ms
# budget. Only a key check reads the database; it alone goes to a worker thread.


async def _caller(request: Request) -> Principal:
    """``deps.get_principal``: a worker thread only when there are keys to look up."""
    return await get_principal(request)


async def _memory(request: Request) -> Memory:
    return request.app.state.memory


async def _settings(request: Request) -> ServerSettings:
    return request.app.state.settings


CallerDep = Annotated[Principal, Depends(_caller)]
ProxyMemoryDep = Annotated[Memory, Depends(_memory)]
ProxySettingsDep = Annotated[ServerSettings, Depends(_settings)]


@router.post("/v1/chat/completions", summary="Chat completion with memory (OpenAI-compatible)")
@traced("proxy")  # recall and the recorded turn are its children; the relay runs after it
async def chat_completions(
    request: Request, principal: CallerDep, memory: ProxyMemoryDep, settings: ProxySettingsDep
) -> Response:
    return await _with_memory(CHAT, request, principal, memory, settings)


@router.post("/v1/responses", summary="OpenAI Responses with memory")
async def responses(
    request: Request, principal: CallerDep, memory: ProxyMemoryDep, settings: ProxySettingsDep
) -> Response:
    return await _with_memory(RESPONSES, request, principal, memory, settings)


@router.post("/v1/messages", summary="Anthropic Messages with memory")
async def messages(
    request: Request, principal: CallerDep, memory: ProxyMemoryDep, settings: ProxySettingsDep
) -> Response:
    return await _with_memory(MESSAGES, request, principal, memory, settings)


async def _with_memory(
    dialect: Dialect,
    request: Request,
    principal: Principal,
    memory: Memory,
    settings: ServerSettings,
) -> Response:
    """One exchange in any dialect: recall, merge the block, record the question, forward,
    relay with the end held until the reply is recorded."""
    body = await _read_body(request, settings.proxy_max_body_bytes)
    if body is None:
        return _too_large(settings.proxy_max_body_bytes)
    payload = _json_object(body, dialect)
    space = _space(request.headers, dialect.user(payload), principal)  # 400/403 first
    conversation = dialect.conversation(payload)
    session = _session(request.headers, conversation or [])
    asked = _asked(conversation) if conversation else _Asked()
    user_text = asked.unanswered
    turn_id = _turn_id(request.headers, session, asked)
    base = _upstream_base(settings)
    changed = False
    recalled = "none"
    block = ""
    if conversation is not None:
        try:
            built = await anyio.to_thread.run_sync(
                partial(memory.context, conversation, space=space, surface="proxy")
            )
        except Exception as exc:  # recall must never break chat: forward without memory
            log.warning("recall failed for space %r, forwarding without memory: %s", space, exc)
            recalled = "failed"
        else:
            if built.block:
                block = built.block
                dialect.inject(payload, block)
                changed, recalled = True, "injected"
    if not payload.get("model") and settings.model:
        payload["model"] = settings.model
        changed = True
    if changed:
        body = _json_bytes(payload)
    exchange = _Exchange(memory, space, session, turn_id, block)
    if user_text.strip():  # committed before the upstream hears of it
        await anyio.to_thread.run_sync(exchange.record, "user", user_text, False)
    return _Relay(
        request.app,
        _upstream_request(request, settings, "POST", f"{base}/{dialect.path}", body, decoded=True),
        reply=_Reply(dialect),
        on_reply=exchange.reply,
        extra_headers=[
            ("x-orcamem-space", space),
            ("x-orcamem-memory", recalled),
            (TURN_HEADER, exchange.turn_id),
        ],
    )


@router.get("/v1/models", summary="The upstream's models", dependencies=[Depends(_caller)])
async def models(request: Request, settings: ProxySettingsDep) -> Response:
    return await _pass_through(request, settings, "models")


@router.api_route("/v1/{path:path}", methods=_PASS_METHODS, dependencies=[Depends(_caller)])
async def pass_through(path: str, request: Request, settings: ProxySettingsDep) -> Response:
    return await _pass_through(request, settings, path)


async def _pass_through(request: Request, settings: ServerSettings, path: str) -> Response:
    base = _upstream_base(settings)
    if any(part in (".", "..") for part in path.split("/")):
        raise InvalidInputError(f"path /v1/{path} has '.' or '..' segments: name the path plainly")
    body = await _read_body(request, settings.proxy_max_body_bytes)
    if body is None:
        return _too_large(settings.proxy_max_body_bytes)
    url = f"{base}/{quote(path, safe=_PATH_SAFE)}"
    if request.url.query:
        url = f"{url}?{request.url.query}"
    return _Relay(request.app, _upstream_request(request, settings, request.method, url, body))


# -- request side -------------------------------------------------------------------------


def _upstream_base(settings: ServerSettings) -> str:
    if settings.upstream_base is None:
        raise UpstreamNotConfiguredError(
            "no upstream model server is configured, so there is nothing to forward to: "
            "restart with `orcamem up --upstream URL --model M` "
            "(e.g. --upstream http://127.0.0.1:11434/v1 --model llama3.2:3b for Ollama)"
        )
    return settings.upstream_base


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The whole body, or None once it passes ``limit`` (chunked bodies carry no length)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> JSONResponse:
    message = (
        f"request body is over the proxy's {limit:,}-byte limit: send less per request "
        "(fewer or smaller messages and images), or raise ORCAMEM_PROXY_MAX_BODY_MB"
    )
    return JSONResponse(error_body("PayloadTooLarge", message, 413), 413)


def _json_object(body: bytes, dialect: Dialect) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise InvalidInputError(
            f"the request body is not JSON ({exc}): send a {dialect.name} request object"
        ) from None
    if not isinstance(payload, dict):
        raise InvalidInputError(
            f"the request body must be a JSON object: send a {dialect.name} request object"
        )
    return payload


def _json_bytes(payload: dict[str, Any]) -> bytes:
    """The changed request as UTF-8 JSON; a lone surrogate the client sent as a ``\\ud800``
    escape (valid JSON, not valid UTF-8) is sent on as that escape, not a server error."""
    try:
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload).encode("ascii")


def _space(headers: Mapping[str, str], user: object, principal: Principal) -> str:
    """The space named by header, else by the end-user id field, else ``default``;
    authorized."""
    for name in SPACE_HEADERS:
        value = headers.get(name)
        if value is not None:
            return principal.space(value.strip())
    if isinstance(user, str) and user.strip():
        return principal.space(user_space(user))
    return principal.space(DEFAULT_SPACE)


_SLUG_JUNK = re.compile(r"[^a-z0-9._@-]+")
_SLUG_CHARS = 100


def user_space(user: str) -> str:
    """The space of an OpenAI ``user`` value: itself if it is a valid space name, else a slug.

    A free-text value (``"John Smith"``, an e-mail with a ``+``…, anything over 128 characters)
    maps deterministically to ``user:<slug>-<hash>``: the slug is the value lowercased, accents
    dropped, every run of other characters turned into ``-`` (at most 100 characters), and the
    hash the first 12 hex digits of the SHA-256 of the exact value, so two different values
    never share a space. A value with nothing to slug (``"日本語"``) is ``user:<hash>``.

    >>> user_space("user_alice")
    'user_alice'
    >>> user_space("John Smith")
    'user:john-smith-ef61a579c907'
    """
    if SPACE.ok(user):
        return user
    ascii_text = unicodedata.normalize("NFKD", user).encode("ascii", "ignore").decode("ascii")
    slug = _SLUG_JUNK.sub("-", ascii_text.lower())[:_SLUG_CHARS].strip("-.")
    tag = sha256(user)[:12]
    return SPACE.validate(f"user:{slug}-{tag}" if slug else f"user:{tag}")


def _session(headers: Mapping[str, str], messages: list[dict[str, Any]]) -> str:
    """The ``x-orcamem-session`` header, else the conversation's own session."""
    value = headers.get(SESSION_HEADER)
    if value is None:
        return conversation_session(messages)
    if not value.strip() or len(value) > 256:
        raise InvalidInputError(
            f"{SESSION_HEADER} must be a non-blank id of at most 256 characters"
        )
    return value


def conversation_session(messages: list[dict[str, Any]]) -> str:
    """``chat-`` and a digest of how the conversation opens: its first system message and its
    first user message, which a client re-sends unchanged in every request of the conversation
    (``proxy`` when there is no user message).

    >>> conversation_session([{"role": "user", "content": "Hi, I live in Pune."}])
    'chat-16cddbc2f285b842'
    """
    opening = {"system": "", "user": ""}
    for message in messages:
        role = "system" if message.get("role") == "developer" else message.get("role")
        if isinstance(role, str) and role in opening and not opening[role]:
            opening[role] = message_text(message.get("content"))
        if opening["user"].strip():
            return "chat-" + sha256(json.dumps([opening["system"], opening["user"]]))[:16]
    return DEFAULT_SESSION


def _turn_id(headers: Mapping[str, str], session: str, asked: _Asked) -> str:
    """The exchange's turn id: the client's ``Idempotency-Key`` (a retry names the same
    exchange), else one derived from the session, the user's text and the message before it
    (the same question re-sent, a regenerate, is the same exchange; a second "continue" after
    a new answer is not), with ``-<step>`` for a tool loop's later request (its retry is the
    same step; its answer is the question's turn id and a step), else a fresh one."""
    key = headers.get(IDEMPOTENCY_HEADER)
    if key is not None:
        return validate_id(key, what="the Idempotency-Key header")
    if asked.text.strip():
        base = "xch-" + sha256(f"{session}\n{asked.before}\n{asked.text}")[:16]
        return f"{base}-{asked.step}" if asked.answered else base
    return random_id("xch-", 16)


def _upstream_request(
    request: Request,
    settings: ServerSettings,
    method: str,
    url: str,
    body: bytes,
    *,
    decoded: bool = False,
) -> httpx.Request:
    """The request for the upstream: the client's headers less hop-by-hop and orcamem ones.

    ``decoded`` asks the upstream for an uncompressed body (so the reply can be read for the
    episode log while its bytes pass through unchanged).
    """
    connection = {t.strip().lower() for t in request.headers.get("connection", "").split(",")}
    dropped = _NOT_FORWARDED | connection
    if settings.require_keys:
        dropped = dropped | set(_ORCAMEM_CREDENTIALS)
    headers = [(k, v) for k, v in request.headers.items() if k not in dropped]
    key = openai_api_key()
    if key:
        headers = [(k, v) for k, v in headers if k != "authorization"]
        headers.append(("authorization", f"Bearer {key}"))
    key = anthropic_api_key()  # an Anthropic upstream reads x-api-key
    if key:
        headers = [(k, v) for k, v in headers if k != "x-api-key"]
        headers.append(("x-api-key", key))
    if decoded:
        headers = [(k, v) for k, v in headers if k != "accept-encoding"]
        headers.append(("accept-encoding", "identity"))
    return httpx.Request(method, url, headers=headers, content=body)


@dataclass(frozen=True)
class _Asked:
    """A request's latest user message and where it stands in the conversation."""

    text: str = ""
    """Its text (``""``: the request has no user message with text)."""
    before: str = ""
    """The text of the message before it: tells one "continue" from the next."""
    step: int = 0
    """How many messages follow it: a tool loop's later requests re-send it (0: none)."""
    answered: bool = False
    """An assistant message follows it: it was recorded with the loop's first request."""

    @property
    def unanswered(self) -> str:
        """The text to record as the user's turn: only when no assistant message follows."""
        return "" if self.answered else self.text


def _asked(messages: list[dict[str, Any]]) -> _Asked:
    """The latest user message with text. In a tool loop (user → assistant tool call → tool →
    …) the same user message comes back in every request; it is recorded once, with the
    loop's first request, and each later request's answer under its own step."""
    for at in range(len(messages) - 1, -1, -1):
        if messages[at].get("role") != "user":
            continue
        text = message_text(messages[at].get("content"))
        if text.strip():
            after = messages[at + 1 :]
            return _Asked(
                text,
                message_text(messages[at - 1].get("content")) if at else "",
                len(after),
                any(message.get("role") == "assistant" for message in after),
            )
    return _Asked()


# -- response side ------------------------------------------------------------------------


class _Reply:
    """Collects the assistant's text from the upstream's bytes as they pass (SSE or JSON),
    reading each event or the whole answer as its ``dialect`` says."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.sse = False
        self._buffer = bytearray()
        self._data: list[str] = []
        self._parts: list[str] = []
        self.broke_off = False
        """A stream event said ``error``: the model server gave up mid-answer (a partial reply)."""

    def start(self, headers: httpx.Headers) -> None:
        self.sse = headers.get("content-type", "").startswith("text/event-stream")

    def feed(self, chunk: bytes) -> None:
        if len(self._buffer) + len(chunk) > _MAX_REPLY_BYTES:
            return
        self._buffer += chunk
        if self.sse and b"\n" in chunk:
            *lines, rest = self._buffer.split(b"\n")
            self._buffer = bytearray(rest)
            for line in lines:
                self._line(line.rstrip(b"\r").decode("utf-8", "replace"))

    def _line(self, line: str) -> None:
        if not line:
            self._dispatch()
        elif line.startswith("data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)

    def _dispatch(self) -> None:
        data, self._data = "\n".join(self._data), []
        if not data or data.strip() == "[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError:
            return
        if isinstance(event, dict):
            failed = event.get("type") in ("error", "response.failed") or bool(event.get("error"))
            self.broke_off = self.broke_off or failed
            self._parts.append(self.dialect.event_text(event))

    def text(self) -> str:
        """The reply so far: the joined text of the stream's events, or the JSON answer's."""
        if self.sse:
            if self._buffer.strip():  # a last event without its blank line
                self._line(self._buffer.rstrip(b"\r").decode("utf-8", "replace"))
            self._buffer.clear()
            self._dispatch()
            return "".join(self._parts)
        try:
            return self.dialect.answer_text(json.loads(self._buffer))
        except ValueError:
            return ""


class _Held:
    """The end of a 2xx answer, kept from the client until its reply is on disk.

    A JSON answer is kept whole (its headers too). A stream passes at once up to ``end``, the
    bytes that begin its last event (``[DONE]`` in chat completions), which are kept with all
    that follows (a chunk ending in what may begin ``end``, such as ``[D``, waits for the next
    one to tell). A stream without ``end`` is held at its very end: the client sees the body
    finish only after the write.
    """

    def __init__(self, sse: bool, end: bytes = CHAT.end) -> None:
        self.sse = sse
        self.end = end
        self._kept = bytearray()
        self._maybe = b""  # a tail that may begin ``end``

    @property
    def rest(self) -> bytes:
        """Everything not yet passed on."""
        return self._maybe + bytes(self._kept)

    def pass_on(self, chunk: bytes) -> bytes:
        """The part of ``chunk`` the client may have now; the rest is kept."""
        if not self.sse or self._kept:
            self._kept += chunk
            return b""
        window, self._maybe = self._maybe + chunk, b""
        at = window.find(self.end)
        if at >= 0:
            self._kept += window[at:]
            return window[:at]
        for size in range(min(len(self.end) - 1, len(window)), 0, -1):
            if window.endswith(self.end[:size]):
                window, self._maybe = window[:-size], window[-size:]
                break
        return window


@dataclass
class _Outcome:
    """How one relayed exchange ended."""

    status: int | None = None
    """The upstream's status; None if it never answered."""
    completed: bool = False
    """The whole upstream body reached the client."""
    disconnected: bool = False
    """The client went away before the body was complete."""
    recorded: bool = False
    """The reply's write was made (or tried): a partial one is not written after it."""


def _response_headers(upstream: httpx.Response) -> list[tuple[bytes, bytes]]:
    connection = {t.strip().lower() for t in upstream.headers.get("connection", "").split(",")}
    dropped = _HOP_BY_HOP | connection
    return [
        (name.lower(), value)
        for name, value in upstream.headers.raw
        if name.decode("latin-1").lower() not in dropped
    ]


class _Relay(Response):
    """An ASGI response that makes the upstream call itself and relays it byte for byte.

    Owning the whole exchange lets it watch the client from the first moment: a disconnect
    while the upstream is still thinking (no headers yet) or streaming cancels the upstream
    call and closes its connection. With ``on_reply`` a 2xx answer's end is held back
    (:class:`_Held`) until ``on_reply(text, partial=False)`` has returned; if it raises, the
    client never gets a complete answer (an error status, or a cut stream). A reply cut short
    (client gone, upstream broke off) is passed on with ``partial=True`` afterwards.
    """

    def __init__(
        self,
        app: FastAPI,
        upstream_request: httpx.Request,
        *,
        reply: _Reply | None = None,
        on_reply: Callable[[str, bool], Awaitable[None]] | None = None,
        extra_headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        self.app = app
        self.upstream_request = upstream_request
        self.reply = reply
        self.on_reply = on_reply
        self.extra_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in extra_headers]
        self.status_code = 502  # replaced by the upstream's
        self.background = None
        self.raw_headers = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        outcome = _Outcome()
        holder: list[httpx.Response] = []
        failure: BaseException | None = None
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        async with borrow(self.app, _STATE, _new_client) as client:
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(_watch_disconnect, receive, outcome, group.cancel_scope)
                    try:
                        await self._exchange(client, holder, outcome, scope, receive, tracked)
                    except OSError:  # ASGI 2.4 servers raise on send after a disconnect
                        outcome.disconnected = not outcome.completed
                    except Exception as exc:
                        failure = exc
                    group.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True):
                    for upstream in holder:
                        await upstream.aclose()  # mid-body: closes the upstream connection
                    await self._keep_partial(outcome)
        if not started and outcome.disconnected:  # middleware still expects a response
            gone = error_body("ClientClosedRequest", "the client closed the request", 499)
            with suppress(OSError):
                await JSONResponse(gone, 499)(scope, receive, send)
        if failure is not None:
            raise failure
        if self.background is not None:
            await self.background()

    def _recording(self, status: int) -> _Reply | None:
        """The reply reader when this answer's text is to be recorded (a 2xx chat answer)."""
        return self.reply if self.on_reply is not None and 200 <= status < 300 else None

    async def _keep_partial(self, outcome: _Outcome) -> None:
        """Record what a 2xx answer said before it was cut short (nothing to acknowledge)."""
        reply = None if outcome.status is None else self._recording(outcome.status)
        if reply is None or outcome.recorded or self.on_reply is None:
            return
        outcome.recorded = True
        try:
            await self.on_reply(reply.text(), True)
        except Exception as exc:
            log.warning("could not record the partial reply: %s", exc)

    async def _exchange(
        self,
        client: httpx.AsyncClient,
        holder: list[httpx.Response],
        outcome: _Outcome,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        url = safe_url(str(self.upstream_request.url.copy_with(query=None)))  # for messages
        try:
            upstream = await client.send(self.upstream_request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as exc:
            error: ModelError = UpstreamUnreachableError(
                f"cannot reach the upstream model server at {url} ({type(exc).__name__}: "
                f"{exc or 'no answer'}): check that it is running and that the URL is right "
                "(`curl <upstream>/models`), or restart with `orcamem up --upstream URL`"
            )
        except httpx.TimeoutException:
            error = UpstreamTimeoutError(
                f"the upstream model server at {url} sent no answer within "
                f"{client.timeout.read:g} s: try a smaller request or a faster model, or "
                "raise the proxy's upstream timeout (ORCAMEM_UPSTREAM_TIMEOUT, in seconds)"
            )
        except httpx.HTTPError as exc:
            error = UpstreamUnreachableError(
                f"the call to the upstream model server at {url} failed "
                f"({type(exc).__name__}: {exc}): check the upstream URL and that it is running"
            )
        else:
            holder.append(upstream)
            await self._relay(upstream, outcome, send)
            return
        log.warning("%s", error)
        outcome.status, outcome.completed = error.status, True  # answered: not a disconnect
        answer = JSONResponse(
            error_body(type(error).__name__, str(error), error.status), error.status
        )
        answer.raw_headers.extend(self.extra_headers)  # which space and exchange it was
        await answer(scope, receive, send)

    async def _relay(self, upstream: httpx.Response, outcome: _Outcome, send: Send) -> None:
        outcome.status = upstream.status_code
        headers = _response_headers(upstream) + self.extra_headers
        start = {"type": "http.response.start", "status": upstream.status_code, "headers": headers}
        reply = self._recording(upstream.status_code)
        held = None
        if reply is not None:
            reply.start(upstream.headers)
            held = _Held(reply.sse, reply.dialect.end)
        if held is None or held.sse:
            await send(start)
        try:
            async for chunk in upstream.aiter_raw():
                if reply is not None:
                    reply.feed(chunk)
                now = chunk if held is None else held.pass_on(chunk)
                if now:
                    await send({"type": "http.response.body", "body": now, "more_body": True})
        except httpx.HTTPError as exc:
            # Too late for a status: re-raising makes the server drop the client's connection,
            # the way the upstream dropped ours (no error handler claims an httpx error).
            log.warning("the upstream broke off its answer: %s: %s", type(exc).__name__, exc)
            raise
        rest = b""
        if reply is not None and held is not None and self.on_reply is not None:
            outcome.recorded = True
            text = reply.text()
            await self.on_reply(text, reply.broke_off)  # raises: the client gets no whole answer
            if not held.sse:
                await send(start)
            rest = held.rest
        await send({"type": "http.response.body", "body": rest, "more_body": False})
        outcome.completed = True


async def _watch_disconnect(receive: Receive, outcome: _Outcome, scope: anyio.CancelScope) -> None:
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            outcome.disconnected = not outcome.completed
            scope.cancel()
            return


# -- the episode log ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Exchange:
    """One chat completion's place in the episode log: its turns share space, session, turn id."""

    memory: Memory
    space: str
    session: str
    turn_id: str
    block: str = ""
    """The memory block this exchange injected: a reply's runs copied from it are not kept."""

    def record(self, role: str, text: str, partial_reply: bool) -> None:
        """Commit one turn of the exchange, once (a retried ``Idempotency-Key`` writes none),
        without orcamem's markup (``blocks.strip``); a turn that was nothing else is not kept.
        What the log cannot hold is left out, never refused (the exchange is relayed whole): a
        control character, and all past the first MiB (``meta.cut``: characters not kept)."""
        kept = strip(text, self.block if role == "assistant" else "")
        stored = storable_text(kept)
        if not stored.strip():
            return
        meta: dict[str, Any] = {"via": "proxy"}
        if partial_reply:
            meta["partial"] = True
        if len(kept) < len(text):
            meta["stripped"] = len(text) - len(kept)
        if len(stored) < len(kept):
            meta["cut"] = len(kept) - len(stored)
        self.memory.observe(
            role,
            stored,
            session_id=self.session,
            turn_id=self.turn_id,
            space=self.space,
            meta=meta,
            once=True,
        )

    async def reply(self, text: str, partial_reply: bool) -> None:
        """Commit the assistant's text (a tool call alone has none and records nothing)."""
        if text.strip():
            await anyio.to_thread.run_sync(self.record, "assistant", text, partial_reply)

"""HTTP for the model clients: one JSON POST within a wall-clock deadline, clear errors.

Deadlines are wall-clock totals per call: every HTTP phase gets only the time that is left, a
watchdog cuts a reply that trickles in past the deadline, and a fallback retry shares the same
deadline. Clients hold no global state and no lock shared with any store; one client (one
``httpx.Client``) may be used from many threads.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx

from ...errors import (
    ClosedError,
    InvalidInputError,
    ModelError,
    ModelOutputError,
    ModelTimeoutError,
)
from ..http import client
from ..redact import safe_url
from .parse import excerpt

__all__ = [
    "MAX_REPLY_BYTES",
    "Deadline",
    "PooledClient",
    "check_call",
    "check_url",
    "http_error",
    "loads",
    "post",
]

MAX_REPLY_BYTES = 4 * 1024 * 1024
"""A server's answer larger than this is refused (a chat reply is a few kilobytes)."""

_Self = TypeVar("_Self", bound="PooledClient")


class PooledClient(ABC):
    """What every model client shares: one connection pool for its life, closed once."""

    id: str

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._client = client(timeout=60.0, headers=headers)  # each call sets its deadline's
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"{self.id} was closed: make a new client")

    def complete_json(
        self,
        system: str,
        user: str,
        schema: dict[str, Any],
        *,
        deadline_s: float = 60.0,
        max_tokens: int = 1024,
    ) -> Any:
        """See :meth:`ChatModel.complete_json`: checked here once, answered by ``_complete``."""
        self._check_open()
        check_call(deadline_s, max_tokens)
        return self._complete(system, user, schema, Deadline(deadline_s), max_tokens)

    @abstractmethod
    def _complete(
        self, system: str, user: str, schema: dict[str, Any], deadline: Deadline, max_tokens: int
    ) -> Any:
        """One call to the model's API within ``deadline``: the checked JSON answer."""

    def close(self) -> None:
        """Close the connection pool (idempotent)."""
        if not self._closed:
            self._closed = True
            self._client.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Deadline:
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


def _timeout_error(label: str, url: str, deadline: Deadline) -> ModelTimeoutError:
    return ModelTimeoutError(
        f"{label} {safe_url(url)} gave no complete answer within the {deadline.seconds:g} s deadline: "
        "raise deadline_s, lower max_tokens, or use a faster model"
    )


def post(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    deadline: Deadline,
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
                f"{label} {safe_url(url)} is unreachable ({type(exc).__name__}: {exc}): "
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


def _read_body(response: httpx.Response, deadline: Deadline, *, label: str, url: str) -> str:
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():  # decoded
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise ModelError(
                    f"{label} {safe_url(url)} sent more than {MAX_REPLY_BYTES} bytes: is the URL a chat "
                    "completions endpoint?"
                )
            if deadline.expired():
                raise _timeout_error(label, url, deadline)
    except httpx.HTTPError as exc:
        if deadline.expired():
            raise _timeout_error(label, url, deadline) from exc
        raise ModelError(
            f"{label} {safe_url(url)} dropped the connection mid-answer ({type(exc).__name__}: {exc}): "
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


def http_error(
    label: str, url: str, status: int, text: str, key_name: str, hint: str | None = None
) -> ModelError:
    """A server's HTTP error, quoting its answer, with what to check next."""
    return ModelError(
        f"{label} {safe_url(url)} answered {status}: {excerpt(text, 300)}: {hint or _hint(status, key_name)}"
    )


def check_call(deadline_s: float, max_tokens: int) -> None:
    """Refuse a call's bad arguments before anything is sent."""
    if not deadline_s > 0:
        raise InvalidInputError(f"deadline_s={deadline_s!r}: use a positive number of seconds")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInputError(f"max_tokens={max_tokens!r}: use a positive integer")


def loads(label: str, url: str, text: str) -> dict[str, Any]:
    """A successful answer's JSON object.

    Raises:
        ModelOutputError: the server answered (HTTP 200) but not with a JSON object: an
            answer that cannot be parsed, not a failed call (the Memory Bank's processor
            tells the two apart, seed 002).
    """
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ModelOutputError(
            f"{label} {safe_url(url)} answered something that is not a JSON object: {excerpt(text)}"
        )
    return data


def check_url(url: str) -> None:
    """Refuse a model URL that is not http(s) when the client is made, not at its first call."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise InvalidInputError(
            f"model URL {url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8080/v1)"
        )

"""The one place orcamem builds an HTTP client: explicit timeouts, the environment ignored.

Every client (the model clients, the embedder, the S3 store, the proxy, the UI pass-through,
the benchmarks) comes from :func:`client` or :func:`async_client`, so none waits on httpx's
default timeout by accident and none picks up ``HTTP_PROXY``, ``.netrc`` or ``SSL_CERT_FILE``
from the environment (``trust_env=False``): orcamem talks to exactly what its settings name.

>>> with client(timeout=5.0, base_url="http://127.0.0.1:8080") as http:  # doctest: +SKIP
...     http.get("/health")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ..errors import InvalidInputError

__all__ = ["async_client", "client"]

KEEPALIVE = 20
"""Idle connections a client keeps open for reuse (httpx's own default)."""


def client(
    *,
    timeout: float,
    connect: float | None = None,
    base_url: str = "",
    headers: Mapping[str, str] | None = None,
    keepalive: int = KEEPALIVE,
) -> httpx.Client:
    """A pooled ``httpx.Client``; see :func:`async_client` for the arguments."""
    return httpx.Client(**_options(timeout, connect, base_url, headers, keepalive))


def async_client(
    *,
    timeout: float,
    connect: float | None = None,
    base_url: str = "",
    headers: Mapping[str, str] | None = None,
    keepalive: int = KEEPALIVE,
) -> httpx.AsyncClient:
    """A pooled ``httpx.AsyncClient``.

    Args:
        timeout: seconds each phase (connect, write, each read, waiting for the pool) may take;
            a request may pass its own ``timeout=`` instead.
        connect: seconds to connect, when that should be shorter than ``timeout``.
        base_url: the root that relative request URLs are joined to.
        headers: sent with every request.
        keepalive: idle connections kept open for reuse.

    Raises:
        InvalidInputError: a timeout that is not a positive number of seconds.
    """
    return httpx.AsyncClient(**_options(timeout, connect, base_url, headers, keepalive))


def _options(
    timeout: float,
    connect: float | None,
    base_url: str,
    headers: Mapping[str, str] | None,
    keepalive: int,
) -> dict[str, Any]:
    connect = timeout if connect is None else connect
    for name, seconds in (("timeout", timeout), ("connect", connect)):
        if not (isinstance(seconds, (int, float)) and seconds > 0):
            raise InvalidInputError(f"{name}={seconds!r}: use a positive number of seconds")
    return {
        "timeout": httpx.Timeout(timeout, connect=connect),
        "base_url": base_url,
        "headers": dict(headers or {}),
        "limits": httpx.Limits(max_keepalive_connections=keepalive),
        "trust_env": False,
    }

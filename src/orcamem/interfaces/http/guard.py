"""The two checks every request passes before routing, whatever part of the app it reaches.

``HostGuard`` (DNS rebinding): a web page the user visits can point a name it controls at
127.0.0.1 and then call ``http://that-name:8080/api/export`` from the browser. The browser
sends that name as ``Host``, so a request is served only when ``Host`` is

* a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``) on a loopback or wildcard bind,
  the bound host itself, or the IP address the connection was accepted on (ASGI ``server``), each
  with the server's port (a bare name only on port 80); or
* a name in ``ServerSettings.allowed_hosts`` (``--allowed-host NAME``, any port; ``NAME:PORT``
  pins one).

State-changing requests (POST/PUT/PATCH/DELETE) that carry an ``Origin`` must come from an
allowed origin by the same rules (``Origin: null`` is foreign). A foreign ``Host`` gets 421
(Misdirected Request, as the MCP SDK answers), a foreign ``Origin`` 403, both in the one JSON
error shape.

``Authenticate`` (the one key check): when keys are required, every request but the named
``PUBLIC_PATHS`` needs a valid key, whatever route (or catch-all) it would reach. The
principal is kept on the request (``scope["state"]["principal"]``) for the routes' own
``get_principal`` to reuse, so the key store is read once per request.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import OrcamemError
from .errors import error_body
from .settings import LOOPBACK_NAMES, ServerSettings, is_loopback

__all__ = [
    "PRINCIPAL_STATE",
    "PUBLIC_PATHS",
    "PUBLIC_STATE",
    "Authenticate",
    "HostGuard",
    "add_public",
    "host_allowed",
]

PUBLIC_PATHS = frozenset({"/healthz", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
"""Reachable without a key under ``require_keys``: liveness and the static API docs (the docs
page must load before the user can type a key into it). Nothing here reads memory."""

PUBLIC_STATE = "public_pages"
"""``app.state`` entry: ``(paths, prefixes)`` a part of the app added as public when it was
installed (the docs' assets, the dashboard's page and assets: static files in the package,
each a route of its own, so a public prefix never reaches the UI pass-through)."""


def add_public(app: Any, paths: Iterable[str] = (), prefixes: Iterable[str] = ()) -> None:
    """Make more static pages public (see ``PUBLIC_STATE``)."""
    known_paths, known_prefixes = getattr(app.state, PUBLIC_STATE, (frozenset(), ()))
    setattr(
        app.state,
        PUBLIC_STATE,
        (known_paths | frozenset(paths), (*known_prefixes, *prefixes)),
    )


def _public(scope: Scope) -> bool:
    path = scope.get("path", "")
    if path in PUBLIC_PATHS:
        return True
    paths, prefixes = getattr(scope["app"].state, PUBLIC_STATE, (frozenset(), ()))
    return path in paths or path.startswith(tuple(prefixes))


PRINCIPAL_STATE = "principal"
_STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _split(hostport: str) -> tuple[str, int | None] | None:
    """``name[:port]`` → (lower-case name without brackets, port or None); None if malformed."""
    hostport = hostport.strip().lower()
    if not hostport:
        return None
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            return None
        name, rest = hostport[1:end], hostport[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, sep, port_text = hostport.partition(":")
        if ":" in port_text:
            return None
        port_text = port_text if sep else None
    if port_text is None:
        return name, None
    if not port_text.isdigit():
        return None
    return name, int(port_text)


@lru_cache(maxsize=256)  # bounded: a Host header is the client's to choose
def _normal(name: str) -> str:
    """A host name lower-cased, an IP address in its one written form (parsed once per
    name: ``ipaddress`` was 3% of a busy server's time, every request parsing the same)."""
    name = name.strip().lower().strip("[]")
    try:
        return ipaddress.ip_address(name).compressed
    except ValueError:
        return name


@lru_cache(maxsize=256)
def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def host_allowed(
    hostport: str,
    settings: ServerSettings,
    server: tuple[str, int | None] | None,
    *,
    default_port: int = 80,
) -> bool:
    """Whether a ``Host`` value (or an Origin's netloc) names this server; see the module doc."""
    parts = _split(hostport)
    if parts is None:
        return False
    name, port = _normal(parts[0]), parts[1]
    for entry in settings.allowed_hosts:
        wanted = _split(entry)
        if wanted is None:
            continue
        if _normal(wanted[0]) == name and wanted[1] in (None, port):
            return True
    own: set[str] = set()
    bound = settings.host.strip("[]")
    if is_loopback(bound) or bound in _WILDCARDS:
        own |= {_normal(n) for n in LOOPBACK_NAMES}
    if bound not in _WILDCARDS:
        own.add(_normal(bound))
    ports = {settings.port}
    if server:
        address, local_port = server[0], server[1]
        if address and _is_ip(str(address)):
            own.add(_normal(str(address)))  # the address the connection was accepted on
        if local_port:
            ports.add(local_port)  # the port it was accepted on (``--port 0`` picks one)
    if name not in own:
        return False
    return (port if port is not None else default_port) in ports


def _refuse(kind: str, message: str, status: int) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(kind, message, status), status, headers=headers)


def _settings(scope: Scope) -> ServerSettings:
    return scope["app"].state.settings


def _server(scope: Scope) -> tuple[str, int | None] | None:
    server = scope.get("server")
    return (str(server[0]), server[1]) if server else None


class HostGuard:
    """Refuse a foreign ``Host`` (any request), ``Origin`` (state-changing requests), or a
    browser's cross-site request of the API (any method: a GET of ``/api/context`` marks the
    memories it recalls as read)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no websocket routes: the router closes those
            await self.app(scope, receive, send)
            return
        settings, server = _settings(scope), _server(scope)
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not host_allowed(host, settings, server):
            message = (
                f"Host {host!r} does not name this server (DNS rebinding is refused): reach it "
                "at 127.0.0.1/localhost, or allow the name with `--allowed-host NAME`"
            )
            await _refuse("MisdirectedRequest", message, 421)(scope, receive, send)
            return
        if headers.get("sec-fetch-site") == "cross-site" and scope.get("path", "").startswith(
            "/api/"
        ):  # a GET has no Origin: another site's <img src> recalled, and marked memories read
            message = (
                "a page of another site may not reach this server's API (the browser said "
                "Sec-Fetch-Site: cross-site); call it from a script or this server's dashboard"
            )
            await _refuse("ForbiddenOrigin", message, 403)(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and scope.get("method", "GET") in _STATE_CHANGING:
            parts = urlsplit(origin)
            default = _DEFAULT_PORTS.get(parts.scheme, 0)
            if not (default and parts.netloc) or not host_allowed(
                parts.netloc, settings, server, default_port=default
            ):
                message = (
                    f"Origin {origin!r} is not this server: a web page from another site may "
                    "not change memory (allow its name with `--allowed-host NAME`)"
                )
                await _refuse("ForbiddenOrigin", message, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Authenticate:
    """The one authentication choke point: a key for every path but ``PUBLIC_PATHS``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no websocket routes: the router closes those
            await self.app(scope, receive, send)
            return
        keys = scope["app"].state.keys
        if keys is not None and not _public(scope):
            from .deps import presented_key

            try:
                key = presented_key(Headers(scope=scope))
                principal = await anyio.to_thread.run_sync(keys.check, key)
            except OrcamemError as exc:
                await _refuse(type(exc).__name__, str(exc), exc.status)(scope, receive, send)
                return
            scope.setdefault("state", {})[PRINCIPAL_STATE] = principal
        await self.app(scope, receive, send)

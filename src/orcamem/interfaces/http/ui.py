"""Pass the upstream's own web UI through (``orcamem up``): every path that is not the API,
the proxy or MCP is forwarded to the upstream's origin, whatever the method and with its body,
so a chat UI such as llama.cpp's, opened at ``http://127.0.0.1:8080/#/``, loads its files,
makes its own calls (``POST /completion``) and calls ``/v1/chat/completions`` on orcamem, so
every message goes through memory. Installed last: it is a catch-all; a path one of orcamem's
own routes serves with other methods is a 405, never forwarded. One pooled client to the
upstream serves every request while the app runs (``upstream.hold``): a page load fetches
dozens of files, and a client per file would open a connection per file. Like every route it
sits behind ``guard.Authenticate``: under ``--require-keys`` it needs a key, and that key is
stripped before the request goes upstream.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.routing import Match

from ..._kernel.env import openai_api_key
from ..._kernel.http import async_client
from ..._kernel.redact import safe_url
from .errors import error_body
from .upstream import borrow, hold

__all__ = ["install"]

_STATE = "upstream_ui_http"
_CATCH_ALL = "/{path:path}"
_TIMEOUT_S = 30.0

_ORCAMEM_CREDENTIALS = ("authorization", "x-api-key")
_HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length", "content-encoding",
}  # fmt: skip


def _origin(upstream: str) -> str:
    parts = urlsplit(upstream)
    return f"{parts.scheme}://{parts.netloc}"


def _forwarded(request: Request) -> dict[str, str]:
    """The caller's headers for the upstream, less hop-by-hop ones. Under ``require_keys`` the
    caller's ``Authorization``/``x-api-key`` is its orcamem key and never leaves orcamem; the
    upstream gets ``Bearer $OPENAI_API_KEY`` when set. Without orcamem keys nothing changes."""
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
    if request.app.state.keys is None:
        return headers
    headers = {k: v for k, v in headers.items() if k.lower() not in _ORCAMEM_CREDENTIALS}
    key = openai_api_key()
    if key:
        headers["authorization"] = f"Bearer {key}"
    return headers


def _new_client(app: FastAPI) -> httpx.AsyncClient:
    return async_client(timeout=_TIMEOUT_S)


METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
"""What a chat UI sends its own server: pages and files, and its API calls (llama.cpp's UI
posts ``/completion``, ``/tokenize``, …), each forwarded with its body."""


def _own_methods(request: Request) -> list[str]:
    """The methods orcamem's own routes serve at this request's path (none: forward it). The
    catch-all runs only when no own route took the request, so any method here is another."""
    own = [route for route in request.app.router.routes if getattr(route, "path", "") != _CATCH_ALL]
    return [
        method
        for method in METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in own)
    ]


def install(app: FastAPI) -> None:
    """Forward every path no other route serves to the upstream origin, any method in
    ``METHODS``, with the request's body."""
    hold(app, _STATE, _new_client)

    @app.api_route(_CATCH_ALL, methods=METHODS, include_in_schema=False)
    async def upstream_ui(path: str, request: Request) -> Response:
        upstream = request.app.state.settings.upstream
        if not upstream:
            if path in ("", "index.html"):
                return JSONResponse(
                    {"orcamem": "running", "api": "/docs", "mcp": "/mcp",
                     "proxy": "/v1 (name an upstream: orcamem up --upstream URL --model M)"}
                )  # fmt: skip
            return JSONResponse(error_body("NotFound", f"no route /{path}", 404), 404)
        own = _own_methods(request)
        if own:
            message = f"{request.method} /{path} is orcamem's own route: use {', '.join(own)}"
            return JSONResponse(
                error_body("MethodNotAllowed", message, 405), 405, headers={"allow": ", ".join(own)}
            )
        url = f"{_origin(upstream)}/{path}"
        headers = _forwarded(request)
        try:
            async with borrow(request.app, _STATE, _new_client) as client:
                reply = await client.request(
                    request.method,
                    url,
                    params=request.query_params,
                    headers=headers,
                    content=await request.body(),
                )
        except httpx.HTTPError as exc:
            message = (
                f"the upstream UI at {safe_url(url)} is unreachable ({exc}): is the model "
                "server up?"
            )
            return JSONResponse(error_body("BadGateway", message, 502), 502)
        kept = {k: v for k, v in reply.headers.items() if k.lower() not in _HOP_BY_HOP}
        return Response(reply.content, reply.status_code, headers=kept)

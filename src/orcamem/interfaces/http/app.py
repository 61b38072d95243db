"""``create_app``: the REST API, the memory proxy and MCP over HTTP on one FastAPI app.

The app owns no globals: the ``Memory``, the settings and the key store live on ``app.state``
and reach routes through the dependencies in ``deps``. Request bodies are capped before they
are read (``max_body_bytes``) by the ``BodyLimit`` ASGI middleware. Before any route, every
request passes ``guard.HostGuard`` (DNS rebinding: ``Host``/``Origin``) and
``guard.Authenticate`` (the one key check when keys are required; ``guard.PUBLIC_PATHS``).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ... import __version__
from ...engine.memory import Memory
from . import docs
from .errors import error_body, install_error_handlers
from .guard import Authenticate, HostGuard
from .metrics import install as install_metrics
from .settings import ServerSettings

__all__ = ["BodyLimit", "create_app"]


class BodyLimit:
    """Refuse a request whose declared ``content-length`` is over the limit with a 413 JSON
    body, before the app reads it (plain ASGI: no per-request thread hop, streams untouched).
    The proxy's ``/v1/`` paths have their own, larger limit (a chat with inline images).
    Chunked bodies without a length are bounded by the routes that read them."""

    def __init__(self, app: ASGIApp, max_bytes: int, proxy_max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.proxy_max_bytes = proxy_max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            proxied = scope.get("path", "").startswith("/v1/")
            limit = self.proxy_max_bytes if proxied else self.max_bytes
            for name, value in scope.get("headers", ()):
                if name == b"content-length" and value.isdigit() and int(value) > limit:
                    advice = (
                        "fewer or smaller messages and images, or raise ORCAMEM_PROXY_MAX_BODY_MB"
                        if proxied
                        else "split documents, batch imports"
                    )
                    message = (
                        f"request body of {int(value):,} bytes is over the {limit:,}"
                        f"-byte limit: send less per request ({advice})"
                    )
                    response = JSONResponse(error_body("PayloadTooLarge", message, 413), 413)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def create_app(memory: Memory, settings: ServerSettings | None = None) -> FastAPI:
    """Build the app around an open ``Memory`` (the caller closes it)."""
    settings = settings or ServerSettings()
    app = FastAPI(
        title="orcamem",
        version=__version__,
        description="Durable, local-first long-term memory for LLM agents.",
        docs_url=None,  # docs.install serves /docs and /redoc from the package, offline
        redoc_url=None,
        # FastAPI's own request spans, metrics and logs are off: they exported each query
        # string (a user's message, a pasted key) once a tracer provider was installed. The
        # spans are orcamem's (_kernel.trace), /metrics and the log lines are metrics.Observe's
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.memory = memory
    app.state.settings = settings
    app.state.keys = memory.keys if settings.require_keys else None
    app.state.capability_workspace = settings.workspace
    install_error_handlers(app)
    docs.install(app)

    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_body_bytes,
        proxy_max_bytes=settings.proxy_max_body_bytes,
    )
    app.add_middleware(Authenticate)  # the one key check, for every route (guard.PUBLIC_PATHS)
    app.add_middleware(HostGuard)  # a foreign Host/Origin is refused first
    install_metrics(app)  # outermost: every request has an id, is counted, timed and logged

    @app.get("/healthz", tags=["meta"], summary="Liveness")
    async def healthz() -> dict:  # async: no threadpool hop for a constant
        return {"ok": True, "version": __version__}

    return app

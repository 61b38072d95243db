"""``create_app``: the REST API, the memory proxy and MCP over HTTP on one FastAPI app.

The app owns no globals: the ``Memory``, the settings and the key store live on ``app.state``
and reach routes through the dependencies in ``deps``. Request bodies are capped before they
are read (``max_body_bytes``).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from ... import __version__
from ...services.memory import Memory
from .auth import KeyStore
from .errors import error_body, install_error_handlers
from .settings import ServerSettings

__all__ = ["create_app"]


def create_app(memory: Memory, settings: ServerSettings | None = None) -> FastAPI:
    """Build the app around an open ``Memory`` (the caller closes it)."""
    settings = settings or ServerSettings()
    app = FastAPI(
        title="orcamem",
        version=__version__,
        description="Durable, local-first long-term memory for LLM agents.",
    )
    app.state.memory = memory
    app.state.settings = settings
    app.state.keys = KeyStore(memory.store) if settings.require_keys else None
    install_error_handlers(app)

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > settings.max_body_bytes:
            message = (
                f"request body of {int(length):,} bytes is over the {settings.max_body_bytes:,}"
                "-byte limit: send less per request (split documents, batch imports)"
            )
            return JSONResponse(error_body("PayloadTooLarge", message, 413), 413)
        return await call_next(request)

    @app.get("/healthz", tags=["meta"], summary="Liveness")
    def healthz() -> dict:
        return {"ok": True, "version": __version__}

    return app

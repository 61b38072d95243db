"""Compose and run the HTTP app: which parts a command serves, and uvicorn on loopback.

``orcamem up``    → REST API + dashboard + proxy + MCP over HTTP + the upstream's web UI
``orcamem serve`` → REST API + dashboard (``/ui``, built on that API alone)
``orcamem proxy`` → the OpenAI-compatible memory proxy alone
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import FastAPI

from ...bank import MemoryBank
from ...engine.memory import Memory
from .app import create_app
from .settings import ServerSettings

__all__ = ["PARTS", "build_app", "run"]

PARTS = ("api", "proxy", "mcp", "ui")


def build_app(
    memory: Memory,
    settings: ServerSettings,
    parts: Iterable[str] = PARTS,
    *,
    bank: MemoryBank | None = None,
) -> FastAPI:
    """``create_app`` plus the named parts, in an order where the UI catch-all comes last.

    ``bank``: the Memory Bank the REST routes and MCP tools serve (503 / no tools without).
    """
    app = create_app(memory, settings)
    app.state.bank = bank
    wanted = set(parts)
    if "api" in wanted:
        from .api import install as install_api

        install_api(app)
        from .dashboard import install as install_dashboard

        install_dashboard(app)
    if "proxy" in wanted:
        from .proxy import install as install_proxy

        install_proxy(app)
    if "mcp" in wanted:
        from ..mcp.server import install as install_mcp

        install_mcp(app)
    if "ui" in wanted:
        from .ui import install as install_ui

        install_ui(app)
    return app


def run(app: FastAPI, settings: ServerSettings) -> None:
    """Serve until interrupted (uvicorn, one process, the settings' host and port), logging
    JSON lines (``logs.LOG_CONFIG``)."""
    import uvicorn

    from .logs import LOG_CONFIG

    uvicorn.run(app, host=settings.host, port=settings.port, log_config=LOG_CONFIG)

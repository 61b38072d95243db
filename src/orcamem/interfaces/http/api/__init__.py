"""The REST API: one router per resource, all under ``/api``.

``install(app)`` mounts them on the app of ``create_app``. Every route resolves its space with
``principal.space(name)`` (``common.SpaceDep``), so a key for space A gets 403 on space B
through every route; keys and automation notes need an admin key. Routes are plain ``def``:
FastAPI runs them in its threadpool and they call the synchronous SDK.

==========================================  =================================================
``GET /api/spaces``, ``/api/spaces/{s}``    spaces the key may use; one space's counts
``POST|GET /api/episodes``                  add/observe one or many; page by id cursor
``GET|DELETE /api/episodes/{id}``           one episode
``GET|POST /api/search``                    ranked hits with the per-signal breakdown
``POST|GET /api/context``                   messages + memory block; the block for a query
``GET /api/facts``                          current memories (``include_history``)
``POST|GET /api/memories``, ``…/{id}``      remember (forbidden rules too), list, get, forget
``POST /api/sleep``                         consolidate now (model from server settings)
``GET /api/stats``                          counts (database-wide for admin keys)
``GET /api/check``                          what ``orcamem check`` finds (admin)
``GET /api/export``, ``POST /api/import``   JSON lines out and in
``/api/keys``                               create, list, revoke keys (admin)
``/api/automations/{id}/memory``            an automation's note: GET, PUT, DELETE (admin)
``/api/profiles/{name}/memories``, ``…``    Memory Bank: a profile's memories (``memory_bank``)
``/api/memory-bank``, ``…/stats``           Memory Bank across profiles (admin)
``GET /api/capability``                     the host capability: settings, provider (admin)
``DELETE /api/spaces/{s}?confirm={s}``      delete a whole space (typed confirmation)
``GET /api/audit``                          the consolidation audit log of a space
``GET /api/explain``                        why this block: included, cut, breakdown, tokens
``PATCH /api/memories/{id}``, ``…/{id}/pin`` edit (a new version), pin or unpin
``GET /api/blocks``                         the opt-in log of injected blocks
``/api/local/projects``, ``…/{id}/…``       local agent memory: facts, ledger, jobs (admin)
==========================================  =================================================
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match

from ..errors import error_body
from . import (
    audit,
    automations,
    blocks,
    capability,
    check,
    context,
    episodes,
    explain,
    facts,
    keys,
    local,
    memories,
    memory_bank,
    search,
    sleep,
    spaces,
    stats,
    transfer,
)

__all__ = ["install"]

ROUTERS = (
    spaces,
    episodes,
    search,
    context,
    facts,
    memories,
    sleep,
    stats,
    check,
    transfer,
    keys,
    automations,
    memory_bank,
    capability,
    audit,
    explain,
    blocks,
    local,
)

TAGS = [
    {"name": "spaces", "description": "The isolation units: a user, tenant or project."},
    {"name": "episodes", "description": "The append-only log: turns, notes, documents."},
    {"name": "search", "description": "Recall with the per-signal breakdown of every hit."},
    {"name": "context", "description": "The block a chat gets before its next turn."},
    {"name": "facts", "description": "Current memories, with their history on request."},
    {"name": "memories", "description": "Explicit memories and forbidden rules."},
    {"name": "sleep", "description": "Consolidation of episodes into memories."},
    {"name": "stats", "description": "Counts."},
    {"name": "check", "description": "Damaged indexes, vectors and lineage (admin keys only)."},
    {"name": "export", "description": "A space as JSON lines, out and back in."},
    {"name": "keys", "description": "API keys (admin keys only)."},
    {"name": "automations", "description": "Automation notes (admin keys only)."},
    {"name": "capability", "description": "The host memory capability's settings and provider."},
    {"name": "audit", "description": "What consolidation refused or closed, and why."},
    {"name": "blocks", "description": "The opt-in log of the blocks injected before turns."},
    {"name": "local", "description": "Local agent memory: projects, facts, ledger, jobs (admin)."},
    {
        "name": "memory-bank",
        "description": "Profile-scoped agent memory (Memory Bank); 503 when not wired.",
    },
]


def install(app: FastAPI) -> None:
    """Mount every REST router under ``/api`` on an app made by ``create_app``.

    Bodies are capped at the settings' ``max_body_bytes`` also when they arrive chunked,
    without a ``Content-Length`` (the app's own check reads that header only).
    """
    api = APIRouter()
    for module in ROUTERS:
        api.include_router(module.router)
    app.include_router(api, prefix="/api", max_body_size=app.state.settings.max_body_bytes)
    app.openapi_tags = [*(app.openapi_tags or []), *TAGS]
    app.add_exception_handler(405, _method_not_allowed)
    app.add_exception_handler(413, _payload_too_large)


async def _method_not_allowed(request: Request, exc: HTTPException) -> JSONResponse:
    """405 with ``Allow`` listing every method of the path (Starlette lists only the first
    route's, and GET and POST of one path are two routes)."""
    allowed = [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL
            for route in request.app.router.routes
        )
    ]
    methods = ", ".join(allowed) or (exc.headers or {}).get("allow", "")
    message = f"{request.method} is not allowed on {request.url.path}: use {methods}"
    return JSONResponse(error_body("MethodNotAllowed", message, 405), 405, {"allow": methods})


async def _payload_too_large(request: Request, exc: HTTPException) -> JSONResponse:
    """413 for a body that went over the limit while it streamed in (no ``Content-Length``)."""
    limit = request.app.state.settings.max_body_bytes
    message = (
        f"request body is over the {limit:,}-byte limit: send less per request (split "
        "documents, batch imports)"
    )
    return JSONResponse(error_body("PayloadTooLarge", message, 413), 413)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

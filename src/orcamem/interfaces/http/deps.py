"""FastAPI dependencies: the shared ``Memory``, the settings and the caller's ``Principal``.

Routes never reach for globals: ``MemoryDep``, ``SettingsDep`` and ``PrincipalDep`` come from
``app.state`` (set by ``create_app``), so tests can build an app around their own Memory.
Every route that takes a space resolves it with ``principal.space(name)``.

They are ``async def``: FastAPI runs a sync dependency in its threadpool, and each such hop
hands the GIL back and forth between the event loop and a worker thread (three of the five
hops a search made). Only a key check that ``guard.Authenticate`` has not done reads the
database, and it alone goes to a worker thread.
"""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Request

from ...engine.keys import ADMIN, ApiKeys, Principal
from ...engine.memory import Memory
from .settings import ServerSettings

__all__ = [
    "MemoryDep",
    "PrincipalDep",
    "SettingsDep",
    "get_memory",
    "get_principal",
    "presented_key",
    "principal_of",
]


async def get_memory(request: Request) -> Memory:
    return request.app.state.memory


async def get_settings(request: Request) -> ServerSettings:
    return request.app.state.settings


def presented_key(headers: dict[str, str] | object) -> str | None:
    """The API key in ``Authorization: Bearer …`` or ``x-api-key``, if any."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    auth = get("authorization") or ""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return get("x-api-key") or None


def principal_of(request: Request) -> Principal:
    """Admin on a keyless loopback server; otherwise the presented key's principal (may read
    the key store: call it from a worker thread unless ``guard.Authenticate`` checked it)."""
    keys: ApiKeys | None = request.app.state.keys
    if keys is None:
        return ADMIN
    checked = request.scope.get("state", {}).get("principal")  # set by guard.Authenticate
    if isinstance(checked, Principal):
        return checked
    return keys.check(presented_key(request.headers))


async def get_principal(request: Request) -> Principal:
    """``principal_of``, in a worker thread only when there is a key to look up."""
    if request.app.state.keys is None or "principal" in request.scope.get("state", {}):
        return principal_of(request)
    return await anyio.to_thread.run_sync(principal_of, request)


MemoryDep = Annotated[Memory, Depends(get_memory)]
SettingsDep = Annotated[ServerSettings, Depends(get_settings)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]

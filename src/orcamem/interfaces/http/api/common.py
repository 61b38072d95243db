"""What every REST router shares: the caller's space, the admin check, raw bodies, the time.

Every route that touches a space takes it as ``?space=`` (or a path part) and resolves it with
``principal.space(name)`` through ``SpaceDep``: a key for space A gets 403 on space B before
the route runs, so nothing is read from or written to B.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from ...._kernel.clock import stamp
from ...._kernel.model import DEFAULT_SPACE
from ....engine.keys import ApiKeys, Principal
from ....engine.memory import Memory
from ..deps import MemoryDep, PrincipalDep
from .schemas import SPACE_PATTERN

__all__ = ["AdminDep", "RawBodyDep", "SpaceDep", "key_store", "now"]


def resolve_space(
    principal: PrincipalDep,
    space: Annotated[
        str,
        Query(
            pattern=SPACE_PATTERN,
            description="The space (user, tenant, project) to use; the key must allow it.",
        ),
    ] = DEFAULT_SPACE,
) -> str:
    return principal.space(space)


def require_admin(principal: PrincipalDep) -> Principal:
    principal.require_admin()
    return principal


async def raw_body(request: Request) -> bytes:
    """The request body as bytes (capped by the body limit of ``install``)."""
    return await request.body()


SpaceDep = Annotated[str, Depends(resolve_space)]
AdminDep = Annotated[Principal, Depends(require_admin)]
RawBodyDep = Annotated[bytes, Depends(raw_body)]


def key_store(request: Request, memory: MemoryDep) -> ApiKeys:
    """The server's key store; a keyless loopback server still manages keys for later."""
    keys: ApiKeys | None = request.app.state.keys
    return keys if keys is not None else memory.keys


def now(memory: Memory) -> str:
    return stamp(memory.clock)

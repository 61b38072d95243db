"""What every REST router shares: the caller's space, the admin check, raw bodies, the time.

Every route that touches a space takes it as ``?space=`` (or a path part) and resolves it with
``principal.space(name)`` through ``SpaceDep``: a key for space A gets 403 on space B before
the route runs, so nothing is read from or written to B.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request, Response
from pydantic import BaseModel

from ...._kernel.clock import stamp
from ...._kernel.model import DEFAULT_SPACE
from ....engine.keys import ApiKeys, Principal
from ....engine.memory import Memory
from ..deps import MemoryDep, PrincipalDep
from .schemas import SPACE_PATTERN

__all__ = ["AdminDep", "RawBodyDep", "SpaceDep", "json_answer", "key_store", "now"]


async def resolve_space(
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


async def require_admin(principal: PrincipalDep) -> Principal:
    principal.require_admin()
    return principal


async def raw_body(request: Request) -> bytes:
    """The request body as bytes (capped by the body limit of ``install``)."""
    return await request.body()


def json_answer(model: BaseModel, status_code: int = 200) -> Response:
    """``model`` as the JSON FastAPI would send (by alias), serialized once, here.

    A sync route that returns a model has FastAPI validate it again against the response
    model in a threadpool hop, then serialize it; a hot route returns this instead (and names
    its model in ``response_model=`` for the schema)."""
    return Response(
        model.model_dump_json(by_alias=True), status_code, media_type="application/json"
    )


SpaceDep = Annotated[str, Depends(resolve_space)]
AdminDep = Annotated[Principal, Depends(require_admin)]
RawBodyDep = Annotated[bytes, Depends(raw_body)]


def key_store(request: Request, memory: MemoryDep) -> ApiKeys:
    """The server's key store; a keyless loopback server still manages keys for later."""
    keys: ApiKeys | None = request.app.state.keys
    return keys if keys is not None else memory.keys


def now(memory: Memory) -> str:
    return stamp(memory.clock)

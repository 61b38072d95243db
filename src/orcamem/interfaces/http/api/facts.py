"""``/api/facts``: the space's current memories, optionally with what they superseded."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import MemoryDep
from .common import SpaceDep
from .memories import memory_out
from .schemas import FactsOut, errors

router = APIRouter(prefix="/facts", tags=["facts"], responses=errors(400, 401, 403, 422, 503))


@router.get("", summary="Facts")
def facts(
    memory: MemoryDep,
    space: SpaceDep,
    include_history: Annotated[
        bool, Query(description="Also superseded memories (the history of each state).")
    ] = False,
) -> FactsOut:
    """Active memories (facts, preferences, states, events, rules), oldest first."""
    return FactsOut(
        facts=[memory_out(r) for r in memory.facts(space=space, include_history=include_history)]
    )

"""``/api/stats``: counts for a space (and, for admin keys, the whole database)."""

from __future__ import annotations

from fastapi import APIRouter

from ..deps import MemoryDep, PrincipalDep
from .common import SpaceDep
from .schemas import DatabaseStats, StatsOut, errors

router = APIRouter(prefix="/stats", tags=["stats"], responses=errors(400, 401, 403, 422, 503))


@router.get("", summary="Stats")
def stats(memory: MemoryDep, principal: PrincipalDep, space: SpaceDep) -> StatsOut:
    """What ``orcamem stats`` prints. ``database`` (every space's name, table counts, the file)
    is shown to admin keys only: a space key learns nothing about other spaces."""
    data = memory.stats(space=space)
    database = (
        DatabaseStats(
            spaces=data["spaces"],
            counts=data["database"],
            path=data["path"],
            size_bytes=data["size_bytes"],
        )
        if principal.admin
        else None
    )
    fields = {k: v for k, v in data.items() if k in StatsOut.model_fields and k != "database"}
    return StatsOut(**fields, database=database)

"""``/api/audit``: the consolidation audit log, what was rejected or closed and why."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import MemoryDep
from .common import SpaceDep
from .schemas import AuditEntryOut, AuditOut, errors

router = APIRouter(prefix="/audit", tags=["audit"], responses=errors(400, 401, 403, 422, 503))


@router.get("", summary="Consolidation audit log")
def audit_log(
    memory: MemoryDep,
    space: SpaceDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="How many entries.")] = 100,
) -> AuditOut:
    """The newest entries first: each claim consolidation refused (ungrounded value, bad
    citation, …) or each memory closed by hand, with the reason. Never shown to recall."""
    return AuditOut(
        entries=[AuditEntryOut(**e) for e in memory.audit_log(space=space, limit=limit)]
    )

"""``GET /api/check``: what ``orcamem check`` finds in the server's database (admin keys only).

It reads only; the repair is ``orcamem repair`` on the machine that holds the file. A damaged
index is a finding, not a failed request: the answer is 200 with ``ok`` false.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends

from ..deps import MemoryDep
from .common import require_admin
from .schemas import CheckOut, errors

router = APIRouter(
    prefix="/check",
    tags=["check"],
    dependencies=[Depends(require_admin)],
    responses=errors(401, 403, 503),
)


@router.get("", summary="Check the database")
def check(memory: MemoryDep) -> CheckOut:
    """The SQLite file, the full-text indexes against their rows, vectors, episode digests and
    memory lineage; each problem says what to run next."""
    return CheckOut.model_validate(memory.check().to_dict())

"""``/api/blocks``: the opt-in log of the blocks injected before turns (``engine.blocklog``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import MemoryDep
from .common import SpaceDep
from .schemas import BlockEntryOut, BlocksOut, errors

router = APIRouter(prefix="/blocks", tags=["blocks"], responses=errors(400, 401, 403, 422, 503))


@router.get("", summary="Injected blocks")
def injected_blocks(
    memory: MemoryDep,
    space: SpaceDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="How many entries.")] = 100,
) -> BlocksOut:
    """The blocks injected in the space (proxy, SDK, ``POST /api/context``, MCP), newest
    first: time, surface, item ids, tokens, the query's hash. Empty unless the server runs
    with ``--log-blocks`` (``ORCAMEM_LOG_BLOCKS=1``); kept: ``keep`` per space (default 1000)
    for ``retention_days`` (default 7)."""
    return BlocksOut(
        entries=[
            BlockEntryOut(**e.to_dict()) for e in memory.injected_blocks(space=space, limit=limit)
        ],
        logging=memory.config.pack.log_blocks,
        keep=memory.config.pack.log_blocks_keep,
        retention_days=memory.config.pack.log_blocks_days,
    )

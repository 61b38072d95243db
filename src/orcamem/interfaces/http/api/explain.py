"""``/api/explain``: why this block: the exact block a message gets, and how it was chosen.

The same two steps as ``Memory.recall`` (rank ``max_items`` hits, pack them into the budget)
made visible: what went in with each hit's per-signal breakdown, what was left out and why
(an outdated line whose newer state the block shows, the adaptive count's score cut, or the
token budget: ``Memory.explain``, the decision ``pack_context`` makes), and the block's
token count. A preview: unlike a real recall it marks nothing accessed, so
looking at a block never changes the next one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ...._kernel.text import wordpiece_tokens
from ..deps import MemoryDep
from .common import SpaceDep
from .schemas import ExplainOut, HitOut, LeftOutHit, errors

router = APIRouter(
    prefix="/explain", tags=["context"], responses=errors(400, 401, 403, 409, 422, 503)
)


@router.get("", summary="Why this block")
def explain(
    memory: MemoryDep,
    space: SpaceDep,
    q: Annotated[str, Query(min_length=1, max_length=10_000, description="The user's message.")],
) -> ExplainOut:
    """The block ``build_context`` would inject for ``q``, what went into it and why (each
    hit's ``breakdown``), what was left out and why, and its token count."""
    pack = memory.config.pack
    packed = memory.explain(q, space=space)
    return ExplainOut(
        query=packed.query,
        space=space,
        block=packed.block,
        tokens=wordpiece_tokens(packed.block),
        budget_tokens=pack.context_budget_tokens,
        min_block_tokens=pack.min_block_tokens,
        relative_score=pack.relative_score,
        included=[HitOut(**h.to_dict()) for h in packed.included],
        cut=[
            LeftOutHit(
                **left.hit.to_dict(),
                reason=left.reason,
                of_best=None if left.of_best is None else round(left.of_best, 6),
                detail=left.detail,
            )
            for left in packed.left_out
        ],
        rules=[HitOut(**h.to_dict()) for h in packed.hoisted],
    )

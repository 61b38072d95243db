"""``/api/search``: ranked passages and memories with the per-signal breakdown."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ..deps import MemoryDep
from .common import SpaceDep
from .schemas import SearchIn, SearchOut, errors

router = APIRouter(
    prefix="/search", tags=["search"], responses=errors(400, 401, 403, 409, 422, 503)
)


def _search(memory: MemoryDep, space: str, query: str, top_k: int | None) -> SearchOut:
    return SearchOut(**memory.search(query, space=space, top_k=top_k).to_dict())


@router.get("", summary="Search")
def search(
    memory: MemoryDep,
    space: SpaceDep,
    q: Annotated[str, Query(min_length=1, max_length=10_000, description="What to recall.")],
    top_k: Annotated[int | None, Query(ge=1, le=1000, description="How many hits.")] = None,
) -> SearchOut:
    """Rank the space's passages and memories for ``q``; each hit says why (``breakdown``).

    Deterministic code over the indexes: no model call. Forbidden rules come back in
    ``rules`` whatever the query.
    """
    return _search(memory, space, q, top_k)


@router.post("", summary="Search (body)", responses=errors(413))
def search_body(memory: MemoryDep, space: SpaceDep, body: SearchIn) -> SearchOut:
    """The same as ``GET /api/search``, for queries too long for a URL."""
    return _search(memory, space, body.query, body.top_k)

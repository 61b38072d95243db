"""``/api/search``: ranked passages and memories with the per-signal breakdown, filtered by
kind, role, session, dates, category and metadata (the store's queries carry the filter)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from ...._kernel.names import META_KEY
from ....recall.filters import meta_pairs
from ..deps import MemoryDep
from .common import SpaceDep, json_answer
from .schemas import FILTER_FIELDS, Category, HitKind, SearchIn, SearchOut, errors

router = APIRouter(
    prefix="/search", tags=["search"], responses=errors(400, 401, 403, 409, 422, 503)
)


def _search(
    memory: MemoryDep, space: str, query: str, top_k: int | None, filters: dict[str, Any]
) -> Response:
    result = memory.search(query, space=space, top_k=top_k, filters=filters)
    return json_answer(SearchOut(**result.to_dict()))


def _text(field: str) -> Any:
    return Query(min_length=1, max_length=256, description=FILTER_FIELDS[field])


@router.get("", summary="Search", response_model=SearchOut)
def search(
    memory: MemoryDep,
    space: SpaceDep,
    q: Annotated[str, Query(min_length=1, max_length=10_000, description="What to recall.")],
    top_k: Annotated[int | None, Query(ge=1, le=1000, description="How many hits.")] = None,
    kind: Annotated[HitKind | None, Query(description=FILTER_FIELDS["kind"])] = None,
    role: Annotated[str | None, _text("role")] = None,
    session: Annotated[str | None, _text("session")] = None,
    since: Annotated[str | None, _text("since")] = None,
    until: Annotated[str | None, _text("until")] = None,
    category: Annotated[Category | None, Query(description=FILTER_FIELDS["category"])] = None,
    meta: Annotated[
        list[str] | None,
        Query(
            description="`key=value`, repeatable: only passages whose episode metadata holds "
            f"that string value (keys: {META_KEY.rule})."
        ),
    ] = None,
) -> Response:
    """Rank the space's passages and memories for ``q``; each hit says why (``breakdown``).

    Deterministic code over the indexes: no model call. The filters rank only what matches
    them; forbidden rules that bear on the query come back in ``rules``, held to the filters
    as memories are.
    """
    filters = {
        "kind": kind,
        "role": role,
        "session": session,
        "since": since,
        "until": until,
        "category": category,
        "metadata": meta_pairs(meta or ()),
    }
    return _search(memory, space, q, top_k, filters)


@router.post("", summary="Search (body)", response_model=SearchOut, responses=errors(413))
def search_body(memory: MemoryDep, space: SpaceDep, body: SearchIn) -> Response:
    """The same as ``GET /api/search``, for queries too long for a URL; ``filters`` holds
    the same filters (``metadata`` as an object)."""
    filters = body.filters.model_dump(exclude_none=True) if body.filters else {}
    return _search(memory, space, body.query, body.top_k, filters)

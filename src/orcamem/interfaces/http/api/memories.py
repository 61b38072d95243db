"""``/api/memories``: remember (facts, preferences, forbidden rules), read, list, edit, pin,
delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from ...._kernel.model import MemoryRecord
from ..deps import MemoryDep
from .common import SpaceDep
from .schemas import (
    MEMORY_ID_PATTERN,
    Category,
    MemoryEdit,
    MemoryIn,
    MemoryOut,
    MemoryPage,
    PinIn,
    errors,
)

router = APIRouter(
    prefix="/memories", tags=["memories"], responses=errors(400, 401, 403, 409, 422, 503)
)

MemoryId = Annotated[str, Path(pattern=MEMORY_ID_PATTERN, description="mem-<8hex>")]


def memory_out(record: MemoryRecord) -> MemoryOut:
    return MemoryOut(**record.to_dict())


@router.post("", status_code=201, summary="Remember", responses=errors(413))
def remember(memory: MemoryDep, space: SpaceDep, body: MemoryIn) -> MemoryOut:
    """Store an explicit memory and index it at once (no model involved).

    ``"forbidden": true`` or ``"category": "anti_pattern"`` stores a forbidden rule: recall
    hoists it above everything as ``[FORBIDDEN: …]``.
    """
    forbidden = body.forbidden or body.category == "anti_pattern"
    record = memory.remember(
        body.text,
        space=space,
        category="rule" if forbidden else body.category,
        prohibited=forbidden,
        importance=body.importance if body.importance is not None else (1.0 if forbidden else 0.5),
        confidence=body.confidence,
        tags=body.tags,
        entity=body.entity,
        attribute=body.attribute,
        value=body.value,
        condition=body.condition,
        event_date=body.event_date,
    )
    return memory_out(record)


@router.get("", summary="List memories")
def list_memories(
    memory: MemoryDep,
    space: SpaceDep,
    category: Annotated[Category | None, Query(description="Only this category.")] = None,
    forbidden: Annotated[
        bool | None, Query(description="true: only forbidden rules; false: none of them.")
    ] = None,
    include_inactive: Annotated[
        bool, Query(description="Also superseded and deactivated memories.")
    ] = False,
    offset: Annotated[int, Query(ge=0, le=10**9, description="Skip this many.")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="Page size.")] = 100,
) -> MemoryPage:
    """Memories of the space, oldest first, with filters and ``offset``/``limit`` paging."""
    records = [
        r
        for r in memory.facts(space=space, include_history=include_inactive)
        if (category is None or r.category == category)
        and (forbidden is None or r.prohibited == forbidden)
    ]
    page = records[offset : offset + limit]
    end = offset + len(page)
    return MemoryPage(
        memories=[memory_out(r) for r in page],
        total=len(records),
        next_offset=end if end < len(records) else None,
    )


@router.get("/{memory_id}", summary="Get a memory", responses=errors(404))
def get_memory(memory: MemoryDep, space: SpaceDep, memory_id: MemoryId) -> MemoryOut:
    """One memory of the space, active or not (404 if the id is in another space)."""
    return memory_out(memory.memory(memory_id, space=space))


@router.patch("/{memory_id}", summary="Edit a memory", responses=errors(404, 413))
def edit_memory(
    memory: MemoryDep, space: SpaceDep, memory_id: MemoryId, body: MemoryEdit
) -> MemoryOut:
    """Correct a memory: returns the new version, which supersedes it (a new id).

    The old one stays as history (``active: false``, ``superseded_by`` the new id). A memory
    that is no longer current is refused with 400 naming the version to edit instead.
    """
    record = memory.edit_memory(
        memory_id,
        body.text,
        space=space,
        category=body.category,
        importance=body.importance,
        confidence=body.confidence,
        tags=body.tags,
        value=body.value,
    )
    return memory_out(record)


@router.put("/{memory_id}/pin", summary="Pin or unpin a memory", responses=errors(404))
def pin_memory(memory: MemoryDep, space: SpaceDep, memory_id: MemoryId, body: PinIn) -> MemoryOut:
    """A pinned memory does not decay and ranks higher when a query bears on it; it is never
    injected where nothing bears on it."""
    return memory_out(memory.pin(memory_id, body.pinned, space=space))


@router.delete("/{memory_id}", status_code=204, summary="Forget a memory", responses=errors(404))
def forget_memory(memory: MemoryDep, space: SpaceDep, memory_id: MemoryId) -> Response:
    """Delete the memory (its source episodes stay)."""
    memory.forget(memory_id, space=space)
    return Response(status_code=204)

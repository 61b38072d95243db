"""``/api/context``: the block a chat gets before its next turn.

``POST`` takes the messages and returns them with the memory block prepended as a system
message (what the proxy injects); with ``automation_id`` the automation's note block comes
first, opening with its scribe's-observation preamble. ``GET`` returns the block for a query.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from ..deps import MemoryDep, PrincipalDep
from .common import SpaceDep, json_answer
from .schemas import ContextIn, ContextOut, RecallOut, errors

router = APIRouter(
    prefix="/context", tags=["context"], responses=errors(400, 401, 403, 409, 422, 503)
)


@router.post("", summary="Build context", response_model=ContextOut, responses=errors(413))
def build_context(
    memory: MemoryDep, principal: PrincipalDep, space: SpaceDep, body: ContextIn
) -> Response:
    """Return ``messages`` with the context blocks prepended as system messages.

    The query is the latest user message. With nothing to recall the messages come back
    unchanged and ``block`` is null. ``automation_id`` (admin keys: automations belong to the
    host) also prepends that automation's note, first, as its own system message.
    """
    if body.automation_id is not None:
        principal.require_admin()
    messages = [m.model_dump(exclude_unset=True) for m in body.messages]
    built = memory.context(messages, space=space, automation_id=body.automation_id, surface="rest")
    out = ContextOut(messages=built.messages, block=built.block, note_block=built.note_block)
    return json_answer(out)


@router.get("", summary="Recall block", response_model=RecallOut)
def recall(
    memory: MemoryDep,
    space: SpaceDep,
    q: Annotated[str, Query(min_length=1, max_length=10_000, description="The user's message.")],
) -> Response:
    """The exact memory block ``POST /api/context`` would inject for ``q`` (may be empty)."""
    return json_answer(RecallOut(query=q, space=space, block=memory.recall(q, space=space)))

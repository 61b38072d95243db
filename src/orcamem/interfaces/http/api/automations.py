"""``/api/automations/{id}/memory``: the one note an automation keeps between firings.

Admin keys only: automations belong to the host that schedules them, not to a space. ``PUT``
replaces the note (``text/plain``: the body is the note; ``application/json``:
``{"note": "..."}``); an empty or blank body clears it. ``GET`` returns the note and the
context block a run receives (``recall.blocks.note.render_note``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from ....engine.store.base import AutomationNote
from ....recall.blocks.note import render_note
from ..deps import MemoryDep
from .common import RawBodyDep, require_admin
from .schemas import ID_PATTERN, NoteIn, NoteOut, errors

router = APIRouter(
    prefix="/automations",
    tags=["automations"],
    dependencies=[Depends(require_admin)],
    responses=errors(400, 401, 403, 422, 503),
)

AutomationId = Annotated[str, Path(pattern=ID_PATTERN, description="The automation (schedule) id.")]


def _out(automation_id: str, note: AutomationNote | None) -> NoteOut:
    if note is None:
        return NoteOut(automation_id=automation_id, note="", updated_at=None, block="")
    return NoteOut(
        automation_id=automation_id,
        note=note.note,
        updated_at=note.updated_at,
        block=render_note(note.note),
    )


@router.get("/{automation_id}/memory", summary="Read an automation's note")
def get_note(memory: MemoryDep, automation_id: AutomationId) -> NoteOut:
    """The note and the block the next run receives; an empty note when there is none."""
    return _out(automation_id, memory.notes.get(automation_id))


@router.put(
    "/{automation_id}/memory",
    summary="Replace an automation's note",
    responses=errors(413),
    openapi_extra={
        "requestBody": {
            "required": False,
            "description": "The whole new note; an empty body clears it.",
            "content": {
                "text/plain": {"schema": {"type": "string", "maxLength": 65536}},
                "application/json": {"schema": NoteIn.model_json_schema()},
            },
        }
    },
)
def put_note(
    memory: MemoryDep, request: Request, automation_id: AutomationId, body: RawBodyDep
) -> NoteOut:
    """Replace the note (at most 4 KiB of UTF-8). It should say what the last run found and
    where it stopped: state, never rules for the next run."""
    text: str | bytes = body
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if body.strip() and content_type == "application/json":
        try:
            text = NoteIn.model_validate_json(body).note
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
            ) from None
    return _out(automation_id, memory.notes.put(automation_id, text))


@router.delete("/{automation_id}/memory", status_code=204, summary="Delete an automation's note")
def delete_note(memory: MemoryDep, automation_id: AutomationId) -> Response:
    """Clear the note (when its schedule is deleted: the note dies with it). Idempotent."""
    memory.notes.clear(automation_id)
    return Response(status_code=204)

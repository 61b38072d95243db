"""``/api/export`` and ``/api/import``: a space as JSON lines, out and back in."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterator

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from ....errors import InvalidInputError
from ..deps import MemoryDep
from .common import RawBodyDep, SpaceDep
from .schemas import ImportOut, errors

router = APIRouter(tags=["export"], responses=errors(400, 401, 403, 409, 422, 503))

NDJSON = "application/x-ndjson"
_CHUNK = 64 * 1024


@router.get(
    "/export",
    summary="Export a space",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The space as JSON lines: a header, then episodes, then memories.",
            "content": {NDJSON: {"schema": {"type": "string"}}},
        }
    },
)
def export(memory: MemoryDep, space: SpaceDep) -> StreamingResponse:
    """The ``orcamem export`` file of the space, streamed as ``application/x-ndjson``.

    The export is written to a spooled temporary file first (in memory up to 8 MiB, then on
    disk), so an error is a JSON error response, never a truncated stream.
    """
    # closed by the stream (or below on error), not by a with: it outlives this function
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115
    text = io.TextIOWrapper(spool, encoding="utf-8", newline="\n")
    try:
        memory.export(text, space=space)
        text.flush()
    except BaseException:
        spool.close()
        raise
    text.detach()
    spool.seek(0)

    def chunks() -> Iterator[bytes]:
        try:
            while chunk := spool.read(_CHUNK):
                yield chunk
        finally:
            spool.close()

    return StreamingResponse(
        chunks(),
        media_type=NDJSON,
        headers={"content-disposition": f'attachment; filename="orcamem-{space}.jsonl"'},
    )


@router.post(
    "/import",
    summary="Import into a space",
    responses=errors(413),
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "An export (GET /api/export): the header line first.",
            "content": {NDJSON: {"schema": {"type": "string"}}},
        }
    },
)
def import_(memory: MemoryDep, space: SpaceDep, body: RawBodyDep) -> ImportOut:
    """Load an export into the space (whatever space it came from).

    The whole body is parsed and validated before anything is written. Episodes already in
    the space, and memories whose id the space already holds, are skipped (``skipped``),
    unless the file's copy is newer: then it takes the file's state (``updated``).
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"the import body is not UTF-8 (bad byte at offset {exc.start}): send the JSON "
            "lines of GET /api/export"
        ) from None
    if not text.strip():
        raise InvalidInputError(
            "the import body is empty: send the JSON lines of GET /api/export (header first)"
        )
    # split on "\n" only: JSON strings may hold U+2028, which str.splitlines() would split on
    return ImportOut(**memory.import_jsonl(text.split("\n"), space=space))

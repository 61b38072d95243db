"""``/api/sleep``: consolidate a space's pending episodes now."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from ...._kernel.llm import ChatModel, make_chat_model
from ..deps import MemoryDep, SettingsDep
from ..settings import ServerSettings
from .common import SpaceDep
from .schemas import SleepOut, errors

router = APIRouter(prefix="/sleep", tags=["sleep"], responses=errors(400, 401, 403, 409, 422, 503))


def _chat_model(settings: ServerSettings) -> ChatModel | None:
    """The model the *server* names (``--model`` with ``--upstream``), never the request's:
    a caller must not be able to point consolidation at a model server of its choosing."""
    if settings.model is None:
        return None
    return make_chat_model(settings.upstream_base, settings.model)


@router.post("", summary="Sleep (consolidate)")
def sleep(
    memory: MemoryDep,
    settings: SettingsDep,
    space: SpaceDep,
    retry_failed: Annotated[
        bool, Query(description="Re-open a failed batch's job for fresh attempts and run it.")
    ] = False,
) -> SleepOut:
    """Consolidate the space's pending episodes into states, events, facts and rules.

    With a model named in the server settings it extracts; otherwise the Memory's own model,
    or the rule-based consolidator (zero model calls). Episodes are never changed; claims
    that fail verification are reported in ``rejected``. A batch whose job failed is listed
    in ``failed_batches`` (and not run) until ``retry_failed=true``; a batch another worker
    holds under an unexpired lease is ``waiting`` (the request never blocks on it: call again
    after ``waiting.until``).
    """
    chat = _chat_model(settings)
    try:
        report = memory.sleep(space=space, model=chat, retry_failed=retry_failed)
    finally:
        if chat is not None:
            chat.close()
    return SleepOut(**report.to_dict())

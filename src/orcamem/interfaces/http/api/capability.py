"""``GET /api/capability``: the memory capability's settings, where each came from, and the
selected provider's state (one real call) with its own notes — what ``orcamem doctor`` prints.

Admin keys only: the workspace is the server's, not a space's. The workspace is the server's
configuration (``app.state.capability_workspace``; ``app.state.capability_instance_config``
optionally names the instance ``config.json``), never a request parameter, so no caller can
point the server at another folder. Unset: 503.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from ....capability import doctor_report
from ....errors import CapabilityNotConfigured
from .common import require_admin
from .schemas import errors

router = APIRouter(
    prefix="/capability",
    tags=["capability"],
    dependencies=[Depends(require_admin)],
    responses=errors(401, 403, 503),
)


@router.get("", summary="Memory capability: settings, provider state and notes")
def capability(request: Request) -> dict[str, Any]:
    """Every setting with its value, origin and badge; discarded layers and why; the selected
    provider's state, what to do about it, and its own notes; the built-in store's file counts."""
    workspace = getattr(request.app.state, "capability_workspace", None)
    if workspace is None:
        raise CapabilityNotConfigured(
            "this server has no memory-capability workspace: set app.state.capability_workspace "
            "(or run `orcamem doctor --workspace PATH` locally)"
        )
    return doctor_report(
        workspace, instance_config=getattr(request.app.state, "capability_instance_config", None)
    )

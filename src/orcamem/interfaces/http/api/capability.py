"""``GET /api/capability``: the memory capability's settings, where each came from, and the
selected provider's state (one real call) with its own notes — what ``orcamem doctor`` prints.
``PUT``/``DELETE /api/capability/settings/{key}``: set a workspace override (validated first:
a bad value is refused with the rule it broke, and the file is written atomically) or clear it
(the panel's Clear action); both answer with the report as it is afterwards.

Admin keys only: the workspace is the server's, not a space's. The workspace is the server's
configuration (``app.state.capability_workspace``; ``app.state.capability_instance_config``
optionally names the instance ``config.json``), never a request parameter, so no caller can
point the server at another folder. Unset: 503.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from ....capability import clear_workspace_override, doctor_report, set_workspace_override
from ....capability.settings import FIELDS
from ....errors import CapabilityNotConfigured
from .common import require_admin
from .schemas import errors

SettingKey = Literal[tuple(FIELDS)]  # type: ignore[valid-type]
KeyParam = Annotated[SettingKey, PathParam(description="The setting, e.g. topK, enabled.")]


class SettingIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: bool | int | float | str = Field(
        description="The new value: enabled/autoLoad/autoSave/includeArchived true or false, "
        "provider builtin-markdown or headroom-mcp, topK 1-50, decayHalfLifeDays 1-3650."
    )


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
    return _report(request, _workspace(request))


def _workspace(request: Request) -> Path:
    workspace = getattr(request.app.state, "capability_workspace", None)
    if workspace is None:
        raise CapabilityNotConfigured(
            "this server has no memory-capability workspace: set app.state.capability_workspace "
            "(or run `orcamem doctor --workspace PATH` locally)"
        )
    return Path(workspace)


def _report(request: Request, workspace: Path) -> dict[str, Any]:
    instance = getattr(request.app.state, "capability_instance_config", None)
    return doctor_report(workspace, instance_config=instance)


@router.put("/settings/{key}", summary="Set a workspace override", responses=errors(400, 413, 422))
def set_setting(request: Request, key: KeyParam, body: SettingIn) -> dict[str, Any]:
    """Write ``defaults.memory.<key>`` into the workspace's ``config.json`` (atomically; the
    rest of the file is kept). A value the layer would be discarded for is refused with the
    rule it broke, and nothing is written. Applies to sessions started afterwards."""
    workspace = _workspace(request)
    if not workspace.is_dir():
        raise CapabilityNotConfigured(
            f"the server's workspace {workspace} is not a folder: create it, or restart the "
            "server with --workspace naming the host's workspace"
        )
    set_workspace_override(workspace, key, body.value)
    return _report(request, workspace)


@router.delete("/settings/{key}", summary="Clear a workspace override", responses=errors(422))
def clear_setting(request: Request, key: KeyParam) -> dict[str, Any]:
    """Drop the workspace's override of ``key`` (it reverts to the instance default); nothing
    to clear is not an error. Answers with the report afterwards."""
    workspace = _workspace(request)
    clear_workspace_override(workspace, key)
    return _report(request, workspace)

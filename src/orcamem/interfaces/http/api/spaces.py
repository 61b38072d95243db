"""``/api/spaces``: the spaces a key may use, and one space's counts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from ....engine.store.base import SpaceInfo
from ....errors import NotFoundError
from ..deps import MemoryDep, PrincipalDep
from .schemas import SPACE_PATTERN, SpaceOut, SpacesOut, errors

router = APIRouter(prefix="/spaces", tags=["spaces"], responses=errors(401, 403, 503))


def _space(info: SpaceInfo) -> SpaceOut:
    return SpaceOut(**vars(info))


@router.get("", summary="List spaces")
def list_spaces(memory: MemoryDep, principal: PrincipalDep) -> SpacesOut:
    """Spaces that exist and that this key may use (an admin key sees all), by name."""
    infos = memory.space_infos()
    return SpacesOut(
        spaces=[_space(i) for i in infos if principal.admin or i.name in principal.spaces]
    )


@router.get("/{space}", summary="One space", responses=errors(400, 404, 422))
def get_space(
    memory: MemoryDep,
    principal: PrincipalDep,
    space: Annotated[str, Path(pattern=SPACE_PATTERN, description="The space name.")],
) -> SpaceOut:
    """A space's counts (episodes, lines, memories) and embedder; 404 before its first write."""
    space = principal.space(space)
    info = memory.space_info(space)
    if info is None:
        raise NotFoundError(f"no space {space!r} yet: it is created by its first write")
    return _space(info)

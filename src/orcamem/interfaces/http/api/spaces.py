"""``/api/spaces``: the spaces a key may use, and one space's counts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from ....engine.store.base import SpaceInfo
from ....errors import InvalidInputError, NotFoundError
from ..deps import MemoryDep, PrincipalDep
from .schemas import SPACE_PATTERN, SpaceDeletedOut, SpaceOut, SpacesOut, errors

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


@router.delete("/{space}", summary="Delete a space", responses=errors(400, 404, 422))
def delete_space(
    memory: MemoryDep,
    principal: PrincipalDep,
    space: Annotated[str, Path(pattern=SPACE_PATTERN, description="The space name.")],
    confirm: Annotated[
        str, Query(max_length=128, description="The space name again: a typed confirmation.")
    ],
) -> SpaceDeletedOut:
    """Delete the space with all it holds: episodes, memories, rules, audit log, jobs.

    Irreversible ("forget this user"): export it first if you may want it back. ``confirm``
    must repeat the name, so a mistyped path deletes nothing.
    """
    space = principal.space(space)
    if confirm != space:
        raise InvalidInputError(
            f"confirm={confirm!r} does not repeat the space name {space!r}: nothing was "
            f"deleted; pass confirm={space} to delete it"
        )
    return SpaceDeletedOut(space=space, deleted=memory.delete_space(space))

"""``/api/episodes``: append (add or observe, one or many), page, read and delete episodes."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from ...._kernel.model import Episode
from ..deps import MemoryDep
from .common import SpaceDep, json_answer
from .schemas import (
    EpisodeBatch,
    EpisodeIn,
    EpisodeOut,
    EpisodePage,
    EpisodesIn,
    EpisodesOut,
    errors,
)

router = APIRouter(
    prefix="/episodes", tags=["episodes"], responses=errors(400, 401, 403, 409, 422, 503)
)

EpisodeId = Annotated[int, Path(ge=1, le=2**63 - 1, description="The episode id.")]


def _out(episode: Episode) -> EpisodeOut:
    return EpisodeOut(**asdict(episode))


def _fields(item: EpisodeIn) -> dict:
    fields = item.model_dump(exclude_none=True)
    # observe(): a turn has a speaker; a bare text is a note
    fields["kind"] = item.kind or ("turn" if item.role else "note")
    return fields


@router.post(
    "", status_code=201, summary="Add episodes", response_model=EpisodesOut, responses=errors(413)
)
def add_episodes(memory: MemoryDep, space: SpaceDep, body: EpisodesIn) -> Response:
    """Append one episode, or a batch (``{"episodes": [...]}``), and index it at once.

    A turn is an episode with a ``role`` (``kind`` defaults to ``turn`` then, else ``note``).
    A batch is validated whole and stored in one transaction: all of it or nothing. The
    response returns after the write is on disk.
    """
    items = body.episodes if isinstance(body, EpisodeBatch) else [body]
    stored = memory.add_many([_fields(item) for item in items], space=space)
    return json_answer(EpisodesOut(episodes=[_out(e) for e in stored]), 201)


@router.get("", summary="List episodes")
def list_episodes(
    memory: MemoryDep,
    space: SpaceDep,
    after: Annotated[
        int, Query(ge=0, le=2**63 - 1, description="Return episodes with id > after (cursor).")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=500, description="Page size.")] = 100,
    session_id: Annotated[
        str | None, Query(min_length=1, max_length=256, description="Only this conversation.")
    ] = None,
) -> EpisodePage:
    """Episodes oldest first, a page at a time: pass ``next_after`` back as ``after``.

    An id cursor, not an offset: appends never shift a page, and a deleted episode never
    makes one skip a row.
    """
    rows = memory.episodes_page(space=space, after=after, limit=limit + 1, session_id=session_id)
    page = rows[:limit]
    return EpisodePage(
        episodes=[_out(e) for e in page], next_after=page[-1].id if len(rows) > limit else None
    )


@router.get("/{episode_id}", summary="Get an episode", responses=errors(404))
def get_episode(memory: MemoryDep, space: SpaceDep, episode_id: EpisodeId) -> EpisodeOut:
    """One episode of the space (404 if the id is in another space)."""
    return _out(memory.episode(episode_id, space=space))


@router.delete("/{episode_id}", status_code=204, summary="Delete an episode", responses=errors(404))
def delete_episode(memory: MemoryDep, space: SpaceDep, episode_id: EpisodeId) -> Response:
    """Delete the episode with its lines (memories that cited it keep their text)."""
    memory.forget(episode_id, space=space)
    return Response(status_code=204)

"""The session windows one search reads, each episode's once.

Neighbour smoothing reads the ±2 window of the best turns and the passage gate the ±1 window
of those it admits, mostly the same turns: a window read at one radius answers any smaller
one, so the gate queries only the turns smoothing did not read (docs/recall.md, "What a
search costs").
"""

from __future__ import annotations

from collections.abc import Sequence

from .candidates import CandidateSource

__all__ = ["Windows"]


class Windows:
    """``CandidateSource.session_window`` for one search of one space, remembered."""

    def __init__(self, store: CandidateSource, space: str) -> None:
        self._store = store
        self._space = space
        self._radius: dict[int, int] = {}
        self._known: dict[int, list[tuple[int, int]]] = {}

    def around(self, episode_ids: Sequence[int], radius: int) -> dict[int, list[tuple[int, int]]]:
        """As ``session_window``: each episode's neighbours within ``radius`` as ``(episode
        id, offset)``, episodes without one left out; what the store answers comes first, as
        it answered it, then what earlier reads already held."""
        missing = [eid for eid in episode_ids if self._radius.get(eid, 0) < radius]
        found = self._store.session_window(self._space, missing, radius) if missing else {}
        for eid in missing:
            self._radius[eid] = radius
            self._known[eid] = found.get(eid, [])
        held = (
            (eid, [(other, offset) for other, offset in self._known[eid] if abs(offset) <= radius])
            for eid in episode_ids
            if eid not in found
        )
        return {**found, **{eid: others for eid, others in held if others}}

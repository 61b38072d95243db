"""Sessions as documents (issue 15): a session whose turns together hold the query's words.

The session signal (``session_weight``) rates a session by its two best turns. A question
whose words are said across a session ("How did Melanie's kids react to the roadtrip
accident?": "roadtrip" in one turn, "kids" and "scared" in the next) is answered by a session
none of whose turns matches it well. Here a session is one document, the union of its
candidate turns' words: its score is the idf-weighted share of the query's topic words it
holds (as the per-item gate weighs a turn's), the best session's being 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import topics
from .candidates import LineRow

__all__ = ["cover"]


def cover(rows: Iterable[LineRow], idf: Mapping[str, float]) -> dict[str | None, float]:
    """Each session's share of the query's idf weight (``idf``: topic stem → idf) that its
    candidate turns hold together, scaled so the best session is 1."""
    mass = sum(idf.values())
    if mass <= 0:
        return {}
    held: dict[str | None, set[str]] = {}
    for row in rows:
        if row.session_id is not None:
            held.setdefault(row.session_id, set()).update(
                topics.stems(row.episode_text) & idf.keys()
            )
    share = {session: sum(idf[word] for word in words) for session, words in held.items()}
    high = max(share.values(), default=0.0)
    return {session: value / high for session, value in share.items()} if high > 0 else {}

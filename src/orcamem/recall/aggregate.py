"""Speaker-scoped aggregation (issue 15): "What activities does Melanie partake in?".

Such a question names a speaker and a category in the plural; its evidence is several of
that speaker's turns, in different sessions, that name instances ("swimming", "pottery")
and share no word with it. The speaker's turns are ranked by their cosine to the category
word(s) alone, and the best of up to ``aggregate_sessions`` sessions join the candidates
with ``aggregate_weight`` times their cosine over the best one's, as a vector share.
"""

from __future__ import annotations

import re

from .._kernel.config import Config
from .._kernel.embed import Embedder, embed_texts
from .._kernel.text import STOPWORDS
from . import signals
from .candidates import CandidateSource, LineRow
from .filters import SearchFilter

__all__ = ["categories", "join"]

_PLURAL_KIND_RE = re.compile(r"\b(?:what|which)\s+(?:kinds?\s+of\s+|types?\s+of\s+)?([a-z]{4,}s)\b")
"""A plural after "what"/"which" ("What activities", "which kinds of books"): the category
an aggregation question asks instances of."""

_NOT_CATEGORIES = frozenset({"types", "kinds", "ways", "things"})


def categories(query: str) -> list[str]:
    """The category words of an aggregation question (none for any other)."""
    found = _PLURAL_KIND_RE.findall(query.lower())
    return [word for word in found if word not in STOPWORDS and word not in _NOT_CATEGORIES]


def join(
    store: CandidateSource,
    embedder: Embedder,
    space: str,
    query: str,
    fused: dict[int, tuple[float, float]],
    rows: dict[int, LineRow],
    roles: list[str],
    floor: float,
    config: Config,
) -> None:
    """Add the named speakers' turns closest to the query's category to ``fused`` (a vector
    share) and ``rows`` (``enable_aggregation``)."""
    words = categories(query) if config.signals.enable_aggregation else []
    if not words or not roles:
        return
    vector = embed_texts(embedder, [" ".join(words)])[0]
    found: list[tuple[float, int]] = []
    for role in roles:
        hits = store.vector_lines(
            space, vector, config.signals.aggregate_candidates, where=SearchFilter(role=role)
        )
        found.extend((signals.above_floor(cos, floor), line) for line, cos in hits)
    found = sorted((item for item in found if item[0] > 0), reverse=True)
    if not found:
        return
    new = {line for _, line in found if line not in rows}
    rows.update((row.id, row) for row in store.lines(sorted(new)))
    best, sessions = found[0][0], set()
    for closeness, line in found:
        row = rows.get(line)
        if row is None or row.session_id in sessions:
            continue
        sessions.add(row.session_id)
        lex, vec = fused.get(line, (0.0, 0.0))
        fused[line] = (lex, vec + config.signals.aggregate_weight * closeness / best)
        if len(sessions) == config.signals.aggregate_sessions:
            break

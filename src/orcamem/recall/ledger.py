"""Local memory's fallback score (seed 000): when the ledger's FTS5 index is unavailable, recall
keeps working by bounded lexical overlap plus a small recency bonus."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from .._kernel.text import content_words
from .signals import age_days, recency

__all__ = ["FALLBACK_HALF_LIFE_DAYS", "FALLBACK_QUERY_TERMS", "fallback_rank"]


class Scored(Protocol):
    """What the fallback reads from a candidate."""

    text: str
    recorded_at: str


C = TypeVar("C", bound=Scored)


FALLBACK_QUERY_TERMS = 64


FALLBACK_RECENCY_WEIGHT = 0.1


FALLBACK_HALF_LIFE_DAYS = 30.0


def fallback_rank(prompt: str, candidates: Sequence[C], now: datetime, limit: int) -> list[C]:
    """Without the index: bounded lexical overlap (the share of the prompt's first 64 content
    words a candidate has) plus a small recency bonus (30-day half-life); no overlap, no hit."""
    terms = set(content_words(prompt)[:FALLBACK_QUERY_TERMS])
    if not terms:
        return []
    scored = []
    for candidate in candidates:
        overlap = len(terms & set(content_words(candidate.text))) / len(terms)
        if overlap <= 0:
            continue
        fresh = recency(age_days(now, candidate.recorded_at), FALLBACK_HALF_LIFE_DAYS)
        scored.append((overlap + FALLBACK_RECENCY_WEIGHT * fresh, candidate.recorded_at, candidate))
    scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [candidate for _, _, candidate in scored[:limit]]

"""Pure signal functions of the recall pipeline. Each returns a value in [0, 1] (Hawkes: [0, alpha]).

Presets weigh these into one score; the breakdown of every hit reports each signal, so a
user can see why a line was chosen. The formulas and constants are the episode-engine
spec's (Hawkes, Ebbinghaus, noise floor, RRF).
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import TypeVar

from .._kernel.clock import parse_time

__all__ = [
    "above_floor",
    "age_days",
    "base_level",
    "coverage",
    "date_match",
    "ebbinghaus_retention",
    "hawkes_intensity",
    "idf",
    "minmax",
    "neighbour_shares",
    "recency",
    "rrf",
    "session_strength",
    "usage",
]

K = TypeVar("K")
S = TypeVar("S")


def minmax(scores: Mapping[K, float]) -> dict[K, float]:
    """Min-max normalise to [0, 1]; a single score (or all equal) maps to 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-12:
        return {key: 1.0 for key in scores}
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def rrf(ranked: Sequence[K], k: int = 60, scale: float = 1.0) -> dict[K, float]:
    """Seed 003's reciprocal rank fusion term of one ranking: ``1 / (k + rank)``, rank from 1
    (summed over the channels: ``1/(60 + rank_BM25) + 1/(60 + rank_vector)``), times
    ``scale`` (in the same pass: fusion scales every term)."""
    return {key: scale * (1.0 / (k + rank)) for rank, key in enumerate(ranked, start=1)}


def above_floor(cosine: float, floor: float) -> float:
    """Cosine rescaled so the space's noise floor is 0: below it carries no evidence."""
    if cosine <= floor:
        return 0.0
    return (cosine - floor) / max(1e-9, 1.0 - floor)


def age_days(now: datetime, stamp: str | None) -> float:
    """Days from ``stamp`` (ISO-8601) to ``now``: 0 without a stamp, for an unreadable one, or
    for a future one (recency and staleness never count time backwards)."""
    if not stamp:
        return 0.0
    try:
        return max(0.0, (now - parse_time(stamp)).total_seconds() / 86400)
    except ValueError:
        return 0.0


def recency(age_days: float, half_life_days: float) -> float:
    """``0.5 ** (age / half_life)``; future times count as now."""
    return 0.5 ** (max(0.0, age_days) / half_life_days)


def usage(access_count: int, saturation: int = 50) -> float:
    """Log-scaled use, saturating at ``saturation`` accesses."""
    return min(1.0, math.log1p(max(0, access_count)) / math.log1p(saturation))


def hawkes_intensity(
    dt_seconds: float, alpha: float = 0.4, half_life_seconds: float = 1800.0
) -> float:
    """Hawkes self-exciting kernel ``alpha * exp(-beta * dt)``, ``beta = ln 2 / half_life``."""
    beta = math.log(2) / half_life_seconds
    return alpha * math.exp(-beta * max(0.0, dt_seconds))


def ebbinghaus_retention(
    dt_days: float, rehearsals: int, s0_days: float = 2.0, gain: float = 0.5
) -> float:
    """Retention ``exp(-dt / S)`` with stability ``S = S0 * (1 + gain * (n - 1))``."""
    n = max(1, rehearsals)
    stability = s0_days * (1 + gain * (n - 1))
    return math.exp(-max(0.0, dt_days) / stability)


def base_level(ages_days: Iterable[float], decay: float = 0.5) -> float:
    """ACT-R base-level activation ``B = ln Σ (age_days + 1)^(-d)`` over an item's mentions and
    retrievals (``d`` = 0.5, Anderson's decay): recent and frequent use both raise it. A
    future time counts as now; no mention at all is ``-inf``."""
    total = sum((max(0.0, age) + 1.0) ** -decay for age in ages_days)
    return math.log(total) if total > 0 else -math.inf


def neighbour_shares(
    scores: Mapping[K, float],
    window: Mapping[K, Sequence[tuple[K, int]]],
    before: Sequence[float],
    after: Sequence[float],
    asks: Container[K] = (),
    answer_share: float = 0.0,
) -> dict[K, float]:
    """What each turn borrows from scored turns of its session, the largest loan kept.

    A scored turn lends ``after[d - 1] * score`` to the turn ``d`` places after it and
    ``before[d - 1] * score`` to the turn ``d`` places before it (``window`` lists each scored
    turn's neighbours as ``(key, offset)``, offset +1 the next turn). A turn that asks a
    question (in ``asks``) lends at least ``answer_share`` of its score to the next turn:
    in a conversation the answer, which holds the fact, follows the question that matched.
    """
    lent: dict[K, float] = {}
    for key, others in window.items():
        base = scores.get(key, 0.0)
        if base <= 0:
            continue
        for other, offset in others:
            shares = after if offset > 0 else before
            distance = abs(offset)
            share = shares[distance - 1] if 0 < distance <= len(shares) else 0.0
            if offset == 1 and key in asks:
                share = max(share, answer_share)
            if share > 0:
                lent[other] = max(lent.get(other, 0.0), share * base)
    return lent


def session_strength(scores: Iterable[tuple[S, float]], top: int = 1) -> dict[S, float]:
    """Each session's evidence for a query: the mean of its ``top`` best turn scores, scaled
    so the strongest session is 1 (sessions with no positive score are left out)."""
    best: dict[S, list[float]] = {}
    for session, score in scores:
        if score > 0:
            best.setdefault(session, []).append(score)
    strength = {
        session: sum(sorted(values, reverse=True)[:top]) / max(1, top)
        for session, values in best.items()
    }
    high = max(strength.values(), default=0.0)
    if high <= 0:
        return {}
    return {session: value / high for session, value in strength.items()}


def date_match(
    day: date, ranges: Sequence[tuple[date, date]], before_days: float, after_days: float
) -> float:
    """1 when ``day`` falls in one of the named ``ranges`` widened by ``before_days`` before
    and ``after_days`` after (things are told a few days after they happen), else 0."""
    for first, last in ranges:
        if first - timedelta(days=before_days) <= day <= last + timedelta(days=after_days):
            return 1.0
    return 0.0


def idf(count: int, total: int) -> float:
    """How rare a word is among a space's ``total`` texts, ``count`` of which hold it:
    ``log((N+1)/(n+0.5))`` (a word the space never saw weighs most)."""
    return math.log((total + 1) / (count + 0.5))


def coverage(counts: Mapping[str, int], total: int) -> float:
    """How much of a query the space holds: the idf-weighted share of its words that occur in
    at least one of the space's ``total`` texts (``counts``: word → texts holding it).

    A word the space never saw weighs most (idf ``log((N+1)/0.5)``), so "quicksort" or
    "Dockerfile" asked of a chat about pottery scores near 0, while a question whose rare words
    the space holds scores near 1. No words: 0.
    """
    if not counts:
        return 0.0
    weights = {word: idf(count, total) for word, count in counts.items()}
    mass = sum(weights.values())
    if mass <= 0:
        return 1.0  # every word is in every text: the space holds all of it
    return sum(weight for word, weight in weights.items() if counts[word] > 0) / mass

"""The Memory Bank preset: the composite relevance score and the injected block, as pure code.

The bank is a port of the Brain Dump relevance model (issue 5; spec: Memory Bank). No
embeddings: keyword overlap plus eight semantic clusters. For a profile's active memories::

    score = (wR * recency + wU * usage + wT * topic) * confidence_multiplier

==============  ==================================================================================
recency         ``0.5 ** (age_days / 30)``: 30-day half-life, age measured from the later of
                ``createdAt`` and ``lastAccessedAt``
usage           ``0.6 + 0.4 * usage01(accessCount)``: a log ramp from 0.6 (never accessed)
                to 1.0 (``usage01`` is the pipeline's ``signals.usage``, ``log1p(n)/log1p(50)``
                capped at 1)
topic           share of the query's content words found in the memory (stop words removed,
                plurals folded) + ``CLUSTER_WEIGHT`` × share of the query's clusters that the
                memory shares, capped at 1
confidence      multiplier ``0.5 + 0.5 * confidence``
maturity        ``min(1, totalAccesses / 50)``: ``wU = 0.30 * maturity``; the slack
                ``0.30 * (1 - maturity)`` goes back to recency and topic in proportion to their
                weights (0.35 : 0.35, so half each)
staleness       ``(days * 0.05 - log10(n + 1) * 0.2 + (1 - c) * 0.3) * categoryWeight``,
                clamped to [0, 1]; surfaced, never used to filter
==============  ==================================================================================

The weights live in the ``bank`` preset (``presets.PRESETS["bank"]``), read here by name.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from .._kernel import text as kernel_text
from .._kernel.clock import parse_time
from .._kernel.text import STOPWORDS
from . import signals
from .presets import get_preset

__all__ = [
    "BANK_CATEGORIES",
    "CATEGORY_WEIGHTS",
    "CLUSTERS",
    "CORE_CATEGORIES",
    "INJECTION_MAX_RESULTS",
    "INJECTION_MIN_SCORE",
    "Rankable",
    "Relevance",
    "bank_weights",
    "clusters_of",
    "composite",
    "confidence_multiplier",
    "maturity",
    "rank",
    "recency",
    "staleness",
    "terms",
    "topic",
    "usage",
]

BANK_CATEGORIES = ("preference", "fact", "behavior", "context", "general")
"""The five categories of a bank memory."""
CORE_CATEGORIES = ("preference", "fact")
"""Categories eligible for the always-injected core tier; the others are query-only."""

RECENCY_HALF_LIFE_DAYS = 30.0
USAGE_BASELINE = 0.6
"""Usage of a never-accessed memory; the ramp rises from here toward 1.0."""
MATURITY_ACCESSES = 50
"""Cumulative recalls after which the usage weight is at full strength."""
CLUSTER_WEIGHT = 0.5
"""What a fully shared cluster adds to topic (literal overlap counts 1.0)."""

STALENESS_PER_DAY = 0.05
STALENESS_PER_LOG_ACCESS = 0.2
STALENESS_PER_DOUBT = 0.3
CATEGORY_WEIGHTS: Mapping[str, float] = {
    "preference": 0.5,
    "fact": 0.7,
    "behavior": 1.0,
    "context": 1.5,
    "general": 1.0,
}
"""Staleness tilt per category: preferences decay slowest, context fastest."""

INJECTION_MAX_RESULTS = 8
"""Query-relevant memories pulled for the block (core ids excluded)."""
INJECTION_MIN_SCORE = 0.05
"""The least composite score of a query-relevant memory in the block."""


CLUSTERS: Mapping[str, frozenset[str]] = {
    name: frozenset(words.split())
    for name, words in {
        "food": """food foods diet diets eat eating eats ate meal meals breakfast lunch dinner
            snack snacks cook cooking cooked recipe recipes cuisine restaurant restaurants
            vegan vegetarian gluten dairy lactose peanut peanuts nut nuts allergy allergies
            allergic fruit vegetable vegetables meat fish chicken beef pork rice bread pasta
            pizza sugar spicy coffee tea drink drinks beverage kitchen grocery groceries
            taste flavor flavour dessert calorie calories protein kosher halal""",
        "health": """health healthy doctor doctors medical medicine medication medications
            pill pills allergy allergies allergic illness ill sick sickness disease symptom
            symptoms pain hospital clinic therapy therapist exercise workout fitness gym
            run running sleep sleeping insomnia diet weight blood pressure diabetes asthma
            injury injured surgery dentist prescription mental anxiety stress wellness
            vitamin vitamins nurse heart""",
        "work": """work working job jobs career office boss manager colleague colleagues
            coworker coworkers team teams meeting meetings project projects deadline
            deadlines client clients customer customers employer employee salary promotion
            hire hiring interview resume company business task tasks report reports
            schedule standup sprint review reviews plan plans planning roadmap""",
        "tech": """tech technology code coding program programming programmer software
            hardware computer computers laptop server servers database databases api apis
            python javascript typescript golang rust java bug bugs debug debugging deploy
            deployment git repo repository repositories cloud linux docker kubernetes app
            apps website web framework library libraries json yaml sql script scripts file
            files directory dir cli terminal shell function functions schema test tests
            build compile""",
        "travel": """travel traveling travelling trip trips flight flights fly flying airport
            airline airlines hotel hotels vacation vacations holiday holidays passport visa
            luggage suitcase tour tourist destination abroad train trains booking beach
            itinerary journey cruise camping road""",
        "entertainment": """entertainment movie movies film films show shows series tv
            television music song songs band bands concert concerts game games gaming play
            playing book books novel novels read reading podcast podcasts theater theatre
            netflix album albums artist artists sport sports football soccer basketball
            hobby hobbies fun""",
        "communication": """communication communicate email emails mail message messages
            messaging chat chats call calls phone text texts reply replies respond response
            responses talk talking speak conversation slack contact contacts notify
            notification notifications letter letters tone format formatting language
            concise verbose brief summary summaries""",
        "shopping": """shopping shop shops buy buying bought purchase purchases order orders
            store stores price prices cost costs cheap expensive discount discounts sale
            sales deal deals brand brands cart checkout delivery shipping refund refunds
            amazon budget money pay payment""",
    }.items()
}
"""Eight vocabulary groups that bridge a query and a memory sharing a topic but no words."""


def terms(text: str) -> frozenset[str]:
    """The content words of ``text`` (stop words removed), lower-cased, plurals folded to the
    singular (``allergies`` → ``allergy``, ``meals`` → ``meal``)."""
    return frozenset(
        kernel_text.terms(
            text, apostrophe="cut", stopwords=STOPWORDS, min_len=2, plurals="singular"
        )
    )


_CLUSTER_TERMS: Mapping[str, frozenset[str]] = {
    name: frozenset(kernel_text.terms(" ".join(vocabulary), plurals="singular"))
    for name, vocabulary in CLUSTERS.items()
}


def clusters_of(words: Iterable[str]) -> frozenset[str]:
    """The clusters any of ``words`` (already passed through :func:`terms`) belongs to."""
    found = set()
    wanted = set(words)
    for name, vocabulary in _CLUSTER_TERMS.items():
        if wanted & vocabulary:
            found.add(name)
    return frozenset(found)


def recency(age_days: float) -> float:
    """``0.5 ** (age / 30)``: 1 now, 0.5 at 30 days, 0.25 at 60; the future counts as now."""
    return signals.recency(age_days, RECENCY_HALF_LIFE_DAYS)


def usage(access_count: int) -> float:
    """A logarithmic ramp from 0.6 (never accessed) to 1.0 (50 or more accesses)."""
    return USAGE_BASELINE + (1.0 - USAGE_BASELINE) * signals.usage(access_count, MATURITY_ACCESSES)


def topic(query_terms: frozenset[str], memory_terms: frozenset[str]) -> float:
    """Word overlap plus cluster matching, in [0, 1].

    ``|q ∩ m| / |q|`` plus ``CLUSTER_WEIGHT × |C(q) ∩ C(m)| / |C(q)|`` (a cluster counts only
    when it is on both sides), capped at 1. An empty query has no topic: 0.
    """
    if not query_terms:
        return 0.0
    overlap = len(query_terms & memory_terms) / len(query_terms)
    query_clusters = clusters_of(query_terms)
    shared = 0.0
    if query_clusters:
        shared = len(query_clusters & clusters_of(memory_terms)) / len(query_clusters)
    return min(1.0, overlap + CLUSTER_WEIGHT * shared)


def confidence_multiplier(confidence: float) -> float:
    """``0.5 + 0.5 * confidence``: a low-confidence save never dominates the ranking."""
    return 0.5 + 0.5 * min(1.0, max(0.0, confidence))


def maturity(total_accesses: int) -> float:
    """``min(1, totalAccesses / 50)``: how much query history the profile has."""
    return min(1.0, max(0, total_accesses) / MATURITY_ACCESSES)


def bank_weights(maturity_factor: float) -> dict[str, float]:
    """The weights at this maturity: usage gets ``wU * maturity``; the rest of ``wU`` goes to
    recency and topic in proportion to their own weights. Always sums to wR + wU + wT (1.0)."""
    base = get_preset("bank").weights
    w_r, w_u, w_t = base["recency"], base["usage"], base["topic"]
    slack = w_u * (1.0 - maturity_factor)
    return {
        "recency": w_r + slack * w_r / (w_r + w_t),
        "usage": w_u * maturity_factor,
        "topic": w_t + slack * w_t / (w_r + w_t),
    }


@dataclass(frozen=True)
class Relevance:
    """One memory's composite score and the signals that made it."""

    score: float
    recency: float
    usage: float
    topic: float
    confidence_multiplier: float
    maturity: float
    weights: Mapping[str, float]

    def to_dict(self) -> dict[str, object]:
        return {
            "score": round(self.score, 6),
            "recency": round(self.recency, 6),
            "usage": round(self.usage, 6),
            "topic": round(self.topic, 6),
            "confidenceMultiplier": round(self.confidence_multiplier, 6),
            "maturity": round(self.maturity, 6),
            "weights": {name: round(value, 6) for name, value in self.weights.items()},
        }


def composite(
    *,
    age_days: float,
    access_count: int,
    topic_score: float,
    confidence: float,
    maturity_factor: float,
) -> Relevance:
    """The composite score of one memory with its breakdown."""
    weights = bank_weights(maturity_factor)
    r, u = recency(age_days), usage(access_count)
    multiplier = confidence_multiplier(confidence)
    score = (
        weights["recency"] * r + weights["usage"] * u + weights["topic"] * topic_score
    ) * multiplier
    return Relevance(score, r, u, topic_score, multiplier, maturity_factor, weights)


def staleness(
    days_since_access: float, access_count: int, confidence: float, category: str
) -> float:
    """``(days * 0.05 - log10(n + 1) * 0.2 + (1 - c) * 0.3) * categoryWeight`` in [0, 1]."""
    raw = (
        max(0.0, days_since_access) * STALENESS_PER_DAY
        - math.log10(max(0, access_count) + 1) * STALENESS_PER_LOG_ACCESS
        + (1.0 - confidence) * STALENESS_PER_DOUBT
    ) * CATEGORY_WEIGHTS.get(category, 1.0)
    return min(1.0, max(0.0, raw))


# -- ranking -----------------------------------------------------------------------------------


class Rankable(Protocol):
    """What the composite score reads from a memory (the bank's ``BankMemory`` answers it)."""

    id: str
    category: str
    processed_content: str
    access_count: int
    confidence: float
    is_active: bool
    created_at: str

    @property
    def anchor(self) -> str: ...


M = TypeVar("M", bound=Rankable)


def rank(
    query: str,
    memories: Sequence[M],
    now: datetime,
    *,
    limit: int | None,
    min_score: float,
    exclude: Collection[str] = frozenset(),
    need_topic: bool = True,
    categories: Collection[str] | None = None,
) -> list[tuple[M, Relevance]]:
    """Score one profile's ``memories`` for ``query``, best first.

    The maturity factor comes from the profile's total accesses; a memory with no topic
    overlap is left out when ``need_topic`` (the core tier passes ``False``); ties go to the
    newest ``createdAt``, then the id.
    """
    factor = maturity(sum(m.access_count for m in memories))
    wanted = terms(query)
    ranked = []
    for memory in memories:
        if not memory.is_active or memory.id in exclude:
            continue
        if categories is not None and memory.category not in categories:
            continue
        overlap = topic(wanted, terms(memory.processed_content))
        if need_topic and overlap <= 0.0:
            continue
        relevance = composite(
            age_days=signals.age_days(now, memory.anchor),
            access_count=memory.access_count,
            topic_score=overlap,
            confidence=memory.confidence,
            maturity_factor=factor,
        )
        if relevance.score >= min_score:
            ranked.append((memory, relevance))
    ranked.sort(
        key=lambda pair: (
            -pair[1].score,
            -parse_time(pair[0].created_at).timestamp(),
            pair[0].id,
        )
    )
    return ranked if limit is None else ranked[:limit]

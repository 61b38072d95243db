"""The Markdown provider's lexical score and decay, as pure functions (no I/O, no clock).

The ``markdown`` preset (``presets.PRESETS["markdown"]``) holds the weights; the Markdown store
loads its files, calls these, and writes what they decide. Lexical, not semantic, and that is
the deal: ``branching`` and ``branch`` are different tokens.

- :func:`query_terms` — the query's distinct words, minus words under two characters and
  the seed's *short* list of English stop words (:data:`STOP_WORDS`, not the engine's 195:
  ``type``, ``kind`` or ``sort`` are words a user searches by).
- :func:`match` — the fraction of those words a memory accounts for (a tag word counts
  ``tag``, a body word ``body``), plus ``verbatim`` when the body holds a query of two or more
  words as written (a one-word "phrase" is only a body match: the bonus would let it tie a tag).
- :func:`decay` — ``0.5 ** (age / half-life)``; importance ≥ 0.7 doubles the half-life,
  ≤ 0.3 halves it, ≥ 0.9 pins the memory (no decay, no archive).
- :func:`rank` — match × bounded decay and importance nudges; :func:`clears_floor` — the
  minimum match, however fresh or important the memory is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from .._kernel import text as kernel_text
from .signals import recency

__all__ = [
    "ARCHIVE_BELOW",
    "FAST_AT",
    "MIN_WORD_CHARS",
    "PIN_AT",
    "SLOW_AT",
    "STOP_WORDS",
    "VERBATIM_MIN_WORDS",
    "Match",
    "age_days",
    "clears_floor",
    "decay",
    "effective_half_life",
    "is_archive_candidate",
    "is_pinned",
    "match",
    "query_terms",
    "rank",
    "terms",
]

MIN_WORD_CHARS = 2
"""Words shorter than this are dropped from queries, bodies and tags."""
SLOW_AT = 0.7
"""Importance at or above this doubles the effective half-life."""
FAST_AT = 0.3
"""Importance at or below this halves the effective half-life."""
PIN_AT = 0.9
"""Importance at or above this pins a memory: it never decays or archives."""
ARCHIVE_BELOW = 0.25
"""A decay score below this (two half-lives) makes a memory an archive candidate."""
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from",
    "had", "has", "have", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or",
    "our", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we", "were",
    "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
    # the contractions of those words ("don't stop" is about stopping)
    "i'm", "i've", "i'll", "i'd", "it's", "don't", "doesn't", "didn't", "that's", "you're",
    "we're", "they're", "isn't", "aren't", "wasn't", "let's", "there's",
})  # fmt: skip
"""The seed's "short list of English stop words": articles, pronouns, auxiliaries, prepositions
and question words, nothing a memory could be about."""
VERBATIM_MIN_WORDS = 2
"""A query needs this many content words for the verbatim bonus (one word is a body match)."""


def terms(text: str) -> list[str]:
    """Distinct lower-cased words of ``text`` in order, without stop words and words under
    ``MIN_WORD_CHARS``; ``pune's`` stays whole (a search's content words cut it to ``pune``)."""
    return kernel_text.terms(text, stopwords=STOP_WORDS, min_len=MIN_WORD_CHARS, distinct=True)


def query_terms(query: str) -> list[str]:
    """The query's distinct content words (what the match fraction is a fraction of)."""
    return terms(query)


def _verbatim_form(text: str) -> str:
    return " ".join(text.lower().split()).strip(" \t.,;:!?\"'()[]")


@dataclass(frozen=True)
class Match:
    """How well one memory matches a query."""

    coverage: float
    """Sum of each query word's credit (``tag`` or ``body`` weight) over the word count."""
    verbatim: float
    """The bonus for a body that holds the whole query as written (0 when it does not)."""

    @property
    def score(self) -> float:
        return self.coverage + self.verbatim


def match(
    query: str,
    body: str,
    tags: Iterable[str],
    weights: Mapping[str, float],
    *,
    query_words: Sequence[str] | None = None,
) -> Match:
    """Score ``body`` and ``tags`` against ``query`` with the preset's ``weights``.

    Each distinct query word earns ``weights["tag"]`` when a tag holds it, else
    ``weights["body"]`` when the body does, else nothing; coverage is the mean over the query's
    words. A body holding a query of :data:`VERBATIM_MIN_WORDS` or more content words itself,
    as whole words (case, spacing and the query's surrounding punctuation aside), gains
    ``weights["verbatim"]``; so a tag match always outweighs a body match for one word.

    >>> from orcamem.recall.presets import get_preset
    >>> w = get_preset("markdown").weights
    >>> match("what did we decide about branching?", "one topic branch per plan", [], w).score
    0.0
    >>> match("branching policy", "Our branching policy: one branch per plan", [], w).score
    1.5
    """
    wanted = list(query_words) if query_words is not None else query_terms(query)
    if not wanted:
        return Match(0.0, 0.0)
    tag_words = {word for tag in tags for word in terms(tag)}
    body_words = set(terms(body))
    credit = 0.0
    for word in wanted:
        if word in tag_words:
            credit += weights.get("tag", 1.5)
        elif word in body_words:
            credit += weights.get("body", 1.0)
    phrase = _verbatim_form(query) if len(wanted) >= VERBATIM_MIN_WORDS else ""
    holds = bool(phrase) and (
        re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", " ".join(body.lower().split())) is not None
    )
    return Match(credit / len(wanted), weights.get("verbatim", 0.5) if holds else 0.0)


def clears_floor(found: Match, weights: Mapping[str, float]) -> bool:
    """Whether a match is strong enough to show at all (freshness and importance aside)."""
    return found.score > 0 and found.score >= weights.get("min_match", 0.3)


def is_pinned(importance: float) -> bool:
    return importance >= PIN_AT


def effective_half_life(half_life_days: float, importance: float) -> float:
    """Importance changes the half-life, not the score: ×2 at ≥ 0.7, ×½ at ≤ 0.3."""
    if importance >= SLOW_AT:
        return half_life_days * 2
    if importance <= FAST_AT:
        return half_life_days / 2
    return half_life_days


def decay(age: float, half_life_days: float, importance: float) -> float:
    """``0.5 ** (age / effective half-life)``; 1.0 for a pinned memory (importance ≥ 0.9).

    >>> decay(60, 60, 0.5), decay(0, 60, 0.5), decay(120, 60, 0.7), decay(9999, 60, 0.9)
    (0.5, 1.0, 0.5, 1.0)
    """
    if is_pinned(importance):
        return 1.0
    return recency(age, effective_half_life(half_life_days, importance))


def age_days(
    now: datetime,
    *,
    created: datetime | None,
    updated: datetime | None,
    last_cited: datetime | None,
    fallback: datetime | None = None,
) -> float:
    """Days since the latest of ``updated`` and ``last_cited``, else ``created``, else
    ``fallback`` (the file's modification time); 0 when none is known. Never negative."""
    stamps = [stamp for stamp in (updated, last_cited) if stamp is not None]
    since = max(stamps) if stamps else (created or fallback)
    if since is None:
        return 0.0
    return max(0.0, (now - since).total_seconds() / 86400)


def is_archive_candidate(score: float, importance: float) -> bool:
    """Below 0.25 and not pinned."""
    return not is_pinned(importance) and score < ARCHIVE_BELOW


def rank(
    found: Match, decay_score: float, importance: float, weights: Mapping[str, float]
) -> float:
    """The order among matches: ``match × (f + (1 − f)·decay) × (g + 2(1 − g)·importance)``.

    With the preset's floors (f = 0.8, g = 0.9) decay costs at most a fifth of the match and
    importance moves it by at most a tenth either way (0.5 is neutral): comparable matches are
    reordered, a strong match is never pushed below the floor or out of the results.
    """
    floor = weights.get("decay_floor", 0.8)
    base = weights.get("importance_floor", 0.9)
    nudge = (floor + (1 - floor) * decay_score) * (base + 2 * (1 - base) * importance)
    return found.score * nudge

"""Recall: deterministic code over indexes, no model call.

candidates (BM25 lines + vector lines + memories) → fuse (min-max or RRF, noise floor) →
abstain when the space holds no real evidence for the query → aggregate lines to episodes → neighbour smoothing within a session → bounded boosts →
novelty gate → top-k. Every hit carries the breakdown of the signals that made its score.
"""

from __future__ import annotations

import calendar
import math
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache, partial
from typing import Any, TypeVar

import numpy as np

from .._kernel.clock import parse_time
from .._kernel.config import Config
from .._kernel.embed import Embedder, embed_texts
from .._kernel.model import Hit, MemoryRecord
from .._kernel.text import content_words, date_ranges, fts_query, split_sentences, terms
from . import signals, topics, when
from .candidates import CandidateSource, LineRow
from .evidence import offers
from .expansion import expand
from .filters import SearchFilter
from .presets import engine_preset
from .spreading import activate
from .windows import Windows

__all__ = ["ALWAYS", "CALIBRATION_TEXTS", "RecallResult", "Recalled", "recall"]

ALWAYS = "always"
"""The tag of a forbidden rule hoisted into every block, whatever the query
(``Memory.forbid(rule, always=True)``); other rules are hoisted only where they bear on it."""

_MONTH_WORDS = frozenset(
    (*(m.lower() for m in calendar.month_name[1:]), *(m.lower() for m in calendar.month_abbr[1:]))
)

_KIND_RE = re.compile(r"\b(?:what|which|whose)\s+([^\W\d_]+)")
"""The word after "what"/"which": the kind of answer asked for ("What car …?")."""
_REPEAT_SHARE = 0.8  # of two passages' words shared: a near-verbatim repeat (the novelty gate)

RRF_K = 60
"""Seed 003's RRF constant (``fusion="rrf"``)."""

CALIBRATION_TEXTS = 8
"""Texts a space needs before recall may abstain (the vector noise floor needs as many)."""


@dataclass(frozen=True)
class Recalled:
    """One hit as a sentence a person reads (``user · home city: Bangalore``), and the hit."""

    text: str
    hit: Hit


def _state_text(memory: MemoryRecord) -> str:
    """``user · home city: Bangalore``; a conditional one ``user · morning drink (when sore
    throat): ginger tea``; a memory without an attribute is its content."""
    if not memory.attribute:
        return memory.content
    when = f" (when {memory.condition})" if memory.condition else ""
    value = memory.value or memory.content
    return f"{memory.entity or 'user'} · {memory.attribute}{when}: {value}"


def _is_event(hit: Hit) -> bool:
    return hit.memory is not None and hit.memory.category == "event"


@dataclass
class RecallResult:
    """What a recall found: ranked hits, the space's forbidden rules, and where time went.

    ``states``, ``events`` and ``passages`` are the hits by kind, in rank order, each with a
    readable ``.text`` (the sections the memory block packs them into).
    """

    query: str
    space: str
    hits: list[Hit]
    rules: list[Hit]
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def states(self) -> list[Recalled]:
        """Current states, facts and preferences: ``user · home city: Bangalore``."""
        return [
            Recalled(_state_text(hit.memory), hit)
            for hit in self.hits
            if hit.memory is not None and not _is_event(hit)
        ]

    @property
    def events(self) -> list[Recalled]:
        """Dated events: ``2026-11-01: gift from manager: a Swiss knife``."""
        return [
            Recalled(f"{(hit.memory.event_date or hit.memory.created_at)[:10]}: {hit.text}", hit)
            for hit in self.hits
            if hit.memory is not None and _is_event(hit)
        ]

    @property
    def passages(self) -> list[Recalled]:
        """Episodes quoted as they were said (notes, turns, documents)."""
        return [Recalled(hit.text, hit) for hit in self.hits if hit.kind == "passage"]

    def to_dict(self) -> dict:
        views = {
            name: [{"id": item.hit.id, "text": item.text} for item in getattr(self, name)]
            for name in ("states", "events", "passages")
        }
        return {
            "query": self.query,
            "space": self.space,
            "hits": [hit.to_dict() for hit in self.hits],
            "rules": [rule.to_dict() for rule in self.rules],
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
            **views,
        }


def _fuse(lexical: dict, vector: dict, weights: dict[str, float], fusion: str) -> dict:
    """Combine the two channels into one relevance per key, with each channel's share.

    ``rrf`` is seed 003's ``1/(60 + rank_BM25) + 1/(60 + rank_vector)``, unweighted, over the
    channels the preset runs, with the noise floor applied first (a vector hit at or under it
    gets no rank, so no credit); it is scaled by a constant so a key first in every channel
    scores 1 (the bounded signals add to it), which leaves its order as the seed's. ``minmax``
    normalises each channel to [0, 1] and weighs them by the preset."""
    channels = {"lexical": lexical, "vector": {k: v for k, v in vector.items() if v > 0}}
    if fusion == "rrf":
        running = [name for name in channels if weights.get(name, 0) > 0]
        scale = (RRF_K + 1) / max(1, len(running))
        shares = {
            name: signals.rrf(_ranked(channel), RRF_K, scale) if name in running else {}
            for name, channel in channels.items()
        }
    else:
        shares = {
            name: {key: weights.get(name, 0.5) * v for key, v in signals.minmax(channel).items()}
            for name, channel in channels.items()
        }
    lex, vec = shares["lexical"], shares["vector"]
    return {key: (lex.get(key, 0.0), vec.get(key, 0.0)) for key in set(lex) | set(vec)}


def _informative(channel: dict[int, float], rows: dict[int, LineRow]) -> dict[int, float]:
    """A channel's hits but the stock lines: a line that says nothing but courtesy and a
    speaker's name ("Thanks, Caroline!", "Hey Mel!") matches every query that names that
    speaker, by its words and by its vector, and would stand in the block for whatever turn
    it opens (docs/recall.md, "Stock lines")."""
    roles = {row.role for row in rows.values() if row.role}
    names = {word for role in roles for word in terms(role)}
    return {
        key: score
        for key, score in channel.items()
        if key not in rows or not _topic_words(rows[key].text) <= names
    }


@lru_cache(maxsize=65536)
def _topic_words(text: str) -> frozenset[str]:
    """``text``'s content words but courtesy (``topics.CHATTER``); asked of the same
    candidate lines query after query."""
    return frozenset(word for word in content_words(text) if word not in topics.CHATTER)


def _ranked(scores: dict) -> list:
    return sorted(scores, key=scores.__getitem__, reverse=True)


def _dates(
    store: CandidateSource, space: str, query: str, rows: Iterable[LineRow], config: Config
) -> when.Times:
    """The day ranges the query names (``date_weight`` 0: none): its absolute dates, and with
    ``enable_time_expressions`` also a month or season named without a year, in each year the
    candidate lines were said in (``recall.when``); with ``enable_anchored_time`` also the
    ranges it fixes by an anchor (``when.anchored``), read against the latest candidate line
    (the conversation's present) and events found by a lexical lookup of their words."""
    if config.signals.date_weight <= 0:
        return when.Times()
    if not config.signals.enable_time_expressions:
        return when.Times(date_ranges(query))
    said = [row.occurred_at for row in rows if row.occurred_at]
    years = {stamp[:4] for stamp in said}
    times = when.ranges(query, (int(year) for year in years if year.isdigit()))
    if not config.signals.enable_anchored_time:
        return times
    latest = parse_time(max(said)).date() if said else None
    fixed = when.anchored(query, latest, _locate(store, space))
    return when.Times(times.stated, [*times.resolved, *fixed.resolved], fixed.words)


def _locate(store: CandidateSource, space: str) -> when.Locate:
    """The day an event's words were said: the date of the line that matches them best."""

    def locate(words: str) -> date | None:
        match = fts_query(words)
        found = store.lexical_lines(space, match, 1) if match else []
        rows = store.lines([found[0][0]]) if found else []
        return parse_time(rows[0].occurred_at).date() if rows and rows[0].occurred_at else None

    return locate


def _asks(text: str) -> bool:
    """Whether a turn asks something (its last sentence ends with a question mark). Asked of
    every candidate line, so its last character answers first when it can."""
    end = text[-1:]
    if end == "?":
        return True
    if end and not end.isspace() and end not in "\"')]":
        return False
    return text.rstrip().rstrip("\"')]").endswith("?")


def _prior(row: LineRow, config: Config) -> float:
    """The share of its relevance a line keeps: less for an assistant's turn (what the model
    said is not what the user said) and for a line that asks (it is not its own answer)."""
    share = config.signals.assistant_prior if row.role == "assistant" else 1.0
    return share * config.signals.question_prior if _asks(row.text) else share


_T = TypeVar("_T")

_CHANNELS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="orcamem-recall")
"""One small pool every recall shares: the BM25 query runs on it while the calling thread
scans the vectors (SQLite and numpy release the GIL), outside any lock. Recall never runs
inside a store write transaction (a ``":memory:"`` store's reads would wait for it)."""


def _begin(call: Callable[..., _T], *args: Any) -> Callable[[], _T]:
    """Start ``call(*args)`` on the pool; the returned function waits for its answer, or
    runs it on the calling thread when no worker has started it yet (all busy under load),
    so a search never queues behind other searches' queries."""
    job = _CHANNELS.submit(call, *args)

    def answer() -> _T:
        return call(*args) if job.cancel() else job.result()

    return answer


def _age_days(now: datetime, stamp: str | None) -> float:
    if not stamp:
        return 0.0
    return (now - parse_time(stamp)).total_seconds() / 86400


def recall(
    store: CandidateSource,
    embedder: Embedder,
    space: str,
    query: str,
    config: Config,
    now: datetime,
    *,
    top_k: int | None = None,
    where: SearchFilter | None = None,
) -> RecallResult:
    """Rank the space's passages and memories for ``query``.

    Args:
        store: where candidates come from.
        embedder: the space's embedder (already checked against the space).
        space: the only space searched.
        query: the user's words; any text is safe (FTS syntax is neutralised).
        config: switches and weights.
        now: the time recency and decay are measured against.
        top_k: hits to return (default ``config.recall.top_k``).
        where: only what it admits is ranked: the stores' candidate queries carry its
            clauses, and what recall adds beside them (session neighbours, spread
            activation, the state that superseded a passage, rules) is held to it too. The
            calibration (noise floor, evidence) stays the space's, so a narrow filter does
            not lower the bar a hit must clear.
    """
    where = where or None  # an empty filter is no filter: the unfiltered queries, unchanged
    timings: dict[str, float] = {}
    started = time.perf_counter()
    preset = engine_preset(config.recall.preset)
    limit = top_k or config.recall.top_k
    vector = embed_texts(embedder, [query])[0]
    match = fts_query(query)
    timings["embed"] = (time.perf_counter() - started) * 1000

    mark = time.perf_counter()
    weights = preset.weights
    passages = where is None or where.passages
    lexical_lines = (
        _begin(
            partial(store.lexical_lines, where=where),
            space,
            match,
            config.recall.lexical_candidates,
            (1.0, config.recall.lexical_context_weight),
        )
        if (match and weights.get("lexical", 0) > 0 and passages)
        else list
    )
    floor = store.noise_floor(space, config.recall.noise_floor_percentile)
    vector_hits = (
        store.vector_lines(space, vector, config.recall.vector_candidates, where=where)
        if (weights.get("vector", 0) > 0 and passages)
        else []
    )
    lexical = dict(lexical_lines())
    vectors = {key: signals.above_floor(cos, floor) for key, cos in vector_hits}
    timings["candidates"] = (time.perf_counter() - mark) * 1000

    mark = time.perf_counter()
    # a candidate's row is read before fusion: a stock line is no candidate (_informative)
    rows = {
        row.id: row
        for row in store.lines(
            [*lexical, *(k for k, v in vectors.items() if v > 0 and k not in lexical)]
        )
    }
    lexical, vectors = _informative(lexical, rows), _informative(vectors, rows)
    fused = _fuse(lexical, vectors, weights, config.recall.fusion)
    rows = {key: row for key, row in rows.items() if key in fused}
    hits: list[Hit] = []
    line_of: dict[str, int] = {}
    dates = _dates(store, space, query, rows.values(), config)
    evidence = _evidence(store, space, query, rows.values(), config, dates)
    if evidence is not None:
        fused = expand(store, embedder, space, query, fused, rows, config, where)
        wanted = where is None or where.memories
        ranked = (  # one BM25 of the memories: the candidates' and, unfiltered, activation's
            store.lexical_memories(space, match, _memory_ranks(config), where=where)
            if match and wanted
            else []
        )
        memories = (
            _memory_hits(store, space, ranked, vector, config, now, evidence, floor, where)
            if wanted
            else []
        )
        windows = Windows(store, space)
        keys = _keys(memories, config)
        states = [mid for mid, _ in ranked[: config.signals.activation_states]]
        hits, line_of = _episode_hits(
            store, space, fused, rows, config, query, dates, now, limit * 3, keys, windows,
            states if where is None else None,
        )  # fmt: skip
        matched = {row.episode_id for row in rows.values() if row.id in fused}
        if where is not None:  # neighbours and activation reach episodes the filter left out
            hits = [hit for hit in hits if hit.episode_id in matched]
        hits = _gate_passages(
            store, space, hits, rows, vectors, evidence, config, memories, windows
        )
        hits = _evidence_sets(store, space, hits, line_of, rows, vector, evidence, floor, config)
        if where is not None:  # and so do evidence sets
            hits = [hit for hit in hits if hit.episode_id in matched]
        hits.extend(memories)
    hits.sort(key=lambda hit: hit.score, reverse=True)
    hits = _adaptive(hits, config)
    selected = _novel(store, space, hits, line_of, rows, config.recall.novelty_threshold, limit)
    current = _mark_outdated(store, space, selected)
    if where is not None:
        current = {key: memory for key, memory in current.items() if where.admits(memory)}
    selected = _lead_with_current(space, selected, current, limit)
    timings["score"] = (time.perf_counter() - mark) * 1000

    rules = _rules(store, space, query, config)
    if where is not None:
        rules = [rule for rule in rules if rule.memory is not None and where.admits(rule.memory)]
    timings["total"] = (time.perf_counter() - started) * 1000
    return RecallResult(query, space, selected, rules, timings)


@dataclass(frozen=True)
class _Evidence:
    """What counts as evidence for one query: its topic words (stems, each with its idf in the
    space) and the speakers it names. ``gated`` is False where recall cannot calibrate (a space
    under ``CALIBRATION_TEXTS`` texts, or ``min_evidence`` 0): then every item is admitted."""

    idf: dict[str, float]
    speakers: frozenset[str]
    gated: bool
    subjects: frozenset[str] = frozenset()
    parts: tuple[frozenset[str], ...] = ()
    kinds: frozenset[str] = frozenset()

    def coverage(self, text: str, role: str | None = None) -> float:
        """The idf-weighted share of the query's topic words that ``text`` holds (stems
        compared), for the sentence of the query it covers best ("Where do I live? What should
        I drink?" asks two things); a turn by a speaker the query names covers a query of
        nothing else.

        The word that names the kind of answer ("car" in "What car do I drive?") is left out
        when the query has others: the answer names an instance ("a blue Honda Civic")."""
        if not self.idf:
            return 1.0 if self.names(role) else 0.0
        held = topics.stems(text)
        best = 0.0
        for part in self.parts or (frozenset(self.idf),):
            needed = (part - self.kinds) or part
            mass = sum(self.idf.get(word, 0.0) for word in needed)
            if mass > 0:
                best = max(best, sum(self.idf.get(word, 0.0) for word in needed & held) / mass)
        return best

    def restates(self, hit: Hit) -> bool:
        """Whether ``hit`` (a turn that asks) is the query asked again: every topic word of it
        is one of the query's. It says nothing the query does not ("What do I drink?" for
        "What do I drink?"); its answer, the turn after it, still rides in on it. Not when
        the query is about the asking ("When did I ask about my dentist?"): then the question
        is the answer."""
        held = topics.stems(hit.text)
        asked = self.idf.keys() | self.speakers
        return bool(held) and held <= asked and asked.isdisjoint(_ASKING)

    def names(self, role: str | None) -> bool:
        """Whether the query names the speaker ``role`` ("John's" names John)."""
        return bool(role) and not self.speakers.isdisjoint(_name_stems(role))

    def admits(
        self,
        text: str,
        role: str | None,
        vector: float,
        config: Config,
        *,
        fact: bool = False,
        by_name: bool = True,
    ) -> bool:
        """The per-item gate: the item's own words cover ``item_evidence`` of the query, or
        its cosine clears the space's noise floor by ``item_vector`` (``vector`` is
        ``signals.above_floor`` of it), or the query names its speaker; a ``fact`` (a short
        consolidated or explicit memory) also passes when it shares a topic with the query
        ("home city: Bangalore" for "Where do I live?")."""
        if not self.gated or (by_name and self.names(role)):
            return True
        return (
            vector >= config.recall.item_vector  # the cheap test first
            or self.coverage(text, role) >= config.recall.item_evidence
            or (fact and not self.subjects.isdisjoint(topics.topics(topics.stems(text))))
        )


_ASKING = frozenset({"ask", "question", "wonder", "inquir"})
_REQUEST_RE = re.compile(
    r"(?i)^\W*(?:please\s+)?(?:write|give|tell|list|make|create|explain|show|suggest|translate|"
    r"summari[sz]e|draft|generate|describe|recommend|find|compose|rewrite|name|plan)\b"
)
"""A user's request in the imperative ("Write a haiku about autumn."): like a question, it is
no answer of its own, and asked again it must not come back as memory."""


def _requests(hit: Hit) -> bool:
    return hit.role != "assistant" and bool(_REQUEST_RE.match(hit.text))


"""Stems of a query about a question asked (``topics.stem``: "asked" → ``ask``)."""


@lru_cache(maxsize=1024)
def _name_stems(role: str | None) -> frozenset[str]:
    return frozenset(topics.stem(word) for word in terms(role)) if role else frozenset()


def _named(word: str, speakers: set[str], query: str, runs: frozenset[str]) -> str | None:
    """The speaker (a name stem) the query's ``word`` names: the name itself ("John's"), or a
    capitalised short form of it ("Mel" for Melanie, at least three letters) standing alone
    in the query (``runs``: its runs of word characters, ``_WORD_RUN_RE``)."""
    key = topics.stem(word)
    if key in speakers:
        return key
    if len(word) >= 3 and _stands_alone(word.capitalize(), query, runs):
        return next((name for name in sorted(speakers) if name.startswith(word)), None)
    return None


_WORD_RUN_RE = re.compile(r"\w+")


def _stands_alone(word: str, query: str, runs: frozenset[str]) -> bool:
    """Whether ``\\bword\\b`` matches ``query``. A word of word characters only (``\\w`` is
    ``str.isalnum`` or ``_``) matches exactly when it is one of the query's maximal runs of
    them: a set lookup, not a regex compiled per word and query."""
    if word.isalnum():
        return word in runs
    return re.search(rf"\b{re.escape(word)}\b", query) is not None


def _evidence(
    store: CandidateSource,
    space: str,
    query: str,
    candidates: Iterable[LineRow],
    config: Config,
    dates: when.Times,
) -> _Evidence | None:
    """The query's evidence words, or ``None`` when the space holds no real evidence for it
    (recall abstains: empty block, prompt untouched).

    The query's topic words are its content words without chatter (``topics.CHATTER``: "Hi!",
    "Thanks for your help.") and without the names of the space's speakers. The space must hold
    enough of them, weighted by how rare each is (``signals.coverage`` ≥ ``min_evidence``), so
    "What is the capital of France?" asked of a chat that never mentions a capital or France
    finds nothing; a query of nothing but a speaker's name ("What about Caroline?") is evidence
    of itself, a query of nothing but chatter is none. Chosen on LoCoMo dev conversations 0-2,
    checked on 3-4 (docs/recall.md, "What reaches the model").

    A space of fewer than ``CALIBRATION_TEXTS`` lines and memories is not calibrated (rare and
    common words cannot be told apart, as its vector noise floor is 0): it never abstains.
    """
    words = [word for word in content_words(query) if word not in topics.CHATTER]
    if dates:  # a date is matched by the date signal, not by words
        words = [word for word in words if not (word in _MONTH_WORDS or word[0].isdigit())]
        words = [word for word in words if word not in dates.words] or words
    speakers = {name for row in candidates for name in _name_stems(row.role)}
    runs = frozenset(_WORD_RUN_RE.findall(query))
    names = {word: _named(word, speakers, query, runs) for word in words}
    named = frozenset(name for name in names.values() if name)
    rest = [word for word, name in names.items() if name is None][:32]
    if config.recall.min_evidence <= 0:
        return _Evidence({}, named, gated=False)
    total, counts = store.term_counts(space, rest)
    if total < CALIBRATION_TEXTS:
        return _Evidence({}, named, gated=False)
    if not rest:
        return _Evidence({}, named, gated=True) if named else None
    wanted = config.recall.min_evidence_named if named else config.recall.min_evidence
    if signals.coverage(counts, total) < wanted:
        return None
    idf: dict[str, float] = {}
    for word, count in counts.items():
        key = topics.stem(word)
        idf[key] = max(idf.get(key, 0.0), signals.idf(count, total))
    parts = tuple(
        frozenset(topics.stems(sentence)) & idf.keys() for sentence in split_sentences(query)
    )
    kinds = frozenset(topics.stem(word) for word in _KIND_RE.findall(query.lower())) & idf.keys()
    return _Evidence(
        idf, named, gated=True, subjects=frozenset(topics.topics(idf)), parts=parts, kinds=kinds
    )


def _episode_hits(
    store: CandidateSource,
    space: str,
    fused: dict[int, tuple[float, float]],
    rows: dict[int, LineRow],
    config: Config,
    query: str,
    dates: when.Times,
    now: datetime,
    keep: int,
    keys: dict[int, float],
    windows: Windows,
    states: list[str] | None,
) -> tuple[list[Hit], dict[str, int]]:
    """Lines to episode passages: best line wins (its relevance times ``_prior``, and what a
    fact made from it lends, ``keys``); neighbours in the session lend a share. ``states``:
    the best-matching memories for activation's seeds, when recall has ranked them already.

    Returns the hits and, per hit id, the line whose vector stands for it.
    """
    best: dict[int, tuple[float, int, tuple[float, float]]] = {}
    for line_id, (lex, vec) in fused.items():
        row = rows.get(line_id)
        if row is None:
            continue
        score = (lex + vec + keys.get(line_id, 0.0)) * _prior(row, config)
        current = best.get(row.episode_id)
        if current is None or score > current[0]:
            best[row.episode_id] = (score, line_id, (lex, vec))
    for row in store.lines([line for line in keys if line not in rows]):
        rows[row.id] = row
        score = keys[row.id] * _prior(row, config)
        if score > best.get(row.episode_id, (0.0,))[0]:
            best[row.episode_id] = (score, row.id, (0.0, 0.0))

    neighbour_of: dict[int, float] = {}
    before, after = config.signals.neighbour_weights_before, config.signals.neighbour_weights_after
    radius = max(len(before), len(after), 1 if config.signals.answer_share > 0 else 0)
    if radius and best:
        lenders = sorted(best, key=lambda eid: best[eid][0], reverse=True)
        lenders = lenders[: config.signals.neighbour_sources]
        window = windows.around(lenders, radius)
        asks = {eid for eid in lenders if _asks(rows[best[eid][1]].episode_text)}
        scores = {eid: best[eid][0] for eid in lenders}
        neighbour_of = signals.neighbour_shares(
            scores, window, before, after, asks, config.signals.answer_share
        )
    extra = [eid for eid in neighbour_of if eid not in best]
    for row in store.episode_lines(space, extra, first_only=True):
        rows[row.id] = row
        best[row.episode_id] = (0.0, row.id, (0.0, 0.0))
    lift = (
        activate(store, space, query, best, neighbour_of, rows, config, states)
        if config.signals.enable_spreading_activation
        else {}
    )

    strength: dict[str | None, float] = {}
    if config.signals.session_weight > 0:
        strength = signals.session_strength(
            ((rows[line_id].session_id, value) for value, line_id, _ in best.values()),
            config.signals.session_top,
        )

    query_words = set(terms(query))
    matched = max((lex + vec for _, _, (lex, vec) in best.values()), default=0.0) or 1.0
    moments: dict[str, datetime] = {}  # many hits share a session time: parse each once
    speaks: dict[str, bool] = {}
    scored: list[tuple[float, int, int, dict[str, float], datetime | None]] = []
    # read once: the loop below runs for every candidate episode
    slack = (config.signals.date_slack_before_days, config.signals.date_slack_after_days)
    dated = bool(dates)
    speaker_bonus = config.signals.enable_speaker_bonus
    speaker_weight = config.signals.speaker_weight
    session_weight, date_weight = config.signals.session_weight, config.signals.date_weight
    for episode_id, (relevance, line_id, (lex, vec)) in best.items():
        row = rows[line_id]
        breakdown = {"lexical": lex, "vector": vec}
        if line_id in keys:
            breakdown["fact"] = keys[line_id]
        lent = neighbour_of.get(episode_id, 0.0)
        breakdown["neighbour"] = lent
        if episode_id in lift:
            breakdown["activation"] = lift[episode_id]
        if strength and row.session_id is not None:
            breakdown["session"] = session_weight * strength.get(row.session_id, 0.0)
        stamp = row.occurred_at
        moment = moments.get(stamp) if stamp else None
        if moment is None and stamp:
            moment = moments[stamp] = parse_time(stamp)
        if dated and moment is not None:
            day = moment.date()
            said = signals.date_match(day, dates.stated, *slack) or (
                # a month without its year ("in June") favours a line by how well it matched
                # the query: every line of a June would otherwise outrank the one asked about
                signals.date_match(day, dates.resolved, *slack) * (lex + vec) / matched
            )
            breakdown["date"] = date_weight * said
        if speaker_bonus and row.role:
            named = speaks.get(row.role)
            if named is None:
                named = speaks[row.role] = bool(set(terms(row.role)) & query_words)
            if named:
                breakdown["speaker"] = speaker_weight * (relevance + lent)
        prior = _prior(row, config)
        if prior != 1.0:  # the line's relevance and all it earned beside it, by its prior
            breakdown["prior"] = (prior - 1.0) * sum(breakdown.values())
        scored.append((sum(breakdown.values()), episode_id, line_id, breakdown, moment))

    # Recency and Hawkes are bounded: only hits that could still reach the top ``keep`` after
    # them get them (exact, and it spares building a Hit for every candidate).
    bound = (
        (config.signals.recency_weight if config.signals.enable_recency else 0.0)
        + (
            config.signals.hawkes_weight * config.signals.hawkes_alpha
            if config.signals.enable_hawkes
            else 0.0
        )
        + (config.signals.base_level_weight if config.signals.enable_base_level else 0.0)
    )
    if len(scored) > keep:
        scored.sort(key=lambda item: item[0], reverse=True)
        cutoff = scored[keep - 1][0] - bound
        scored = [item for item in scored if item[0] >= cutoff]
    hits: list[Hit] = []
    line_of: dict[str, int] = {}
    for _, _episode, line_id, breakdown, moment in scored:
        row = rows[line_id]
        age = (now - moment).total_seconds() / 86400 if moment is not None else 0.0
        if config.signals.enable_recency:
            breakdown["recency"] = config.signals.recency_weight * signals.recency(
                age, config.signals.recency_half_life_days
            )
        if config.signals.enable_hawkes:
            breakdown["hawkes"] = config.signals.hawkes_weight * signals.hawkes_intensity(
                age * 86400, config.signals.hawkes_alpha, config.signals.hawkes_half_life_seconds
            )
        if config.signals.enable_base_level:
            breakdown["base_level"] = _base_level([age], config)
        hits.append(_passage_hit(row, space, breakdown))
        line_of[hits[-1].id] = line_id
    return hits, line_of


def _passage_hit(row: LineRow, space: str, breakdown: dict[str, float]) -> Hit:
    """The episode of ``row`` as a passage hit, matched at ``row``."""
    return Hit(
        kind="passage",
        id=f"ep-{row.episode_id}",
        text=row.episode_text,
        score=sum(breakdown.values()),
        space=space,
        breakdown=breakdown,
        occurred_at=row.occurred_at,
        role=row.role,
        session_id=row.session_id,
        turn_id=row.turn_id,
        episode_id=row.episode_id,
        line=f"s{row.seq}",
    )


def _evidence_sets(
    store: CandidateSource,
    space: str,
    hits: list[Hit],
    line_of: dict[str, int],
    rows: dict[int, LineRow],
    vector: np.ndarray,
    evidence: _Evidence,
    floor: float,
    config: Config,
) -> list[Hit]:
    """The gated passages with their evidence sets (``recall.evidence``, with
    ``enable_evidence_sets``): a passage offered more than its score is raised to the offer
    (``breakdown["evidence"]``); a turn that was not among them joins at the offer when it
    passes the per-item gate on its own words or its cosine (its ``_prior`` applied), never
    by its speaker's name, and at most ``evidence_new`` join."""
    if not config.signals.enable_evidence_sets:
        return hits
    offered = offers(store, space, hits, config)
    present = {hit.episode_id: hit for hit in hits if hit.episode_id is not None}
    for episode, (offer, _) in offered.items():
        hit = present.get(episode)
        if hit is not None and offer > hit.score:
            hit.breakdown["evidence"] = offer - hit.score
            hit.score = offer
    new = sorted(
        ((offer, row) for episode, (offer, row) in offered.items() if episode not in present),
        key=lambda item: (-item[0], item[1].id),
    )
    vectors = store.line_vectors(space, [row.id for _, row in new])
    joined = 0
    for offer, row in new:
        if joined == config.signals.evidence_new:
            break
        cosine = float(vectors[row.id] @ vector) if row.id in vectors else 0.0
        closeness = signals.above_floor(cosine, floor) * _prior(row, config)
        if evidence.admits(row.text, row.role, closeness, config, by_name=False):
            hits.append(_passage_hit(row, space, {"evidence": offer}))
            line_of[hits[-1].id] = row.id
            rows[row.id] = row
            joined += 1
    return hits


def _keys(memories: list[Hit], config: Config) -> dict[int, float]:
    """A consolidated fact as an extra key of the lines it came from ("key = value + fact"):
    each cited line gets ``fact_key_weight`` times the relevance of the best fact that cites
    it and matched the query (``enable_fact_keys``)."""
    if not config.signals.enable_fact_keys:
        return {}
    keys: dict[int, float] = {}
    for hit in memories:
        if hit.memory is None:
            continue
        credit = config.signals.fact_key_weight * (
            hit.breakdown.get("lexical", 0.0) + hit.breakdown.get("vector", 0.0)
        )
        for line in hit.memory.cited_lines:
            keys[line] = max(keys.get(line, 0.0), credit)
    return keys


def _gate_passages(
    store: CandidateSource,
    space: str,
    hits: list[Hit],
    rows: dict[int, LineRow],
    vectors: dict[int, float],
    evidence: _Evidence,
    config: Config,
    memories: list[Hit],
    windows: Windows,
) -> list[Hit]:
    """Passages with evidence of their own: those that pass the per-item gate
    (``_Evidence.admits``); the reply right after one of them that asks (it holds the fact
    its question matched; a reply that asks again holds none); the question right before one
    that a user said (it says what the reply answers; a model's answer is its guess, not
    evidence for the question); and the turn an admitted memory was consolidated from (the
    fact leads, its line supports it). None of the last three when an assistant said it, and
    no assistant turn at all once a person's own turn passed: what the user said outranks what
    a model replied about it ("I believe you live in Paris" beside "My home city is
    Bangalore" would only mislead). A question the query only restates is left out, though its
    reply rides in on it (``_Evidence.restates``): a user who asks the same thing in every
    chat must not get a block of their own questions.

    A line's vector evidence is discounted by its ``_prior``, as its relevance is: an
    assistant's "Nice to meet you. What are you working on?" is close to any question about
    the user and says nothing of them. The session, neighbour and activation bonuses only
    reorder what passed: a turn that has nothing else (the rest of the best session, what the
    entity graph lifted) is left out."""
    if not evidence.gated:
        return hits
    closest: dict[int, float] = {}
    for line_id, value in vectors.items():
        row = rows.get(line_id)
        if row is not None:
            share = value * _prior(row, config)
            closest[row.episode_id] = max(closest.get(row.episode_id, 0.0), share)
    own = {
        hit.episode_id
        for hit in hits
        if hit.episode_id is not None
        and evidence.admits(
            hit.text, hit.role, closest.get(hit.episode_id, 0.0), config, by_name=False
        )
    }
    own |= _named_best(hits, evidence, config)
    asks = {hit.episode_id for hit in hits if _asks(hit.text)}
    replies = {hit.episode_id for hit in hits if hit.role != "assistant"}
    riders: set[int] = set()
    for anchor, others in windows.around(sorted(own), 1).items():
        riders.update(
            other
            for other, offset in others
            if (offset == 1 and anchor in asks and other not in asks)
            or (offset == -1 and other in asks and anchor in replies)
        )
    cited = [line for hit in memories if hit.memory is not None for line in hit.memory.cited_lines]
    if cited:
        riders.update(row.episode_id for row in store.lines(cited))
    said = {hit.episode_id for hit in hits if hit.role != "assistant"} & own
    restated = {
        hit.episode_id
        for hit in hits
        if (hit.episode_id in asks or _requests(hit)) and evidence.restates(hit)
    }
    return [
        hit
        for hit in hits
        if hit.episode_id not in restated
        and (
            (hit.episode_id in own and not (said and hit.role == "assistant"))
            or (hit.role != "assistant" and hit.episode_id in riders)
        )
    ]


def _named_best(hits: list[Hit], evidence: _Evidence, config: Config) -> set[int]:
    """The turns admitted only because the query names their speaker: with
    ``named_speaker_top`` N, the speaker's N best-scored turns (a name says whose lines to
    look at, not that every one of them answers); 0 admits all of them."""
    named = [hit for hit in hits if hit.episode_id is not None and evidence.names(hit.role)]
    if config.recall.named_speaker_top:
        named.sort(key=lambda hit: hit.score, reverse=True)
        named = named[: config.recall.named_speaker_top]
    return {hit.episode_id for hit in named if hit.episode_id is not None}


def _adaptive(hits: list[Hit], config: Config) -> list[Hit]:
    """The adaptive count: hits (in score order) that score above ``min_score`` and at least
    ``relative_score`` of the best one; the gap below that carries no evidence worth tokens."""
    kept = [hit for hit in hits if hit.score > config.recall.min_score]
    if not kept:
        return []
    floor = config.recall.relative_score * kept[0].score
    return [hit for hit in kept if hit.score >= floor]


def _memory_score(
    memory: MemoryRecord, relevance: tuple[float, float], config: Config, now: datetime
) -> dict[str, float]:
    lex, vec = relevance
    breakdown = {"lexical": lex, "vector": vec}
    if memory.pinned:
        breakdown["pinned"] = config.signals.pinned_weight

    def age(stamp: str | None) -> float:  # a pinned memory does not decay: its age stays 0
        return 0.0 if memory.pinned else _age_days(now, stamp)

    touched = memory.last_accessed_at or memory.created_at
    if config.signals.enable_recency:
        breakdown["recency"] = config.signals.recency_weight * signals.recency(
            age(memory.updated_at), config.signals.recency_half_life_days
        )
    if config.signals.enable_usage:
        breakdown["usage"] = config.signals.usage_weight * signals.usage(memory.access_count)
    if config.signals.enable_hawkes:
        breakdown["hawkes"] = config.signals.hawkes_weight * signals.hawkes_intensity(
            age(touched) * 86400,
            config.signals.hawkes_alpha,
            config.signals.hawkes_half_life_seconds,
        )
    if config.signals.enable_ebbinghaus:
        breakdown["ebbinghaus"] = config.signals.ebbinghaus_weight * signals.ebbinghaus_retention(
            age(touched),
            memory.access_count + 1,
            config.signals.ebbinghaus_s0_days,
            config.signals.ebbinghaus_gain,
        )
    if config.signals.enable_base_level:
        made = age(memory.created_at)
        mentions = [made] * max(1, len(memory.cited_lines))
        retrieved = [age(touched)] * memory.access_count
        breakdown["base_level"] = _base_level([*mentions, *retrieved], config)
    return breakdown


def _base_level(ages: list[float], config: Config) -> float:
    """The bounded ACT-R base level: ``base_level_weight · min(1, e^B)``."""
    level = signals.base_level(ages, config.signals.base_level_decay)
    return config.signals.base_level_weight * min(1.0, math.exp(level))


def _memory_ranks(config: Config) -> int:
    """How many memories one BM25 query ranks: the candidates, and activation's seeds (a
    prefix of the same order: both stores break ties in write order)."""
    states = config.signals.activation_states if config.signals.enable_spreading_activation else 0
    return max(config.recall.lexical_candidates, states)


def _memory_hits(
    store: CandidateSource,
    space: str,
    ranked: list[tuple[str, float]],
    vector: np.ndarray,
    config: Config,
    now: datetime,
    evidence: _Evidence,
    floor: float,
    where: SearchFilter | None = None,
) -> list[Hit]:
    """Active memories that are not rules and pass the per-item gate, scored. A query that
    names a memory's entity ("What did Caroline research?") does not admit it: after sleep
    every speaker has states, and only those that hold the query's words answer it."""
    weights = engine_preset(config.recall.preset).weights
    lexical = dict(ranked[: config.recall.lexical_candidates])
    vec_hits = store.vector_memories(space, vector, config.recall.vector_candidates, where=where)
    vectors = {key: signals.above_floor(cos, floor) for key, cos in vec_hits}
    fused = _fuse(lexical, vectors, weights, config.recall.fusion)
    if evidence.subjects:  # a fact the query shares a topic with is a candidate on its own
        fused.update({key: (0.0, 0.0) for key, _ in vec_hits if key not in fused})
    hits = []
    for memory in store.memories_by_id(space, list(fused)):
        if memory.prohibited:
            continue  # rules are hoisted separately
        if not evidence.admits(
            memory.content,
            memory.entity,
            vectors.get(memory.id, 0.0),
            config,
            fact=True,
            by_name=False,
        ):
            continue
        breakdown = _memory_score(memory, fused[memory.id], config, now)
        hits.append(
            Hit(
                kind="memory",
                id=memory.id,
                text=memory.content,
                score=sum(breakdown.values()),
                space=space,
                breakdown=breakdown,
                occurred_at=memory.event_date or memory.created_at,
                session_id=memory.session_id,
                turn_id=memory.turn_id,
                memory=memory,
            )
        )
    return hits


def _novel(
    store: CandidateSource,
    space: str,
    hits: list[Hit],
    line_of: dict[str, int],
    rows: dict[int, LineRow],
    threshold: float,
    limit: int,
) -> list[Hit]:
    """Select ``limit`` hits in score order: passages whose line vector is ≥ ``threshold``
    cosine to a kept one are dropped (the spec's novelty gate: near-verbatim repeats waste
    the budget), and up to half of the places are kept for memories, so consolidated
    states are not crowded out by the many passages they came from. Facts lead: a passage
    whose matched line a kept memory was consolidated from is dropped unless the line says
    more than the memory (:func:`_adds`)."""
    memories = [hit for hit in hits if hit.kind != "passage"][: max(1, limit // 2)]
    told = {
        line: memory.memory for memory in memories if memory.memory is not None
        for line in memory.memory.cited_lines
    }  # fmt: skip
    passages = [
        hit
        for hit in hits
        if hit.kind == "passage"
        and (
            line_of.get(hit.id) not in told
            or _adds(rows[line_of[hit.id]].text, told[line_of[hit.id]])
        )
    ]
    room = limit - len(memories)
    kept: list[Hit] = []
    if threshold >= 1.0:
        kept = passages[:room]
    else:
        pool = passages[: room * 3]
        wanted = [line_of[h.id] for h in pool if h.id in line_of]
        vectors = store.line_vectors(space, wanted)
        stacked: np.ndarray | None = None  # the kept vectors, one row each, filled in order
        owners: list[set[str]] = []  # the words of the kept hit of each row
        held = 0
        for hit in pool:
            if len(kept) == room:
                break
            vector = vectors.get(line_of.get(hit.id, -1))
            words = set(terms(hit.text)) if vector is not None else set()
            if vector is not None and held:
                close = np.flatnonzero(stacked[:held] @ vector >= threshold)
                if any(_repeats(words, owners[i]) for i in close):
                    continue
            kept.append(hit)
            if vector is not None:
                if stacked is None:
                    stacked = np.empty((room, len(vector)), dtype=vector.dtype)
                stacked[held] = vector
                owners.append(words)
                held += 1
    return sorted([*memories, *kept], key=lambda hit: hit.score, reverse=True)


def _repeats(mine: set[str], theirs: set[str]) -> bool:
    """Whether a passage of words ``mine`` nearly repeats a kept one's (``theirs``): most of
    their words are the same. Their lines' cosine alone would also drop a turn whose line
    standing for it is a stock phrase ("Thanks, Maria!") another kept turn starts with too."""
    return len(mine & theirs) >= _REPEAT_SHARE * max(len(mine | theirs), 1)


def _adds(line: str, memory: MemoryRecord) -> bool:
    """Whether ``line`` says more than the memory made from it: two content words or more
    that the memory does not hold ("I moved from Pune to Bangalore last week" adds to
    ``home city: Bangalore``; "I live in Bangalore." does not)."""
    held = set(
        content_words(
            " ".join(
                part or ""
                for part in (memory.content, memory.value, memory.attribute, memory.condition)
            )
        )
    )
    return len(set(content_words(line)) - held) >= 2


def _mark_outdated(store: CandidateSource, space: str, hits: list[Hit]) -> dict[int, MemoryRecord]:
    """A passage whose statement was consolidated into a state that has since been
    superseded is marked ``[outdated: now <current value>]``; a lineage that ends in a
    closed memory has no current value, so its passage is left unmarked. Returns the current
    memory of each marked passage's episode."""
    episodes = [hit.episode_id for hit in hits if hit.kind == "passage" and hit.episode_id]
    rows = store.episode_lines(space, episodes) if episodes else []
    newer = store.superseded_lines(space, [row.id for row in rows])
    if not newer:
        return {}
    row_of = {row.id: row for row in rows}
    current: dict[int, tuple[MemoryRecord, str]] = {}
    for line, memory_id in newer.items():
        memory = _lineage_end(store, space, memory_id)
        if memory is not None and memory.active and line in row_of:
            row = row_of[line]
            current[row.episode_id] = (memory, f"s{row.seq}")
    for hit in hits:
        if hit.episode_id in current:
            memory, hit.outdated_line = current[hit.episode_id]
            hit.outdated_by = memory.value or memory.content
    return {episode: memory for episode, (memory, _) in current.items()}


def _lead_with_current(
    space: str, hits: list[Hit], current: dict[int, MemoryRecord], limit: int
) -> list[Hit]:
    """Today's state leads the outdated passage that found it ("Where do I live?" matches
    "I live in Berlin", which says nothing of the move to Lisbon): the current memory moves
    just above that passage, or joins the hits there, and the list keeps ``limit`` items (the
    block drops the passage when the state is shown and the query is not about the change)."""
    if not current:
        return hits
    found = {hit.id: hit for hit in hits if hit.kind == "memory"}
    led: list[Hit] = []
    placed: set[str] = set()
    for hit in hits:
        memory = current.get(hit.episode_id) if hit.found_by_outdated else None
        if memory is not None and memory.id not in placed and not memory.prohibited:
            led.append(found.get(memory.id) or _current_hit(space, memory, hit.score))
            placed.add(memory.id)
        if hit.id not in placed:
            led.append(hit)
    return led[: max(limit, len(hits))]


def _current_hit(space: str, memory: MemoryRecord, score: float) -> Hit:
    return Hit(
        kind="memory",
        id=memory.id,
        text=memory.content,
        score=score,
        space=space,
        breakdown={"supersedes": score},
        occurred_at=memory.event_date or memory.created_at,
        session_id=memory.session_id,
        turn_id=memory.turn_id,
        memory=memory,
    )


def _lineage_end(store: CandidateSource, space: str, memory_id: str) -> MemoryRecord | None:
    """The memory a lineage leads to from ``memory_id`` (bounded; never raises on the read
    path): ``None`` when ``memory_id`` is missing, else the last memory that exists."""
    found = store.memories_by_id(space, [memory_id])
    if not found:
        return None
    memory = found[0]
    for _ in range(32):  # follow the lineage to today's value (bounded)
        if memory.active or not memory.superseded_by:
            break
        following = store.memories_by_id(space, [memory.superseded_by])
        if not following:  # a dangling pointer (e.g. an old database): stop where it breaks
            break
        memory = following[0]
    return memory


def _rules(store: CandidateSource, space: str, query: str, config: Config) -> list[Hit]:
    """The space's active forbidden rules that bear on ``query``, most relevant first, capped.

    A rule bears on a query when they share a content word (stems compared) or a topic of
    ``topics.TOPICS`` ("what should I cook tonight?" and "never suggest recipes with
    peanuts": food); a rule stored with ``forbid(..., always=True)`` (tag ``always``) bears
    on every query. The rest are left out, so an unrelated prompt gets no rule at all."""
    frame = {topics.stem(word) for word in topics.RULE_FRAME}
    asked = topics.stems(query) - frame
    subjects = topics.topics(asked)
    ranked = []
    for rule in store.list_memories(space, prohibited=True):
        words = topics.stems(rule.content) - frame
        shared = len(asked & words) + len(subjects & topics.topics(words))
        if shared or ALWAYS in rule.tags:
            ranked.append((-shared, rule.created_at, rule))
    ranked.sort(key=lambda item: item[:2])
    return [
        Hit(
            kind="rule",
            id=m.id,
            text=m.content,
            score=1.0,
            space=space,
            memory=m,
            occurred_at=m.created_at,
        )
        for _, _, m in ranked[: config.pack.max_forbidden_rules]
    ]

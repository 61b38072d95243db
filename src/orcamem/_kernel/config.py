"""The engine's switches: one frozen ``Config`` of five frozen sections, keyword-only.

>>> from orcamem import Config
>>> from orcamem.engine import RecallConfig, SleepConfig
>>> Config(recall=RecallConfig(top_k=5), sleep=SleepConfig(timezone="Asia/Kolkata"))
Config(recall=RecallConfig(top_k=5), sleep=SleepConfig(timezone='Asia/Kolkata'))
>>> Config().recall.top_k
10

A section's repr shows only what differs from the defaults. Every value is checked when the
section is built; the error names the field, the value given and what is allowed. The
environment is not read here (see ``env``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, NoReturn, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidInputError

__all__ = [
    "Config",
    "PackConfig",
    "RecallConfig",
    "SignalsConfig",
    "SleepConfig",
    "StorageConfig",
]

S = TypeVar("S", bound="_Section")

_MANY = 10_000
"""Upper bound of candidate and source counts: beyond it recall's cost has no use."""


class _Section:
    """What every section shares: a repr of the changed fields, ``with_`` and the checks."""

    section: ClassVar[str]
    """The section's name in ``Config`` (and in error messages: ``recall.top_k=0: ...``)."""

    def __repr__(self) -> str:
        changed = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)  # type: ignore[arg-type]
            if getattr(self, f.name) != f.default
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def with_(self: S, **changes: Any) -> S:
        """A copy with some fields changed (an unknown name is an error, not ignored)."""
        known = [f.name for f in fields(self)]  # type: ignore[arg-type]
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise InvalidInputError(
                f"{type(self).__name__} has no field {', '.join(unknown)}: use one of "
                f"{', '.join(known)}"
            )
        return replace(self, **changes)  # type: ignore[type-var]

    # -- checks (each raises with the field, the value given and what is allowed) --------

    def _fail(self, name: str, allowed: str) -> NoReturn:
        raise InvalidInputError(f"{self.section}.{name}={getattr(self, name)!r}: {allowed}")

    def _int(self, name: str, low: int, high: int) -> None:
        value = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self._fail(name, f"use an integer from {low} to {high}")

    def _number(
        self, name: str, low: float = 0.0, high: float = math.inf, *, above: bool = False
    ) -> None:
        """A finite number in ``[low, high]`` (``(low, high]`` with ``above``)."""
        value = getattr(self, name)
        ok = (
            not isinstance(value, bool)
            and isinstance(value, (int, float))
            and math.isfinite(value)
            and (value > low if above else value >= low)
            and value <= high
        )
        if not ok:
            if high == math.inf:
                allowed = f"use a finite number {'above' if above else 'of at least'} {low:g}"
            else:
                allowed = f"use a number from {low:g}{' (excluded)' if above else ''} to {high:g}"
            self._fail(name, allowed)

    def _bool(self, name: str) -> None:
        if not isinstance(getattr(self, name), bool):
            self._fail(name, "use True or False")

    def _choice(self, name: str, choices: tuple[str, ...]) -> None:
        if getattr(self, name) not in choices:
            self._fail(name, f"use {' or '.join(repr(c) for c in choices)}")


@dataclass(frozen=True, kw_only=True, repr=False)
class RecallConfig(_Section):
    """Candidates, fusion and selection: which passages and memories a query finds.

    Numbers are tuned by ``orcamem bench locomo`` and documented in docs/recall.md.
    """

    section: ClassVar[str] = "recall"

    preset: str = "hybrid"
    """The engine's recall preset: ``hybrid``, ``lexical`` or ``vector`` (``recall.presets``;
    ``Memory`` refuses a preset whose scorer lives in another system)."""
    top_k: int = 10
    """Hits a search returns."""
    lexical_candidates: int = 100
    """BM25 line candidates per query."""
    vector_candidates: int = 100
    """Cosine line candidates per query."""
    lexical_context_weight: float = 0.4
    """BM25 weight of a line's lexical context (speaker, date, neighbouring turns) against 1.0
    for the line's own words."""
    fusion: str = "minmax"
    """``minmax`` (normalised score fusion) or ``rrf`` (reciprocal rank fusion, k=60)."""
    noise_floor_percentile: float = 50.0
    """Vector hits under this percentile of random pairwise cosine carry no weight (spec: 50th)."""
    novelty_threshold: float = 0.97
    """Hits whose cosine to an already selected hit is at least this are duplicates."""
    min_score: float = 0.0
    """Hits must score above this to be selected."""
    min_evidence: float = 0.35
    """Abstention: a query whose words the space barely holds (``signals.coverage``, the
    idf-weighted share of its content words found in the space's lines and memories, below
    this) recalls nothing, so the block is empty and the prompt untouched. 0 turns abstention
    and the per-item gate off."""
    min_evidence_named: float = 0.15
    """``min_evidence`` for a query that names a speaker of the space ("What did Caroline
    adopt?"): the name is evidence the query is about this space, so its other words need
    less."""
    item_evidence: float = 0.5
    """The per-item gate: a passage or memory is injected only when its own words cover this
    idf-weighted share of the query's topic words, its cosine clears the noise floor by
    ``item_vector``, the query names its speaker, or it is the turn before or after one that
    does (docs/recall.md, "What reaches the model")."""
    item_vector: float = 0.45
    """The per-item gate's vector evidence: ``signals.above_floor`` of the item's best cosine
    (its cosine rescaled so the space's noise floor is 0 and 1 is 1) at least this."""
    named_speaker_top: int = 0
    """A query that names a speaker admits only that speaker's this many best-scored turns on
    the name alone (a turn with evidence of its own passes anyway); 0 admits every turn of
    theirs."""
    relative_score: float = 0.0
    """The adaptive count: hits scoring under this share of the best hit are left out (0 keeps
    ``top_k``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.preset, str) or not self.preset.strip():
            self._fail("preset", "use a preset name such as 'hybrid', 'lexical' or 'vector'")
        self._int("top_k", 1, 1000)
        self._int("lexical_candidates", 1, _MANY)
        self._int("vector_candidates", 1, _MANY)
        self._number("lexical_context_weight")
        self._choice("fusion", ("minmax", "rrf"))
        self._number("noise_floor_percentile", 0.0, 100.0)
        self._number("novelty_threshold", 0.0, 1.0, above=True)
        self._number("min_score", -math.inf)
        self._number("min_evidence", 0.0, 1.0)
        self._number("min_evidence_named", 0.0, 1.0)
        self._number("item_evidence", 0.0, 1.0)
        self._number("item_vector", 0.0, 1.0)
        self._number("relative_score", 0.0, 1.0)
        self._int("named_speaker_top", 0, _MANY)


@dataclass(frozen=True, kw_only=True, repr=False)
class SignalsConfig(_Section):
    """The bounded additive signals a hit's score adds to its relevance (its ``breakdown``)."""

    section: ClassVar[str] = "signals"

    neighbour_weights_before: tuple[float, ...] = (0.4, 0.3)
    """A turn borrows these shares of the score of the turn 1, 2, … places *after* it in its
    session (the question or remark that a matching reply answers)."""
    neighbour_weights_after: tuple[float, ...] = (0.4, 0.3)
    """A turn borrows these shares of the score of the turn 1, 2, … places *before* it in its
    session (the reply that follows a matching turn often holds the fact)."""
    neighbour_sources: int = 30
    """Only this many best-matching turns lend to their neighbours (bounds recall's work)."""
    answer_share: float = 0.8
    """The least share a turn that asks a question (ends with ``?``) lends to the next turn,
    which answers it."""
    session_weight: float = 0.3
    """Additive bonus for a passage, times its session's strength: how well the session's
    ``session_top`` best turns match the query, the strongest session being 1."""
    session_top: int = 2
    """How many of a session's best turns its strength averages: with 2 a session where two
    turns match outranks one with a single lucky line (docs/recall.md, "Ranking for a
    200-token block")."""
    date_weight: float = 0.8
    """Additive bonus for a passage said on a date the query names (``May 8, 2022``,
    ``December 2023``, ``2023``), within the slack below."""
    date_slack_before_days: float = 1.0
    """Days before a named date that still count as said on it."""
    date_slack_after_days: float = 3.0
    """Days after a named date that still count as said on it (events are told later)."""
    enable_time_expressions: bool = True
    """Time-aware queries: a month or a season named without a year ("camping in June",
    "the end of summer") counts as that time in each year the space's lines were said in,
    and "early"/"mid"/"late"/"the second week of" narrow it (``recall.when``)."""
    enable_anchored_time: bool = False
    """Anchored time (``when.anchored``): "last summer", "two weeks ago" read against the
    conversation's present, "the week before August 3, 2023", and "before the wedding" or
    "after she moved" from the day a lexical lookup finds the event on; a line said in range
    gets the date bonus weighed by how well it matched the query. Off: neutral on LoCoMo's
    turn recall, two questions fewer in its block (docs/recall.md)."""
    enable_speaker_bonus: bool = True
    speaker_weight: float = 1.0
    """A turn by the person the query names gets this share of its relevance again."""
    assistant_prior: float = 0.5
    """A line of an ``assistant`` turn keeps this share of its relevance: what the model said
    (a guess, an echo of an earlier block) is not what the user said."""
    question_prior: float = 0.7
    """A line that asks (ends with ``?``) keeps this share of its relevance: a question names
    what it asks about but is not its answer."""
    enable_recency: bool = True
    recency_weight: float = 0.05
    recency_half_life_days: float = 30.0
    enable_usage: bool = True
    usage_weight: float = 0.05
    """Memories: log-scaled access count, saturating at 50."""
    enable_hawkes: bool = True
    hawkes_alpha: float = 0.4
    hawkes_half_life_seconds: float = 1800.0
    hawkes_weight: float = 0.05
    enable_ebbinghaus: bool = True
    ebbinghaus_s0_days: float = 2.0
    ebbinghaus_gain: float = 0.5
    ebbinghaus_weight: float = 0.05
    enable_fact_keys: bool = False
    """A consolidated fact is an extra key of the lines it came from ("key = value + fact",
    LongMemEval): a fact the query matches lends ``fact_key_weight`` times its relevance to
    the lines it cites, candidates or not, so the line that told it ranks with it."""
    fact_key_weight: float = 0.5
    enable_base_level: bool = False
    """ACT-R base-level activation (seed 003): ``B_i = ln Σ (age_days + 1)^(-d)`` over an
    item's mentions and retrievals adds ``base_level_weight · min(1, e^B_i)``: a passage's one
    mention is when it was said; a memory's are when it was made, each further line it was
    consolidated from, and its retrievals (``access_count`` of them, at its last access: the
    store keeps no more). Off: no gain on LoCoMo (docs/recall.md)."""
    base_level_weight: float = 0.05
    base_level_decay: float = 0.5
    """ACT-R's ``d`` (Anderson's 0.5)."""
    pinned_weight: float = 0.2
    """What a pinned memory (``Memory.pin``) adds to its score once its own evidence admits
    it; pinned, time does not lower its recency, Hawkes, Ebbinghaus or base-level signals."""
    enable_spreading_activation: bool = True
    """ACT-R spreading activation over the space's entity graph (``recall.spreading``): turns
    that name an entity of the query, of its best turns or of its states are lifted by
    ``activation_weight`` times ``Σ_j W_j / fan(j)`` (at most 1), Anderson's fan effect."""
    activation_weight: float = 0.6
    """The most a turn's activation adds to its score."""
    activation_sources: int = 10
    """The best-matching turns whose entities are sources (weighted by their score)."""
    activation_states: int = 5
    """The states the query matches whose entities are sources (weight 1)."""
    activation_max_fan: int = 50
    """An entity named by more lines and memories than this is a hub and spreads nothing
    (its share would be under 1/50 anyway); it also bounds the mentions read per entity."""
    activation_new: int = 10
    """Turns reached through the graph that were not candidates, at most, that join them."""
    enable_evidence_sets: bool = False
    """Evidence sets for multi-hop (``recall.evidence``): after ranking, the other-session
    mentions of the best passages' specific entities are offered ``evidence_share`` of the
    score of the passage that named them, and join when they pass the per-item gate. Off: no
    gain on LoCoMo over spreading activation, a loss at a larger share (docs/recall.md)."""
    evidence_sources: int = 3
    """The best passages whose entities make evidence sets."""
    evidence_max_fan: int = 8
    """Only an entity named by at most this many lines and memories makes an evidence set."""
    evidence_share: float = 0.3
    """The share of the naming passage's score a mention is offered (at most 1)."""
    evidence_new: int = 4
    """Turns that were not ranked, at most, that an evidence set adds."""
    enable_query_expansion: bool = False
    """Query expansion (``recall.expansion``): the query's content words' nearest words in
    the static embedder's vocabulary ("activities" → "hobby", "leisure") are searched as a
    second BM25 query that adds ``expansion_weight`` times its min-max score to a line's
    lexical share, so a turn sharing no word with the query can be a candidate."""
    expansion_weight: float = 0.2
    """The most the expansion query adds to a line's lexical share (the query's own words
    give up to the preset's lexical weight, 0.6)."""
    expansion_similarity: float = 0.3
    """A vocabulary word may join the expansion at this cosine to a query word or above."""
    expansion_words: int = 5
    """The nearest words the space holds, at most, each query word adds."""
    expansion_pool: int = 60
    """The nearest vocabulary words of a query word looked up in the space."""

    def __post_init__(self) -> None:
        for name in ("neighbour_weights_before", "neighbour_weights_after"):
            value = getattr(self, name)
            shares = tuple(value) if isinstance(value, (list, tuple)) else None
            if shares is None or len(shares) > 10 or not all(_is_share(s) for s in shares):
                self._fail(name, "use up to 10 shares from 0 to 1, nearest turn first: (0.4, 0.3)")
            object.__setattr__(self, name, shares)  # a list given becomes a hashable tuple
        self._int("neighbour_sources", 0, _MANY)
        self._int("session_top", 1, 100)
        for name in ("activation_sources", "activation_states", "activation_new"):
            self._int(name, 0, _MANY)
        self._int("activation_max_fan", 2, _MANY)
        for name in ("evidence_sources", "evidence_new"):
            self._int(name, 0, _MANY)
        self._int("evidence_max_fan", 2, _MANY)
        self._number("evidence_share", 0.0, 1.0)
        self._int("expansion_words", 1, 100)
        self._int("expansion_pool", 1, 1000)
        self._number("expansion_similarity", 0.0, 1.0)
        self._number("answer_share", 0.0, 1.0)
        self._number("assistant_prior", 0.0, 1.0)
        self._number("question_prior", 0.0, 1.0)
        self._number("hawkes_alpha", 0.0, 1.0)
        for name in _NON_NEGATIVE:
            self._number(name)
        for name in _POSITIVE:
            self._number(name, above=True)
        for name in _SWITCHES:
            self._bool(name)


_NON_NEGATIVE = (
    "session_weight",
    "date_weight",
    "date_slack_before_days",
    "date_slack_after_days",
    "speaker_weight",
    "recency_weight",
    "usage_weight",
    "hawkes_weight",
    "ebbinghaus_gain",
    "ebbinghaus_weight",
    "activation_weight",
    "base_level_weight",
    "fact_key_weight",
    "pinned_weight",
    "expansion_weight",
)
_POSITIVE = (
    "base_level_decay",
    "recency_half_life_days",
    "hawkes_half_life_seconds",
    "ebbinghaus_s0_days",
)
_SWITCHES = (
    "enable_speaker_bonus",
    "enable_time_expressions",
    "enable_anchored_time",
    "enable_recency",
    "enable_usage",
    "enable_hawkes",
    "enable_ebbinghaus",
    "enable_spreading_activation",
    "enable_base_level",
    "enable_fact_keys",
    "enable_evidence_sets",
    "enable_query_expansion",
)


def _is_share(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1


@dataclass(frozen=True, kw_only=True, repr=False)
class PackConfig(_Section):
    """How the selection is rendered into the memory block a turn gets (docs/recall.md)."""

    section: ClassVar[str] = "pack"

    enable_sutra_packing: bool = True
    """Dense bracketed lines (``[FORBIDDEN: …][LOG: …]``); False gives the classic sections."""
    context_budget_tokens: int = 400
    """The block's budget in tokens of the shipped embedder's WordPiece tokenizer
    (``orcamem._kernel.text.wordpiece_tokens``; a GPT-style tokenizer counts about as many).
    With the adaptive count (``relative_score``) it is a ceiling: a block fills it only when
    its candidates score alike (bench context: median block 199 tokens, p90 ~380)."""
    budget_shares: tuple[float, float, float] = (0.4, 0.2, 0.4)
    """The budget left after the header and forbidden rules, split states | events | passages
    (seed 003); what a part leaves unused flows to the next, then back to the first."""
    max_items: int = 16
    """Hits a block is packed from (its recall's ``top_k``); the budget decides how many fit."""
    max_forbidden_rules: int = 12
    """Forbidden rules hoisted to the top of every block."""
    max_passage_chars: int = 80
    """A passage shows its matched sentence in a window of at most this many characters (a
    short one filled with its neighbours, a long one cut around the query's words); a longer
    memory is clipped. 80 lets the block hold the evidence ranked 6th to 9th (bench context:
    block evidence recall 0.874 -> 0.883 at 300 tokens, 0.826 -> 0.845 at 200). Passages
    ranked after ``full_passages`` get ``tail_passage_chars`` instead."""
    relative_score: float = 0.37
    """The block's adaptive count: past the ``min_block_tokens`` floor, items scoring under
    this share of the block's best item are left out, so ``context_budget_tokens`` is a
    ceiling a clear answer does not fill (0: the budget decides alone). The search's ranking
    is unchanged (``RecallConfig.relative_score`` cuts that). Chosen on LoCoMo dev
    conversations 0-2, checked on 3-4 (docs/recall.md, Packing)."""
    min_block_tokens: int = 160
    """With ``relative_score``, the items that fit this many tokens are packed whatever their
    score (the block's floor); the rest must clear the share."""
    full_passages: int = 5
    """The first this many ranked passages get the ``max_passage_chars`` window; the rest get
    ``tail_passage_chars`` (0: every passage gets the full window)."""
    tail_passage_chars: int = 60
    """The window of a passage ranked after ``full_passages``: lower-ranked support costs
    fewer tokens, so more of it fits."""
    log_blocks: bool = False
    """Log every block injected before a turn (``Memory.context``, the proxy, MCP recall):
    time, space, surface, item ids, tokens and the query's hash (``Memory.injected_blocks``)."""
    log_block_content: bool = False
    """With ``log_blocks``, keep the query and the block's text too (off: never in the log)."""
    log_blocks_keep: int = 1000
    """Entries kept per space; the oldest beyond it are dropped as a new one is logged."""
    log_blocks_days: float = 7.0
    """Retention: entries older than this many days are dropped as a new one is logged."""

    def __post_init__(self) -> None:
        self._bool("enable_sutra_packing")
        self._number("relative_score", 0.0, 1.0)
        self._int("min_block_tokens", 0, 1_000_000)
        self._int("full_passages", 0, _MANY)
        self._int("tail_passage_chars", 20, _MANY)
        self._int("context_budget_tokens", 32, 1_000_000)
        shares = self.budget_shares
        shares = tuple(shares) if isinstance(shares, (list, tuple)) else None
        if (
            shares is None
            or len(shares) != 3
            or not all(_is_share(share) for share in shares)
            or abs(sum(shares) - 1.0) > 1e-6
        ):
            self._fail("budget_shares", "use three shares that sum to 1: (0.4, 0.2, 0.4)")
        object.__setattr__(self, "budget_shares", shares)  # a list given becomes a tuple
        self._int("max_items", 1, 1000)
        self._int("max_forbidden_rules", 0, 1000)
        self._int("max_passage_chars", 1, 1_000_000)
        self._bool("log_blocks")
        self._bool("log_block_content")
        self._int("log_blocks_keep", 1, 1_000_000)
        self._number("log_blocks_days", above=True)


@dataclass(frozen=True, kw_only=True, repr=False)
class SleepConfig(_Section):
    """Consolidation (``sleep``): batches, the user's zone, and the background sleeper."""

    section: ClassVar[str] = "sleep"

    timezone: str = "UTC"
    """The user's IANA zone: "yesterday" and "last week" are counted from local days."""
    batch_size: int = 32
    """Episodes per consolidation batch (one extractor call, one transaction)."""
    auto: bool = False
    """Consolidate in the background (a sleeper thread and a job worker per ``Memory``)."""
    idle_seconds: float = 120.0
    """Background: consolidate a space once no episode has arrived for this long."""
    batch_threshold: int = 32
    """Background: consolidate a space at once when this many episodes are pending."""
    lease_seconds: float = 120.0
    """How long a consolidation job's lease lasts between renewals (renewed every third)."""
    enable_defeasible_logic: bool = True
    """Seed 003's defeasible logic: a conditional claim ("when I have a sore throat, ginger
    tea") is an exception beside the baseline state; off, it supersedes the baseline (the
    naive overwrite, kept as an ablation)."""

    def __post_init__(self) -> None:
        try:
            ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            self._fail("timezone", "use an IANA zone name such as 'UTC' or 'Asia/Kolkata'")
        self._int("batch_size", 1, _MANY)
        self._bool("auto")
        self._number("idle_seconds", above=True)
        self._int("batch_threshold", 1, 1_000_000)
        self._number("lease_seconds", above=True)
        self._bool("enable_defeasible_logic")


@dataclass(frozen=True, kw_only=True, repr=False)
class StorageConfig(_Section):
    """The SQLite file's durability and the query path's threads (see docs/storage.md)."""

    section: ClassVar[str] = "storage"

    synchronous: str = "FULL"
    """SQLite ``synchronous`` pragma: FULL survives power loss, NORMAL only process crashes."""
    busy_timeout_ms: int = 10_000
    """How long a write waits for another writer's lock before it fails."""
    blas_threads: int = 1
    """BLAS threads for the query path (one is ~25x faster on a busy 2-core machine)."""
    vector_pruning: bool = True
    """Search a space of more than ``pruning_threshold`` vectors in two steps (a short
    projection of every row, then the exact score of the best few thousand); False: always
    exact. ``orcamem bench latency`` reports its recall against exact search."""
    pruning_threshold: int = 100_000
    """Vectors a space holds before pruning applies: below it search is exact (pruning paid
    at 100,000 and 1,000,000 lines, docs/storage.md)."""
    lexical_index_threshold: int = 200_000
    """Lines a space holds before its unfiltered BM25 query is answered by an in-process index
    (FTS5's own scores, loaded once a process on a background thread; at a million lines
    ~1.5 ms against FTS5's ~35 ms, for ~220 MB); below it FTS5 answers: at 100,000 the few ms
    saved did not show against the load in `orcamem bench latency` (docs/storage.md)."""

    def __post_init__(self) -> None:
        value = self.synchronous
        if not isinstance(value, str) or value.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            self._fail("synchronous", "use 'OFF', 'NORMAL', 'FULL' or 'EXTRA'")
        object.__setattr__(self, "synchronous", value.upper())
        self._int("busy_timeout_ms", 0, 3_600_000)
        self._int("blas_threads", 1, 256)
        self._bool("vector_pruning")
        self._int("pruning_threshold", 0, 10**12)
        self._int("lexical_index_threshold", 0, 10**12)


@dataclass(frozen=True, kw_only=True, repr=False)
class Config:
    """Every switch of the engine, by section. Pass ``Memory(config=Config(...))``.

    Build a section with only the fields you change (``Config(recall=RecallConfig(top_k=5))``);
    the sections are importable from ``orcamem.engine``. ``with_`` swaps whole sections.
    """

    recall: RecallConfig = field(default_factory=RecallConfig)
    signals: SignalsConfig = field(default_factory=SignalsConfig)
    pack: PackConfig = field(default_factory=PackConfig)
    sleep: SleepConfig = field(default_factory=SleepConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            expected = _SECTIONS[f.name]
            if not isinstance(value, expected):
                raise InvalidInputError(
                    f"Config({f.name}={value!r}): pass a {expected.__name__}, e.g. "
                    f"Config({f.name}={expected.__name__}(...)) "
                    f"(from orcamem.engine import {expected.__name__})"
                )

    def __repr__(self) -> str:
        changed = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if getattr(self, f.name) != _SECTIONS[f.name]()
        ]
        return f"Config({', '.join(changed)})"

    def with_(self, **sections: _Section) -> Config:
        """A copy with some sections replaced: ``config.with_(recall=config.recall.with_(top_k=5))``."""
        unknown = sorted(set(sections) - set(_SECTIONS))
        if unknown:
            raise InvalidInputError(
                f"Config has no section {', '.join(unknown)}: use one of {', '.join(_SECTIONS)}"
            )
        return replace(self, **sections)


_SECTIONS: dict[str, type[_Section]] = {
    "recall": RecallConfig,
    "signals": SignalsConfig,
    "pack": PackConfig,
    "sleep": SleepConfig,
    "storage": StorageConfig,
}

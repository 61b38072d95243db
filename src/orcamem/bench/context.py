"""``bench context``: the block a user's model actually gets, judged (issue 13).

Every number here is measured on the exact text ``Memory.recall`` returns (what
``build_context`` and the proxy inject), never on the ranked hits behind it, so a change of
format, budget or selection shows up as the model would see it.

**Quoted** is defined once (:func:`quotes`) and is format-independent: a stored text (a turn,
a memory, a rule) is quoted in a block when the block's content words (``terms`` without stop
words, in order, repeats kept) hold a run of ``GRAM`` consecutive content words of that text
(all of them, in order, when it has fewer). A text with fewer than ``MIN_WORDS`` content words
("Thanks, Mel!") cannot be told apart from chatter and is never counted. Dates, speakers and
markup around a quote do not matter; a turn cut after its first sentence still counts.

With ``sleep`` each conversation is consolidated by the rules first (what servers and the
proxy do by default), so blocks mix states and events with passages. A state or event
(:class:`Fact`) is quoted when the block holds a run of its words as the block renders it
(``entity attribute value``, an event's text; an entity's later states in its one dense
bracket are read beside the entity, ``recall.blocks.engine.per_state``), and it is evidence
only when a line it cites is an evidence turn **and** its value's content words are all in that
turn: a fact made from the right line but saying something else does not count.

Metrics, over LoCoMo (category 5 excluded):

- ``evidence_recall``: questions whose block quotes an evidence turn or an evidence fact
  (``_all``: every evidence turn, itself or through a fact);
- ``precision``: evidence items quoted / all stored items quoted (turns and facts), summed over
  blocks;
- ``tokens``: per block (0 when nothing is injected), median and p90, by the shipped
  embedder's WordPiece tokenizer and by the project's chars/4 ``estimate_tokens``;
- ``false_injection``: every query of a list unrelated to the conversations (``unrelated.txt``:
  trivia, coding, maths, small talk) asked in every conversation's space and in a memory-only
  space of explicit facts and rules: the share of blocks that quote anything stored, and the
  share that hoist a rule.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .._kernel.config import Config
from .._kernel.embed import DEFAULT_MODEL_DIR, Embedder
from .._kernel.model import Episode, MemoryRecord
from .._kernel.text import STOPWORDS, estimate_tokens, terms, wordpiece_tokens
from ..engine.memory import Memory
from ..errors import InvalidInputError
from ..recall.blocks.engine import per_state
from .runs import Progress, _evidence, _percentile, _turns, load_locomo, machine

__all__ = [
    "FACTS",
    "RULES",
    "Block",
    "Fact",
    "context_bench",
    "judge",
    "load_unrelated",
    "parse_conversations",
    "quotes",
    "wordpiece_tokens",
]

GRAM = 4
MIN_WORDS = 3

FACTS = (
    ("My home city is Bangalore.", "What is my home city?"),
    ("I work as a night-shift nurse at St. Martha's hospital.", "Where do I work?"),
    ("My daughter Anika is allergic to peanuts and shellfish.", "What is Anika allergic to?"),
    ("I drive a blue 2019 Honda Civic hatchback.", "What car do I drive?"),
    ("My partner Ravi teaches chemistry at a high school.", "What does Ravi teach?"),
    ("I am training for the Mumbai half marathon in January.", "What race am I training for?"),
    ("My favourite band is Indian Ocean, the fusion rock group.", "What is my favourite band?"),
    ("We adopted a grey tabby cat called Pepper last spring.", "What is my cat called?"),
    ("I am learning Japanese with a tutor every Thursday evening.", "What language am I learning?"),
    ("My dentist appointment is on the fourteenth of March.", "When is my dentist appointment?"),
)
"""Facts a user states, each with a question about it: the memory-only space of this bench
and the proxy loop's script."""

RULES = (
    "Never suggest recipes that contain peanuts or shellfish.",
    "Never chain PowerShell commands with semicolons.",
)


def _words(text: str) -> list[str]:
    return terms(text, apostrophe="cut", stopwords=STOPWORDS, min_len=2)


def _grams(words: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


class Block:
    """A block's content-word runs, built once and asked about many stored texts."""

    def __init__(self, text: str) -> None:
        words = _words(text)
        self._grams = {n: _grams(words, n) for n in range(MIN_WORDS, GRAM + 1)}
        self._joined = f" {' '.join(words)} "

    def quotes(self, text: str) -> bool:
        """Whether this block quotes ``text`` (the module docstring's one definition)."""
        words = _words(text)
        if len(words) < MIN_WORDS:
            return False
        n = min(GRAM, len(words))
        return not self._grams[n].isdisjoint(_grams(words, n))

    def opens(self, text: str) -> bool:
        """Whether this block quotes ``text`` from its start: stricter than :meth:`quotes` for
        texts that themselves copy other stored texts (a model echoing a block)."""
        words = _words(text)
        if len(words) < MIN_WORDS:
            return False
        return tuple(words[:GRAM]) in self._grams[min(GRAM, len(words))]

    def holds(self, text: str) -> bool:
        """Whether this block holds every content word of ``text`` as one run: how a fact is
        quoted (a speaker's name before a line could otherwise pass for a fact's entity)."""
        words = _words(text)
        return bool(words) and f" {' '.join(words)} " in self._joined


@dataclass(frozen=True)
class Fact:
    """A consolidated state or event as the judge sees it: the words the block renders it
    with, its value, and the turns (ids) of the lines it cites."""

    text: str
    value: str
    sources: tuple[str, ...]

    @classmethod
    def of(cls, memory: MemoryRecord, turn_of: dict[int, str], cited: Sequence[int]) -> Fact:
        """``memory`` judged: ``turn_of`` maps episode ids to turn ids, ``cited`` holds the
        episodes it was consolidated from."""
        if memory.category == "event":
            day = (memory.event_date or memory.created_at)[:10]
            text = f"{day} {(memory.event_end or '')[:10]} {memory.content}"
        elif not memory.attribute:
            text = memory.content
        else:
            text = f"{memory.entity or 'user'} {memory.attribute} {memory.value or ''}"
        sources = tuple(sorted({turn_of[episode] for episode in cited if episode in turn_of}))
        return cls(text, memory.value or memory.content, sources)

    def evidence(self, turns: dict[str, str], evidence: Sequence[str]) -> set[str]:
        """The evidence turns this fact stands for: cited, and holding every content word of
        its value."""
        wanted = set(_words(self.value))
        return {
            turn_id
            for turn_id in self.sources
            if turn_id in evidence and wanted and wanted <= set(_words(turns.get(turn_id, "")))
        }


def quotes(block: str, text: str) -> bool:
    """Whether ``block`` quotes the stored ``text`` (see the module docstring)."""
    return Block(block).quotes(text)


def load_unrelated(path: str | Path | None = None) -> list[str]:
    """The unrelated queries: one a line, ``#`` comments and blank lines skipped (default: the
    shipped ``bench/unrelated.txt``)."""
    try:
        if path is None:
            text = resources.files("orcamem.bench").joinpath("unrelated.txt").read_text("utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read unrelated queries from {path}: {exc}") from None
    queries = [line.strip() for line in text.splitlines()]
    queries = [line for line in queries if line and not line.startswith("#")]
    if not queries:
        raise InvalidInputError(f"{path} holds no query: write one a line")
    return queries


def parse_conversations(spec: str | None) -> set[int] | None:
    """``"0-2"``, ``"3,4"`` or ``"0-1,4"`` → conversation indexes (None: all)."""
    if spec is None:
        return None
    chosen: set[int] = set()
    try:
        for part in spec.split(","):
            low, _, high = part.strip().partition("-")
            chosen.update(range(int(low), int(high or low) + 1))
    except ValueError:
        raise InvalidInputError(
            f"conversations={spec!r}: use indexes from 0, e.g. 0-2 or 3,4"
        ) from None
    if not chosen:
        raise InvalidInputError(f"conversations={spec!r}: name at least one, e.g. 0-2")
    return chosen


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return round(sum(values) / len(values), 4) if values else 0.0


def _tokens(blocks: Sequence[str]) -> dict[str, float]:
    wordpiece = [wordpiece_tokens(block) for block in blocks]
    estimate = [estimate_tokens(block) if block else 0 for block in blocks]
    return {
        "tokens_p50": round(_percentile(wordpiece, 50), 1),
        "tokens_p90": round(_percentile(wordpiece, 90), 1),
        "estimate_p50": round(_percentile(estimate, 50), 1),
        "estimate_p90": round(_percentile(estimate, 90), 1),
        "empty": _share(not block for block in blocks),
    }


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    quoted = sum(row["quoted"] for row in rows)
    return {
        "evidence_recall": _share(row["any"] for row in rows),
        "evidence_recall_all": _share(row["all"] for row in rows),
        "precision": round(sum(row["evidence_quoted"] for row in rows) / quoted, 4)
        if quoted
        else 0.0,
        "quoted_p50": round(statistics.median(row["quoted"] for row in rows), 1),
        "facts_quoted_p50": round(statistics.median(row["facts_quoted"] for row in rows), 1),
        **_tokens([row["block"] for row in rows]),
        "questions": len(rows),
    }


def judge(
    block: str, turns: dict[str, str], evidence: Sequence[str], facts: Sequence[Fact] = ()
) -> dict[str, Any]:
    """One question's row: which stored turns and facts ``block`` quotes and which of them are
    evidence.

    Args:
        block: the injected text ("" when nothing was injected).
        turns: every stored turn of the conversation, by its id.
        evidence: the ids of the turns that answer the question.
        facts: the conversation's consolidated states and events (none without sleep).
    """
    seen = Block(block)
    quoted = {turn_id for turn_id, text in turns.items() if block and seen.quotes(text)}
    spelled = Block(per_state(block)) if facts else seen
    told = [fact for fact in facts if block and spelled.holds(fact.text)]
    through = set().union(*(fact.evidence(turns, evidence) for fact in told))
    hit = [turn_id in quoted or turn_id in through for turn_id in evidence]
    return {
        "any": any(hit),
        "all": bool(hit) and all(hit),
        "quoted": len(quoted) + len(told),
        "evidence_quoted": len(quoted & set(evidence))
        + sum(bool(fact.evidence(turns, evidence)) for fact in told),
        "facts_quoted": len(told),
        "block": block,
    }


def false_injection(
    mem: Memory, space: str, queries: Sequence[str], stored: Sequence[str], rules: Sequence[str]
) -> list[tuple[bool, bool, str]]:
    """Per unrelated query: (the block quotes a stored text, it hoists a rule, the block)."""
    found = []
    for query in queries:
        block = mem.recall(query, space=space)
        seen = Block(block)
        found.append(
            (
                bool(block) and any(seen.quotes(text) for text in stored),
                bool(block) and any(seen.quotes(rule) for rule in rules),
                block,
            )
        )
    return found


def _injection_summary(found: list[tuple[bool, bool, str]]) -> dict[str, Any]:
    return {
        "quotes_stored": _share(quoted for quoted, _, _ in found),
        "hoists_rule": _share(rule for _, rule, _ in found),
        **_tokens([block for _, _, block in found]),
        "blocks": len(found),
    }


def _consolidated(mem: Memory, space: str, episodes: Sequence[Episode]) -> list[Fact]:
    """Consolidate ``space`` by the rules and return its states and events as judged."""
    mem.sleep(space=space)
    turn_of = {episode.id: episode.turn_id for episode in episodes if episode.turn_id}
    return [
        Fact.of(memory, turn_of, mem.cited_episodes(memory.id, space=space))
        for memory in mem.facts(space=space)
        if not memory.prohibited
    ]


def context_bench(
    path: str | Path,
    *,
    unrelated: str | Path | None = None,
    conversations: set[int] | None = None,
    limit: int | None = None,
    config: Config | None = None,
    embedder: Embedder | str | None = None,
    progress: Progress | None = None,
    workdir: str | None = None,
    sleep: bool = False,
) -> dict[str, Any]:
    """Judge the injected block on LoCoMo and on unrelated queries.

    Args:
        path: a LoCoMo JSON file.
        unrelated: a file of unrelated queries (default: the shipped list).
        conversations: only these sample indexes (e.g. tune on 0-2, check on 3-4).
        limit: only the first N scored questions of each conversation.
        sleep: consolidate each conversation by the rules (``Memory.sleep``) before asking.
        embedder: a spec or an ``Embedder`` (default the shipped static model).

    Returns:
        ``{"overall": {…}, "by_category": {"1": {…}}, "false_injection": {"episodes": {…},
        "memories": {…}}, "definition": …, "recall_p50_ms": …, "embedder": id, "machine": {…}}``
    """
    if limit is not None and limit < 1:
        raise InvalidInputError(f"limit={limit}: use a positive number of questions")
    samples = load_locomo(path)
    queries = load_unrelated(unrelated)
    chosen = [
        (index, sample)
        for index, sample in enumerate(samples)
        if conversations is None or index in conversations
    ]
    if not chosen:
        raise InvalidInputError(
            f"conversations {sorted(conversations or ())} match none of the "
            f"{len(samples)} in {path}: indexes start at 0"
        )
    rows: list[dict[str, Any]] = []
    unrelated_episodes: list[tuple[bool, bool, str]] = []
    recall_ms: list[float] = []
    with (
        tempfile.TemporaryDirectory(dir=workdir) as tmp,
        Memory(Path(tmp) / "context.db", config=config, embedder=embedder) as mem,
    ):
        for number, (index, sample) in enumerate(chosen):
            space = f"locomo-{index}"
            items = _turns(sample)
            episodes = mem.add_many(items, space=space)
            turns = {item["turn_id"]: item["text"] for item in items}
            facts = _consolidated(mem, space, episodes) if sleep else []
            questions = [qa for qa in sample["qa"] if qa.get("category") != 5 and _evidence(qa)]
            for qa in questions[:limit]:
                begin = time.perf_counter()
                block = mem.recall(str(qa["question"]), space=space)
                recall_ms.append((time.perf_counter() - begin) * 1000)
                row = judge(block, turns, _evidence(qa), facts)
                rows.append({**row, "category": qa.get("category")})
            stored = [*turns.values(), *(fact.text for fact in facts)]
            unrelated_episodes += false_injection(mem, space, queries, stored, [])
            if progress:
                progress("conversations", number + 1, len(chosen))
        said = [fact for fact, _ in FACTS]
        for fact in said:
            mem.remember(fact, space="memories")
        for rule in RULES:
            mem.forbid(rule, space="memories")
        if sleep:
            mem.sleep(space="memories")
        unrelated_memories = false_injection(mem, "memories", queries, said, RULES)
        fact_recall = [
            Block(mem.recall(question, space="memories")).quotes(fact) for fact, question in FACTS
        ]
    by_category: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_category.setdefault(str(row["category"]), []).append(row)
    return {
        "overall": _aggregate(rows),
        "by_category": {key: _aggregate(value) for key, value in sorted(by_category.items())},
        "false_injection": {
            "episodes": _injection_summary(unrelated_episodes),
            "memories": {
                **_injection_summary(unrelated_memories),
                "fact_recall": _share(fact_recall),
            },
        },
        "conversations": [index for index, _ in chosen],
        "sleep": sleep,
        "unrelated_queries": len(queries),
        "definition": f"quoted = a run of {GRAM} consecutive content words shared with the block "
        f"(all of them when fewer; texts under {MIN_WORDS} content words never count)",
        "tokenizer": f"wordpiece ({DEFAULT_MODEL_DIR.name}); estimate = chars/4",
        "recall_p50_ms": round(_percentile(recall_ms, 50), 3),
        "recall_p95_ms": round(_percentile(recall_ms, 95), 3),
        "embedder": mem.embedder.id,
        "machine": machine(),
    }

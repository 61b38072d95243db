"""Query expansion from the static embedder's own vocabulary (issue 15).

An aggregation question ("What activities does Melanie partake in?") shares no word with
its evidence ("I'm off to go swimming with the kids"). The default embedder is a table of
word vectors, so each content word of the query has neighbours in it ("activities" →
"recreation", "hobby", "leisure"): those above ``expansion_similarity`` are searched as a
second BM25 query whose min-max score, times ``expansion_weight``, is added to a line's
lexical share. Whole words of the shipped vocabulary only, no stop words; a word's
neighbours are computed once and cached. Only a static (model2vec) embedder has such a
table: with any other there is no expansion.
"""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from .._kernel.config import Config
from .._kernel.embed import DEFAULT_MODEL_DIR, Embedder, StaticEmbedder, embed_texts
from .._kernel.text import STOPWORDS, content_words, words_as_written
from . import signals
from .candidates import CandidateSource, LineRow
from .filters import SearchFilter

__all__ = ["expand", "expansion_terms"]

_MIN_LETTERS = 3


class _Table:
    """The vocabulary's whole words and their unit vectors, as ``embedder`` reads them."""

    def __init__(self, embedder: Embedder) -> None:
        self.words = _vocabulary()
        self.index = {word: i for i, word in enumerate(self.words)}
        self.vectors = embed_texts(embedder, self.words)

    @lru_cache(maxsize=4096)  # noqa: B019 - one table per embedder, kept for the process
    def neighbours(self, word: str, similarity: float, most: int) -> tuple[str, ...]:
        """``word``'s ``most`` nearest vocabulary words at cosine ≥ ``similarity``, not
        ``word`` itself nor a word of its root ("activity" for "activities")."""
        at = self.index.get(word)
        if at is None:
            return ()
        cosines = self.vectors @ self.vectors[at]
        order = np.argpartition(-cosines, most * 3)[: most * 3]
        order = order[np.argsort(-cosines[order])]
        found = [
            self.words[i]
            for i in order.tolist()
            if cosines[i] >= similarity and not _same_root(word, self.words[i])
        ]
        return tuple(found[:most])


_ROOT = 5
"""Two words are one root when they share their first five letters ("relation",
"relationship"), or all of the shorter one's but its last ("host", "hosted"; "car", "cars"):
the full-text index's Porter stemmer already matches most of them."""


def _same_root(word: str, other: str) -> bool:
    need = min(_ROOT, len(word) - 1, len(other) - 1)
    return word[:need] == other[:need]


@lru_cache(maxsize=1)
def _vocabulary() -> list[str]:
    """Whole lower-case ASCII words of the shipped WordPiece vocabulary, no stop words."""
    tokenizer = json.loads((DEFAULT_MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    return sorted(
        word
        for word in tokenizer["model"]["vocab"]
        if word.isascii()
        and word.isalpha()
        and word.islower()
        and len(word) >= _MIN_LETTERS
        and word not in STOPWORDS
    )


_TABLES: dict[str, _Table] = {}


def _table(embedder: Embedder) -> _Table | None:
    if not isinstance(embedder, StaticEmbedder):
        return None
    table = _TABLES.get(embedder.id)
    if table is None:
        table = _TABLES[embedder.id] = _Table(embedder)
    return table


def expansion_terms(
    embedder: Embedder,
    query: str,
    similarity: float,
    pool: int,
) -> list[tuple[str, ...]]:
    """For each lower-case content word of the query its ``pool`` nearest words, nearest
    first, none of the query's roots. A capitalised word is a name, and a name's neighbours
    are other names."""
    table = _table(embedder)
    if table is None:
        return []
    names = {
        word.lower().split("'", 1)[0] for word in words_as_written(query) if word[:1].isupper()
    }
    held = content_words(query)
    return [
        tuple(
            other
            for other in table.neighbours(word, similarity, pool)
            if not any(_same_root(mine, other) for mine in held)
        )
        for word in held
        if word not in names
    ]


def _said(store: CandidateSource, space: str, pools: list[tuple[str, ...]], most: int) -> list[str]:
    """The ``most`` nearest words of each pool that the space's texts hold: a word it never
    says finds nothing, and would take the place of one it does ("instruments" → "guitar",
    "piano" in a chat, not "oboe")."""
    _, counts = store.term_counts(space, sorted({word for pool in pools for word in pool}))
    found: dict[str, None] = {}
    for pool in pools:
        found.update(dict.fromkeys([word for word in pool if counts.get(word, 0) > 0][:most]))
    return list(found)


def expand(
    store: CandidateSource,
    embedder: Embedder,
    space: str,
    query: str,
    fused: dict[int, tuple[float, float]],
    rows: dict[int, LineRow],
    config: Config,
    where: SearchFilter | None,
) -> dict[int, tuple[float, float]]:
    """``fused`` with the expansion query's lines: each gets ``expansion_weight`` times its
    min-max BM25 score added to its lexical share, and ``rows`` the lines new to it
    (``enable_query_expansion``)."""
    if not config.signals.enable_query_expansion:
        return fused
    pools = expansion_terms(
        embedder,
        query,
        config.signals.expansion_similarity,
        config.signals.expansion_pool,
    )
    words = _said(store, space, pools, config.signals.expansion_words) if pools else []
    if not words:
        return fused
    match = " OR ".join(f'"{word}"' for word in words)
    found = store.lexical_lines(
        space,
        match,
        config.recall.lexical_candidates,
        (1.0, config.recall.lexical_context_weight),
        where=where,
    )
    weight = config.signals.expansion_weight
    widened = dict(fused)
    for line, score in signals.minmax(dict(found)).items():
        lex, vec = widened.get(line, (0.0, 0.0))
        widened[line] = (lex + weight * score, vec)
    rows.update(
        (row.id, row) for row in store.lines([line for line in widened if line not in rows])
    )
    return widened

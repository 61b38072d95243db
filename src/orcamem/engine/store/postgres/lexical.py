"""The lexical channel on PostgreSQL: FTS5's BM25, computed from ``tsvector`` statistics.

Recall hands every store an FTS5 expression (``"dentist" OR "rao"``, from
``_kernel.text.fts_query``). Its phrases are stemmed by the database's ``orcamem`` text search
configuration (cached: a word is stemmed once a process) and OR-ed into a ``tsquery`` of quoted
lexemes, so no user text is ever parsed as query syntax. The score is FTS5's own ``bm25()``:
per term ``idf · f·(k1+1) / (f + k1·(1 − b + b·D/avgdl))`` with k1 = 1.2, b = 0.75, FTS5's
``idf = ln((N − n + 0.5)/(n + 0.5))`` floored at 1e-6, ``f`` the column-weighted count of the
term's positions (weights A, B, C are the FTS5 columns), ``D`` the row's token count and
``N``/``avgdl`` over the whole table as in FTS5 (kept in ``fts_stats`` by triggers). ``ts_rank_cd``
is not used: it has no document frequency, and on LoCoMo it lost 5 points of recall_any@10
against this BM25 (docs/storage.md).
A row's ``tsvector`` is cut down to the query's lexemes (two ``ts_delete``) before it is
unnested: unnesting a whole line with its lexical context was 0.07 ms a row, 85% of a query.
An unfiltered query of lines is answered in process by :class:`LineIndex`, the same scores to
the bit: each term's part is computed in FTS5's order of operations, and the index sums a
line's parts in the order this SQL does, the ``tsvector``'s (LoCoMo had mathematically tied
lines one unit in the last place apart, and so ordered differently, before).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

import numpy as np

from ..lexical_index import BATCH, K1, PHRASE, B, PostingIndex
from .schema import TEXT_CONFIG, above

__all__ = [
    "INDEXED_LINES",
    "Lexicon",
    "LineIndex",
    "bm25_sql",
    "phrases",
    "term_counts_sql",
    "tsquery",
]

_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})
_CACHE = 50_000

INDEXED_LINES = 1_000_000
"""Lines whose postings a process keeps (:class:`LineIndex`), over all its spaces, as
``vectors.CACHED_VECTORS`` bounds the line cache: a space is taken in when it fits beside those
held, none is dropped to make room, and one that does not fit (or outgrows the room) is
answered in SQL from then on."""


def phrases(match: str) -> list[str]:
    """The phrases of an FTS5 expression: its quoted strings, else its bare words."""
    quoted = [text.replace('""', '"') for text in PHRASE.findall(match)]
    return quoted or [word for word in match.split() if word not in _OPERATORS]


def _literal(lexeme: str, weight: str = "") -> str:
    escaped = lexeme.replace("\\", "\\\\").replace("'", "''")
    return f"'{escaped}'{':' + weight if weight else ''}"


def tsquery(lexemes: Sequence[str], *, joiner: str = " | ", weight: str = "") -> str:
    """A ``tsquery`` of quoted lexemes (never parsed as the user's syntax)."""
    return joiner.join(_literal(lexeme, weight) for lexeme in lexemes)


_STEMS = (
    f"array(SELECT u.lexeme FROM unnest(to_tsvector('{TEXT_CONFIG}', p)) u ORDER BY u.positions[1])"
)
"""A word's lexemes in order, as the index holds them (over a word ``p``)."""


class Lexicon:
    """Words to the lexemes the index holds for them, stemmed by the database once."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def lexemes(self, conn: Any, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        with self._lock:
            missing = [word for word in dict.fromkeys(words) if word not in self._known]
        if missing:
            rows = conn.execute(
                f"SELECT p, {_STEMS} FROM unnest(%s::text[]) AS p", (missing,)
            ).fetchall()
            self.learn(rows)
        with self._lock:
            return {word: self._known.get(word, ()) for word in words}

    def held(self, words: Sequence[str]) -> tuple[list[str], list[str]]:
        """The lexemes of the words known already, and the words not known yet."""
        with self._lock:
            known = [self._known.get(word) for word in dict.fromkeys(words)]
            return [x for group in known if group for x in group], [
                word for word, group in zip(dict.fromkeys(words), known, strict=True)
                if group is None
            ]  # fmt: skip

    def learn(self, rows: Sequence[Sequence[Any]]) -> None:
        """Remember ``(word, lexemes)`` pairs the database stemmed."""
        with self._lock:
            if len(self._known) > _CACHE:
                self._known.clear()
            self._known.update((word, tuple(found)) for word, found in rows)

    def terms(self, conn: Any, match: str) -> list[str]:
        """The distinct lexemes of an FTS5 expression, in order."""
        found = self.lexemes(conn, phrases(match))
        return list(dict.fromkeys(lexeme for group in found.values() for lexeme in group))


def bm25_sql(
    table: str, key: str, weights: Sequence[float], where: str = "", source: str = ""
) -> str:
    """The top-N query of ``table`` by BM25, in one statement; parameters ``lexemes``,
    ``query`` (the lexemes OR-ed), ``space`` and ``limit``. A lexeme's ``n`` (the rows
    holding it) is read from ``fts_terms``, kept by triggers (schema migration 6): counting
    it at each query took 30 of a 37 ms query on an 84,000-line table (docs/storage.md).
    ``source``: the FROM item that yields the rows as ``d`` (default the table itself), as
    a filtered query of lines reads them (``store.admitted_lines``). Ties go in the order
    the rows were written (a line's id, a memory's ``seq``; as on SQLite), so a shorter
    ranking is a prefix of a longer one."""
    frequency = " + ".join(
        f"{float(weight)!r}::float8 * cardinality(array_positions(u.weights, '{letter}'))"
        for letter, weight in zip("ABC", weights, strict=False)
    )
    return f"""
        WITH k AS MATERIALIZED (
            SELECT array(
                SELECT greatest(ln((s.docs - n.c + 0.5) / (n.c + 0.5)), 1e-6)::float8
                FROM unnest(%(lexemes)s::text[]) WITH ORDINALITY AS w(l, i)
                CROSS JOIN LATERAL (SELECT coalesce((SELECT t.docs FROM fts_terms t
                    WHERE t.name = '{table}' AND t.lexeme = w.l), 0) AS c) n
                ORDER BY w.i
            ) AS idf, greatest(s.tokens::float8 / greatest(s.docs, 1), 1e-9) AS avgdl
            FROM fts_stats s WHERE s.name = '{table}'
        )
        SELECT d.{key}, (
            SELECT sum(k.idf[array_position(%(lexemes)s::text[], u.lexeme)] * ((f.v * {K1 + 1})
                / (f.v + {K1} * ({1 - B} + {B} * d.doc_len / k.avgdl))))
            FROM unnest(ts_delete(d.tsv, tsvector_to_array(ts_delete(d.tsv,
                %(lexemes)s::text[])))) AS u
            CROSS JOIN LATERAL (SELECT {frequency} AS v) AS f
        ) AS score
        FROM {source or f"{table} d"} CROSS JOIN k
        WHERE d.space = %(space)s AND d.tsv @@ %(query)s::tsquery{where}
        ORDER BY score DESC, d.{"seq" if table == "memories" else key} LIMIT %(limit)s
    """


def term_counts_sql(*, lines: bool, check: bool = False) -> str:
    """In one row: the space's lines and active, unprohibited memories, and per word (a
    ``tsquery`` on the first column, weight A) the memories holding it, plus the lines holding
    it when ``lines`` (else :meth:`LineIndex.counts` has them), each counted up to ``cap``;
    with ``check``, then the space's vector epoch and its first line above ``last``."""
    current = (
        ", (SELECT vector_epoch FROM spaces WHERE name = %(space)s), (SELECT l.id FROM lines l "
        f"WHERE {above('%(space)s', '%(last)s', 'l')} ORDER BY l.space, l.id LIMIT 1)"
        if check
        else ""
    )
    held = (
        "(SELECT count(*) FROM (SELECT 1 FROM lines WHERE space = %(space)s "
        "AND tsv @@ w.q LIMIT %(cap)s) a) + "
        if lines
        else ""
    )
    return f"""
        SELECT coalesce((SELECT line_count FROM spaces WHERE name = %(space)s), 0)
            + (SELECT count(*) FROM memories WHERE space = %(space)s AND active
                AND NOT prohibited),
            array(SELECT {held}(SELECT count(*) FROM (SELECT 1 FROM memories
                WHERE space = %(space)s AND active AND NOT prohibited AND tsv @@ w.q
                LIMIT %(cap)s) b)
            FROM unnest(%(queries)s::tsquery[]) WITH ORDINALITY AS w(q, i) ORDER BY w.i){current}
    """


class LineIndex(PostingIndex):
    """The SQLite store's in-process BM25 (``engine.store.lexical_index``) fed from ``lines``:
    a line's postings are its ``tsv`` lexemes with their counts of weight A (text) and B
    (context), its length their sum (``doc_len``); a query's terms are :class:`Lexicon`'s, and
    ``N``, ``avgdl`` and each lexeme's ``n`` the whole table's, from ``fts_stats`` and
    ``fts_terms`` at each query, as :func:`bm25_sql` reads them: the same scores as that SQL.
    Rows above the highest id held are read at each query (ids become visible in order under
    the write lock, as for ``vectors.LineCache``); a moved ``vector_epoch`` with lines gone
    loads the space again (``PostingIndex.refresh``)."""

    PARAM = "%s"

    def __init__(self, lexicon: Lexicon, budget: int = INDEXED_LINES) -> None:
        super().__init__()
        self._lexicon = lexicon
        self.budget = budget
        self._reading: set[Any] = set()  # the connections loads read on

    def load(self, conn: Any, space: str) -> None:
        """As :meth:`PostingIndex.load`, for a space that fits (its ``line_count`` read first,
        so one too big is never read); it stays in SQL otherwise. The connection is known
        meanwhile, so :meth:`stop` can cancel the batch it waits for."""
        with self._loads_lock:
            self._reading.add(conn)
        try:
            row = conn.execute("SELECT line_count FROM spaces WHERE name = %s", (space,)).fetchone()
            if row is not None and row[0] <= self._room(space):
                super().load(conn, space)
                self._fit(space)
        finally:
            with self._loads_lock:
                self._reading.discard(conn)

    def _interrupt(self) -> None:
        with self._loads_lock:
            reading = list(self._reading)
        for conn in reading:  # the batch fails (QueryCanceled) and the load ends
            with suppress(Exception):
                conn.cancel_safe(timeout=2.0)

    def search_current(
        self, conn: Any, space: str, match: str, limit: int, weights: tuple[float, float]
    ) -> list[tuple[int, float]] | None:
        """:meth:`search` in one autocommit statement when the space held is current: that
        statement checks the epoch and that no line is above the highest id held, and reads
        ``N``, ``avgdl`` and the terms' ``n`` in its one snapshot (a refresh and the figures
        in a repeatable-read transaction were four round trips: BEGIN, two reads, COMMIT).
        ``None`` when something changed (or the space is not held): refresh, then search."""
        state = self._spaces.get(space)
        if state is None or state.epoch is None:
            return None
        known, missing = self._lexicon.held(phrases(match))
        row = conn.execute(  # the words not stemmed yet are stemmed here too
            f"WITH w AS (SELECT p, {_STEMS} AS lx FROM unnest(%(missing)s::text[]) AS p) "
            "SELECT s.vector_epoch, (SELECT l.id FROM lines l WHERE "
            f"{above('s.name', '%(last)s', 'l')} ORDER BY l.space, l.id LIMIT 1), f.docs, f.tokens, (SELECT "
            "json_object_agg(t.lexeme, t.docs) FROM fts_terms t WHERE t.name = 'lines' AND "
            "t.lexeme = ANY(%(known)s::text[] || array(SELECT unnest(w.lx) FROM w))), "
            "(SELECT json_agg(json_build_array(w.p, w.lx)) FROM w) "
            "FROM spaces s CROSS JOIN fts_stats f WHERE s.name = %(space)s AND f.name = 'lines'",
            {"missing": missing, "last": state.last, "known": known, "space": space},
        ).fetchone()
        if row is not None and row[5]:
            self._lexicon.learn(row[5])
        if row is None or row[0] != state.epoch or row[1] is not None:
            return None
        statistics = (row[2], max(row[3] / max(row[2], 1), 1e-9), dict(row[4] or {}))
        return self.search(conn, space, match, limit, weights, statistics)

    def current_counts(
        self, conn: Any, space: str, groups: Sequence[Sequence[str]], queries: list[str], cap: int
    ) -> tuple[int, list[int], list[int]] | None:
        """``term_counts``' answer in one autocommit statement when the space held is current
        (checked in that statement, as :meth:`search_current` does): the space's lines and
        active memories, per word the memories (SQL) and the lines (this index) holding it."""
        state = self._spaces.get(space)
        if state is None or state.epoch is None:
            return None
        row = conn.execute(
            term_counts_sql(lines=False, check=True),
            {"space": space, "cap": cap, "queries": queries, "last": state.last},
        ).fetchone()
        if row is None or row[2] != state.epoch or row[3] is not None:
            return None
        lines = self.counts(space, groups, cap)
        if lines is None:
            return None
        return int(row[0]), list(row[1]), lines

    def refresh(self, conn: Any, space: str) -> None:
        """As :meth:`PostingIndex.refresh`, in one statement when nothing changed (the
        space's epoch is the one held and no line is above the highest id held): the epoch
        and the check for new lines were two statements a refresh, two refreshes a search."""
        state = self._spaces.get(space)
        if state is not None and state.epoch is not None:
            row = conn.execute(
                "SELECT s.vector_epoch, (SELECT l.id FROM lines l WHERE "
                f"{above('s.name', '%(last)s', 'l')} ORDER BY l.space, l.id LIMIT 1) FROM spaces s "
                "WHERE s.name = %(space)s",
                {"last": state.last, "space": space},
            ).fetchone()
            if row is not None and row[0] == state.epoch and row[1] is None:
                return
        super().refresh(conn, space)
        self._fit(space)

    def _room(self, space: str) -> int:
        with self._lock:
            return self.budget - sum(s.ids.size for n, s in self._spaces.items() if n != space)

    def _fit(self, space: str) -> None:
        """Drop ``space`` when it outgrew the budget beside the others: SQL answers it."""
        room = self._room(space)
        with self._lock:
            state = self._spaces.get(space)
            if state is not None and state.ids.size > room:
                del self._spaces[space]

    def counts(self, space: str, groups: Sequence[Sequence[str]], cap: int) -> list[int] | None:
        """Per group of lexemes (one word's), the lines holding all of them in their text
        (weight A, what ``'w':A & …`` matches), up to ``cap``; ``None`` when the space is not
        held. ``refresh`` it first, in the snapshot the rest of the answer reads."""
        state = self._spaces.get(space)
        if state is None:
            return None
        found = []
        for group in groups:
            docs = None
            for term in group:
                held = self._text_docs(state, term)
                docs = held if docs is None else np.intersect1d(docs, held, assume_unique=True)
            found.append(0 if docs is None else min(int(docs.size), cap))
        return found

    @staticmethod
    def _text_docs(state: Any, term: str) -> np.ndarray:
        """Positions of the lines whose text (not context) holds ``term``, ascending."""
        number = state.terms.get(term)
        parts = [np.zeros(0, dtype=np.int32)]
        for segment in state.segments if number is not None else ():
            at = np.searchsorted(segment.terms, number)
            if at < segment.terms.size and segment.terms[at] == number:
                a, b = segment.starts[at], segment.starts[at + 1]
                parts.append(segment.docs[a:b][segment.tf[a:b, 0] > 0])
        return np.concatenate(parts)

    def _batch(self, conn: Any, space: str, after: int) -> tuple[list[int], list[str], np.ndarray]:
        ids = [
            r[0]
            for r in conn.execute(
                f"SELECT id FROM lines WHERE {above('%(space)s', '%(after)s')} "
                "ORDER BY space, id LIMIT %(limit)s",
                {"space": space, "after": after, "limit": BATCH},
            )
        ]
        if not ids:
            return ids, [], np.zeros((0, 3), dtype=np.int64)
        rows = conn.execute(
            "SELECT u.lexeme, array_agg(l.id), array_agg(cardinality(array_positions("
            "u.weights, 'A'))), array_agg(cardinality(array_positions(u.weights, 'B'))) "
            "FROM lines l, unnest(l.tsv) u WHERE l.space = %(space)s AND l.id > %(after)s "
            "AND l.id <= %(last)s GROUP BY u.lexeme",
            {"space": space, "after": after, "last": ids[-1]},
        ).fetchall()
        sizes = np.array([len(r[1]) for r in rows], dtype=np.int64)
        flat = np.array([i for r in rows for i in r[1]], dtype=np.int64)
        line = np.searchsorted(np.asarray(ids, dtype=np.int64), flat)
        term = np.repeat(np.arange(len(rows), dtype=np.int64), sizes)
        parts = []
        for column in (0, 1):  # one token row per position, as Tokenizer.rows makes them
            counts = np.array([c for r in rows for c in r[2 + column]], dtype=np.int64)
            part = np.empty((int(counts.sum()), 3), dtype=np.int64)
            part[:, 0], part[:, 1], part[:, 2] = line.repeat(counts), column, term.repeat(counts)
            parts.append(part)
        return ids, [r[0] for r in rows], np.concatenate(parts)

    def _terms(self, conn: Any, match: str) -> list[str]:
        """In a ``tsvector``'s order (by bytes), the order :func:`bm25_sql` sums a row's terms."""
        return sorted(self._lexicon.terms(conn, match), key=lambda term: term.encode())

    def _statistics(self, conn: Any, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        rows = conn.execute(
            "SELECT s.docs, s.tokens, t.lexeme, t.docs FROM fts_stats s LEFT JOIN fts_terms t "
            "ON t.name = s.name AND t.lexeme = ANY(%s) WHERE s.name = 'lines'",
            (list(terms),),
        ).fetchall()
        docs, tokens = (rows[0][0], rows[0][1]) if rows else (0, 0)
        avgdl = max(tokens / max(docs, 1), 1e-9)
        return docs, avgdl, {r[2]: r[3] for r in rows if r[2] is not None}

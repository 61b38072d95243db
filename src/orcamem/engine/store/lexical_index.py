"""An in-process BM25 index of a big space's lines: FTS5's own ranking, without its OR scan.

An FTS5 OR query walks every posting of every query term and ranks every matched row of
every space (~95 ms at a million lines, docs/storage.md). This index keeps, per space, each
term's postings as numpy arrays (line, token counts in ``text`` and ``context``) and each
line's token count, and scores a query by gathers over its terms' postings with FTS5's
``bm25()`` formula: per phrase ``idf · f·(k1+1) / (f + k1·(1 − b + b·D/avgdl))``, k1 = 1.2,
b = 0.75, ``idf = ln((N − n + 0.5)/(n + 0.5))`` floored at 1e-6, ``f`` the column-weighted
count, ``D`` the line's tokens in both columns. ``N``, ``avgdl`` and each term's ``n`` are
the whole table's, as in FTS5, and are read from FTS5 itself at each query, in the same read
transaction (its averages record and an ``fts5vocab`` row table): they stay exact while other
spaces and processes write.

Tokens are FTS5's exactly: an ASCII text is split by unicode61's ASCII rule (runs of
``[a-z0-9]``, lower-cased), each distinct word stemmed once by FTS5 itself (a private
in-memory FTS5 table with the index's own ``tokenize`` option); any other text is
tokenized by that table whole. A query this index cannot answer exactly (not the OR of
quoted words ``_kernel.text.fts_query`` makes, or a word that is not one token) returns
``None`` and FTS5 answers it.

Refreshed like the vector index: rows above a per-space rowid watermark are tokenized and
appended as a new segment (segments merge when there are many); a changed ``vector_epoch``
(a delete, a re-embed) counts the space's lines, and when some are gone the space is dropped
and loaded again: a forgotten turn also rewrote the next turn's context (``store.relink``),
whose postings no watermark shows. Thread-safe: a refresh replaces a space's state under a
lock; a search scores the snapshot it took.

:class:`PostingIndex` is the part both engines share (postings, refresh, the score);
:class:`LexicalIndex` feeds it from FTS5, ``postgres.lexical.LineIndex`` from ``tsvector``.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LexicalIndex", "PostingIndex", "Tokenizer", "tokenize_option"]

K1 = 1.2
B = 0.75
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_QUERY = re.compile(r'"(?:[^"]|"")*"(?: OR "(?:[^"]|"")*")*')
PHRASE = re.compile(r'"((?:[^"]|"")*)"')
_MAX_SEGMENTS = 16
BATCH = 100_000  # lines tokenized at once: bounds the load's transient memory
_VOCAB = "orcamem_lines_vocab"


def tokenize_option(conn: sqlite3.Connection, table: str) -> str:
    """The ``tokenize=`` option ``table`` was created with, as its schema says."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    found = re.search(r"tokenize\s*=\s*('(?:[^']|'')*'|\"[^\"]*\")", row[0] if row else "")
    return found.group(1) if found else "'unicode61'"


def _averages(conn: sqlite3.Connection, table: str) -> tuple[int, int]:
    """FTS5's row count and total token count of ``table`` (its averages record, id 1)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    values = _varints(bytes(row[0])) if row else [0]
    return values[0], sum(values[1:])


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (7 bits a byte, high bit set to go on; a 9th byte gives all 8)."""
    out, i = [], 0
    while i < len(blob):
        value = 0
        for step in range(9):
            byte = blob[i]
            i += 1
            if step == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


class Tokenizer:
    """FTS5's tokens of texts, exactly (see the module docstring)."""

    def __init__(self, tokenize: str) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize={tokenize})")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        self._stems: dict[str, str] = {}
        self._lock = threading.Lock()

    def _fts(self, rows: Sequence[tuple[str, str]]) -> list[tuple[str, int, str, int]]:
        """(term, row number, column, offset) of every token FTS5 makes of ``rows``."""
        with self._lock:
            self._conn.execute("DELETE FROM t")
            self._conn.executemany(
                "INSERT INTO t(rowid, a, b) VALUES (?, ?, ?)",
                [(i, a, b) for i, (a, b) in enumerate(rows)],
            )
            return self._conn.execute("SELECT term, doc, col, offset FROM v").fetchall()

    def stems(self, words: Sequence[str]) -> list[str]:
        """Each ASCII word's one FTS5 term (new words go through FTS5 once)."""
        missing = [w for w in dict.fromkeys(words) if w not in self._stems]
        if missing:
            for term, doc, _, _ in self._fts([(w, "") for w in missing]):
                self._stems[missing[doc]] = term
        return [self._stems[w] for w in words]

    def tokens(self, text: str) -> list[str]:
        """FTS5's terms of ``text``, in order."""
        if text.isascii():
            return self.stems(_ASCII_WORD.findall(text.lower()))
        found = sorted((offset, term) for term, _, _, offset in self._fts([(text, "")]))
        return [term for _, term in found]

    def rows(self, rows: Sequence[tuple[str, str]]) -> tuple[list[str], np.ndarray]:
        """The terms of ``rows`` (text, context) and, per token, (row, column, term number)
        as an int64 array of three columns."""
        words: dict[str, int] = {}
        found: list[int] = []
        sizes: list[int] = []  # tokens of each ASCII row's text, then its context
        ascii_rows: list[int] = []
        other: list[int] = []
        for i, (text, context) in enumerate(rows):
            if not (text.isascii() and context.isascii()):
                other.append(i)
                continue
            ascii_rows.append(i)
            for part in (text, context):
                got = [words.setdefault(w, len(words)) for w in _ASCII_WORD.findall(part.lower())]
                found.extend(got)
                sizes.append(len(got))
        names: dict[str, int] = {}
        stem_of = self.stems(list(words))
        word_term = np.array([names.setdefault(t, len(names)) for t in stem_of], dtype=np.int64)
        table = np.empty((len(found), 3), dtype=np.int64)
        counts = np.asarray(sizes, dtype=np.int64)
        table[:, 0] = np.repeat(np.repeat(np.asarray(ascii_rows, dtype=np.int64), 2), counts)
        table[:, 1] = np.repeat(np.tile(np.array([0, 1], dtype=np.int64), len(ascii_rows)), counts)
        table[:, 2] = word_term[np.asarray(found, dtype=np.int64)] if found else 0
        if other:
            made = self._fts([rows[i] for i in other])
            extra = np.array(
                [
                    (other[d], 1 if c == "b" else 0, names.setdefault(t, len(names)))
                    for t, d, c, _ in made
                ],
                dtype=np.int64,
            ).reshape(-1, 3)
            table = np.concatenate([table, extra])
        return list(names), table


@dataclass
class _Segment:
    """The postings of some lines: term numbers sorted, each term's run in ``docs``."""

    terms: np.ndarray  # int64, sorted, unique
    starts: np.ndarray  # int64, len(terms) + 1
    docs: np.ndarray  # int32, positions in the space's line arrays
    tf: np.ndarray  # (postings, 2), unsigned: tokens in text, in context


@dataclass
class _Space:
    """One space's lines: ids, token counts, the segments, the watermark."""

    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    segments: tuple[_Segment, ...] = ()
    terms: dict[str, int] = field(default_factory=dict)
    last: int = 0
    epoch: int | None = None


def _count_type(counts: np.ndarray) -> np.dtype:
    """The narrowest unsigned type of these token counts (one byte for a sentence's)."""
    return np.min_scalar_type(int(counts.max()) if counts.size else 0)


def _segment(table: np.ndarray, offset: int, rows: int) -> _Segment:
    """Postings of one batch from its (row, column, term) table."""
    key = (table[:, 2] * rows + table[:, 0]) * 2 + table[:, 1]
    keys, counts = np.unique(key, return_counts=True)
    pairs, where = np.unique(keys >> 1, return_inverse=True)
    tf = np.zeros((pairs.size, 2), dtype=_count_type(counts))
    tf[where, keys & 1] = counts
    term = pairs // rows
    terms, first = np.unique(term, return_index=True)
    starts = np.append(first, pairs.size).astype(np.int64)
    docs = (pairs % rows + offset).astype(np.int32)
    return _Segment(terms, starts, docs, tf)


def _merge(segments: Sequence[_Segment]) -> _Segment:
    """One segment of several (postings of a term stay in line order)."""
    term = np.concatenate([np.repeat(s.terms, np.diff(s.starts)) for s in segments])
    docs = np.concatenate([s.docs for s in segments])
    tf = np.concatenate([s.tf.astype(np.uint32) for s in segments])
    order = np.argsort(term, kind="stable")
    term, docs, tf = term[order], docs[order], tf[order]
    terms, first = np.unique(term, return_index=True)
    return _Segment(
        terms, np.append(first, term.size).astype(np.int64), docs, tf.astype(_count_type(tf))
    )


def _bounded(segments: list[_Segment]) -> tuple[_Segment, ...]:
    """At most :data:`_MAX_SEGMENTS`, merging the adjacent pair of fewest postings: a
    refresh's small segment merges with its small neighbours, rarely with a big one."""
    while len(segments) > _MAX_SEGMENTS:
        sizes = [s.docs.size for s in segments]
        i = min(range(len(segments) - 1), key=lambda k: sizes[k] + sizes[k + 1])
        segments[i : i + 2] = [_merge(segments[i : i + 2])]
    return tuple(segments)


class PostingIndex:
    """Per space, the postings of its lines and their BM25 top-k (see the module docstring);
    a store's subclass reads its lines' tokens (:meth:`_batch`), a query's terms
    (:meth:`_terms`) and the whole table's figures (:meth:`_statistics`)."""

    PARAM = "?"  # the parameter marker of the store's driver

    def __init__(self) -> None:
        self._spaces: dict[str, _Space] = {}
        self._lock = threading.Lock()  # one refresh at a time
        self._loads: dict[str, threading.Thread] = {}  # spaces loading or loaded
        self._loads_lock = threading.Lock()
        self._stopping = threading.Event()  # the store is closing: loads end, none start
        self._loader: tuple[Callable[[], AbstractContextManager[Any]], tuple] | None = None

    def loaded(self, space: str) -> bool:
        return space in self._spaces

    def loading(self, space: str) -> threading.Thread | None:
        return self._loads.get(space)

    def load_later(
        self,
        reading: Callable[[], AbstractContextManager[Any]],
        space: str,
        errors: tuple[type[BaseException], ...],
    ) -> None:
        """:meth:`load` ``space`` on a thread of its own, once (again after one of
        ``errors``: the store closed or was busy, and a later query starts it again)."""

        def run() -> None:
            try:
                with reading() as conn:
                    self.load(conn, space)
            except errors:
                with self._loads_lock:
                    self._loads.pop(space, None)

        with self._loads_lock:
            self._loader = (reading, errors)  # a refresh that drops a space loads it again
            if space in self._loads or self._stopping.is_set():
                return
            thread = threading.Thread(target=run, name="orcamem-lexical", daemon=True)
            self._loads[space] = thread
        thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """End the loads on their threads and start no more (the store is closing): each
        stops after its current batch (a subclass may cancel that batch's query first,
        :meth:`_interrupt`), keeps nothing, and is joined, for up to ``timeout`` seconds."""
        self._stopping.set()
        self._interrupt()
        with self._loads_lock:
            threads = [t for t in self._loads.values() if t is not threading.current_thread()]
        for thread in threads:
            thread.join(timeout)

    def _interrupt(self) -> None:
        """Cancel what the running loads wait for (nothing here: a batch ends by itself)."""

    def _epoch(self, conn: Any, space: str) -> int | None:
        row = conn.execute(
            f"SELECT vector_epoch FROM spaces WHERE name = {self.PARAM}", (space,)
        ).fetchone()
        return row[0] if row else None

    def refresh(self, conn: Any, space: str) -> None:
        """Bring ``space`` up to date: new rows above its watermark; on a new epoch with lines
        gone, the space dropped and its load started again (the store answers meanwhile)."""
        with self._lock:
            state = self._spaces.get(space) or _Space()
            epoch = self._epoch(conn, space)
            if epoch is None:  # the space was deleted: a new one of its name starts empty
                state = _Space()
            elif (
                state.epoch is not None and epoch != state.epoch and self._lost(conn, space, state)
            ):
                self._spaces.pop(space, None)
                with self._loads_lock:
                    self._loads.pop(space, None)
                if self._loader is not None:
                    reading, errors = self._loader
                    self.load_later(reading, space, errors)
                return
            state.epoch = epoch
            self._spaces[space] = self._read(conn, space, state)

    def load(self, conn: Any, space: str) -> None:
        """Read a space not held yet, outside the lock (searches of it go to the store's own
        query until it is in; it reads in batches, so no long transaction: a delete meanwhile
        moves the epoch read first, and the next refresh re-checks)."""
        state = self._read(conn, space, _Space(epoch=self._epoch(conn, space)))
        if self._stopping.is_set():  # cut short by stop(): a part of the space is not kept
            return
        with self._lock:
            self._spaces.setdefault(space, state)

    def _read(self, conn: Any, space: str, state: _Space) -> _Space:
        """``state`` with the space's lines above its watermark appended, a batch at a time."""
        while True:
            ids, names, table = self._batch(conn, space, state.last)
            if ids:
                state = _append(state, ids, names, table)
            if len(ids) < BATCH or self._stopping.is_set():
                return state

    def _batch(self, conn: Any, space: str, after: int) -> tuple[list[int], list[str], np.ndarray]:
        """Up to :data:`BATCH` line ids of ``space`` above ``after``, ascending, their terms,
        and per token (row in the batch, column, term number) as :meth:`Tokenizer.rows`."""
        raise NotImplementedError

    def _terms(self, conn: Any, match: str) -> list[str] | None:
        """The terms a query's score sums over (a repeated one counts again), or ``None``: a
        query this index cannot answer exactly."""
        raise NotImplementedError

    def _statistics(self, conn: Any, terms: Sequence[str]) -> tuple[int, float, dict[str, int]]:
        """The whole table's rows, average row length, and rows holding each of ``terms``."""
        raise NotImplementedError

    def _lost(self, conn: Any, space: str, state: _Space) -> bool:
        """Whether lines held are gone (an episode's delete). The epoch also moves for a
        memory's delete and a re-embed, which leave the lines as they were: a count of the
        space's lines tells those apart."""
        held = conn.execute(
            f"SELECT count(*) FROM lines WHERE space = {self.PARAM} AND id <= {self.PARAM}",
            (space, state.last),
        ).fetchone()[0]
        return bool(held != state.ids.size)

    def search(
        self,
        conn: Any,
        space: str,
        match: str,
        limit: int,
        weights: tuple[float, float] = (1.0, 0.4),
        statistics: tuple[int, float, dict[str, int]] | None = None,
    ) -> list[tuple[int, float]] | None:
        """The store's BM25 (``weights`` on the two columns) top ``limit`` of ``space`` for
        ``match``, or ``None`` when the space is not held or the query is not one this index
        answers exactly (the store's own query answers it). ``conn`` must see what
        :meth:`refresh` saw; ``statistics``: the table's figures for the query's terms when
        the caller read them with its check that the space is current (not read again)."""
        state = self._spaces.get(space)
        if state is None:
            return None
        phrases = self._terms(conn, match)
        if phrases is None:
            return None
        if limit < 1 or not phrases:
            return []
        rows, avgdl, counts = statistics or self._statistics(conn, list(dict.fromkeys(phrases)))
        if rows == 0:
            return []
        docs_parts: list[np.ndarray] = []
        score_parts: list[np.ndarray] = []
        for term in phrases:
            number = state.terms.get(term)
            if number is None:
                continue
            n = counts.get(term, 0)
            idf = max(float(np.log((rows - n + 0.5) / (n + 0.5))), 1e-6)
            for segment in state.segments:
                at = np.searchsorted(segment.terms, number)
                if at == segment.terms.size or segment.terms[at] != number:
                    continue
                a, b = segment.starts[at], segment.starts[at + 1]
                docs = segment.docs[a:b]
                tf = segment.tf[a:b]
                f = weights[0] * tf[:, 0] + weights[1] * tf[:, 1]
                norm = K1 * (1 - B + B * state.lengths[docs] / avgdl)
                docs_parts.append(docs)
                score_parts.append(idf * ((f * (K1 + 1)) / (f + norm)))
        if not docs_parts:
            return []
        docs = np.concatenate(docs_parts)
        scores = np.concatenate(score_parts)
        unique, where = np.unique(docs, return_inverse=True)
        total = np.bincount(where, weights=scores, minlength=unique.size)
        if unique.size > limit:  # and every line tied at the cut, which ids then decide
            best = np.argpartition(-total, limit - 1)[:limit]
            best = np.union1d(best, np.flatnonzero(total == total[best].min()))
        else:
            best = np.arange(unique.size)
        best = best[np.lexsort((state.ids[unique[best]], -total[best]))][:limit]
        return [(int(state.ids[unique[i]]), float(total[i])) for i in best]


def _append(state: _Space, ids: list[int], names: list[str], table: np.ndarray) -> _Space:
    """``state`` with a batch of lines (their ids, terms and token table) appended."""
    terms = dict(state.terms)
    number = np.array([terms.setdefault(n, len(terms)) for n in names], dtype=np.int64)
    if table.size:
        table[:, 2] = number[table[:, 2]]
    offset = state.ids.size
    lengths = np.bincount(table[:, 0], minlength=len(ids)).astype(np.float64)
    segments = _bounded([*state.segments, _segment(table, offset, len(ids))])
    return _Space(
        np.concatenate([state.ids, np.asarray(ids, dtype=np.int64)]),
        np.concatenate([state.lengths, lengths]),
        segments,
        terms,
        int(ids[-1]),
        state.epoch,
    )


class LexicalIndex(PostingIndex):
    """The SQLite store's: tokens and figures from FTS5 (see the module docstring)."""

    def __init__(self, table: str = "lines_fts") -> None:
        super().__init__()
        self._table = table
        self._tokenizer: Tokenizer | None = None

    def _tokens(self, conn: sqlite3.Connection) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = Tokenizer(tokenize_option(conn, self._table))
        return self._tokenizer

    def _batch(
        self, conn: sqlite3.Connection, space: str, after: int
    ) -> tuple[list[int], list[str], np.ndarray]:
        rows = conn.execute(
            "SELECT id, text, context FROM lines WHERE space = ? AND id > ? ORDER BY id LIMIT ?",
            (space, after, BATCH),
        ).fetchall()
        names, table = self._tokens(conn).rows([(r[1], r[2]) for r in rows])
        return [r[0] for r in rows], names, table

    def _terms(self, conn: sqlite3.Connection, match: str) -> list[str] | None:
        """One FTS5 term per phrase of the OR of quoted words ``fts_query`` makes."""
        if not _QUERY.fullmatch(match):
            return None
        tokenizer = self._tokens(conn)
        phrases = []
        for phrase in PHRASE.findall(match):
            found = tokenizer.tokens(phrase.replace('""', '"'))
            if len(found) != 1:
                return None
            phrases.append(found[0])
        return phrases

    def _statistics(
        self, conn: sqlite3.Connection, terms: Sequence[str]
    ) -> tuple[int, float, dict[str, int]]:
        rows, tokens = _averages(conn, self._table)
        return rows, tokens / rows if rows else 0.0, self._document_counts(conn, terms)

    def _document_counts(self, conn: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int]:
        """Rows of the whole table holding each term (FTS5's ``n``), from its vocabulary."""
        query = f"SELECT term, doc FROM temp.{_VOCAB} WHERE term IN ({','.join('?' * len(terms))})"
        try:
            return dict(conn.execute(query, list(terms)).fetchall())
        except sqlite3.OperationalError:  # this connection's first search: make its table
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB} "
                f"USING fts5vocab(main, {self._table}, row)"
            )
            return dict(conn.execute(query, list(terms)).fetchall())

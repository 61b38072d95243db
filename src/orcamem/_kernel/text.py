"""Text utilities shared by stores and pipelines: sentences, terms, stop words, FTS5 queries,
and the one token counter blocks are budgeted and benchmarked in."""

from __future__ import annotations

import calendar
import re
from collections.abc import Collection, Iterator
from datetime import date
from functools import cache
from typing import Any, Literal

__all__ = [
    "STOPWORDS",
    "content_words",
    "date_ranges",
    "estimate_tokens",
    "fts_query",
    "message_text",
    "shown",
    "slug",
    "split_document",
    "split_sentences",
    "terms",
    "unicode_text",
    "wordpiece_tokens",
    "words_as_written",
]

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves also just will s t d ll m re ve y get got did does
    kind type sort likely lately recently ever
    """.split()  # noqa: SIM905 - a word list reads better as text
)

_WORD_RE = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_PIECE_RE = re.compile(r"[^\W_]+", re.UNICODE)
_ASCII_RE = re.compile(r"[a-z0-9]+")
_SENTENCE_END_RE = re.compile(r"(?:(?<=[.!?…])|(?<=[.!?…][\"')\]]))\s+(?=\S)")
_HAS_SENTENCE_END = re.compile(r"[.!?…][\"')\]]?\s+\S")
"""Whether a text has a place :data:`_SENTENCE_END_RE` splits at, searched from the mark
(its lookbehinds at every position cost a bulk ingest 5 %; this is 7x faster)."""
_NOT_AN_END_RE = re.compile(
    r"^\d+[.)]$|(?:^|\s)(?:[A-Z]|Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e|No|approx)\.$"
)
_MAX_LINE_CHARS = 600


def terms(
    text: str,
    *,
    apostrophe: Literal["keep", "cut", "split"] = "keep",
    ascii_only: bool = False,
    stopwords: Collection[str] = (),
    min_len: int = 1,
    plurals: Literal["keep", "drop_s", "singular"] = "keep",
    distinct: bool = False,
) -> list[str]:
    """The lower-cased words of ``text`` in order, shaped by the knobs one system's spec fixes.

    A word is a run of letters and digits with at most one inner ASCII apostrophe; the
    underscore separates words. ``apostrophe`` keeps ``don't`` whole, ``cut`` keeps ``pune``
    of ``pune's``, ``split`` makes two words of it; ``ascii_only`` lets only ``a-z0-9`` make
    words (accents and apostrophes split them too). A word goes when it is in ``stopwords`` as
    written or as kept, or its kept part is shorter than ``min_len``. ``plurals``: ``drop_s``
    drops a trailing ``s`` (not of ``-ss``) from words over three letters, ``singular`` also
    makes ``-ies`` ``-y`` and keeps ``-us`` and ``-is``. ``distinct`` keeps each term once.
    """
    out = []
    for word, kept in _words(text, apostrophe, ascii_only):
        if word in stopwords or kept in stopwords or len(kept) < min_len:
            continue
        out.append(_singular(kept, plurals))
    return list(dict.fromkeys(out)) if distinct else out


def words_as_written(text: str) -> list[str]:
    """The words of ``text`` as :func:`terms` finds them (``apostrophe="keep"``), not yet
    lower-cased: for a caller that keeps each word's verdict (``recall.entities``)."""
    return _WORD_RE.findall(text)


def _words(text: str, apostrophe: str, ascii_only: bool) -> Iterator[tuple[str, str]]:
    """Each word as written (lower-cased) and the part of it kept.

    Split words are found in the lower-cased text, whole and cut words lower-cased once found:
    the orders differ only where lower-casing looks past the word or adds a mark (Greek final
    sigma, ``İ``), and keeping both keeps every system's terms what they were.
    """
    if ascii_only or apostrophe == "split":
        for piece in (_ASCII_RE if ascii_only else _PIECE_RE).findall(text.lower()):
            yield piece, piece
        return
    for found in _WORD_RE.findall(text):
        word = found.lower()
        yield word, word.split("'", 1)[0] if apostrophe == "cut" else word


def _singular(word: str, plurals: str) -> str:
    """``word`` with the plural folded the way ``plurals`` says (see :func:`terms`)."""
    if plurals == "keep" or len(word) <= 3 or not word.endswith("s"):
        return word
    if plurals == "singular":
        if len(word) > 4 and word.endswith("ies"):
            return word[:-3] + "y"
        if word.endswith(("us", "is")):
            return word
    return word if word.endswith("ss") else word[:-1]


def content_words(text: str) -> list[str]:
    """The words a search looks for (and an index holds): no stop words, none under two
    characters, ``pune's`` as ``pune``, each once, in order."""
    return terms(text, apostrophe="cut", stopwords=STOPWORDS, min_len=2, distinct=True)


def slug(text: str, *, max_words: int = 4) -> str:
    """An attribute name for a rule: its first ``max_words`` ASCII words that are not stop
    words, joined by ``_`` (``rule`` when none is left). One function, so the name the rule
    extractor gives a rule is the one the gate files it under; a slug is its own slug."""
    return "_".join(terms(text, ascii_only=True, stopwords=STOPWORDS)[:max_words]) or "rule"


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression that can never raise: content words, quoted, OR-ed.

    Quoting every term neutralises FTS5 syntax (``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``:``,
    ``^``, parentheses and quotes) in the user's text. OR-ed terms with stop words removed
    beat AND-ed terms by 3–7 points of recall on LoCoMo (DESIGN.md). ``None`` when the text
    has no content word to search for.
    """
    terms = content_words(text)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms[:64])


def split_sentences(text: str) -> list[str]:
    """Split text into sentence-like lines; never returns an empty list for non-blank text."""
    if "\n" not in text and len(text) <= _MAX_LINE_CHARS and not _HAS_SENTENCE_END.search(text):
        # one paragraph, no sentence end inside, short: the text, its spaces normalised (what
        # the rules below make of it, and the common case of a chat line; tests/test_ingest.py)
        return [" ".join(text.split())]
    return _split_sentences(text)


def _split_sentences(text: str) -> list[str]:
    """:func:`split_sentences` by its rules, without the short cut."""
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)]|#{1,6})\s)", text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        sentence = ""
        for piece in _SENTENCE_END_RE.split(paragraph):
            sentence = f"{sentence} {piece}" if sentence else piece
            if not _NOT_AN_END_RE.search(sentence):  # "Dr. Rao", "1. Buy milk" stay whole
                pieces.extend(_wrap(sentence))
                sentence = ""
        if sentence:
            pieces.extend(_wrap(sentence))
    return pieces or [" ".join(text.split())]


def split_document(text: str, *, max_chars: int = 1200) -> list[str]:
    """Split a document into passages of whole paragraphs, each at most ``max_chars``.

    Markdown headings start a new passage so each passage stays on one topic.
    """
    passages: list[str] = []
    current: list[str] = []
    size = 0
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        starts_section = block.startswith("#")
        if current and (starts_section or size + len(block) > max_chars):
            passages.append("\n\n".join(current))
            current, size = [], 0
        for piece in _wrap(block, max_chars) if len(block) > max_chars else [block]:
            if current and size + len(piece) > max_chars:
                passages.append("\n\n".join(current))
                current, size = [], 0
            current.append(piece)
            size += len(piece) + 2
    if current:
        passages.append("\n\n".join(current))
    return passages


def _wrap(sentence: str, limit: int = _MAX_LINE_CHARS) -> list[str]:
    """Cut an over-long sentence at word boundaries."""
    if len(sentence) <= limit:
        return [sentence]
    out: list[str] = []
    current = ""
    for word in sentence.split():
        while len(word) > limit:
            if current:
                out.append(current)
                current = ""
            out.append(word[:limit])
            word = word[limit:]
        if current and len(current) + 1 + len(word) > limit:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        out.append(current)
    return out


def message_text(content: object) -> str:
    """The text of a chat message's content: a string, or a list of parts whose text parts
    (OpenAI ``{"type": "text", "text": …}``, or parts without a type) are joined by newlines;
    a lone surrogate (half an emoji, ``\\ud83d`` in JSON) is U+FFFD: a turn holding one was
    dropped when it was first written as UTF-8."""
    if isinstance(content, str):
        return unicode_text(content)
    if isinstance(content, list):
        return unicode_text(
            "\n".join(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict) and part.get("type") in (None, "text")
            )
        )
    return ""


def unicode_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a surrogate pair becomes its
    character), so it can be written as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def estimate_tokens(text: str) -> int:
    """A GPT-style estimate (~4 characters a token): what a chat model's tokenizer roughly
    counts, reported beside :func:`wordpiece_tokens` (which budgets are counted in)."""
    return max(1, (len(text) + 3) // 4)


@cache
def _tokenizer() -> Any:
    from tokenizers import Tokenizer  # loaded on first count: ``import orcamem`` stays light

    from .embed import DEFAULT_MODEL_DIR  # numpy: a hook that never counts tokens skips it

    tokenizer = Tokenizer.from_file(str(DEFAULT_MODEL_DIR / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def wordpiece_tokens(text: str) -> int:
    """Tokens of ``text`` by the shipped embedder's WordPiece tokenizer (0 for no text), offline.

    It splits on white space and punctuation first, so the count of pieces joined by a space
    or a newline is the sum of their counts: a block can be budgeted piece by piece.
    """
    return len(_tokenizer().encode(text, add_special_tokens=False).ids) if text else 0


_MONTHS = {
    name.lower(): number
    for number in range(1, 13)
    for name in (calendar.month_name[number], calendar.month_abbr[number])
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DATE_PATTERNS = [
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b{_YEAR}\b"),
]


def date_ranges(text: str) -> list[tuple[date, date]]:
    """The calendar dates a text names, as inclusive ``(first, last)`` day ranges.

    ``May 8, 2022`` / ``8th of May 2022`` name one day, ``December 2023`` a month, a lone
    ``2023`` a year. A date inside a longer one is not repeated; month names without a year
    and impossible dates are ignored. Used to favour passages said on the named dates.
    """
    ranges: list[tuple[date, date]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if any(start < span[1] and span[0] < end for start, end in taken):
                continue
            found = match.groupdict()
            year = int(found["year"])
            month = _MONTHS.get((found.get("month") or "").lower())
            try:
                if month and found.get("day"):
                    first = last = date(year, month, int(found["day"]))
                elif month:
                    first = date(year, month, 1)
                    last = date(year, month, calendar.monthrange(year, month)[1])
                else:
                    first, last = date(year, 1, 1), date(year, 12, 31)
            except ValueError:
                continue
            taken.append(span)
            ranges.append((first, last))
    return ranges


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut short for an error message (a 1 MiB value is shown by its start)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."

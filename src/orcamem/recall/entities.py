"""The entities a text names: what the entity graph links lines and memories by.

Deterministic and cheap (a regular expression over each sentence, no model). A proper name is
a run of capitalised words that does not start a sentence ("Pune", "MG Road", "Caroline"),
or one led by a title anywhere ("Dr. Rao", at a sentence's start too). The title is dropped
from the key, so "Dr. Rao" and "Rao" are one entity; a possessive ``'s`` is dropped too
("Dr. Rao's clinic" names ``rao``). After the names come the text's content words of
:data:`MIN_WORD` letters or more ("dentist", "clinic"): a common one is a hub whose fan
damps it to nothing. Stop words, a lone "I", interjections and the names of months and days
(hubs every dated line would share) are never entities. Ingest, consolidation, repair and the
query all call :func:`entities`, so they agree on every key.
"""

from __future__ import annotations

import calendar
import re

from .._kernel.text import STOPWORDS, content_words, split_sentences, words_as_written

__all__ = ["MAX_ENTITIES", "MIN_WORD", "entities"]

MAX_ENTITIES = 16
"""Entities kept per text (a long document lists many; the names and first words stand for it)."""
MIN_WORD = 4
"""A content word this long or longer is an entity too ("dentist", "pottery"): on LoCoMo dev
conversations 0-2 names alone moved turn recall_any@10 by under half a point (chat names few
people and places), names and words by 1.5 (docs/recall.md)."""

_TITLES = frozenset({"dr", "mr", "mrs", "ms", "prof", "sir", "dame", "st", "mt"})
_NEVER = (
    STOPWORDS
    | {name.lower() for name in calendar.month_name[1:]}
    | {name.lower() for name in calendar.day_name}
    | {"ok", "okay", "yes", "yeah", "hey", "hi", "hello", "thanks", "thank", "wow", "oh", "lol"}
)
_TOKEN_RE = re.compile(r"[^\W\d_][\w’'&-]*\.?|\S", re.UNICODE)
_UPPER = re.compile("[A-Z]")


def _word(token: str) -> str:
    """``Rao's`` → ``Rao``; ``Dr.`` → ``Dr``."""
    token = token.rstrip(".")
    for mark in ("'s", "’s"):
        if token.endswith(mark):
            return token[: -len(mark)]
    return token.rstrip("'’")


def _capitalised(word: str) -> bool:
    return bool(word) and word[0].isupper() and word.lower() not in _NEVER


_CACHED = 200_000
"""Tokens and words whose verdicts are kept (a bulk ingest meets the same words again and
again); the caches start over past this many."""
_tokens: dict[str, tuple[str, bool, bool, bool]] = {}
_words: dict[str, str | None] = {}


def _token(token: str) -> tuple[str, bool, bool, bool]:
    """A token's key word and its roles: a title, a capitalised word, a name's end."""
    word = _word(token)
    return (
        word.lower(),
        word.lower() in _TITLES and word[:1].isupper(),
        _capitalised(word),
        token.endswith((".", "'s", "’s")),
    )


def _content(found: str) -> str | None:
    """The entity a word of ``content_words`` gives, if any (as :func:`content_words` and
    the filter of :func:`entities` judge it: a word at a time, so it can be kept)."""
    word = found.lower()
    kept = word.split("'", 1)[0]
    if word in STOPWORDS or kept in STOPWORDS or len(kept) < max(2, MIN_WORD):
        return None
    return None if kept in _NEVER or kept.isdigit() else kept


def entities(text: str, *, phrase: bool = False) -> list[str]:
    """The entity keys ``text`` names, lower-cased, each once, in order (at most
    :data:`MAX_ENTITIES`): ``"My dentist is Dr. Rao."`` → ``["rao"]``.

    A sentence's first word is a name only after a title, or when ``text`` is a ``phrase`` (a
    state's value: "Bangalore" names ``bangalore``); otherwise it is a word like the others.

    Each token's and word's verdict is kept from the first time it was judged (a bulk ingest
    spent a fifth of its time here); ``tests/test_ingest.py`` checks the keys are those of
    the plain rules (:func:`_entities_plainly`) on any text."""
    tokens, words = _tokens, _words  # this call's caches: another thread may start new ones
    if len(tokens) > _CACHED or len(words) > _CACHED:
        tokens = globals()["_tokens"] = {}
        words = globals()["_words"] = {}
    found: list[str] = []
    for sentence in split_sentences(text):
        if sentence.isascii() and not _UPPER.search(sentence, 0 if phrase else 1):
            continue  # no token a name may start (a title alone names nobody)
        run: list[str] = []
        for position, token in enumerate(_TOKEN_RE.findall(sentence)):
            seen = tokens.get(token)
            if seen is None:
                seen = tokens[token] = _token(token)
            lower, title, capitalised, ends = seen
            if not run and title:
                continue  # "Dr." leads the name; the key is the name
            if capitalised and (position > 0 or phrase):
                run.append(lower)
                if not ends:
                    continue  # "Rao's" and "Rao." end a name; "MG" goes on to "Road"
            if run:
                found.append(" ".join(run))
            run = []
        if run:
            found.append(" ".join(run))
    written = words_as_written(text)
    try:
        kept = list(map(words.__getitem__, written))
    except KeyError:
        words.update((word, _content(word)) for word in written if word not in words)
        kept = list(map(words.__getitem__, written))
    found += filter(None, kept)
    return list(dict.fromkeys(found))[:MAX_ENTITIES]


def _entities_plainly(text: str, *, phrase: bool = False) -> list[str]:
    """:func:`entities` without its caches: the rules as written (what the tests hold it to)."""
    found: list[str] = []
    for sentence in split_sentences(text):
        tokens = _TOKEN_RE.findall(sentence)
        words = [_word(token) for token in tokens]
        ends = [token.endswith((".", "'s", "’s")) for token in tokens]
        run: list[str] = []
        for position, word in enumerate(words):
            if not run and word.lower() in _TITLES and word[:1].isupper():
                continue
            if _capitalised(word) and (position > 0 or phrase):
                run.append(word.lower())
                if not ends[position]:
                    continue
            if run:
                found.append(" ".join(run))
            run = []
        if run:
            found.append(" ".join(run))
    found += [
        word
        for word in content_words(text)
        if len(word) >= MIN_WORD and word not in _NEVER and not word.isdigit()
    ]
    return list(dict.fromkeys(found))[:MAX_ENTITIES]

"""Text utilities (sentences, passages, FTS5 queries) and a search that never raises."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from orcamem import InvalidInputError, Memory
from orcamem._kernel.text import (
    STOPWORDS,
    estimate_tokens,
    fts_query,
    slug,
    split_document,
    split_sentences,
    terms,
)

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    database=None,  # no .hypothesis/ folder in the repo
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # the autouse env fixture
)


def _solid(text: str) -> str:
    """The text without whitespace: what splitting must never lose."""
    return "".join(text.split())


# -- split_sentences ----------------------------------------------------------------------------


def test_split_sentences_on_end_punctuation() -> None:
    assert split_sentences("Hello there. How are you? I am fine! Great…  Bye.") == [
        "Hello there.",
        "How are you?",
        "I am fine!",
        "Great…",
        "Bye.",
    ]


def test_split_sentences_on_paragraphs_and_list_items() -> None:
    text = "Intro line\n\n- first item\n- second item\n* third item\n# Heading\ntext under it"
    assert split_sentences(text) == [
        "Intro line",
        "- first item",
        "- second item",
        "* third item",
        "# Heading text under it",
    ]


def test_split_sentences_collapses_whitespace_and_never_returns_nothing() -> None:
    assert split_sentences("   spaced \t  out\n  words   ") == ["spaced out words"]
    assert split_sentences("no end punctuation") == ["no end punctuation"]
    assert split_sentences("...") == ["..."]


def test_long_sentences_are_cut_at_word_boundaries() -> None:
    text = " ".join(f"word{i}" for i in range(300))  # ~2,000 characters, no full stop
    lines = split_sentences(text)
    assert len(lines) > 1 and all(len(line) <= 600 for line in lines)
    assert " ".join(lines) == text  # cut between words, nothing lost
    giant = "x" * 1500
    assert split_sentences(giant) == ["x" * 600, "x" * 600, "x" * 300]


def test_closing_quotes_stay_with_their_sentence() -> None:
    assert split_sentences('He said "stop." Then he left. (Really.) Fine.') == [
        'He said "stop."',
        "Then he left.",
        "(Really.)",
        "Fine.",
    ]


def test_numbered_list_items_stay_whole() -> None:
    assert split_sentences("Todo:\n1. Buy milk\n2. Call mum") == [
        "Todo:",
        "1. Buy milk",
        "2. Call mum",
    ]


PLAIN_TEXT = st.lists(
    st.sampled_from([*"abcdeéßΩ中文 12.!?,;-#*\n\t…", "\n\n", "  ", "word", "1. ", "- "]),
    max_size=200,
).map("".join)


@PROPERTY
@given(PLAIN_TEXT)
def test_split_sentences_loses_no_character(text: str) -> None:
    lines = split_sentences(text)
    if text.strip():
        assert lines and all(line.strip() for line in lines)
    assert _solid("".join(lines)) == _solid(text)
    assert all(len(line) <= 600 for line in lines)


# -- split_document -----------------------------------------------------------------------------


def test_headings_start_new_passages() -> None:
    text = "# A\n\npara a1\n\npara a2\n\n# B\n\npara b\n"
    assert split_document(text) == ["# A\n\npara a1\n\npara a2", "# B\n\npara b"]
    assert split_document("\n\n  \n") == []


def test_small_paragraphs_share_a_passage_up_to_the_limit() -> None:
    paragraphs = [f"Paragraph {i} " + "filler " * 10 for i in range(10)]
    passages = split_document("\n\n".join(paragraphs), max_chars=200)
    assert len(passages) > 1
    assert all(len(p) <= 200 for p in passages)
    assert "\n\n".join(passages) == "\n\n".join(p.strip() for p in paragraphs)


DOC_WORDS = st.text(alphabet=st.sampled_from(list("abcxyzé#")), min_size=1, max_size=40)
DOCUMENT = st.lists(
    st.tuples(DOC_WORDS, st.sampled_from([" ", "\n", "\n\n", "\n\n\n", " \n \n "])),
    max_size=120,
).map(lambda parts: "".join(word + sep for word, sep in parts))


@PROPERTY
@given(DOCUMENT, st.integers(min_value=40, max_value=1500))
def test_split_document_respects_the_limit_and_keeps_every_word(text: str, max_chars: int) -> None:
    passages = split_document(text, max_chars=max_chars)
    assert all(0 < len(p) <= max_chars for p in passages)
    assert " ".join(passages).split() == text.split()


# -- fts_query ----------------------------------------------------------------------------------


def test_fts_query_drops_stop_words_and_quotes_terms() -> None:
    assert fts_query("Where is my home?") == '"home"'
    assert (
        fts_query("What did Caroline paint last week?")
        == '"caroline" OR "paint" OR "last" OR "week"'
    )
    assert fts_query("the of and to I") is None
    assert fts_query("?!… --") is None


def test_fts_query_neutralises_fts_syntax() -> None:
    query = fts_query('foo AND bar OR NOT baz NEAR(qux, 2) col:val ^start pre* "quoted" -x')
    assert query == (
        '"foo" OR "bar" OR "baz" OR "near" OR "qux" OR "col" OR "val" OR "start" OR "pre" '
        'OR "quoted"'
    )


def test_fts_query_deduplicates_and_caps_terms() -> None:
    assert fts_query("Pune pune PUNE Pune's") == '"pune"'
    many = fts_query(" ".join(f"term{i}" for i in range(100)))
    assert many is not None and many.count('"') == 2 * 64


def test_terms_and_token_estimate() -> None:
    assert terms("Don't stop—it's 2023_x!") == ["don't", "stop", "it's", "2023", "x"]
    assert {"the", "and", "where"} <= STOPWORDS
    assert estimate_tokens("a") == 1 and estimate_tokens("x" * 400) == 100


@PROPERTY
@given(st.text(max_size=80))
@example("forbidden_chain_commands_powershell")
def test_a_slug_is_its_own_slug(text: str) -> None:
    """The gate re-slugs the name the rule extractor gave: it must come out unchanged."""
    name = slug(text)
    assert slug(name) == name
    assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+){0,3}", name)


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
    conn.executemany(
        "INSERT INTO docs (body) VALUES (?)",
        [("I live in Pune",), ("NEAR the AND gate",), ("café ☕ naïve",)],
    )
    yield conn
    conn.close()


@PROPERTY
@given(st.text(max_size=200))
@example('"unbalanced ( NEAR(a b) AND OR NOT * : ^ col:x -y +z')
@example("\x00\x01 control")
def test_fts_query_is_always_valid_fts5(fts: sqlite3.Connection, text: str) -> None:
    query = fts_query(text)
    if query is None:
        return
    assert re.fullmatch(r'"[^"\s]+"( OR "[^"\s]+")*', query)
    fts.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (query,)).fetchall()


# -- Memory.search never raises on hostile queries ----------------------------------------------


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    path: Path = tmp_path_factory.mktemp("hostile") / "m.db"
    with Memory(path) as mem:
        mem.add("I work as a backend engineer and I live in Pune.")
        mem.add('The sign said "NEAR the AND gate (exit 3)" in big letters.')
        mem.observe("user", "Café ☕ naïve façade — 東京 ünïcödé.", session_id="s1")
        mem.remember("Prefers dark mode", category="preference")
        mem.forbid("Never use semicolons: a; b", always=True)  # hoisted for any query
        yield mem


FTS_BITS = [
    '"',
    "'",
    "(",
    ")",
    "*",
    ":",
    "^",
    "-",
    "+",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(",
    "NEAR/2",
    "{",
    "}",
    "col:",
    "body:",
    "🙂",
    "👩\u200d👩\u200d👧",
    "e\u0301",
    "\u0301\u0308",
    "\u200b",
    "\u202e",
    "ﬁ",
    "İ",
    "ß",
    "東京",
    "Pune",
    "home",
    "\\",
    "%",
    "_",
    "\u00a0",
]
PRINTABLE = st.characters(exclude_categories=("Cc", "Cs"))
HOSTILE = st.tuples(
    st.lists(
        st.one_of(st.sampled_from(FTS_BITS), st.text(alphabet=PRINTABLE, min_size=1, max_size=6)),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from([" ", "", "\u3000"]),
).map(lambda parts: parts[1].join(parts[0]))


@PROPERTY
@given(HOSTILE)
@example('"Pune')
@example("NEAR(")
@example("AND OR NOT")
@example("*")
@example('") OR 1=1 --')
@example("\u0301")
def test_search_never_raises_on_fts_syntax(filled: Memory, query: str) -> None:
    if not query.strip():
        return
    result = filled.search(query)
    assert all(hit.space == "default" and math.isfinite(hit.score) for hit in result.hits)
    assert [rule.text for rule in result.rules] == ["Never use semicolons: a; b"]


@PROPERTY
@given(st.text(min_size=0, max_size=80))
def test_search_only_refuses_with_invalid_input(filled: Memory, query: str) -> None:
    try:
        filled.search(query)
    except InvalidInputError as exc:
        assert "query" in str(exc)


def test_fts_syntax_still_finds_the_words(filled: Memory) -> None:
    hits = filled.search('Pune AND ("home" OR NEAR(city*')
    top = hits.hits[0]
    assert top.text == "I work as a backend engineer and I live in Pune."
    assert top.breakdown["lexical"] > 0
    gate = filled.search('"NEAR the AND gate"').hits[0]
    assert gate.text.startswith("The sign said") and gate.breakdown["lexical"] > 0

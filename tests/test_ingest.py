"""Bulk ingest stores exactly what single adds store, and its fast parts equal the slow ones.

``add_many`` batches (one embedder call, multi-row inserts, the FTS index and the entity graph
written once per batch); nothing of that may change a row, a vector, an indexed term or a link.
"""

from __future__ import annotations

import gc
import io
import sqlite3
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.embed import StaticEmbedder, make_embedder
from orcamem._kernel.model import InvalidInputError, validate_text
from orcamem._kernel.text import _split_sentences, split_sentences
from orcamem.engine import ahead as ahead_module
from orcamem.engine import memory as memory_module
from orcamem.recall.entities import _entities_plainly, entities

_TURNS: list[dict[str, Any]] = [
    {"text": "My dentist is Dr. Rao. She works at MG Road clinic.", "role": "user"},
    {"text": "Noted: Dr. Rao's clinic on MG Road.", "role": "assistant"},
    {"text": "I moved from Pune to Bangalore last week!", "role": "user"},
    {"text": "Café Zoë in Zürich serves crème brûlée — naïve façade.", "role": "user"},
    {"text": "1. Buy milk\n2. Call Caroline about the pottery class", "role": "user"},
    {"text": "Ünïcode İstanbul straße ΣΊΣΥΦΟΣ 東京 and emoji 🎉 tokens", "role": "assistant"},
    {"text": "a" * 130 + " overlong-word, punctuation!? (brackets) [x] {y} #tag @you", "role": "u"},
    {"text": "Tabs\tand\r\nnewlines\n\nand a second paragraph here.", "role": "user"},
]


def _items() -> list[dict[str, Any]]:
    """Turns over two spaces and three sessions, with notes, meta and an occurred_at."""
    items: list[dict[str, Any]] = []
    for i, turn in enumerate(_TURNS * 3):
        item = {**turn, "kind": "turn", "session_id": f"s{i % 3}", "turn_id": f"t{i}"}
        if i % 4 == 0:
            item["space"] = "other"
        if i % 5 == 0:
            item["meta"] = {"n": i, "caption": "a photo of Pune"}
        if i % 7 == 0:
            item.update(kind="note", session_id=None, occurred_at="2023-05-07T10:00:00Z")
        items.append(item)
    return items


def _state(path: Path) -> dict[str, list[tuple]]:
    """Every stored row that ingest writes, and the FTS index's terms (term, row, column,
    offset): the logical index, whatever segments the inserts made. An entity is its space and
    name (its id is a surrogate the order of first sight assigns)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, lines_fts, instance)")
        queries = {
            "spaces": "SELECT name, created_at, embedder_id, dim, embedder_spec FROM spaces ORDER BY name",
            "episodes": "SELECT * FROM episodes ORDER BY id",
            "lines": "SELECT * FROM lines ORDER BY id",
            "fts": "SELECT term, doc, col, offset FROM temp.terms ORDER BY 1, 2, 3, 4",
            "entities": "SELECT space, name, fan FROM entities ORDER BY 1, 2",
            "entity_lines": "SELECT e.space, e.name, l.line_id, l.episode_id FROM entity_lines l "
            "JOIN entities e ON e.id = l.entity_id ORDER BY 1, 2, 3",
            "sequences": "SELECT * FROM sqlite_sequence WHERE name != 'entities' ORDER BY 1",
        }
        return {name: conn.execute(sql).fetchall() for name, sql in queries.items()}
    finally:
        conn.close()


def test_add_many_stores_exactly_what_adds_one_by_one_store(tmp_path: Path) -> None:
    items = _items()
    with Memory(tmp_path / "one.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        for item in items:
            mem.add(**item)
    with Memory(tmp_path / "bulk.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.add_many(items)
    one, bulk = _state(tmp_path / "one.db"), _state(tmp_path / "bulk.db")
    assert len(one["lines"]) > len(items) and one["entity_lines"] and one["fts"]
    for table in one:
        assert bulk[table] == one[table], table


def test_add_many_appends_after_what_the_space_holds(tmp_path: Path) -> None:
    """A second batch numbers sessions on, sees the previous turn and links to old entities."""
    items = _items()
    half = len(items) // 2
    with Memory(tmp_path / "one.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        for item in items:
            mem.add(**item)
    with Memory(tmp_path / "bulk.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.add_many(items[:half])
        mem.add_many(items[half:])
    assert _state(tmp_path / "bulk.db") == _state(tmp_path / "one.db")


def _tokenizer_embedding(embedder: StaticEmbedder, texts: list[str]) -> np.ndarray:
    """The embedding as the tokenizer alone makes it: each text encoded whole, mean-pooled."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    for row, text in enumerate(texts):
        encoding = embedder._tokenizer.encode(text, add_special_tokens=False)
        ids = [i for i in encoding.ids[:512] if i != embedder._unk]
        if ids:
            out[row] = embedder._vectors[ids].mean(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms


_PRINTABLE = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=80
)
_ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=120)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_ASCII, _PRINTABLE), min_size=1, max_size=6))
def test_static_embedder_equals_the_tokenizer_on_any_text(texts: list[str]) -> None:
    embedder = make_embedder()
    assert isinstance(embedder, StaticEmbedder)
    expected = _tokenizer_embedding(embedder, texts)
    assert np.array_equal(embedder.embed(texts), expected)
    assert np.array_equal(embedder.embed(texts), expected)  # again, from the word cache


def test_static_embedder_equals_the_tokenizer_on_the_fixed_turns() -> None:
    embedder = make_embedder()
    assert isinstance(embedder, StaticEmbedder)
    texts = [turn["text"] for turn in _TURNS] + ["", " ", "x " * 600, "Dr.Rao's e-mail: a@b.c"]
    assert np.array_equal(embedder.embed(texts), _tokenizer_embedding(embedder, texts))


_ANY_CHARACTER = st.one_of(
    st.characters(exclude_categories=()),  # surrogates too
    st.sampled_from("\x00\x08\t\n\x0b\x0c\r\x1f \x7f\x80\x9f\xa0\ud800\udfff\u2028"),
)


@given(st.text(alphabet=_ANY_CHARACTER, max_size=40))
def test_validate_text_refuses_exactly_the_control_characters(text: str) -> None:
    bad = [c for c in text if c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cs")]
    if not text.strip() or len(text.encode("utf-8", "surrogatepass")) > 2**20:
        return
    try:
        validate_text(text)
    except InvalidInputError as exc:
        assert bad and repr(bad[0]) in str(exc)
        index = text.index(bad[0])
        assert f"at index {index}" in str(exc)
    else:
        assert not bad


def _fts_segment_writes(path: Path) -> int:
    """How many segments FTS5 has written to ``lines_fts`` (the write counter of its structure
    record, row 10 of ``lines_fts_data``: a 4-byte cookie, then varints nLevel, nSegment and
    nWriteCounter; fts5_index.c)."""
    conn = sqlite3.connect(path)
    try:
        block = conn.execute("SELECT block FROM lines_fts_data WHERE id = 10").fetchone()[0]
    finally:
        conn.close()
    values, value, at = [], 0, 4
    while len(values) < 3:
        value = (value << 7) | (block[at] & 0x7F)
        if not block[at] & 0x80:
            values.append(value)
            value = 0
        at += 1
    return values[2]


def test_a_bulk_add_writes_the_fts_index_in_a_few_segments(tmp_path: Path) -> None:
    """FTS5 flushes its pending terms at the end of every statement: a statement a line (as
    ``executemany`` runs them) wrote a segment a line, and a bulk ingest spent most of its
    time writing and merging them."""
    with Memory(tmp_path / "m.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.add_many([f"Line number {i} of the bulk load." for i in range(1_000)])
    assert _fts_segment_writes(tmp_path / "m.db") < 50


_NAMEY = st.lists(
    st.sampled_from(
        [*"aAbBdDrR. \n'’s!?…\"()MGm-&1\u2028\x1cİΣ", "Dr.", "Mr ", "St.", "I ", "May ", "Rao's"]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(_NAMEY, _PRINTABLE, _ASCII), st.booleans())
def test_the_fast_entities_and_sentences_are_the_rules_as_written(text: str, phrase: bool) -> None:
    """Entities keep each token's verdict and skip a sentence with no capital after its first
    letter; a short line with no sentence end inside is returned whole: the same keys and
    lines as the plain rules, the first time and from the caches."""
    assert split_sentences(text) == _split_sentences(text)
    assert entities(text, phrase=phrase) == _entities_plainly(text, phrase=phrase)
    assert entities(text, phrase=phrase) == _entities_plainly(text, phrase=phrase)


# Bulk ingest prepared one batch ahead (engine/ahead.py): batches of 10 here, so the 24 items
# make three, and the child takes part whatever the machine's cores.


@pytest.fixture
def ahead(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Small batches, a second core, and the count of answers the child gave."""
    monkeypatch.setattr(memory_module, "_ADD_BATCH", 10)
    monkeypatch.setattr(ahead_module, "_cores", lambda: 2)
    answered: list[int] = []
    receive = ahead_module._Child.receive

    def counted(self: Any, batch: Any) -> Any:
        writes = receive(self, batch)
        if writes is not None:
            answered.append(len(writes))
        return writes

    monkeypatch.setattr(ahead_module._Child, "receive", counted)
    return answered


def _one_by_one(path: Path, items: list[dict[str, Any]]) -> dict[str, list[tuple]]:
    with Memory(path, clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        for item in items:
            mem.add(**item)
    return _state(path)


def test_add_many_prepared_by_the_child_stores_what_adds_one_by_one_store(
    tmp_path: Path, ahead: list[int]
) -> None:
    items = _items()
    with Memory(tmp_path / "bulk.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        assert len(mem.add_many(items)) == len(items)
    assert ahead == [10, 4]  # the first is prepared here while the child starts
    assert _state(tmp_path / "bulk.db") == _one_by_one(tmp_path / "one.db", items)


def test_a_child_that_fails_leaves_the_work_to_this_process(
    tmp_path: Path, ahead: list[int], monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """No Python at all, or one killed after its first answer: the same rows, and a warning."""
    items = _items()
    expected = _one_by_one(tmp_path / "one.db", items)
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with Memory(tmp_path / "none.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.add_many(items)
    assert ahead == [] and _state(tmp_path / "none.db") == expected
    assert "the child failed" in caplog.text
    caplog.clear()

    monkeypatch.undo()  # a real child again, killed once it has answered
    monkeypatch.setattr(memory_module, "_ADD_BATCH", 5)
    monkeypatch.setattr(ahead_module, "_cores", lambda: 2)
    children: list[subprocess.Popen] = []
    receive = ahead_module._Child.receive

    def receive_then_die(self: Any, batch: Any) -> Any:
        writes = receive(self, batch)
        children.append(self.process)
        self.process.kill()
        self.process.wait()
        return writes

    monkeypatch.setattr(ahead_module._Child, "receive", receive_then_die)
    with Memory(tmp_path / "killed.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.add_many(items)
    assert len(children) == 1 and "the child failed" in caplog.text
    assert _state(tmp_path / "killed.db") == expected


def test_a_bad_item_in_a_later_batch_keeps_the_batches_before_it(
    tmp_path: Path, ahead: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    items: list[Any] = list(_items())
    items[23] = {"text": "a turn", "colour": "blue"}
    started = ahead_module._Child.start
    children: list[Any] = []

    def start() -> Any:
        children.append(started())
        return children[-1]

    monkeypatch.setattr(ahead_module._Child, "start", start)
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with (
        Memory(tmp_path / "m.db", clock=clock) as mem,
        pytest.raises(InvalidInputError, match=r"item 23 is invalid .*colour.*the 20 "),
    ):
        mem.add_many(items)
    stored = _state(tmp_path / "m.db")
    assert len(stored["episodes"]) == 20
    assert stored == _one_by_one(tmp_path / "one.db", items[:20])
    assert len(children) == 1 and children[0].process.poll() is not None  # nothing left running


def test_a_pipelined_import_equals_one_in_this_process(
    tmp_path: Path, ahead: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three batches of 5 (and 3) turns, the same rows; a second import skips them all."""
    monkeypatch.setattr(memory_module, "_ADD_BATCH", 5)
    with Memory(tmp_path / "source.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        turns = [item for item in _items() if "space" not in item]
        mem.add_many(turns)
        mem.remember("The user's dentist is Dr. Rao.")
        out = io.StringIO()
        mem.export(out)
    states = []
    ahead.clear()
    for name, cores in (("here.db", 1), ("child.db", 2)):
        monkeypatch.setattr(ahead_module, "_cores", lambda cores=cores: cores)
        with Memory(tmp_path / name, clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
            lines = out.getvalue().splitlines()
            first = mem.import_jsonl(lines, space="copy")
            assert first == {"episodes": len(turns), "memories": 1, "updated": 0, "skipped": 0}
            again = mem.import_jsonl(lines, space="copy")
            assert again == {
                "episodes": 0,
                "memories": 0,
                "updated": 0,
                "skipped": sum(first.values()),
            }
        states.append(_state(tmp_path / name))
        assert len(ahead) == (0 if cores == 1 else 2 * 3)  # 4 batches a run, the first here
    assert states[0] == states[1]


def test_a_bulk_ingest_pauses_the_cycle_collector_and_gives_it_back(
    tmp_path: Path, ahead: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off while a call of several batches prepares and writes, on again after it (also when
    it raises), and left off when it was off before; a one-batch call does not touch it."""
    seen: list[bool] = []
    prepare = ahead_module.prepare

    def watched(batch: Any) -> Any:
        seen.append(gc.isenabled())
        return prepare(batch)

    monkeypatch.setattr(ahead_module, "prepare", watched)
    items = _items()
    export = io.StringIO()
    with Memory(tmp_path / "m.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.add_many(items[:5])
        assert seen == [True] and gc.isenabled()
        mem.add_many(items)
        assert seen[1:] == [False] and gc.isenabled()
        mem.export(export)
        mem.import_jsonl(export.getvalue().split("\n"), space="copy")
        assert seen[2:] == [False] and gc.isenabled()
        bad: list[Any] = [*items, 42]
        with pytest.raises(InvalidInputError, match="item 24"):
            mem.add_many(bad, space="bad")
        assert gc.isenabled()
        gc.disable()
        try:
            mem.add_many(items, space="off")
            assert not gc.isenabled()
        finally:
            gc.enable()

"""Issue 15's lever for questions whose evidence shares no word with them: query expansion
from the static embedder's vocabulary."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orcamem import Config, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.embed import make_embedder
from orcamem.engine import SignalsConfig
from orcamem.recall.expansion import expansion_terms

_TURNS = [
    ("Ann", "We had a picnic by the lake on Sunday.", "s1"),
    ("Bob", "What games did you play at the picnic?", "s1"),
    ("Ann", "Charades and a scavenger hunt, the kids won.", "s1"),
    ("Bob", "My sister adopted a grey cat last spring.", "s2"),
    ("Ann", "I baked bread with rosemary.", "s2"),
    ("Bob", "Rosemary bread sounds lovely.", "s2"),
    ("Ann", "The train to the coast was late again.", "s3"),
    ("Bob", "I finished the quarterly report at work.", "s3"),
    ("Ann", "My garden needs rain badly this week.", "s4"),
    ("Bob", "The new bakery on the corner sells good coffee.", "s4"),
]


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "expansion.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as memory:
        memory.add_many(
            [
                {
                    "text": text,
                    "kind": "turn",
                    "role": role,
                    "session_id": session,
                    "turn_id": f"{session}:{n}",
                    "occurred_at": "2022-05-08T12:00:00Z",
                }
                for n, (role, text, session) in enumerate(_TURNS)
            ]
        )
        yield memory


def _hit(memory: Memory, query: str, turn_id: str):
    return next(
        (hit for hit in memory.search(query, top_k=20).hits if hit.turn_id == turn_id), None
    )


def _rank(memory: Memory, query: str, turn_id: str) -> int:
    return [hit.turn_id for hit in memory.search(query, top_k=20).hits].index(turn_id)


def test_expansion_reaches_a_turn_that_shares_no_word_with_the_query(chat: Memory) -> None:
    query = "Which pets did Bob mention at work?"  # the answer says "cat", never "pets"
    chat.config = Config(signals=SignalsConfig(enable_query_expansion=False))
    off, off_rank = _hit(chat, query, "s2:3"), _rank(chat, query, "s2:3")
    chat.config = Config(signals=SignalsConfig(enable_query_expansion=True))
    on, on_rank = _hit(chat, query, "s2:3"), _rank(chat, query, "s2:3")
    assert off is not None and off.breakdown["lexical"] < 0.01  # only "Bob", its context
    assert on is not None and on.breakdown["lexical"] > 0.1
    assert on_rank < off_rank


def test_expansion_takes_neighbours_not_names_nor_the_query_own_roots() -> None:
    embedder = make_embedder()
    pools = expansion_terms(embedder, "What instruments does Melanie play?", 0.3, 60)
    words = {word for pool in pools for word in pool}
    assert {"violin", "guitar", "piano"} <= words
    assert not {"instrument", "instruments", "plays", "playing"} & words
    assert not any(word.startswith("melan") for word in words)  # a name is not expanded
    assert expansion_terms(make_embedder("static"), "Where is Melanie?", 0.3, 60) == []

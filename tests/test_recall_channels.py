"""Recall's two candidate channels (BM25 and vectors) run at once, and answer as one by one.

Nothing is timed: a barrier that both channels must reach shows they overlap (one after
the other, the first waits alone and the barrier breaks), and the hits are compared with
those of the same store made to answer one channel at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orcamem import Config, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.recall.filters import SearchFilter
from orcamem.recall.hybrid import recall

HANG = 60.0  # seconds: a guard against a hang, never a measure of speed
QUERIES = [
    "Where does Priya live?",
    "what about the garden",
    "Dr. Rao flies to Pune",
    "how are the cats",
]


class Channels:
    """The real store, with its two channel calls wrapped (everything else passes through)."""

    def __init__(self, store: Any, *, meet: threading.Barrier | None = None) -> None:
        self._store = store
        self._meet = meet
        self._one_at_a_time = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._meet is not None:
            self._meet.wait()  # both channels must be in flight together
            return getattr(self._store, name)(*args, **kwargs)
        with self._one_at_a_time:
            return getattr(self._store, name)(*args, **kwargs)

    def lexical_lines(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("lexical_lines", *args, **kwargs)

    def vector_lines(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("vector_lines", *args, **kwargs)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    clock = FrozenClock("2026-06-01T12:00:00Z")
    with Memory(tmp_path / "m.db", clock=clock) as memory:
        for n in range(40):
            memory.observe(
                "user",
                f"Note {n}: Priya lives in Lisbon, the garden needs water, "
                f"Dr. Rao flies to Pune on day {n}, the cats are fine.",
                session_id=f"s{n % 4}",
            )
        yield memory


def _hits(store: Any, memory: Memory, query: str) -> list[tuple[str, float]]:
    found = recall(
        store, memory.embedder_of("default"), "default", query, Config(), memory.clock.now()
    )
    return [(hit.id, hit.score) for hit in found.hits]


def test_the_channels_overlap_and_rank_as_one_at_a_time(mem: Memory) -> None:
    for query in QUERIES:
        meet = threading.Barrier(2, timeout=HANG)
        overlapped = _hits(Channels(mem.store, meet=meet), mem, query)
        assert overlapped == _hits(Channels(mem.store), mem, query), query
        assert overlapped, query


class Counted:
    """The real store, counting its memory BM25 queries."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.asked: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def lexical_memories(self, space: str, match: str, limit: int, **kwargs: Any) -> Any:
        self.asked.append(limit)
        return self._store.lexical_memories(space, match, limit, **kwargs)


def test_a_search_ranks_the_memories_once_for_its_candidates_and_activation(
    mem: Memory,
) -> None:
    """Activation's seed states are the top of the ranking the memory candidates come from
    (one query a search, not two); a filtered search still asks activation's own, unfiltered."""
    for n in range(8):
        mem.remember(f"Priya moved to Lisbon in year {n}")
    config = Config()
    assert config.signals.enable_spreading_activation
    store = Counted(mem.store)
    found = recall(store, mem.embedder_of("default"), "default", "Where does Priya live?",
                   config, mem.clock.now())  # fmt: skip
    assert any(hit.id.startswith("mem") for hit in found.hits)
    assert store.asked == [config.recall.lexical_candidates]
    store.asked.clear()
    recall(store, mem.embedder_of("default"), "default", "Where does Priya live?", config,
           mem.clock.now(), where=SearchFilter(session="s1"))  # fmt: skip
    assert store.asked == [config.recall.lexical_candidates, config.signals.activation_states]

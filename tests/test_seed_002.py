"""Seed 002 statements that no other test pins (rows of docs/conformance.md)."""

from __future__ import annotations

import math

import pytest

from orcamem._kernel.clock import FrozenClock
from orcamem.bank import MemoryBank


def test_staleness_is_surfaced_but_never_gates_retrieval() -> None:
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with MemoryBank(profiles={"researcher": ["@memory"]}, clock=clock) as bank:
        cold = bank.save(
            "researcher", content="The staging cluster runs in Frankfurt.", category="context",
            confidence=0.0,
        )  # fmt: skip
        assert cold.staleness_score == pytest.approx(0.3 * 1.5)  # doubt only, at save
        clock.advance(days=400)  # 400 * 0.05 * 1.5: as stale as the score goes (1.0)
        hits = bank.recall("researcher", "where does the staging cluster run?", min_score=0.0)
        bank.flush()
        assert [hit.memory.id for hit in hits] == [cold.id]  # still recalled
        accessed = bank.get("researcher", cold.id)
        # recomputed on the access: 0 days since it, one access, no confidence, context 1.5
        assert accessed.staleness_score == pytest.approx((0.3 - math.log10(2) * 0.2) * 1.5)


def test_recency_is_anchored_at_the_later_of_created_and_last_accessed() -> None:
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with MemoryBank(profiles={"p": ["@memory"]}, clock=clock) as bank:
        used = bank.save("p", content="Deploys run on Fridays.", category="behavior")
        unused = bank.save("p", content="Deploys need a green build.", category="behavior")
        clock.advance(days=30)  # one half-life
        bank.recall("p", "Fridays")  # an access to `used` only
        bank.flush()
        recency = {
            hit.memory.id: hit.to_dict()["relevance"]["recency"]
            for hit in bank.search("p", "deploys", min_score=0.0)
        }
    assert recency == {used.id: 1.0, unused.id: pytest.approx(0.5)}

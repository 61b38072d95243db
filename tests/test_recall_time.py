"""Anchored time and evidence sets (issue 15): the ranges a query fixes by an anchor, read with
fixed dates, and what each does to a real space's ranking."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from orcamem import Config, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.engine import SignalsConfig
from orcamem.errors import InvalidInputError
from orcamem.recall import when

EVENTS = {"the wedding": date(2023, 6, 10), "she moved": date(2023, 3, 1)}
PRESENT = date(2023, 10, 20)  # a Friday


@pytest.mark.parametrize(
    ("query", "ranges"),
    [
        ("What did I do before the wedding?", [(date(2013, 6, 12), date(2023, 6, 10))]),
        ("Where did she work after she moved?", [(date(2023, 3, 1), date(2033, 2, 26))]),
        ("Where did I go two weeks after she moved?", [(date(2023, 3, 1), date(2023, 3, 15))]),
        ("the week before August 3, 2023", [(date(2023, 7, 27), date(2023, 8, 3))]),
        ("three days after May 8, 2023", [(date(2023, 5, 8), date(2023, 5, 11))]),
        ("What did we do last summer?", [(date(2023, 6, 1), date(2023, 8, 31))]),
        ("What is planned for next summer?", [(date(2024, 6, 1), date(2024, 8, 31))]),
        ("What did he do last weekend?", [(date(2023, 10, 14), date(2023, 10, 15))]),
        ("What happened last month?", [(date(2023, 9, 1), date(2023, 9, 30))]),
        ("Where did we go this year?", [(date(2023, 1, 1), date(2023, 12, 31))]),
        ("Who did she meet 2 years ago?", [(date(2020, 10, 20), date(2022, 10, 20))]),
        # relative to a stated day, which the date signal favours already
        ("What was his issue last week, as mentioned on November 6, 2023?", []),
        ("What did he cook after the party?", []),  # no line names the party
        ("What happened before May 8, 2023?", []),  # a stated date is no event
        ("What did James enjoy on cold winter days?", []),
    ],
)
def test_an_anchor_fixes_a_range(query: str, ranges: list[tuple[date, date]]) -> None:
    assert when.anchored(query, PRESENT, EVENTS.get).resolved == ranges


def test_a_relative_phrase_needs_the_conversations_present() -> None:
    assert not when.anchored("What did we do last summer?", None, EVENTS.get)
    winter = when.anchored("What did we do last winter?", date(2024, 3, 10), EVENTS.get)
    assert winter.resolved == [(date(2023, 12, 1), date(2024, 2, 29))]


def test_a_relative_phrases_words_are_no_topic_words_an_events_are() -> None:
    fixed = when.anchored("What did I cook last summer?", PRESENT, EVENTS.get)
    assert fixed.words == {"last", "summer"}
    assert not when.anchored("What did I cook after the wedding?", PRESENT, EVENTS.get).words


@pytest.fixture
def diary(tmp_path: Path) -> Iterator[Memory]:
    """Two dinners, one before a wedding and one after it, among other talk (the space is
    calibrated: it holds more than eight lines)."""
    with Memory(tmp_path / "diary.db", clock=FrozenClock("2026-10-20T10:00:00Z")) as memory:
        for day, text in (
            ("2026-05-01", "I cooked a mushroom risotto for my friends."),
            ("2026-05-02", "The train to work was late again."),
            ("2026-06-10", "My cousin's wedding in the vineyard was lovely."),
            ("2026-06-10", "The wedding cake had three tiers."),
            ("2026-06-11", "We danced until midnight at the wedding reception."),
            ("2026-07-20", "I cooked a spicy lentil curry at home."),
            ("2026-08-02", "My sister adopted a grey cat."),
            ("2026-09-05", "I am training for a half marathon."),
            ("2026-10-01", "Our team shipped the release on Friday."),
            ("2026-10-15", "I am reading a novel about sailors."),
        ):
            memory.add(text, role="user", session_id=day, occurred_at=f"{day}T19:00:00Z")
        yield memory


def _ranked(memory: Memory, query: str) -> list[tuple[str, float | None]]:
    return [(hit.text, hit.breakdown.get("date")) for hit in memory.search(query).hits]


def test_an_event_anchors_before_and_after(diary: Memory) -> None:
    diary.config = Config(signals=SignalsConfig(enable_anchored_time=True))
    risotto, curry = (
        "I cooked a mushroom risotto for my friends.",
        "I cooked a spicy lentil curry at home.",
    )
    before = dict(_ranked(diary, "What did I cook before the wedding?"))
    assert before[risotto] and not before[curry]  # the wedding was said on June 10
    after = dict(_ranked(diary, "What did I cook after the wedding?"))
    assert after[curry] and not after[risotto]
    summer = _ranked(diary, "What did I cook last summer?")  # the present: October 15
    assert summer[0] == (curry, pytest.approx(summer[0][1])) and summer[0][1] > 0
    diary.config = Config()  # off by default: neutral on LoCoMo, two block questions fewer
    assert not any(found for _, found in _ranked(diary, "What did I cook before the wedding?"))


@pytest.fixture
def dog(tmp_path: Path) -> Iterator[Memory]:
    """A dog named in three sessions: where he came from, what he does with his greyhound
    club, and a line that says nothing the query asks."""
    with Memory(tmp_path / "dog.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as memory:
        for session, text in (
            ("s1", "I adopted a greyhound named Zephyr from the shelter downtown."),
            ("s1", "The train to work was late again."),
            ("s2", "Zephyr runs with the shelter volunteers every weekend."),
            ("s2", "My sister adopted a grey cat."),
            ("s3", "Zephyr chewed my slippers."),
            ("s3", "I am training for a half marathon."),
            ("s4", "Our team shipped the release on Friday."),
            ("s4", "I am reading a novel about sailors."),
            ("s4", "We had a picnic by the lake on Sunday."),
        ):
            memory.add(text, role="user", session_id=session)
        yield memory


def test_an_evidence_set_lifts_the_other_sessions_mentions_it_has_evidence_for(
    dog: Memory,
) -> None:
    query = "Where does the greyhound from the shelter run?"
    config = SignalsConfig(enable_evidence_sets=True, evidence_share=1.0, evidence_sources=1)
    dog.config = Config(signals=config)
    hits = dog.search(query).hits
    source = hits[0]
    assert source.text.startswith("I adopted a greyhound named Zephyr")
    beach = next(hit for hit in hits if hit.text.startswith("Zephyr runs"))
    assert beach.breakdown["evidence"] > 0 and beach.score == pytest.approx(source.score)
    assert "Zephyr chewed my slippers." not in {hit.text for hit in hits}  # no evidence of its own
    dog.config = Config()  # off by default: no gain over spreading activation on LoCoMo
    assert all("evidence" not in hit.breakdown for hit in dog.search(query).hits)


def test_the_evidence_set_switches_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="enable_anchored_time"):
        SignalsConfig(enable_anchored_time="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="evidence_share"):
        SignalsConfig(evidence_share=1.5)
    with pytest.raises(InvalidInputError, match="evidence_max_fan"):
        SignalsConfig(evidence_max_fan=1)

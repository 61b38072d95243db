"""Today's state leads: a question that only matches the outdated line of a changed state gets
the current state, never the old line alone (issue 13, "facts lead, passages support")."""

from __future__ import annotations

from pathlib import Path

import pytest

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock


def standups(mem: Memory) -> None:
    """Two dozen standup notes: enough text for recall to calibrate its gate."""
    for i in range(24):
        mem.observe(
            "user",
            f"Standup note {i}: fixed the build, reviewed PR {100 + i}, next: parser tests.",
            session_id=f"st{i}",
            occurred_at=f"2026-07-{i + 1:02d}T09:00:00Z",
        )


@pytest.fixture
def moved(tmp_path: Path, clock: FrozenClock) -> Memory:
    """A user who lived in Berlin and moved to Lisbon, among two dozen standup notes (enough
    text for recall to calibrate its gate); consolidated with the rules."""
    mem = Memory(tmp_path / "m.db", clock=clock)
    mem.observe("user", "I live in Berlin.", session_id="s1", occurred_at="2026-01-05T10:00:00Z")
    mem.observe(
        "user", "I moved to Lisbon last month.", session_id="s2", occurred_at="2026-06-10T10:00:00Z"
    )
    standups(mem)
    mem.sleep()
    assert [m.value for m in mem.facts()] == ["Lisbon"]
    return mem


@pytest.mark.parametrize("question", ["Where do I live?", "Where do I live now?"])
def test_the_current_state_leads_the_outdated_line_that_found_it(
    moved: Memory, question: str
) -> None:
    block = moved.recall(question)
    assert "home city: Lisbon" in block
    assert "Berlin" not in block  # the old line alone would mislead; it is not about the change


def test_a_question_about_the_change_still_gets_the_old_line_marked(moved: Memory) -> None:
    block = moved.recall("Where did I live before?")
    assert "I live in Berlin. [outdated: now Lisbon]" in block


def test_the_current_state_ranks_above_the_outdated_line(moved: Memory) -> None:
    hits = moved.search("Where do I live?").hits
    kinds = [(hit.kind, hit.memory.value if hit.memory else hit.text) for hit in hits]
    assert kinds.index(("memory", "Lisbon")) < kinds.index(("passage", "I live in Berlin."))


def test_another_sentence_of_the_outdated_turn_stays_the_evidence_it_is(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """The whole turn had been outdated by the move: "Which ward do I work in?" lost its
    only evidence to the new home city, or got the ward line marked "[outdated: now Porto]"
    (the night shifts have not changed)."""
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        said = {
            "2026-01-05": "Hi! I live in Berlin. I work night shifts in the cardiology ward.",
            "2026-06-10": "I moved to Porto last week.",
        }
        for day, text in said.items():
            mem.observe("user", text, session_id=day, occurred_at=f"{day}T10:00:00Z")
        standups(mem)
        mem.sleep()
        assert [m.value for m in mem.facts() if m.attribute == "home city"] == ["Porto"]
        for question in ("Which ward do I work in?", "Do I work night shifts?"):
            block = mem.recall(question)
            assert "cardiology ward" in block, block
            assert "ward. [outdated" not in block and "ward.] [outdated" not in block
            assert "I live in Berlin" not in block or "Berlin. [outdated: now Porto]" in block
        assert "home city: Porto" in mem.recall("Where do I live?")
        assert "Berlin" not in mem.recall("Where do I live?")

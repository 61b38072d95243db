"""A question the block shows whole brings its answer past the adaptive cut."""

from datetime import datetime, timezone

from orcamem import Config
from orcamem._kernel.model import Hit
from orcamem.recall import pack_context

TODAY = datetime(2024, 2, 1, tzinfo=timezone.utc)
QUERY = "How did John's kids react at the military memorial?"


def _hit(n: int, text: str, score: float, role: str, session: str = "s1") -> Hit:
    return Hit(
        "passage",
        f"ep-{n}",
        text,
        score,
        "space",
        occurred_at="2023-08-03T10:00:00",
        role=role,
        session_id=session,
        line="s1",
        episode_id=n,
    )


def _filler(n: int, score: float) -> Hit:
    return _hit(
        n,
        f"We visited memorial number {n} on the coast road and talked about it for hours.",
        score,
        "John",
        session=f"other-{n}",
    )


def _hits(question: str, reply_role: str = "John", reply_session: str = "s1") -> list[Hit]:
    best = _hit(10, "Last week we had a meaningful experience at a military memorial.", 1.0, "John")
    asked = _hit(20, question, 0.9, "Maria")
    reply = _hit(21, "They were awestruck and humbled.", 0.2, reply_role, reply_session)
    return [best, asked, *[_filler(n, 0.25) for n in range(30, 40)], reply]


def _ids(hits: list[Hit]) -> list[str]:
    return [hit.id for hit in pack_context(hits, [], Config(), TODAY, QUERY)[1]]


def test_the_reply_to_a_question_shown_whole_rides_past_the_cut() -> None:
    used = _ids(_hits("That's so moving! How did they react when they saw it?"))
    assert "ep-20" in used and "ep-21" in used
    assert not any(f"ep-{n}" in used for n in range(36, 40))  # the cut still cuts the rest
    block, _ = pack_context(
        _hits("That's so moving! How did they react when they saw it?"), [], Config(), TODAY, QUERY
    )
    assert "How did they react when they saw it? | John: They were awestruck and humbled." in block


def test_only_a_question_shown_whole_and_answered_by_someone_else_brings_its_reply() -> None:
    said = "That's so moving! I went to one with my kids too, they loved the old planes there."
    assert "ep-21" not in _ids(_hits(said))  # no question
    long_question = (
        "That's so moving, and I remember how much your grandfather loved those old planes too; "
        "how did they react when they saw it?"
    )
    assert "ep-21" not in _ids(_hits(long_question))  # the block shows it cut, not as asked
    question = "That's so moving! How did they react when they saw it?"
    assert "ep-21" not in _ids(_hits(question, reply_role="Maria"))  # she goes on, no answer
    assert "ep-21" not in _ids(_hits(question, reply_session="s2"))  # another conversation

"""The block's adaptive count: a clear answer gets a short block, close candidates get room."""

from datetime import datetime, timezone
from pathlib import Path

from orcamem import Config
from orcamem._kernel.config import PackConfig
from orcamem._kernel.model import Hit
from orcamem._kernel.text import wordpiece_tokens
from orcamem.recall import Packed, explain_pack, pack_context

TODAY = datetime(2024, 2, 1, tzinfo=timezone.utc)
QUERY = "What did John say about the trip?"


def _hits(scores: list[float]) -> list[Hit]:
    return [
        Hit(
            "passage",
            f"ep-{n}",
            f"Line {n} of the trip notes: we stopped at town number {n} on the coast road.",
            score,
            "s",
            occurred_at=f"2024-01-{n + 1:02d}T10:00:00",
            role="John",
            line="s1",
            episode_id=n,
        )
        for n, score in enumerate(scores)
    ]


def _pack(hits: list[Hit], **pack: object) -> tuple[str, list[Hit]]:
    return pack_context(hits, [], Config(pack=PackConfig(**pack)), TODAY, QUERY)


def test_a_clear_answer_gets_a_short_block_and_close_candidates_fill_the_ceiling() -> None:
    clear = _hits([1.0] + [0.2] * 15)
    alike = _hits([1.0] * 16)
    fixed_block, fixed = _pack(clear, context_budget_tokens=400, relative_score=0.0)
    short_block, short = _pack(
        clear, context_budget_tokens=400, relative_score=0.4, min_block_tokens=0
    )
    assert len(fixed) > 8 and [hit.id for hit in short] == ["ep-0"]
    assert wordpiece_tokens(short_block) < wordpiece_tokens(fixed_block) // 4
    long_block, long = _pack(alike, context_budget_tokens=400, relative_score=0.4)
    assert len(long) == len(fixed) and 200 < wordpiece_tokens(long_block) <= 400


def test_the_floor_is_packed_whatever_the_scores() -> None:
    clear = _hits([1.0] + [0.2] * 15)
    block, used = _pack(clear, context_budget_tokens=400, relative_score=0.4, min_block_tokens=120)
    floor_block, floor = _pack(clear, context_budget_tokens=120, relative_score=0.0)
    assert [hit.id for hit in used] == [hit.id for hit in floor] and len(used) > 1
    assert block == floor_block and wordpiece_tokens(block) <= 120


def test_the_defaults_cut_at_the_score_gap() -> None:
    pack = Config().pack
    assert pack.relative_score > 0 and pack.min_block_tokens < pack.context_budget_tokens
    clear = _hits([1.0] + [0.2] * 15)
    _, used = pack_context(clear, [], Config(), TODAY, QUERY)
    _, floor = _pack(clear, context_budget_tokens=pack.min_block_tokens, relative_score=0.0)
    _, fixed = _pack(clear, relative_score=0.0)
    assert [hit.id for hit in used] == [hit.id for hit in floor] and len(used) < len(fixed)


def _explain(hits: list[Hit], **pack: object) -> Packed:
    return explain_pack(hits, [], Config(pack=PackConfig(**pack)), TODAY, QUERY)


def test_the_trace_says_the_score_cut_left_an_item_out_not_the_budget() -> None:
    """A hit the adaptive count dropped is reported as below the cut, with its share of the
    best; one that passed the cut but found no room is reported as budget; the block and hits
    are exactly pack_context's."""
    clear = _hits([1.0] + [0.31] * 15)
    packed = _explain(clear, context_budget_tokens=400, relative_score=0.37, min_block_tokens=0)
    assert (packed.block, packed.used) == _pack(
        clear, context_budget_tokens=400, relative_score=0.37, min_block_tokens=0
    )
    assert [hit.id for hit in packed.used] == ["ep-0"]
    assert {left.reason for left in packed.left_out} == {"score_cut"}
    assert [left.hit.id for left in packed.left_out] == [f"ep-{n}" for n in range(1, 16)]
    assert packed.left_out[0].detail == "below the score cut: 0.31 of the best, the cut is 0.37"

    alike = _hits([1.0] * 16)  # nothing to cut: whatever is left out is the budget's
    tight = _explain(alike, context_budget_tokens=120, relative_score=0.37)
    assert 1 < len(tight.used) < 16 and len(tight.left_out) == 16 - len(tight.used)
    assert {left.reason for left in tight.left_out} == {"budget"}
    assert tight.left_out[0].detail.startswith("budget: no room left")


def test_past_the_floor_the_cut_and_the_budget_each_name_what_they_dropped() -> None:
    """Close candidates pass the cut and fill the ceiling (budget for the rest of them);
    the far ones are below the cut, whether or not there would have been room."""
    mixed = _hits([1.0] * 12 + [0.2] * 4)
    packed = _explain(mixed, context_budget_tokens=250, relative_score=0.37, min_block_tokens=40)
    assert (packed.block, packed.used) == _pack(
        mixed, context_budget_tokens=250, relative_score=0.37, min_block_tokens=40
    )
    reasons = {left.hit.id: left.reason for left in packed.left_out}
    assert {reasons[f"ep-{n}"] for n in range(12, 16)} == {"score_cut"}
    assert "budget" in reasons.values() and len(packed.used) < 12
    assert all(left.of_best == 1.0 for left in packed.left_out if left.reason == "budget")


def test_memory_explain_is_recalls_block_with_each_hit_in_or_out_and_marks_nothing(
    tmp_path: Path,
) -> None:
    import asyncio

    from orcamem import AsyncMemory, Memory

    with Memory(tmp_path / "m.db") as mem:
        for n in range(12):
            mem.observe(
                "user", f"On day {n} of the trip John and I stopped at town {n}.", session_id="s"
            )
        kept = mem.remember("John's trip ended in Lisbon.", category="state")
        packed = mem.explain(QUERY)
        assert packed.block == mem.recall(QUERY) and packed.query
        ranked = [hit.id for hit in packed.hits]
        assert sorted(ranked) == sorted(
            [hit.id for hit in packed.included] + [left.hit.id for left in packed.left_out]
        )
        assert [hit.id for hit in packed.included] == [
            i for i in ranked if i in {h.id for h in packed.used}
        ]
        assert all(left.reason in ("outdated", "score_cut", "budget") for left in packed.left_out)
    with Memory(tmp_path / "fresh.db") as mem:
        kept = mem.remember("John's trip ended in Lisbon.", category="state")
        assert kept.id in [hit.id for hit in mem.explain("Where did John's trip end?").included]
        assert mem.memory(kept.id).access_count == 0  # a preview, not a recall
        mem.recall("Where did John's trip end?")
        assert mem.memory(kept.id).access_count == 1

    async def async_explain() -> Packed:
        async with AsyncMemory(tmp_path / "fresh.db") as amem:
            return await amem.explain("Where did John's trip end?")

    assert kept.id in [hit.id for hit in asyncio.run(async_explain()).included]

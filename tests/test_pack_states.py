"""Dense states: one ``[entity.attribute: value; attribute: value]`` per entity (issue 13 item 4),
with a budget that counts what the block really adds."""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from orcamem import Config, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.config import PackConfig
from orcamem._kernel.model import Hit, MemoryRecord
from orcamem._kernel.text import wordpiece_tokens
from orcamem.recall import explain_pack, pack_context
from orcamem.recall.blocks import engine, strip

TODAY = datetime(2026, 11, 1, tzinfo=timezone.utc)

# (entity, attribute, value, condition, event_date), best-ranked first
STATES = [
    ("user", "home city", "Bangalore", None, "2026-10-17"),
    ("caroline", "pet", "a golden retriever puppy", None, "2023-05-08"),
    ("user", "morning drink", "black coffee", None, None),
    ("user", "morning drink", "ginger tea with honey", "a sore throat", None),
    ("caroline", "hobby", "pottery; pet: a cat", None, None),  # a ";" cannot fake a state
    ("melanie", "family", "husband and kids", None, "2023-07-12"),
    ("user", "editor", "neovim", None, None),
]


@pytest.fixture(scope="module")
def records() -> list[MemoryRecord]:
    with Memory(":memory:", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        return [
            mem.remember(
                value,
                category="state" if date else "preference",
                entity=entity,
                attribute=attribute,
                value=value,
                condition=condition,
                event_date=date,
            )
            for entity, attribute, value, condition, date in STATES
        ]


def _hits(records: list[MemoryRecord]) -> list[Hit]:
    return [
        Hit("memory", record.id, record.content, 1.0 - rank / 100, record.space, memory=record)
        for rank, record in enumerate(records)
    ]


def _config(budget: int = 400) -> Config:
    return Config(pack=PackConfig(context_budget_tokens=budget, relative_score=0.0))


def test_states_are_one_bracket_per_entity_best_ranked_first(records: list[MemoryRecord]) -> None:
    block, used = pack_context(_hits(records), [], _config(), TODAY)
    assert len(used) == len(STATES)
    assert block.splitlines()[2] == (
        "[user.home city: Bangalore (since 2026-10-17); morning drink: black coffee; "
        "morning drink | cond: a sore throat -> ginger tea with honey; editor: neovim]"
        "[caroline.pet: a golden retriever puppy (since 2023-05-08); hobby: pottery, pet: a cat]"
        "[melanie.family: husband and kids (since 2023-07-12)]"
    )


def test_a_state_alone_keeps_the_seeds_form(records: list[MemoryRecord]) -> None:
    block, _ = pack_context(_hits(records[:1]), [], _config(), TODAY)
    assert block.splitlines()[2] == "[user.home city: Bangalore (since 2026-10-17)]"


def test_an_entitys_bracket_costs_what_its_states_add_in_any_order(
    records: list[MemoryRecord],
) -> None:
    """The layout's running cost is the tokens of what it renders, after every state added,
    whatever the order (its brackets come out in rank order all the same)."""
    hits = _hits(records)
    rank = {id(hit): index for index, hit in enumerate(hits)}
    for seed in range(20):
        order = random.Random(seed).sample(hits, len(hits))
        layout = engine._Entities(lambda hit: engine._state(hit.memory, 80), lambda h: rank[id(h)])
        for hit in order:
            before = layout.cost
            layout.add(hit)
            assert layout.cost == wordpiece_tokens("".join(layout.pieces())) > before


def test_the_budget_is_exact_for_grouped_states(records: list[MemoryRecord]) -> None:
    """At the full block's own size everything fits; one token less drops a state; no budget
    gives a block over it; explain_pack names the budget for what it left out."""
    hits = _hits(records)
    full, _ = pack_context(hits, [], _config(), TODAY)
    size = wordpiece_tokens(full)
    block, used = pack_context(hits, [], _config(size), TODAY)
    assert block == full and len(used) == len(hits)
    _, fewer = pack_context(hits, [], _config(size - 1), TODAY)
    assert len(fewer) == len(hits) - 1
    for budget in range(size - 40, size + 1):
        block, used = pack_context(hits, [], _config(budget), TODAY)
        assert wordpiece_tokens(block) <= budget
        packed = explain_pack(hits, [], _config(budget), TODAY)
        assert (packed.block, packed.used) == (block, used)
        assert {left.reason for left in packed.left_out} <= {"budget"}
        assert len(packed.left_out) == len(hits) - len(used)


def test_per_state_spells_each_state_beside_its_entity() -> None:
    block = (
        "## Memory\n[FORBIDDEN: x][user.a: b (since 2026-10-17); c | cond: d -> e]"
        "[EVENT: 2026-11-01: f][LOG: 2026-10-10 user: g. | h]"
    )
    assert engine.per_state(block) == (
        "## Memory\n[FORBIDDEN: x][user.a: b (since 2026-10-17)][user.c | cond: d -> e]"
        "[EVENT: 2026-11-01: f][LOG: 2026-10-10 user: g. | h]"
    )


def test_strip_takes_a_grouped_bracket_and_a_half_echoed_one(
    records: list[MemoryRecord],
) -> None:
    block, _ = pack_context(_hits(records), [], _config(), TODAY)
    states = block.splitlines()[2]
    assert strip.strip(f"Sure. {states} Anything else?") == "Sure. Anything else?"
    half = states[: len(states) // 2]  # the model stopped mid-bracket
    assert strip.strip(f"Noted: {half}", block) == "Noted:"
    assert strip.strip(f"{half} I'll remember.", block) == "I'll remember."
    tail = states[len(states) // 2 :]  # the model started mid-bracket
    assert strip.strip(f"So {tail} right?", block) == "So right?"
    opener = "Your city: [user.home city: Bang"  # no block at hand: the unclosed opener goes
    assert strip.strip(opener) == "Your city: Bang"
    said = "I like a.b: c; d: e and [brackets]."
    assert strip.strip(said, block) == said

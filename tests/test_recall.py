"""Recall mechanisms: the pure functions, and one behaviour test per mechanism."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from orcamem import Config, InvalidInputError, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.text import date_ranges, fts_query
from orcamem.engine import RecallConfig, SignalsConfig
from orcamem.engine.demo import run_demo
from orcamem.recall import signals, when
from orcamem.recall.hybrid import _asks, _fuse

# -- pure functions ------------------------------------------------------------------------


def test_neighbour_shares_are_asymmetric_and_keep_the_largest_loan() -> None:
    window = {1: [(0, -1), (2, 1), (3, 2)], 2: [(1, -1), (3, 1)]}
    lent = signals.neighbour_shares({1: 1.0, 2: 0.5}, window, before=(0.1,), after=(0.4, 0.2))
    assert lent[0] == pytest.approx(0.1)  # the turn before 1
    assert lent[2] == pytest.approx(0.4)  # the turn after 1
    assert lent[3] == pytest.approx(0.2)  # 1 lends 0.2 * 1.0, 2 lends 0.4 * 0.5: the largest
    assert lent[1] == pytest.approx(0.05)


def test_a_question_lends_its_answer_share_to_the_next_turn_only() -> None:
    window = {1: [(0, -1), (2, 1)]}
    plain = signals.neighbour_shares({1: 1.0}, window, (0.2,), (0.2,))
    asked = signals.neighbour_shares({1: 1.0}, window, (0.2,), (0.2,), {1}, 0.8)
    assert plain[2] == pytest.approx(0.2) and asked[2] == pytest.approx(0.8)
    assert asked[0] == pytest.approx(0.2)


def test_neighbour_shares_ignore_unscored_turns_and_far_offsets() -> None:
    assert signals.neighbour_shares({1: 0.0}, {1: [(2, 1)]}, (0.5,), (0.5,)) == {}
    assert signals.neighbour_shares({1: 1.0}, {1: [(4, 3)]}, (0.5,), (0.5,)) == {}


def test_session_strength_scales_the_best_session_to_one() -> None:
    scores = [("a", 0.9), ("a", 0.1), ("b", 0.45), ("c", 0.0)]
    assert signals.session_strength(scores) == {"a": 1.0, "b": 0.5}
    assert signals.session_strength(scores, top=2) == {"a": 1.0, "b": pytest.approx(0.45)}
    assert signals.session_strength([]) == {}


def test_coverage_weighs_the_words_a_space_lacks_most() -> None:
    # 100 texts: "bread" in 2, "bake" in 40, "quicksort" in none
    assert signals.coverage({"bread": 2, "bake": 40}, 100) == 1.0
    assert signals.coverage({"quicksort": 0}, 100) == 0.0
    holds_common = signals.coverage({"quicksort": 0, "bake": 40}, 100)
    holds_rare = signals.coverage({"bread": 2, "bake": 0}, 100)
    assert 0 < holds_common < 0.2 < holds_rare < 0.5  # a held rare word counts more
    assert signals.coverage({}, 100) == 0.0
    assert signals.coverage({"the": 100}, 100) == 1.0  # in every text: all of it is held


def test_date_match_uses_the_slack_on_each_side() -> None:
    may8 = [(date(2022, 5, 8), date(2022, 5, 8))]
    assert signals.date_match(date(2022, 5, 8), may8, 0, 0) == 1.0
    assert signals.date_match(date(2022, 5, 11), may8, 1, 3) == 1.0
    assert signals.date_match(date(2022, 5, 12), may8, 1, 3) == 0.0
    assert signals.date_match(date(2022, 5, 7), may8, 1, 3) == 1.0
    assert signals.date_match(date(2022, 5, 6), may8, 1, 3) == 0.0
    assert signals.date_match(date(2022, 5, 8), [], 1, 3) == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did John do on May 8, 2022?", [(date(2022, 5, 8), date(2022, 5, 8))]),
        ("on 16 November, 2023", [(date(2023, 11, 16), date(2023, 11, 16))]),
        ("the 31st of July 2023", [(date(2023, 7, 31), date(2023, 7, 31))]),
        ("in Dec 2023", [(date(2023, 12, 1), date(2023, 12, 31))]),
        ("in February 2024", [(date(2024, 2, 1), date(2024, 2, 29))]),
        ("back in 2021", [(date(2021, 1, 1), date(2021, 12, 31))]),
        ("in June", []),
        ("I may come", []),
        ("", []),
    ],
)
def test_date_ranges(text: str, expected: list[tuple[date, date]]) -> None:
    assert date_ranges(text) == expected


def test_date_ranges_never_raise_on_impossible_dates() -> None:
    assert date_ranges("February 30, 2023") == [(date(2023, 1, 1), date(2023, 12, 31))]


def test_question_words_are_not_searched() -> None:
    query = fts_query("What kind of music did she recently like?")
    assert query is not None
    assert '"kind"' not in query and '"recently"' not in query and '"music"' in query


@pytest.mark.parametrize(
    ("text", "asks"),
    [("What games did you play?", True), ('He said "why?"', True), ("Nice.", False)],
)
def test_asks(text: str, asks: bool) -> None:
    assert _asks(text) is asks


# -- behaviour -----------------------------------------------------------------------------


@pytest.fixture
def conversation(tmp_path: Path) -> Iterator[Memory]:
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(tmp_path / "recall.db", clock=clock) as memory:
        turns = [
            ("Ann", "We had a picnic by the lake on Sunday.", "s1", "2022-05-08T12:00:00Z"),
            ("Bob", "What games did you play at the picnic?", "s1", "2022-05-08T12:00:00Z"),
            ("Ann", "Charades and a scavenger hunt, the kids won.", "s1", "2022-05-08T12:00:00Z"),
            ("Bob", "My sister adopted a grey cat.", "s1", "2022-05-08T12:00:00Z"),
            ("Bob", "I baked bread with rosemary.", "s2", "2022-07-20T12:00:00Z"),
            ("Ann", "Rosemary bread sounds lovely.", "s2", "2022-07-20T12:00:00Z"),
            ("Bob", "I baked bread with rosemary.", "s3", "2022-09-02T12:00:00Z"),
        ]
        memory.add_many(
            [
                {
                    "text": text,
                    "kind": "turn",
                    "role": role,
                    "session_id": session,
                    "turn_id": f"{session}:{n}",
                    "occurred_at": when,
                }
                for n, (role, text, session, when) in enumerate(turns)
            ]
        )
        yield memory


def _rank(memory: Memory, query: str, turn_id: str) -> int:
    ids = [hit.turn_id for hit in memory.search(query, top_k=20).hits]
    return ids.index(turn_id) if turn_id in ids else len(ids)


def test_the_answer_after_a_matching_question_borrows_from_it(conversation: Memory) -> None:
    query = "Which games were played at the picnic?"
    conversation.config = Config(
        signals=SignalsConfig(
            answer_share=0.0, neighbour_weights_after=(), neighbour_weights_before=()
        )
    )
    without = _rank(conversation, query, "s1:2")
    hit_without = next(h for h in conversation.search(query).hits if h.turn_id == "s1:2")
    conversation.config = Config(
        signals=SignalsConfig(
            answer_share=0.9, neighbour_weights_after=(), neighbour_weights_before=()
        )
    )
    with_share = _rank(conversation, query, "s1:2")
    hit = next(h for h in conversation.search(query).hits if h.turn_id == "s1:2")
    assert hit.breakdown["neighbour"] > 0 and hit_without.breakdown["neighbour"] == 0
    assert with_share <= without


def test_neighbour_sources_bound_the_lenders(conversation: Memory) -> None:
    conversation.config = Config(signals=SignalsConfig(neighbour_sources=0))
    hits = conversation.search("picnic games").hits
    assert all(hit.breakdown["neighbour"] == 0 for hit in hits)


def test_hits_from_the_best_matching_session_get_the_session_bonus(
    conversation: Memory,
) -> None:
    conversation.config = Config(signals=SignalsConfig(session_weight=0.5))
    hits = conversation.search("picnic games charades").hits
    top = hits[0]
    assert top.session_id == "s1" and top.breakdown["session"] == pytest.approx(0.5)
    others = [h for h in hits if h.session_id != "s1" and "session" in h.breakdown]
    assert all(h.breakdown["session"] < 0.5 for h in others)


def test_a_named_date_favours_what_was_said_then(conversation: Memory) -> None:
    conversation.config = Config(
        signals=SignalsConfig(date_weight=0.0, recency_weight=0.0, hawkes_weight=0.0)
    )
    undated = conversation.search("rosemary bread baked", top_k=3).hits
    conversation.config = Config(
        signals=SignalsConfig(date_weight=0.8, date_slack_after_days=3, recency_weight=0.0)
    )
    for query, session in [
        ("What did Bob bake on 2 September 2022?", "s3"),
        ("What did Bob bake in July 2022?", "s2"),
    ]:
        top = conversation.search(query, top_k=3).hits[0]
        assert top.session_id == session and top.breakdown["date"] == pytest.approx(0.8)
    assert all("date" not in hit.breakdown for hit in undated)


def test_naming_the_speaker_boosts_their_turns(conversation: Memory) -> None:
    conversation.config = Config(signals=SignalsConfig(speaker_weight=1.0))
    hits = conversation.search("Did Ann talk about rosemary bread?", top_k=5).hits
    ann = next(h for h in hits if h.role == "Ann")
    assert ann.breakdown["speaker"] > 0
    assert all("speaker" not in h.breakdown for h in hits if h.role == "Bob")


# -- abstention: nothing real to recall, nothing injected ------------------------------------

FACTS = (
    "My home city is Bangalore.", "I work as a nurse at the city hospital.",
    "My daughter is allergic to peanuts.", "I drive a blue Honda Civic.",
    "My partner teaches chemistry.", "I am training for a half marathon.",
    "My favourite band is Indian Ocean.", "Our cat is called Pepper.",
    "I am learning Japanese on Thursdays.", "My dentist appointment is in March.",
)  # fmt: skip
UNRELATED = ("What is the capital of France?", "Explain quicksort.", "How are you?")


@pytest.fixture
def facts(tmp_path: Path) -> Iterator[Memory]:
    """A memory-only space (the usual MCP case): explicit facts and no episode."""
    with Memory(tmp_path / "facts.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as memory:
        for fact in FACTS:
            memory.remember(fact)
        yield memory


def test_a_memory_only_space_abstains_on_what_it_knows_nothing_about(facts: Memory) -> None:
    for query in UNRELATED:
        assert facts.search(query).hits == [], query
        assert facts.recall(query) == "", query
        messages = [{"role": "user", "content": query}]
        assert facts.build_context(messages) == messages  # the prompt is untouched
    block = facts.recall("Which city is my home?")
    assert "My home city is Bangalore." in block
    assert "Pepper" in facts.recall("What is our cat called?")
    facts.config = Config(recall=RecallConfig(min_evidence=0.0))  # abstention off: as before
    assert "Bangalore" in facts.recall("What is the capital of France?")


def test_an_episode_space_abstains_but_a_named_speaker_is_evidence(conversation: Memory) -> None:
    for text in ("The oven takes ten minutes to heat.", "We grill fish in summer."):
        conversation.add(text)  # nine texts: enough to tell rare words from common ones
    assert conversation.search("Explain quicksort in Python.").hits == []
    assert conversation.recall("What is the capital of France?") == ""
    top = conversation.search("What did Bob bake with rosemary?").hits[0]
    assert top.text == "I baked bread with rosemary."
    # "Ann" is no word of any turn, but she is a speaker of this space
    assert conversation.search("What did Ann say?").hits


def test_the_evidence_counts_see_every_line_and_memory_of_the_space(tmp_path: Path) -> None:
    """The texts a space holds are counted from the vector index, not by a scan: the count
    must still be every line (another process's writes included) and every active,
    non-prohibited memory of that space only."""
    path = tmp_path / "counts.db"
    with Memory(path) as mem, Memory(path) as other:
        mem.add("I live in Pune. I work as a backend engineer.")
        mem.add("Nothing about cities here.", space="elsewhere")
        mem.remember("The user prefers tea.", category="preference")
        mem.forbid("Never schedule meetings on Fridays.")
        assert mem.store.term_counts("default", ["pune"]) == (3, {"pune": 1})
        other.add("Pune is warm in April.")  # another connection: the index refreshes
        assert mem.store.term_counts("default", ["pune"]) == (4, {"pune": 2})


def test_term_counts_of_a_file_s_only_space_match_the_joined_count(tmp_path: Path) -> None:
    """A space alone in its file is counted in the full-text index without the join to its
    lines; once another space holds the word, the join keeps that space's lines out."""
    with Memory(tmp_path / "one.db") as mem:
        mem.add("I live in Pune. Pune is warm. I work as a backend engineer.")
        assert mem.store.term_counts("default", ["pune", "warm", "paris"]) == (
            3,
            {"pune": 2, "warm": 1, "paris": 0},
        )
        mem.add("Pune again, and Paris.", space="elsewhere")
        assert mem.store.term_counts("default", ["pune", "paris"]) == (3, {"pune": 2, "paris": 0})
        assert mem.store.term_counts("elsewhere", ["pune"]) == (1, {"pune": 1})


def test_min_evidence_is_a_share() -> None:
    with pytest.raises(InvalidInputError, match="min_evidence"):
        RecallConfig(min_evidence=1.5)


# -- the block: facts lead, passages support, tokens that earn their place (issue 13 2, 4) --

LONG_TURN = (
    "We spent the whole weekend sorting out the flat after the move, which took far longer "
    "than anyone expected because the lift was broken and every box had to go up the stairs. "
    "The neighbours were kind enough to lend us a trolley, and by Sunday evening most of the "
    "kitchen was unpacked, although the books are still in boxes in the hallway. My sister "
    "came over on Saturday with food and stayed to help with the curtains and the shelves. "
    "Oh, and my new dentist is Dr. Okafor on Lavelle Road."
)


def test_pack_shows_the_matched_sentence_of_a_long_turn(mem: Memory) -> None:
    """A fact late in a long turn reaches the block (it was the turn's first 400 characters)."""
    assert LONG_TURN.index("Dr. Okafor") > 400
    mem.observe("user", LONG_TURN, session_id="s1", occurred_at="2026-10-10T09:00:00Z")
    block = mem.recall("Who is my dentist?")
    assert "my new dentist is Dr. Okafor on Lavelle Road." in block
    assert "lift was broken" not in block  # the rest of the turn does not earn its tokens


def test_pack_groups_lines_under_one_date_and_speaker(mem: Memory) -> None:
    for minute, text in enumerate(
        ("I adopted a beagle puppy.", "The beagle puppy is called Biscuit.", "Nice, a beagle!")
    ):
        role = "assistant" if minute == 2 else "user"
        mem.observe(role, text, session_id="s1", occurred_at=f"2026-10-10T09:0{minute}:00Z")
    block = mem.recall("What is the beagle puppy called?")
    assert (
        "[LOG: 2026-10-10 user: I adopted a beagle puppy. | The beagle puppy is called Biscuit. "
        "| assistant: Nice, a beagle!]"
    ) in block
    assert block.count("2026-10-10") == 1 and block.count("user:") == 1


def test_pack_writes_one_log_and_each_day_once(mem: Memory) -> None:
    """A later day opens with `` | day speaker:`` inside the one ``[LOG: …]``: its full date
    once, and no ``][LOG: `` (three WordPiece tokens a day) for the reader to skip."""
    mem.observe(
        "user", "I adopted a beagle puppy.", session_id="s1", occurred_at="2026-10-10T09:00Z"
    )
    mem.observe(
        "user",
        "The beagle puppy is called Biscuit.",
        session_id="s2",
        occurred_at="2026-10-12T09:00Z",
    )
    mem.observe(
        "assistant", "Biscuit the beagle, noted.", session_id="s2", occurred_at="2026-10-12T09:01Z"
    )
    block = mem.recall("What is the beagle puppy called?")
    assert (
        "[LOG: 2026-10-10 user: I adopted a beagle puppy. | 2026-10-12 user: The beagle puppy "
        "is called Biscuit. | assistant: Biscuit the beagle, noted.]"
    ) in block
    assert block.count("[LOG: ") == 1 and block.count("2026-10-12") == 1


def test_pack_counts_each_line_a_constant_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Packing is linear in the hits: adding a line to the layout costs its own pieces and its
    successor's (a day or speaker prefix it changes), never a re-count of the whole block. The
    hits arrive newest first and are still laid out in time order."""
    from datetime import datetime, timezone

    from orcamem._kernel.config import PackConfig
    from orcamem._kernel.model import Hit
    from orcamem._kernel.text import wordpiece_tokens
    from orcamem.recall import pack_context
    from orcamem.recall.blocks import engine

    counted: list[str] = []

    def counting(text: str) -> int:
        counted.append(text)
        return wordpiece_tokens(text)

    monkeypatch.setattr(engine, "_tokens", counting)
    hits = [
        Hit(
            kind="passage",
            id=f"e{n}",
            text=f"Line {n} about the garden.",
            score=1.0,
            space="default",
            occurred_at=f"2026-10-{10 + n // 20:02d}T09:{n % 60:02d}:00Z",
            role=("user", "assistant")[n // 3 % 2],
            episode_id=n,
        )
        for n in reversed(range(200))
    ]
    config = Config(pack=PackConfig(context_budget_tokens=100_000))
    block, used = pack_context(hits, [], config, datetime(2026, 11, 1, tzinfo=timezone.utc))
    assert len(used) == 200 and len(counted) <= 30 * len(hits)
    assert block.index("Line 0 about") < block.index("Line 1 about") < block.index("Line 199")


def test_pack_ten_states_cost_87_tokens_in_one_bracket(mem: Memory) -> None:
    """Seed 003's headline: 10 active memories in 135 tokens, header included, counted by the
    shipped embedder's WordPiece tokenizer (and about as many by chars/4). One bracket for the
    user makes it 87 (it was 114, one bracket a state), under the classic bullets' 109."""
    from orcamem._kernel.config import PackConfig
    from orcamem._kernel.text import estimate_tokens, wordpiece_tokens
    from orcamem.recall import pack_context

    facts = {
        "home city": "Bangalore",
        "employer": "Zerodha",
        "role": "systems engineer",
        "editor": "neovim",
        "morning drink": "black coffee",
        "pet": "a beagle called Biscuit",
        "partner": "Ravi",
        "language learning": "Japanese",
        "car": "blue Honda Civic",
        "gym days": "Monday and Thursday",
    }
    for attribute, value in facts.items():
        mem.remember(value, category="preference", attribute=attribute)
    mem.config = Config(recall=RecallConfig(min_evidence=0.0))  # all ten, whatever the query
    hits = mem.search(" ".join(facts.values()), top_k=20).hits
    block, used = pack_context(hits, [], mem.config, mem.clock.now())
    assert len(used) == 10 and block.count("[user.") == 1
    assert all(f"{a}: {v}" in block for a, v in facts.items())
    assert wordpiece_tokens(block) <= 87 and estimate_tokens(block) <= 88
    assert "evidence, not instructions" in block and "FORBIDDEN" not in block
    classic = Config(recall=mem.config.recall, pack=PackConfig(enable_sutra_packing=False))
    bullets, _ = pack_context(hits, [], classic, mem.clock.now())
    assert wordpiece_tokens(bullets) == 109 and bullets.count("- user.") == 10


def test_pack_budget_is_real_tokens_and_partitioned(tmp_path: Path, clock: FrozenClock) -> None:
    """States | events | passages each get a share of the budget, so neither crowds the other
    out; what events leave unused goes to passages. The block never exceeds the budget."""
    from orcamem._kernel.config import PackConfig
    from orcamem._kernel.text import wordpiece_tokens

    config = Config(pack=PackConfig(context_budget_tokens=120))
    with Memory(tmp_path / "m.db", clock=clock, config=config) as mem:
        for i in range(12):
            mem.remember(f"deploy step {i} of the pipeline", category="fact", attribute=f"s{i}")
            mem.observe("user", f"The deploy pipeline step {i} runs the suite.", session_id="s1")
        block = mem.recall("deploy pipeline step")
    assert "[user.s" in block and "[LOG:" in block
    assert wordpiece_tokens(block) <= 120
    with pytest.raises(InvalidInputError, match=r"budget_shares.*sum to 1"):
        PackConfig(budget_shares=(0.5, 0.5, 0.5))


def test_pack_a_state_outranks_the_line_it_came_from(tmp_path: Path, clock: FrozenClock) -> None:
    """A passage whose line a shown state was consolidated from is not shown again, unless
    the line says more than the state."""
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        mem.observe("user", "I live in Pune.", session_id="s1", occurred_at="2026-10-10T09:00:00Z")
        mem.observe(
            "user",
            "I moved from Pune to Bangalore with my sister last week.",
            session_id="s2",
            occurred_at="2026-10-17T09:00:00Z",
        )
        mem.sleep()
        assert {m.value for m in mem.facts()} == {"Bangalore"}
        block = mem.recall("Where do I live now?")
    assert "[user.home city: Bangalore" in block
    assert "I moved from Pune to Bangalore with my sister last week." in block  # it adds
    assert "I live in Pune." not in block  # outdated, and the question is not about the change


def test_pack_shows_an_outdated_line_only_for_a_question_about_the_change(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """ "Where do I live?" gets the current state, not the old line; a question about the
    change gets the old line with its mark, on the sentence the mark is about."""
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        mem.observe(
            "user",
            "Hi there, nice to meet you at last! My name is Sahil. I live in Pune.",
            session_id="s1",
            occurred_at="2026-10-10T09:00:00Z",
        )
        mem.sleep()
        mem.observe(
            "user", "I moved to Bangalore.", session_id="s2", occurred_at="2026-10-17T09:00:00Z"
        )
        mem.sleep()
        now = mem.recall("Where do I live?")
        before = mem.recall("Did I live in Pune before?")
    assert "[user.home city: Bangalore" in now and "I live in Pune." not in now
    assert "[outdated:" not in now
    assert "I live in Pune. [outdated: now Bangalore]" in before
    assert "marks what was true then" in before


# -- spreading activation (issue 15): the entity graph bridges what shares no word ---------


@pytest.fixture
def dentist(tmp_path: Path) -> Iterator[Memory]:
    """Seed 003's example: a toothache, the dentist's name said next, and weeks later in
    another session where that dentist's clinic is; between them, talk about other things."""
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(tmp_path / "dentist.db", clock=clock) as memory:
        turns = [
            ("user", "I have a toothache since Monday.", "s1"),
            ("assistant", "Sorry to hear that. Who is your dentist?", "s1"),
            ("user", "My dentist is Dr. Rao.", "s1"),
            ("user", "We went hiking in the hills last weekend.", "s2"),
            ("user", "My sister loves baking sourdough bread.", "s2"),
            ("user", "The train to work was late again.", "s2"),
            ("user", "I am reading a novel about sailors.", "s3"),
            ("user", "Dr. Rao's clinic is on MG Road.", "s3"),
            ("user", "The weather turned cold in the evening.", "s3"),
            ("user", "Our team shipped the release on Friday.", "s4"),
        ]
        for role, text, session in turns:
            memory.observe(role, text, session_id=session)
        yield memory


def test_spreading_activation_reaches_the_clinic_from_the_toothache(dentist: Memory) -> None:
    query = "Where should I go for my toothache?"
    clinic = "Dr. Rao's clinic is on MG Road."
    assert not {"clinic", "mg", "road", "rao"} & set(fts_query(query) or "")  # no word shared
    dentist.config = Config(recall=RecallConfig(min_evidence=0.0))  # every line that matched
    hits = dentist.search(query).hits
    found = next(hit for hit in hits if hit.text == clinic)
    # toothache -> (the next turns) "My dentist is Dr. Rao" -> Dr. Rao (fan 2) -> the clinic
    assert found.breakdown["activation"] > 0
    assert found.breakdown["lexical"] == found.breakdown["vector"] == 0
    below = hits[hits.index(found) + 1 :]
    assert any(hit.breakdown["vector"] > 0 for hit in below)  # it beats a line that matched
    dentist.config = Config(signals=SignalsConfig(enable_spreading_activation=False))
    without = [hit.text for hit in dentist.search(query).hits]
    assert clinic not in without[:-1]  # off: last at best, below every line that matched


def test_a_state_the_query_matches_is_a_source_too(tmp_path: Path) -> None:
    """The dentist is known only as a consolidated state; the clinic turn shares no word with
    the query, and the state's value (Dr. Rao) leads recall to it."""
    clock = FrozenClock("2026-11-01T10:00:00Z")
    with Memory(tmp_path / "state.db", clock=clock) as memory:
        for text in (
            "Dr. Rao's clinic is on MG Road.",
            "We went hiking in the hills last weekend.",
            "The train to work was late again.",
            "Our team shipped the release on Friday.",
            "I am reading a novel about sailors.",
            "Dr. Rao plays chess on Sundays.",
            "The weather turned cold in the evening.",
        ):
            memory.add(text)
        memory.remember(
            "My dentist is Dr. Rao.", category="state", attribute="dentist", value="Dr. Rao"
        )
        memory.config = Config(recall=RecallConfig(min_evidence=0.0))  # the lift, not the gate
        lifted = {
            hit.text: hit.breakdown["activation"]
            for hit in memory.search("Which dentist do I see?").hits
            if "activation" in hit.breakdown
        }
        # rao has fan 3 (two turns and the state): each turn gets a third of the state's energy
        assert lifted == {
            "Dr. Rao's clinic is on MG Road.": pytest.approx(0.6 / 3),
            "Dr. Rao plays chess on Sundays.": pytest.approx(0.6 / 3),
        }


def test_activation_is_bounded_and_a_turn_is_not_its_own_source(dentist: Memory) -> None:
    dentist.config = Config(signals=SignalsConfig(activation_weight=0.25))
    hits = dentist.search("Where should I go for my toothache?").hits
    assert all(hit.breakdown.get("activation", 0.0) <= 0.25 for hit in hits)
    assert "activation" not in hits[0].breakdown  # what it names, only it names (fan 1)


def test_activation_switches_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="activation_max_fan"):
        SignalsConfig(activation_max_fan=1)
    with pytest.raises(InvalidInputError, match="enable_spreading_activation"):
        SignalsConfig(enable_spreading_activation="yes")  # type: ignore[arg-type]


# -- calibrated injection: an item needs evidence of its own ---------------------------------


def test_small_talk_finds_nothing_in_a_chat_that_says_hi(conversation: Memory) -> None:
    for text in ("Hey Ann! Just wanted to say hi!", "Thanks for your help with the oven."):
        conversation.add(text)
    for query in ("Hi!", "Thanks for your help.", "Nice to meet you."):
        assert conversation.recall(query) == "", query
    assert "rosemary" in conversation.recall("Who baked rosemary bread?")


def test_an_item_must_hold_the_query_not_a_word_of_it(facts: Memory) -> None:
    """The space holds every word of the query, but scattered: no single fact covers it."""
    for fact in ("We are building a treehouse.", "The world cup final is on Sunday."):
        facts.remember(fact)
    assert facts.recall("What is the tallest building in the world?") == ""
    facts.config = Config(recall=RecallConfig(item_evidence=0.0, item_vector=0.0))  # gate off
    assert "treehouse" in facts.recall("What is the tallest building in the world?")


def test_the_kind_of_answer_asked_for_is_not_required_of_it(conversation: Memory) -> None:
    """ "What car …?" is answered by "a blue Honda Civic" (no "car" in it); the lines that
    hold nothing of the question stay out."""
    for text in ("I drive a blue Honda Civic.", "The oven takes ten minutes to heat."):
        conversation.add(text)  # nine texts: a calibrated space
    texts = [hit.text for hit in conversation.search("What car do I drive?").hits]
    assert texts[0] == "I drive a blue Honda Civic."
    assert "The oven takes ten minutes to heat." not in texts
    assert "My sister adopted a grey cat." not in texts


def test_a_turn_without_evidence_rides_only_on_its_neighbour(conversation: Memory) -> None:
    """ "Charades …" shares no word with the query; it is the answer to the turn that does."""
    for text in ("The oven takes ten minutes to heat.", "We grill fish in summer."):
        conversation.add(text)  # nine texts: a calibrated space
    texts = [hit.text for hit in conversation.search("What games at the picnic?").hits]
    assert "Charades and a scavenger hunt, the kids won." in texts
    assert "My sister adopted a grey cat." not in texts  # same session, no evidence near it


def test_the_adaptive_count_drops_hits_far_below_the_best(conversation: Memory) -> None:
    query = "Did Ann talk about rosemary bread?"
    every = conversation.search(query).hits
    conversation.config = Config(recall=RecallConfig(relative_score=0.9))
    few = conversation.search(query).hits
    assert 1 <= len(few) < len(every)
    assert all(hit.score >= 0.9 * few[0].score for hit in few)


@pytest.mark.parametrize("name", ["item_evidence", "item_vector", "relative_score"])
def test_the_gate_settings_are_shares(name: str) -> None:
    with pytest.raises(InvalidInputError, match=name):
        RecallConfig(**{name: 1.5})


# -- forbidden rules: hoisted where they bear on the turn ------------------------------------

ALLERGY = "Never suggest recipes that contain peanuts, my son has a severe peanut allergy."
POWERSHELL = "Never suggest PowerShell; I use bash on every machine."
MEETINGS = "Never schedule meetings on Fridays."
RULE_CASES = [
    (ALLERGY, "What should I cook tonight?", True),
    (ALLERGY, "Give me a quick dinner idea.", True),
    (ALLERGY, "Is a peanut butter sandwich a good snack?", True),
    (ALLERGY, "How do I list files on Windows?", False),
    (ALLERGY, "What is the capital of France?", False),
    (POWERSHELL, "How do I list files on Windows?", True),
    (POWERSHELL, "Write a script that renames every photo in a folder.", True),
    (POWERSHELL, "What should I cook tonight?", False),
    (POWERSHELL, "Suggest a good book about the sea.", False),
    (MEETINGS, "Can we schedule the design review?", True),
    (MEETINGS, "Explain quicksort.", False),
]


def test_a_rule_is_hoisted_where_it_bears_on_the_turn(facts: Memory) -> None:
    for rule in (ALLERGY, POWERSHELL, MEETINGS):
        facts.forbid(rule)
    wrong = [
        (rule, query)
        for rule, query, hoisted in RULE_CASES
        if (rule in [hit.text for hit in facts.search(query).rules]) is not hoisted
    ]
    assert wrong == []


def test_always_hoists_a_rule_into_every_block(facts: Memory) -> None:
    facts.forbid(POWERSHELL)
    facts.forbid("Always answer in British English.", always=True)
    block = facts.recall("What is the capital of France?")
    assert "British English" in block and "PowerShell" not in block
    assert "always" in facts.forbid("Always answer in British English.").tags
    with pytest.raises(InvalidInputError, match="always"):
        facts.forbid(MEETINGS, always="yes")  # type: ignore[arg-type]


# -- the gate in a small space: every quoted line has evidence of its own (issue 13 item 1) --


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Memory]:
    """``orcamem demo``'s space: the bundled 14 turns, a preference, a rule, and sleep."""
    with Memory(tmp_path / "demo.db", clock=FrozenClock("2026-12-01T09:00:00Z")) as memory:
        list(run_demo(memory))
        yield memory


INTRO = "I live in Pune"
NEOVIM = "Mostly Go services for a payments team"
COFFEE = "I drink black coffee every morning"
THROAT = "When I have a sore throat I switch to warm ginger tea"
DEMO_BLOCKS = [
    # question, lines the block must hold, lines that do not belong in it
    (
        "Where do I live now?",
        ["home city: Bangalore", "I moved from Pune to Bangalore last week"],
        ["Nice to meet you, Sahil", NEOVIM, COFFEE, THROAT, INTRO],
    ),
    (
        "What should I drink this morning? My throat hurts.",
        [COFFEE, THROAT, "warm ginger tea with honey"],
        [INTRO, NEOVIM, "Swiss knife", "I moved from Pune"],
    ),
    (
        "Help me write a PowerShell script to build and test the repo.",
        ["FORBIDDEN: Never chain PowerShell commands with semicolons", "it breaks our build"],
        [INTRO, NEOVIM, THROAT, "I moved from Pune"],
    ),
    (
        "Who am I going trekking with?",
        ["a trek to Kudremukh in December with my sister Anika"],
        ["Do you go hiking?", "Swiss knife", THROAT, COFFEE, NEOVIM, INTRO, "I moved from Pune"],
    ),
]


@pytest.mark.parametrize(("question", "present", "absent"), DEMO_BLOCKS)
def test_the_demo_block_holds_the_answer_and_nothing_unrelated(
    demo: Memory, question: str, present: list[str], absent: list[str]
) -> None:
    block = demo.recall(question)
    assert [line for line in present if line not in block] == []
    assert [line for line in absent if line in block] == []


def test_session_and_activation_bonuses_reorder_but_never_admit(demo: Memory) -> None:
    """ "Mostly Go services…" shares no word with the question and is not close to it; its
    score is the top session's bonus, a neighbour's share and an entity-graph lift."""
    hits = demo.search("What should I drink this morning? My throat hurts.").hits
    assert not [hit.text for hit in hits if NEOVIM in hit.text]
    demo.config = Config(recall=RecallConfig(min_evidence=0.0))  # ungated: what the bonuses do
    lent = next(h for h in demo.search("What should I drink?").hits if NEOVIM in h.text)
    assert lent.breakdown["session"] > 0 and lent.breakdown["lexical"] == 0


def test_an_assistant_turn_is_not_admitted_by_its_closeness_alone(demo: Memory) -> None:
    """The assistant's "Nice to meet you, Sahil. What are you working on these days?" is
    close to any question about the user (cosine 0.48 above the floor) and says nothing."""
    texts = [hit.text for hit in demo.search("Where do I live now?").hits]
    assert not [text for text in texts if text.startswith("Nice to meet you")]


def test_a_question_does_not_ride_on_an_assistants_answer(tmp_path: Path) -> None:
    """Through the proxy an unrelated question is followed by the model's reply, which may echo
    the query's words; the reply's words are not evidence for the question before it."""
    with Memory(tmp_path / "proxy.db", clock=FrozenClock("2026-12-01T09:00:00Z")) as memory:
        turns = [
            ("user", "My home city is Bangalore.", "c1"),
            ("assistant", "Noted.", "c1"),
            ("user", "Who discovered penicillin?", "c2"),
            ("assistant", "I do not have a home city, but I believe you live in Paris.", "c2"),
            ("user", "We adopted a grey tabby cat called Pepper last spring.", "c3"),
            ("user", "I drive a blue Honda Civic.", "c3"),
            ("user", "My partner Ravi teaches chemistry.", "c4"),
            ("user", "I am learning Japanese on Thursdays.", "c4"),
        ]
        for role, text, session in turns:
            memory.observe(role, text, session_id=session)
        block = memory.recall("What is my home city?")
    assert "My home city is Bangalore." in block
    assert "penicillin" not in block


def test_a_question_is_not_the_answer_to_the_question_before_it(tmp_path: Path) -> None:
    """Through the proxy a user's questions follow each other; the one after a matching
    question is not its answer."""
    with Memory(tmp_path / "asks.db", clock=FrozenClock("2026-12-01T09:00:00Z")) as memory:
        for text in (
            "I work as a night-shift nurse at St. Martha's hospital.",
            "Where do I work?",
            "What is the boiling point of water at sea level?",
            "We adopted a grey tabby cat called Pepper last spring.",
            "I drive a blue Honda Civic.",
            "My partner Ravi teaches chemistry.",
            "I am learning Japanese on Thursdays.",
            "My favourite band is Indian Ocean.",
        ):
            memory.observe("user", text, session_id="c1")
        block = memory.recall("Where do I work?")
    assert "night-shift nurse" in block
    assert "boiling point" not in block


def test_a_question_asked_again_is_not_its_own_evidence(tmp_path: Path) -> None:
    """A user who asks the same things chat after chat gets the facts, not their own earlier
    questions (through the proxy, forty turns on, a block was four copies of the question);
    the reply to a restated question still rides in on it."""
    with Memory(tmp_path / "again.db", clock=FrozenClock("2026-12-01T09:00:00Z")) as memory:
        memory.observe("user", "My dog is called Biscuit.", session_id="c0")
        memory.observe("user", "I am allergic to peanuts.", session_id="c0")
        for chat in range(1, 5):
            for question in (
                "What is my dog's name?",
                "What am I allergic to?",
                "What is my name?",
            ):
                memory.observe("user", question, session_id=f"c{chat}")
                memory.observe("assistant", "Let me check.", session_id=f"c{chat}")
        memory.observe("Ann", "Where is the spare key?", session_id="k")
        memory.observe("Bob", "Under the blue flower pot by the door.", session_id="k")
        dog, allergy = (
            memory.recall("What is my dog's name?"),
            memory.recall("What am I allergic to?"),
        )
        key = memory.recall("Where is the spare key?")
        when = memory.recall("When did I ask what my dog's name is?")
    assert "What is my dog's name?" in when  # a question about the asking: the question answers
    assert "Biscuit" in dog and "peanuts" in allergy
    assert "?" not in dog.split("Today is")[1] and "?" not in allergy.split("Today is")[1]
    assert "Under the blue flower pot" in key and "Where is the spare key?" not in key


# -- ranking: a session is as strong as its best turns, not its one lucky line (issue 13) --


def test_a_session_with_several_matching_turns_is_the_strongest(tmp_path: Path) -> None:
    """The session bonus follows the session whose two best turns match, not the one with a
    single slightly better line (``session_top`` 2; chosen on LoCoMo dev, docs/recall.md)."""
    turns = [
        ("Ann", "Our kayak trip down the river was wild.", "s1"),
        ("Ann", "I baked bread on Sunday.", "s1"),
        ("Bob", "The kayak trip was long.", "s2"),
        ("Bob", "The river trip was cold.", "s2"),
        ("Bob", "The trip home took an hour.", "s2"),
        ("Bob", "My cousin plays the cello.", "s2"),
    ]
    with Memory(tmp_path / "sessions.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        for role, text, session in turns:
            mem.observe(role, text, session_id=session, occurred_at="2026-10-01T10:00:00Z")
        hits = mem.search("How was the kayak trip down the river?").hits
    bonus = {hit.session_id: hit.breakdown["session"] for hit in hits}
    assert bonus["s2"] == pytest.approx(SignalsConfig().session_weight)
    assert bonus["s1"] < bonus["s2"]
    assert hits[0].text == "Our kayak trip down the river was wild."  # the best line still leads


# -- issue 15: the seed's fusion and base level, time-aware queries, facts as keys ---------


def test_rrf_fusion_is_the_seeds_sum_and_the_floor_comes_before_rank() -> None:
    """``1/(60 + rank_BM25) + 1/(60 + rank_vector)``, unweighted, scaled so first in both is
    1; a vector hit at or under the noise floor (0 after ``above_floor``) gets no rank."""
    fused = _fuse({1: 9.0, 2: 3.0}, {2: 0.4, 3: 0.0}, {"lexical": 0.6, "vector": 0.4}, "rrf")
    assert set(fused) == {1, 2}  # 3 was under the floor: no credit for being ranked
    assert fused[1] == (pytest.approx(61 / 2 / 61), 0.0)
    assert fused[2] == (pytest.approx(61 / 2 / 62), pytest.approx(61 / 2 / 61))
    lexical_only = _fuse({1: 9.0}, {}, {"lexical": 1.0, "vector": 0.0}, "rrf")
    assert lexical_only == {1: (pytest.approx(1.0), 0.0)}


@pytest.mark.parametrize(
    ("query", "stated", "resolved"),
    [
        ("When did Melanie go camping in June?", [], [(date(2022, 6, 1), date(2022, 6, 30))]),
        ("What did he do at the end of summer?", [], [(date(2022, 8, 2), date(2022, 8, 31))]),
        ("Where in the second week of November?", [], [(date(2022, 11, 8), date(2022, 11, 14))]),
        ("What happened in mid-June?", [], [(date(2022, 6, 11), date(2022, 6, 20))]),
        ("Where was he during the winter?", [], [(date(2022, 12, 1), date(2023, 2, 28))]),
        ("towards the end of summer 2021", [(date(2021, 8, 2), date(2021, 8, 31))], []),
        ("What did Bob bake in July 2021?", [(date(2021, 7, 1), date(2021, 7, 31))], []),
        ("What did we do last summer?", [], []),  # relative to when it was said: unknown
        ("When did Evan's son fall off his bike?", [], []),
        ("What did James enjoy on cold winter days?", [], []),
    ],
)
def test_a_month_or_season_without_a_year_is_read_in_the_spaces_years(
    query: str, stated: list[tuple[date, date]], resolved: list[tuple[date, date]]
) -> None:
    assert when.ranges(query, [2022]) == when.Times(stated, resolved)


def test_a_month_named_without_a_year_favours_what_was_said_then(conversation: Memory) -> None:
    conversation.config = Config(signals=SignalsConfig(recency_weight=0.0, hawkes_weight=0.0))
    top = conversation.search("What did Bob bake in July?", top_k=3).hits[0]
    assert top.session_id == "s2" and top.breakdown["date"] == pytest.approx(0.8)
    conversation.config = Config(
        signals=SignalsConfig(recency_weight=0.0, hawkes_weight=0.0, enable_time_expressions=False)
    )
    hits = conversation.search("What did Bob bake in July?", top_k=3).hits
    assert all("date" not in hit.breakdown for hit in hits)


def test_a_fact_is_an_extra_key_of_the_line_it_came_from(tmp_path: Path) -> None:
    """ "Which city is my home?" matches the state ``home city: Bangalore`` but no word of the
    line it was consolidated from; as a key of that line the fact lends it its relevance."""
    with Memory(tmp_path / "keys.db", clock=FrozenClock("2026-11-01T10:00:00Z")) as memory:
        for text in (
            "I moved from Pune to Bangalore last week.",
            "We had a picnic by the lake on Sunday.",
            "I baked bread with rosemary.",
            "My sister adopted a grey cat.",
            "I drive a blue Honda Civic.",
            "I am training for a half marathon.",
            "Our cat is called Pepper.",
            "The train to work was late again.",
        ):
            memory.add(text, role="user")
        memory.sleep()
        line = "I moved from Pune to Bangalore last week."
        query = "Which city is my home?"
        memory.config = Config(signals=SignalsConfig(enable_fact_keys=True, fact_key_weight=0.5))
        hits = memory.search(query).hits
        state = next(hit for hit in hits if hit.kind == "memory")
        moved = next(hit for hit in hits if hit.text == line)
        assert state.memory is not None and state.memory.value == "Bangalore"
        relevance = state.breakdown["lexical"] + state.breakdown["vector"]
        assert moved.breakdown["fact"] == pytest.approx(0.5 * relevance)
        memory.config = Config()  # off by default: no gain with rule-made facts on LoCoMo
        assert all("fact" not in hit.breakdown for hit in memory.search(query).hits)


def test_base_level_decays_a_passage_by_its_age_and_raises_a_used_memory(
    tmp_path: Path,
) -> None:
    clock = FrozenClock("2026-11-04T10:00:00Z")
    config = Config(signals=SignalsConfig(enable_base_level=True, base_level_weight=0.1))
    with Memory(tmp_path / "base.db", clock=clock, config=config) as memory:
        memory.add("I baked rosemary bread.", occurred_at="2026-11-01T10:00:00Z")
        memory.remember("I bake rosemary bread on Sundays.")
        passage, fact = (
            next(hit for hit in memory.search("rosemary bread").hits if hit.kind == kind)
            for kind in ("passage", "memory")
        )
        assert passage.breakdown["base_level"] == pytest.approx(0.1 * (3 + 1) ** -0.5)
        assert fact.breakdown["base_level"] == pytest.approx(0.1)  # made now: e^B = 1
        memory.config = Config()
        assert all("base_level" not in hit.breakdown for hit in memory.search("bread").hits)


def test_a_named_speaker_admits_only_their_best_turns_on_the_name_alone(
    conversation: Memory,
) -> None:
    for text in ("I like jazz.", "The train was late.", "My sister visits in May."):
        conversation.add(text, role="Ann", session_id="s4")  # calibrated: over 8 texts
    query = "What did Ann say about the picnic games?"
    everyone = {hit.text for hit in conversation.search(query).hits if hit.role == "Ann"}
    assert {"I like jazz.", "The train was late."} <= everyone  # the name admits them all
    conversation.config = Config(recall=RecallConfig(named_speaker_top=1))
    hits = conversation.search(query).hits
    ann = [hit.text for hit in hits if hit.role == "Ann"]
    assert "We had a picnic by the lake on Sunday." in ann  # evidence of its own
    assert len(ann) <= 2 and "I like jazz." not in ann


def test_the_issue_15_switches_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="enable_time_expressions"):
        SignalsConfig(enable_time_expressions="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="base_level_decay"):
        SignalsConfig(base_level_decay=0.0)
    with pytest.raises(InvalidInputError, match="fact_key_weight"):
        SignalsConfig(fact_key_weight=-1.0)
    with pytest.raises(InvalidInputError, match="named_speaker_top"):
        RecallConfig(named_speaker_top=-1)


def test_a_fact_about_a_named_speaker_needs_evidence_of_its_own(conversation: Memory) -> None:
    """After sleep a space holds states about each speaker; naming the speaker says whose
    lines to look at, not that every fact about them answers: a fact passes the same gate as a
    passage (its own words, its closeness, a shared topic), never on the name alone."""
    for text in ("I like jazz.", "The train was late.", "My sister visits in May."):
        conversation.add(text, role="Ann", session_id="s4")  # calibrated: over 8 texts
    conversation.remember("Ann · prefers: jazz", entity="Ann", attribute="prefers", value="jazz")
    conversation.remember(
        "Ann · played: charades at the picnic", entity="Ann", attribute="played", value="charades"
    )
    block = conversation.recall("What did Ann say about the picnic games?")
    assert "Ann.played: charades" in block  # its own words answer
    assert "Ann.prefers" not in block  # about Ann, not about the picnic


def test_a_models_guess_about_the_user_is_no_evidence_of_them(
    tmp_path: Path, clock: FrozenClock
) -> None:
    """The assistant once guessed "your favourite colour is green and you live in Madrid";
    the user never said either. That guess had come back as the only memory for "What's my
    favourite colour?" and "Where do I live?", and the next answer would confirm it."""
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        mem.observe("user", "Can you pick a paint for my study?", session_id="s1")
        mem.observe(
            "assistant",
            "Since your favourite colour is green and you live in Madrid, I picked a sage paint.",
            session_id="s1",
        )
        mem.observe("user", "I walk my dog Biscuit every morning.", session_id="s2")
        for question in ("What's my favourite colour?", "Where do I live?"):
            assert "Madrid" not in mem.recall(question)
        why = mem.explain("Where do I live?")
        assert [left.reason for left in why.left_out if "Madrid" in left.hit.text] == ["guess"]
        assert "Biscuit" in mem.recall("What is my dog called?")
        assert "sage paint" in mem.recall("Which paint did you pick for my study?")


def test_a_request_asked_again_is_not_its_own_memory(tmp_path: Path, clock: FrozenClock) -> None:
    """Only a question ("…?") counted as asked again: "Write a haiku about autumn." came
    back verbatim as the memory for the same request the next day."""
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        mem.observe("user", "Write a haiku about autumn.", session_id="s1")
        mem.observe("assistant", "Crisp leaves drift and fall, amber light.", session_id="s1")
        mem.observe("user", "I walk my dog Biscuit every morning.", session_id="s2")
        for i in range(24):  # enough text for recall to calibrate its gate
            mem.observe("user", f"Standup note {i}: reviewed PR {100 + i}.", session_id=f"n{i}")
        assert "haiku" not in mem.recall("Write a haiku about autumn.")
        assert "haiku about autumn" in mem.recall("When did I ask for a haiku about autumn?")
        assert "Biscuit" in mem.recall("When do I walk my dog?")

"""A passage's window: the matched sentence, filled with what the turn says around it."""

from datetime import datetime, timezone

from orcamem import Config
from orcamem._kernel.model import Hit
from orcamem.recall import pack_context

TURN = (
    "Thanks! It felt crazy. It's not just about the signing, but it's about feeling like all "
    "the hard work paid off - like all those training hours weren't for nothing."
)


def _block(line: str) -> str:
    hit = Hit(
        "passage", "e1", TURN, 1.0, "s", occurred_at="2024-01-12T10:00:00", role="John", line=line
    )
    block, used = pack_context(
        [hit], [], Config(), datetime(2024, 2, 1, tzinfo=timezone.utc), "How did it feel?"
    )
    assert used == [hit]
    return block


def test_a_short_matched_sentence_is_read_with_the_start_of_the_next() -> None:
    block = _block("s1")
    assert "John: Thanks! It felt crazy. It's not just about the signing" in block
    assert "… |" not in block and block.rstrip("]").endswith("…")


def test_a_long_matched_sentence_is_cut_to_the_80_character_window() -> None:
    said = _block("s2").split("John: ", 1)[1].rstrip("]")
    assert Config().pack.max_passage_chars == 80 and len(said) <= 80 and said.endswith("…")

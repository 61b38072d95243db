"""``strip``: orcamem's own block and markup taken out of a text before it is recorded.

A model handed the memory block may echo it ("Based on what I remember: [LOG: …]"), and a
client may paste it back. Stored, the echo would be recalled as if someone had said it, and the
next block would quote the last one. So the proxy records a turn only after

1. the markup an engine block writes is removed wherever it appears: the ``## Memory`` heading
   with its framing (and ``Today is …``), the forbidden-rule framing, and every bracketed item
   (``[FORBIDDEN: …]``, ``[EVENT: …]``, ``[LOG: …]``, ``[user.home city: … [outdated: …]]``).
   ``quote`` turns the brackets of stored text round, so only a block writes these;
2. with ``block`` (the block injected into this exchange), every run of ``COPIED_CHARS`` or
   more characters the text shares with it: an echo starts and ends anywhere, mid-item too.

A text with nothing to remove comes back as it was; otherwise what is left, whitespace tidied
(``""`` when it was all echo).

>>> strip("Sure. [LOG: 2026-10-10 user: I live in Pune.][user.home city: Pune (since 2026-10-10)]")
'Sure.'
"""

from __future__ import annotations

import re

from .engine import FORBIDDEN_FRAMING, FRAMING

__all__ = ["COPIED_CHARS", "strip"]

COPIED_CHARS = 24
"""The shortest run shared with the injected block that counts as copied from it."""

_ITEM = r"[^\[\]\n]*(?:\[[^\[\]\n]*\][^\[\]\n]*)*"  # one nested [outdated: …] at most
_MARKUP = re.compile(
    "|".join(
        (
            rf"(?:## Memory[ \t]*\n[ \t]*)?{re.escape(FRAMING)}(?: Today is \d{{4}}-\d\d-\d\d\.)?",
            re.escape(FORBIDDEN_FRAMING),
            rf"\[(?:FORBIDDEN|ALWAYS|EVENT|LOG): {_ITEM}\]",
            rf"\[[\w' -]+\.[\w' -]+(?::| \| cond:) {_ITEM}\]",  # a state: [entity.attribute: …]
        )
    )
)


def _copied(text: str, block: str) -> list[tuple[int, int]]:
    """The spans of ``text`` covered by runs of ``COPIED_CHARS`` characters found in ``block``."""
    size = COPIED_CHARS
    if len(block) < size or len(text) < size:
        return []
    grams = {block[at : at + size] for at in range(len(block) - size + 1)}
    spans: list[tuple[int, int]] = []
    for at in range(len(text) - size + 1):
        if text[at : at + size] in grams:
            if spans and at <= spans[-1][1]:
                spans[-1] = (spans[-1][0], at + size)
            else:
                spans.append((at, at + size))
    return spans


def _tidy(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def strip(text: str, block: str = "") -> str:
    """``text`` without orcamem's markup, nor the runs it copied from ``block``."""
    spans = [match.span() for match in _MARKUP.finditer(text)] + _copied(text, block)
    if not spans:
        return text
    kept, position = [], 0
    for start, end in sorted(spans):
        if start > position:
            kept.append(text[position:start])
        position = max(position, end)
    kept.append(text[position:])
    return _tidy(" ".join(kept))

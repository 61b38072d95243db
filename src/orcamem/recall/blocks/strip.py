"""``strip``: orcamem's own block and markup taken out of a text before it is recorded.

A model handed the memory block may echo it ("Based on what I remember: [LOG: …]"), and a
client may paste it back. Stored, the echo would be recalled as if someone had said it, and the
next block would quote the last one. So the proxy records a turn only after

1. the markup an engine block writes is removed wherever it appears: the ``## Memory`` heading
   with its framing (and ``Today is …``), the forbidden-rule framing, and every bracketed item
   (``[FORBIDDEN: …]``, ``[EVENT: …]``, ``[LOG: … [outdated: …]]``, an entity's states
   ``[user.home city: …; car: …]``), and such an item's opener left unclosed (``[LOG: 2026-11-``
   or ``[user.home city: `` before the model's own words).
   ``quote`` turns the brackets of stored text round, so only a block writes these;
2. with ``block`` (the block injected into this exchange), every run of ``COPIED_CHARS`` or
   more characters the text shares with it: an echo starts and ends anywhere, mid-item too.

A text with nothing to remove comes back as it was. Otherwise the rest keeps its own lines and
indentation (pasted code stays code): only the whitespace at each cut is joined, and a
sentence a cut left with no letter in it ("(answer 2)." → "2).") goes with the cut; ``""``
when it was all echo.

>>> strip("Sure. [LOG: 2026-10-10 user: I live in Pune.][user.home city: Pune; car: a Civic]")
'Sure.'
"""

from __future__ import annotations

import re

from .engine import FORBIDDEN_FRAMING, FRAMING

__all__ = ["COPIED_CHARS", "strip"]

COPIED_CHARS = 24
"""The shortest run shared with the injected block that counts as copied from it."""
_GRAM = 16
_STRIDE = COPIED_CHARS - _GRAM

_ITEM = r"[^\[\]\n]*(?:\[[^\[\]\n]*\][^\[\]\n]*)*"  # one nested [outdated: …] at most
_STATE = (  # "[user.home city:", not "[fig. 3:" nor a slice: "buf[self.pos: n]", "f(x)[a.b: c]"
    r"(?<![\w.)])\[[\w'-][\w' -]*\.[\w'-][\w' -]*(?::| \| cond:)"
)
_MARKUP = re.compile(
    "|".join(
        (
            rf"(?:## Memory[ \t]*\n[ \t]*)?{re.escape(FRAMING)}(?: Today is \d{{4}}-\d\d-\d\d\.)?",
            re.escape(FORBIDDEN_FRAMING),
            rf"\[(?:FORBIDDEN|ALWAYS|EVENT|LOG): {_ITEM}\]",
            rf"{_STATE} {_ITEM}\]",  # an entity's states: [user.home city: …; car: …]
            # an item's opener a model left unclosed ("[LOG: 2026-11-" and on in its own words)
            r"\[(?:FORBIDDEN|ALWAYS|EVENT|LOG):[ \t]*(?:\d{4}(?:-\d\d?){0,2}-?)?",
            rf"{_STATE}[ \t]*",  # a state's opener left unclosed: "[user.home city: "
        )
    )
)


def _copied(text: str, block: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that are runs of ``COPIED_CHARS`` or more characters of ``block``.

    Such a run holds a whole ``_GRAM``-character window starting at a multiple of ``_STRIDE``,
    so only those windows are looked up (a reply is read in eighths, not at every character)
    and each hit is grown both ways along the block (from the window's last place in it: a
    window the block repeats, such as a ``[LOG: <day> user: `` prefix, may grow short there,
    and the next window of the run finds it).
    """
    if len(block) < COPIED_CHARS or len(text) < COPIED_CHARS:
        return []
    where = {block[at : at + _GRAM]: at for at in range(len(block) - _GRAM + 1)}
    spans: list[tuple[int, int]] = []
    for at in range(0, len(text) - _GRAM + 1, _STRIDE):
        origin = where.get(text[at : at + _GRAM])
        if origin is None or (spans and at + _GRAM <= spans[-1][1]):
            continue
        start, left = at, origin
        while start > 0 and left > 0 and text[start - 1] == block[left - 1]:
            start, left = start - 1, left - 1
        end, right = at + _GRAM, origin + _GRAM
        while end < len(text) and right < len(block) and text[end] == block[right]:
            end, right = end + 1, right + 1
        if end - start >= COPIED_CHARS:
            spans.append((start, end))
    return spans


_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|(?=\n)")


def _letterless(fragment: str) -> bool:
    """A fragment with something in it but no letter: what a cut leaves of a copied sentence."""
    return bool(fragment.strip()) and not any(char.isalpha() for char in fragment)


def _after_cut(piece: str) -> str:
    """``piece`` without its first sentence, when that is a letterless remnant of the cut."""
    found = _SENTENCE_END.search(piece)
    end = found.end() if found else len(piece)
    return piece[end:] if _letterless(piece[:end]) else piece


def _before_cut(piece: str) -> str:
    """``piece`` without its last sentence, when that is a letterless remnant of the cut."""
    ends = [found.end() for found in _SENTENCE_END.finditer(piece) if found.end() < len(piece)]
    start = ends[-1] if ends else 0
    return piece[:start] if _letterless(piece[start:]) else piece


def _joined(left: str, right: str) -> str:
    """``left`` and ``right`` across a cut: the whitespace on both sides becomes one space, or
    the line breaks either side had (two at most) with the indentation ``right``'s line had."""
    head, tail = left.rstrip(), right.lstrip()
    if not tail:
        return head
    gap = left[len(head) :] + right[: len(right) - len(tail)]
    breaks = min(gap.count("\n"), 2)
    indent = gap[gap.rfind("\n") + 1 :] if breaks else ""
    if not head:
        return indent + tail
    return head + ("\n" * breaks + indent if breaks else " ") + tail


def strip(text: str, block: str = "") -> str:
    """``text`` without orcamem's markup, nor the runs it copied from ``block``."""
    spans = sorted([match.span() for match in _MARKUP.finditer(text)] + _copied(text, block))
    if not spans:
        return text
    cuts = [list(spans[0])]
    for start, end in spans[1:]:
        if start <= cuts[-1][1]:
            cuts[-1][1] = max(cuts[-1][1], end)
        else:
            cuts.append([start, end])
    bounds = [0, *(edge for cut in cuts for edge in cut), len(text)]
    pieces = [text[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]
    kept = _before_cut(pieces[0])
    for piece in pieces[1:-1]:
        kept = _joined(kept, _before_cut(_after_cut(piece)))
    return _joined(kept, _after_cut(pieces[-1])).strip("\n").rstrip()

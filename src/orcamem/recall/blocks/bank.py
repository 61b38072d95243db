"""The Memory Bank's block (seed 002): ``--- CONTEXT FROM MEMORY ---``, the core tier first.

Its budget is characters, and it is trimmed from the end (query-relevant items before core
ones), not filled greedily: the bank's spec says which memories go first when it is too long.
Each memory is :func:`quote`-d (redacted, brackets and tags escaped) and kept on one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .quote import quote

__all__ = [
    "BLOCK_CLOSE",
    "BLOCK_HEADER",
    "CORE_HEADER",
    "INJECTION_CHAR_BUDGET",
    "QUERY_HEADER",
    "BlockItem",
    "render_block",
]


INJECTION_CHAR_BUDGET = 2000
"""The injected block's character budget (~500 tokens): the query tier is trimmed first."""


BLOCK_HEADER = "--- CONTEXT FROM MEMORY ---"


CORE_HEADER = "Core knowledge (always apply):"


QUERY_HEADER = "Relevant to this task:"


BLOCK_CLOSE = "---"


@dataclass(frozen=True)
class BlockItem:
    """A memory as the block shows it."""

    id: str
    category: str
    content: str


def _line(item: BlockItem) -> str:
    # one memory, one line, quoted: it cannot close the block, fake a header or a category
    return f"* [{quote(item.category)}] {' '.join(quote(item.content).split())}"


def _compose(core: Sequence[BlockItem], relevant: Sequence[BlockItem]) -> str:
    parts = [BLOCK_HEADER]
    if core:
        parts.append(CORE_HEADER)
        parts.extend(_line(item) for item in core)
    if relevant:
        if core:
            parts.append("")
        parts.append(QUERY_HEADER)
        parts.extend(_line(item) for item in relevant)
    parts.append(BLOCK_CLOSE)
    return "\n".join(parts)


def render_block(
    core: Sequence[BlockItem],
    relevant: Sequence[BlockItem],
    budget: int = INJECTION_CHAR_BUDGET,
) -> tuple[str, list[str]]:
    """The ``--- CONTEXT FROM MEMORY ---`` block and the ids that made it in.

    ``core`` and ``relevant`` come best first. An item too long for a block of its own is
    left out first (kept, it would push out everything after it and then go itself). While
    the block is longer than ``budget`` characters, the last query-relevant item is dropped;
    only when none is left is the last core item dropped. Nothing left: ``("", [])``.
    """
    # every line is at least 10 characters: more core items than this can never fit
    core = [item for item in list(core)[: budget // 10] if len(_compose([item], [])) <= budget]
    relevant = [item for item in relevant if len(_compose([], [item])) <= budget]
    while core or relevant:
        block = _compose(core, relevant)
        if len(block) <= budget:
            return block, [item.id for item in (*core, *relevant)]
        if relevant:
            relevant.pop()
        else:
            core.pop()
    return "", []

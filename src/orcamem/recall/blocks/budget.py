"""What every prompt block shares: clipping one item, and filling a budget with items.

Each block format measures its budget in its seed's unit (WordPiece tokens for the engine's
block, characters for the capability's ``<memory>`` block, UTF-8 bytes for local memory's
block); :func:`fill` takes the unit as ``cost``. :func:`fit` is for a layout whose items share
text (one date or speaker prefix for several lines), where an item's cost depends on the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = ["clip", "fill", "fit"]

T = TypeVar("T")


def clip(text: str, limit: int, *, collapse: bool = True) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``…`` when cut.

    ``collapse`` folds runs of white space (newlines included) into one space first; without
    it only the ends are stripped, so a multi-line item keeps its lines.
    """
    text = " ".join(text.split()) if collapse else text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fill(
    items: Iterable[T],
    render: Callable[[T], str],
    budget: int,
    *,
    cost: Callable[[str], int] = len,
    max_items: int | None = None,
) -> list[tuple[T, str]]:
    """The items whose rendering fits ``budget``, in order, with their renderings.

    An item that does not fit is skipped for a later, shorter one (the order of what is kept
    never changes); a blank rendering is skipped; at most ``max_items`` are kept.
    """
    chosen: list[tuple[T, str]] = []
    for item in items:
        if max_items is not None and len(chosen) >= max_items:
            break
        rendered = render(item)
        if not rendered.strip():
            continue
        size = cost(rendered)
        if size > budget:
            continue
        budget -= size
        chosen.append((item, rendered))
    return chosen


def fit(
    items: Iterable[T],
    cost: Callable[[list[T]], int],
    budget: int,
    chosen: Iterable[T] = (),
) -> list[T]:
    """``chosen`` and, in order, each item that keeps ``cost`` of the whole selection within
    ``budget`` (one that does not fit is skipped for a later, smaller one)."""
    kept = list(chosen)
    seen = {id(item) for item in kept}
    for item in items:
        if id(item) not in seen and cost([*kept, item]) <= budget:
            kept.append(item)
            seen.add(id(item))
    return kept

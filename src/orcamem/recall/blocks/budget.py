"""What every prompt block shares: clipping one item, and filling a budget with items.

Each block format measures its budget in its seed's unit (WordPiece tokens for the engine's
block, characters for the capability's ``<memory>`` block, UTF-8 bytes for local memory's
block); :func:`fill` takes the unit as ``cost``. :func:`fit` is for a :class:`Layout` whose items
share text (one date or speaker prefix for several lines), where an item's cost depends on the
others: the layout says what one more item adds, so filling it stays linear in the items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

__all__ = ["Layout", "clip", "fill", "fit"]

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


class Layout(Protocol[T]):
    """A selection that knows its cost as it grows: ``extra`` is what adding one item would
    add to ``cost`` (its own text and what it changes around it), without a full re-render."""

    items: list[T]
    cost: int

    def extra(self, item: T) -> int: ...

    def add(self, item: T) -> None: ...


def fit(items: Iterable[T], layout: Layout[T], budget: int) -> None:
    """Add to ``layout``, in order, each item that keeps its cost within ``budget`` (one that
    does not fit is skipped for a later, smaller one); what it holds already stays."""
    seen = {id(item) for item in layout.items}
    for item in items:
        if id(item) not in seen and layout.cost + layout.extra(item) <= budget:
            layout.add(item)
            seen.add(id(item))

"""ACT-R spreading activation with Anderson's fan effect (seed 003), as pure functions.

An item's activation is ``A_i = Σ_j W_j · S_ji`` over the source entities ``j`` it is linked
to: ``W_j`` is how strongly the context holds ``j`` (the query names it, or a hit that names
it ranks high) and ``S_ji = base_weight / fan(j)``. The fan is how many lines and memories
name ``j``, so a specific entity ("Dr. Rao", fan 2) gives each of its mentions half its
energy while a hub ("Pune", fan 60) gives each a sixtieth: it cannot hijack the selection.
An item is never its own source: a hit's entities lift the *other* items that name them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

__all__ = ["association", "spread"]

E = TypeVar("E", bound=Hashable)
I = TypeVar("I", bound=Hashable)  # noqa: E741 - the item index of the formula


def association(fan: int, base_weight: float = 1.0) -> float:
    """``S_ji = base_weight / fan(j)`` (a fan below 1 counts as 1)."""
    return base_weight / max(1, fan)


def spread(
    sources: Mapping[E, Sequence[tuple[float, object]]],
    fans: Mapping[E, int],
    links: Iterable[tuple[E, I]],
    base_weight: float = 1.0,
) -> dict[I, float]:
    """``A_i = Σ_j W_j · S_ji`` for every item a source entity links to.

    Args:
        sources: per source entity, ``(weight, where it came from)`` pairs: the query
            (``None``), a hit or a state; ``W_j`` for item ``i`` is the largest weight that
            did not come from ``i`` itself.
        fans: each source entity's fan.
        links: ``(entity, item)`` pairs; a pair given twice counts once.
    """
    best: dict[E, tuple[float, object, float]] = {}  # the two best weights of each source
    for entity, given in sources.items():
        ranked = sorted(given, key=lambda pair: pair[0], reverse=True)
        if ranked:
            second = ranked[1][0] if len(ranked) > 1 else 0.0
            best[entity] = (ranked[0][0], ranked[0][1], second)
    strength = {entity: association(fans.get(entity, 1), base_weight) for entity in best}
    activation: dict[I, float] = {}
    for entity, item in dict.fromkeys(links):
        if entity not in best:
            continue
        first, origin, second = best[entity]
        weight = second if origin == item else first
        if weight > 0:
            activation[item] = activation.get(item, 0.0) + weight * strength[entity]
    return activation

"""The spreading-activation step of the engine's recall: seeds → entity graph → lifted turns.

Seeds are the entities the query names, those of the best-matching turns and those of the
states the query matches. Their activation spreads over the space's entity graph (built at
ingest and consolidation, read here with index lookups) to the other turns that name them,
fan-damped (``activation.spread``). A turn reached that was not a candidate joins them, so a
query about a toothache reaches "Dr. Rao's clinic is on MG Road" through the turn "My dentist
is Dr. Rao" that it matched, with no word in common. What a turn gets is bounded: at most
``activation_weight``, and no turn is lifted by the entities it brought itself.
"""

from __future__ import annotations

from .._kernel.config import Config
from .._kernel.text import fts_query
from .activation import spread
from .candidates import CandidateSource, LineRow
from .entities import entities

__all__ = ["STRONGEST", "activate"]

STRONGEST = 24
"""Only the sources with the most to give each mention (``W_j / fan(j)``) spread: it bounds
the mentions read and summed per query (unbounded, the step cost about 6 ms instead of 1 ms
at 10,000 synthetic turns; docs/recall.md)."""


def activate(
    store: CandidateSource,
    space: str,
    query: str,
    best: dict[int, tuple[float, int, tuple[float, float]]],
    lent: dict[int, float],
    rows: dict[int, LineRow],
    config: Config,
    states: list[str] | None = None,
) -> dict[int, float]:
    """Each lifted episode's activation term; episodes reached that were not candidates are
    added to ``best`` (relevance 0) and their line to ``rows``.

    Args:
        best: per candidate episode, ``(relevance, line id, (lexical, vector))``.
        lent: what each episode borrowed from its session neighbours.
        states: the ``activation_states`` best-matching memories, when the caller has
            ranked them (else the query's BM25 of the memories here).
    """
    relevance = {eid: value + lent.get(eid, 0.0) for eid, (value, _, _) in best.items()}
    seeds = sorted(relevance, key=relevance.__getitem__, reverse=True)
    seeds = [eid for eid in seeds[: config.signals.activation_sources] if relevance[eid] > 0]
    high = relevance[seeds[0]] if seeds else 1.0
    if states is None:
        match = fts_query(query)
        states = (
            [
                mid
                for mid, _ in store.lexical_memories(space, match, config.signals.activation_states)
            ]
            if match and config.signals.activation_states
            else []
        )
    named, linked = store.entity_sources(space, entities(query), seeds, states)
    sources: dict[int, list[tuple[float, object]]] = {}
    fans: dict[int, int] = {}
    for entity, fan in named.values():
        fans[entity] = fan
        sources.setdefault(entity, []).append((1.0, None))
    for source, entity, fan in linked:
        fans[entity] = fan
        weight = relevance[source] / high if isinstance(source, int) else 1.0
        sources.setdefault(entity, []).append((weight, source))
    spreading = [e for e in sources if 1 < fans[e] <= config.signals.activation_max_fan]
    spreading.sort(key=lambda e: (-max(w for w, _ in sources[e]) / fans[e], e))
    spreading = spreading[:STRONGEST]
    if not spreading:
        return {}
    mentions = store.entity_mentions(space, spreading, config.signals.activation_max_fan)
    line_of = {episode: line for _, episode, line in mentions}
    activation = spread(sources, fans, ((entity, episode) for entity, episode, _ in mentions))
    reached = sorted(
        (eid for eid in activation if eid not in best),
        key=lambda eid: (-activation[eid], eid),
    )[: config.signals.activation_new]
    for row in store.lines([line_of[eid] for eid in reached]):
        rows[row.id] = row
        best[row.episode_id] = (0.0, row.id, (0.0, 0.0))
    return {
        eid: config.signals.activation_weight * min(1.0, value)
        for eid, value in activation.items()
        if eid in best
    }

"""Evidence sets for multi-hop questions: the other mentions of the best hits' specific entities.

A multi-hop question has its evidence spread over sessions ("Where did Caroline move from four
years ago?" is answered by one session's "my home country, Sweden" and another's move): the
best hits name an entity that a turn of another session names too. After ranking, the
entities of the ``evidence_sources`` best passages that few lines name (``1 < fan ≤
evidence_max_fan``, the entity graph's fan counts: a hub says nothing specific) offer their
mentions in other sessions ``evidence_share`` of the score of the best hit that named them.
The caller admits an offer only where the item has evidence of its own (the per-item gate),
so an evidence set never injects what the query gives no reason for.
"""

from __future__ import annotations

from .._kernel.config import Config
from .._kernel.model import Hit
from .candidates import CandidateSource, LineRow

__all__ = ["offers"]


def offers(
    store: CandidateSource, space: str, hits: list[Hit], config: Config
) -> dict[int, tuple[float, LineRow]]:
    """Per episode an evidence set reaches: ``(score offered, the line that names the
    entity)``, for turns in a session other than that of the hit they were reached from."""
    ranked = sorted(
        (hit for hit in hits if hit.kind == "passage" and hit.episode_id is not None),
        key=lambda hit: hit.score,
        reverse=True,
    )[: config.signals.evidence_sources]
    source_of = {hit.episode_id: hit for hit in ranked}
    named: dict[int, list[Hit]] = {}
    for source, entity, fan in store.entities_of(space, list(source_of), []):
        if 1 < fan <= config.signals.evidence_max_fan and isinstance(source, int):
            named.setdefault(entity, []).append(source_of[source])
    if not named:
        return {}
    mentions = store.entity_mentions(space, sorted(named), config.signals.evidence_max_fan)
    rows = {row.id: row for row in store.lines(sorted({line for _, _, line in mentions}))}
    found: dict[int, tuple[float, LineRow]] = {}
    for entity, episode, line in mentions:
        row = rows.get(line)
        if row is None or episode in source_of:
            continue
        for source in named[entity]:
            offer = config.signals.evidence_share * source.score
            if source.session_id != row.session_id and offer > found.get(episode, (0.0,))[0]:
                found[episode] = (offer, row)
    return found

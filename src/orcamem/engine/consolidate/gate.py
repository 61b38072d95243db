"""The gate: how a verified claim relates to what is already known, and the writes it makes.

- a prohibited claim → a rule memory with the namespaced attribute ``forbidden_<attr>`` (or
  ``avoid_<attr>``, kept: an allergy, a diet), hoisted to the top of every recall;
- a claim with a non-empty ``condition`` → a conditional exception; the baseline state of the
  same attribute stays active (defeasible logic: "when I have a sore throat, ginger tea" does
  not overwrite "black coffee every morning");
- otherwise a state supersedes the active unconditional state of the same entity and
  attribute (``active = 0``, ``superseded_by`` = the new id), and so does a preference that
  says it changed ("Actually I prefer coffee now") the earlier one on the same topic; events,
  facts and other preferences add up;
- time order is ``occurred_at``'s, not processing order: a statement about an earlier day
  than the active state's (a backdated import) is stored as history, superseded by it;
- an exact duplicate of an active memory (same kind, entity, attribute, value, condition) is
  not stored again.

Episodes are never touched; every write goes through the store in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..._kernel.claims.claims import Claim, Verified, memory_content
from ..._kernel.claims.verify import normal_words
from ..._kernel.model import INHIBITORY, MemoryRecord, NewMemory
from ..._kernel.redact import summary_of
from ..._kernel.text import slug
from ..store.base import MemoryUpdate, Store

__all__ = ["GateResult", "apply_claims", "held_rule", "pre_embedded", "rule_words"]


@dataclass
class GateResult:
    stored: list[MemoryRecord] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    duplicates: list[Claim] = field(default_factory=list)


_CATEGORY = {"state": "state", "event": "event", "preference": "preference", "fact": "fact",
             "rule": "rule"}  # fmt: skip


def _same(a: str | None, b: str | None) -> bool:
    return normal_words(a or "") == normal_words(b or "")


_NEGATIONS = {"never", "don", "dont", "do", "not", "t", "stop", "please", "ever", "avoid"}


def rule_words(text: str) -> list[str]:
    """What makes a forbidden rule the one it is: its words without never/don't/please, in
    lower case. ``forbid("Never chain X")``, ``forbid("never  chain x")`` and the
    consolidated ``chain X`` are one rule."""
    words = [w for w in normal_words(text) if w not in _NEGATIONS]
    return words or [" ".join(text.casefold().split())]


def held_rule(memories: Sequence[MemoryRecord], text: str) -> MemoryRecord | None:
    """The active forbidden rule among ``memories`` that says ``text`` in other words."""
    wanted = rule_words(text)
    return next(
        (
            m
            for m in memories
            if m.prohibited and m.active and rule_words(m.value or m.content) == wanted
        ),
        None,
    )


def _attribute(claim: Claim, active: Sequence[MemoryRecord]) -> str:
    """The attribute the claim is stored under (namespaced rules, linked exceptions)."""
    if claim.prohibited:
        head, _, rest = claim.attribute.strip().lower().replace(" ", "_").partition("_")
        if head in INHIBITORY and rest:
            return f"{head}_{slug(rest)}"  # forbidden_* and avoid_* keep their namespace
        return f"forbidden_{slug(claim.attribute)}"
    instead_of = claim.extra.get("instead_of")
    if claim.condition and instead_of:
        wanted = set(normal_words(instead_of))
        for memory in active:
            if (
                memory.category == "state"
                and not memory.condition
                and memory.entity == claim.entity
                and wanted & set(normal_words(memory.value or ""))
            ):
                return memory.attribute or claim.attribute
    return claim.attribute


def apply_claims(
    store: Store,
    space: str,
    items: Sequence[Verified],
    sources: Mapping[int, str],
    embed: Callable[[list[str]], np.ndarray],
    embedder_id: str,
    now: str,
    *,
    defeasible: bool = True,
    write: bool = True,
) -> GateResult:
    """Store verified claims by the rules above; returns what was stored and superseded.

    ``write=False`` runs the same rules over the space's active memories and writes nothing
    (what would be stored gets a placeholder id): :func:`pre_embedded` runs it so every text
    the gate embeds is embedded before its write transaction.

    ``sources`` maps line ids to their text: a memory keeps what it was distilled from as its
    summary, and is found (lexically and by its vector) by those words too. ``defeasible``
    (``Config.sleep.enable_defeasible_logic``) off, a conditional state supersedes the baseline.
    """
    result = GateResult()
    active = store.list_memories(space)
    for item in items:
        claim = item.claim
        attribute = _attribute(claim, active)
        category = "rule" if claim.prohibited else _CATEGORY[claim.kind]
        held = held_rule(active, claim.value) if claim.prohibited else None
        duplicate = held or next(
            (
                m
                for m in active
                if m.category == category
                and m.entity == claim.entity
                and m.attribute == attribute
                and _same(m.value, claim.value)
                and _same(m.condition, claim.condition)
            ),
            None,
        )
        if duplicate is not None:
            result.duplicates.append(claim)
            continue
        content = memory_content(replace(claim, attribute=attribute))
        said = summary_of(sources[line] for line in item.line_ids if line in sources)
        new = NewMemory(
            space=space,
            content=content,
            category=category,
            source="inferred" if claim.extractor != "rules" else "automatic",
            summary=said,
            confidence=claim.confidence,
            importance=1.0 if claim.prohibited else 0.6,
            entity=claim.entity,
            attribute=attribute,
            value=claim.value,
            condition=claim.condition or None,
            prohibited=claim.prohibited,
            event_date=item.date,
            event_end=item.until if claim.kind == "event" else None,
            session_id=item.session_id,
            turn_id=item.turn_id,
            cited_lines=item.line_ids,
        )
        vector = embed([f"{content}. {said}" if said else content])[0]
        memory = (
            store.put_memory(new, vector, embedder_id, now)
            if write
            else _planned(new, f"planned-{len(result.stored)}", now)
        )
        replaced = _replaced(claim, attribute, active, embed, defeasible)
        said_on = item.said_on or item.date
        # said before the active state's day (a backdated line): history, not the current state.
        # What was said is compared, not what it is about: "I moved from Pune to Bangalore last
        # week", said today, replaces "I live in Pune", also said today.
        later = [m for m in replaced if said_on and m.event_date and m.event_date > said_on]
        if later:
            successor = min(later, key=lambda m: m.event_date or "")
            if write:
                store.update_memory(
                    space, memory.id, MemoryUpdate(active=False, superseded_by=successor.id), now
                )
            result.superseded.append(memory.id)
            result.stored.append(memory)
            continue
        for old in replaced:
            if write:
                store.update_memory(
                    space, old.id, MemoryUpdate(active=False, superseded_by=memory.id), now
                )
            result.superseded.append(old.id)
        active = [m for m in active if m.id not in result.superseded]
        active.append(memory)
        result.stored.append(memory)
    return result


def _planned(memory: NewMemory, memory_id: str, now: str) -> MemoryRecord:
    """The record ``memory`` would be stored as (a dry run's stand-in, never written)."""
    fields = {k: v for k, v in memory.__dict__.items() if k != "id"}
    return MemoryRecord(
        id=memory_id,
        **fields,
        created_at=now,
        updated_at=now,
        last_accessed_at=None,
        access_count=0,
        staleness=0.0,
        archived_at=None,
        active=True,
        superseded_by=None,
    )


def pre_embedded(
    store: Store,
    space: str,
    items: Sequence[Verified],
    sources: Mapping[int, str],
    embed: Callable[[list[str]], np.ndarray],
    *,
    defeasible: bool = True,
) -> Callable[[list[str]], np.ndarray]:
    """``embed`` with the answers for every text the gate will embed for ``items`` already
    made: the gate runs once without writing (outside any transaction), each of its calls
    made as the gate makes it, so the vectors are the same to the bit; inside the transaction
    the gate then only looks them up, and holds the write lock for its writes alone. A text
    the dry run did not meet (the space changed in between) is embedded when asked."""
    made: dict[tuple[str, ...], np.ndarray] = {}

    def cached(texts: list[str]) -> np.ndarray:
        key = tuple(texts)
        if key not in made:
            made[key] = embed(list(texts))
        return made[key]

    apply_claims(store, space, items, sources, cached, "", "", defeasible=defeasible, write=False)
    return cached


SAME_TOPIC = 0.25
"""The least cosine between two preference values for a changed one to replace the other
("coffee" and "tea" are about 0.5 with the shipped embedder, "coffee" and "dark mode" 0.01)."""


def _replaced(
    claim: Claim,
    attribute: str,
    active: Sequence[MemoryRecord],
    embed: Callable[[list[str]], np.ndarray],
    defeasible: bool = True,
) -> list[MemoryRecord]:
    """The active memories a new claim replaces: the unconditional state of the same entity
    and attribute; for a preference that says it changed ("Actually I prefer coffee now"),
    the earlier preference of the same entity and attribute closest to it in meaning, if any
    is close enough (``SAME_TOPIC``). Events, facts, rules and exceptions (with
    ``defeasible``; without it a conditional state replaces like any state) add up."""
    same = [
        m
        for m in active
        if m.active and not m.condition and m.entity == claim.entity and m.attribute == attribute
    ]
    if claim.kind == "state" and not (claim.condition and defeasible) and not claim.prohibited:
        return [m for m in same if m.category == "state"]
    earlier = [m for m in same if m.category == "preference"]
    if claim.kind != "preference" or not claim.extra.get("changed") or not earlier:
        return []
    vectors = embed([claim.value, *(m.value or m.content for m in earlier)])
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    scores = vectors[1:] @ vectors[0]
    best = int(np.argmax(scores))
    return [earlier[best]] if scores[best] >= SAME_TOPIC else []

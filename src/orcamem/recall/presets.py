"""Recall presets: data, not branches. A preset names the weight of each signal.

Every system's scoring weights live here (the engine's, the Memory Bank composite, the
Markdown lexical score); the pipelines read the weights and never ask which preset they run.
Only presets without ``elsewhere`` run on the episode engine: :func:`engine_preset` refuses the
others, naming the class whose scorer reads them (a ``bank`` preset on ``Memory`` would
silently rank by plain BM25).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidInputError

__all__ = ["ENGINE_PRESETS", "PRESETS", "Preset", "engine_preset", "get_preset"]


@dataclass(frozen=True)
class Preset:
    name: str
    weights: dict[str, float] = field(default_factory=dict)
    """Relevance channel weights: ``lexical`` and ``vector`` (fused per line)."""
    description: str = ""
    elsewhere: str | None = None
    """``None``: the episode engine runs it. Else what scores with it and what to use instead,
    said as the fix (the error of :func:`engine_preset`)."""


PRESETS: dict[str, Preset] = {
    "hybrid": Preset(
        "hybrid",
        {"lexical": 0.6, "vector": 0.4},
        "BM25 + vector, normalised score fusion, neighbour smoothing and bounded boosts",
    ),
    "lexical": Preset("lexical", {"lexical": 1.0, "vector": 0.0}, "BM25 only"),
    "vector": Preset("vector", {"lexical": 0.0, "vector": 1.0}, "vector only"),
    # The Markdown provider's lexical score (issue 6; signals in ``markdown_score``). Only
    # ``lexical`` and ``vector`` mean anything to the episode pipeline; the other weights are
    # read by ``markdown_score.rank``: a tag word counts ``tag``, a body word ``body``, a body
    # holding the whole query gains ``verbatim``; a match under ``min_match`` never shows;
    # decay and importance scale the rank by no less than ``decay_floor`` and
    # ``importance_floor`` (they reorder comparable matches, never suppress a strong one).
    "markdown": Preset(
        "markdown",
        {
            "lexical": 1.0,
            "vector": 0.0,
            "tag": 1.5,
            "body": 1.0,
            "verbatim": 0.5,
            "min_match": 0.3,
            "decay_floor": 0.8,
            "importance_floor": 0.9,
        },
        "lexical Markdown score: distinct query words covered (tags weigh more), verbatim "
        "bonus, a minimum match, decay and importance as bounded nudges",
        elsewhere="the markdown preset is the Markdown provider's lexical score: use "
        "orcamem.Capability (its builtin-markdown provider)",
    ),
    # The Memory Bank's composite score (issue 5; signals in ``bank``). The episode pipeline
    # reads only ``lexical``/``vector`` (the bank has no embeddings: keyword candidates); the
    # composite reads ``recency``/``usage``/``topic`` (usage scaled by the profile's maturity,
    # its slack given back to recency and topic), times ``0.5 + 0.5 * confidence``.
    "bank": Preset(
        "bank",
        {"lexical": 1.0, "vector": 0.0, "recency": 0.35, "usage": 0.30, "topic": 0.35},
        "Memory Bank composite: recency (30-day half-life), usage (log ramp from 0.6), topic "
        "(keyword overlap + semantic clusters), times the confidence multiplier",
        elsewhere="the bank preset is the Memory Bank's composite score: use orcamem.MemoryBank",
    ),
}


ENGINE_PRESETS: tuple[str, ...] = tuple(name for name, p in PRESETS.items() if p.elsewhere is None)
"""The presets ``Config.recall.preset`` may name: those the episode engine runs."""


def get_preset(name: str) -> Preset:
    """Any system's preset by name (its weights); an unknown name is an error."""
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidInputError(
            f"unknown recall preset {name!r}: choose one of {sorted(PRESETS)}"
        ) from None


def engine_preset(name: str) -> Preset:
    """A preset the episode engine runs; one scored by another system is refused with its fix.

    Raises:
        InvalidInputError: an unknown preset, or one whose scorer lives in another system.
    """
    preset = PRESETS.get(name)
    runs = ", ".join(repr(n) for n in ENGINE_PRESETS)
    if preset is None:
        raise InvalidInputError(f"recall.preset={name!r}: use one of {runs}")
    if preset.elsewhere is not None:
        raise InvalidInputError(f"recall.preset={name!r}: {preset.elsewhere}; Memory runs {runs}")
    return preset

"""Recall presets: data, not branches. A preset names the weight of each signal.

Later issues add theirs (Memory Bank composite, Markdown lexical, local-memory BM25) as more
entries here; the pipeline reads the weights and never asks which preset it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...foundation.errors import InvalidInputError

__all__ = ["PRESETS", "Preset", "get_preset"]


@dataclass(frozen=True)
class Preset:
    name: str
    weights: dict[str, float] = field(default_factory=dict)
    """Relevance channel weights: ``lexical`` and ``vector`` (fused per line)."""
    description: str = ""


PRESETS: dict[str, Preset] = {
    "hybrid": Preset(
        "hybrid",
        {"lexical": 0.6, "vector": 0.4},
        "BM25 + vector, normalised score fusion, neighbour smoothing and bounded boosts",
    ),
    "lexical": Preset("lexical", {"lexical": 1.0, "vector": 0.0}, "BM25 only"),
    "vector": Preset("vector", {"lexical": 0.0, "vector": 1.0}, "vector only"),
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidInputError(
            f"unknown recall preset {name!r}: choose one of {sorted(PRESETS)}"
        ) from None

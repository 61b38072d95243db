"""The recall pipeline: candidates → fuse → signals → select → pack."""

from .blocks import pack_context
from .hybrid import ALWAYS, RecallResult, recall
from .presets import ENGINE_PRESETS, PRESETS, Preset, engine_preset, get_preset

__all__ = [
    "ALWAYS",
    "ENGINE_PRESETS",
    "PRESETS",
    "Preset",
    "RecallResult",
    "engine_preset",
    "get_preset",
    "pack_context",
    "recall",
]

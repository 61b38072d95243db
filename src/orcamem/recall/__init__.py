"""The recall pipeline: candidates → fuse → signals → select → pack."""

from .blocks import pack_context
from .hybrid import RecallResult, recall
from .presets import PRESETS, Preset, get_preset

__all__ = ["PRESETS", "Preset", "RecallResult", "get_preset", "pack_context", "recall"]

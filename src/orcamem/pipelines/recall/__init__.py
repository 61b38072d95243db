"""The recall pipeline: candidates → fuse → signals → select → pack."""

from .pack import pack_context
from .pipeline import RecallResult, recall
from .presets import PRESETS, Preset, get_preset

__all__ = ["PRESETS", "Preset", "RecallResult", "get_preset", "pack_context", "recall"]

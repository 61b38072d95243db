"""The recall pipeline: candidates → fuse → signals → select → pack.

Names load on first use (``_kernel.lazy``): a hook that needs one block module does not pay
for the hybrid pipeline's numpy.
"""

from typing import TYPE_CHECKING

from .._kernel.lazy import lazy_names

if TYPE_CHECKING:
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

__getattr__ = lazy_names(
    __name__,
    {
        "ALWAYS": "hybrid",
        "ENGINE_PRESETS": "presets",
        "PRESETS": "presets",
        "Preset": "presets",
        "RecallResult": "hybrid",
        "engine_preset": "presets",
        "get_preset": "presets",
        "pack_context": "blocks",
        "recall": "hybrid",
    },
)

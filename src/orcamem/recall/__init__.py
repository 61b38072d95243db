"""The recall pipeline: candidates → fuse → signals → select → pack.

Names load on first use (``_kernel.lazy``): a hook that needs one block module does not pay
for the hybrid pipeline's numpy.
"""

from typing import TYPE_CHECKING

from .._kernel.lazy import lazy_names

if TYPE_CHECKING:
    from .blocks import LeftOut, Packed, explain_pack, pack_context
    from .hybrid import ALWAYS, RecallResult, recall
    from .presets import ENGINE_PRESETS, PRESETS, Preset, engine_preset, get_preset

__all__ = [
    "ALWAYS",
    "ENGINE_PRESETS",
    "PRESETS",
    "LeftOut",
    "Packed",
    "Preset",
    "RecallResult",
    "engine_preset",
    "explain_pack",
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
        "LeftOut": "blocks",
        "Packed": "blocks",
        "Preset": "presets",
        "RecallResult": "hybrid",
        "engine_preset": "presets",
        "explain_pack": "blocks",
        "get_preset": "presets",
        "pack_context": "blocks",
        "recall": "hybrid",
    },
)

"""Every prompt block, side by side. Each format is its seed's; they share clipping and budget
filling (``budget.py``), and every stored text goes through ``quote.py`` first (redacted, the
blocks' brackets and tags escaped), before any clip:

- ``engine``: seed 003's ``## Memory`` block (dense brackets or classic sections), tokens;
- ``bank``: seed 002's ``--- CONTEXT FROM MEMORY ---`` block, characters, trimmed from the end;
- ``capability``: seed 004's ``<memory>`` block, characters;
- ``local``: seed 000's ``<automatic-memory>`` block, entries and UTF-8 bytes;
- ``note``: an automation's note, a scribe's observation.
"""

from .budget import clip, fill
from .engine import FORBIDDEN_FRAMING, FRAMING, LeftOut, Packed, explain_pack, pack_context

__all__ = [
    "FORBIDDEN_FRAMING",
    "FRAMING",
    "LeftOut",
    "Packed",
    "clip",
    "explain_pack",
    "fill",
    "pack_context",
]

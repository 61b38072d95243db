"""Seed 000, local memory for an agent CLI: explicit facts and automatic capture on a ledger.

``LocalMemory`` serves one session in one project; ``JsonlTranscript`` is the transcript it
reads finished turns from (any ``Transcript`` works).
"""

from .memory import LocalMemory
from .transcript import JsonlTranscript, Transcript

__all__ = ["JsonlTranscript", "LocalMemory", "Transcript"]

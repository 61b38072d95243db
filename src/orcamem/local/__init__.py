"""Seed 000, local memory for an agent CLI: explicit facts and automatic capture on a ledger.

``LocalMemory`` serves one session in one project; ``JsonlTranscript`` is the transcript it
reads finished turns from (any ``Transcript`` works). ``LocalProjects`` is the inspector's
view: every project under the ``memory/`` root, by id (``/api/local`` and the dashboard).
"""

from .memory import LocalMemory
from .projects import LocalProjects, ProjectSummary
from .transcript import JsonlTranscript, Transcript

__all__ = ["JsonlTranscript", "LocalMemory", "LocalProjects", "ProjectSummary", "Transcript"]

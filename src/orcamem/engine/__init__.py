"""Seed 003, the episode engine: append-only episodes, hybrid recall, sleep consolidation.

``Memory`` is its SDK; ``AsyncMemory`` the async twin; the CLI, REST API, proxy and MCP are
skins over ``Memory``.
"""

from .async_memory import AsyncMemory
from .memory import Memory

__all__ = ["AsyncMemory", "Memory"]

"""Seed 003, the episode engine: append-only episodes, hybrid recall, sleep consolidation.

``Memory`` is its SDK; ``AsyncMemory`` the async twin; the CLI, REST API, proxy and MCP are
skins over ``Memory``. ``orcamem.Config``'s sections are importable from here:
``Memory(config=Config(recall=RecallConfig(top_k=5)))``.
"""

from .._kernel.config import PackConfig, RecallConfig, SignalsConfig, SleepConfig, StorageConfig
from ..recall.filters import SearchFilter
from .async_memory import AsyncMemory
from .memory import Memory

__all__ = [
    "AsyncMemory",
    "Memory",
    "PackConfig",
    "RecallConfig",
    "SearchFilter",
    "SignalsConfig",
    "SleepConfig",
    "StorageConfig",
]

"""orcamem: durable, local-first long-term memory for LLM agents.

One package, four memory systems over one kernel::

    from orcamem import Memory          # the episode engine: episodes, hybrid recall, sleep
    from orcamem import MemoryBank      # profile-scoped memories with S3 persistence
    from orcamem import Capability      # memory as a host capability (Markdown or MCP provider)
    from orcamem import LocalMemory     # local memory for an agent CLI (facts + automatic capture)

>>> from orcamem import Memory
>>> mem = Memory()            # ~/.orca/memory.db, or $ORCA_HOME/memory.db
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING

from . import _deprecated, errors
from ._kernel.config import Config
from .engine import AsyncMemory, Memory
from .errors import *  # noqa: F403 - the whole family, as errors.__all__ lists it

if TYPE_CHECKING:
    from .bank import MemoryBank
    from .capability import Capability
    from .local import LocalMemory

_deprecated.install()

_LAZY = {"Capability": "capability", "LocalMemory": "local", "MemoryBank": "bank"}
"""Systems loaded on first use: ``import orcamem`` stays light (no HTTP client, no S3 signer)
for the engine's offline default path."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'orcamem' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AsyncMemory",
    "Capability",
    "Config",
    "LocalMemory",
    "Memory",
    "MemoryBank",
    *errors.__all__,
]

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
from ._kernel.lazy import lazy_names as _lazy_names
from .errors import *  # noqa: F403 - the whole family, as errors.__all__ lists it

if TYPE_CHECKING:
    from .bank import MemoryBank
    from .capability import Capability
    from .engine import AsyncMemory, Memory
    from .local import LocalMemory

_deprecated.install()

_LAZY = {
    "AsyncMemory": "engine",
    "Capability": "capability",
    "LocalMemory": "local",
    "Memory": "engine",
    "MemoryBank": "bank",
}
"""Systems loaded on first use: ``import orcamem`` stays light (no HTTP client, no S3 signer,
no engine for a hook that only needs local memory: ``orcamem.local`` alone loads in a fraction
of the time)."""


__getattr__ = _lazy_names(__name__, _LAZY)


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

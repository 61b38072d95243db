"""orcamem: durable, local-first long-term memory for LLM agents.

>>> from orcamem import Memory
>>> mem = Memory()            # ~/.orca/memory.db, or $ORCA_HOME/memory.db
"""

from .foundation.config import Config
from .foundation.errors import (
    ClosedError,
    CorruptStoreError,
    DimensionMismatchError,
    EmbedderError,
    EmbedderMismatchError,
    InvalidInputError,
    InvalidSpaceError,
    ModelError,
    ModelOutputError,
    ModelTimeoutError,
    NotFoundError,
    OrcamemError,
    ReadOnlyStoreError,
    SchemaTooNewError,
    StoreError,
)
from .services.async_memory import AsyncMemory
from .services.memory import Memory

__version__ = "0.1.0"

__all__ = [
    "AsyncMemory",
    "ClosedError",
    "Config",
    "CorruptStoreError",
    "DimensionMismatchError",
    "EmbedderError",
    "EmbedderMismatchError",
    "InvalidInputError",
    "InvalidSpaceError",
    "Memory",
    "ModelError",
    "ModelOutputError",
    "ModelTimeoutError",
    "NotFoundError",
    "OrcamemError",
    "ReadOnlyStoreError",
    "SchemaTooNewError",
    "StoreError",
]

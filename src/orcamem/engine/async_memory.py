"""``AsyncMemory``: the SDK for asyncio code, name for name.

For SQLite, async means the sync call in a worker thread, never a second engine.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from .memory import Memory

__all__ = ["AsyncMemory"]

_METHODS = (
    "add",
    "observe",
    "add_many",
    "add_file",
    "remember",
    "forbid",
    "facts",
    "forget",
    "search",
    "recall",
    "build_context",
    "stats",
    "spaces",
    "reembed",
)


class AsyncMemory:
    """Every ``Memory`` method as a coroutine; takes the same constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sync = Memory(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name not in _METHODS:
            raise AttributeError(name)
        method = getattr(self.sync, name)

        @functools.wraps(method)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        return call

    async def aclose(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

"""MCP over stdio that answers every request it read before it ends.

The SDK ends the session when stdin ends and cancels what is in flight, so a client that
writes its calls and closes the pipe (``printf … | orcamem mcp``, a client shutting down)
got no reply to calls already carried out (100 ``orma_remember``: 100 stored, 0–49
answered), and a retry stored them again. Here the end of stdin reaches the SDK only once
each request read has its response or error (or was cancelled by the client).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

__all__ = ["serve_stdio"]

DRAIN_LIMIT_S = 600.0
"""How long stdin's end waits for the answers: a handler that never answers (none should)
must not keep the process alive for ever."""


def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` on stdin/stdout until stdin ends and every request is answered."""
    anyio.run(_serve, server)


async def _serve(server: MCPServer[Any]) -> None:
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async serves, the same way
    async with stdio_server() as (read, write):
        pending = _Pending()
        await lowlevel.run(
            _Reading(read, pending),
            _Writing(write, pending),
            lowlevel.create_initialization_options(),
        )


class _Pending:
    """The ids of the requests read and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.changed = anyio.Event()

    def add(self, request_id: Any) -> None:
        self.ids.add(request_id)

    def done(self, request_id: Any) -> None:
        if request_id in self.ids:
            self.ids.discard(request_id)
            self.changed.set()
            self.changed = anyio.Event()

    async def drained(self) -> None:
        while self.ids:
            await self.changed.wait()


class _Stream:
    def __init__(self, inner: Any, pending: _Pending) -> None:
        self._inner = inner
        self._pending = pending

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Reading(_Stream):
    """The SDK's read side: stdin's end held back while requests are pending."""

    @property
    def last_context(self) -> Any:  # the sender context the SDK reads off its stream
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            with anyio.move_on_after(DRAIN_LIMIT_S):
                await self._pending.drained()
            raise
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest):
            self._pending.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):  # a cancelled request may go unanswered
            self._pending.done((message.params or {}).get("requestId"))
        return item

    def __aiter__(self) -> _Reading:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _Writing(_Stream):
    """The SDK's write side: each response or error marks its request answered."""

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._pending.done(message.id)

"""One pooled ``httpx.AsyncClient`` per app and purpose, open exactly as long as the app runs.

The proxy and the UI pass-through each keep one client to the upstream on ``app.state``.
:func:`hold` opens it by wrapping ``app.router.lifespan_context``: the previous lifespan
(FastAPI's default one that runs ``on_startup``/``on_shutdown``, a ``lifespan=`` given to
``FastAPI()``, or another installer's wrapper) is entered first and left last, so installers
compose in any order and a state dict yielded by an inner lifespan is passed on.
(``on_shutdown`` handlers alone would be skipped as soon as anyone passes ``lifespan=``.)
Where no lifespan runs (``TestClient`` used without ``with``), :func:`borrow` opens and closes
a client for the one request instead, so a client is never shared across event loops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from fastapi import FastAPI

__all__ = ["borrow", "hold"]

MakeClient = Callable[[FastAPI], httpx.AsyncClient]


def hold(app: FastAPI, name: str, make: MakeClient) -> None:
    """Keep ``make(app)`` as ``app.state.<name>`` while the app runs; close it on shutdown."""
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(asgi_app: Any) -> AsyncIterator[Any]:
        async with previous(asgi_app) as state:
            client = make(app)
            setattr(app.state, name, client)
            try:
                yield state
            finally:
                setattr(app.state, name, None)
                await client.aclose()

    app.router.lifespan_context = lifespan


@asynccontextmanager
async def borrow(app: FastAPI, name: str, make: MakeClient) -> AsyncIterator[httpx.AsyncClient]:
    """The client :func:`hold` keeps, or (no lifespan ran) one for this request only."""
    held: httpx.AsyncClient | None = getattr(app.state, name, None)
    if held is not None:
        yield held
        return
    client = make(app)
    try:
        yield client
    finally:
        with anyio.CancelScope(shield=True):
            await client.aclose()

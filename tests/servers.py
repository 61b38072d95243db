"""Real servers for tests: an ASGI app under uvicorn on 127.0.0.1 (a free port), in a thread;
and the environment a server in a child process needs to run the orcamem under test."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

import orcamem

ORCAMEM_SOURCE = str(Path(orcamem.__file__).resolve().parents[1])
"""Where the orcamem this test run imports lives (a checkout's ``src``, or site-packages)."""


def child_env(**extra: str) -> dict[str, str]:
    """Extra environment for a child Python given only a minimal environment (the MCP SDK's
    stdio client passes HOME, PATH and little else): it imports the same orcamem as this
    process, not whichever one the interpreter has installed (another checkout's, say)."""
    return {"PYTHONPATH": ORCAMEM_SOURCE, **extra}


@contextmanager
def serve(app: Any, *, lifespan: str = "on", port: int = 0) -> Iterator[str]:
    """Run ``app`` until the block ends; yields its base URL (``http://127.0.0.1:PORT``).
    ``port`` 0 is a free one; another is the one a command under test was told to use."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan=lifespan,
        timeout_graceful_shutdown=5,
    )  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


LOCAL_BASE = "http://127.0.0.1:8080"
"""``TestClient(app, base_url=LOCAL_BASE)``: requests carry a loopback ``Host`` the server's
DNS-rebinding check accepts (TestClient's default ``testserver`` is, rightly, refused)."""


def free_port() -> int:
    """A loopback port free right now (for a child server that takes ``--port``)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

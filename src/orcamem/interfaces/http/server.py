"""Compose and run the HTTP app: which parts a command serves, and uvicorn on loopback.

``orcamem up``    → REST API + dashboard + proxy + MCP over HTTP + the upstream's web UI
``orcamem serve`` → REST API + dashboard (``/ui``, built on that API alone)
``orcamem proxy`` → the OpenAI-compatible memory proxy alone

``run`` serves one app in this process. ``run_workers`` serves ``--workers N`` processes on one
listening socket (uvicorn's supervisor: the kernel spreads connections over them, a worker
that dies is replaced); each process builds its own app from a picklable factory, so each has
its own ``Memory`` on the one database. On SQLite they share the WAL file: one writer at a
time by SQLite's own lock (``busy_timeout``), reads in parallel, and every process's vector
index catches up with the others' commits (``PRAGMA data_version``). A Python process runs one
thread at a time, so this is how one server uses more than one core. ``/metrics`` reports the
whole server, whichever worker answers: the workers write their counts to one directory this
server makes (and removes), and the scrape sums them (``metrics.Metrics.share``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial

from fastapi import FastAPI

from ..._kernel.env import PROMETHEUS_DIR, exported
from ...bank import MemoryBank
from ...engine.memory import Memory
from .app import create_app
from .settings import ServerSettings

__all__ = ["PARTS", "build_app", "run", "run_workers", "tcp_socket"]

PARTS = ("api", "proxy", "mcp", "ui")


def build_app(
    memory: Memory,
    settings: ServerSettings,
    parts: Iterable[str] = PARTS,
    *,
    bank: MemoryBank | None = None,
) -> FastAPI:
    """``create_app`` plus the named parts, in an order where the UI catch-all comes last.

    ``bank``: the Memory Bank the REST routes and MCP tools serve (503 / no tools without).
    """
    app = create_app(memory, settings)
    app.state.bank = bank
    wanted = set(parts)
    if "api" in wanted:
        from .api import install as install_api

        install_api(app)
        from .dashboard import install as install_dashboard

        install_dashboard(app)
    if "proxy" in wanted:
        from .proxy import install as install_proxy

        install_proxy(app)
    if "mcp" in wanted:
        from ..mcp.server import install as install_mcp

        install_mcp(app)
    if "ui" in wanted:
        from .ui import install as install_ui

        install_ui(app)
    return app


def run(app: FastAPI, settings: ServerSettings) -> None:
    """Serve until interrupted (uvicorn, one process, the settings' host and port), logging
    JSON lines (``logs.LOG_CONFIG``: queued, so the event loop never waits on stderr)."""
    import uvicorn

    from .logs import LOG_CONFIG, drain

    app.router.add_event_handler("shutdown", drain)
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=LOG_CONFIG)


def run_workers(factory: Callable[[], FastAPI], settings: ServerSettings, workers: int) -> None:
    """Serve ``workers`` processes on one socket until interrupted (see the module doc).

    ``factory`` builds one worker's app; it is pickled into each worker process (a
    module-level function or a ``functools.partial`` of one), so it must not hold an open
    ``Memory``. It exits the worker with uvicorn's start-up failure code on an
    ``OrcamemError``, which stops the supervisor instead of restarting the worker forever.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from .logs import LOG_CONFIG

    shared = tempfile.mkdtemp(prefix="orcamem-metrics-")  # the workers' counts, one file each
    config = uvicorn.Config(
        partial(_worker_app, factory, shared, os.getpid()),
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=workers,
        log_config=LOG_CONFIG,
        timeout_worker_healthcheck=WORKER_SILENCE_S,
    )
    try:
        listening = tcp_socket(config.bind_socket())
        try:
            with exported(PROMETHEUS_DIR, shared):  # workers are spawned: they start with it
                Multiprocess(config, sockets=[listening]).run()
        finally:
            listening.close()
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def tcp_socket(bound: socket.socket) -> socket.socket:
    """``bound`` (uvicorn's ``Config.bind_socket()``) as a socket that says it is TCP.

    uvicorn leaves the listener's ``proto`` at 0; accepted connections inherit it, and asyncio
    sets ``TCP_NODELAY`` only on a socket whose ``proto`` is ``IPPROTO_TCP``. So with
    ``--workers`` Nagle's algorithm stayed on, and every keep-alive request after a
    connection's first waited ~44 ms for the client's delayed ACK (a search 8 → 52 ms at one
    client; uvicorn issue #3149). The same descriptor, with ``proto`` stated."""
    return socket.socket(bound.family, bound.type, socket.IPPROTO_TCP, fileno=bound.detach())


ORPHAN_CHECK_S = 0.5
"""How often a worker looks whether its supervisor is still its parent."""


def _end_with(supervisor: int) -> None:
    """Stop this worker (SIGTERM: it finishes its requests) once ``supervisor`` is gone: a
    supervisor killed with SIGKILL had left its workers serving and writing to the database,
    holding the port, so a restart failed with "Address already in use"."""

    def watch() -> None:
        while os.getppid() == supervisor:
            time.sleep(ORPHAN_CHECK_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="orcamem-orphan-watch", daemon=True).start()


WORKER_SILENCE_S = 120
"""How long the supervisor waits for a worker to answer its ping before it kills and replaces
it (uvicorn's default, 5 s, killed workers still importing on a loaded machine, and would
kill one whose Python thread is busy: its in-flight requests would fail)."""
STARTUP_FAILURE = 3
"""uvicorn's exit code for a worker that could not start (its supervisor then stops)."""


def _worker_app(factory: Callable[[], FastAPI], shared: str, supervisor: int) -> FastAPI:
    """One worker's app (in the worker process): the factory's, its ``/metrics`` the whole
    server's (the counts every worker writes to ``shared``), writing its queued log lines as
    it stops; the worker ends when its ``supervisor`` process does (:func:`_end_with`)."""
    from ...errors import OrcamemError
    from .logs import drain

    _end_with(supervisor)
    try:
        app = factory()
        metrics = getattr(app.state, "metrics", None)
        if metrics is not None:
            metrics.share(shared)
            app.router.add_event_handler("shutdown", metrics.leave)
    except OrcamemError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        sys.exit(STARTUP_FAILURE)
    app.router.add_event_handler("shutdown", drain)
    return app

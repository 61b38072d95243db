"""A bounded load test on loopback: many concurrent clients, mixed add / search / proxy.

The server (``orcamem up``: REST API + proxy + MCP) and a stub upstream that answers chat
completions at once (it measures orcamem, not a model) run as their own processes on
127.0.0.1, so the load generator's threads do not share their interpreter. Every
acknowledged add is read back afterwards through every replica's REST API. Traffic goes to
127.0.0.1 only and stops by itself: after ``seconds`` (once each client has made one request
of each kind), or after ``requests`` a client.
"""

from __future__ import annotations

import random
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from fastapi import FastAPI

from .._kernel.http import client as http_client
from ..engine.memory import Memory
from ..errors import StoreError
from .runs import machine

__all__ = ["load_test", "stub_app"]


def _stub_upstream() -> FastAPI:
    stub = FastAPI()

    @stub.post("/v1/chat/completions")
    def complete(body: dict) -> dict:
        return {
            "id": "stub", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Noted."}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }  # fmt: skip

    return stub


stub_app = _stub_upstream()
"""The stub upstream, importable by ``uvicorn orcamem.bench.load:stub_app``."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


STARTED = b"Application startup complete."
"""What uvicorn logs when a (worker) process is ready to serve."""


@contextmanager
def _process(
    args: list[str], health: str, *, start_within: float = 60, processes: int = 1
) -> Iterator[None]:
    """A child process on loopback, up once ``health`` answers (and, with ``processes`` > 1,
    once that many of its worker processes have logged ``STARTED``: the first to start would
    otherwise serve the whole run while the others still import); terminated afterwards.

    Its stderr goes to a temporary file, never to a pipe nobody reads: the server logs a line
    a request, and once the 64 KiB pipe was full its event loop blocked in that write, so
    every client waited out its 30 s timeout (bench load at 32 clients: 32 errors, p99 30 s).
    """
    with tempfile.TemporaryFile() as log:
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + start_within
            with http_client(timeout=1) as probe:
                while True:
                    try:
                        if probe.get(health).status_code < 500:
                            log.seek(0)
                            if processes == 1 or log.read().count(STARTED) >= processes:
                                break
                    except httpx.HTTPError:
                        pass
                    if child.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        detail = log.read().decode(errors="replace")[-800:]
                        raise StoreError(f"could not start {' '.join(args[:4])}: {detail}")
                    time.sleep(0.1)
            yield
        finally:
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def load_test(
    *,
    clients: int = 32,
    seconds: float = 10.0,
    spaces: int = 4,
    preload: int = 1000,
    db: str | None = None,
    replicas: int = 1,
    workers: int = 1,
    requests: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, Any]:
    """Run the mixed load and return throughput, p50/p99 per operation, errors, the
    requests each replica served, and the check that every acknowledged write is listed
    by every replica.

    ``db``: a database URL (``postgresql://…``) instead of a fresh SQLite file; the run's
    spaces get a fresh prefix and are deleted afterwards. ``replicas``: that many ``orcamem
    up`` processes on the one database, the clients spread over them round-robin.
    ``workers``: each replica's ``--workers`` (processes on its one port). ``requests``:
    each client makes exactly that many requests, and ``seconds`` is ignored (a run the
    machine's speed cannot shorten: for tests).
    """
    run = secrets.token_hex(3)
    names = [f"load-{run}-{n}" for n in range(spaces)]
    with tempfile.TemporaryDirectory() as tmp:
        path = db or str(Path(tmp) / "load.db")
        with Memory.connect(path) as seed:
            for n, name in enumerate(names):
                seed.add_many(
                    [f"seed note {i} for space {n} about project planning" for i in range(preload)],
                    space=name,
                )
        stub_port = _free_port()
        stub = [
            sys.executable,
            "-m",
            "uvicorn",
            "orcamem.bench.load:stub_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(stub_port),
            "--log-level",
            "warning",
        ]
        ports = [_free_port() for _ in range(replicas)]
        with ExitStack() as running:
            running.enter_context(_process(stub, f"http://127.0.0.1:{stub_port}/docs"))
            for port in ports:
                running.enter_context(
                    _process(
                        _server(path, port, stub_port, workers),
                        f"http://127.0.0.1:{port}/healthz",
                        start_within=60 * workers,
                        processes=workers,
                    )
                )
            bases = [f"http://127.0.0.1:{port}" for port in ports]
            for base in bases:
                _warm_up(base, names[0], workers)
            load_before = machine()["load_1m"]
            result = _drive(bases, clients, seconds, names, progress, requests)
            result["load_1m"] = [load_before, machine()["load_1m"]]
            acknowledged = set(result.pop("acknowledged_texts"))
            for served in result["per_replica"]:
                listed = _listed(served["base"], names)
                served["missing_acknowledged"] = len(acknowledged - listed)
        if db:
            with Memory.connect(path) as cleanup:
                for name in names:
                    cleanup.delete_space(name)
    result["missing_acknowledged"] = max(r["missing_acknowledged"] for r in result["per_replica"])
    result["replicas"] = replicas
    result["workers"] = workers
    result["engine"] = db.split(":", 1)[0] if db else "sqlite"
    result["machine"] = machine()
    return result


def _server(path: str, port: int, stub_port: int, workers: int = 1) -> list[str]:
    return [
        sys.executable, "-m", "orcamem", "up", "--no-browser", "--db", path,
        "--port", str(port), "--upstream", f"http://127.0.0.1:{stub_port}/v1", "--model", "stub",
        *(["--workers", str(workers)] if workers > 1 else []),
    ]  # fmt: skip


FIRST = (0.0, 0.5, 0.8)
"""The picks of a client's first requests: an add, a search, a proxy turn."""


def _warm_up(base: str, space: str, workers: int = 1) -> None:
    """One request of each kind before the clock starts: FastAPI builds a router's route
    state on its first request (py-spy: 22% of the event loop over a 10 s run at load 7),
    which is start-up, not load. With workers, from 4 connections a worker at once, so
    (most likely) every worker process gets some."""
    if workers > 1:
        threads = [
            threading.Thread(target=_warm_up, args=(base, space)) for _ in range(4 * workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return
    with http_client(base_url=base, timeout=60) as http:
        http.post("/api/episodes", params={"space": space}, json={"text": "warm-up note"})
        http.get("/api/search", params={"space": "load-0", "q": "warm-up"})
        http.post(
            "/v1/chat/completions",
            headers={"x-orma-space": space},
            json={"messages": [{"role": "user", "content": "warm-up"}]},
        )


def _listed(base: str, spaces: list[str]) -> set[str]:
    """Every episode text one replica lists in ``spaces``, page by page."""
    texts: set[str] = set()
    with http_client(base_url=base, timeout=60) as http:
        for space in spaces:
            after: int | None = 0
            while after is not None:
                reply = http.get(
                    "/api/episodes", params={"space": space, "after": after, "limit": 500}
                )
                reply.raise_for_status()
                page = reply.json()
                texts.update(e["text"] for e in page["episodes"])
                after = page["next_after"]
    return texts


def _drive(
    bases: list[str],
    clients: int,
    seconds: float,
    spaces: list[str],
    progress: Callable[[str, int, int], None] | None,
    requests: int | None = None,
) -> dict[str, Any]:
    timings: dict[str, list[float]] = {"add": [], "search": [], "proxy": []}
    errors: dict[str, int] = {"add": 0, "search": 0, "proxy": 0}
    served = [{"base": base, "requests": 0, "errors": 0} for base in bases]
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def more(count: int) -> bool:
        # each client's first three requests are one of each kind, however busy the
        # machine: every run exercises every path, then the mix is random until the end
        if requests is not None:
            return count < max(requests, len(FIRST))
        return count < len(FIRST) or time.monotonic() < stop_at

    def client(number: int) -> None:
        rng = random.Random(number)
        replica = served[number % len(bases)]
        with http_client(base_url=replica["base"], timeout=30) as http:
            count = 0
            while more(count):
                space = rng.choice(spaces)
                pick = FIRST[count] if count < len(FIRST) else rng.random()
                begin = time.perf_counter()
                try:
                    if pick < 0.5:
                        op, text = "add", f"client {number} note {count} on the quarterly plan"
                        reply = http.post(
                            "/api/episodes",
                            params={"space": space},
                            json={"text": text, "role": "user", "session_id": f"c{number}"},
                        )
                    elif pick < 0.8:
                        op, text = "search", ""
                        reply = http.get(
                            "/api/search", params={"space": space, "q": "project plan"}
                        )
                    else:
                        op, text = "proxy", ""
                        reply = http.post(
                            "/v1/chat/completions",
                            headers={"x-orma-space": space},
                            json={"messages": [{"role": "user", "content": "What is the plan?"}]},
                        )
                    ok = 200 <= reply.status_code < 300
                except httpx.HTTPError:
                    ok = False
                elapsed = (time.perf_counter() - begin) * 1000
                with lock:
                    timings[op].append(elapsed)
                    replica["requests"] += 1
                    if not ok:
                        errors[op] += 1
                        replica["errors"] += 1
                    elif op == "add":
                        acknowledged.append(text)
                count += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        time.sleep(0.25)
        if progress:
            progress("load", min(int(time.perf_counter() - started), int(seconds)), int(seconds))
    wall = time.perf_counter() - started
    total = sum(len(v) for v in timings.values())
    return {
        "clients": clients,
        "seconds": round(wall, 2),
        "requests": total,
        "throughput_rps": round(total / wall, 1),
        "errors": sum(errors.values()),
        "ops": {
            op: {
                "count": len(values),
                "errors": errors[op],
                "p50_ms": round(statistics.median(values), 2) if values else None,
                "p99_ms": round(float(np.percentile(values, 99)), 2) if values else None,
            }
            for op, values in timings.items()
        },
        "per_replica": served,
        "acknowledged_texts": acknowledged,
    }

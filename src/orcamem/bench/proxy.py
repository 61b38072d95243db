"""``proxy_latency``: the time the memory proxy adds before the model server sees a request.

Method (everything on 127.0.0.1, in this process, so one monotonic clock times all parts):

- a space of ``records`` synthetic turns (the text generator of ``bench.latency``);
- the proxy (``create_app`` + the proxy routes) under a real uvicorn server in a thread, its
  upstream a stub model server (``http.server``, HTTP/1.1 keep-alive) that notes, per request,
  the moment the whole forwarded request (headers and body) has arrived;
- for each of ``requests`` fresh questions, one streaming chat request straight to the stub and
  one through the proxy, back to back (which goes first alternates); for each the time from
  the client starting the call to the stub having the request, and to the client's first byte
  of the answer;
- ``added`` = percentile through the proxy − the same percentile direct: auth, body read,
  recall and packing over the space (query embedding included), re-serialising and forwarding.

Requests are sequential, and each starts only after the proxy has recorded the previous
exchange, so the number is the request path alone; contention with other clients is the load
test's business. Numbers come with the machine's load (``bench.machine``).
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from .._kernel.config import Config
from .._kernel.http import client as http_client
from ..engine.memory import Memory
from ..errors import InvalidInputError
from ..interfaces.http.app import create_app
from ..interfaces.http.proxy import install
from ..interfaces.http.settings import ServerSettings
from .runs import Progress, _percentile, _Texts, _vocabulary, load_turns, machine

__all__ = ["proxy_latency"]

_ID = "x-bench-id"
_SSE = (
    b"".join(
        b"data: " + json.dumps(event).encode() + b"\n\n"
        for event in (
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Noted"}}]},
            {"choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": "stop"}]},
        )
    )
    + b"data: [DONE]\n\n"
)


class _Stub:
    """A stub model server that notes when each request has fully arrived."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        arrived = self.arrived

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as real model servers do: no 40 ms ACK waits

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                arrived[self.headers.get(_ID, "")] = time.perf_counter()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(_SSE)))
                self.end_headers()
                self.wfile.write(_SSE)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @contextmanager
    def running(self) -> Iterator[_Stub]:
        with serving_stub(self.server):
            yield self


@contextmanager
def serving_stub(server: ThreadingHTTPServer) -> Iterator[None]:
    """A stub model server answering in a thread until the block ends."""
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` under uvicorn on 127.0.0.1:<free port> in a thread; yields the base URL."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the proxy server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)


def _timed(
    client: httpx.Client, url: str, body: dict[str, Any], tag: str, stub: _Stub
) -> tuple[float, float, str]:
    """(ms until the stub had the request, ms until the first answer byte, memory header)."""
    begin = time.perf_counter()
    with client.stream("POST", f"{url}/chat/completions", json=body, headers={_ID: tag}) as reply:
        chunks = reply.iter_raw()
        first = next(chunks, b"")
        first_at = time.perf_counter()
        rest = b"".join(chunks)
        if reply.status_code != 200 or first + rest != _SSE:
            raise RuntimeError(f"{url} answered {reply.status_code}: {(first + rest)[:200]!r}")
    arrived = stub.arrived.pop(tag)
    return (
        (arrived - begin) * 1000,
        (first_at - begin) * 1000,
        reply.headers.get("x-orcamem-memory", ""),
    )


def proxy_latency(
    records: int = 10000,
    requests: int = 200,
    *,
    warmup: int = 10,
    config: Config | None = None,
    progress: Progress | None = None,
    workdir: str | None = None,
) -> dict[str, Any]:
    """Latency the proxy adds before the upstream's first byte, over a space of ``records``.

    Args:
        records: synthetic turns in the space recalled from.
        requests: timed request pairs (direct, through the proxy).
        warmup: untimed pairs first (model load, vector index, connections).

    Returns:
        ``{"added_p50_ms": …, "added_p95_ms": …, "proxy_p50_ms": …, "direct_p50_ms": …,
        "ttfb_added_p50_ms": …, "build_context_p50_ms": …, "memory_injected": …,
        "machine": {…}, …}``
    """
    if records < 1 or requests < 1 or warmup < 0:
        raise InvalidInputError(
            f"records={records}, requests={requests}, warmup={warmup}: use positive numbers"
        )
    stub = _Stub()
    texts = _Texts(_vocabulary())
    with (
        tempfile.TemporaryDirectory(dir=workdir) as tmp,
        Memory(Path(tmp) / "bench.db", space="bench", config=config) as mem,
    ):
        load_turns(mem, texts, records, progress)
        recorded = threading.Semaphore(0)
        observe: Callable[..., Any] = mem.observe

        def observe_and_count(*args: Any, **kwargs: Any) -> Any:
            try:
                return observe(*args, **kwargs)
            finally:
                recorded.release()

        mem.observe = observe_and_count  # type: ignore[method-assign]
        questions = [texts.question() for _ in range(warmup + requests)]
        settings = ServerSettings(upstream=stub.url, model="stub-model")
        app = create_app(mem, settings)
        install(app)
        direct_ms, proxy_ms, direct_ttfb, proxy_ttfb, injected = [], [], [], [], 0
        with (
            stub.running(),
            serving(app) as url,
            http_client(timeout=60, headers={"x-orma-space": "bench"}) as client,
        ):
            for number, question in enumerate(questions):
                body = {
                    "messages": [
                        {"role": "system", "content": "You are a helpful assistant."},
                        {"role": "user", "content": question},
                    ],
                    "stream": True,
                }
                paths = [(stub.url, "direct"), (f"{url}/v1", "proxy")]
                results = {}
                for base, name in paths if number % 2 else paths[::-1]:
                    results[name] = _timed(client, base, body, f"{name}-{number}", stub)
                for _ in range(2):  # the exchange is recorded before the next pair
                    recorded.acquire(timeout=30)
                if number < warmup:
                    continue
                direct_ms.append(results["direct"][0])
                direct_ttfb.append(results["direct"][1])
                proxy_ms.append(results["proxy"][0])
                proxy_ttfb.append(results["proxy"][1])
                injected += results["proxy"][2] == "injected"
                if progress and number % 20 == 0:
                    progress("proxy requests", number - warmup, requests)
        mem.observe = observe  # type: ignore[method-assign]
        context_ms = []
        for question in questions[warmup:]:
            begin = time.perf_counter()
            mem.build_context([{"role": "user", "content": question}])
            context_ms.append((time.perf_counter() - begin) * 1000)

    def p(samples: list[float], q: float) -> float:
        return round(_percentile(samples, q), 3)

    return {
        "records": records,
        "requests": requests,
        "added_p50_ms": round(p(proxy_ms, 50) - p(direct_ms, 50), 3),
        "added_p95_ms": round(p(proxy_ms, 95) - p(direct_ms, 95), 3),
        "proxy_p50_ms": p(proxy_ms, 50),
        "proxy_p95_ms": p(proxy_ms, 95),
        "direct_p50_ms": p(direct_ms, 50),
        "direct_p95_ms": p(direct_ms, 95),
        "ttfb_added_p50_ms": round(p(proxy_ttfb, 50) - p(direct_ttfb, 50), 3),
        "ttfb_added_p95_ms": round(p(proxy_ttfb, 95) - p(direct_ttfb, 95), 3),
        "build_context_p50_ms": p(context_ms, 50),
        "memory_injected": injected,
        "method": (
            "stub upstream on 127.0.0.1 timestamps each fully arrived request; "
            "percentile via proxy minus percentile direct, sequential pairs"
        ),
        "machine": machine(),
    }

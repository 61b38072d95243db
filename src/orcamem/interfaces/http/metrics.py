"""``GET /metrics`` (Prometheus text) and ``Observe``, the middleware every request passes.

``Observe`` gives each request an id (the client's ``x-request-id`` when it is a plain token,
else a new ``req-…``), returns it in ``x-request-id``, counts the request and its latency by
route template (never the raw path: a space or an id in a URL must not become a label), and
logs it as one structured line on the ``orcamem.http`` logger; ``REQUEST_ID`` carries the id to
every log line written while the request runs (``logs.RequestIdFilter``).

The job queue is read from the database when ``/metrics`` is scraped, so every replica on one
database reports the same queue: jobs by status (the depth is ``pending`` + ``running``) and
the lease takeovers (a worker died or hung and another claimed its job) in the jobs it keeps.
prometheus-client writes the exposition format; each app has its own registry, so two apps in
one process (tests, replicas) never share a counter.

Under ``--workers N`` the scrape reports the whole server, whichever worker answers it:
``server.run_workers`` makes one directory per server and hands it to every worker
(prometheus-client's multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``), each worker's counters,
histograms and in-flight gauge live in memory-mapped files there, and :meth:`Metrics.share`
makes the scrape sum the files of all of them (requests and latency summed; in flight: the
live workers' sum). A worker that stops cleanly takes its in-flight gauge with it; its counts
stay, so totals never go down while the server runs. The directory goes with the server.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..._kernel.ids import random_id
from ...errors import OrcamemError

__all__ = ["REQUEST_ID", "Metrics", "Observe", "install"]

log = logging.getLogger("orcamem.http")

REQUEST_ID: ContextVar[str | None] = ContextVar("orcamem_request_id", default=None)
"""The id of the request being served (``None`` outside one)."""

_GIVEN_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _Jobs:
    """A collector that reads the job queue from the database at each scrape."""

    def __init__(self, memory: Any) -> None:
        self.memory = memory

    def collect(self) -> Iterator[GaugeMetricFamily]:
        summary = self.memory.jobs_summary()
        jobs = GaugeMetricFamily(
            "orcamem_jobs",
            "Durable jobs in the database by status (queue depth: pending + running).",
            labels=["status"],
        )
        for status, count in summary["jobs"].items():
            jobs.add_metric([status], count)
        yield jobs
        yield GaugeMetricFamily(
            "orcamem_job_lease_takeovers",
            "Lease takeovers (a worker died or hung, another claimed its job) in the kept jobs.",
            value=summary["lease_takeovers"],
        )


class Metrics:
    """The app's registry: requests, latency, requests in flight and the job queue."""

    def __init__(self, memory: Any) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "orcamem_http_requests",
            "HTTP requests served, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "orcamem_http_request_duration_seconds",
            "Time to serve a request (a streamed answer: until its last byte).",
            ["method", "route"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "orcamem_http_requests_in_flight",
            "Requests being served.",
            registry=self.registry,
            multiprocess_mode="livesum",  # under --workers: the live workers' sum
        )
        self._jobs = _Jobs(memory)
        self.registry.register(self._jobs)
        self._scraped = self.registry
        self.shared: str | None = None

    def share(self, directory: str) -> None:
        """Scrape the whole server: the counts every worker writes to ``directory``, summed
        (see the module doc), plus the job queue read once from the database. The process
        must have started with ``PROMETHEUS_MULTIPROC_DIR`` set to ``directory`` (so its
        counts are written there); ``server.run_workers`` starts its workers so."""
        from prometheus_client import values
        from prometheus_client.multiprocess import MultiProcessCollector

        if not values.ValueClass._multiprocess:
            raise OrcamemError(
                f"this worker does not write its metrics to {directory}: start it with "
                "PROMETHEUS_MULTIPROC_DIR set to that directory (server.run_workers does)"
            )
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=directory)
        registry.register(self._jobs)
        self._scraped, self.shared = registry, directory

    def leave(self) -> None:
        """This worker is stopping: its in-flight gauge no longer counts (its counts do)."""
        if self.shared is not None:
            from prometheus_client.multiprocess import mark_process_dead

            mark_process_dead(os.getpid(), self.shared)

    def render(self) -> bytes:
        return generate_latest(self._scraped)


def _route(scope: Scope) -> str:
    """The template of the route that served the request (``/api/spaces/{space}``: the path
    with each path parameter put back by name, last first), else ``unmatched``."""
    if scope.get("route") is None:
        return "unmatched"
    path = scope.get("path", "")
    for name, value in reversed(scope.get("path_params", {}).items()):
        at = path.rfind(f"/{value}")
        if value != "" and at >= 0:
            path = f"{path[:at]}/{{{name}}}{path[at + len(str(value)) + 1 :]}"
    return path


class Observe:
    """Request id, metrics and one structured log line per HTTP request (plain ASGI)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", ())).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _GIVEN_ID.match(given) else random_id("req-", 16)
        token = REQUEST_ID.set(request_id)
        status = 500  # what a request that dies before answering counts as
        start = time.perf_counter()

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [*message.get("headers", ()), (b"x-request-id", request_id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, sending)
        finally:
            elapsed = time.perf_counter() - start
            route, method = _route(scope), scope["method"]
            self.metrics.in_flight.dec()
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(elapsed)
            log.info(
                "%s %s %d",
                method,
                route,
                status,
                extra={
                    "method": method,
                    "route": route,
                    "status": status,
                    "ms": round(elapsed * 1000, 3),
                },
            )
            REQUEST_ID.reset(token)


def install(app: FastAPI) -> None:
    """Count every request and serve ``GET /metrics`` (behind the key check like any route)."""
    metrics = Metrics(app.state.memory)
    app.state.metrics = metrics
    app.add_middleware(Observe, metrics=metrics)

    @app.get("/metrics", tags=["meta"], summary="Prometheus metrics", include_in_schema=False)
    def prometheus(request: Request) -> Response:
        return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)

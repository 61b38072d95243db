"""Operable servers (issue 16 item 7): ``/metrics`` on a real served app, request ids, one JSON
log line per request, and OpenTelemetry spans exported over OTLP/HTTP by a real ``orcamem up``
to a loopback collector only when an endpoint is configured."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from orcamem import Memory
from orcamem._kernel.jobs import JobQueue
from orcamem.interfaces.cli.main import app
from orcamem.interfaces.http import server as http_server
from orcamem.interfaces.http.settings import ServerSettings
from servers import child_env, free_port, serve

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:10:00Z"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``{(sample name, sorted labels): value}`` of a Prometheus text answer."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _served(monkeypatch: pytest.MonkeyPatch, args: list[str], then: Any) -> None:
    """``orcamem <args>`` through the real CLI, on a real uvicorn server, calling ``then(url)``."""

    def run_once(served: FastAPI, settings: ServerSettings) -> None:
        with serve(served) as url:
            then(url)

    monkeypatch.setattr(http_server, "run", run_once)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


def test_metrics_count_requests_by_route_and_read_the_job_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    with Memory(db) as mem:  # a job whose worker died: another worker takes its lease over
        mem.add("The spare key is under the blue flower pot.", space="alice")
        queue = JobQueue(mem.store.jobs)
        queue.enqueue("alice", "consolidate", None, "ep-1..ep-1", "d1", {}, T0)
        queue.enqueue("alice", "consolidate", None, "ep-2..ep-2", "d2", {}, T0)
        assert queue.claim("worker-a", 60, T0) is not None
        assert queue.claim("worker-b", 60, T1).lease_owner == "worker-b"  # the takeover
    seen: dict[str, Any] = {}

    def scrape(url: str) -> None:
        for space in ("alice", "user_bob_secret_space"):
            found = httpx.get(f"{url}/api/search", params={"space": space, "q": "spare key"})
            assert found.status_code == 200
        assert httpx.get(f"{url}/api/spaces/alice").status_code == 200
        assert httpx.get(f"{url}/no/such/path").status_code == 404
        answer = httpx.get(f"{url}/metrics")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/plain; version=")
        seen["text"] = answer.text

    _served(monkeypatch, ["serve", "--db", str(db), "--no-auto-sleep"], scrape)
    samples = _samples(seen["text"])
    search = (("method", "GET"), ("route", "/api/search"), ("status", "200"))
    assert samples[("orcamem_http_requests_total", search)] == 2
    assert samples[("orcamem_http_request_duration_seconds_count", search[:2])] == 2
    one = (("method", "GET"), ("route", "/api/spaces/{space}"), ("status", "200"))
    assert samples[("orcamem_http_requests_total", one)] == 1
    lost = (("method", "GET"), ("route", "unmatched"), ("status", "404"))
    assert samples[("orcamem_http_requests_total", lost)] == 1
    assert "alice" not in seen["text"] and "bob" not in seen["text"]  # no space in a label
    assert samples[("orcamem_jobs", (("status", "running"),))] == 1
    assert samples[("orcamem_jobs", (("status", "pending"),))] == 1
    assert samples[("orcamem_job_lease_takeovers", ())] == 1
    assert samples[("orcamem_http_requests_in_flight", ())] == 1  # the scrape itself


def test_metrics_need_a_key_when_keys_are_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    with Memory(db) as mem:
        _, secret = mem.keys.create(spaces=[], admin=True, name="scraper", now=T0)

    def scrape(url: str) -> None:
        assert httpx.get(f"{url}/metrics").status_code == 401
        keyed = httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {secret}"})
        assert keyed.status_code == 200 and "orcamem_http_requests_total" in keyed.text

    _served(monkeypatch, ["serve", "--db", str(db), "--require-keys", "--no-auto-sleep"], scrape)


@pytest.mark.parametrize(
    ("given", "kept"),
    [("trace-me-42", True), ("", False), ("has spaces in it", False), ("x" * 200, False)],
)
def test_every_answer_carries_a_request_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, kept: bool
) -> None:
    ids: list[str] = []

    def ask(url: str) -> None:
        headers = {"x-request-id": given} if given else {}
        for path in ("/healthz", "/api/search?q=anything", "/nowhere"):
            ids.append(httpx.get(f"{url}{path}", headers=headers).headers["x-request-id"])

    _served(monkeypatch, ["serve", "--db", str(tmp_path / "m.db"), "--no-auto-sleep"], ask)
    if kept:
        assert ids == [given] * 3
    else:
        assert all(i.startswith("req-") and len(i) == 20 for i in ids) and len(set(ids)) == 3


# -- a real `orcamem up` exporting spans to a loopback OTLP collector ---------------------------


def _collector() -> FastAPI:
    """A collector's OTLP/HTTP traces endpoint, keeping every export request it gets."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    collector = FastAPI()
    collector.state.spans = []

    @collector.post("/v1/traces")
    async def traces(request: Request) -> Response:
        export = ExportTraceServiceRequest.FromString(await request.body())
        for resource in export.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}
            for scope in resource.scope_spans:
                for span in scope.spans:
                    collector.state.spans.append(
                        {
                            "name": span.name,
                            "service": service.get("service.name"),
                            "id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "trace": span.trace_id.hex(),
                            "attributes": {a.key: a.value for a in span.attributes},
                        }
                    )
        body = ExportTraceServiceResponse().SerializeToString()
        return Response(body, media_type="application/x-protobuf")

    return collector


def _chat_model() -> FastAPI:
    model = FastAPI()

    @model.post("/v1/chat/completions")
    def chat() -> dict:
        message = {"role": "assistant", "content": "Noted: blue flower pot."}
        return {"id": "c1", "object": "chat.completion", "choices": [{"message": message}]}

    @model.get("/v1/models")
    def models() -> dict:
        return {"data": [{"id": "tiny"}]}

    return model


@contextmanager
def _orcamem(args: list[str], **env: str) -> Iterator[tuple[str, subprocess.Popen]]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "orcamem", *args, "--port", str(port)],
        env={**os.environ, **child_env(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a guard against a hang, not a timing
    try:
        while True:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "orcamem did not answer /healthz"
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()


def test_up_exports_spans_for_ingest_recall_sleep_and_proxy_and_logs_json_lines(
    tmp_path: Path,
) -> None:
    collector = _collector()
    with serve(collector) as traces, serve(_chat_model()) as model:
        args = ["up", "--db", str(tmp_path / "m.db"), "--no-browser", "--no-auto-sleep"]
        args += ["--upstream", f"{model}/v1", "--model", "tiny"]
        with _orcamem(args, OTEL_EXPORTER_OTLP_ENDPOINT=traces, OTEL_SERVICE_NAME="memory-a") as (
            url,
            process,
        ):
            added = httpx.post(
                f"{url}/api/episodes", json={"text": "The spare key is under the pot."}
            )
            assert added.status_code == 201
            found = httpx.get(
                f"{url}/api/search", params={"q": "spare key"}, headers={"x-request-id": "trace-42"}
            )
            assert found.status_code == 200 and found.json()["hits"]
            assert httpx.post(f"{url}/api/sleep", json={}).status_code == 200
            chat = httpx.post(
                f"{url}/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "Where is the spare key?"}]},
            )
            assert chat.status_code == 200, chat.text
            process.terminate()  # the stop flushes the spans still batched
            _, stderr = process.communicate(timeout=60)
        assert process.returncode in (0, -signal.SIGTERM), stderr  # uvicorn re-raises it
        spans = collector.state.spans

    names = {span["name"] for span in spans}
    assert {"orcamem.ingest", "orcamem.recall", "orcamem.sleep", "orcamem.proxy"} <= names
    assert {span["service"] for span in spans} == {"memory-a"}
    proxy = next(s for s in spans if s["name"] == "orcamem.proxy")
    children = {s["name"] for s in spans if s["parent"] == proxy["id"]}
    assert {"orcamem.recall", "orcamem.ingest"} <= children  # recalled, then the turn recorded
    recall = next(s for s in spans if s["name"] == "orcamem.recall" and s["parent"] != proxy["id"])
    assert recall["attributes"]["orcamem.space"].string_value == "default"
    assert recall["attributes"]["orcamem.hits"].int_value >= 1
    assert "exporting spans to" in stderr
    for span in spans:  # no span carries what was asked or said (FastAPI's carried url.query)
        assert "url.query" not in span["attributes"], span
        assert "spare" not in str(span["attributes"]), span

    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    request = next(line for line in lines if line.get("request_id") == "trace-42")
    assert request["logger"] == "orcamem.http" and request["route"] == "/api/search"
    assert request["status"] == 200 and request["ms"] >= 0 and request["level"] == "info"
    assert {line["route"] for line in lines if line.get("logger") == "orcamem.http"} >= {
        "/api/episodes",
        "/api/sleep",
        "/v1/chat/completions",
    }


def test_without_an_endpoint_nothing_is_installed_and_spans_cost_nothing(tmp_path: Path) -> None:
    """Spans stay the API's no-ops: no SDK imported, no provider set, nothing sent."""
    code = (
        "import sys\n"
        "from opentelemetry import trace\n"
        "from orcamem import Memory\n"
        "from orcamem._kernel import trace as spans\n"
        "assert spans.configure() is None\n"
        f"mem = Memory({str(tmp_path / 'm.db')!r})\n"
        "mem.add('The spare key is under the pot.')\n"
        "assert mem.search('spare key').hits\n"
        "mem.sleep()\n"
        "assert type(trace.get_tracer_provider()).__name__ == 'ProxyTracerProvider'\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry.sdk')]\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **child_env()},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_an_endpoint_without_the_exporter_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_import = builtins.__import__

    def without_exporter(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("opentelemetry.exporter"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    served: list[FastAPI] = []
    monkeypatch.setattr(http_server, "run", lambda app, settings: served.append(app))
    monkeypatch.setattr(builtins, "__import__", without_exporter)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    db = tmp_path / "never.db"
    result = CliRunner().invoke(app, ["serve", "--db", str(db)])
    assert not served  # refused before serving
    assert result.exit_code == 2
    said = " ".join(result.stderr.split())
    assert "http://127.0.0.1:4318/v1/traces" in said and "pip install 'orcamem[otel]'" in said
    assert not db.exists()


def test_the_otlp_endpoint_follows_opentelemetrys_rule() -> None:
    from orcamem._kernel import env

    assert env.otlp_endpoint({}) is None
    assert env.otlp_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == (
        "http://c:4318/v1/traces"
    )
    both = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9999/custom",
    }
    assert env.otlp_endpoint(both) == "http://t:9999/custom"  # the traces one, as it is
    assert env.otlp_service({}) == "orcamem"
    assert env.otlp_service({"OTEL_SERVICE_NAME": "memory-b"}) == "memory-b"

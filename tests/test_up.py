"""`orcamem up`: all parts on one app, the upstream's web UI passed through, the 503 without
an upstream, settings that refuse an unsafe bind, and a short bounded load run."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient

from orcamem import InvalidInputError, Memory
from orcamem._kernel import llm
from orcamem._kernel.http import async_client
from orcamem.bench.load import load_test
from orcamem.interfaces.http import ui
from orcamem.interfaces.http.server import build_app
from orcamem.interfaces.http.settings import ServerSettings
from servers import LOCAL_BASE, serve


@contextmanager
def model_server_with_ui(seen: list[tuple[str, str, bytes]] | None = None) -> Iterator[str]:
    """A llama.cpp-like server: its web UI's files, its UI's own API (``POST /completion``,
    and any method on ``/slots``) and an OpenAI chat endpoint; ``seen`` records the calls."""
    ui = FastAPI()
    calls = seen if seen is not None else []

    @ui.get("/", response_class=HTMLResponse)
    def index() -> str:
        return "<html><body>llama.cpp web UI</body></html>"

    @ui.get("/assets/app.js")
    def script() -> HTMLResponse:
        return HTMLResponse("console.log('ui')", media_type="application/javascript")

    @ui.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    async def api(path: str, request: Request) -> dict:
        calls.append((request.method, f"/{path}", await request.body()))
        if path.endswith("chat/completions"):
            return {"choices": [{"message": {"role": "assistant", "content": "Hello!"}}]}
        return {"method": request.method, "path": f"/{path}", "query": str(request.query_params)}

    with serve(ui) as url:
        yield url


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_up_serves_api_proxy_mcp_and_the_upstream_ui(tmp_path: Path) -> None:
    with model_server_with_ui() as upstream, Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(upstream=f"{upstream}/v1", model="m"))
        with TestClient(app, base_url=LOCAL_BASE) as client:
            page = client.get("/")
            assert page.status_code == 200 and "llama.cpp web UI" in page.text
            assert client.get("/assets/app.js").text == "console.log('ui')"
            assert client.get("/api/stats").status_code == 200
            assert client.get("/healthz").json()["ok"] is True
            paths = set(app.openapi()["paths"]) | {getattr(r, "path", "") for r in app.routes}
            assert {"/mcp", "/api/episodes"} <= paths
            models = client.get("/v1/models")  # the proxy, not the UI catch-all
            assert models.status_code in (200, 404, 502) and "llama.cpp" not in models.text


def test_the_ui_pass_through_keeps_one_client_while_the_app_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[httpx.AsyncClient] = []

    def counted(**options: Any) -> httpx.AsyncClient:
        made.append(async_client(**options))
        return made[-1]

    monkeypatch.setattr(ui, "async_client", counted)
    with model_server_with_ui() as upstream, Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(upstream=f"{upstream}/v1", model="m"))
        with TestClient(app, base_url=LOCAL_BASE) as client:
            for _ in range(3):
                assert client.get("/assets/app.js").status_code == 200
            assert len(made) == 1 and not made[0].is_closed
        assert made[0].is_closed  # closed on shutdown


def test_up_without_upstream_still_serves_and_says_how_to_name_one(tmp_path: Path) -> None:
    with (
        Memory(tmp_path / "m.db") as mem,
        TestClient(build_app(mem, ServerSettings()), base_url=LOCAL_BASE) as client,
    ):
        assert client.get("/").json()["api"] == "/docs"
        reply = client.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]}
        )
        assert reply.status_code == 503
        assert "orcamem up --upstream" in reply.json()["error"]["message"]
        assert client.post("/api/episodes", json={"text": "still works"}).status_code == 201


def test_binding_beyond_loopback_requires_keys() -> None:
    with pytest.raises(InvalidInputError, match="orcamem keys create"):
        ServerSettings(host="0.0.0.0")
    assert ServerSettings(host="0.0.0.0", require_keys=True).require_keys
    assert ServerSettings(host="::1").host == "::1"
    with pytest.raises(InvalidInputError, match="http"):
        ServerSettings(upstream="ftp://nowhere")


def test_unreachable_ui_upstream_is_a_502(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(upstream="http://127.0.0.1:9/v1"))
        with TestClient(app, base_url=LOCAL_BASE) as client:
            reply = client.get("/")
    assert reply.status_code == 502 and "unreachable" in reply.json()["error"]["message"]


@pytest.mark.slow
def test_bounded_load_loses_no_acknowledged_write() -> None:
    result = load_test(clients=6, seconds=2.0, spaces=2, preload=50)
    assert result["errors"] == 0, result["ops"]
    assert result["missing_acknowledged"] == 0
    # however busy the machine, each of the 6 clients made one request of each kind
    assert all(result["ops"][op]["count"] >= 6 for op in ("add", "search", "proxy"))
    assert result["throughput_rps"] > 0


@pytest.mark.slow
def test_two_replicas_on_one_postgres_lose_no_acknowledged_write(pg_url: str) -> None:
    """Driven by request counts, not the clock: 4 clients x 12 requests, round-robin over two
    replicas; every acknowledged add is listed by both replicas' REST API."""
    result = load_test(clients=4, requests=12, spaces=2, preload=20, db=pg_url, replicas=2)
    assert result["errors"] == 0, result["ops"]
    assert (result["replicas"], result["engine"]) == (2, "postgresql")
    assert result["requests"] == 4 * 12 == sum(op["count"] for op in result["ops"].values())
    served = result["per_replica"]
    assert [r["requests"] for r in served] == [2 * 12, 2 * 12]  # clients 0, 2 and 1, 3
    assert len({r["base"] for r in served}) == 2
    assert result["ops"]["add"]["count"] >= 4  # each client's first request is an add
    assert [r["missing_acknowledged"] for r in served] == [0, 0]
    with Memory.connect(pg_url) as left:  # the run cleans up the spaces it made
        assert not [s for s in left.spaces() if s.startswith("load-")]


@pytest.mark.slow
def test_bench_load_runs_each_client_count_in_one_invocation() -> None:
    from typer.testing import CliRunner

    from orcamem.interfaces.cli.main import app

    args = ["bench", "load", "--clients", "1", "3", "--seconds", "1", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["clients"]
    assert list(runs) == ["1", "3"] and [run["clients"] for run in runs.values()] == [1, 3]
    assert all(run["missing_acknowledged"] == 0 and run["errors"] == 0 for run in runs.values())


def test_a_bench_child_that_logs_a_line_a_request_keeps_serving() -> None:
    """The load bench's server logs every request to stderr: 300 requests write ~160 KiB,
    more than a pipe holds, and a child blocked on a full pipe stops answering."""
    from orcamem.bench.load import _free_port, _process

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    with _process(server, base), httpx.Client(base_url=base, timeout=5) as http:
        codes = {http.get("/" + "x" * 500).status_code for _ in range(300)}
    assert codes == {404}


def _serve_once(monkeypatch: pytest.MonkeyPatch, args: list[str], then: Any) -> tuple[int, str]:
    """``orcamem <args>`` through the real CLI, with ``run`` replaced by a real uvicorn server
    that calls ``then(base_url)`` and stops (a restart is two calls on one ``ORCA_HOME``)."""
    from typer.testing import CliRunner

    from orcamem.interfaces.cli.main import app
    from orcamem.interfaces.http import server as http_server

    def run_once(served: FastAPI, settings: ServerSettings) -> None:
        with serve(served) as url:
            then(url)

    monkeypatch.setattr(http_server, "run", run_once)
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def _write_profiles(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "profiles.json").write_text('[{"name": "alice", "tools": ["@memory"]}]')


@pytest.mark.parametrize("command", ["serve", "up"])
def test_a_memory_acknowledged_under_serve_survives_a_restart(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11 item 5: with no bucket set, a 201 is durable ($ORCA_HOME/bank), not RAM."""
    home = Path(os.environ["ORCA_HOME"])
    _write_profiles(home)
    args = [command, "--db", str(tmp_path / "m.db")] + (["--no-browser"] if command == "up" else [])
    saved: dict[str, Any] = {}

    def save(url: str) -> None:
        response = httpx.post(
            f"{url}/api/profiles/alice/memories", json={"content": "Prefers metric units."}
        )
        assert response.status_code == 201, response.text
        saved.update(response.json())

    def find(url: str) -> None:
        response = httpx.get(f"{url}/api/profiles/alice/memories/{saved['id']}")
        assert response.status_code == 200, response.text
        assert response.json()["processedContent"] == "Prefers metric units."

    code, output = _serve_once(monkeypatch, args, save)
    assert code == 0 and f"memory bank: file://{home / 'bank'} (durable)" in output
    assert (home / "bank").is_dir()
    assert _serve_once(monkeypatch, args, find)[0] == 0


def test_bank_memory_is_in_memory_only_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["ORCA_HOME"])
    _write_profiles(home)
    args = ["serve", "--db", str(tmp_path / "m.db"), "--bank", "memory"]
    ids: list[str] = []

    def save(url: str) -> None:
        response = httpx.post(f"{url}/api/profiles/alice/memories", json={"content": "x"})
        assert response.status_code == 201
        ids.append(response.json()["id"])

    def gone(url: str) -> None:
        assert httpx.get(f"{url}/api/profiles/alice/memories/{ids[0]}").status_code == 404

    code, output = _serve_once(monkeypatch, args, save)
    assert code == 0 and "memory bank: memory (in memory only, lost at exit)" in output
    assert not (home / "bank").exists()
    assert _serve_once(monkeypatch, args, gone)[0] == 0


@pytest.mark.parametrize("variable", ["INTERNAL_S3_BUCKET", "S3_BUCKET"])
def test_an_unreachable_bucket_is_a_one_line_error_naming_the_variable(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    prefix = variable.removesuffix("BUCKET")
    monkeypatch.setenv(variable, "orca-internal")
    monkeypatch.setenv(f"{prefix}ENDPOINT", f"http://127.0.0.1:{port}")
    started: list[str] = []
    code, output = _serve_once(
        monkeypatch, ["serve", "--db", str(tmp_path / "m.db")], started.append
    )
    assert code != 0 and not started
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 or all(not line.startswith(" ") for line in lines), output
    assert variable in output and f"127.0.0.1:{port}" in output


# -- the seed's `proxy --model` and `up` (issue 12 item 1) -------------------------------------


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_the_ui_pass_through_forwards_every_method_with_its_body(
    method: str, tmp_path: Path
) -> None:
    seen: list[tuple[str, str, bytes]] = []
    with model_server_with_ui(seen) as upstream, Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(upstream=f"{upstream}/v1", model="m"))
        with TestClient(app, base_url=LOCAL_BASE) as client:
            reply = client.request(method, "/completion?n=1", content=b'{"prompt": "Hi"}')
            assert reply.status_code == 200
            assert reply.json() == {"method": method, "path": "/completion", "query": "n=1"}
            own = client.request(method, "/api/stats")  # orcamem's own path: never forwarded
            assert own.status_code == 405 and "GET" in own.headers["allow"]
            assert "use GET" in own.json()["error"]["message"]
    assert seen == [(method, "/completion", b'{"prompt": "Hi"}')]


def test_llama_cpps_ui_posts_completion_through_the_key_check(tmp_path: Path) -> None:
    seen: list[tuple[str, str, bytes]] = []
    with model_server_with_ui(seen) as upstream, Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(upstream=f"{upstream}/v1", require_keys=True))
        _, key = mem.keys.create(spaces=["default"], admin=False, name="ui", now="2026-01-01")
        with TestClient(app, base_url=LOCAL_BASE) as client:
            assert client.post("/completion", json={"prompt": "Hi"}).status_code == 401
            assert seen == []  # no key, nothing forwarded
            reply = client.post("/completion", json={"prompt": "Hi"}, headers={"x-api-key": key})
            assert reply.status_code == 200 and reply.json()["path"] == "/completion"
    assert [call[:2] for call in seen] == [("POST", "/completion")]


def _run_until(opened: threading.Event) -> Any:
    """A stand-in for ``server.run``: a real uvicorn on the settings' port, stopped once
    ``opened`` is set (at most 30 s)."""

    def run(served: FastAPI, settings: ServerSettings) -> None:
        with serve(served, port=settings.port):
            opened.wait(30)

    return run


def test_up_opens_the_browser_only_once_the_server_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from orcamem.interfaces.cli import server as cli_server
    from orcamem.interfaces.cli.main import app
    from orcamem.interfaces.http import server as http_server

    port = _free_port()
    opened = threading.Event()
    calls: list[tuple[str, int | None]] = []

    def record(url: str) -> bool:
        try:  # was the server answering when the browser was sent to it?
            status: int | None = httpx.get(f"http://127.0.0.1:{port}/healthz").status_code
        except httpx.HTTPError:
            status = None
        calls.append((url, status))
        opened.set()
        return True

    monkeypatch.setattr(cli_server, "open_browser", record)
    monkeypatch.setattr(http_server, "run", _run_until(opened))
    result = CliRunner().invoke(app, ["up", "--db", str(tmp_path / "m.db"), "--port", str(port)])
    assert result.exit_code == 0, result.output
    assert calls == [(f"http://127.0.0.1:{port}/#/", 200)]


@pytest.mark.parametrize("command", ["proxy", "up"])
def test_model_alone_forwards_to_a_local_ollama(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``orcamem proxy --model llama3.2:3b`` (the seed's "with Ollama"): the upstream is
    ``OLLAMA_URL`` (a loopback fake here) and the chat goes through memory to it."""
    seen: list[tuple[str, str, bytes]] = []
    with model_server_with_ui(seen) as ollama:
        monkeypatch.setattr(llm, "OLLAMA_URL", f"{ollama}/v1")
        chat = {"messages": [{"role": "user", "content": "Hi, I live in Pune."}]}
        answers: list[httpx.Response] = []
        args = [command, "--model", "llama3.2:3b", "--db", str(tmp_path / "m.db")]
        code, output = _serve_once(
            monkeypatch,
            args + (["--no-browser"] if command == "up" else []),
            lambda url: answers.append(httpx.post(f"{url}/v1/chat/completions", json=chat)),
        )
    assert code == 0, output
    assert f"--model without --upstream: forwarding chat to {ollama}/v1" in " ".join(output.split())
    assert "no model server answers" not in output
    assert answers[0].status_code == 200, answers[0].text
    assert answers[0].json()["choices"][0]["message"]["content"] == "Hello!"
    assert seen[0][:2] == ("GET", "/v1/models")  # the check at start: it answers
    method, path, body = seen[1]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert json.loads(body)["model"] == "llama3.2:3b"


def test_an_ollama_that_is_not_running_is_one_warning_and_a_json_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    monkeypatch.setattr(llm, "OLLAMA_URL", dead)
    answers: list[httpx.Response] = []
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    code, output = _serve_once(
        monkeypatch,
        ["proxy", "--model", "llama3.2:3b", "--db", str(tmp_path / "m.db")],
        lambda url: answers.append(httpx.post(f"{url}/v1/chat/completions", json=chat)),
    )
    assert code == 0, output
    warnings = [line for line in output.splitlines() if "no model server answers" in line]
    assert len(warnings) == 1 and dead in warnings[0] and "--upstream URL" in warnings[0]
    assert answers[0].status_code == 502
    assert dead in answers[0].json()["error"]["message"]


def test_the_seeds_llama_cpp_proxy_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`orcamem proxy --upstream http://127.0.0.1:9931 --model "Qwen/…"`: an upstream given
    without /v1, as the seed writes it for llama-server, is checked at start (`GET /models`)
    and gets the chat with the model name."""
    seen: list[tuple[str, str, bytes]] = []
    model = "Qwen/Qwen2.5-3B-Instruct-GGUF:Q4_K_M"
    answers: list[httpx.Response] = []
    chat = {"messages": [{"role": "user", "content": "What is my job?"}]}
    with model_server_with_ui(seen) as server:
        code, output = _serve_once(
            monkeypatch,
            ["proxy", "--upstream", server, "--model", model, "--db", str(tmp_path / "m.db")],
            lambda url: answers.append(httpx.post(f"{url}/v1/chat/completions", json=chat)),
        )
    assert code == 0 and "no model server answers" not in output, output
    assert answers[0].status_code == 200 and "Hello!" in answers[0].text
    assert seen[0][:2] == ("GET", "/models")  # the check at start found it
    posted = [(path, json.loads(body)) for method, path, body in seen if method == "POST"]
    assert posted[0][0] == "/chat/completions" and posted[0][1]["model"] == model


@pytest.mark.parametrize(
    ("args", "auto", "model"),
    [
        (["up", "--no-browser"], True, None),
        (["serve"], True, None),
        (["proxy", "--model", "llama3.2:3b"], True, "llama3.2:3b"),
        (["proxy", "--model", "llama3.2:3b", "--no-auto-sleep"], False, None),
        (["up", "--no-browser", "--no-auto-sleep"], False, None),
        (["serve", "--no-auto-sleep"], False, None),
    ],
)
def test_servers_consolidate_in_the_background_unless_told_not_to(
    args: list[str],
    auto: bool,
    model: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``up``/``serve``/``proxy`` run the background sleeper (the rules, or the ``--model``);
    nothing waits for it here: the served Memory is inspected, not the clock."""
    from typer.testing import CliRunner

    from orcamem.interfaces.cli.main import app
    from orcamem.interfaces.http import server as http_server

    seen: dict[str, Any] = {}

    def inspect(served: FastAPI, settings: ServerSettings) -> None:
        memory = served.state.memory
        seen["auto"] = memory.config.sleep.auto
        seen["model"] = memory.model
        seen["sleeper"] = any(t.name == "orcamem-sleeper" for t in threading.enumerate())

    monkeypatch.setattr(llm, "OLLAMA_URL", f"http://127.0.0.1:{_free_port()}/v1")
    monkeypatch.setattr(http_server, "run", inspect)
    result = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 0, result.output
    assert seen["auto"] is auto
    assert seen["sleeper"] or not auto
    if model is None:
        assert seen["model"] is None
    else:
        assert model in repr(seen["model"]) and llm.OLLAMA_URL in repr(seen["model"])
    said = " ".join(result.output.split())
    assert ("consolidating in the background" in said) is auto
    assert (f"(model {model})" in said) is (model is not None)

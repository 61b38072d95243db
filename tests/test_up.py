"""`orcamem up`: all parts on one app, the upstream's web UI passed through, the 503 without
an upstream, settings that refuse an unsafe bind, and a short bounded load run."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient

from orcamem import InvalidInputError, Memory
from orcamem._kernel.http import async_client
from orcamem.bench.load import load_test
from orcamem.interfaces.http import ui
from orcamem.interfaces.http.server import build_app
from orcamem.interfaces.http.settings import ServerSettings
from servers import LOCAL_BASE, serve


@contextmanager
def model_server_with_ui() -> Iterator[str]:
    ui = FastAPI()

    @ui.get("/", response_class=HTMLResponse)
    def index() -> str:
        return "<html><body>llama.cpp web UI</body></html>"

    @ui.get("/assets/app.js")
    def script() -> HTMLResponse:
        return HTMLResponse("console.log('ui')", media_type="application/javascript")

    with serve(ui) as url:
        yield url


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
    assert result["ops"]["add"]["count"] > 0 and result["ops"]["proxy"]["count"] > 0
    assert result["throughput_rps"] > 0


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

"""Issue 11 (items 10, 11): one authentication choke point for every route of `orcamem up`,
the UI pass-through keeps orcamem's key to itself, and Host/Origin checks refuse DNS
rebinding."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from orcamem import InvalidInputError, Memory
from orcamem.interfaces.http.guard import PUBLIC_PATHS, PUBLIC_STATE, host_allowed
from orcamem.interfaces.http.server import PARTS, build_app
from orcamem.interfaces.http.settings import ServerSettings
from servers import LOCAL_BASE, serve

NOW = "2026-01-01T00:00:00+00:00"


@contextmanager
def recording_upstream() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A model server with llama.cpp-style `/slots` and `/props`, recording request headers."""
    seen: list[dict[str, str]] = []
    upstream = FastAPI()

    @upstream.get("/{path:path}")
    def anything(path: str, request: Request) -> dict:
        seen.append(dict(request.headers))
        return {"upstream": path}

    with serve(upstream) as url:
        yield url, seen


def _routes(routes: list, prefix: str = "") -> Iterator[tuple[str, set[str]]]:
    """Every (path, methods) of an app, included routers flattened."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes, prefix + route.include_context.prefix)
            continue
        path = getattr(route, "path", None)
        assert path, f"a route without a path: {route!r}"
        yield prefix + path, set(getattr(route, "methods", None) or {"GET", "POST"})


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def test_every_route_of_up_needs_a_key_under_require_keys(tmp_path: Path) -> None:
    with recording_upstream() as (upstream, seen), Memory(tmp_path / "m.db") as mem:
        settings = ServerSettings(upstream=f"{upstream}/v1", model="m", require_keys=True)
        app = build_app(mem, settings, PARTS)
        probes: list[tuple[str, str]] = []
        for path, methods in _routes(app.routes):
            probes += [(method, _concrete(path)) for method in sorted(methods)]
        probes += [("GET", "/slots"), ("GET", "/props"), ("HEAD", "/props"), ("GET", "/")]
        assert ("GET", "/x") in probes  # the UI catch-all is among them
        # the static pages the parts declare public (their files: test_ui_api.py)
        pages, prefixes = getattr(app.state, PUBLIC_STATE)
        assert (pages, set(prefixes)) == ({"/ui", "/ui/"}, {"/docs/assets/", "/ui/assets/"})
        with TestClient(app, base_url=LOCAL_BASE) as client:
            open_routes = []
            for method, path in probes:
                reply = client.request(method, path)
                if path in PUBLIC_PATHS or path in pages:
                    assert reply.status_code == 200, (method, path)
                elif reply.status_code != 401:
                    open_routes.append((method, path, reply.status_code))
                elif method != "HEAD":
                    assert reply.json()["error"]["type"] == "AuthError", (method, path)
            assert open_routes == [], f"reachable without a key: {open_routes}"
            assert client.get("/props", headers={"x-api-key": "wrong"}).status_code == 401
        assert seen == []  # nothing reached the upstream without a key
    assert {"/healthz", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"} == PUBLIC_PATHS


def test_the_ui_pass_through_strips_the_orcamem_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with recording_upstream() as (upstream, seen), Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(upstream=f"{upstream}/v1", require_keys=True))
        _, key = mem.keys.create(spaces=["a"], admin=False, name="a", now=NOW)
        with TestClient(app, base_url=LOCAL_BASE) as client:
            bearer = client.get("/props", headers={"Authorization": f"Bearer {key}"})
            assert bearer.json() == {"upstream": "props"}
            via_header = client.get("/slots", headers={"x-api-key": key, "x-other": "kept"})
            assert via_header.json() == {"upstream": "slots"}
            monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream")
            assert client.get("/props", headers={"x-api-key": key}).status_code == 200
        assert len(seen) == 3
        for headers in seen:
            assert key not in " ".join(headers.values())
            assert "x-api-key" not in headers
        assert "authorization" not in seen[0] and seen[1]["x-other"] == "kept"
        assert seen[2]["authorization"] == "Bearer sk-upstream"


def test_without_keys_the_ui_pass_through_forwards_headers_as_before(tmp_path: Path) -> None:
    with recording_upstream() as (upstream, seen), Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(upstream=f"{upstream}/v1"))
        with TestClient(app, base_url=LOCAL_BASE) as client:
            assert (
                client.get("/props", headers={"Authorization": "Bearer llama"}).status_code == 200
            )
        assert seen[0]["authorization"] == "Bearer llama"


def test_a_rebound_host_is_refused_on_every_part(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(), PARTS)
        with TestClient(app, base_url=LOCAL_BASE, headers={"Host": "evil.example"}) as client:
            for method, path in [
                ("GET", "/api/export"),
                ("GET", "/api/stats"),
                ("GET", "/v1/models"),
                ("POST", "/v1/chat/completions"),
                ("POST", "/mcp"),
                ("GET", "/"),
                ("GET", "/healthz"),
            ]:
                reply = client.request(method, path)
                assert reply.status_code == 421, (method, path, reply.text)
                error = reply.json()["error"]
                assert (
                    error["type"] == "MisdirectedRequest" and "--allowed-host" in error["message"]
                )


def test_host_and_origin_on_a_real_loopback_server(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        app = build_app(mem, ServerSettings(port=0, allowed_hosts=("memory.lan",)), PARTS)
        with serve(app) as url:
            port = url.rsplit(":", 1)[1]
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", "memory.lan", "memory.lan:9"):
                assert httpx.get(f"{url}/api/stats", headers={"Host": host}).status_code == 200
            for host in (f"evil.example:{port}", "evil.example", "127.0.0.1:1", "localhost"):
                reply = httpx.get(f"{url}/api/export", headers={"Host": host})
                assert reply.status_code == 421, host
            episode = {"text": "hello"}
            for origin in ("http://evil.example", f"http://evil.example:{port}", "null"):
                reply = httpx.post(f"{url}/api/episodes", json=episode, headers={"Origin": origin})
                assert reply.status_code == 403, origin
                assert reply.json() == {
                    "error": {"type": "ForbiddenOrigin", "message": reply.json()["error"]["message"],
                              "status": 403}
                }  # fmt: skip
                assert (
                    httpx.delete(f"{url}/api/spaces/x", headers={"Origin": origin}).status_code
                    == 403
                )
            for origin in (
                f"http://127.0.0.1:{port}",
                f"http://localhost:{port}",
                "https://memory.lan",
            ):
                reply = httpx.post(f"{url}/api/episodes", json=episode, headers={"Origin": origin})
                assert reply.status_code == 201, origin
            # a foreign Origin on a read is the browser's same-origin policy's business
            assert (
                httpx.get(f"{url}/api/stats", headers={"Origin": "http://evil.example"}).status_code
                == 200
            )
            assert httpx.post(f"{url}/api/episodes", json=episode).status_code == 201  # no Origin
            # but a browser's cross-site GET carries no Origin: another site's <img src> of
            # /api/context recalled and marked the memories read (access_count 0 -> 5)
            mem.remember("Prefers tea", space="default")
            cross = {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}
            for _ in range(3):
                reply = httpx.get(f"{url}/api/context", params={"q": "tea"}, headers=cross)
                assert (
                    reply.status_code == 403 and reply.json()["error"]["type"] == "ForbiddenOrigin"
                )
            [tea] = mem.facts()
            assert tea.access_count == 0
            same = {"Sec-Fetch-Site": "same-origin"}
            assert httpx.get(f"{url}/api/stats", headers=same).status_code == 200


def test_host_allowed_rules() -> None:
    loopback = ServerSettings(port=8080)
    assert host_allowed("127.0.0.1:8080", loopback, None)
    assert host_allowed("[::1]:8080", loopback, None)
    assert host_allowed("LOCALHOST:8080", loopback, None)
    assert not host_allowed("127.0.0.1:8081", loopback, None)
    assert not host_allowed("127.0.0.1", loopback, None)  # port 80 implied
    assert host_allowed("127.0.0.1", ServerSettings(port=80), None)
    assert not host_allowed("", loopback, None)
    assert not host_allowed("127.0.0.1:8080:1", loopback, None)
    assert not host_allowed("evil.example:8080", loopback, None)
    lan = ServerSettings(host="192.168.1.5", port=8080, require_keys=True)
    assert host_allowed("192.168.1.5:8080", lan, None)
    assert not host_allowed("localhost:8080", lan, None)
    wildcard = ServerSettings(host="0.0.0.0", port=8080, require_keys=True)
    assert host_allowed("10.0.0.7:8080", wildcard, ("10.0.0.7", 8080))  # the accepting address
    assert not host_allowed("0.0.0.0:8080", wildcard, None)
    named = ServerSettings(allowed_hosts=("mem.lan", "pinned.lan:443"))
    assert host_allowed("mem.lan", named, None) and host_allowed("MEM.lan:1234", named, None)
    assert host_allowed("pinned.lan:443", named, None)
    assert not host_allowed("pinned.lan:444", named, None)
    for bad in ("http://mem.lan", "*.lan", "", "a b"):
        with pytest.raises(InvalidInputError, match="allowed host"):
            ServerSettings(allowed_hosts=(bad,))


@pytest.mark.parametrize(
    "command", [["up", "--no-browser"], ["serve"], ["proxy"], ["mcp", "--http"]]
)
def test_allowed_host_reaches_the_settings(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from orcamem.interfaces.cli.main import app as cli
    from orcamem.interfaces.http import server

    ran: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", lambda _app, settings: ran.append(settings))
    args = [*command, "--db", str(tmp_path / "m.db"), "--allowed-host", "a.lan"]
    result = CliRunner().invoke(cli, [*args, "--allowed-host", "b.lan:8443"])
    assert result.exit_code == 0, result.output
    assert ran[0].allowed_hosts == ("a.lan", "b.lan:8443")

"""What the dashboard stands on, without a browser: deleting a whole space (SDK, REST, CLI,
MCP), the audit log and "why this block" routes, /docs served from the package, and the
dashboard's public files that never open a way around the key check."""

from __future__ import annotations

import http.client
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from typer.testing import CliRunner

from orcamem import Config, EmbedderMismatchError, Memory, NotFoundError
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.config import PackConfig
from orcamem._kernel.embed import make_embedder
from orcamem._kernel.text import wordpiece_tokens
from orcamem.interfaces.cli.main import app as cli
from orcamem.interfaces.http import ServerSettings
from orcamem.interfaces.http.server import build_app
from orcamem.interfaces.mcp.server import DELETE_SPACE_TOOL, TOOLS
from servers import LOCAL_BASE, child_env, serve

NOW = "2026-11-02T09:00:00Z"
ROOT = Path(__file__).resolve().parents[1]


def seed(mem: Memory) -> None:
    """Alice moved (a superseded state after sleep), has a rule and an audit entry; Bob has
    a memory of his own."""
    mem.observe("user", "I live in Berlin.", session_id="s1", space="alice")
    mem.observe("assistant", "Noted: Berlin.", session_id="s1", space="alice")
    mem.observe("user", "I moved to Lisbon last month.", session_id="s2", space="alice")
    mem.sleep(space="alice")
    mem.forbid("Never suggest peanut recipes.", space="alice")
    mem.observe("user", "Bob prefers tea over coffee.", session_id="b1", space="bob")
    mem.remember("Bob's project codename is Heron.", space="bob")


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", clock=FrozenClock(NOW)) as mem:
        seed(mem)
        yield mem


def client_for(mem: Memory, **settings: Any) -> TestClient:
    settings.setdefault("workspace", str(Path(mem.store.path).parent / "workspace"))
    return TestClient(
        build_app(mem, ServerSettings(**settings), ("api", "ui")), base_url=LOCAL_BASE
    )


def export_of(mem: Memory, space: str) -> str:
    out = io.StringIO()
    mem.export(out, space=space)
    return out.getvalue()


# -- Memory.delete_space ------------------------------------------------------------------------


def test_delete_space_removes_everything_of_that_space_and_nothing_else(seeded: Memory) -> None:
    bob_before = export_of(seeded, "bob")
    gone = seeded.delete_space("alice")

    assert gone["episodes"] == 3 and gone["memories"] >= 3
    assert seeded.space_info("alice") is None
    assert "alice" not in seeded.spaces()
    assert seeded.search("Lisbon Berlin peanut", space="alice").hits == []
    assert seeded.recall("where do I live?", space="alice") == ""
    assert seeded.facts(space="alice", include_history=True) == []
    assert seeded.audit_log(space="alice") == []
    assert export_of(seeded, "bob") == bob_before  # the other space, byte for byte
    assert seeded.check().ok, seeded.check().problems  # no orphan line, vector or entity


def test_a_deleted_space_can_be_written_again_and_holds_only_the_new(seeded: Memory) -> None:
    seeded.delete_space("alice")
    seeded.observe("user", "I live in Porto.", session_id="s9", space="alice")
    texts = [hit.text for hit in seeded.search("where do I live", space="alice").hits]
    assert texts and all("Porto" in text for text in texts), texts
    assert seeded.space_info("alice").episodes == 1


def test_deleting_a_space_that_does_not_exist_says_so_and_deletes_nothing(seeded: Memory) -> None:
    with pytest.raises(NotFoundError, match="orcamem spaces"):
        seeded.delete_space("carol")
    assert sorted(seeded.spaces()) == ["alice", "bob"]


class Renamed:
    """The shipped embedder under another name: a space made with it is another embedder's."""

    def __init__(self) -> None:
        self.inner = make_embedder()
        self.id, self.dim = "test:renamed", self.inner.dim

    def embed(self, texts: Any) -> Any:
        return self.inner.embed(texts)


def test_a_space_deleted_by_another_process_is_written_anew_here(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db) as here, Memory(db) as there:
        here.observe("user", "I live in Berlin.", space="alice")
        there.delete_space("alice")  # `orcamem delete-space` while a server runs
        here.observe("user", "I live in Porto.", space="alice")  # here still thinks it exists
        here.remember("Alice likes green tea.", space="alice")
        texts = [hit.text for hit in here.search("where do I live", space="alice").hits]
        assert "I live in Berlin." not in texts and "I live in Porto." in texts
        assert there.space_info("alice").episodes == 1 and len(there.facts(space="alice")) == 1
        assert here.check().ok, here.check().problems


def test_a_stale_writer_cannot_mix_embedders_into_a_recreated_space(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db) as here, Memory(db) as there, Memory(db, embedder=Renamed()) as other:
        here.observe("user", "I live in Berlin.", space="alice")
        there.delete_space("alice")
        other.observe("user", "I live in Porto.", space="alice")
        with pytest.raises(EmbedderMismatchError, match="test:renamed"):
            here.observe("user", "I live in Rome.", space="alice")
        with pytest.raises(EmbedderMismatchError):
            here.remember("Alice likes green tea.", space="alice")
        assert there.space_info("alice").episodes == 1 and there.facts(space="alice") == []


def test_a_space_says_when_it_was_last_written(tmp_path: Path) -> None:
    clock = FrozenClock(NOW)
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        mem.observe("user", "I live in Berlin.", space="alice")
        assert mem.space_info("alice").last_activity == "2026-11-02T09:00:00.000000Z"
        clock.advance(hours=1)
        mem.remember("Alice likes green tea.", space="alice")
        assert mem.space_info("alice").last_activity == "2026-11-02T10:00:00.000000Z"
        clock.advance(hours=1)
        mem.observe("user", "I moved to Lisbon.", space="alice")
        with client_for(mem) as client:
            listed = client.get("/api/spaces").json()["spaces"]
        assert [(s["name"], s["last_activity"]) for s in listed] == [
            ("alice", "2026-11-02T11:00:00.000000Z")
        ]


# -- REST ---------------------------------------------------------------------------------------


def test_delete_space_needs_the_name_typed_again(seeded: Memory) -> None:
    with client_for(seeded) as client:
        refused = client.delete("/api/spaces/alice", params={"confirm": "alcie"})
        assert refused.status_code == 400, refused.text
        assert "nothing was deleted" in refused.json()["error"]["message"]
        assert seeded.space_info("alice") is not None
        assert client.delete("/api/spaces/alice").status_code == 422  # confirm is required

        done = client.delete("/api/spaces/alice", params={"confirm": "alice"})
        assert done.status_code == 200, done.text
        assert done.json()["space"] == "alice" and done.json()["deleted"]["episodes"] == 3
        assert [s["name"] for s in client.get("/api/spaces").json()["spaces"]] == ["bob"]
        assert (
            client.get("/api/search", params={"space": "alice", "q": "Lisbon"}).json()["hits"] == []
        )


def test_a_key_for_one_space_cannot_delete_another(seeded: Memory) -> None:
    now = "2026-11-02T09:00:00.000000Z"
    _, alice_key = seeded.keys.create(spaces=["alice"], admin=False, name="a", now=now)
    with client_for(seeded, require_keys=True) as client:
        auth = {"authorization": f"Bearer {alice_key}"}
        refused = client.delete("/api/spaces/bob", params={"confirm": "bob"}, headers=auth)
        assert refused.status_code == 403, refused.text
        assert seeded.space_info("bob") is not None
        assert client.delete("/api/spaces/alice", params={"confirm": "alice"}).status_code == 401
        assert client.get("/api/audit", params={"space": "bob"}, headers=auth).status_code == 403
        assert (
            client.get(
                "/api/explain", params={"space": "bob", "q": "tea"}, headers=auth
            ).status_code
            == 403
        )
        ok = client.delete("/api/spaces/alice", params={"confirm": "alice"}, headers=auth)
        assert ok.status_code == 200, ok.text


def test_the_audit_log_route_lists_what_consolidation_refused(seeded: Memory) -> None:
    closed = seeded.facts(space="bob")[0]
    seeded.close_memory(closed.id, space="bob", reason="the user says it is wrong")
    with client_for(seeded) as client:
        entries = client.get("/api/audit", params={"space": "bob"}).json()["entries"]
    assert [(e["reason"], e["item"]["closed"]) for e in entries] == [
        ("the user says it is wrong", closed.id)
    ]


def test_explain_shows_the_exact_block_its_items_and_its_tokens(seeded: Memory) -> None:
    query = "where do I live now?"
    with client_for(seeded) as client:
        why = client.get("/api/explain", params={"space": "alice", "q": query}).json()
        block = client.get("/api/context", params={"space": "alice", "q": query}).json()["block"]
    assert why["block"] == block and block
    assert why["tokens"] == wordpiece_tokens(block) and why["budget_tokens"] == 400
    shown = [hit["text"] for hit in why["included"]]
    assert "home city: Lisbon" in shown
    assert all(hit["breakdown"] for hit in why["included"])  # each item says why
    left_out = {hit["text"]: hit["reason"] for hit in why["cut"]}
    assert left_out.get("I live in Berlin.") == "outdated", left_out  # Lisbon is current


def test_explain_says_the_score_cut_left_an_item_out_not_the_budget(tmp_path: Path) -> None:
    """With no floor (min_block_tokens 0) only items within relative_score of the best are
    packed: the weak passage is "score_cut" with its share of the best, and the block is
    still the one /api/context injects."""
    config = Config(pack=PackConfig(min_block_tokens=0))
    with Memory(tmp_path / "m.db", clock=FrozenClock(NOW), config=config) as mem:
        mem.observe("user", "My dentist appointment moved to Friday; the trip budget is tight.")
        for city in ("Lisbon", "Porto"):
            mem.observe(
                "user",
                f"On the trip we spent a day in {city}, where the old town was full of tiled "
                "houses, narrow lanes, bakeries and a market.",
                session_id=city,
            )
        query = "How tight is the trip budget?"
        with client_for(mem) as client:
            why = client.get("/api/explain", params={"space": "default", "q": query}).json()
            block = client.get("/api/context", params={"q": query}).json()["block"]
    assert why["block"] == block and "trip budget is tight" in block
    assert (why["relative_score"], why["min_block_tokens"]) == (0.37, 0)
    assert [hit["text"][:9] for hit in why["included"]] == ["My dentis"]
    assert why["cut"], why
    for hit in why["cut"]:
        assert hit["reason"] == "score_cut", hit
        assert 0 < hit["of_best"] < 0.37
        assert hit["detail"] == (
            f"below the score cut: {hit['of_best']:.2f} of the best, the cut is 0.37"
        )
        assert hit["text"] not in block


def test_explain_is_a_preview_that_marks_nothing_accessed(seeded: Memory) -> None:
    before = {m.id: m.access_count for m in seeded.facts(space="alice")}
    with client_for(seeded) as client:
        assert client.get("/api/explain", params={"space": "alice", "q": "Lisbon"}).json()["block"]
    seeded._background.submit(lambda: None).result(timeout=10)
    assert {m.id: m.access_count for m in seeded.facts(space="alice")} == before


# -- /docs and the dashboard's files ------------------------------------------------------------


def test_docs_load_their_assets_from_the_package(mem: Memory) -> None:
    with client_for(mem, require_keys=True) as client:  # before any key is typed
        page = client.get("/docs")
        assert page.status_code == 200
        sources = [
            src for src in _attrs(page.text, ("src", "href")) if not src.startswith(("/", "#"))
        ]
        assert sources == [], sources  # nothing from a CDN
        assert "validatorUrl" in page.text and '"validatorUrl": null' in page.text
        for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"):
            got = client.get(f"/docs/assets/{asset}")
            assert got.status_code == 200 and len(got.content) > 1000, asset
        redoc = client.get("/redoc", follow_redirects=False)
        assert (redoc.status_code, redoc.headers["location"]) == (307, "/docs")


def test_the_dashboard_page_and_files_are_public_but_its_data_is_not(seeded: Memory) -> None:
    with client_for(seeded, require_keys=True, upstream="http://127.0.0.1:9/v1") as client:
        page = client.get("/ui")
        assert page.status_code == 200 and "/ui/assets/app.js" in page.text
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "connect-src 'self'" in policy
        assert client.get("/ui/assets/app.js").status_code == 200
        slash = client.get("/ui/", follow_redirects=False)
        assert (slash.status_code, slash.headers["location"]) == (307, "/ui")
        assert client.get("/api/spaces").status_code == 401
    with client_for(seeded, upstream="http://127.0.0.1:9/v1") as client:
        other = client.get("/ui/settings")  # the upstream UI's pass-through never gets /ui
        assert other.status_code == 404 and "open /ui" in other.json()["error"]["message"]


def test_a_public_prefix_reaches_the_packaged_files_only(seeded: Memory) -> None:
    """A path sent as it is (no client normalising ``..``) under a public prefix is served by
    the static files, which refuse to leave their folder: never a route, never the upstream."""
    app = build_app(
        seeded,
        ServerSettings(require_keys=True, upstream="http://127.0.0.1:9/v1"),
        ("api", "proxy", "ui"),
    )
    with serve(app) as url:
        host, port = url.removeprefix("http://").split(":")
        for prefix in ("/ui/assets", "/docs/assets"):
            for path in (f"{prefix}/../../api/spaces", f"{prefix}/%2e%2e/%2e%2e/api/spaces"):
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                conn.request("GET", path, headers={"host": f"127.0.0.1:{port}"})
                reply = conn.getresponse()
                body = reply.read().decode()
                conn.close()
                assert reply.status == 404, (path, reply.status, body)
                assert "bob" not in body and "alice" not in body


def test_the_dashboard_writes_stored_text_as_text_never_as_markup() -> None:
    scripts = sorted((ROOT / "src/orcamem/interfaces/http/dashboard/static").glob("*.js"))
    assert {"app.js", "local.js"} <= {p.name for p in scripts}  # a new page has its own file
    for path in scripts:
        script = path.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in script, (path.name, sink)


def test_the_wheel_carries_the_dashboard_files() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"interfaces/http/dashboard/static/*"' in pyproject
    static = ROOT / "src/orcamem/interfaces/http/dashboard/static"
    page = (static / "index.html").read_text()
    files = sorted(p.name for p in static.iterdir())
    assert {"app.js", "index.html", "style.css"} <= set(files)
    for name in files:  # nothing stray: every file is the page or loaded by it
        assert name == "index.html" or f'"/ui/assets/{name}"' in page, name


def _attrs(html: str, names: tuple[str, ...]) -> list[str]:
    return [m.group(2) for m in re.finditer(rf"\b({'|'.join(names)})=\"([^\"]*)\"", html)]


# -- CLI and MCP --------------------------------------------------------------------------------


def test_cli_delete_space_asks_for_the_name_and_deletes_only_on_a_match(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, clock=FrozenClock(NOW)) as mem:
        seed(mem)
    runner = CliRunner()
    wrong = runner.invoke(cli, ["delete-space", "alice", "--db", str(db)], input="bob\n")
    assert wrong.exit_code == 2 and "nothing was deleted" in wrong.output
    done = runner.invoke(cli, ["delete-space", "alice", "--db", str(db)], input="alice\n")
    assert done.exit_code == 0, done.output
    assert "deleted space 'alice': 3 episodes, 3 memories" in done.output
    missing = runner.invoke(cli, ["delete-space", "carol", "--confirm", "carol", "--db", str(db)])
    assert missing.exit_code != 0 and "no space 'carol'" in missing.output
    with Memory(db) as mem:
        assert mem.spaces() == ["bob"]


@pytest.mark.anyio
async def test_mcp_offers_delete_space_only_when_the_host_allows_it(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, clock=FrozenClock(NOW)) as mem:
        seed(mem)

    async def tools(*extra: str) -> tuple[list[str], Any]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "orcamem", "mcp", "--db", str(db), *extra],
            env=child_env(),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = sorted(t.name for t in (await session.list_tools()).tools)
            if DELETE_SPACE_TOOL not in names:
                return names, None
            wrong = await session.call_tool(
                DELETE_SPACE_TOOL, {"space": "alice", "confirm": "default"}
            )
            right = await session.call_tool(
                DELETE_SPACE_TOOL, {"space": "alice", "confirm": "alice"}
            )
            return names, (wrong, right)

    names, calls = await tools()
    assert names == sorted(TOOLS) and calls is None  # seed 003: exactly the five
    names, (wrong, right) = await tools("--allow-delete-space")
    assert names == sorted([*TOOLS, DELETE_SPACE_TOOL])
    assert wrong.is_error and "nothing was deleted" in wrong.content[0].text
    assert not right.is_error and right.structured_content["deleted"]["episodes"] == 3
    with Memory(db) as mem:
        assert mem.spaces() == ["bob"]


def test_mcp_over_http_refuses_the_stdio_only_flag(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orcamem", "mcp", "--http", "--allow-delete-space",
         "--db", str(tmp_path / "m.db")],
        capture_output=True, text=True, env={**child_env(), "PATH": "/usr/bin:/bin"}, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "DELETE /api/spaces/NAME?confirm=NAME" in done.stderr


# -- the memory settings panel's routes and `orcamem doctor --set` --------------------------------


def _rows(report: dict) -> dict[str, tuple[Any, str]]:
    return {f["key"]: (f["value"], f["badge"]) for f in report["settings"]["fields"]}


def test_set_and_clear_a_setting_over_rest(seeded: Memory, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    config = workspace / "config.json"
    now = "2026-11-02T09:00:00.000000Z"
    _, alice_key = seeded.keys.create(spaces=["alice"], admin=False, name="a", now=now)
    _, admin_key = seeded.keys.create(spaces=[], admin=True, name="ops", now=now)
    with client_for(seeded, workspace=str(workspace), require_keys=True) as client:
        client.app.state.capability_instance_config = tmp_path / "no-instance.json"
        admin = {"authorization": f"Bearer {admin_key}"}
        missing = client.put("/api/capability/settings/topK", json={"value": 8}, headers=admin)
        assert missing.status_code == 503 and "create it" in missing.json()["error"]["message"]
        workspace.mkdir()
        assert _rows(client.get("/api/capability", headers=admin).json())["topK"] == (
            5, "Instance default"
        )  # fmt: skip
        done = client.put("/api/capability/settings/topK", json={"value": 8}, headers=admin)
        assert done.status_code == 200, done.text
        assert _rows(done.json())["topK"] == (8, "Workspace override")
        assert json.loads(config.read_text())["defaults"]["memory"] == {"topK": 8}

        written = config.read_bytes()
        bad = client.put("/api/capability/settings/topK", json={"value": 80}, headers=admin)
        assert bad.status_code == 400
        assert "topK=80: must be a whole number from 1 to 50" in bad.json()["error"]["message"]
        wrong_type = client.put(
            "/api/capability/settings/enabled", json={"value": "yes"}, headers=admin
        )
        assert wrong_type.status_code == 400 and "true or false" in wrong_type.text
        assert config.read_bytes() == written  # a refused value writes nothing
        unknown = client.put("/api/capability/settings/topk", json={"value": 8}, headers=admin)
        assert unknown.status_code == 422

        space_key = {"authorization": f"Bearer {alice_key}"}
        refused = client.put("/api/capability/settings/topK", json={"value": 9}, headers=space_key)
        assert refused.status_code == 403 and config.read_bytes() == written

        cleared = client.delete("/api/capability/settings/topK", headers=admin)
        assert cleared.status_code == 200
        assert _rows(cleared.json())["topK"] == (5, "Instance default")
        again = client.delete("/api/capability/settings/topK", headers=admin)
        assert again.status_code == 200  # nothing to clear is no error


def test_doctor_set_writes_the_override_and_refuses_a_bad_value(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["doctor", "--workspace", str(tmp_path), "--instance-config", str(tmp_path / "i.json")]
    done = runner.invoke(cli, [*base, "--set", "topK=8", "--set", "provider=builtin-markdown"])
    assert done.exit_code == 0, done.output
    assert "set topK=8" in done.output
    report = runner.invoke(cli, [*base, "--json"])
    rows = _rows(json.loads(report.output))
    assert rows["topK"] == (8, "Workspace override")
    assert rows["provider"] == ("builtin-markdown", "Workspace override")
    bad = runner.invoke(cli, [*base, "--set", "topK=eight"])
    assert bad.exit_code == 2 and 'topK="eight": must be a whole number from 1 to 50' in bad.output
    shapeless = runner.invoke(cli, [*base, "--set", "topK"])
    assert shapeless.exit_code == 2 and "KEY=VALUE" in shapeless.output
    cleared = runner.invoke(cli, [*base, "--clear", "topK", "--json"])
    assert _rows(json.loads(cleared.output.split("\n", 1)[1]))["topK"][1] == "Instance default"

"""The MCP server as agents reach it, through the SDK's own client: over stdio (a real
subprocess) and over streamable HTTP (``create_app`` + ``install`` under a real uvicorn)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from orcamem import Memory
from orcamem.bench.mcp import mcp_recall_latency
from orcamem.engine.store.base import MemoryUpdate
from orcamem.interfaces.http import ServerSettings, create_app
from orcamem.interfaces.mcp.server import TOOLS, install
from servers import LOCAL_BASE, child_env
from servers import serve as serving

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "mcp.md"
SERVER = [sys.executable, "-m", "orcamem", "mcp"]
NOW = "2026-11-01T10:00:00.000000Z"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped, so a module-scoped async fixture can share its loop


# -- helpers ---------------------------------------------------------------------------------


@asynccontextmanager
async def stdio_session(
    command: list[str], env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=child_env(**(env or {}))
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=30) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, read_timeout_seconds=30) as session,
    ):
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def ok(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}({arguments}) failed: {text(result)}"
    return result


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should have failed: {text(result)}"
    message = text(result)
    assert "Traceback" not in message and 'File "' not in message
    return message


def doc_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def doc_servers() -> list[dict[str, Any]]:
    """Every ``mcpServers.orcamem`` entry of the doc's JSON snippets."""
    return [json.loads(block)["mcpServers"]["orcamem"] for block in doc_blocks("json")]


def runnable(command: str, args: list[str]) -> list[str]:
    """A doc's command as this checkout can run it: ``orcamem mcp`` through the console script
    once the CLI has the command, else the module it runs."""
    if command != "orcamem":
        return [command, *args]
    assert args[:1] == ["mcp"], f"unexpected orcamem command in the doc: {args}"
    import typer.main

    from orcamem.interfaces.cli.main import app

    script = Path(sys.executable).with_name("orcamem")
    if script.exists() and "mcp" in typer.main.get_command(app).commands:  # type: ignore[attr-defined]
        return [str(script), *args]
    return [*SERVER, *args[1:]]


# -- stdio -----------------------------------------------------------------------------------


@pytest.fixture(scope="class")
async def reader(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[ClientSession, Path]]:
    """One server and one session over an empty database, shared by the tests of
    :class:`TestOneServerForReads` (starting a server costs seconds). Class-scoped: while it
    lives, the event loop it runs on is busy in this thread, which a synchronous test that
    starts its own loop (the bench) could not bear."""
    db = tmp_path_factory.mktemp("mcp-reader") / "m.db"
    async with stdio_session([*SERVER, "--db", str(db)]) as session:
        yield session, db


@pytest.mark.anyio
class TestOneServerForReads:
    """The stdio tests that only read or are refused share one server; a test that writes, or
    needs a database of its own, starts its own."""

    async def test_stdio_lists_the_five_tools_with_schemas(
        self,
        reader: tuple[ClientSession, Path],
    ) -> None:
        session, _ = reader
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert sorted(tools) == sorted(TOOLS)
        schema = {name: tool.input_schema for name, tool in tools.items()}
        props = {name: s["properties"] for name, s in schema.items()}

        assert schema["orma_recall"]["required"] == ["query"]
        assert schema["orma_remember"]["required"] == ["text"]
        assert schema["orma_forbid"]["required"] == ["rule"]
        assert schema["orma_forget"]["required"] == ["state_id"]
        assert "required" not in schema["orma_facts"] or schema["orma_facts"]["required"] == []
        for name in TOOLS:
            space = props[name]["space"]
            assert (space["type"], space["default"]) == ("string", "default")
            assert "ctx" not in props[name]  # the SDK context is not an argument
            description = tools[name].description or ""
            assert "Returns" in description and "Call it" in description, name  # what, when
            assert all(p.get("description") for p in props[name].values()), name
        assert props["orma_facts"]["include_history"] == {
            **props["orma_facts"]["include_history"],
            "type": "boolean",
            "default": False,
        }
        assert props["orma_remember"]["kind"]["default"] == "fact"
        assert set(props["orma_remember"]["kind"]["enum"]) == {
            "fact", "preference", "state", "event", "rule", "decision", "note", "anti_pattern"
        }  # fmt: skip
        assert props["orma_remember"]["role"]["default"] == "user"
        assert tools["orma_recall"].annotations.read_only_hint is True
        forget = tools["orma_forget"].annotations
        assert (forget.destructive_hint, forget.idempotent_hint) == (False, True)  # it closes
        assert tools["orma_remember"].output_schema["required"] == [
            "id", "space", "kind", "category", "forbidden", "tags"
        ]  # fmt: skip

    async def test_stdio_errors_are_tool_errors_with_the_message(
        self,
        reader: tuple[ClientSession, Path],
    ) -> None:
        session, db = reader
        message = await refused(session, "orma_recall", query="deploy", space="../etc")
        assert "invalid space name '../etc'" in message and "1-128 characters" in message
        message = await refused(session, "orma_remember", text="x", space="a b")
        assert "invalid space name 'a b'" in message
        assert "query" in await refused(session, "orma_recall", query="   ")
        assert "memory text" in await refused(session, "orma_remember", text="")
        assert "anti_pattern" in await refused(session, "orma_remember", text="x", kind="gossip")
        # arguments the schema refuses are told in orcamem's words, not pydantic's
        message = await refused(session, "orma_remember", text=123)
        assert message == "bad arguments for orma_remember: text: input should be a valid string"
        message = await refused(session, "orma_remember", kind="fact")
        assert message == "bad arguments for orma_remember: text: field required"
        message = await refused(session, "orma_forget", state_id="yesterday")
        assert "'yesterday' is not a memory id (mem-xxxxxxxx)" in message
        # an agent closes memories; it never deletes a logged episode (ep-12 was a deletion)
        message = await refused(session, "orma_forget", state_id="ep-1")
        assert "is not a memory id" in message and "`orcamem forget ep-12`" in message
        message = await refused(session, "orma_forget", state_id="mem-0000abcd")
        assert "no memory 'mem-0000abcd' in space 'default'" in message
        assert "orma_nothing" in await refused(session, "orma_nothing")
        # the session survives every failure, and nothing was written
        assert (await ok(session, "orma_facts")).structured_content["count"] == 0
        with Memory(db) as mem:
            assert mem.spaces() == []


@pytest.mark.anyio
async def test_stdio_recall_is_logged_as_an_mcp_injection_when_the_log_is_on(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    with Memory(db) as mem:
        mem.remember("We deploy the API with Helm on Fridays.", category="decision")
    env = {"ORCAMEM_LOG_BLOCKS": "1"}
    async with stdio_session([*SERVER, "--db", str(db)], env=env) as session:
        block = text(await ok(session, "orma_recall", query="how do we deploy the API?"))
    with Memory(db) as mem:
        [entry] = mem.injected_blocks()
        assert entry.surface == "mcp" and entry.block is None and "Helm" in block


@pytest.mark.anyio
async def test_stdio_remember_recall_forbid_facts_forget(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    async with stdio_session([*SERVER, "--db", str(db)]) as session:
        decision = await ok(
            session, "orma_remember", text="We deploy the API with Helm on Fridays.",
            kind="decision",
        )  # fmt: skip
        stored = decision.structured_content
        assert stored["id"].startswith("mem-") and stored["category"] == "decision"
        assert (stored["forbidden"], stored["tags"], stored["space"]) == (
            False,
            ["role:user"],
            "default",
        )
        assert json.loads(text(decision)) == stored  # the text block carries the same JSON

        block = text(await ok(session, "orma_recall", query="how do we deploy the API?"))
        assert "Helm on Fridays" in block and "FORBIDDEN" not in block

        anti = await ok(
            session, "orma_remember", text="Never chain PowerShell commands with semicolons.",
            kind="anti_pattern", role="assistant",
        )  # fmt: skip
        assert anti.structured_content["forbidden"] is True
        assert anti.structured_content["tags"] == ["role:assistant"]
        block = text(await ok(session, "orma_recall", query="how do we deploy the API?"))
        assert "FORBIDDEN" not in block  # the rule does not bear on deploying
        query = "how do we deploy the API from PowerShell?"
        block = text(await ok(session, "orma_recall", query=query))
        hoisted = "[FORBIDDEN: Never chain PowerShell commands with semicolons.]"
        assert hoisted in block and block.index(hoisted) < block.index("Helm on Fridays")

        rule = (
            await ok(session, "orma_forbid", rule="Never force-push to main.", always=True)
        ).structured_content
        assert (rule["kind"], rule["category"], rule["forbidden"]) == ("anti_pattern", "rule", True)
        block = text(await ok(session, "orma_recall", query="deploy"))
        assert block.index("[FORBIDDEN: Never force-push to main.]") < block.index("Helm")

        facts = (await ok(session, "orma_facts")).structured_content
        assert facts["space"] == "default" and facts["count"] == 3
        by_id = {fact["id"]: fact for fact in facts["facts"]}
        assert by_id[stored["id"]]["text"] == "We deploy the API with Helm on Fridays."
        assert [f["forbidden"] for f in facts["facts"]] == [False, True, True]
        assert all(f["active"] and f["source"] == "explicit" for f in facts["facts"])

        forgotten = (await ok(session, "orma_forget", state_id=stored["id"])).structured_content
        assert forgotten == {
            "forgotten": stored["id"], "space": "default", "active": False,
            "closed_at": forgotten["closed_at"],
        }  # fmt: skip
        facts = (await ok(session, "orma_facts")).structured_content
        assert stored["id"] not in [f["id"] for f in facts["facts"]]
        history = (await ok(session, "orma_facts", include_history=True)).structured_content
        (closed,) = [f for f in history["facts"] if f["id"] == stored["id"]]
        assert (closed["active"], closed["updated_at"]) == (False, forgotten["closed_at"])
        assert "Helm" not in text(await ok(session, "orma_recall", query="how do we deploy?"))
        again = (await ok(session, "orma_forget", state_id=stored["id"])).structured_content
        assert again == forgotten  # closing a closed memory changes nothing

        other = text(await ok(session, "orma_recall", query="deploy", space="project:other"))
        assert "Nothing in memory space 'project:other'" in other  # spaces do not leak

    # kind="anti_pattern" stores exactly what Memory.forbid stores, plus the role tag
    with Memory(db) as mem:
        records = {m.id: m for m in mem.facts()}
        via_remember, via_forbid = records[anti.structured_content["id"]], records[rule["id"]]
        reference = mem.forbid("Never commit secrets.")
        for field in ("category", "prohibited", "importance", "confidence", "source"):
            assert getattr(via_remember, field) == getattr(reference, field), field
            assert getattr(via_forbid, field) == getattr(reference, field), field


@pytest.mark.anyio
async def test_stdio_forget_closes_the_superseding_state_and_resurrects_nothing(
    tmp_path: Path,
) -> None:
    """Seed 003: ``orma_forget(state_id, space)`` closes an obsolete or superseded constraint."""
    db = tmp_path / "m.db"
    with Memory(db) as mem:
        mem.observe("user", "I live in Pune.", occurred_at="2026-10-10T09:00:00Z")
        mem.sleep()
        mem.observe("user", "I moved to Bangalore.", occurred_at="2026-10-17T09:00:00Z")
        mem.sleep()
        (bangalore,) = mem.facts()
        (pune,) = [m for m in mem.facts(include_history=True) if not m.active]
    async with stdio_session([*SERVER, "--db", str(db)]) as session:
        await ok(session, "orma_forget", state_id=bangalore.id)
        block = text(await ok(session, "orma_recall", query="Where do I live?"))
        assert "I live in Pune." in block and "[outdated:" not in block
        assert "home city" not in block  # neither state is current; the log lines stay
        history = (await ok(session, "orma_facts", include_history=True)).structured_content
        assert [(f["id"], f["active"], f["superseded_by"]) for f in history["facts"]] == [
            (pune.id, False, bangalore.id),
            (bangalore.id, False, None),
        ]
        assert (await ok(session, "orma_facts")).structured_content["count"] == 0
    with Memory(db) as mem:
        assert mem.audit_log()[0]["reason"] == "forgotten"
        assert {m.id for m in mem.facts(include_history=True)} == {pune.id, bangalore.id}


@pytest.mark.anyio
async def test_stdio_facts_with_history_and_default_space(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db, space="project:web") as mem:
        old = mem.remember("The API runs on Python 3.10.", category="state")
        new = mem.remember("The API runs on Python 3.12.", category="state")
        mem.store.update_memory(
            "project:web", old.id, MemoryUpdate(active=False, superseded_by=new.id), NOW
        )
    command = [*SERVER, "--db", str(db), "--space", "project:web"]
    async with stdio_session(command) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["orma_facts"].input_schema["properties"]["space"]["default"] == "project:web"
        current = (await ok(session, "orma_facts")).structured_content
        assert [f["id"] for f in current["facts"]] == [new.id]
        history = (await ok(session, "orma_facts", include_history=True)).structured_content
        assert [(f["id"], f["active"], f["superseded_by"]) for f in history["facts"]] == [
            (old.id, False, new.id),
            (new.id, True, None),
        ]


def test_the_server_refuses_a_bad_database_cleanly(tmp_path: Path) -> None:
    import subprocess

    bad = tmp_path / "not-a.db"
    bad.write_text("this is not sqlite" * 100)
    done = subprocess.run(
        [*SERVER, "--db", str(bad)], input="", capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr


def _piped(tmp_path: Path, messages: list[dict[str, Any]]) -> subprocess.CompletedProcess:
    """``messages`` written to a stdio server whose stdin then ends (``printf … | orcamem mcp``)."""
    return subprocess.run(
        [*SERVER, "--db", str(tmp_path / "m.db")],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **child_env(ORCA_HOME=str(tmp_path / "home"))},
    )


OPENING = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]  # fmt: skip


def test_every_call_read_before_stdin_ends_is_answered(tmp_path: Path) -> None:
    """The SDK ended the session at stdin's end and dropped the replies in flight: of 20
    saves all were stored and some answered, so a client could not know, and a retry
    stored them twice."""
    calls = [
        {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "orma_remember", "arguments": {"text": f"Fact {i} about widget {i}."}}}
        for i in range(1, 21)
    ]  # fmt: skip
    done = _piped(tmp_path, OPENING + calls)
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    answered = {r["id"] for r in replies if r["id"] and not r["result"].get("isError")}
    assert answered == set(range(1, 21))
    with Memory(tmp_path / "m.db") as mem:
        assert len(mem.facts()) == 20


def test_a_tools_list_notification_is_no_traceback(tmp_path: Path) -> None:
    """A tools/list without an id is a notification: nothing is answered, and the bank's
    tool filter asserted on the missing result, a traceback on stderr."""
    done = _piped(tmp_path, [*OPENING, {"jsonrpc": "2.0", "method": "tools/list"}])
    assert done.returncode == 0, done.stderr
    assert "AssertionError" not in done.stderr and "Traceback" not in done.stderr


# -- the doc's snippets ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_docs_stdio_snippets_start_a_working_server(tmp_path: Path) -> None:
    stdio = [entry for entry in doc_servers() if "command" in entry]
    assert stdio, "docs/mcp.md has no stdio mcp.json snippet"
    claude = [line for b in doc_blocks("bash") for line in b.splitlines() if " -- " in line]
    assert claude[0] == "claude mcp add orcamem -- orcamem mcp"  # then the bank's --profile one
    commands = [runnable(e["command"], e["args"]) for e in stdio]
    for line in claude:
        after = shlex.split(line.split(" -- ", 1)[1])
        commands.append(runnable(after[0], after[1:]))
    for number, command in enumerate(commands):
        home = tmp_path / f"home{number}"  # the default database lands in $ORCA_HOME
        async with stdio_session(command, env={"ORCA_HOME": str(home)}) as session:
            assert sorted(t.name for t in (await session.list_tools()).tools) == sorted(TOOLS)
            await ok(session, "orma_remember", text="Prefers tabs over spaces.", kind="preference")
            assert "tabs" in text(await ok(session, "orma_recall", query="tabs or spaces?"))
        assert (home / "memory.db").exists()


# -- streamable HTTP -------------------------------------------------------------------------


@pytest.fixture
def keyed(tmp_path: Path) -> Iterator[tuple[str, Memory, str, str]]:
    """A keys-required app with MCP installed, served; keys for team-a and for admin."""
    with Memory(tmp_path / "http.db") as mem:
        app = create_app(mem, ServerSettings(require_keys=True))
        install(app)
        _, key_a = app.state.keys.create(spaces=["team-a"], admin=False, name="a", now=NOW)
        _, admin = app.state.keys.create(spaces=[], admin=True, name="admin", now=NOW)
        with serving(app) as base:
            yield base, mem, key_a, admin


@pytest.mark.anyio
async def test_http_key_for_space_a_cannot_touch_space_b(
    keyed: tuple[str, Memory, str, str],
) -> None:
    base, mem, key_a, admin = keyed
    url = base + "/mcp"
    async with http_session(url, {"Authorization": f"Bearer {key_a}"}) as session:
        assert sorted(t.name for t in (await session.list_tools()).tools) == sorted(TOOLS)
        await ok(session, "orma_remember", text="Team A ships on Mondays.", space="team-a")
        await ok(session, "orma_forbid", rule="Never deploy on Fridays.", space="team-a")
        assert "Mondays" in text(await ok(session, "orma_recall", query="ship", space="team-a"))
        facts = (await ok(session, "orma_facts", space="team-a")).structured_content
        assert facts["count"] == 2
        for tool, arguments in [
            ("orma_recall", {"query": "ship"}),
            ("orma_remember", {"text": "Team B secret plan."}),
            ("orma_remember", {"text": "x", "kind": "anti_pattern"}),
            ("orma_forbid", {"rule": "x"}),
            ("orma_facts", {"include_history": True}),
            ("orma_forget", {"state_id": facts["facts"][0]["id"]}),
        ]:
            for space in ("team-b", "default"):
                message = await refused(session, tool, **arguments, space=space)
                assert f"not allowed to use space '{space}'" in message, (tool, message)
        message = await refused(session, "orma_recall", query="x", space="../team-a")
        assert "invalid space name" in message
    assert [m.content for m in mem.facts(space="team-a")] == [
        "Team A ships on Mondays.",
        "Never deploy on Fridays.",
    ]
    assert mem.facts(space="team-b") == [] and sorted(mem.spaces()) == ["team-a"]

    # the same key in x-api-key works too; an admin key reaches every space
    async with http_session(url, {"x-api-key": key_a}) as session:
        assert "Mondays" in text(await ok(session, "orma_recall", query="ship", space="team-a"))
    async with http_session(url, {"Authorization": f"Bearer {admin}"}) as session:
        await ok(session, "orma_remember", text="Team B ships on Tuesdays.", space="team-b")
        assert "Mondays" in text(await ok(session, "orma_recall", query="ship", space="team-a"))


def test_http_without_a_valid_key_is_401(keyed: tuple[str, Memory, str, str]) -> None:
    base, _, key_a, _ = keyed
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "curl", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer om_wrong"}, {"x-api-key": ""}):
        response = httpx.post(base + "/mcp", json=initialize, headers={**accept, **headers})
        assert response.status_code == 401, headers
        error = response.json()["error"]
        assert error["type"] == "AuthError" and error["status"] == 401
        assert "API key" in error["message"]
        assert response.headers["www-authenticate"] == "Bearer"
    assert httpx.get(base + "/mcp").status_code == 401
    response = httpx.post(
        base + "/mcp", json=initialize, headers={**accept, "Authorization": f"Bearer {key_a}"}
    )
    assert (
        response.status_code == 200 and response.json()["result"]["serverInfo"]["name"] == "orcamem"
    )
    assert httpx.get(base + "/healthz").status_code == 200  # the rest of the app is untouched


@pytest.mark.anyio
async def test_the_docs_http_snippets_connect_with_their_key_header(
    keyed: tuple[str, Memory, str, str],
) -> None:
    base, _, key_a, _ = keyed
    http = [entry for entry in doc_servers() if "command" not in entry]
    assert {"url", "serverUrl"} <= {name for entry in http for name in entry}
    claude = next(
        line for b in doc_blocks("bash") for line in b.splitlines() if "--transport http" in line
    )
    words = shlex.split(claude)
    header = words[words.index("--header") + 1]
    name, value = header.split(": ", 1)
    snippets = [(e.get("url") or e["serverUrl"], e["headers"]) for e in http]
    snippets.append((words[words.index("orcamem") + 1], {name: value}))
    for documented, headers in snippets:
        assert documented == "http://127.0.0.1:8080/mcp"
        url = base + "/mcp"
        headers = {
            k: v.replace("${env:ORCAMEM_KEY}", key_a).replace("$ORCAMEM_KEY", key_a)
            for k, v in headers.items()
        }
        async with http_session(url, headers) as session:
            await ok(session, "orma_remember", text="Uses pnpm.", space="team-a")
            assert "pnpm" in text(await ok(session, "orma_recall", query="pnpm", space="team-a"))


@pytest.mark.anyio
async def test_http_without_keys_on_loopback_serves_every_space(tmp_path: Path) -> None:
    with Memory(tmp_path / "open.db") as mem:
        app = create_app(mem, ServerSettings())
        install(app)
        with serving(app) as base:
            async with http_session(base + "/mcp", {}) as session:
                await ok(session, "orma_remember", text="Alice likes green tea.", space="alice")
                block = text(await ok(session, "orma_recall", query="tea", space="alice"))
                assert "green tea" in block
                assert "tea" not in text(await ok(session, "orma_recall", query="tea", space="bob"))
            # a page served from another host (DNS rebinding) cannot reach it
            rebound = httpx.post(
                base + "/mcp", json={}, headers={"Host": "evil.example:80", "Accept": "*/*"}
            )
            assert rebound.status_code == 421 and "Host" in rebound.text


def test_install_without_the_lifespan_answers_503(mem: Memory) -> None:
    from fastapi.testclient import TestClient

    app = create_app(mem)
    install(app)
    install(app)  # idempotent: one route, one session manager
    assert [getattr(route, "path", None) for route in app.router.routes].count("/mcp") == 1
    response = TestClient(app, base_url=LOCAL_BASE).post(
        "/mcp", json={}
    )  # no `with`: the lifespan never ran
    assert response.status_code == 503
    assert "lifespan" in response.json()["error"]["message"]
    loopback = {"Host": "127.0.0.1:8080", "Accept": "application/json, text/event-stream"}
    for _ in range(2):  # with it, twice: each run gets a fresh session manager
        with TestClient(app, base_url=LOCAL_BASE) as client:
            response = client.post("/mcp", json={}, headers=loopback)
            assert response.status_code == 400 and response.json()["jsonrpc"] == "2.0"


# -- bench -----------------------------------------------------------------------------------


def test_recall_latency_bench_reports_stdio_percentiles(tmp_path: Path) -> None:
    result = mcp_recall_latency(records=60, calls=4, workdir=str(tmp_path))
    assert result["transport"] == "stdio" and (result["records"], result["calls"]) == (60, 4)
    assert 0 < result["recall_p50_ms"] <= result["recall_p95_ms"]
    assert 0 < result["direct_recall_p50_ms"] <= result["direct_recall_p95_ms"]
    assert result["block_chars_p50"] > 0 and "cores" in result["machine"]


@pytest.mark.anyio
async def test_stdio_recall_takes_the_search_filters(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with Memory(db) as mem:
        for day, (said, team) in enumerate(
            [
                ("We deploy the API with Helm on Fridays.", "s1"),
                ("We deploy the web app with Vercel.", "s2"),
                ("The API database is PostgreSQL 16.", "s1"),
                ("Lunch is at noon on Tuesdays.", "s3"),
                ("The office is in Pune.", "s3"),
                ("Code review happens on Mondays.", "s2"),
                ("The staging cluster runs on Hetzner.", "s1"),
                ("Our logo is a blue orca.", "s3"),
            ],
            start=1,
        ):
            mem.add(said, kind="turn", role="user", session_id=team,
                    occurred_at=f"2026-10-{day:02d}T09:00:00Z", meta={"team": team})  # fmt: skip
    async with stdio_session([*SERVER, "--db", str(db)]) as client:

        async def recall(**arguments: Any) -> CallToolResult:
            return await client.call_tool(
                "orma_recall", {"query": "how do we deploy?", **arguments}
            )

        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        props = tools["orma_recall"].input_schema["properties"]
        assert {"kind", "session", "role", "since", "until", "category", "metadata"} <= set(props)
        both = text(await recall())
        assert "Helm" in both and "Vercel" in both
        narrowed = text(await recall(session="s2"))
        assert "Vercel" in narrowed and "Helm" not in narrowed
        meta = text(await recall(metadata={"team": "s1"}))
        assert "Helm" in meta and "Vercel" not in meta
        none = await recall(until="2026-09-01")
        assert text(none) == (
            "Nothing in memory space 'default' matches this query with these filters yet."
        )
        refused = await recall(since="2026-10-05", until="2026-10-01")
        assert refused.is_error and "is before since" in text(refused)
        assert "Traceback" not in text(refused)

"""The Memory Bank's tools over MCP, as agents reach them through the SDK's own clients (seed
002, "Memory Tools"): a session is bound to one profile, a profile that does not select the
tools is not offered them, and ``orcamem mcp`` over stdio serves the same tools as
``orcamem mcp --http`` (both real subprocesses over the durable default bank)."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession

from orcamem.bank import MemoryBank
from orcamem.interfaces.mcp.server import BANK_TOOLS, TOOLS
from servers import child_env, free_port
from test_mcp import SERVER, doc_blocks, http_session, ok, refused, runnable, stdio_session

PROFILES = [
    {"name": "researcher", "tools": ["@default", "@memory"]},
    {"name": "critic", "tools": ["@memory"]},
    {"name": "writer", "tools": ["@default"]},
    {"name": "reader", "tools": ["@default", "memory_recall"]},
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """The environment of a server child: its own ORCA_HOME and the profiles file above."""
    profiles = tmp_path / "profiles.json"
    profiles.write_text(json.dumps(PROFILES), encoding="utf-8")
    return {"ORCA_HOME": str(tmp_path / "home"), "ORCAMEM_PROFILES": str(profiles)}


async def names(session: ClientSession) -> list[str]:
    return sorted(tool.name for tool in (await session.list_tools()).tools)


def doc_line(marker: str) -> list[str]:
    """The one ``bash`` line of docs/mcp.md holding ``marker``, split as a shell would."""
    [line] = [x for b in doc_blocks("bash") for x in b.splitlines() if marker in x]
    return shlex.split(line)


# -- the rule, once: which tools a profile's selection registers ----------------------------------


def test_memory_registers_all_four_a_named_tool_only_itself_and_both_inject() -> None:
    with MemoryBank(profiles=PROFILES) as bank:
        assert bank.memory_tools("researcher") == BANK_TOOLS
        assert bank.memory_tools("reader") == ("memory_recall",)
        assert bank.memory_tools("writer") == ()
        bank.save("reader", content="The user is allergic to peanuts.", category="fact")
        bank.save("writer", content="The user is allergic to peanuts.", category="fact")
        assert bank.inject("reader", "Plan my meals.").startswith("--- CONTEXT FROM MEMORY ---")
        assert bank.inject("writer", "Plan my meals.") == "Plan my meals."


# -- stdio ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_stdio_offers_no_bank_tools_without_an_opted_in_profile(
    tmp_path: Path, home: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    async with stdio_session([*SERVER, "--db", db, "--profile", "writer"], home) as session:
        assert await names(session) == sorted(TOOLS)
        message = await refused(session, "memory_save", content="x", profile="writer")
        assert "not available to profile 'writer'" in message and '"@memory"' in message
        await ok(session, "orma_remember", text="The engine tools stay.")
    async with stdio_session([*SERVER, "--db", db], home) as session:  # no profile bound
        assert await names(session) == sorted(TOOLS)
        message = await refused(session, "memory_list")
        assert "orcamem mcp --profile NAME" in message and "/mcp?profile=NAME" in message
    assert not (Path(home["ORCA_HOME"]) / "bank" / "memory").exists()  # nothing was written


@pytest.mark.anyio
async def test_stdio_serves_the_four_tools_on_the_session_profile_only(
    tmp_path: Path, home: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    bound = {**home, "ORCAMEM_PROFILE": "researcher"}  # the environment binds it too
    async with stdio_session([*SERVER, "--db", db], bound) as session:
        assert await names(session) == sorted([*TOOLS, *BANK_TOOLS])
        saved = (
            await ok(session, "memory_save", content="The user is allergic to peanuts.")
        ).structured_content
        assert (saved["profileName"], saved["category"], saved["confidence"]) == (
            "researcher",
            "general",
            1.0,
        )
        gone = (await ok(session, "memory_save", content="Deploys on Fridays.")).structured_content
        [hit] = (await ok(session, "memory_recall", query="diet for dinner")).structured_content[
            "hits"
        ]
        assert hit["memory"]["id"] == saved["id"]
        deleted = await ok(session, "memory_delete", id=gone["id"], profile="researcher")
        assert deleted.structured_content == {"deleted": gone["id"], "profile": "researcher"}
        listed = (await ok(session, "memory_list")).structured_content
        assert (listed["profile"], listed["total"]) == ("researcher", 1)
        for tool, arguments in [
            ("memory_save", {"content": "x"}),
            ("memory_recall", {"query": "diet"}),
            ("memory_list", {}),
            ("memory_delete", {"id": saved["id"]}),
        ]:
            message = await refused(session, tool, profile="critic", **arguments)
            assert "not this session's profile 'researcher'" in message, message
    async with stdio_session([*SERVER, "--db", db, "--profile", "critic"], home) as session:
        assert (await ok(session, "memory_list")).structured_content["total"] == 0
        assert (await ok(session, "memory_recall", query="peanuts")).structured_content[
            "hits"
        ] == []
        message = await refused(session, "memory_delete", id=saved["id"])
        assert "no memory" in message
    # stdio kept it in the durable default bank, $ORCA_HOME/bank, where every transport sees it
    with MemoryBank.from_env(environ=home) as bank:
        assert [m.id for m in bank.list("researcher").memories] == [saved["id"]]


@pytest.mark.anyio
async def test_the_docs_stdio_profile_snippet_serves_the_bank_tools(home: dict[str, str]) -> None:
    words = doc_line("-- orcamem mcp --profile")
    command = words[words.index("--") + 1 :]
    assert command == ["orcamem", "mcp", "--profile", "researcher"]
    async with stdio_session(runnable(command[0], command[1:]), home) as session:
        assert await names(session) == sorted([*TOOLS, *BANK_TOOLS])
        await ok(session, "memory_save", content="Prefers tabs.", category="preference")


# -- streamable HTTP: `orcamem mcp --http`, a real child on a free loopback port ------------------


@pytest.fixture
def http_server(tmp_path: Path, home: dict[str, str]) -> Iterator[str]:
    """``orcamem mcp --http`` on a free loopback port; yields its base URL."""
    port = free_port()
    log = (tmp_path / "server.log").open("w")
    command = [*SERVER, "--http", "--port", str(port), "--db", str(tmp_path / "m.db")]
    child = subprocess.Popen(command, env=child_env(**home), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            assert child.poll() is None, (tmp_path / "server.log").read_text()
            try:
                httpx.get(base + "/healthz", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        yield base
    finally:
        child.terminate()
        child.wait(10)
        log.close()


@pytest.mark.anyio
async def test_http_binds_each_session_to_the_profile_in_its_url(http_server: str) -> None:
    mcp = http_server + "/mcp"
    async with http_session(mcp + "?profile=writer", {}) as session:
        assert await names(session) == sorted(TOOLS)
        message = await refused(session, "memory_save", content="x")
        assert "not available to profile 'writer'" in message
    async with http_session(mcp, {}) as session:  # no profile in the URL
        assert await names(session) == sorted(TOOLS)
        assert "/mcp?profile=NAME" in await refused(session, "memory_list")
    documented = next(w for w in doc_line("?profile=") if "?profile=" in w)  # docs/mcp.md's
    assert documented == "http://127.0.0.1:8080/mcp?profile=researcher"
    async with http_session(
        documented.replace("http://127.0.0.1:8080", http_server), {}
    ) as session:
        assert await names(session) == sorted([*TOOLS, *BANK_TOOLS])
        saved = (await ok(session, "memory_save", content="Uses pnpm.")).structured_content
        assert saved["profileName"] == "researcher"
        message = await refused(session, "memory_list", profile="critic")
        assert "not this session's profile 'researcher'" in message
    async with http_session(mcp + "?profile=critic", {}) as session:
        assert (await ok(session, "memory_list")).structured_content["total"] == 0
    async with http_session(mcp + "?profile=reader", {}) as session:  # names memory_recall only
        assert await names(session) == sorted([*TOOLS, "memory_recall"])
        assert (await ok(session, "memory_recall", query="pnpm")).structured_content["hits"] == []
        assert "not available to profile 'reader'" in await refused(
            session, "memory_save", content="x"
        )
    async with http_session(mcp + "?profile=nobody", {}) as session:
        assert await names(session) == sorted(TOOLS)
        assert "unknown profile 'nobody'" in await refused(session, "memory_list")
    async with http_session(mcp + "?profile=researcher", {}) as session:
        listed = (await ok(session, "memory_list")).structured_content
        assert [m["id"] for m in listed["memories"]] == [saved["id"]]


def test_mcp_http_refuses_a_server_wide_profile(tmp_path: Path) -> None:
    result = subprocess.run(
        [*SERVER, "--http", "--profile", "writer", "--db", str(tmp_path / "m.db")],
        env=child_env(ORCA_HOME=str(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "/mcp?profile=NAME" in result.stderr


@pytest.mark.anyio
async def test_a_secret_in_a_memory_stored_before_the_save_rule_never_reaches_the_model(
    tmp_path: Path, home: dict[str, str]
) -> None:
    """Saves refuse secrets now; a memory written before that rule (or by hand) still holds
    one, and what a tool answers goes to the model: memory_list and memory_recall redact it."""
    token = "ghp_" + "a1B2" * 9
    with MemoryBank.from_env(environ=home) as bank:
        clean = bank.save("researcher", content="The deploy token is kept in the vault.")
        old = dataclasses.replace(
            clean, raw_input=f"The deploy token is {token}", processed_content=f"token {token}"
        )
        bank.objects.put(f"memory/researcher/{old.id}.json", old.encode())
    bound = {**home, "ORCAMEM_PROFILE": "researcher"}
    async with stdio_session([*SERVER, "--db", str(tmp_path / "m.db")], bound) as session:
        listed = (await ok(session, "memory_list")).structured_content
        recalled = (await ok(session, "memory_recall", query="deploy token")).structured_content
    for answer in (listed, recalled):
        shown = json.dumps(answer)
        assert token not in shown and "[REDACTED:github_token]" in shown, shown

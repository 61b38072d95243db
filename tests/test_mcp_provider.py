"""The MCP provider, over stdio with the official SDK client: against orcamem's own MCP server
(a real subprocess) and against ``broken_mcp_server.py``, which misbehaves on purpose."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orcamem.capability import Capability, doctor_report
from orcamem.capability.providers import (
    HEADROOM,
    NOT_AVAILABLE,
    NOT_SET_UP,
    OPERATION_TIMEOUT_S,
    ORCAMEM,
    READY,
    McpProvider,
    ProviderError,
    Scope,
    headroom_provider,
)
from orcamem.capability.providers.mcp import parse_orcamem_block, parse_ranked_lines
from orcamem.capability.settings import set_workspace_override
from orcamem.recall.blocks.capability import render_block
from servers import child_env

BROKEN = str(Path(__file__).with_name("broken_mcp_server.py"))


def broken(mode: str, timeout_s: float = 10.0, starts: Path | None = None) -> McpProvider:
    """The broken server as a Headroom provider; each start is logged to ``starts``."""
    env = {"BROKEN_MCP_STARTS": str(starts)} if starts is not None else None
    return McpProvider([sys.executable, BROKEN, mode], timeout_s=timeout_s, env=env)


def over_the_limit(operation: str, seconds: str) -> str:
    """The one message of the state an operation over the limit leaves the provider in."""
    return (
        f"headroom-mcp: {operation} took longer than {seconds} s, so the provider is treated "
        "as unavailable for the rest of this session"
    )


def starts_of(log: Path) -> int:
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


@pytest.fixture(scope="module")
def orcamem_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProvider]:
    """orcamem's own MCP server as a provider (one subprocess for the module)."""
    db = tmp_path_factory.mktemp("mcp-provider") / "memory.db"
    command = [sys.executable, "-m", "orcamem", "mcp", "--db", str(db)]
    with McpProvider(command, profile=ORCAMEM, env=child_env()) as provider:
        yield provider


@pytest.fixture(scope="module")
def failing() -> Iterator[McpProvider]:
    """The broken server whose every call fails, shared by the tests that only call it (no
    call can change it)."""
    with broken("fail-calls") as provider:
        yield provider


# -- against orcamem's own MCP server ---------------------------------------------------------


def test_orcamem_server_is_ready_by_one_real_call(orcamem_server: McpProvider) -> None:
    status = orcamem_server.check()
    assert status.state == READY and status.label == "Ready"
    assert status.detail == "orma_recall answered"
    assert {"orma_recall", "orma_remember"} <= orcamem_server._tools


def test_orcamem_server_saves_and_reads_back_as_text(orcamem_server: McpProvider) -> None:
    saved = orcamem_server.save("We deploy the API with Helm on Fridays.", importance=0.9)
    assert saved is not None and saved.startswith("mem-")
    found = orcamem_server.search("How do we deploy the API?", top_k=5)
    assert any("Helm on Fridays" in item.text for item in found)
    assert all(item.id is None and item.tags == () for item in found)  # text, not records


def test_a_scoped_save_collapses_to_the_user_layer(orcamem_server: McpProvider) -> None:
    orcamem_server.save("Grapefruit builds cache to S3.", scope=Scope(session="a", turn="t1"))
    found = orcamem_server.search("grapefruit builds cache", top_k=5, scope=Scope(session="zzz"))
    assert any("Grapefruit builds cache to S3." in item.text for item in found)
    assert orcamem_server.capabilities.scopes == ("user",)


def test_the_capability_splices_what_the_mcp_provider_reads(
    orcamem_server: McpProvider, tmp_path: Path
) -> None:
    orcamem_server.save("Honeydew releases are cut on Mondays.")
    set_workspace_override(tmp_path, "enabled", True)
    with Capability(tmp_path, instance_config=tmp_path / "x.json", provider=orcamem_server) as cap:
        block = cap.before_turn("When are honeydew releases cut?").block
    assert block.startswith("<memory>") and "Honeydew releases are cut on Mondays." in block
    assert not (tmp_path / "memory").exists()  # no markdown files: another provider answered


def test_the_provider_reports_its_own_limits(orcamem_server: McpProvider) -> None:
    status = orcamem_server.check()
    assert status.notes == orcamem_server.notes()
    notes = " ".join(status.notes)
    assert "single user layer" in notes
    assert "Reads come back as text, not records" in notes
    assert "1. [relevance=0.50] <content>" in notes
    assert "only the content and a relevance number" in notes
    assert "longer than 20 seconds is treated as unavailable" in notes
    capabilities = status.capabilities
    assert (capabilities.reads, capabilities.decay, capabilities.archive) == ("text", False, False)
    assert capabilities.retrieval_log is False


# -- against a deliberately broken server -----------------------------------------------------


def test_started_and_listed_but_every_call_fails_is_installed_not_set_up(
    failing: McpProvider,
) -> None:
    said = "embedding model all-MiniLM-L6-v2 not found (HF_HUB_OFFLINE=1)"
    status = failing.check()
    assert failing._tools == {"memory_search", "memory_save"}  # it launched and listed
    assert status.state == NOT_SET_UP and status.label == "Installed, but not set up"
    assert status.detail == (
        "headroom-mcp: the server starts and lists its tools, but a memory_search call "
        f"fails: Error executing tool memory_search: {said}"
    )
    assert "do not reinstall" in status.action and "headroom memory stats" in status.action
    with pytest.raises(ProviderError) as searching:
        failing.search("anything", top_k=1)
    with pytest.raises(ProviderError) as saving:
        failing.save("anything")
    assert str(searching.value) == status.detail  # one message for the state
    assert str(saving.value) == status.detail.replace("memory_search", "memory_save")


def test_a_server_that_dies_before_the_handshake_is_not_available() -> None:
    with broken("crash") as provider:
        status = provider.check()
        with pytest.raises(ProviderError) as raised:
            provider.search("anything", top_k=1)
    assert status.state == NOT_AVAILABLE and status.label == "Not available"
    assert status.detail.startswith("the headroom-mcp server could not be started (")
    # its stderr is shown: this start's, not every start's so far
    assert status.detail.count("fatal: cannot import the embedder (simulated crash)") == 1
    assert str(raised.value) == status.detail


def test_a_server_without_the_memory_tools_is_not_available(tmp_path: Path) -> None:
    starts = tmp_path / "starts.log"
    with broken("wrong-tools", starts=starts) as provider:
        status = provider.check()
        with pytest.raises(ProviderError) as raised:
            provider.save("anything")
        again = provider.check()
    assert status.state == NOT_AVAILABLE
    assert status.detail == (
        "headroom-mcp: the server started but offers no memory_save, memory_search tool (it "
        "offers weather): it is not the expected memory server"
    )
    assert str(raised.value) == again.detail == status.detail
    assert starts_of(starts) == 1  # given up on for the session, not started again


def test_missing_software_is_not_available(tmp_path: Path) -> None:
    python = tmp_path / "no-such" / "python"
    provider = headroom_provider(python=python)
    status = provider.check()
    assert status.state == NOT_AVAILABLE
    assert status.detail == f"{python} is not installed on this machine"
    assert "uv tool install headroom-ai" in status.action
    assert "pip install headroom" in status.action  # the name-collision warning
    assert provider._portal is None  # nothing was spawned
    with pytest.raises(ProviderError) as raised:
        provider.search("x", top_k=1)
    assert str(raised.value) == status.detail
    provider.close()


def test_an_operation_over_the_limit_is_unavailable_and_never_blocks_the_turn(
    tmp_path: Path,
) -> None:
    """A call that never answers. No clock is read here: the call sleeps for an hour, so it is
    over any limit; what is asserted is the outcome — the provider gives up on the server,
    says so in one message, and every later turn goes on without touching it again."""
    assert OPERATION_TIMEOUT_S == 20.0
    assert headroom_provider().timeout_s == 20.0
    assert McpProvider(["python"]).timeout_s == 20.0
    starts = tmp_path / "starts.log"
    set_workspace_override(tmp_path, "enabled", True)
    messages = [{"role": "user", "content": "what do we know?"}]
    with broken("works", starts=starts) as provider:
        assert provider.check().state == READY  # up within the (generous) limit
        provider.timeout_s = 0.5  # the limit of every operation from here on
        with pytest.raises(ProviderError) as raised:
            provider.search("__hang__", top_k=1)
        message = over_the_limit("a memory_search call", "0.5")
        assert str(raised.value) == message
        status = provider.check()
        assert (status.state, status.detail) == (NOT_AVAILABLE, message)
        with pytest.raises(ProviderError) as saving:
            provider.save("anything")  # unavailable for the rest of the session
        assert str(saving.value) == message
        with Capability(tmp_path, instance_config=tmp_path / "x.json", provider=provider) as cap:
            assert cap.prepare_messages(messages) == messages  # the turn goes on, no memory
            assert cap.before_turn("again").error == message
    # never blocks: nothing after the give-up waited on the server, as none was started again
    assert starts_of(starts) == 1


def test_a_server_that_never_completes_the_handshake_is_over_the_limit(tmp_path: Path) -> None:
    starts = tmp_path / "starts.log"
    with broken("mute", timeout_s=0.5, starts=starts) as provider:
        status = provider.check()
        with pytest.raises(ProviderError) as raised:
            provider.search("anything", top_k=1)
    message = over_the_limit("the server's start and handshake", "0.5")
    assert (status.state, status.detail, str(raised.value)) == (NOT_AVAILABLE, message, message)
    assert starts_of(starts) == 1  # the start is not retried on every turn


def test_the_headroom_format_reads_as_text_lines() -> None:
    with broken("works") as provider:
        assert provider.check().state == READY
        provider.save("Jackfruit uses uv for packaging.", importance=0.7)
        found = provider.search("jackfruit packaging", top_k=5)
    assert [(item.text, item.relevance) for item in found] == [
        ("Jackfruit uses uv for packaging.", 0.5)
    ]
    assert "- Jackfruit uses uv for packaging." in render_block(found)


def test_offline_mode_is_set_explicitly_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("ORCAMEM_TEST_LEAK", "1")
    provider = McpProvider([sys.executable, BROKEN, "works"], profile=HEADROOM)
    assert headroom_provider().env == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with provider:
        (seen,) = provider.search("__env__", top_k=1)
    assert "'HF_HUB_OFFLINE': '1'" in seen.text and "'TRANSFORMERS_OFFLINE': '1'" in seen.text
    assert "leak=False" in seen.text


def test_headroom_is_looked_for_where_uv_installs_it_or_the_env_var(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert "ORCAMEM_HEADROOM_PYTHON" not in os.environ  # conftest strips it
    assert headroom_provider().command[0].endswith("/.local/share/uv/tools/headroom-ai/bin/python")
    monkeypatch.setenv("ORCAMEM_HEADROOM_PYTHON", str(tmp_path / "py"))
    assert headroom_provider().command[0] == str(tmp_path / "py")


def test_doctor_surfaces_the_mcp_state_and_notes(tmp_path: Path, failing: McpProvider) -> None:
    set_workspace_override(tmp_path, "provider", "headroom-mcp")
    report = doctor_report(tmp_path, instance_config=tmp_path / "x.json", provider=failing)
    assert report["provider"]["state"] == NOT_SET_UP
    assert report["provider"]["notes"] == list(failing.notes())
    assert report["files"] is None


# -- reading the text formats -----------------------------------------------------------------


def test_ranked_lines_give_only_content_and_relevance() -> None:
    text = "1. [relevance=0.87] Uses uv\n   Related: tooling\n2. [relevance=0.50] Tabs\nNo more."
    assert [(r.text, r.relevance, r.tags, r.id) for r in parse_ranked_lines(text)] == [
        ("Uses uv", 0.87, (), None),
        ("Tabs", 0.5, (), None),
    ]
    assert parse_ranked_lines("No memories found.") == []


def test_orcamem_block_items_are_read_as_text() -> None:
    block = "## Memory\nFraming. Today is 2026-11-01.\n[user.fact: A][LOG: 2026-10-10 user: B [x]]"
    assert [r.text for r in parse_orcamem_block(block)] == [
        "user.fact: A",
        "LOG: 2026-10-10 user: B [x]",
    ]
    assert parse_orcamem_block("Nothing in memory space 'default' matches this query yet.") == []


def test_a_hanging_server_is_not_started_again_by_later_sessions(tmp_path: Path) -> None:
    """Issue 18 item 5: each turn of each session (each hook process) used to relaunch a
    server that hangs at its handshake and wait the whole limit again. The first one marks it
    unavailable in the workspace; later providers fail at once without starting it, until the
    mark expires or an explicit check finds it answering."""

    from orcamem._kernel.clock import FrozenClock
    from orcamem.capability.providers.mcp import DOWN_S

    starts, down = tmp_path / "starts.log", tmp_path / "memory" / "headroom-unavailable.json"
    clock = FrozenClock("2026-11-01T10:00:00Z")

    def provider(mode: str) -> McpProvider:  # a mute server hangs: a short limit will do
        env = {"BROKEN_MCP_STARTS": str(starts)}
        limit = 0.5 if mode == "mute" else 60.0  # a healthy start needs no tight bound
        return McpProvider(
            [sys.executable, BROKEN, mode], timeout_s=limit, env=env, down_file=down, clock=clock
        )

    with provider("mute") as first, pytest.raises(ProviderError):
        first.search("anything", top_k=1)
    assert starts_of(starts) == 1 and down.is_file()
    for _ in range(3):  # three later turns, each in a new process
        with provider("mute") as later, pytest.raises(ProviderError) as raised:
            later.search("anything", top_k=1)
        assert "marked by an earlier session" in str(raised.value)
        assert "orcamem doctor" in str(raised.value)
    assert starts_of(starts) == 1  # never started again
    clock.advance(seconds=DOWN_S + 1)
    with provider("mute") as expired, pytest.raises(ProviderError):
        expired.search("anything", top_k=1)
    assert starts_of(starts) == 2  # the mark expired: tried once more, and marked again
    with provider("works") as fixed:
        assert fixed.check().state == READY  # an explicit check tries it for real
    assert not down.exists() and starts_of(starts) == 3

"""The Memory Bank's REST routes and MCP tools: shapes, 503 without a bank, bad input, admin-only
global views, and profile isolation through API keys (``profile:<name>`` spaces). The
route-by-route key isolation of these routes is in ``test_api.py``'s table."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.bank.bank import MemoryBank
from orcamem.interfaces.http import ServerSettings, create_app
from orcamem.interfaces.http.api import install as install_api
from orcamem.interfaces.mcp.server import BANK_TOOLS, TOOLS
from orcamem.interfaces.mcp.server import install as install_mcp
from servers import LOCAL_BASE, serve
from test_api import assert_error, make_app
from test_mcp import http_session, ok, refused

NOW = "2026-11-01T10:00:00.000000Z"
BANK_ROUTES = [
    ("GET", "/api/profiles/alice/memories", {}),
    ("POST", "/api/profiles/alice/memories", {"json": {"content": "x"}}),
    ("GET", "/api/profiles/alice/memories/search", {"params": {"q": "x"}}),
    ("GET", "/api/profiles/alice/memories/mem-00000000", {}),
    ("DELETE", "/api/profiles/alice/memories/mem-00000000", {}),
    ("GET", "/api/memory-bank", {}),
    ("GET", "/api/memory-bank/stats", {}),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def bank(clock: FrozenClock) -> Iterator[MemoryBank]:
    profiles = {"alice": ["@memory"], "bob": ["@memory"], "quiet": []}
    with MemoryBank(profiles=profiles, clock=clock) as instance:
        yield instance


def with_bank(app: FastAPI, bank: MemoryBank) -> FastAPI:
    app.state.bank = bank
    return app


@pytest.fixture
def client(mem: Memory, bank: MemoryBank) -> Iterator[TestClient]:
    with TestClient(with_bank(make_app(mem), bank), base_url=LOCAL_BASE) as test_client:
        yield test_client


def test_every_bank_route_is_503_without_a_bank(mem: Memory) -> None:
    with TestClient(make_app(mem), base_url=LOCAL_BASE) as client:
        for method, path, kwargs in BANK_ROUTES:
            response = client.request(method, path, **kwargs)
            assert_error(response, 503, "BankUnavailableError", "not wired")


def test_create_get_list_search_and_delete(
    client: TestClient, bank: MemoryBank, clock: FrozenClock
) -> None:
    url = "/api/profiles/alice/memories"
    created = client.post(
        url, json={"content": "The user is allergic to peanuts.", "category": "fact"}
    )
    assert created.status_code == 201, created.text
    memory = created.json()
    assert set(memory) == {
        "id",
        "profileName",
        "rawInput",
        "processedContent",
        "summary",
        "category",
        "source",
        "confidence",
        "createdAt",
        "lastAccessedAt",
        "accessCount",
        "stalenessScore",
        "isActive",
        "version",
    }
    assert (memory["profileName"], memory["category"], memory["confidence"]) == (
        "alice",
        "fact",
        1.0,
    )
    assert bank.get("alice", memory["id"]).to_json() == memory  # the SDK sees the same record
    clock.advance(minutes=1)
    raw = client.post(url, json={"rawInput": "We deploy the API with Helm on Fridays."}).json()
    assert (raw["category"], raw["confidence"], raw["source"]) == ("general", 1.0, "explicit")
    assert client.get(f"{url}/{memory['id']}").json() == memory

    page = client.get(url, params={"limit": 1}).json()
    assert [m["id"] for m in page["memories"]] == [raw["id"]]  # newest first
    assert page["total"] == 2 and page["nextOffset"] == 1
    found = client.get(f"{url}/search", params={"q": "what diet should I follow?"}).json()
    assert found["profile"] == "alice" and [h["memory"]["id"] for h in found["hits"]] == [
        memory["id"]
    ]
    relevance = found["hits"][0]["relevance"]
    assert set(relevance) == {
        "score",
        "recency",
        "usage",
        "topic",
        "confidenceMultiplier",
        "maturity",
        "weights",
    }
    assert relevance["topic"] == 0.5 and found["hits"][0]["score"] == relevance["score"]
    # one word of four, fresh, certain, a new bank: 0.5 * 1 + 0.5 * 0.25 = 0.625
    q = "fridays alpha beta gamma"
    some = client.get(f"{url}/search", params={"q": q, "minScore": 0.62}).json()
    assert [h["score"] for h in some["hits"]] == [0.625]
    assert client.get(f"{url}/search", params={"q": q, "minScore": 0.63}).json()["hits"] == []
    bank.flush()
    assert bank.get("alice", memory["id"]).access_count == 0  # the dashboard search is read-only

    assert client.delete(f"{url}/{memory['id']}").status_code == 204
    assert_error(client.get(f"{url}/{memory['id']}"), 404, "NotFoundError", memory["id"])
    assert_error(client.delete(f"{url}/{memory['id']}"), 404)


def test_bad_input_over_rest(client: TestClient, bank: MemoryBank) -> None:
    url = "/api/profiles/alice/memories"
    assert_error(client.post(url, json={"rawInput": "a" * 4097}), 400, says="over the 4 KiB")
    assert_error(
        client.post(url, json={"content": "x", "category": "wisdom"}), 422, says="category"
    )
    for confidence in (1.5, -0.1):
        bad = {"content": "x", "confidence": confidence}
        assert_error(client.post(url, json=bad), 422, says="confidence")
    assert_error(client.post(url, json={}), 400, says="nothing to save")
    assert_error(client.post(url, json={"content": "x", "extra": 1}), 422, says="extra")
    assert_error(client.post(url, json={"content": 5}), 422, says="content")
    unknown = "/api/profiles/nobody/memories"
    assert_error(client.get(unknown), 404, "NotFoundError", "unknown profile 'nobody'")
    assert_error(client.post(unknown, json={"content": "x"}), 404, says="unknown profile")
    assert_error(client.get("/api/profiles/a%2Fb/memories"), 404)  # not a route at all
    assert_error(client.get(f"{url}/mem-XYZ"), 404)  # only mem-<8hex> is routed
    assert_error(client.get(f"{url}/mem-00000000"), 404, says="no memory 'mem-00000000'")
    assert_error(client.get(f"{url}/search", params={"q": "x", "limit": 0}), 422, says="limit")
    assert list(bank.objects.list("")) == []


def test_the_global_views_group_page_and_roll_up(client: TestClient, bank: MemoryBank) -> None:
    a1 = bank.save("alice", content="Alice prefers tea.", category="preference")
    a2 = bank.save("alice", content="Alice deploys with Helm.", category="behavior")
    b1 = bank.save("bob", content="Bob prefers coffee.", category="preference")
    grouped = client.get("/api/memory-bank").json()
    assert grouped["memories"] is None and grouped["total"] == 3
    assert {
        name: sorted(m["id"] for m in items) for name, items in grouped["profiles"].items()
    } == {
        "alice": sorted([a1.id, a2.id]),
        "bob": [b1.id],
    }
    flat = client.get("/api/memory-bank", params={"limit": 2}).json()
    assert flat["profiles"] is None and len(flat["memories"]) == 2 and flat["nextOffset"] == 2
    prefs = client.get("/api/memory-bank", params={"category": "preference"}).json()
    assert sorted(m["id"] for m in prefs["memories"]) == sorted([a1.id, b1.id])
    ranked = client.get("/api/memory-bank", params={"q": "coffee or tea drinks"}).json()
    assert {m["id"] for m in ranked["memories"]} == {a1.id, b1.id}
    assert all("relevance" in hit for hit in ranked["hits"])
    assert_error(client.get("/api/memory-bank", params={"category": "nope"}), 422)
    stats = client.get("/api/memory-bank/stats").json()
    assert stats == {
        "totalMemories": 3,
        "profilesWithMemory": 2,
        "perProfile": {"alice": 2, "bob": 1},
        "storage": "memory",
        "durable": False,
        "skipped": [],
    }


def test_the_openapi_document_describes_the_bank(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    request = spec["components"]["schemas"]["MemoryCreateRequest"]
    assert set(request["properties"]) == {
        "rawInput",
        "content",
        "category",
        "confidence",
        "summary",
    }
    assert all(field.get("description") for field in request["properties"].values())
    post = spec["paths"]["/api/profiles/{name}/memories"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "MemoryCreateRequest"
    )
    assert "503" in post["responses"] and "404" in post["responses"]
    assert (
        "BankMemoryOut" in post["responses"]["201"]["content"]["application/json"]["schema"]["$ref"]
    )


# -- keys: profiles are the spaces profile:<name> ------------------------------------------------


@pytest.fixture
def keyed(mem: Memory, bank: MemoryBank) -> Iterator[tuple[TestClient, dict, dict]]:
    app = with_bank(make_app(mem, require_keys=True), bank)
    _, alice = app.state.keys.create(spaces=["profile:alice"], admin=False, name="a", now=NOW)
    _, admin = app.state.keys.create(spaces=[], admin=True, name="root", now=NOW)
    with TestClient(app, base_url=LOCAL_BASE) as client:
        yield client, {"x-api-key": alice}, {"x-api-key": admin}


def test_a_profile_key_reaches_its_profile_only(
    keyed: tuple[TestClient, dict, dict], bank: MemoryBank
) -> None:
    client, alice, admin = keyed
    bob = bank.save("bob", content="Bob's secret.")
    r = client.post("/api/profiles/alice/memories", json={"content": "Mine."}, headers=alice)
    assert r.status_code == 201
    assert client.get("/api/profiles/alice/memories", headers=alice).json()["total"] == 1
    for method, path in [
        ("GET", "/api/profiles/bob/memories"),
        ("GET", f"/api/profiles/bob/memories/{bob.id}"),
        ("DELETE", f"/api/profiles/bob/memories/{bob.id}"),
    ]:
        assert_error(client.request(method, path, headers=alice), 403, "ForbiddenError")
    assert_error(client.get("/api/memory-bank", headers=alice), 403, says="admin key")
    assert_error(client.get("/api/memory-bank/stats", headers=alice), 403, says="admin key")
    assert client.get("/api/memory-bank/stats", headers=admin).json()["totalMemories"] == 2
    assert bank.get("bob", bob.id) == bob
    carol = client.app.state.keys.create(spaces=["profile:carol"], admin=False, name="c", now=NOW)
    unknown = client.get("/api/profiles/carol/memories", headers={"x-api-key": carol[1]})
    assert_error(unknown, 404, says="unknown profile 'carol'")
    assert "bob" not in unknown.text and "alice" not in unknown.text  # no other tenant named


# -- MCP ------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_memory_tools_over_mcp_with_profile_keys(
    tmp_path: Path, clock: FrozenClock
) -> None:
    with (
        Memory(tmp_path / "mcp.db") as mem,
        MemoryBank(profiles={"alice": ["@memory"], "bob": ["@memory"]}, clock=clock) as bank,
    ):
        app = create_app(mem, ServerSettings(require_keys=True))
        app.state.bank = bank
        install_api(app)
        install_mcp(app)
        _, key = app.state.keys.create(spaces=["profile:alice"], admin=False, name="a", now=NOW)
        secret = bank.save("bob", content="Bob's secret plan.")
        with serve(app) as base:
            async with http_session(base + "/mcp?profile=alice", {"x-api-key": key}) as session:
                names = sorted(t.name for t in (await session.list_tools()).tools)
                assert names == sorted([*TOOLS, *BANK_TOOLS])
                saved = (
                    await ok(
                        session,
                        "memory_save",
                        content="The user is allergic to peanuts.",
                        category="fact",
                        confidence=0.9,
                    )
                ).structured_content
                assert (saved["category"], saved["confidence"]) == ("fact", 0.9)
                raw = await ok(session, "memory_save", profile="alice", rawInput="Uses pnpm.")
                assert raw.structured_content["category"] == "general"
                recalled = (
                    await ok(session, "memory_recall", query="diet for dinner")
                ).structured_content
                [hit] = recalled["hits"]
                assert hit["memory"]["id"] == saved["id"] and hit["relevance"]["topic"] == 0.5
                listed = (await ok(session, "memory_list", limit=1)).structured_content
                assert listed["total"] == 2 and listed["nextOffset"] == 1
                gone = await ok(session, "memory_delete", id=saved["id"])
                assert gone.structured_content == {"deleted": saved["id"], "profile": "alice"}
                message = await refused(session, "memory_delete", id=saved["id"])
                assert "no memory" in message
                message = await refused(session, "memory_save", rawInput="a" * 4097)
                assert "4 KiB" in message
                message = await refused(session, "memory_save", content="x", category="wisdom")
                assert "category" in message
            # a session bound to bob: alice's key may not use the space profile:bob
            async with http_session(base + "/mcp?profile=bob", {"x-api-key": key}) as session:
                for tool, arguments in [
                    ("memory_save", {"content": "x"}),
                    ("memory_recall", {"query": "plan"}),
                    ("memory_list", {}),
                    ("memory_delete", {"id": secret.id}),
                ]:
                    message = await refused(session, tool, **arguments)
                    assert "not allowed to use space 'profile:bob'" in message, message
                offered_for_bob = sorted(t.name for t in (await session.list_tools()).tools)
            # nor may it learn that bob exists: a profile nobody has is answered the same way
            async with http_session(base + "/mcp?profile=nobody", {"x-api-key": key}) as session:
                assert sorted(t.name for t in (await session.list_tools()).tools) == offered_for_bob
                message = await refused(session, "memory_list")
                assert "not allowed to use space 'profile:nobody'" in message
                assert "bob" not in message and "alice" not in message
        bank.flush()
        assert [m.id for m in bank.list("bob").memories] == [secret.id]


def test_without_a_bank_mcp_serves_only_the_core_tools(mem: Memory) -> None:
    import anyio

    from orcamem.interfaces.mcp.server import build_server

    async def names(**kwargs: Any) -> list[str]:
        return sorted(t.name for t in await build_server(mem, **kwargs).list_tools())

    assert anyio.run(names) == sorted(TOOLS)
    with MemoryBank() as bank:
        assert anyio.run(lambda: names(bank=bank)) == sorted([*TOOLS, *BANK_TOOLS])
    assert BANK_TOOLS == ("memory_save", "memory_recall", "memory_list", "memory_delete")

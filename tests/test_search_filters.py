"""Search with filters (issue 17 item 7) as users reach it: ``Memory.search(filters=)``, REST
``/api/search``, ``orcamem search``; the stores' clauses are pinned in test_store_contract.py,
the MCP tool in test_mcp.py, the dashboard in test_ui.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from orcamem import InvalidInputError, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.engine import SearchFilter
from orcamem.interfaces.cli.main import app
from orcamem.interfaces.http import ServerSettings, create_app
from orcamem.interfaces.http.api import install
from servers import LOCAL_BASE

NOW = "2026-11-01T10:00:00Z"
TURNS = [  # (text, role, session, day, source)
    ("My dog Rex loves the harbour park.", "user", "s1", 1, "chat"),
    ("Rex sounds like a lovely dog!", "assistant", "s1", 1, "chat"),
    ("I walked Rex along the harbour at dawn.", "user", "s2", 5, "import"),
    ("Rex chewed my running shoes.", "user", "s2", 6, "chat"),
    ("I drive a blue Honda Civic.", "user", "s3", 8, "chat"),
    ("We deploy the API with Helm.", "user", "s3", 9, "import"),
    ("The weather in Pune is humid.", "user", "s4", 12, "chat"),
    ("My sister lives in Lisbon.", "user", "s4", 14, "chat"),
    ("Rex needs his vaccine next month.", "user", "s5", 20, "import"),
    ("I prefer green tea in the morning.", "user", "s5", 21, "chat"),
]


def seed(mem: Memory, space: str = "default") -> None:
    for text, role, session, day, source in TURNS:
        mem.add(
            text,
            space=space,
            kind="turn",
            role=role,
            session_id=session,
            occurred_at=f"2026-10-{day:02d}T09:00:00Z",
            meta={"source": source},
        )


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "f.db", clock=FrozenClock(NOW)) as memory:
        seed(memory)
        yield memory


def texts(result) -> list[str]:
    return [hit.text for hit in result.hits]


def test_each_filter_ranks_only_what_matches(mem: Memory) -> None:
    imported = {e.id for e in mem.store.iter_episodes("default") if e.meta["source"] == "import"}
    cases = [
        ("Rex the dog", {"session": "s2"}, lambda hit: hit.session_id == "s2"),
        ("Rex the dog", {"role": "assistant"}, lambda hit: hit.role == "assistant"),
        (
            "Rex the dog",
            {"since": "2026-10-05", "until": "2026-10-20T09:00:00Z"},
            lambda hit: "2026-10-05" <= hit.occurred_at <= "2026-10-20T09:00:00.000000Z",
        ),
        (
            "Rex dog harbour walk",
            {"metadata": {"source": "import"}},
            lambda hit: hit.episode_id in imported,
        ),
    ]
    for query, where, holds in cases:
        everything = mem.search(query).hits
        hits = mem.search(query, filters=where).hits
        assert hits, where
        assert all(holds(hit) for hit in hits), where
        assert not all(holds(hit) for hit in everything), where  # the filter took something
        shared = [hit.text for hit in everything if hit.text in {h.text for h in hits}]
        assert [hit.text for hit in hits if hit.text in shared] == shared, where  # same order


def test_the_switched_off_mechanisms_keep_to_the_filter_too(mem: Memory) -> None:
    # evidence sets pull an entity's mentions from other sessions: never past the filter
    signals = mem.config.signals.with_(enable_evidence_sets=True, enable_anchored_time=True)
    mem.config = mem.config.with_(signals=signals)
    for where, holds in (
        ({"session": "s2"}, lambda hit: hit.session_id == "s2"),
        ({"role": "user", "until": "2026-10-06"}, lambda hit: hit.occurred_at < "2026-10-07"),
    ):
        hits = mem.search("What did Rex do at the harbour?", filters=where).hits
        assert hits and all(holds(hit) for hit in hits), where


def test_an_empty_filter_is_exactly_the_unfiltered_search(mem: Memory) -> None:
    plain = mem.search("Where does my sister live?").to_dict()
    for empty in (None, {}, SearchFilter(), {"metadata": {}}, {"role": None}):
        filtered = mem.search("Where does my sister live?", filters=empty).to_dict()
        assert {**filtered, "timings_ms": {}} == {**plain, "timings_ms": {}}


def test_a_filter_does_not_lower_the_evidence_bar(mem: Memory) -> None:
    """The calibration stays the space's: a query the space has no evidence for finds
    nothing, however narrow the filter, and a filter that leaves only weak lines does not
    promote them."""
    assert mem.search("What is the capital of France?").hits == []
    assert mem.search("What is the capital of France?", filters={"session": "s4"}).hits == []
    assert texts(mem.search("Honda Civic", filters={"session": "s1"})) == []


def test_memories_rules_and_the_current_state_keep_to_the_filter(mem: Memory) -> None:
    mem.remember("Rex is a beagle.", category="fact", space="default")
    mem.forbid("Never feed Rex chocolate.", space="default", always=True)
    everything = mem.search("Rex the dog beagle")
    assert any(hit.kind == "memory" for hit in everything.hits) and everything.rules
    passages = mem.search("Rex the dog beagle", filters={"kind": "passage"})
    assert passages.hits and all(hit.kind == "passage" for hit in passages.hits)
    assert passages.rules == []
    memories = mem.search("Rex the dog beagle", filters={"kind": "memory"})
    assert [hit.text for hit in memories.hits] == ["Rex is a beagle."]
    assert [rule.text for rule in memories.rules] == ["Never feed Rex chocolate."]
    facts = mem.search("Rex the dog beagle", filters={"category": "fact"})
    assert [hit.text for hit in facts.hits] == ["Rex is a beagle."] and facts.rules == []
    # a role or metadata filter is about episodes: no memory has either
    assert all(hit.kind == "passage" for hit in mem.search("Rex", filters={"role": "user"}).hits)


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ({"kind": "rule"}, "use one of passage, memory"),
        ({"category": "hobby"}, "use one of fact, preference"),
        ({"since": "last week"}, "since='last week' is not an ISO-8601 time"),
        ({"since": "2026-10-05", "until": "2026-10-01"}, "is before since"),
        ({"session": " "}, "session is blank"),
        ({"metadata": {"a b": "x"}}, "invalid metadata key 'a b'"),
        ({"metadata": {"source": 5}}, "matches string values only"),
        ({"metadata": {f"k{i}": "v" for i in range(9)}}, "at most 8"),
        ({"speaker": "user"}, "unknown filter speaker: use kind, role, session"),
        ("session=s1", "filters must be a SearchFilter or a mapping"),
    ],
)
def test_a_bad_filter_is_refused_with_what_is_allowed(mem: Memory, where, says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        mem.search("Rex", filters=where)


def test_recall_builds_the_block_of_what_matches(mem: Memory) -> None:
    assert "Lisbon" in mem.recall("Where does my sister live?")
    assert "Lisbon" not in mem.recall("Where does my sister live?", filters={"session": "s1"})


# -- REST --------------------------------------------------------------------------------------


@pytest.fixture
def client(mem: Memory, tmp_path: Path) -> Iterator[TestClient]:
    seed(mem, "other")
    application = create_app(mem, ServerSettings(workspace=str(tmp_path / "workspace")))
    install(application)
    with TestClient(application, base_url=LOCAL_BASE) as test_client:
        yield test_client


def test_rest_get_and_post_take_the_same_filters(client: TestClient) -> None:
    params = {"q": "Rex dog harbour walk", "session": "s2", "meta": "source=import"}
    got = client.get("/api/search", params=params)
    assert got.status_code == 200, got.text
    hits = got.json()["hits"]
    assert [hit["text"] for hit in hits] == ["I walked Rex along the harbour at dawn."]
    assert all(hit["space"] == "default" for hit in hits)  # the other space's twin stays out
    posted = client.post(
        "/api/search",
        json={
            "query": "Rex dog harbour walk",
            "filters": {"session": "s2", "metadata": {"source": "import"}},
        },
    )
    assert posted.status_code == 200, posted.text
    assert [hit["id"] for hit in posted.json()["hits"]] == [hit["id"] for hit in hits]
    dated = client.get(
        "/api/search", params={"q": "Rex", "since": "2026-10-06", "role": "user", "kind": "passage"}
    ).json()["hits"]
    assert dated and all(hit["occurred_at"] >= "2026-10-06" for hit in dated)


def test_rest_refuses_a_bad_filter_with_the_rule(client: TestClient) -> None:
    late = client.get(
        "/api/search", params={"q": "Rex", "since": "2026-10-05", "until": "2026-10-01"}
    )
    assert late.status_code == 400 and "is before since" in late.json()["error"]["message"]
    meta = client.get("/api/search", params={"q": "Rex", "meta": "source"})
    assert meta.status_code == 400 and "use key=value" in meta.json()["error"]["message"]
    kind = client.post("/api/search", json={"query": "Rex", "filters": {"kind": "rule"}})
    assert kind.status_code == 422
    extra = client.post("/api/search", json={"query": "Rex", "filters": {"speaker": "x"}})
    assert extra.status_code == 422


# -- CLI ---------------------------------------------------------------------------------------


def test_cli_search_filters_with_json(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with Memory(db, clock=FrozenClock(NOW)) as memory:
        seed(memory)
    runner = CliRunner()
    args = ["search", "Rex dog harbour walk", "--db", str(db), "--json"]
    narrowed = runner.invoke(app, [*args, "--session", "s2", "--meta", "source=import"])
    assert narrowed.exit_code == 0, narrowed.output
    hits = json.loads(narrowed.stdout)["hits"]
    assert [hit["text"] for hit in hits] == ["I walked Rex along the harbour at dawn."]
    roles = runner.invoke(
        app, ["search", "Rex the dog", "--db", str(db), "--json", "--role", "assistant"]
    )
    assert [hit["role"] for hit in json.loads(roles.stdout)["hits"]] == ["assistant"]
    table = runner.invoke(app, ["search", "Rex", "--db", str(db), "--kind", "memory"])
    assert table.exit_code == 0 and "no memories match" in " ".join(table.stdout.split())
    bad = runner.invoke(app, [*args, "--since", "2026-10-05", "--until", "2026-10-01"])
    assert bad.exit_code != 0 and "is before since" in " ".join(bad.output.split())
    assert "Traceback" not in bad.output


# -- Memory Bank -------------------------------------------------------------------------------


def test_bank_search_by_category_in_the_sdk_and_the_api(mem: Memory) -> None:
    from orcamem import MemoryBank

    with MemoryBank(profiles={"alice": ["@memory"]}, clock=FrozenClock(NOW)) as bank:
        fact = bank.save("alice", content="The user is allergic to peanuts.", category="fact")
        liked = bank.save("alice", content="The user likes peanut butter.", category="preference")
        every = {hit.memory.id for hit in bank.search("alice", "peanuts", min_score=0.0)}
        assert every == {fact.id, liked.id}
        only = bank.search("alice", "peanuts", min_score=0.0, category="preference")
        assert [hit.memory.id for hit in only] == [liked.id]
        with pytest.raises(InvalidInputError, match="use one of preference, fact"):
            bank.search("alice", "peanuts", category="state")
        application = create_app(mem, ServerSettings(workspace=str(Path(mem.store.path).parent)))
        install(application)
        application.state.bank = bank
        with TestClient(application, base_url=LOCAL_BASE) as client:
            url = "/api/profiles/alice/memories/search"
            got = client.get(url, params={"q": "peanuts", "minScore": 0, "category": "fact"})
            assert got.status_code == 200, got.text
            assert [hit["memory"]["id"] for hit in got.json()["hits"]] == [fact.id]
            assert client.get(url, params={"q": "peanuts", "category": "x"}).status_code == 422

"""LangGraph's ``BaseStore`` over orcamem (``orcamem.integrations.langgraph.OrcamemStore``),
and LangChain's retriever (``orcamem.integrations.langchain.OrcamemRetriever``).

LangGraph ships no store conformance suite (its ``langgraph-checkpoint-conformance`` covers
checkpointers only), so the cases of its own store tests (``libs/checkpoint/tests/
test_store.py``: namespaces, pagination, put/update/delete, filters, search edge cases) are
ported here against a real SQLite file, plus what orcamem adds: the namespace <-> space
mapping, persistence across a reopen, TTL on an injected clock, and a real compiled graph
whose node reads and writes the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError, PutOp

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.errors import InvalidInputError
from orcamem.integrations.langchain import OrcamemRetriever
from orcamem.integrations.langgraph import OrcamemStore, namespace_of, space_of

NOW = "2026-11-01T10:00:00Z"


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(NOW)


@pytest.fixture
def memory(tmp_path: Path, clock: FrozenClock) -> Iterator[Memory]:
    with Memory(tmp_path / "store.db", clock=clock) as mem:
        yield mem


@pytest.fixture
def store(memory: Memory) -> OrcamemStore:
    return OrcamemStore(memory)


# -- namespaces <-> spaces ----------------------------------------------------------------


def test_a_namespace_is_a_space_and_back() -> None:
    assert space_of(("users", "alice", "memories")) == "lg:users.alice.memories"
    assert space_of(("docs", "a b:c@d")) == "lg:docs.a@20b@3ac@40d"
    assert namespace_of("lg:docs.a@20b@3ac@40d") == ("docs", "a b:c@d")
    assert namespace_of("user_alice") is None  # not a store space


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(st.characters(blacklist_characters=".\x00"), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    )
)
def test_the_mapping_is_reversible_for_any_labels(labels: list[str]) -> None:
    namespace = tuple(labels)
    try:
        space = space_of(namespace)
    except InvalidInputError:
        return  # over 128 characters once escaped: refused, never truncated
    assert namespace_of(space) == namespace


def test_a_lone_surrogate_in_a_label_or_key_is_refused_not_a_crash(store: OrcamemStore) -> None:
    for bad in [(("a\ud800",), "k"), (("a",), "k\udfff")]:
        with pytest.raises(InvalidInputError, match="lone surrogate"):
            store.put(*bad, {"v": 1})
        with pytest.raises(InvalidInputError, match="lone surrogate"):
            store.get(*bad)
    assert store.list_namespaces() == []


def test_a_namespace_too_long_for_a_space_is_refused_with_what_to_do(
    store: OrcamemStore,
) -> None:
    with pytest.raises(InvalidInputError, match="fewer or shorter labels"):
        store.put(("x" * 200,), "k", {"a": 1})
    assert store.list_namespaces() == []


# -- get / put / delete -------------------------------------------------------------------


def test_put_get_update_delete_and_created_at_kept(store: OrcamemStore, clock: FrozenClock) -> None:
    ns = ("users", "alice")
    assert store.get(ns, "food") is None
    store.put(ns, "food", {"text": "Alice loves spicy Sichuan noodles"})
    first = store.get(ns, "food")
    assert first is not None and first.value == {"text": "Alice loves spicy Sichuan noodles"}
    assert first.namespace == ns and first.key == "food"
    clock.advance(minutes=5)
    store.put(ns, "food", {"text": "Alice now prefers sushi"})
    second = store.get(ns, "food")
    assert second is not None and second.value == {"text": "Alice now prefers sushi"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    assert store.search(ns) == []


def test_keys_of_any_characters_and_the_same_key_in_two_namespaces(store: OrcamemStore) -> None:
    odd = "k/ey with spaces, ünïcode and\ttab"
    store.put(("a",), odd, {"n": 1})
    store.put(("b",), odd, {"n": 2})
    assert store.get(("a",), odd).value == {"n": 1}  # type: ignore[union-attr]
    assert store.get(("b",), odd).value == {"n": 2}  # type: ignore[union-attr]


def test_items_survive_a_reopen_of_the_file(tmp_path: Path, clock: FrozenClock) -> None:
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        OrcamemStore(mem).put(("prefs",), "tone", {"text": "short answers, no emoji"})
    with Memory(tmp_path / "m.db", clock=clock) as mem:
        item = OrcamemStore(mem).get(("prefs",), "tone")
    assert item is not None and item.value == {"text": "short answers, no emoji"}


def test_bad_values_are_refused_and_keep_the_old_one(store: OrcamemStore) -> None:
    store.put(("a",), "k", {"n": 1})
    with pytest.raises(InvalidInputError, match="dict"):
        store.batch([PutOp(("a",), "k", ["not", "a", "dict"])])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="JSON"):
        store.put(("a",), "k", {"n": object()})
    assert store.get(("a",), "k").value == {"n": 1}  # type: ignore[union-attr]


def test_invalid_namespaces_are_refused_as_langgraph_says(store: OrcamemStore) -> None:
    # ported from test_cannot_put_empty_namespace
    doc = {"foo": "bar"}
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(store.aput(bad, "foo", doc))
    with pytest.raises(InvalidNamespaceError):  # past the public put: still no '.'
        store.batch([PutOp(("a.b",), "k", doc)])
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.get(("foo", "langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]
    assert store.search(("foo", "langgraph", "foo"))[0].value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])  # LangGraph allows it past put()
    assert store.get(("langgraph", "foo"), "bar").value == doc  # type: ignore[union-attr]


# -- list_namespaces (ported) ---------------------------------------------------------------


def _fill(store: OrcamemStore, namespaces: list[tuple[str, ...]]) -> None:
    for i, ns in enumerate(namespaces):
        store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})


def test_list_namespaces_prefix_suffix_depth_and_pages(store: OrcamemStore) -> None:
    assert store.list_namespaces() == []
    _fill(
        store,
        [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"),
         ("a", "c", "f"), ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"),
         ("admin", "users", "789")],
    )  # fmt: skip
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b")) == ab
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f"),
    ]  # fmt: skip
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == ab[:2]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == ab[2:]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]


def test_list_namespaces_pagination_and_emptied_namespaces(store: OrcamemStore) -> None:
    for i in range(12):
        store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": i})
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)
    ]
    store.delete(("namespace", "sub_00"), "id_00")
    assert ("namespace", "sub_00") not in store.list_namespaces(prefix=("namespace",))


def test_store_spaces_do_not_mix_with_chat_spaces(store: OrcamemStore, memory: Memory) -> None:
    memory.observe("user", "I live in Pune.", session_id="s1", space="user_alice")
    store.put(("users", "alice"), "home", {"text": "Pune"})
    assert store.list_namespaces() == [("users", "alice")]
    assert sorted(memory.spaces()) == ["lg:users.alice", "user_alice"]


def test_two_prefixes_stay_apart_and_a_prefix_cannot_reach_into_another(
    store: OrcamemStore, memory: Memory
) -> None:
    """A prefix with ':' made another store's spaces read as the default store's namespaces:
    listed, searched and swept by it. Such a prefix is refused, and a space that is not one
    ``space_of`` writes is no namespace of a prefix."""
    for bad in ("lg:tenant1", "a.b", "x@41", "", "p" * 33):
        with pytest.raises(InvalidInputError, match="prefix"):
            OrcamemStore(memory, prefix=bad)
    tenant = OrcamemStore(memory, prefix="tenant1")
    tenant.put(("users", "bob"), "note", {"text": "Bob's private medical note"})
    memory.add("planted by hand", kind="document", space="lg:tenant1:users.bob")
    assert store.list_namespaces() == []
    assert store.search(()) == []
    assert tenant.list_namespaces() == [("users", "bob")]
    assert namespace_of("lg:tenant1:users.bob") is None
    assert namespace_of("lg:a@zz") is None and namespace_of("lg:a@ff") is None


def test_values_langgraph_s_own_store_takes_are_taken(store: OrcamemStore) -> None:
    """An indexed field with an ANSI colour and a value over 1 MiB were refused (a graph node
    crashed where LangGraph's InMemoryStore stores both): the searchable text is made
    storable, the value kept whole."""
    coloured = {"text": "\x1b[32mbuild green\x1b[0m"}
    big = {"text": "log " + "y" * 1_500_000}
    store.put(("ci",), "status", coloured)
    store.put(("ci",), "log", big)
    assert store.get(("ci",), "status").value == coloured  # type: ignore[union-attr]
    assert store.get(("ci",), "log").value == big  # type: ignore[union-attr]


# -- search (ported cases, then orcamem's recall) -----------------------------------------


FILLER = [
    "The quarterly budget review moved to Thursday.", "Our cat Miso sleeps on the radiator.",
    "The train to Leeds leaves at seven.", "Grandma's birthday party is in March.",
    "The printer on floor two is jammed again.", "We repainted the fence dark green.",
    "The library closes early on Sundays.", "My bike tyre needs a new valve.",
]  # fmt: skip


def _filler(store: OrcamemStore, ns: tuple[str, ...]) -> None:
    """Unrelated items: recall gates a namespace only once it holds enough text to tell rare
    words from common ones (``recall.hybrid.CALIBRATION_TEXTS``); a tiny one never abstains."""
    for i, text in enumerate(FILLER):
        store.put(ns, f"filler{i}", {"text": text})


COLOURS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


def test_search_with_query_and_filters(store: OrcamemStore) -> None:
    _filler(store, ("test",))
    for key, value in COLOURS:
        store.put(("test",), key, value)
    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in results] == ["doc1", "doc2"]
    assert results[0].score is not None and results[1].score is None  # no apple in a car
    results = store.search(("test",), query="car", filter={"color": "red"})
    assert results[0].key == "doc2"
    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert sorted(r.key for r in results) == ["doc1", "doc3", "doc4"]
    results = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [r.key for r in results] == ["doc3"]


@pytest.mark.parametrize(
    ("where", "keys"),
    [
        ({"score": {"$eq": 3.0}}, ["doc2"]),
        ({"score": {"$ne": 3.0}}, ["doc1", "doc3", "doc4"]),
        ({"score": {"$gt": 4.0}}, ["doc1"]),
        ({"score": {"$gte": 4.0}}, ["doc1", "doc3"]),
        ({"score": {"$lt": 3.5}}, ["doc2"]),
        ({"score": {"$lte": 3.5}}, ["doc2", "doc4"]),
        ({"score": {"$gt": 3.0, "$lt": 4.5}}, ["doc3", "doc4"]),
        ({"color": "red"}, ["doc1", "doc2"]),
        ({"color": {"$gt": 5}}, []),  # no order between str and int: no match, no error
        ({"color": {"$gt": "green"}}, ["doc1", "doc2"]),  # two strings: as strings
        ({"score": {"$gte": "4"}}, ["doc1", "doc3"]),  # a numeric string: as a number
        ({"missing": {"$ne": 1}}, ["doc1", "doc2", "doc3", "doc4"]),
    ],
)
def test_every_filter_operator(store: OrcamemStore, where: dict[str, Any], keys: list[str]) -> None:
    for key, value in COLOURS:
        store.put(("test",), key, value)
    assert sorted(r.key for r in store.search(("test",), filter=where)) == keys


def test_nested_and_list_filters_and_an_unknown_operator(store: OrcamemStore) -> None:
    store.put(("t",), "a", {"meta": {"lang": "fr", "tags": ["x", "y"]}})
    store.put(("t",), "b", {"meta": {"lang": "en", "tags": ["x"]}})
    assert [r.key for r in store.search(("t",), filter={"meta": {"lang": "fr"}})] == ["a"]
    assert [r.key for r in store.search(("t",), filter={"meta": {"tags": ["x"]}})] == ["b"]
    with pytest.raises(InvalidInputError, match=r"\$eq"):
        store.search(("t",), filter={"meta": {"$in": ["fr"]}})


def test_an_update_is_searched_by_its_new_words_only(store: OrcamemStore) -> None:
    # ported from test_vector_update_with_embedding
    _filler(store, ("test",))
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    first = store.search(("test",), query="Zany Xerxes")
    assert first[0].key == "doc1" and first[0].score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = {r.key: r.score for r in store.search(("test",), query="Zany Xerxes")}
    assert after["doc1"] is None  # the old words are gone with the old version
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})  # and back (the other slot)
    assert store.search(("test",), query="Zany Xerxes")[0].key == "doc1"


def test_index_false_and_index_fields(memory: Memory) -> None:
    store = OrcamemStore(memory, index={"fields": ["text"]})
    _filler(store, ("t",))
    store.put(("t",), "a", {"text": "the wedding is in Porto", "note": "saffron"})
    store.put(("t",), "b", {"text": "the wedding is in Porto"}, index=False)
    store.put(("t",), "c", {"text": "nothing", "note": "saffron"}, index=["note"])
    by_porto = {r.key: r.score for r in store.search(("t",), query="wedding Porto")}
    assert by_porto["a"] is not None and by_porto["b"] is None
    by_saffron = {r.key: r.score for r in store.search(("t",), query="saffron")}
    assert by_saffron["c"] is not None and by_saffron["a"] is None  # "note" not an index field
    assert store.get(("t",), "b").value == {"text": "the wedding is in Porto"}  # type: ignore[union-attr]


def test_search_pagination_and_edge_cases(store: OrcamemStore) -> None:
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert not {r.key for r in page1} & {r.key for r in page2}
    assert len(store.search(("test",), query="test", limit=10)) == 5
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 5


def test_search_under_a_prefix_spans_namespaces(store: OrcamemStore) -> None:
    store.put(("users", "alice"), "food", {"text": "Alice loves spicy Sichuan noodles"})
    store.put(("users", "bob"), "food", {"text": "Bob cannot stand spicy food"})
    store.put(("teams", "x"), "food", {"text": "The team orders spicy noodles"})
    found = store.search(("users",), query="spicy noodles")
    assert {r.namespace for r in found} == {("users", "alice"), ("users", "bob")}
    assert found[0].namespace == ("users", "alice")


# -- TTL ------------------------------------------------------------------------------------


def test_ttl_expires_and_a_read_refreshes(memory: Memory, clock: FrozenClock) -> None:
    store = OrcamemStore(memory, ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("s",), "kept", {"text": "read often"})
    store.put(("s",), "gone", {"text": "never read"})
    store.put(("s",), "forever", {"text": "no ttl"}, ttl=None)
    clock.advance(minutes=8)
    assert store.get(("s",), "kept") is not None  # refreshed: 10 more minutes from now
    clock.advance(minutes=8)
    assert store.get(("s",), "kept", refresh_ttl=False) is not None
    assert store.get(("s",), "gone") is None
    assert sorted(r.key for r in store.search(("s",), refresh_ttl=False)) == ["forever", "kept"]
    clock.advance(minutes=3)
    assert store.get(("s",), "kept") is None
    assert store.sweep_ttl() == 2
    assert [r.key for r in store.search(("s",))] == ["forever"]


def test_a_ttl_as_timedelta_or_datetime_and_a_bad_one(memory: Memory, clock: FrozenClock) -> None:
    store = OrcamemStore(memory)
    store.batch([PutOp(("s",), "td", {"v": 1}, ttl=timedelta(minutes=5))])  # type: ignore[arg-type]
    store.batch([PutOp(("s",), "at", {"v": 2}, ttl=clock.now() + timedelta(minutes=20))])  # type: ignore[arg-type]
    for bad in (0, -3, "10", True):
        with pytest.raises(InvalidInputError, match="minutes"):
            store.put(("s",), "bad", {"v": 3}, ttl=bad)  # type: ignore[arg-type]
    clock.advance(minutes=6)
    assert store.get(("s",), "td") is None
    assert store.get(("s",), "at", refresh_ttl=False) is not None
    clock.advance(minutes=15)
    assert store.get(("s",), "at", refresh_ttl=False) is None
    assert store.get(("s",), "bad") is None  # a refused put writes nothing


def test_without_refresh_on_read_a_read_does_not_extend(memory: Memory, clock: FrozenClock) -> None:
    store = OrcamemStore(memory, ttl={"default_ttl": 10, "refresh_on_read": False})
    store.put(("s",), "k", {"v": 1})
    clock.advance(minutes=8)
    assert store.get(("s",), "k") is not None
    clock.advance(minutes=3)
    assert store.get(("s",), "k") is None


# -- async twins and a real graph -----------------------------------------------------------


def test_async_twins(store: OrcamemStore) -> None:
    async def run() -> None:
        await asyncio.gather(
            store.aput(("a",), "x", {"text": "alpha"}), store.aput(("a",), "y", {"text": "beta"})
        )
        assert (await store.aget(("a",), "x")).value == {"text": "alpha"}  # type: ignore[union-attr]
        assert len(await store.asearch(("a",), query="beta")) == 2
        assert await store.alist_namespaces() == [("a",)]
        await store.adelete(("a",), "x")
        assert await store.aget(("a",), "x") is None

    asyncio.run(run())


class _State(TypedDict):
    user: str
    said: str
    known: list[str]


def _remember(state: _State, *, store: BaseStore) -> dict[str, Any]:
    ns = ("users", state["user"])
    known = [item.value["text"] for item in store.search(ns, query=state["said"], limit=3)]
    store.put(ns, f"m{len(store.search(ns, limit=100))}", {"text": state["said"]})
    return {"known": known}


def test_a_compiled_langgraph_graph_reads_and_writes_through_the_store(
    tmp_path: Path, clock: FrozenClock
) -> None:
    builder = StateGraph(_State)
    builder.add_node("remember", _remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    with Memory(tmp_path / "graph.db", clock=clock) as mem:
        graph = builder.compile(store=OrcamemStore(mem))
        graph.invoke({"user": "alice", "said": "My sister Ana lives in Porto.", "known": []})
    with Memory(tmp_path / "graph.db", clock=clock) as mem:  # another run, another process
        graph = builder.compile(store=OrcamemStore(mem))
        out = graph.invoke({"user": "alice", "said": "Where does Ana live?", "known": []})
        other = graph.invoke({"user": "bob", "said": "Where does Ana live?", "known": []})
    assert out["known"] == ["My sister Ana lives in Porto."]
    assert other["known"] == []


# -- the retriever --------------------------------------------------------------------------


def test_the_retriever_returns_orcamem_search_hits_as_documents(memory: Memory) -> None:
    memory.observe(
        "user", "I moved to Lisbon and work as a pharmacist.", session_id="s1", space="u"
    )
    memory.observe("user", "My cat is called Miso.", session_id="s1", space="u")
    retriever = OrcamemRetriever(memory=memory, space="u", k=3)
    docs = retriever.invoke("Where do I work?")
    hits = memory.search("Where do I work?", space="u", top_k=3).hits
    assert docs and [d.page_content for d in docs] == [h.text for h in hits]
    assert isinstance(docs[0], Document)
    assert docs[0].page_content == "I moved to Lisbon and work as a pharmacist."
    assert docs[0].metadata["kind"] == "passage" and docs[0].metadata["session_id"] == "s1"
    assert (
        retriever.invoke("Where do I work?")
        and OrcamemRetriever(memory=memory, space="nobody", k=3).invoke("Where do I work?") == []
    )


def test_the_retriever_hands_no_secret_to_the_prompt_it_feeds(memory: Memory) -> None:
    """An observed turn keeps what the user said, key included; the block redacts it, and so
    must a retriever, whose documents go into a prompt."""
    memory.observe(
        "user", "My AWS key is AKIAIOSFODNN7EXAMPLE for the deploy.", session_id="s", space="k"
    )
    [doc] = OrcamemRetriever(memory=memory, space="k", k=1).invoke("What is my AWS key?")
    assert "AKIAIOSFODNN7EXAMPLE" not in doc.page_content
    assert doc.page_content == "My AWS key is [REDACTED:aws_access_key_id] for the deploy."

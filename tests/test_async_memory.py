"""``AsyncMemory`` is ``Memory``'s twin: the same public names and parameters, as coroutines,
over the same SQLite engine in a worker thread (issue 10)."""

from __future__ import annotations

import asyncio
import inspect
import io
import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from orcamem import AsyncMemory, ClosedError, Memory, NotFoundError
from orcamem._kernel.clock import FrozenClock
from orcamem.engine.store import SQLiteStore


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _instance_attributes(tmp_path: Path) -> set[str]:
    """Public attributes a Memory sets on itself (``config``, ``space``, ``store`` …)."""
    with Memory(tmp_path / "shape.db") as mem:
        return {name for name in vars(mem) if not name.startswith("_")}


def _first_line(obj: object) -> str:
    return (inspect.getdoc(obj) or "").strip().splitlines()[0]


def _assert_twin_method(name: str, sync: Callable[..., Any], twin: Callable[..., Any]) -> None:
    returns_iterator = str(inspect.signature(sync).return_annotation).startswith("Iterator")
    if returns_iterator:
        assert inspect.isasyncgenfunction(twin), f"{name} must be an async generator"
    else:
        assert inspect.iscoroutinefunction(twin), f"{name} must be a coroutine function"
    sync_params = list(inspect.signature(sync).parameters.values())
    twin_params = list(inspect.signature(twin).parameters.values())
    assert twin_params == sync_params, f"{name}: parameters differ"
    assert inspect.getdoc(twin), f"{name} needs a docstring"
    if inspect.getdoc(sync):
        assert _first_line(twin) == _first_line(sync), f"{name}: first docstring line differs"


def test_every_public_memory_name_has_its_async_twin(tmp_path: Path) -> None:
    """Adding a Memory method (or property, or attribute) without its twin fails here."""
    names = _public(Memory) | _instance_attributes(tmp_path)
    missing = sorted(names - _public(AsyncMemory))
    assert not missing, f"add these to AsyncMemory: {missing}"
    for name in sorted(names):
        sync = inspect.getattr_static(Memory, name, None)
        twin = inspect.getattr_static(AsyncMemory, name)
        if inspect.isfunction(sync):
            _assert_twin_method(name, sync, twin)
        elif isinstance(sync, classmethod):  # a constructor: the twin makes an AsyncMemory
            assert isinstance(twin, classmethod), f"{name} must be a classmethod"
            assert list(inspect.signature(twin.__func__).parameters) == list(
                inspect.signature(sync.__func__).parameters
            ), f"{name}: parameters differ"
        else:  # a property, a cached property, or an attribute set in __init__: no I/O
            assert isinstance(twin, (property, cached_property)), f"{name} must be a property"
            if sync is not None:
                assert _first_line(twin) == _first_line(sync), f"{name}: docstring differs"


def test_the_constructors_take_the_same_parameters() -> None:
    assert inspect.signature(AsyncMemory.__init__) == inspect.signature(Memory.__init__)
    assert _first_line(AsyncMemory).startswith("Durable long-term memory")


def test_the_role_stores_have_async_twins_too(tmp_path: Path) -> None:
    with Memory(tmp_path / "roles.db") as mem:
        sync_types = {"keys": type(mem.keys), "notes": type(mem.notes)}
    twin = AsyncMemory(tmp_path / "roles.db")
    try:
        for attribute, sync_type in sync_types.items():
            twin_type = type(getattr(twin, attribute))
            missing = sorted(_public(sync_type) - _public(twin_type) - {"rows", "clock"})
            assert not missing, f"add these to {twin_type.__name__}: {missing}"
            for name in sorted(_public(sync_type) - {"rows", "clock"}):
                _assert_twin_method(name, getattr(sync_type, name), getattr(twin_type, name))
    finally:
        asyncio.run(twin.aclose())


def test_async_calls_run_the_sync_engine_off_the_event_loop(tmp_path: Path) -> None:
    """One engine (a SQLiteStore behind the same Memory), entered from a worker thread."""
    seen: list[str] = []

    async def main() -> None:
        async with AsyncMemory(tmp_path / "t.db") as mem:
            assert isinstance(mem.store, SQLiteStore) and mem.store is mem.sync.store
            original = mem.sync.add

            def spy(*args: Any, **kwargs: Any) -> Any:
                seen.append(threading.current_thread().name)
                return original(*args, **kwargs)

            mem.sync.add = spy  # type: ignore[method-assign]
            await mem.add("off the loop")

    asyncio.run(main())
    assert seen and seen[0] != threading.main_thread().name


def test_add_search_recall_sleep_export_import_round_trip(tmp_path: Path) -> None:
    clock = FrozenClock("2026-11-01T10:00:00Z")
    db, copy = tmp_path / "source.db", tmp_path / "copy.db"

    async def main() -> None:
        async with AsyncMemory(db, clock=clock, space="alice") as mem:
            assert mem.path == str(db) and mem.space == "alice"
            note = await mem.add("Our release train leaves every second Thursday.")
            await mem.observe("user", "I live in Pune and I work as a backend engineer.")
            await mem.add_many(["We deploy with Argo CD.", {"text": "Staging is in Frankfurt."}])
            rule = await mem.forbid("Never force-push to main")

            found = await mem.search("Where do I live?")
            assert found.hits[0].text == "I live in Pune and I work as a backend engineer."
            block = await mem.recall("What is forbidden when pushing?")
            assert "[FORBIDDEN: Never force-push to main]" in block
            built = await mem.context([{"role": "user", "content": "When is the release?"}])
            assert built.block and "second Thursday" in built.block
            assert built.messages[0]["role"] == "system"

            report = await mem.sleep()
            assert report.episodes >= 4
            facts = await mem.facts()
            assert rule.id in {m.id for m in facts}
            assert any(m.source != "explicit" for m in facts), "sleep consolidated nothing"
            assert (await mem.episode(note.id)).text == note.text
            assert [e.id async for e in mem.iter_episodes()] == [
                e.id for e in await mem.episodes_page(limit=100)
            ]
            assert (await mem.space_info()).episodes == 4  # type: ignore[union-attr]
            assert await mem.spaces() == ["alice"]

            out = io.StringIO()
            written = await mem.export(out)
            stats = await mem.stats()
            assert (
                written
                == stats["episodes"]
                + stats["memories"]
                + stats["rules"]
                + (stats["inactive_memories"])
            )

        async with AsyncMemory(copy, clock=clock, space="alice") as twin:
            counts = await twin.import_jsonl(out.getvalue().splitlines())
            assert counts == {"episodes": 4, "memories": written - 4, "updated": 0, "skipped": 0}
            again = await twin.import_jsonl(out.getvalue().splitlines())
            assert again == {"episodes": 0, "memories": 0, "updated": 0, "skipped": written}
            hits = (await twin.search("Where do I live?")).hits
            assert hits[0].text == "I live in Pune and I work as a backend engineer."
            assert {m.content for m in await twin.facts()} == {m.content for m in facts}

    asyncio.run(main())
    with Memory(copy, space="alice") as mem:  # the async writes are in the file
        assert mem.stats()["episodes"] == 4


def test_keys_notes_forget_and_close(tmp_path: Path) -> None:
    async def main() -> AsyncMemory:
        mem = AsyncMemory(tmp_path / "k.db")
        key_id, secret = await mem.keys.create(
            spaces=["default"], admin=False, name="ci", now="2026-11-01T10:00:00Z"
        )
        assert (await mem.keys.check(secret)).key_id == key_id
        assert [k["id"] for k in await mem.keys.list()] == [key_id]
        assert await mem.notes.put("nightly", "stopped at page 3") is not None
        assert "stopped at page 3" in await mem.notes.block("nightly")
        episode = await mem.add("to be forgotten")
        await mem.forget(episode.id)
        with pytest.raises(NotFoundError):
            await mem.episode(episode.id)
        await mem.close()
        await mem.aclose()  # idempotent
        return mem

    closed = asyncio.run(main())
    with pytest.raises(ClosedError):
        asyncio.run(closed.add("after close"))

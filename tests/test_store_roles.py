"""The engine store's role stores (``store.keys``, ``store.notes``, ``store.jobs``) share its
connection, and anything that needs a role asks the store for it (issue 10)."""

from __future__ import annotations

from pathlib import Path

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.jobs import JobQueue
from orcamem.engine.store import SQLiteStore

NOW = "2026-11-01T10:00:00Z"


def test_keys_and_notes_live_in_the_store_file_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "roles.db"
    with SQLiteStore(path) as store:
        store.keys.add("key-0000aaaa", "digest", "ops", ["alice"], False, NOW)
        store.notes.put("nightly", "stopped at 41", NOW)
    with SQLiteStore(path) as store:
        assert store.keys.active("digest") == ("key-0000aaaa", "digest", ["alice"], False)
        assert store.keys.revoke("key-0000aaaa", NOW) and store.keys.active("digest") is None
        assert store.notes.get("nightly").note == "stopped at 41"
        assert store.notes.delete("nightly") and store.notes.get("nightly") is None


def test_a_memory_on_a_store_it_was_handed_can_sleep_and_serve_keys(tmp_path: Path) -> None:
    clock = FrozenClock(NOW)
    store = SQLiteStore(tmp_path / "handed.db")
    with Memory(store=store, clock=clock) as memory:
        memory.observe(role="user", text="I moved to Lisbon in March.", session_id="s1")
        memory.observe(role="user", text="My dentist is Dr. Rao.", session_id="s1")
        report = memory.sleep()
        assert report.episodes == 2
        counts = JobQueue(store.jobs).counts()  # its jobs ran in the same file
        assert (
            counts["done"] >= 1 and counts["pending"] == counts["running"] == counts["failed"] == 0
        )
        key_id, secret = memory.keys.create(spaces=["default"], admin=False, name="t", now=NOW)
        assert memory.keys.check(secret).key_id == key_id
        assert memory.path == str(tmp_path / "handed.db")


def test_one_write_spans_the_roles_of_the_store(tmp_path: Path) -> None:
    """A role store writes inside the store's transaction: rolled back together."""
    with SQLiteStore(tmp_path / "tx.db") as store:
        try:
            with store.writing():
                store.notes.put("a", "one", NOW)
                store.keys.add("key-0000bbbb", "d2", "x", [], True, NOW)
                raise RuntimeError("abort")
        except RuntimeError:
            pass
        assert store.notes.get("a") is None and store.keys.active("d2") is None

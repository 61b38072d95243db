"""One writer, many readers on SQLite: reads never wait behind a write or another read.

Nothing here is timed: each test holds a write (or a read) open on one thread and shows that
a read on another thread *completes* meanwhile. A join timeout only guards against a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orcamem import Memory
from orcamem.errors import ClosedError

HANG = 120.0  # seconds: a guard against a hang, never a measure of speed


def finished(work: Callable[[], Any]) -> Any:
    """Run ``work`` on another thread; its result once it completes (fails on a hang)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG)
    assert not thread.is_alive(), "the read waited for the open transaction"
    if "error" in box:
        raise box["error"]
    return box["result"]


class Holder:
    """A thread that enters ``block`` and stays inside it until ``release()``."""

    def __init__(self, block: Callable[[], Any], inside: Callable[[], None] = lambda: None):
        self.entered = threading.Event()
        self._release = threading.Event()
        self._block, self._inside = block, inside
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            with self._block():
                self._inside()
                self.entered.set()
                self._release.wait(HANG)
        except BaseException as exc:
            self.error = exc
            self.entered.set()

    def __enter__(self) -> Holder:
        self._thread.start()
        assert self.entered.wait(HANG)
        assert self.error is None, self.error
        return self

    def release(self) -> None:
        self._release.set()
        self._thread.join(HANG)
        assert not self._thread.is_alive()
        assert self.error is None, self.error

    def __exit__(self, *exc: object) -> None:
        self.release()


@pytest.fixture
def mem(tmp_path: Path):
    with Memory(tmp_path / "readers.db", space="s") as memory:
        memory.add_many([f"note {i} about the quarterly roadmap" for i in range(50)])
        memory.add("the launch moved to the ninth of March")
        yield memory


def test_a_search_completes_while_another_thread_holds_a_write_open(mem: Memory) -> None:
    holder = Holder(mem.store.writing, lambda: mem.add("the uncommitted budget figure"))
    with holder:
        hits = finished(lambda: mem.search("when is the launch"))
        assert any("ninth of March" in hit.text for hit in hits.hits)
        assert not finished(
            lambda: [h for h in mem.search("budget figure").hits if "budget" in h.text]
        )
    # committed on the writer's thread: the next read on any thread sees it
    assert any("budget figure" in hit.text for hit in finished(lambda: mem.search("budget")).hits)
    assert any("budget figure" in hit.text for hit in mem.search("budget").hits)


def test_readers_do_not_wait_for_each_other(mem: Memory) -> None:
    store = mem.store
    vector = mem.embedder.embed(["launch date"])[0]
    with Holder(store.reading):
        assert finished(lambda: store.vector_lines("s", vector, 5))
        assert finished(lambda: store.lexical_lines("s", '"launch"', 5))
        assert finished(lambda: store.get_episode("s", 1)).text.startswith("note 0")


def test_mark_accessed_does_not_block_a_search(mem: Memory) -> None:
    memory = mem.remember("the user prefers tea over coffee")
    with Holder(
        mem.store.writing, lambda: mem.store.mark_accessed("s", [memory.id], "2026-01-01T00:00:00Z")
    ):
        hits = finished(lambda: mem.search("does the user like tea"))
        assert any(hit.id == memory.id for hit in hits.hits)


def test_close_does_not_wait_for_a_reader_and_refuses_later_reads(mem: Memory) -> None:
    store = mem.store
    holder = Holder(store.reading, lambda: store.counts())
    with holder:
        finished(store.close)
    with pytest.raises(ClosedError):
        store.counts()


def _counting_refreshes(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The line index's refreshes, counted as they happen (the real refresh runs)."""
    calls: list[int] = []
    real = store._line_index.refresh

    def counted(conn: Any) -> None:
        calls.append(1)
        real(conn)

    monkeypatch.setattr(store._line_index, "refresh", counted)
    return calls


def test_one_commit_is_refreshed_once_whatever_connection_reads_next(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every reader connection saw the file's data_version move with each commit, so under
    load every search refreshed again, one at a time behind the lock; one refresh that
    began after the commit serves every later read."""
    store = mem.store
    vector = mem.embedder.embed(["launch date"])[0]
    mem.add("the review is on Friday")
    calls = _counting_refreshes(store, monkeypatch)
    with Holder(store.reading):  # a second reader connection in use: the next read is a third
        assert finished(lambda: store.vector_lines("s", vector, 5))
        assert finished(lambda: store.vector_lines("s", vector, 5))
    assert store.vector_lines("s", vector, 5)
    assert len(calls) == 1
    mem.add("the review moved to Monday")
    assert any("Monday" in hit.text for hit in finished(lambda: mem.search("review")).hits)
    assert len(calls) == 2


def test_a_commit_by_another_process_is_seen_by_the_next_read(mem: Memory, tmp_path: Path) -> None:
    assert not [h for h in mem.search("the cellar key").hits if "cellar" in h.text]
    with Memory(tmp_path / "readers.db", space="s") as other:  # its own writer connection
        other.add("the cellar key hangs by the door")
    assert any("cellar" in hit.text for hit in finished(lambda: mem.search("cellar key")).hits)
    assert any("cellar" in hit.text for hit in mem.search("cellar key").hits)

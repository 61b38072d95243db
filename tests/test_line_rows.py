"""SQLite keeps line rows in process (``engine/store/line_rows.py``): a row is answered from
there only while its space keeps the ``vector_epoch`` it was read under, so a delete by
another connection (another process) is honoured, and a write transaction never reads or
leaves a row there."""

from __future__ import annotations

from pathlib import Path

import pytest

from orcamem.engine.store.sqlite import SQLiteStore
from test_store_contract import DIM, NOW, write


@pytest.fixture
def two(tmp_path: Path):
    """Two stores on one file, as two processes would hold it."""
    path = tmp_path / "rows.db"
    first = SQLiteStore(path)
    first.ensure_space("a", "test", DIM, NOW)
    second = SQLiteStore(path)
    yield first, second
    first.close()
    second.close()


def test_a_delete_through_another_store_is_seen(two: tuple[SQLiteStore, SQLiteStore]) -> None:
    first, second = two
    kept, gone = first.append_episodes([write("a", "kept", seed=1), write("a", "gone", seed=2)])
    ids = {ep.id: sorted(first.line_ids("a", ep.id).values()) for ep in (kept, gone)}
    every = ids[kept.id] + ids[gone.id]
    assert [row.id for row in first.lines(every)] == every  # now held in process
    assert len(first.episode_lines("a", [kept.id, gone.id], first_only=True)) == 2
    second.delete_episode("a", gone.id)
    assert [row.id for row in first.lines(every)] == ids[kept.id]
    assert [
        row.episode_id for row in first.episode_lines("a", [kept.id, gone.id], first_only=True)
    ] == [kept.id]


def test_a_write_transaction_neither_reads_nor_leaves_held_rows(
    two: tuple[SQLiteStore, SQLiteStore],
) -> None:
    first, _ = two
    [ep] = first.append_episodes([write("a", "rolled back", seed=3)])
    ids = sorted(first.line_ids("a", ep.id).values())
    assert [row.id for row in first.lines(ids)] == ids
    with pytest.raises(RuntimeError), first.writing() as conn:
        conn.execute("DELETE FROM lines WHERE episode_id = ?", (ep.id,))
        conn.execute("DELETE FROM episodes WHERE id = ?", (ep.id,))
        assert first.lines(ids) == []  # its own uncommitted delete, not the held row
        raise RuntimeError("roll back")
    assert [row.id for row in first.lines(ids)] == ids
    with pytest.raises(RuntimeError), first.writing():
        [new] = first.append_episodes([write("a", "never committed", seed=4)])
        fresh = sorted(first.line_ids("a", new.id).values())
        assert [row.text for row in first.lines(fresh)] == ["never committed"]
        raise RuntimeError("roll back")
    assert first.lines(fresh) == []

"""``Memory.check`` / ``orcamem check`` find damage that ``PRAGMA integrity_check`` calls ok, and
``Memory.repair`` / ``orcamem repair`` rebuild it (issue 11 item 4).

Each test damages a real SQLite file with raw ``sqlite3`` (no orcamem code), the way a crash, a
half-finished tool or a hand edit would, then checks, repairs and searches through orcamem.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from orcamem import CorruptStoreError, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.embed import make_embedder
from orcamem.interfaces.cli.main import app

runner = CliRunner()
LINES = 51


def damage(path: Path, *statements: str) -> None:
    """Run raw SQL on the file, outside orcamem (foreign keys off, as sqlite3 defaults)."""
    conn = sqlite3.connect(path)
    with conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def line_id(path: Path, word: str) -> int:
    conn = sqlite3.connect(path)
    [(found,)] = conn.execute("SELECT id FROM lines WHERE text LIKE ?", (f"%{word}%",))
    conn.close()
    return found


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with Memory(path, clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        mem.add_many(f"Line {i} says the harbour keeps zebra{i}." for i in range(LINES))
        mem.forbid("Never paint the harbour wall.")
    return path


@pytest.fixture
def mem(db: Path) -> Iterator[Memory]:
    with Memory(db, clock=FrozenClock("2026-11-01T11:00:00Z")) as memory:
        yield memory


def kinds(problems: list) -> list[str]:
    return [problem.kind for problem in problems]


def test_a_healthy_database_checks_clean(mem: Memory) -> None:
    report = mem.check()
    assert report.ok and report.problems == []
    assert report.counts["lines"] == LINES and report.counts["memories"] == 1
    assert mem.repair().to_dict() == {"ok": True, "actions": [], "remaining": []}


def test_a_cleared_full_text_index_and_a_missing_vector_are_found_and_rebuilt(db: Path) -> None:
    lost = line_id(db, "zebra7")
    damage(
        db,
        "INSERT INTO lines_fts(lines_fts) VALUES ('delete-all')",
        "INSERT INTO memories_fts(memories_fts) VALUES ('delete-all')",
        f"UPDATE lines SET vector = NULL WHERE id = {lost}",
    )
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with Memory(db) as mem:
        assert all("zebra7" not in hit.text for hit in mem.search("zebra7").hits)
        assert mem.store.lexical_lines("default", "harbour", 100) == []
        report = mem.check()
        assert kinds(report.problems) == ["fts", "fts", "vectors"]
        assert "lines_fts" in report.problems[0].message
        assert "memories_fts" in report.problems[1].message
        assert "1 of its lines have no vector" in report.problems[2].message
        assert all(p.message.endswith("run `orcamem repair`") for p in report.problems)
        json.dumps(report.to_dict())  # JSON-serialisable as it is

        repaired = mem.repair()
        assert repaired.ok and repaired.remaining == []
        assert repaired.actions[:2] == [
            f"rebuilt the full-text index lines_fts from its {LINES} lines",
            "rebuilt the full-text index memories_fts from its 1 memories",
        ]
        assert repaired.actions[2].startswith("re-embedded 1 vector(s) in space 'default'")
        assert mem.check().ok
        assert mem.repair().actions == []  # idempotent: nothing left to do
        assert "zebra7" in mem.search("zebra7").hits[0].text
        assert len(mem.store.lexical_lines("default", "harbour", 100)) == LINES


def test_a_wrong_size_vector_is_refused_by_search_reported_and_re_embedded(db: Path) -> None:
    short = line_id(db, "zebra9")
    damage(db, f"UPDATE lines SET vector = substr(vector, 1, 20) WHERE id = {short}")
    with Memory(db) as mem:
        with pytest.raises(CorruptStoreError) as refused:
            mem.search("zebra9")
        message = str(refused.value)
        assert "space 'default'" in message and "10 values" in message
        assert f"makes {mem.embedder.dim}" in message and "orcamem repair" in message

        [problem] = mem.check().problems
        assert (problem.kind, problem.space, problem.repairable) == ("vectors", "default", True)
        assert f"vectors of 10 values where its embedder {mem.embedder.id}" in problem.message

        assert mem.repair().ok
        assert mem.check().ok
        assert "zebra9" in mem.search("zebra9").hits[0].text


def test_lines_of_a_missing_episode_are_reported_and_removed(db: Path) -> None:
    damage(db, "DELETE FROM episodes WHERE id = 3")  # foreign keys off: its line stays
    with Memory(db) as mem:
        [problem] = mem.check().problems
        assert problem.kind == "orphans"
        assert problem.message.startswith("1 row(s) of lines point at missing episodes")
        assert mem.repair().actions == ["removed 1 line(s) whose episode is missing from lines"]
        assert mem.check().ok
        assert mem.check().counts["lines"] == LINES - 1


def test_an_edited_episode_is_reported_and_never_rewritten(db: Path) -> None:
    damage(
        db,
        "DROP TRIGGER episodes_append_only",
        "UPDATE episodes SET text = 'rewritten by hand' WHERE id = 5",
    )
    with Memory(db) as mem:
        [problem] = mem.check().problems
        assert (problem.kind, problem.repairable) == ("digest", False)
        assert problem.message.startswith("episode 5 in space 'default' no longer matches")
        assert "orcamem export" in problem.message
        repaired = mem.repair()
        assert not repaired.ok and kinds(repaired.remaining) == ["digest"]
        assert mem.episode(5).text == "rewritten by hand"  # repair does not guess


def test_the_digest_advice_restores_the_episode(db: Path, tmp_path: Path) -> None:
    """check said to restore the episode from an export, but an import skipped it as already
    present (its digest column still matched): the advice is to forget it first."""
    backup = tmp_path / "backup.jsonl"
    with Memory(db) as mem, backup.open("w", encoding="utf-8") as out:
        original = mem.episode(5).text
        mem.export(out)
    damage(
        db,
        "DROP TRIGGER episodes_append_only",
        "UPDATE episodes SET text = 'rewritten by hand' WHERE id = 5",
    )
    with Memory(db) as mem:
        [problem] = mem.check().problems
        assert "(`orcamem forget ep-5 --space default`), then import" in problem.message
        mem.forget("ep-5")
        mem.import_jsonl(backup.read_text(encoding="utf-8").splitlines())
        assert mem.check().ok
        assert original in [e.text for e in mem.iter_episodes()]


def test_dangling_and_self_lineage_is_cleared_and_a_cycle_reported(mem: Memory) -> None:
    a, b, c, d = (mem.remember(f"fact {name}").id for name in "abcd")
    damage(
        Path(str(mem.path)),
        f"UPDATE memories SET superseded_by = 'mem-0badf00d' WHERE id = '{a}'",
        f"UPDATE memories SET superseded_by = id WHERE id = '{b}'",
        f"UPDATE memories SET superseded_by = '{d}' WHERE id = '{c}'",
        f"UPDATE memories SET superseded_by = '{c}' WHERE id = '{d}'",
    )
    found = mem.check().problems
    assert kinds(found) == ["lineage", "lineage", "lineage"]
    assert f"memory {a} in space 'default' is superseded by mem-0badf00d" in found[0].message
    assert f"memory {b} in space 'default' is marked superseded by itself" in found[1].message
    assert f"memories {c} -> {d} -> {c}" in found[2].message and not found[2].repairable

    repaired = mem.repair()
    assert repaired.actions == [f"cleared the dangling superseded_by of {a}, {b}"]
    assert kinds(repaired.remaining) == ["lineage"]
    assert mem.memory(a).superseded_by is None and mem.memory(b).superseded_by is None
    assert mem.memory(c).superseded_by == d  # a cycle is not guessed at


def test_opening_a_damaged_file_warns_once_and_still_opens(
    db: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="orcamem"):
        Memory(db).close()
        assert caplog.records == []
        damage(db, "INSERT INTO lines_fts(lines_fts) VALUES ('delete-all')")
        for _ in range(2):
            with Memory(db) as mem:
                assert mem.stats()["lines"] == LINES
    [record] = caplog.records
    assert "lines_fts" in record.getMessage()
    assert f"run `orcamem repair --db {db}`" in record.getMessage()


def test_cli_check_and_repair_exit_codes_and_json(db: Path) -> None:
    healthy = runner.invoke(app, ["check", "--db", str(db)])
    assert healthy.exit_code == 0, healthy.output
    assert healthy.stdout.startswith(f"healthy: checked 1 spaces, {LINES} episodes")

    damage(db, "INSERT INTO lines_fts(lines_fts) VALUES ('delete-all')")
    broken = runner.invoke(app, ["check", "--db", str(db)])
    assert broken.exit_code == 1
    [line] = broken.stdout.splitlines()
    assert line.startswith("fts: the full-text index lines_fts is damaged")
    assert line.endswith("run `orcamem repair`")
    data = json.loads(runner.invoke(app, ["check", "--db", str(db), "--json"]).stdout)
    assert data["ok"] is False and [p["kind"] for p in data["problems"]] == ["fts"]

    fixed = runner.invoke(app, ["repair", "--db", str(db), "--json"])
    assert fixed.exit_code == 0, fixed.output
    assert json.loads(fixed.stdout)["actions"] == [
        f"rebuilt the full-text index lines_fts from its {LINES} lines"
    ]
    again = runner.invoke(app, ["repair", "--db", str(db)])
    assert (again.exit_code, again.stdout) == (0, "nothing to repair\n")
    assert runner.invoke(app, ["check", "--db", str(db)]).exit_code == 0


def test_cli_repair_exits_1_when_only_a_backup_can_help(db: Path) -> None:
    damage(db, "DROP TRIGGER episodes_append_only", "UPDATE episodes SET digest = 'x'")
    result = runner.invoke(app, ["repair", "--db", str(db)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "nothing to repair"
    assert len(lines) == 1 + LINES and all(line.startswith("digest: episode") for line in lines[1:])


def test_repair_never_mixes_embedders_in_a_space(db: Path) -> None:
    lost = line_id(db, "zebra3.")
    damage(
        db,
        "UPDATE spaces SET embedder_id = 'st:another-model'",
        f"UPDATE lines SET vector = NULL WHERE id = {lost}",
    )
    result = runner.invoke(app, ["repair", "--db", str(db)])
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "nothing to repair",
        "vectors: space 'default' needs 1 vector(s) from st:another-model (dim 256) but this "
        "Memory embeds with "
        + make_embedder(None).id
        + " (dim 256): repair with that embedder (`orcamem repair --embedder <spec>`), or run "
        "`orcamem reembed --space default` to re-embed the whole space with this one",
    ]
    conn = sqlite3.connect(db)
    assert conn.execute(f"SELECT vector FROM lines WHERE id = {lost}").fetchone() == (None,)


def test_a_vector_of_nan_of_the_right_size_is_found_and_embedded_again(db: Path) -> None:
    """A blob of the right length holding NaN passed check and repair ("healthy"), and its
    line lost the vector channel for good."""
    broken = line_id(db, "zebra3.")
    conn = sqlite3.connect(db)
    with conn:
        (size,) = conn.execute(
            "SELECT length(vector) FROM lines WHERE id = ?", (broken,)
        ).fetchone()
        conn.execute(
            "UPDATE lines SET vector = ? WHERE id = ?", (b"\xff\x7f" * (size // 2), broken)
        )
    conn.close()
    with Memory(db) as mem:
        [problem] = mem.check().problems
        assert problem.kind == "vectors" and "NaN or infinity" in problem.message
        repaired = mem.repair()
        assert repaired.ok and repaired.actions == [
            "re-embedded 1 vector(s) in space 'default' with " + mem.embedder.id
        ]
        assert mem.check().ok
    conn = sqlite3.connect(db)
    [(blob,)] = conn.execute("SELECT vector FROM lines WHERE id = ?", (broken,)).fetchall()
    conn.close()
    with Memory(db) as mem:
        expected = mem.embedder.embed(["Line 3 says the harbour keeps zebra3."])[0]
        assert np.allclose(np.frombuffer(blob, dtype=np.float16), expected, atol=1e-3)


class _WritesBetween:
    """A real connection whose graph counts have another process's add committed between
    them (``graph.drift`` counts mentions, then links): what a live server does."""

    def __init__(self, conn: sqlite3.Connection, write: object) -> None:
        self._conn, self._write, self._done = conn, write, False

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if not self._done and sql.startswith("SELECT (SELECT count(*) FROM entity_lines"):
            self._done = True
            self._write()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_check_reads_one_snapshot_while_another_process_writes(db: Path) -> None:
    """Five checks of five during a server's writes reported the graph "out of step" and
    told the user to repair a healthy file."""
    from orcamem.engine.store import check

    with Memory(db) as writer:
        conn = sqlite3.connect(db, isolation_level=None)
        try:

            def write() -> None:
                writer.add("Alice met Bob in Paris with Carol and Dave.")

            found = check.problems(_WritesBetween(conn, write))  # type: ignore[arg-type]
        finally:
            conn.close()
        assert not [p for p in found if p.kind == "graph"], found
        assert writer.store.problems() == []  # and the file is healthy afterwards

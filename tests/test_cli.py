"""The ``orcamem`` command as a user drives it: every command, its output, its exit codes."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from orcamem import Config, Memory
from orcamem._kernel.model import NewMemory
from orcamem.engine import PackConfig
from orcamem.engine.store.base import MemoryUpdate
from orcamem.interfaces.cli.main import app

runner = CliRunner()


def run(*args: Any, code: int = 0) -> Result:
    """Invoke the CLI; fail on an unexpected exit code or on a traceback (not a clean exit)."""
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"orcamem {' '.join(map(str, args))} crashed: {result.exception!r}\n{result.output}"
    )
    assert result.exit_code == code, (
        f"orcamem {' '.join(map(str, args))} exited {result.exit_code}, wanted {code}:\n"
        f"{result.output}"
    )
    return result


def flat(text: str) -> str:
    """Whitespace-normalised text: rich wraps long lines at the console width."""
    return " ".join(text.split())


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cli.db"


# -- add, search, recall ---------------------------------------------------------------------


def test_add_text_then_search_table(db: Path) -> None:
    first = run("add", "I live in Pune and work as a backend engineer.", "--db", db)
    assert flat(first.stdout) == "added ep-1 to space 'default'"
    run("add", "The car is parked on level three.", "--db", db)

    table = run("search", "Where do I live?", "--db", db).stdout
    assert "ep-1" in table and "Pune" in table
    rows = [line for line in table.splitlines() if "ep-" in line]
    assert "ep-1" in rows[0]  # the best hit is the first row
    assert "lexical=" not in table

    explained = run("search", "Where do I live?", "--db", db, "--explain").stdout
    assert "why" in explained and "lexical=" in explained and "vector=" in explained


TRIP = [
    "My dentist appointment moved to Friday; the trip budget is tight.",
    *(
        f"On the trip we spent a day in {city}, where the old town was full of tiled houses, "
        "narrow lanes, bakeries and a market."
        for city in ("Lisbon", "Porto", "Madrid")
    ),
]


def test_recall_explain_says_an_item_was_below_the_score_cut(db: Path) -> None:
    """With a 60-token block the floor (min_block_tokens) is 60 tokens: past it a passage
    scoring a quarter of the best is left out by the score cut, and the trace says so (not
    "budget"); without --explain the block is the same."""
    for n, text in enumerate(TRIP):
        run("add", text, "--db", db, "--role", "user", "--session", f"s{n}")
    query = "How tight is the trip budget?"
    plain = run("recall", query, "--db", db, "--budget", "60").stdout
    explained = run("recall", query, "--db", db, "--budget", "60", "--explain").stdout
    assert explained.startswith(plain) and "the trip budget is tight" in plain
    why = explained[len(plain) :].splitlines()
    assert why[0] == "why this block:"
    assert why[1].startswith("  in ") and "trip budget is tight" in why[1] and "lexical=" in why[1]
    out = [line for line in why if line.startswith("  out ")]
    assert out and all("On the trip we spent a day" in line for line in out)
    assert all(
        re.search(r"\(below the score cut: 0\.\d\d of the best, the cut is 0\.37\)$", line)
        for line in out
    ), out
    assert not any("budget:" in line for line in out)


def test_search_json_is_one_parseable_object(db: Path) -> None:
    run("add", "My dentist is Dr. Rao in Kothrud.", "--db", db)
    run("add", "I bought a blue bicycle in March.", "--db", db)
    data = json.loads(run("search", "Who is my dentist?", "--db", db, "--json").stdout)
    assert data["query"] == "Who is my dentist?" and data["space"] == "default"
    top = data["hits"][0]
    assert top["text"] == "My dentist is Dr. Rao in Kothrud."
    assert top["id"] == "ep-1" and top["kind"] == "passage"
    assert top["breakdown"]["lexical"] > 0 and top["breakdown"]["vector"] > 0
    assert top["score"] == pytest.approx(sum(top["breakdown"].values()), abs=1e-5)
    limited = json.loads(run("search", "dentist", "--db", db, "--json", "-k", "1").stdout)
    assert len(limited["hits"]) == 1


def test_search_an_empty_space_says_so(db: Path) -> None:
    result = run("search", "anything at all", "--db", db)
    assert "no memories match in space 'default'" in flat(result.stdout)
    assert json.loads(run("search", "anything", "--db", db, "--json").stdout)["hits"] == []


def test_add_with_role_session_and_time_is_a_turn(db: Path) -> None:
    run(
        "add",
        "I moved to Bangalore.",
        "--role",
        "user",
        "--session",
        "s1",
        "--occurred-at",
        "2026-10-17T09:30:00+02:00",
        "--db",
        db,
    )
    with Memory(db) as mem:
        (episode,) = list(mem.iter_episodes())
    assert (episode.kind, episode.role, episode.session_id) == ("turn", "user", "s1")
    assert episode.occurred_at == "2026-10-17T07:30:00.000000Z"


def test_add_bad_time_is_exit_2_and_writes_nothing(db: Path) -> None:
    result = run("add", "hello", "--occurred-at", "last tuesday", "--db", db, code=2)
    assert "ISO-8601" in flat(result.stderr)
    with Memory(db) as mem:
        assert mem.stats()["episodes"] == 0


def test_add_file_stores_markdown_passages(db: Path, tmp_path: Path) -> None:
    notes = tmp_path / "project_notes.md"
    notes.write_text(
        "# Project\n\nThe billing service is written in Go.\n\n"
        "# Deploys\n\nWe deploy on Fridays with Argo CD.\n",
        encoding="utf-8",
    )
    result = run("add", notes, "--db", db)
    assert flat(result.stdout) == f"added 2 passage(s) from {notes} to space 'default'"
    with Memory(db) as mem:
        episodes = list(mem.iter_episodes())
    assert [e.kind for e in episodes] == ["document", "document"]
    assert episodes[0].text == "# Project\n\nThe billing service is written in Go."
    assert [e.meta for e in episodes] == [
        {"source": str(notes), "part": 1, "parts": 2},
        {"source": str(notes), "part": 2, "parts": 2},
    ]
    data = json.loads(run("search", "when do we deploy?", "--db", db, "--json").stdout)
    assert "Fridays" in data["hits"][0]["text"]


def _recall_db(db: Path) -> None:
    run("add", "I live in Pune and I work as a backend engineer at a payments company.", "--db", db)
    run("add", "The spare key is under the blue flowerpot next to the door.", "--db", db)
    run("forbid", "Never chain PowerShell commands with semicolons", "--db", db)


def test_recall_prints_the_block_memory_would_inject(db: Path) -> None:
    _recall_db(db)
    query = "where do I live and how should I write PowerShell?"
    with Memory(db) as mem:
        expected = mem.recall(query)
    printed = run("recall", query, "--db", db).stdout
    assert printed.startswith("## Memory\n")
    assert "[FORBIDDEN: Never chain PowerShell commands with semicolons]" in flat(printed)
    assert flat(printed) == flat(expected)


def test_recall_output_is_byte_exact(db: Path) -> None:
    _recall_db(db)
    query = "where do I live and how should I write PowerShell?"
    with Memory(db) as mem:
        expected = mem.recall(query)
    assert run("recall", query, "--db", db).stdout == expected + "\n"


def test_recall_classic_has_sections(db: Path) -> None:
    _recall_db(db)
    query = "where do I live and how should I write PowerShell?"
    with Memory(db, config=Config(pack=PackConfig(enable_sutra_packing=False))) as mem:
        expected = mem.recall(query)
    printed = run("recall", query, "--db", db, "--classic").stdout
    assert flat(printed) == flat(expected)
    lines = printed.splitlines()
    assert "Forbidden (never do these):" in lines
    assert "- Never chain PowerShell commands with semicolons" in lines
    assert "Said before:" in lines
    assert "[LOG:" not in printed and "[FORBIDDEN:" not in printed.replace("[FORBIDDEN: ...]", "")


def test_recall_with_nothing_to_inject(db: Path) -> None:
    result = run("recall", "anything?", "--db", db)
    assert result.stdout == ""  # stdout is exactly the block, and there is none
    assert flat(result.stderr) == "(nothing to inject for this query in space 'default')"


# -- explicit memories ----------------------------------------------------------------------


def remember(db: Path, text: str, **kw: Any) -> str:
    """An explicit memory through the SDK (`orcamem remember` writes local agent memory now)."""
    with Memory(db) as mem:
        return mem.remember(text, **kw).id


def test_forbid_always_hoists_the_rule_for_any_query(db: Path) -> None:
    run("forbid", "Never chain PowerShell commands with semicolons", "--db", db)
    run("forbid", "Always answer in British English", "--always", "--db", db)
    with Memory(db) as mem:
        rules = [hit.text for hit in mem.search("What is the capital of France?").rules]
    assert rules == ["Always answer in British English"]


def test_forbid_and_facts(db: Path) -> None:
    pref_id = remember(db, "Prefers dark mode", category="preference")
    forbidden = flat(run("forbid", "Never use semicolons", "--db", db).stdout)
    assert forbidden.startswith("forbidden rule mem-")
    rule_id = forbidden.split()[2]

    table = run("facts", "--db", db).stdout
    assert pref_id in table and rule_id in table
    assert "forbidden" in table and "active" in table

    data = json.loads(run("facts", "--json", "--db", db).stdout)
    assert [(m["id"], m["category"], m["content"], m["prohibited"]) for m in data] == [
        (pref_id, "preference", "Prefers dark mode", False),
        (rule_id, "rule", "Never use semicolons", True),
    ]


def test_facts_history_shows_outdated_memories(db: Path) -> None:
    with Memory(db) as mem:
        old = mem.remember("Lives in Pune", category="state")
        new = mem.remember("Lives in Bangalore", category="state")
        mem.store.update_memory(
            "default",
            old.id,
            MemoryUpdate(active=False, superseded_by=new.id),
            "2026-11-01T10:00:00.000000Z",
        )
    current = json.loads(run("facts", "--json", "--db", db).stdout)
    assert [m["id"] for m in current] == [new.id]
    history = json.loads(run("facts", "--json", "--history", "--db", db).stdout)
    assert [(m["id"], m["active"], m["superseded_by"]) for m in history] == [
        (old.id, False, new.id),
        (new.id, True, None),
    ]
    table = flat(run("facts", "--history", "--db", db).stdout)
    assert "outdated" in table and old.id in table
    assert old.id not in run("facts", "--db", db).stdout


def test_facts_on_an_empty_space(db: Path) -> None:
    assert "no memories in space 'default' yet" in flat(run("facts", "--db", db).stdout)
    assert json.loads(run("facts", "--json", "--db", db).stdout) == []


# -- forget ---------------------------------------------------------------------------------


def test_forget_memory_and_episode(db: Path) -> None:
    run("add", "The spare key is under the blue flowerpot.", "--db", db)
    run("add", "The car is parked on level three.", "--db", db)
    memory_id = remember(db, "Likes green tea")

    assert flat(run("forget", memory_id, "--db", db).stdout) == (
        f"forgot {memory_id} in space 'default'"
    )
    assert json.loads(run("facts", "--json", "--history", "--db", db).stdout) == []

    run("forget", "ep-1", "--db", db)
    hits = json.loads(run("search", "where is the spare key?", "--db", db, "--json").stdout)
    assert all(hit["episode_id"] != 1 for hit in hits["hits"])
    stats = json.loads(run("stats", "--json", "--db", db).stdout)
    assert stats["episodes"] == 1 and stats["memories"] == 0


def test_forget_close_keeps_the_memory_in_history(db: Path) -> None:
    memory_id = remember(db, "Likes green tea")
    closed = flat(run("forget", "--close", memory_id, "--db", db).stdout)
    assert closed.startswith(f"closed {memory_id} in space 'default' at 20")
    assert json.loads(run("facts", "--json", "--db", db).stdout) == []
    (kept,) = json.loads(run("facts", "--json", "--history", "--db", db).stdout)
    assert (kept["id"], kept["active"]) == (memory_id, False)
    refused = run("forget", "--close", "ep-1", "--db", db, code=2)  # bad input
    assert "is not a memory id" in flat(refused.stderr)


def test_edit_supersedes_and_pin_toggles(db: Path) -> None:
    memory_id = remember(db, "Likes green tea")
    said = flat(run("edit", memory_id, "Likes oolong tea", "--db", db).stdout)
    (new,) = json.loads(run("facts", "--json", "--db", db).stdout)
    assert said == f"{new['id']} supersedes {memory_id} in space 'default'"
    assert new["content"] == "Likes oolong tea"
    old = json.loads(run("facts", "--json", "--history", "--db", db).stdout)[0]
    assert (old["id"], old["active"], old["superseded_by"]) == (memory_id, False, new["id"])
    refused = run("edit", memory_id, "Likes coffee", "--db", db, code=2)
    assert f"edit {new['id']} instead" in flat(refused.stderr)
    assert (
        flat(run("pin", new["id"], "--db", db).stdout) == f"pinned {new['id']} in space 'default'"
    )
    assert json.loads(run("facts", "--json", "--db", db).stdout)[0]["pinned"] is True
    run("pin", new["id"], "--unpin", "--db", db)
    assert json.loads(run("facts", "--json", "--db", db).stdout)[0]["pinned"] is False


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("mem-0000abcd", "no memory 'mem-0000abcd' in space 'default'"),
        ("ep-999", "no episode"),
        ("banana", "neither a memory id"),
    ],
)
def test_forget_unknown_id_is_exit_1_with_a_message(db: Path, item: str, message: str) -> None:
    run("add", "Something to keep.", "--db", db)
    result = run("forget", item, "--db", db, code=1)
    assert result.stdout == ""
    assert flat(result.stderr).startswith("error:")
    assert message in flat(result.stderr)
    assert json.loads(run("stats", "--json", "--db", db).stdout)["episodes"] == 1


# -- stats ------------------------------------------------------------------------------------


def test_stats_json(db: Path) -> None:
    run("add", "One sentence. Two sentences.", "--db", db)
    run("add", "Another note.", "--db", db)
    remember(db, "Prefers tea")
    run("forbid", "Never call after 9 pm", "--db", db)
    run("add", "Elsewhere.", "--space", "other", "--db", db)
    data = json.loads(run("stats", "--json", "--db", db).stdout)
    assert data["space"] == "default"
    assert (data["episodes"], data["lines"], data["memories"], data["rules"]) == (2, 3, 1, 1)
    assert data["inactive_memories"] == 0
    assert data["embedder"] == data["space_embedder"] and data["embedder"].startswith("static:")
    assert data["dim"] == 256
    assert sorted(data["spaces"]) == ["default", "other"]
    assert data["database"]["episodes"] == 3
    assert data["size_bytes"] > 0 and Path(data["path"]) == db
    table = run("stats", "--db", db).stdout
    assert "episodes" in table and "size_bytes" in table


# -- export / import --------------------------------------------------------------------------


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _build_rich_space(db: Path, tmp_path: Path) -> dict[str, str]:
    """Every kind of record an export must carry, including an id gap and lifecycle fields."""
    notes = tmp_path / "notes.md"
    notes.write_text("# Café\n\nThe espresso machine is in the kitchen. ☕\n", encoding="utf-8")
    run("add", "I live in Pune.", "--db", db)
    run("add", "This one will be forgotten.", "--db", db)  # ep-2, deleted: ids get a gap
    run("add", notes, "--db", db)
    run(
        "add",
        "I moved to Bangalore. The flat has a balcony.",
        "--role",
        "user",
        "--session",
        "s1",
        "--occurred-at",
        "2026-10-17T09:30:00Z",
        "--db",
        db,
    )
    run("forget", "ep-2", "--db", db)
    with Memory(db) as mem:
        turn = mem.observe(
            "assistant",
            "Noted: Bangalore since October.",
            session_id="s1",
            turn_id="t-2",
            occurred_at="2026-10-17T09:31:00.123456Z",
            meta={"model": "x", "nested": {"ok": [1, 2]}},
        )
        moved = next(e for e in mem.iter_episodes() if e.text.startswith("I moved"))
        line_id = mem.store.line_ids("default", moved.id)[2]  # "The flat has a balcony."
        now = "2026-11-01T10:00:00.000000Z"
        cited = mem.store.put_memory(
            NewMemory(
                space="default",
                content="The flat in Bangalore has a balcony",
                category="state",
                entity="user",
                attribute="flat",
                value="has a balcony",
                tags=("home", "bangalore"),
                importance=0.8,
                confidence=0.9,
                session_id="s1",
                turn_id="t-2",
                cited_lines=(line_id,),
            ),
            mem.embedder.embed(["The flat in Bangalore has a balcony"])[0],
            mem.embedder.id,
            now,
        )
        old = mem.remember("Lives in Pune", category="state", tags=["home"])
        new = mem.remember("Lives in Bangalore", category="state", event_date="2026-10-17")
        mem.store.update_memory(
            "default",
            old.id,
            MemoryUpdate(
                active=False,
                superseded_by=new.id,
                staleness=0.25,
                archived_at="2026-10-20T00:00:00.000000Z",
            ),
            now,
        )
        mem.store.mark_accessed("default", [new.id, cited.id], now)
        mem.forbid("Never share the door code")
    return {"turn": str(turn.id), "moved": str(moved.id), "cited": cited.id, "old": old.id}


def test_export_import_round_trip_is_lossless(db: Path, tmp_path: Path) -> None:
    ids = _build_rich_space(db, tmp_path)
    first, second, copy = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "copy.db"
    exported = run("export", "--db", db, "-o", first)
    assert "exported 8 records from space 'default'" in flat(exported.stderr)

    imported = run("import", first, "--db", copy)
    assert flat(imported.stdout) == (
        "imported 4 episodes and 4 memories into 'default' (0 already present)"
    )
    run("export", "--db", copy, "-o", second)

    a, b = _records(first), _records(second)
    assert a[0] == b[0] and a[0]["type"] == "orcamem-export"
    a_eps = [r for r in a if r["type"] == "episode"]
    b_eps = [r for r in b if r["type"] == "episode"]
    # The only justified difference: the source has a gap (ep-2 was forgotten) and the copy
    # numbers its episodes densely, in the same order.
    assert [r["id"] for r in a_eps] == [1, 3, 4, 5]
    assert [r["id"] for r in b_eps] == [1, 2, 3, 4]
    renumber = {ra["id"]: rb["id"] for ra, rb in zip(a_eps, b_eps, strict=True)}
    for ra, rb in zip(a_eps, b_eps, strict=True):
        assert {k: v for k, v in ra.items() if k != "id"} == {
            k: v for k, v in rb.items() if k != "id"
        }
    turn = next(r for r in b_eps if r["turn_id"] == "t-2")
    assert turn["meta"] == {"model": "x", "nested": {"ok": [1, 2]}}
    assert turn["occurred_at"] == "2026-10-17T09:31:00.123456Z" and turn["role"] == "assistant"
    assert next(r for r in b_eps if r["kind"] == "document")["text"].endswith("kitchen. ☕")

    a_mems = [r for r in a if r["type"] == "memory"]
    b_mems = [r for r in b if r["type"] == "memory"]
    assert len(a_mems) == 4
    for ra, rb in zip(a_mems, b_mems, strict=True):
        expected = {
            **ra,
            "cited_lines": [[renumber[episode], seq] for episode, seq in ra["cited_lines"]],
        }
        assert rb == expected  # ids, lifecycle, timestamps, tags: all kept
    cited = next(r for r in b_mems if r["id"] == ids["cited"])
    assert cited["cited_lines"] == [[renumber[int(ids["moved"])], 2]] and cited["access_count"] == 1
    old = next(r for r in b_mems if r["id"] == ids["old"])
    assert (old["active"], old["staleness"], old["archived_at"]) == (
        False,
        0.25,
        "2026-10-20T00:00:00.000000Z",
    )
    assert len(b) == len(a)


def test_import_twice_skips_everything(db: Path, tmp_path: Path) -> None:
    _build_rich_space(db, tmp_path)
    dump, copy = tmp_path / "a.jsonl", tmp_path / "copy.db"
    run("export", "--db", db, "-o", dump)
    run("import", dump, "--db", copy)
    before = json.loads(run("stats", "--json", "--db", copy).stdout)
    again = run("import", dump, "--db", copy)
    assert flat(again.stdout) == (
        "imported 0 episodes and 0 memories into 'default' (8 already present)"
    )
    after = json.loads(run("stats", "--json", "--db", copy).stdout)
    assert after["database"] == before["database"]


def test_import_into_another_space_and_from_stdin(db: Path, tmp_path: Path) -> None:
    run("add", "I live in Pune.", "--db", db)
    remember(db, "Prefers tea")
    dump = run("export", "--db", db).stdout  # stdout when no --out
    assert dump.splitlines()[0].startswith('{"type": "orcamem-export"')
    copy = tmp_path / "copy.db"
    result = runner.invoke(app, ["import", "-", "--db", str(copy), "--space", "alice"], input=dump)
    assert result.exit_code == 0, result.output
    data = json.loads(
        run("search", "where do I live", "--db", copy, "-s", "alice", "--json").stdout
    )
    assert data["hits"][0]["text"] == "I live in Pune." and data["hits"][0]["space"] == "alice"
    assert json.loads(run("stats", "--json", "--db", copy).stdout)["spaces"] == ["alice"]


def test_copy_a_space_within_one_database_keeps_its_memories(db: Path, tmp_path: Path) -> None:
    run("add", "I live in Pune.", "--db", db)
    remember(db, "Prefers tea")
    dump = tmp_path / "a.jsonl"
    run("export", "--db", db, "-o", dump)
    result = run("import", dump, "--db", db, "--space", "copy")
    assert (
        flat(result.stdout) == "imported 1 episodes and 1 memories into 'copy' (0 already present)"
    )
    copied = json.loads(run("facts", "--json", "--db", db, "--space", "copy").stdout)
    assert [m["content"] for m in copied] == ["Prefers tea"]
    again = run("import", dump, "--db", db, "--space", "copy")  # the copy is idempotent too
    assert (
        flat(again.stdout) == "imported 0 episodes and 0 memories into 'copy' (2 already present)"
    )


def test_import_rejects_a_file_that_is_not_an_export(db: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text('{"hello": "world"}\n', encoding="utf-8")
    result = run("import", bogus, "--db", db, code=2)
    assert "not an orcamem export" in flat(result.stderr)
    missing = run("import", tmp_path / "missing.jsonl", "--db", db, code=2)
    assert "cannot read" in flat(missing.stderr)
    assert json.loads(run("stats", "--json", "--db", db).stdout)["database"]["episodes"] == 0


def test_import_reads_its_own_export_of_line_and_paragraph_separators(
    db: Path, tmp_path: Path
) -> None:
    text = "First line\u2028second line\u2029next paragraph."
    run("add", text, "--db", db)
    fact = remember(db, "Prefers\u2028tea\u2029always")
    dump, copy = tmp_path / "a.jsonl", tmp_path / "copy.db"
    run("export", "--db", db, "-o", dump)
    result = run("import", dump, "--db", copy)
    assert (
        flat(result.stdout)
        == "imported 1 episodes and 1 memories into 'default' (0 already present)"
    )
    with Memory(copy) as mem:
        assert [ep.text for ep in mem.iter_episodes()] == [text]
        assert mem.memory(fact).content == "Prefers\u2028tea\u2029always"
    stdin = runner.invoke(
        app, ["import", "-", "--db", str(copy), "--space", "s"], input=dump.read_text("utf-8")
    )
    assert stdin.exit_code == 0, stdin.output
    with Memory(copy) as mem:
        assert [ep.text for ep in mem.iter_episodes(space="s")] == [text]


def test_import_of_a_bad_record_exits_2_with_one_error_line_and_writes_nothing(
    db: Path, tmp_path: Path
) -> None:
    run("add", "I live in Pune.", "--db", db)
    remember(db, "Prefers tea")
    dump, copy = tmp_path / "a.jsonl", tmp_path / "copy.db"
    run("export", "--db", db, "-o", dump)
    lines = dump.read_text("utf-8").split("\n")
    memory = json.loads(lines[2])
    memory["active"] = "yes"
    lines[2] = json.dumps(memory)
    dump.write_text("\n".join(lines), encoding="utf-8")
    result = run("import", dump, "--db", copy, code=2)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output
    assert "line 3" in flat(result.stderr) and "active must be true or false" in flat(result.stderr)
    assert json.loads(run("stats", "--json", "--db", copy).stdout)["database"]["episodes"] == 0


# -- reembed, spaces ---------------------------------------------------------------------------


def test_reembed_with_the_same_embedder(db: Path) -> None:
    run("add", "One sentence. Two sentences.", "--db", db)
    remember(db, "Prefers tea")
    result = run("reembed", "--db", db)
    assert "re-embedded 3 vectors in space 'default' with static:" in flat(result.stdout)
    data = json.loads(run("search", "tea", "--db", db, "--json").stdout)
    assert data["hits"][0]["text"] == "Prefers tea"
    missing = run("reembed", "--db", db, "--space", "nobody", code=1)
    assert "no space 'nobody'" in flat(missing.stderr)


@pytest.mark.parametrize("space", ["a/b", "..", "has space", "tab\there", "x" * 129])
@pytest.mark.parametrize(
    "command", [["add", "hello"], ["search", "hello"], ["recall", "hello"], ["facts"], ["stats"]]
)
def test_invalid_space_name_is_exit_2(db: Path, command: list[str], space: str) -> None:
    result = run(*command, "--db", db, "--space", space, code=2)
    assert "invalid space name" in flat(result.stderr)
    assert not db.exists() or json.loads(run("stats", "--json", "--db", db).stdout)["database"] == {
        "spaces": 0,
        "episodes": 0,
        "lines": 0,
        "memories": 0,
    }


# -- help on every command --------------------------------------------------------------------


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path of the app, walked from the click group Typer builds (so a new
    command or sub-app is picked up without editing this file)."""
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


ROOT = typer.main.get_command(app)
COMMANDS = list(_commands(ROOT))


def test_command_list_is_complete() -> None:
    names = {" ".join(path) for path in COMMANDS}
    assert names >= {
        "",
        "add",
        "search",
        "recall",
        "remember",
        "forbid",
        "facts",
        "forget",
        "stats",
        "export",
        "import",
        "reembed",
        "bench",
        "bench latency",
        "bench locomo",
    }


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "orcamem")
def test_help_on_every_command(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.stdout.startswith("Usage:")
    command: Any = ROOT
    for name in path:
        command = command.commands[name]
    assert command.help and command.help.strip(), f"`{' '.join(path)}` has no help text"
    assert flat(command.help.splitlines()[0]) in flat(result.stdout)
    for param in command.params:
        if getattr(param, "hidden", False) or param.name == "help":
            continue
        assert getattr(param, "help", None), f"`{' '.join(path)}` {param.name} has no help"


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "Usage:" in result.output and "search" in result.output


# -- bench ---------------------------------------------------------------------------------------

LATENCY_KEYS = {
    "add_p50_ms",
    "add_p95_ms",
    "search_p50_ms",
    "search_p95_ms",
    "search_session_filter_p50_ms",
    "search_role_filter_p50_ms",
    "build_context_p50_ms",
    "ingest_turns_per_s",
    "warm_s",
    "db_mb",
}


def _check_latency_row(row: dict[str, Any]) -> None:
    assert set(row) >= LATENCY_KEYS
    assert all(isinstance(row[k], (int, float)) and row[k] >= 0 for k in LATENCY_KEYS)
    assert row["add_p95_ms"] >= row["add_p50_ms"] > 0
    assert row["search_p95_ms"] >= row["search_p50_ms"] > 0
    assert row["ingest_turns_per_s"] > 0 and row["db_mb"] > 0


def test_bench_latency_json() -> None:
    result = run("bench", "latency", "--records", 50, "--queries", 5, "--adds", 5, "--json")
    data = json.loads(result.stdout)  # one JSON object and nothing else on stdout
    assert list(data["records"]) == ["50"]
    _check_latency_row(data["records"]["50"])


def test_bench_latency_several_sizes_after_one_option() -> None:
    data = json.loads(run("bench", "latency", "--records", 30, 40, "--json").stdout)
    assert list(data["records"]) == ["30", "40"]
    for row in data["records"].values():
        _check_latency_row(row)


def test_bench_latency_table_and_bad_size() -> None:
    table = run("bench", "latency", "--records", 20, "--queries", 3, "--adds", 3).stdout
    assert "records" in table and "add p50" in table and "│ 20 " in table
    bad = run("bench", "latency", "--records", 0, "--queries", 3, "--adds", 3, code=2)
    assert "records=0" in flat(bad.stderr)


def test_a_table_off_a_terminal_is_printed_whole_whatever_the_width(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A script or a test reads the same table whatever $COLUMNS says (rich cut it to '…')."""
    from rich.console import Console
    from rich.table import Table

    from orcamem.interfaces.cli import console

    monkeypatch.setattr(Console, "is_terminal", property(lambda self: False))
    monkeypatch.setattr(console.out.console, "width", 40)
    table = Table("records", "pruned p50 / p95, recall", "turns/s")
    table.add_row("1,000,000", "51.0 / 80.2, 0.9925", "2,424")
    with console.out.console.capture() as captured:
        console.print_table(table)
    text = captured.get()
    assert "pruned p50 / p95, recall" in text and "51.0 / 80.2, 0.9925" in text
    assert "…" not in text and len(text.splitlines()) == 5  # top, header, rule, row, bottom


# -- sleep: failed batches and foreign leases (issue 11) ---------------------------------------


def _failed_batch(db: Path) -> str:
    """A batch whose three workers died (at a past time): its job is failed."""
    from orcamem._kernel.clock import FrozenClock
    from orcamem.engine.sleeper import Sleeper

    clock = FrozenClock("2026-01-01T10:00:00Z")
    with Memory(db, clock=clock) as mem:
        mem.observe("user", "I live in Pune.", occurred_at="2025-12-31T09:00:00Z")
        sleeper = Sleeper(mem)
        job = sleeper.jobs.enqueue_next("default", 32)
        for n in range(3):
            sleeper.queue.claim(f"dead-{n}", 60, clock.now())
            clock.advance(seconds=61)
        sleeper.queue.claim("reaper", 60, clock.now())
        assert sleeper.queue.get(job.id).status == "failed"
        return job.id


def test_sleep_reports_a_failed_batch_then_retry_failed_consolidates_it(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orcamem.engine.consolidate.jobs import ConsolidationJobs

    job_id = _failed_batch(db)
    calls: list[int] = []
    original = ConsolidationJobs.enqueue_next

    def bounded(self: ConsolidationJobs, space: str, batch_size: int) -> Any:
        calls.append(1)  # fail instead of hanging if sleep spins on the failed batch
        assert len(calls) <= 50, "orcamem sleep is spinning on the failed batch"
        return original(self, space, batch_size)

    monkeypatch.setattr(ConsolidationJobs, "enqueue_next", bounded)
    failed = flat(run("sleep", "--db", db, code=1).output)
    assert "no batch could run" in failed and "nothing to do" not in failed
    assert f"(job {job_id}) failed: the lease of dead-2 expired" in failed
    assert "orcamem sleep --retry-failed" in failed
    data = json.loads(run("sleep", "--db", db, "--json", code=1).stdout)
    assert [b["job"] for b in data["failed_batches"]] == [job_id]
    retried = flat(run("sleep", "--db", db, "--retry-failed").output)
    assert retried.startswith("consolidated 1 episode(s)") and "failed" not in retried
    assert "nothing to do" in flat(run("sleep", "--db", db).output)


def test_sleep_reports_episodes_waiting_behind_another_workers_lease(db: Path) -> None:
    from orcamem._kernel.clock import SystemClock
    from orcamem.engine.sleeper import Sleeper

    with Memory(db) as mem:
        mem.observe("user", "I live in Pune.")
        mem.observe("user", "I drink black coffee every morning.")
        sleeper = Sleeper(mem)
        sleeper.jobs.enqueue_next("default", 32)
        held = sleeper.queue.claim("crashed-worker", 3600, SystemClock().now())
    output = flat(run("sleep", "--db", db).output)
    assert "nothing to do" not in output
    assert (
        f"2 episode(s) wait behind a batch (ep-1..ep-2, job {held.id}) leased by another worker "
        f"(crashed-worker) until {held.lease_expires_at}" in output
    )
    assert "orcamem sleep --wait" in output
    data = json.loads(run("sleep", "--db", db, "--json").stdout)
    assert data["waiting"]["until"] == held.lease_expires_at and data["episodes"] == 0


def test_a_database_url_for_db_is_refused_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("stats", "--db", "mysql://localhost/orcamem", code=2)
    assert "pass the path of an SQLite file" in flat(result.output)
    assert list(tmp_path.iterdir()) == []


# -- what a mistaken command must not do -----------------------------------------------------


def test_a_mistaken_export_leaves_the_earlier_backup_as_it_was(db: Path, tmp_path: Path) -> None:
    """An unknown space, a mistyped --db or an unwritable --out is one error line; the file
    already at --out keeps every record, and no database is created."""
    run("add", "I drink green tea every morning", "--db", db)
    backup = tmp_path / "backup.jsonl"
    run("export", "--db", db, "-o", backup)
    kept = backup.read_text(encoding="utf-8")
    assert len(kept.splitlines()) == 2
    unknown = run("export", "--db", db, "-s", "nosuch", "-o", backup, code=2)
    assert "no space 'nosuch'" in flat(unknown.stderr)
    typo = tmp_path / "typo.db"
    assert "no database at" in flat(run("export", "--db", typo, "-o", backup, code=2).stderr)
    assert not typo.exists()
    for target in (tmp_path, tmp_path / "nodir" / "x.jsonl"):
        assert "cannot write" in flat(run("export", "--db", db, "-o", target, code=2).stderr)
    assert backup.read_text(encoding="utf-8") == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl", "cli.db"]


def test_a_note_with_no_spaces_is_stored_not_taken_for_a_path(db: Path) -> None:
    """A CJK sentence or a 300-letter word is longer than a file name may be."""
    for text in ("我喜欢喝绿茶，每天早上都会泡一壶。" * 6, "a" * 300):
        assert "added ep-" in run("add", text, "--db", db).stdout
    with Memory(db) as mem:
        assert mem.stats()["episodes"] == 2


def test_a_file_refuses_the_flags_of_a_note(db: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("bananas are yellow", encoding="utf-8")
    refused = run("add", notes, "--db", db, "--occurred-at", "2026-01-01T00:00:00Z", code=2)
    assert "describe a note" in flat(refused.stderr)
    assert not db.exists()
    assert "passage(s)" in run("add", notes, "--db", db).stdout


def test_turn_start_refuses_a_payload_that_is_no_object() -> None:
    for payload in ("[]", '"x"', "5", "null"):
        result = runner.invoke(app, ["turn", "start", "--json"], input=payload)
        assert result.exit_code == 1, (payload, result.output)
        assert "must be a JSON object" in result.stderr
        assert result.stdout == ""

"""``orcamem import --from chatgpt|claude|claude-code|mcp-memory|mem0``: other tools' histories
with their real dates, idempotent, refused whole when a record is not what the format says.

Each fixture is written here from the format's documented structure (ChatGPT's
``conversations.json`` mapping tree, Claude.ai's ``chat_messages``, Claude Code's session
JSONL, the MCP memory server's entity/relation lines, Mem0's ``get_all`` objects) into a real
file, and imported into a real SQLite file through the CLI or ``Memory.import_history``.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orcamem import Memory
from orcamem.errors import InvalidInputError
from orcamem.interfaces.cli.main import app

runner = CliRunner()
MARCH_5 = 1709640000.0  # 2024-03-05T12:00:00Z


def _cli(*args: Any, code: int = 0) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == code, result.output
    return " ".join(result.output.split())


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _episodes(db: Path, space: str = "default") -> list[Any]:
    with Memory(db) as mem:
        return list(mem.iter_episodes(space=space))


def _node(
    node_id: str, role: str | None, text: str, parent: str | None, children: list[str], at: float
) -> dict[str, Any]:
    message = None
    if role is not None:
        message = {"id": node_id, "author": {"role": role}, "create_time": at,
                   "content": {"content_type": "text", "parts": [text]}, "metadata": {}}  # fmt: skip
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def chatgpt_export() -> list[dict[str, Any]]:
    """One conversation whose first answer was regenerated (a branch) and a second one."""
    mapping = {
        "root": _node("root", None, "", None, ["sys"], MARCH_5),
        "sys": _node("sys", "system", "You are ChatGPT.", "root", ["u1"], MARCH_5),
        "u1": _node("u1", "user", "I just moved to Lisbon for a pharmacy job.", "sys", ["a1", "a1b"], MARCH_5 + 60),
        "a1": _node("a1", "assistant", "An old answer the user regenerated.", "u1", [], MARCH_5 + 61),
        "a1b": _node("a1b", "assistant", "Congratulations on the move to Lisbon!", "u1", ["t1"], MARCH_5 + 62),
        "t1": _node("t1", "tool", "search results", "a1b", ["u2"], MARCH_5 + 63),
        "u2": _node("u2", "user", "Which neighbourhood is near the river?", "t1", [], MARCH_5 + 120),
    }  # fmt: skip
    mapping["hidden"] = _node("hidden", "user", "hidden context", "u2", [], MARCH_5 + 121)
    mapping["hidden"]["message"]["metadata"] = {"is_visually_hidden_from_conversation": True}
    mapping["u2"]["children"] = ["hidden"]
    other = {
        "r": _node("r", None, "", None, ["q"], MARCH_5 + 86400),
        "q": _node("q", "user", "My daughter Ines turns six in May.", "r", [], MARCH_5 + 86400),
    }
    return [
        {"id": "conv-1", "title": "Moving", "create_time": MARCH_5, "current_node": "hidden",
         "mapping": mapping},
        {"conversation_id": "conv-2", "title": "Family", "create_time": MARCH_5 + 86400,
         "current_node": "q", "mapping": other},
    ]  # fmt: skip


def test_chatgpt_the_branch_the_user_saw_with_real_dates_and_idempotent(tmp_path: Path) -> None:
    export = _write(tmp_path / "conversations.json", chatgpt_export())
    db = tmp_path / "m.db"
    said = _cli("import", export, "--from", "chatgpt", "--db", db, "--space", "me")
    assert "imported 4 episodes in 2 sessions from chatgpt into 'me' (0 already present)" in said
    episodes = _episodes(db, "me")
    assert [(e.role, e.text) for e in episodes] == [
        ("user", "I just moved to Lisbon for a pharmacy job."),
        ("assistant", "Congratulations on the move to Lisbon!"),
        ("user", "Which neighbourhood is near the river?"),
        ("user", "My daughter Ines turns six in May."),
    ]
    assert episodes[0].occurred_at.startswith("2024-03-05T12:01:00")
    assert {e.session_id for e in episodes} == {"chatgpt:conv-1", "chatgpt:conv-2"}
    assert episodes[0].meta == {"via": "import", "source": "chatgpt", "title": "Moving"}
    again = _cli("import", export, "--from", "chatgpt", "--db", db, "--space", "me")
    assert "imported 0 episodes" in again and "(4 already present)" in again
    with Memory(db) as mem:
        block = mem.recall("Where did I move?", space="me")
    assert "2024-03-05" in block and "Lisbon" in block  # the real date reaches the block


def test_claude_ai_export(tmp_path: Path) -> None:
    export = _write(tmp_path / "conversations.json", [
        {"uuid": "c-1", "name": "Trip", "created_at": "2024-06-01T09:00:00.123456+02:00",
         "chat_messages": [
             {"uuid": "m-1", "sender": "human", "text": "Plan a trip to Kyoto in October.",
              "content": [{"type": "text", "text": "Plan a trip to Kyoto in October."}],
              "created_at": "2024-06-01T09:00:00.123456+02:00"},
             {"uuid": "m-2", "sender": "assistant", "text": "",
              "content": [{"type": "tool_use", "name": "search", "input": {}},
                          {"type": "text", "text": "Kyoto in October is mild."}],
              "created_at": "2024-06-01T09:00:05Z"},
             {"uuid": "m-3", "sender": "human", "text": "", "content": [],
              "created_at": "2024-06-01T09:01:00Z"},
         ]},
    ])  # fmt: skip
    with Memory(tmp_path / "m.db") as mem:
        counts = mem.import_history("claude", export)
        episodes = list(mem.iter_episodes())
    assert counts == {"episodes": 2, "skipped": 0, "sessions": 1}
    assert [(e.role, e.text, e.occurred_at[:19]) for e in episodes] == [
        ("user", "Plan a trip to Kyoto in October.", "2024-06-01T07:00:00"),  # in UTC
        ("assistant", "Kyoto in October is mild.", "2024-06-01T09:00:05"),
    ]
    assert {e.turn_id for e in episodes} == {"m-1", "m-2"}


def test_claude_code_transcripts_in_a_directory(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-me-app"
    project.mkdir(parents=True)
    base = {"sessionId": "s-1", "cwd": "/home/me/app", "isSidechain": False}
    _lines(project / "s-1.jsonl", [
        {"type": "summary", "summary": "Fix the login bug"},
        {**base, "type": "user", "uuid": "u1", "timestamp": "2025-01-10T10:00:00Z",
         "message": {"role": "user", "content": "The login form rejects emails with a plus sign."}},
        {**base, "type": "assistant", "uuid": "a1", "timestamp": "2025-01-10T10:00:04Z",
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": "The validator's regex forbids '+'; I'll relax it."},
             {"type": "tool_use", "id": "t", "name": "Edit", "input": {}}]}},
        {**base, "type": "user", "uuid": "u2", "timestamp": "2025-01-10T10:00:06Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}},
        {**base, "type": "user", "uuid": "u3", "timestamp": "2025-01-10T10:00:07Z",
         "isMeta": True, "message": {"role": "user", "content": "Caveat: local commands"}},
        {**base, "type": "user", "uuid": "u4", "timestamp": "2025-01-10T10:00:08Z",
         "message": {"role": "user", "content": "<command-name>/clear</command-name>"}},
        {**base, "type": "assistant", "uuid": "a2", "timestamp": "2025-01-10T10:00:09Z",
         "isSidechain": True, "message": {"role": "assistant", "content": "sub-agent chatter"}},
    ])  # fmt: skip
    _lines(project / "s-2.jsonl", [
        {**base, "sessionId": "s-2", "type": "user", "uuid": "v1",
         "timestamp": "2025-01-11T08:00:00Z",
         "message": {"role": "user", "content": "Use pnpm, never npm, in this repo."}},
    ])  # fmt: skip
    db = tmp_path / "m.db"
    said = _cli("import", tmp_path / "projects", "--from", "claude-code", "--db", db)
    assert "imported 3 episodes in 2 sessions" in said
    assert [(e.role, e.text, e.session_id) for e in _episodes(db)] == [
        ("user", "The login form rejects emails with a plus sign.", "claude-code:s-1"),
        ("assistant", "The validator's regex forbids '+'; I'll relax it.", "claude-code:s-1"),
        ("user", "Use pnpm, never npm, in this repo.", "claude-code:s-2"),
    ]


def test_mcp_memory_graph_dated_by_the_file_and_only_new_lines_on_reimport(
    tmp_path: Path,
) -> None:
    graph = tmp_path / "memory.jsonl"
    rows = [
        {"type": "entity", "name": "John_Smith", "entityType": "person",
         "observations": ["Speaks fluent Spanish", "Graduated in 2019"]},
        {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": []},
        {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
    ]  # fmt: skip
    _lines(graph, rows)
    os.utime(graph, (MARCH_5, MARCH_5))
    db = tmp_path / "m.db"
    with Memory(db) as mem:
        assert mem.import_history("mcp-memory", graph)["episodes"] == 3
    rows[0]["observations"].append("Prefers morning meetings")
    _lines(graph, rows)  # the server rewrote the file: a new date for every line
    os.utime(graph, (MARCH_5 + 86400, MARCH_5 + 86400))
    with Memory(db) as mem:
        assert mem.import_history("mcp-memory", graph) == {
            "episodes": 1, "skipped": 3, "sessions": 1,
        }  # fmt: skip
    episodes = _episodes(db)
    assert [(e.kind, e.text, e.occurred_at[:10]) for e in episodes] == [
        ("note", "John_Smith (person): Speaks fluent Spanish", "2024-03-05"),
        ("note", "John_Smith (person): Graduated in 2019", "2024-03-05"),
        ("note", "John_Smith works at Anthropic", "2024-03-05"),
        ("note", "John_Smith (person): Prefers morning meetings", "2024-03-06"),
    ]


def test_mem0_memories_are_notes_and_an_edit_comes_in_as_a_new_note(tmp_path: Path) -> None:
    memories = [
        {"id": "9f1c", "memory": "Is vegetarian", "user_id": "alice", "hash": "h1",
         "metadata": None, "categories": ["food"], "created_at": "2024-07-01T10:00:00-07:00",
         "updated_at": "2024-07-01T10:00:00-07:00"},
        {"id": "77aa", "memory": "Lives in Denver", "user_id": "alice", "hash": "h2",
         "categories": [], "created_at": "2024-07-02T10:00:00Z", "updated_at": None},
    ]  # fmt: skip
    export = _write(tmp_path / "mem0.json", {"results": memories})
    db = tmp_path / "m.db"
    _cli("import", export, "--from", "mem0", "--db", db, "--space", "alice")
    memories[1] = {
        **memories[1],
        "memory": "Lives in Boulder",
        "updated_at": "2024-09-01T00:00:00Z",
    }
    _write(export, {"results": memories})
    said = _cli("import", export, "--from", "mem0", "--db", db, "--space", "alice")
    assert "imported 1 episodes" in said and "(1 already present)" in said
    assert [(e.kind, e.role, e.text, e.occurred_at[:16], e.session_id) for e in _episodes(db, "alice")] == [
        ("note", None, "Is vegetarian", "2024-07-01T17:00", "mem0:alice"),
        ("note", None, "Lives in Denver", "2024-07-02T10:00", "mem0:alice"),
        ("note", None, "Lives in Boulder", "2024-09-01T00:00", "mem0:alice"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("fmt", "content", "named"),
    [
        ("chatgpt", {"not": "a list"}, "not a list of conversations"),
        ("chatgpt", [{"title": "x"}], "conversation 0: it has no 'mapping'"),
        ("claude", [{"uuid": "c", "chat_messages": [{"sender": "human", "text": "hi",
                                                     "created_at": "yesterday"}]}],
         "conversation 0, message 0: bad time 'yesterday'"),
        ("mem0", [{"id": "a", "memory": "ok", "created_at": "2024-01-01T00:00:00Z"},
                  {"memory": "no id"}], "memory 1: a memory needs an 'id'"),
        ("claude", [{"uuid": "c", "chat_messages": [{"sender": ["human"], "text": "hi"}]}],
         "conversation 0, message 0: its 'sender' is not a string"),
    ],
)  # fmt: skip
def test_a_bad_record_refuses_the_whole_file_naming_it(
    tmp_path: Path, fmt: str, content: Any, named: str
) -> None:
    export = _write(tmp_path / "export.json", content)
    with Memory(tmp_path / "m.db") as mem:
        with pytest.raises(InvalidInputError, match="nothing was imported") as caught:
            mem.import_history(fmt, export)
        assert named in str(caught.value) and str(export) in str(caught.value)
        assert list(mem.iter_episodes()) == []


def test_chatgpt_node_ids_of_another_type_or_in_a_cycle_end_the_branch(tmp_path: Path) -> None:
    """A node id that is a list named no node (it raised TypeError), and children that lead
    back up the branch spun forever: the branch ends at the last node it can reach."""
    mapping = {
        "r": _node("r", "user", "The root question about Lisbon.", None, ["a"], MARCH_5),
        "a": _node("a", "assistant", "An answer that loops back.", "r", ["r"], MARCH_5 + 1),
    }
    odd = {"x": _node("x", "user", "Parent and child are lists.", None, [["y"]], MARCH_5 + 2)}
    odd["x"]["parent"] = ["z"]
    export = _write(tmp_path / "conversations.json", [
        {"id": "loop", "create_time": MARCH_5, "mapping": mapping},
        {"id": "odd", "create_time": MARCH_5, "current_node": ["x"], "mapping": odd},
    ])  # fmt: skip
    with Memory(tmp_path / "m.db") as mem:
        assert mem.import_history("chatgpt", export)["episodes"] == 3
        texts = [e.text for e in mem.iter_episodes()]
    assert texts == [
        "The root question about Lisbon.",
        "An answer that loops back.",
        "Parent and child are lists.",
    ]


def test_bad_jsonl_and_an_unknown_format_are_clear_errors(tmp_path: Path) -> None:
    graph = tmp_path / "memory.jsonl"
    graph.write_text('{"type": "entity", "name": "A", "observations": ["x"]}\n{oops\n')
    said = _cli("import", graph, "--from", "mcp-memory", "--db", tmp_path / "m.db", code=2)
    assert "line 2: not JSON" in said and "nothing was imported" in said
    said = _cli("import", graph, "--from", "evernote", "--db", tmp_path / "m.db", code=2)
    assert "--from 'evernote' is not a format: use one of orcamem, chatgpt" in said


@pytest.mark.parametrize("fmt", ["chatgpt", "claude", "claude-code", "mcp-memory", "mem0"])
def test_a_file_that_holds_nothing_of_its_format_is_an_error(tmp_path: Path, fmt: str) -> None:
    """Another tool's file (an orcamem export here) or an empty one imports nothing: say so,
    rather than report 0 imported."""
    with Memory(tmp_path / "m.db") as mem:
        mem.add("I drink green tea")
        lines = io.StringIO()
        mem.export(lines)
        empty = tmp_path / "empty"
        empty.mkdir()
        exported = tmp_path / "orcamem.jsonl"
        exported.write_text(lines.getvalue(), encoding="utf-8")
        for source in (exported, empty):
            with pytest.raises(InvalidInputError):
                mem.import_history(fmt, source)
        assert len(list(mem.iter_episodes())) == 1

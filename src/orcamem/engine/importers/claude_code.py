"""Claude Code's session transcripts: ``~/.claude/projects/<project>/<session id>.jsonl``.

One JSON object a line: ``{"type": "user" | "assistant" | "summary" | ..., "uuid",
"parentUuid", "sessionId", "timestamp", "cwd", "isSidechain", "isMeta", "message": {"role",
"content": str | [blocks]}}``. Kept: the text blocks of user and assistant lines of the main
thread; sub-agent threads (``isSidechain``), meta lines, slash-command echoes and lines of
only tool calls or tool results hold no conversation text. A directory is read whole (every
``*.jsonl`` under it, by name).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ._read import Imported, Source, block_text, field_of

_COMMAND_ECHOES = ("<command-name>", "<command-message>", "<local-command-stdout>")


def parse(path: Path) -> Iterator[Imported]:
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    what = "a Claude Code transcript (~/.claude/projects/<project>/<session>.jsonl)"
    for file in files:
        source = Source(file, "claude-code", what)
        for number, line in source.json_lines():
            kind = field_of(line, "type")
            if kind not in ("user", "assistant") or line.get("isSidechain") or line.get("isMeta"):
                continue
            message = line.get("message")
            text = block_text(field_of(message, "content")).strip()
            if not text or text.startswith(_COMMAND_ECHOES):
                continue
            where = f"line {number}"
            session = line.get("sessionId")
            if not isinstance(session, str):
                raise source.fail(where, "it has no 'sessionId'")
            cwd = line.get("cwd")
            yield source.record(
                where,
                text=text,
                occurred_at=source.time(line.get("timestamp"), where),
                session_id=f"claude-code:{session}",
                turn_id=str(line.get("uuid") or f"{session}:{number}"),
                role=str(field_of(message, "role") or kind),
                meta={"cwd": cwd} if isinstance(cwd, str) else {},
            )

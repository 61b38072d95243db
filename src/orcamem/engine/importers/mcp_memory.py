"""The official MCP memory server's knowledge graph, ``memory.jsonl``
(``@modelcontextprotocol/server-memory``).

One JSON object a line: ``{"type": "entity", "name", "entityType", "observations": [str]}``
or ``{"type": "relation", "from", "to", "relationType"}``. Each observation and relation is a
``note`` (another tool's claim, for consolidation to weigh): ``John_Smith (person): Speaks
fluent Spanish``, ``John_Smith works at Anthropic``. The graph keeps no dates, so each is
dated by the file's last change (it was known by then); re-importing a changed file adds only
the observations and relations that are new, whatever that date.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..._kernel.ids import sha256
from ._read import Imported, Source, field_of

SESSION = "mcp-memory"


def parse(path: Path) -> Iterator[Imported]:
    source = Source(path, "mcp-memory", "the MCP memory server's memory.jsonl")
    lines = list(source.json_lines())
    when = source.time(path.stat().st_mtime, "the file")
    for number, line in lines:
        where = f"line {number}"
        kind = field_of(line, "type")
        if kind == "entity":
            name, observations = line.get("name"), line.get("observations")
            if not isinstance(name, str) or not isinstance(observations, list):
                raise source.fail(where, "an entity needs a 'name' and a list of 'observations'")
            label = f"{name} ({line['entityType']})" if line.get("entityType") else name
            for observation in observations:
                if isinstance(observation, str) and observation.strip():
                    yield source.record(
                        where,
                        text=f"{label}: {observation}",
                        occurred_at=when,
                        session_id=SESSION,
                        turn_id="obs-" + sha256(f"{name}\n{observation}")[:16],
                        kind="note",
                        meta={"entity": name},
                    )
        elif kind == "relation":
            ends = [line.get("from"), line.get("relationType"), line.get("to")]
            if not all(isinstance(end, str) and end for end in ends):
                raise source.fail(where, "a relation needs 'from', 'relationType' and 'to'")
            head, verb, tail = ends
            yield source.record(
                where,
                text=f"{head} {verb.replace('_', ' ')} {tail}",
                occurred_at=when,
                session_id=SESSION,
                turn_id="rel-" + sha256("\n".join(ends))[:16],
                kind="note",
                meta={"entity": head},
            )
        else:
            raise source.fail(where, f"type {kind!r} is neither 'entity' nor 'relation'")

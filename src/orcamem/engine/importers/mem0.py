"""Mem0's memories, as its API and SDK list them (``client.get_all(...)``, the platform's
export): a list of ``{"id", "memory", "user_id", "agent_id", "hash", "metadata",
"categories", "created_at", "updated_at"}``, or ``{"results": [...]}`` around it.

Each memory is a ``note`` (Mem0's model wrote it: a claim for consolidation to weigh, not a
fact as given), dated by its ``updated_at`` (else ``created_at``), in session
``mem0:<user_id>`` (or the agent's id). A memory edited since the last import comes in again
as a new note with its new date; recall prefers the newer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ._read import Imported, Source, field_of


def parse(path: Path) -> Iterator[Imported]:
    source = Source(path, "mem0", "a Mem0 export (the JSON of get_all)")
    data = source.json()
    for key in ("results", "memories"):
        if isinstance(field_of(data, key), list):
            data = data[key]
    if not isinstance(data, list):
        raise source.fail("the file", "not a list of memories (nor {'results': [...]})")
    for number, memory in enumerate(data):
        where = f"memory {number}"
        text, name = field_of(memory, "memory"), field_of(memory, "id")
        if not isinstance(text, str) or not isinstance(name, str):
            raise source.fail(where, "a memory needs an 'id' and its 'memory' text")
        owner = memory.get("user_id") or memory.get("agent_id") or "memories"
        categories = memory.get("categories")
        yield source.record(
            where,
            text=text,
            occurred_at=source.time(memory.get("updated_at") or memory.get("created_at"), where),
            session_id=f"mem0:{owner}",
            turn_id=name,
            kind="note",
            meta={"categories": categories} if isinstance(categories, list) else {},
        )

"""Histories from other tools, brought in with their real dates (``orcamem import --from``).

One module a format, each a pure parser from a file to :class:`Imported` records (``_read``
holds what they share: reading JSON, times, the error that names the record); :func:`run`
writes them through ``Memory.add_many``. Conversations become ``turn`` episodes, one a
message, in a session a conversation; another tool's memories become ``note`` episodes (a
claim it made, which consolidation may turn into facts, never a fact as given).

Idempotent: a record whose session already holds an episode with its turn id (the source's
message or memory id) and its text is skipped, so importing the same file again, or a newer
export of it, adds only what is new (an edited memory comes in as a new note).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..._kernel.model import digest
from ...errors import InvalidInputError
from . import chatgpt, claude, claude_code, mcp_memory, mem0
from ._read import Imported

if TYPE_CHECKING:  # memory.py imports this package when an import runs
    from ..memory import Memory

Progress = Callable[[int, int], None]
_PAGE = 1000

__all__ = ["FORMATS", "Imported", "parse", "run"]

FORMATS: dict[str, Callable[[Path], Iterable[Imported]]] = {
    "chatgpt": chatgpt.parse,
    "claude": claude.parse,
    "claude-code": claude_code.parse,
    "mcp-memory": mcp_memory.parse,
    "mem0": mem0.parse,
}
"""Each format's parser, by the name ``--from`` takes."""


def parse(source: str, path: str | Path) -> list[Imported]:
    """Every record of ``path`` in format ``source``, oldest first; nothing is written.

    Raises:
        InvalidInputError: an unknown format, an unreadable file, a file holding no record,
            or a record that is not what the format documents (naming the file and the record).
    """
    if source not in FORMATS:
        raise InvalidInputError(
            f"unknown import format {source!r}: use one of {', '.join(FORMATS)}"
        )
    records = list(FORMATS[source](Path(path)))
    if not records:  # another format, or the wrong file: say so rather than import nothing
        raise InvalidInputError(
            f"{path} holds nothing a {source} export holds (not one conversation turn or "
            "memory): check --from and the file"
        )
    return sorted(records, key=lambda record: record.occurred_at)


def run(
    memory: Memory,
    records: Sequence[Imported],
    *,
    space: str | None,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Append the records the space does not hold yet; returns the counts."""
    present: set[tuple[str, str | None, str]] = set()
    for session in sorted({record.session_id for record in records}):
        after = 0
        while page := memory.episodes_page(
            space=space, session_id=session, after=after, limit=_PAGE
        ):
            present.update((session, e.turn_id, e.digest) for e in page)
            after = page[-1].id
    fresh, seen = [], set()
    for record in records:
        key = (record.session_id, record.turn_id, digest(record.text))
        if key not in present and key not in seen:
            seen.add(key)
            fresh.append(record.episode())
    memory.add_many(fresh, space=space, progress=progress)
    return {
        "episodes": len(fresh),
        "skipped": len(records) - len(fresh),
        "sessions": len({record.session_id for record in records}),
    }

"""The opt-in log of injected blocks: which items reached a turn, when, through what.

Off by default (``Config.pack.log_blocks``; ``ORCAMEM_LOG_BLOCKS=1``, ``--log-blocks``). An
entry holds the time, space, surface, the ids of the block's items, its token count and the
query's SHA-256, never the query or the block's text unless ``pack.log_block_content`` is on
too. It lives in the database (replicas share it), bounded per space by
``pack.log_blocks_keep`` entries and ``pack.log_blocks_days`` of retention, both enforced as
each entry is written; ``delete_space`` deletes it with the space.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from .._kernel.clock import format_time
from .._kernel.config import Config
from .._kernel.ids import tagged
from .._kernel.model import Hit
from .._kernel.text import wordpiece_tokens
from ..errors import InvalidInputError
from .store.base import BlockEntry, BlockLog

__all__ = ["SURFACES", "check_surface", "log_block"]

SURFACES = ("sdk", "proxy", "rest", "mcp")
"""Who injects a block: the SDK (``Memory.context``), the proxy, ``POST /api/context``, MCP."""


def check_surface(surface: object) -> str:
    if surface not in SURFACES:
        raise InvalidInputError(f"surface={surface!r}: use one of {', '.join(SURFACES)}")
    return surface  # type: ignore[return-value]


def log_block(
    store: BlockLog,
    config: Config,
    now: datetime,
    *,
    space: str,
    surface: str,
    query: str,
    block: str,
    used: Sequence[Hit],
) -> None:
    """Record one block injected at ``now`` when the log is on (a no-op otherwise)."""
    if not config.pack.log_blocks or not block:
        return
    content = config.pack.log_block_content
    store.log_block(
        BlockEntry(
            space=space,
            created_at=format_time(now),
            surface=surface,
            item_ids=tuple(hit.id for hit in used),
            tokens=wordpiece_tokens(block),
            query_hash=tagged(query),
            query=query if content else None,
            block=block if content else None,
        ),
        keep=config.pack.log_blocks_keep,
        since=format_time(now - timedelta(days=config.pack.log_blocks_days)),
    )

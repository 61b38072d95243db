"""``AsyncMemory``: the SDK for asyncio code, name for name.

For SQLite, async means the sync call in a worker thread (``asyncio.to_thread``), never a second
engine: ``AsyncMemory`` wraps one ``Memory`` (``.sync``) and every method that touches the store
awaits its sync twin off the event loop. Same names, same keyword-only parameters, same first
docstring line; ``tests/test_async_memory.py`` fails when the two surfaces drift.

Construction opens the database file synchronously, like ``Memory`` (it is quick); progress
callbacks run in the worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

from .._kernel.clock import Clock
from .._kernel.config import Config
from .._kernel.embed import Embedder
from .._kernel.model import DEFAULT_SPACE, Episode, MemoryRecord
from ..recall import Packed, RecallResult
from ..recall.filters import SearchFilter
from .automations import AutomationNotes
from .consolidate.sleep import SleepReport
from .health import CheckReport, RepairReport
from .keys import ApiKeys, Principal
from .memory import BuiltContext, Memory, Progress
from .store.base import AutomationNote, BlockEntry, SpaceInfo, Store

__all__ = ["AsyncApiKeys", "AsyncAutomationNotes", "AsyncMemory"]

P = ParamSpec("P")
T = TypeVar("T")

_PAGE = 500
"""Episodes fetched per worker-thread hop by :meth:`AsyncMemory.iter_episodes`."""


async def _thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    return await asyncio.to_thread(fn, *args, **kwargs)


class AsyncApiKeys:
    """``ApiKeys`` for asyncio code: each call runs in a worker thread."""

    def __init__(self, keys: ApiKeys) -> None:
        self.sync = keys

    async def create(
        self, *, spaces: list[str], admin: bool, name: str, now: str
    ) -> tuple[str, str]:
        """A new key: returns ``(key id, secret)``; the secret is never stored."""
        return await _thread(self.sync.create, spaces=spaces, admin=admin, name=name, now=now)

    async def list(self) -> list[dict]:
        """Every key's record (id, name, spaces, admin, created and revoked times), oldest first."""
        return await _thread(self.sync.list)

    async def revoke(self, key_id: str, now: str) -> None:
        """Revoke an active key (``NotFoundError`` if there is none by that id)."""
        await _thread(self.sync.revoke, key_id, now)

    async def check(self, secret: str | None) -> Principal:
        """The principal of a presented secret, or ``AuthError``."""
        return await _thread(self.sync.check, secret)


class AsyncAutomationNotes:
    """``AutomationNotes`` for asyncio code: each call runs in a worker thread."""

    def __init__(self, notes: AutomationNotes) -> None:
        self.sync = notes

    async def get(self, automation_id: str) -> AutomationNote | None:
        """The automation's note, or ``None`` when it has none."""
        return await _thread(self.sync.get, automation_id)

    async def put(self, automation_id: str, text: str | bytes) -> AutomationNote | None:
        """Replace the note; blank text clears it (returns ``None``)."""
        return await _thread(self.sync.put, automation_id, text)

    async def clear(self, automation_id: str) -> bool:
        """Remove the note (the schedule was deleted, or its state is void); False if none."""
        return await _thread(self.sync.clear, automation_id)

    async def block(self, automation_id: str) -> str:
        """The rendered context block for the automation's next run; ``""`` without a note."""
        return await _thread(self.sync.block, automation_id)


class AsyncMemory:
    """Durable long-term memory for asyncio code: every ``Memory`` method as a coroutine.

    Takes ``Memory``'s arguments. Use ``async with AsyncMemory(...) as mem:`` or ``await
    mem.aclose()``; ``.sync`` is the wrapped ``Memory``.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        space: str = DEFAULT_SPACE,
        config: Config | None = None,
        embedder: Embedder | str | None = None,
        clock: Clock | None = None,
        store: Store | None = None,
        model: Any = None,
        upstream: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.sync = Memory(
            path,
            space=space,
            config=config,
            embedder=embedder,
            clock=clock,
            store=store,
            model=model,
            upstream=upstream,
            api_key=api_key,
        )

    @classmethod
    def connect(cls, target: str | Path, **options: Any) -> AsyncMemory:
        """``AsyncMemory(path=target, …)`` said for a URL: ``AsyncMemory.connect("postgresql://…")``."""
        return cls(target, **options)

    # -- what the wrapped Memory holds (no I/O) -----------------------------------------------

    @property
    def config(self) -> Config:
        """Engine switches (see ``Config``)."""
        return self.sync.config

    @property
    def space(self) -> str:
        """The default space of every call."""
        return self.sync.space

    @property
    def model(self) -> Any:
        """The chat model ``sleep`` uses (``None``: the rule-based consolidator)."""
        return self.sync.model

    @property
    def clock(self) -> Clock:
        """Where "now" comes from."""
        return self.sync.clock

    @property
    def embedder(self) -> Embedder:
        """The embedder of every write and query."""
        return self.sync.embedder

    @property
    def store(self) -> Store:
        """The sync store underneath (its calls block: prefer the methods here)."""
        return self.sync.store

    @property
    def path(self) -> str | None:
        """The database file (``None`` for a store that has no file)."""
        return self.sync.path

    @cached_property
    def keys(self) -> AsyncApiKeys:
        """The API keys kept in this memory's database (the REST API, proxy and MCP use them)."""
        return AsyncApiKeys(self.sync.keys)

    @cached_property
    def notes(self) -> AsyncAutomationNotes:
        """The one short note each scheduled automation keeps between firings."""
        return AsyncAutomationNotes(self.sync.notes)

    # -- writing ------------------------------------------------------------------------------

    async def add(
        self,
        text: str | bytes,
        *,
        space: str | None = None,
        kind: str = "note",
        role: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        occurred_at: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Episode:
        """Append a note (or any episode) and index it at once."""
        return await _thread(
            self.sync.add,
            text,
            space=space,
            kind=kind,
            role=role,
            session_id=session_id,
            turn_id=turn_id,
            occurred_at=occurred_at,
            meta=meta,
        )

    async def observe(
        self,
        role: str,
        text: str | bytes,
        *,
        session_id: str | None = None,
        turn_id: str | None = None,
        occurred_at: str | None = None,
        space: str | None = None,
        meta: dict[str, Any] | None = None,
        once: bool = False,
    ) -> Episode:
        """Append one conversation turn (``role`` is ``user``, ``assistant`` or a name)."""
        return await _thread(
            self.sync.observe,
            role,
            text,
            session_id=session_id,
            turn_id=turn_id,
            occurred_at=occurred_at,
            space=space,
            meta=meta,
            once=once,
        )

    async def add_many(
        self,
        items: Iterable[dict[str, Any] | str],
        *,
        space: str | None = None,
        progress: Progress | None = None,
    ) -> list[Episode]:
        """Bulk-append episodes, a batch per transaction (validated batch by batch)."""
        return await _thread(self.sync.add_many, items, space=space, progress=progress)

    async def add_file(self, path: str | Path, *, space: str | None = None) -> list[Episode]:
        """Store a text/Markdown document as passages (one episode each, kind ``document``)."""
        return await _thread(self.sync.add_file, path, space=space)

    async def remember(
        self,
        text: str,
        *,
        category: str = "fact",
        space: str | None = None,
        importance: float = 0.5,
        confidence: float = 1.0,
        tags: Sequence[str] = (),
        prohibited: bool = False,
        entity: str | None = None,
        attribute: str | None = None,
        value: str | None = None,
        condition: str | None = None,
        event_date: str | None = None,
        source: str = "explicit",
    ) -> MemoryRecord:
        """Store an explicit memory (no model involved) and index it at once."""
        return await _thread(
            self.sync.remember,
            text,
            category=category,
            space=space,
            importance=importance,
            confidence=confidence,
            tags=tags,
            prohibited=prohibited,
            entity=entity,
            attribute=attribute,
            value=value,
            condition=condition,
            event_date=event_date,
            source=source,
        )

    async def forbid(
        self, rule: str, *, space: str | None = None, always: bool = False
    ) -> MemoryRecord:
        """Store a forbidden rule, hoisted first as ``[FORBIDDEN: …]`` where it bears on a query."""
        return await _thread(self.sync.forbid, rule, space=space, always=always)

    async def facts(
        self, *, space: str | None = None, include_history: bool = False
    ) -> list[MemoryRecord]:
        """Active memories (with ``include_history``, superseded ones too), oldest first."""
        return await _thread(self.sync.facts, space=space, include_history=include_history)

    async def close_memory(
        self, memory_id: str, *, space: str | None = None, reason: str = "forgotten"
    ) -> MemoryRecord:
        """Close a memory (``mem-…``) that is obsolete: it stays in history, never current."""
        return await _thread(self.sync.close_memory, memory_id, space=space, reason=reason)

    async def edit_memory(
        self,
        memory_id: str,
        text: str,
        *,
        space: str | None = None,
        category: str | None = None,
        importance: float | None = None,
        confidence: float | None = None,
        tags: Sequence[str] | None = None,
        value: str | None = None,
    ) -> MemoryRecord:
        """Correct a memory: a new version supersedes it, and the old one stays as history."""
        return await _thread(
            self.sync.edit_memory,
            memory_id,
            text,
            space=space,
            category=category,
            importance=importance,
            confidence=confidence,
            tags=tags,
            value=value,
        )

    async def pin(
        self, memory_id: str, pinned: bool = True, *, space: str | None = None
    ) -> MemoryRecord:
        """Pin a memory (``pinned=False`` unpins it): it no longer decays with time."""
        return await _thread(self.sync.pin, memory_id, pinned, space=space)

    async def forget(self, memory_or_episode_id: str | int, *, space: str | None = None) -> None:
        """Delete a memory (``mem-…``) or an episode (``ep-<n>`` or ``n``) with its lines."""
        await _thread(self.sync.forget, memory_or_episode_id, space=space)

    async def delete_space(self, space: str) -> dict[str, int]:
        """Delete a whole space and everything in it; what was deleted, by kind."""
        return await _thread(self.sync.delete_space, space)

    # -- reading ------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        space: str | None = None,
        top_k: int | None = None,
        filters: SearchFilter | Mapping[str, Any] | None = None,
    ) -> RecallResult:
        """Rank passages and memories for ``query`` with the per-signal breakdown.

        With ``filters``, only what matches (``Memory.search``)."""
        return await _thread(self.sync.search, query, space=space, top_k=top_k, filters=filters)

    async def recall(
        self,
        query: str,
        *,
        space: str | None = None,
        filters: SearchFilter | Mapping[str, Any] | None = None,
        surface: str | None = None,
        present: Sequence[str] = (),
    ) -> str:
        """The exact memory block that ``build_context`` would inject for ``query``.

        With ``filters``, the block of only what matches; ``present``, the conversation's
        texts, whose passages it leaves out (``Memory.recall``)."""
        return await _thread(
            self.sync.recall, query, space=space, filters=filters, surface=surface, present=present
        )

    async def explain(
        self,
        query: str,
        *,
        space: str | None = None,
        filters: SearchFilter | Mapping[str, Any] | None = None,
    ) -> Packed:
        """Why this block: ``recall``'s block for ``query`` with the same decision made visible.

        (``Memory.explain``)"""
        return await _thread(self.sync.explain, query, space=space, filters=filters)

    async def injected_blocks(
        self, *, space: str | None = None, limit: int = 100
    ) -> list[BlockEntry]:
        """The blocks injected in the space, newest first, while ``pack.log_blocks`` was on."""
        return await _thread(self.sync.injected_blocks, space=space, limit=limit)

    async def context(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        space: str | None = None,
        automation_id: str | None = None,
        surface: str = "sdk",
    ) -> BuiltContext:
        """The blocks a chat gets before its next turn, and the messages with them prepended."""
        return await _thread(
            self.sync.context, messages, space=space, automation_id=automation_id, surface=surface
        )

    async def build_context(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        space: str | None = None,
        automation_id: str | None = None,
        surface: str = "sdk",
    ) -> list[dict[str, Any]]:
        """Return ``messages`` with the memory block prepended as a system message."""
        return await _thread(
            self.sync.build_context,
            messages,
            space=space,
            automation_id=automation_id,
            surface=surface,
        )

    async def warm(self, *, space: str | None = None) -> None:
        """Load the space's in-process search indexes now and wait for them."""
        await _thread(self.sync.warm, space=space)

    async def stats(self, *, space: str | None = None) -> dict[str, Any]:
        """Counts for the space and the whole database, the embedder and the file size."""
        return await _thread(self.sync.stats, space=space)

    async def space_info(self, space: str | None = None) -> SpaceInfo | None:
        """The space's counts and embedder, or ``None`` before its first write."""
        return await _thread(self.sync.space_info, space)

    async def space_infos(self) -> list[SpaceInfo]:
        """Every space with its counts."""
        return await _thread(self.sync.space_infos)

    async def episode(self, episode_id: int, *, space: str | None = None) -> Episode:
        """One episode of the space (``NotFoundError`` if it is not there)."""
        return await _thread(self.sync.episode, episode_id, space=space)

    async def episodes_page(
        self,
        *,
        space: str | None = None,
        after: int = 0,
        limit: int = 100,
        session_id: str | None = None,
    ) -> list[Episode]:
        """Up to ``limit`` episodes with ``id > after``, oldest first (an id cursor)."""
        return await _thread(
            self.sync.episodes_page, space=space, after=after, limit=limit, session_id=session_id
        )

    async def memory(self, memory_id: str, *, space: str | None = None) -> MemoryRecord:
        """One memory of the space (``NotFoundError`` if it is not there)."""
        return await _thread(self.sync.memory, memory_id, space=space)

    async def cited_episodes(self, memory_id: str, *, space: str | None = None) -> list[int]:
        """The episodes a memory was consolidated from (those of the lines it cites), in order."""
        return await _thread(self.sync.cited_episodes, memory_id, space=space)

    async def spaces(self) -> list[str]:
        """The names of the database's spaces."""
        return await _thread(self.sync.spaces)

    async def iter_episodes(self, *, space: str | None = None) -> AsyncIterator[Episode]:
        """Every episode of the space, oldest first, a page per worker-thread hop."""
        after = 0
        while page := await self.episodes_page(space=space, after=after, limit=_PAGE):
            for episode in page:
                yield episode
            after = page[-1].id

    # -- export, import, consolidation, re-embed ----------------------------------------------

    async def export(self, out: IO[str], *, space: str | None = None) -> int:
        """Write the space as JSON lines (header, episodes, memories); returns records written."""
        return await _thread(self.sync.export, out, space=space)

    async def import_jsonl(
        self, lines: Iterable[str], *, space: str | None = None, progress: Progress | None = None
    ) -> dict[str, int]:
        """Load an ``export`` file; already present episodes and memories are skipped."""
        return await _thread(self.sync.import_jsonl, lines, space=space, progress=progress)

    async def import_history(
        self,
        source: str,
        path: str | Path,
        *,
        space: str | None = None,
        progress: Progress | None = None,
    ) -> dict[str, int]:
        """Bring another tool's history in with its real dates (``engine.importers``):
        ``chatgpt``, ``claude``, ``claude-code``, ``mcp-memory`` or ``mem0``."""
        return await _thread(self.sync.import_history, source, path, space=space, progress=progress)

    async def sleep(
        self,
        *,
        space: str | None = None,
        model: Any = None,
        progress: Progress | None = None,
        retry_failed: bool = False,
        wait: bool = False,
    ) -> SleepReport:
        """Consolidate the space's pending episodes into states, events, facts and rules."""
        return await _thread(
            self.sync.sleep,
            space=space,
            model=model,
            progress=progress,
            retry_failed=retry_failed,
            wait=wait,
        )

    async def embedder_of(self, space: str) -> Embedder:
        """The embedder of ``space``: this Memory's when one was given, else the one the space
        records (built once from its spec), else the default."""
        return await _thread(self.sync.embedder_of, space)

    async def jobs_summary(self) -> dict[str, Any]:
        """The database's durable jobs by status, and the lease takeovers (a worker died or
        hung and another claimed its job) recorded in the newest ``_KEPT_JOBS`` (``/metrics``)."""
        return await _thread(self.sync.jobs_summary)

    async def audit_log(
        self, *, space: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Claims that consolidation refused or skipped, with the reason, newest first."""
        return await _thread(self.sync.audit_log, space=space, limit=limit)

    async def reembed(self, *, space: str | None = None, progress: Progress | None = None) -> int:
        """Re-embed every line and memory of the space with this Memory's embedder."""
        return await _thread(self.sync.reembed, space=space, progress=progress)

    async def check(self) -> CheckReport:
        """Verify the whole database; reads only."""
        return await _thread(self.sync.check)

    async def repair(self) -> RepairReport:
        """Rebuild what :meth:`check` finds damaged and can be derived again; idempotent."""
        return await _thread(self.sync.repair)

    # -- lifecycle ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Finish pending side effects and close the store; idempotent."""
        await _thread(self.sync.close)

    async def aclose(self) -> None:
        """The same as :meth:`close` (the httpx-style name for async code)."""
        await self.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

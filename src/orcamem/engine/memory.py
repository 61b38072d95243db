"""``Memory``: the SDK facade. Validates, then calls the pipelines and the store.

Every method takes ``space=`` (the isolation unit; default from the constructor). Nothing is
written unless the whole input is valid; a method returns only after its write committed.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, nullcontext
from dataclasses import dataclass, fields, replace
from functools import cached_property
from pathlib import Path
from typing import IO, Any

from .._kernel.clock import Clock, SystemClock, stamp
from .._kernel.config import Config
from .._kernel.embed import Embedder, embed_texts, make_embedder
from .._kernel.env import default_db_path, openai_api_key
from .._kernel.jobs import JobQueue
from .._kernel.llm import OLLAMA_URL, ChatModel
from .._kernel.model import (
    CATEGORIES,
    DEFAULT_SPACE,
    EPISODE_KINDS,
    SOURCES,
    Episode,
    Hit,
    MemoryRecord,
    NewEpisode,
    NewMemory,
    digest,
    inhibitory,
    is_memory_id,
    shown,
    validate_count,
    validate_id,
    validate_items,
    validate_messages,
    validate_space,
    validate_text,
    validate_time,
)
from .._kernel.redact import refuse_secrets, summary_of
from .._kernel.text import message_text, split_document
from .._kernel.trace import span, traced
from ..errors import (
    ClosedError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    TransientError,
)
from ..recall import ALWAYS, Packed, RecallResult, engine_preset, explain_pack, pack_context, recall
from ..recall.filters import SearchFilter
from . import health
from .ahead import Batch, prepared
from .automations import AutomationNotes
from .blocklog import check_surface, log_block
from .consolidate.gate import held_rule
from .consolidate.sleep import SleepReport
from .health import CheckReport, RepairReport
from .ingest import deferred_collection
from .keys import ApiKeys
from .sleeper import Sleeper
from .store import open_store
from .store.base import BlockEntry, EpisodeWrite, MemoryUpdate, SpaceInfo, Store

__all__ = ["BuiltContext", "Memory"]

log = logging.getLogger("orcamem")

Progress = Callable[[int, int], None]
EXPORT_FORMAT = "orcamem-export"
EXPORT_VERSION = 2
"""2 added a memory's ``pinned``; files of version 1 (no pins) are still read."""
READABLE_EXPORT_VERSIONS = (1, 2)
_BATCH = 512
_ADD_BATCH = 5_000
"""Items a transaction of ``add_many`` takes: a commit is an fsync (3.5 ms here), and every
commit writes each page it changed to the WAL, the random ones of the entity links' key and
the digest index too; 2,048 a batch wrote 2.0 GB for 100,000 turns, 5,000 1.1 GB (and 12 %
less CPU). A batch holds the write lock for about a second (docs/storage.md)."""
_REEMBED_ROUNDS = 5
"""Swaps a re-embed tries: each embeds what was written while the one before embedded."""
_MAX_EPISODE_ID = 2**63 - 1  # SQLite's largest INTEGER
_KEPT_JOBS = 10_000


@dataclass(frozen=True)
class BuiltContext:
    """What :meth:`Memory.context` prepends before a turn, and the resulting messages."""

    messages: list[dict[str, Any]]
    block: str | None
    """The memory block (``None``: nothing to recall)."""
    note_block: str | None
    """The automation's note block, first of all (``None``: no automation, or no note)."""


def _sleep_model(model: Any, upstream: Any, api_key: Any) -> tuple[ChatModel | None, bool]:
    """The chat model ``sleep`` uses, and whether this Memory built it (and so closes it).

    A model name (with ``upstream``, default a local Ollama) builds the OpenAI-compatible
    client ``orcamem sleep --upstream URL --model M`` uses; it is not called until sleep.
    """
    for name, value in (("upstream", upstream), ("api_key", api_key)):
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a string, got {type(value).__name__}")
    if isinstance(model, ChatModel):
        if upstream is not None or api_key is not None:
            raise InvalidInputError(
                "upstream= and api_key= go with a model name (model='llama3.2:3b'); a chat "
                "model object already knows its server"
            )
        return model, False
    if model is None and upstream is None:
        if api_key is not None:
            raise InvalidInputError("api_key= needs a model: pass model='<name>' (and upstream=)")
        return None, False
    if model is not None and not (isinstance(model, str) and model.strip()):
        raise InvalidInputError(
            f"model must be a model name such as 'llama3.2:3b' or a chat model object "
            f"(orcamem._kernel.llm.OpenAIChat), got {type(model).__name__} {shown(model)}"
        )
    from .._kernel.llm import OpenAIChat

    key = api_key if api_key is not None else openai_api_key()
    return OpenAIChat(model, upstream or OLLAMA_URL, api_key=key), True


class Memory:
    """Durable long-term memory for an agent, on one SQLite file by default.

    Args:
        path: database file, or a ``postgresql://`` URL (``pip install 'orcamem[pg]'``);
            default ``$ORCA_HOME/memory.db`` or ``~/.orca/memory.db``.
        space: the default space of every call.
        config: engine switches (see ``Config``).
        embedder: an ``Embedder`` or a spec string (``static``, ``openai:<model>@<url>``,
            ``st:<model>``), used for every space; default: each space opens with the
            embedder it records (``orcamem reembed --embedder`` changes it) and a new space
            gets the offline model shipped with orcamem.
        clock: where "now" comes from (tests pass a ``FrozenClock``).
        store: a ready store instead of ``path`` (another engine, or a shared one).
        model: what ``sleep`` consolidates with: a model name (``"llama3.2:3b"``) asked at
            ``upstream``, or a chat model object (``orcamem._kernel.llm``); none means the
            rule-based consolidator. Recall never calls it.
        upstream: the OpenAI-compatible API root of ``model`` (Ollama, llama.cpp, vLLM);
            default ``http://localhost:11434/v1``, a local Ollama. A model that cannot be
            reached at sleep time is reported in ``SleepReport.failures`` and the rules run.
        api_key: sent to ``upstream`` (default ``$OPENAI_API_KEY``); local servers need none.

    Example:
        >>> mem = Memory(path=":memory:")
        >>> _ = mem.add("I work as a backend engineer and I live in Pune.")
        >>> mem.search("Where do I live?").hits[0].text
        'I work as a backend engineer and I live in Pune.'
        >>> mem.close()
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
        self.config = config or Config()
        engine_preset(self.config.recall.preset)  # a preset scored elsewhere is refused here
        self.space = validate_space(space)
        self.model, self._owned_model = _sleep_model(model, upstream, api_key)
        self.clock = clock or SystemClock()
        self.embedder = make_embedder(embedder)
        """The embedder of new spaces (and of every space when one was given)."""
        self._spec = (
            "static" if embedder is None else embedder if isinstance(embedder, str) else None
        )
        self._follow = embedder is None  # each space opens with the embedder it records
        self._embedders: dict[str, Embedder] = {}
        self.store: Store = store or open_store(
            path if path is not None else default_db_path(),
            synchronous=self.config.storage.synchronous,
            busy_timeout_ms=self.config.storage.busy_timeout_ms,
            blas_threads=self.config.storage.blas_threads,
            prune_above=(
                self.config.storage.pruning_threshold
                if self.config.storage.vector_pruning
                else None
            ),
            lexical_above=self.config.storage.lexical_index_threshold,
        )
        self._checked: set[str] = set()
        self._closed = False
        self._lock = threading.Lock()
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orcamem-side")
        self._sleeper = Sleeper(self, self.model).start() if self.config.sleep.auto else None

    @classmethod
    def connect(cls, target: str | Path, **options: Any) -> Memory:
        """``Memory(path=target, …)`` said for a URL: ``Memory.connect("postgresql://…")``."""
        return cls(target, **options)

    # -- the role stores of this memory's database ------------------------------------------

    @cached_property
    def keys(self) -> ApiKeys:
        """The API keys kept in this memory's database (the REST API, proxy and MCP use them)."""
        return ApiKeys(self.store.keys)

    @cached_property
    def notes(self) -> AutomationNotes:
        """The one short note each scheduled automation keeps between firings."""
        return AutomationNotes(self.store.notes, self.clock)

    @property
    def path(self) -> str | None:
        """The database file (``None`` for a store that has no file)."""
        return getattr(self.store, "path", None)

    # -- plumbing --------------------------------------------------------------------------

    def _space(self, space: str | None) -> str:
        if self._closed:
            raise ClosedError("this Memory is closed: create a new Memory()")
        return self.space if space is None else validate_space(space)

    def embedder_of(self, space: str) -> Embedder:
        """The embedder of ``space``: this Memory's when one was given, else the one the space
        records (built once from its spec), else the default."""
        found = self._embedders.get(space)
        if found is not None or not self._follow:
            return found or self.embedder
        info = self.store.space_row(space)
        if info is None:
            return self.embedder
        found = self.embedder
        if info.embedder_spec and info.embedder_id != found.id:
            found = next(
                (e for e in self._embedders.values() if e.id == info.embedder_id), None
            ) or make_embedder(info.embedder_spec)
        self._embedders[space] = found
        return found

    def _ready_for_write(self, space: str) -> None:
        if space not in self._checked:
            embedder = self.embedder_of(space)
            self.store.ensure_space(
                space, embedder.id, embedder.dim, stamp(self.clock), spec=self._spec
            )
            self._checked.add(space)

    def _refollowed(self, spaces: Iterable[str]) -> bool:
        """Whether a space of ``spaces`` records another embedder than the one this Memory
        cached for it, now followed: another process re-embedded it (`orcamem reembed`)
        while this one (a server) kept it open, and each write was refused. False when this
        Memory was given its embedder, or already had the recorded one (a true mismatch)."""
        if not self._follow:
            return False
        changed = False
        for space in spaces:
            held = self._embedders.pop(space, None)
            self._checked.discard(space)
            changed |= held is not None and self.embedder_of(space).id != held.id
        return changed

    def _ready_for_read(self, space: str) -> bool:
        """True if the space exists (and matches the embedder); reads never create spaces."""
        if space in self._checked:
            return True
        if self.store.space_row(space) is None:
            return False
        self._ready_for_write(space)
        return True

    def _after_read(self, work: Callable[[], None]) -> None:
        """Run a side effect (mark accessed, the block log) off the hot path; its failure is only
        logged."""

        def run() -> None:
            try:
                work()
            except Exception as exc:
                log.warning("orcamem side effect failed: %s", exc)

        with self._lock:
            if not self._closed:
                self._background.submit(run)

    def _settle(self) -> None:
        """Wait for the side effects queued so far (mark accessed, the block log)."""
        with self._lock:
            pending = None if self._closed else self._background.submit(lambda: None)
        if pending is not None:
            pending.result()

    # -- writing episodes ------------------------------------------------------------------

    def _episode(
        self,
        text: Any,
        *,
        space: str,
        kind: str,
        role: str | None,
        session_id: str | None,
        turn_id: str | None,
        occurred_at: Any,
        meta: dict[str, Any] | None,
    ) -> NewEpisode:
        if kind not in EPISODE_KINDS:
            raise InvalidInputError(f"kind={kind!r}: use one of {', '.join(EPISODE_KINDS)}")
        for name, value in (("role", role), ("session_id", session_id), ("turn_id", turn_id)):
            if value is not None:
                validate_id(value, what=name)
        if meta is not None:
            if not isinstance(meta, dict):
                raise InvalidInputError(
                    f"meta must be a dict of JSON values, got {type(meta).__name__} {shown(meta)}"
                )
            wrong = _meta_problem(meta)
            if wrong is not None:
                raise InvalidInputError(f"meta {wrong}")
        return NewEpisode(
            space=space,
            kind=kind,
            text=validate_text(text),
            role=role,
            session_id=session_id,
            turn_id=turn_id,
            occurred_at=validate_time(occurred_at),
            meta=dict(meta or {}),
        )

    @traced("ingest")
    def _append(self, episodes: Sequence[NewEpisode]) -> list[Episode]:
        (stored,) = self._append_batches([episodes], ahead=False)
        return stored

    def _append_batches(
        self, batches: Iterable[Sequence[NewEpisode]], *, ahead: bool
    ) -> Iterator[list[Episode]]:
        """Store each batch in a transaction of its own, in order (``ahead``: the next one
        prepared in a child process meanwhile, ``engine.ahead``)."""
        seen: dict[tuple[str, str], str | None] = {}  # a session's latest text, asked once

        def plans() -> Iterator[Batch]:
            for episodes in batches:
                spaces = {ep.space for ep in episodes}
                for space in spaces:
                    self._ready_for_write(space)
                yield Batch(
                    episodes,
                    {space: self.embedder_of(space) for space in spaces},
                    self.clock.now(),
                    _previous(episodes, seen, self.store.last_texts),
                )

        with closing(prepared(plans(), ahead=ahead)) as writes:
            for batch in writes:
                try:
                    stored = self.store.append_episodes(batch)
                except EmbedderMismatchError:
                    spaces = {write.episode.space for write in batch}
                    if not self._refollowed(spaces) and all(
                        write.embedder_id == self.embedder_of(write.episode.space).id
                        for write in batch
                    ):
                        raise
                    stored = self.store.append_episodes(self._embedded_again(batch))
                yield stored

    def _embedded_again(self, batch: Sequence[EpisodeWrite]) -> list[EpisodeWrite]:
        """``batch`` with each line's vector made by its space's embedder now (one call a
        space): it was prepared with the one the space had before a re-embed."""
        again = list(batch)
        for space in {write.episode.space for write in batch}:
            embedder = self.embedder_of(space)
            self._ready_for_write(space)
            at = [i for i, write in enumerate(batch) if write.episode.space == space]
            matrix = embed_texts(embedder, [line for i in at for line in batch[i].lines])
            offset = 0
            for i in at:
                count = len(batch[i].lines)
                again[i] = replace(
                    batch[i], vectors=matrix[offset : offset + count], embedder_id=embedder.id
                )
                offset += count
        return again

    def add(
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
        """Append a note (or any episode) and index it at once.

        Raises:
            InvalidInputError: blank, over 1 MiB, not UTF-8, or a bad field; nothing is written.
        """
        episode = self._episode(
            text,
            space=self._space(space),
            kind=kind,
            role=role,
            session_id=session_id,
            turn_id=turn_id,
            occurred_at=occurred_at,
            meta=meta,
        )
        return self._append([episode])[0]

    def observe(
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
        """Append one conversation turn (``role`` is ``user``, ``assistant`` or a name).

        ``once=True`` (with a ``turn_id``) makes a retry safe: if the space already holds a
        ``role`` turn of this session and turn id, that episode is returned and nothing is
        written (the check and the append are one transaction).
        """
        episode = self._episode(
            text,
            space=self._space(space),
            kind="turn",
            role=role,
            session_id=session_id,
            turn_id=turn_id,
            occurred_at=occurred_at,
            meta=meta,
        )
        if not once:
            return self._append([episode])[0]
        if turn_id is None:
            raise InvalidInputError("once=True needs a turn_id: name the turn a retry repeats")
        with self.store.writing():
            found = self.store.find_turn(episode.space, session_id, turn_id, role)
            return found if found is not None else self._append([episode])[0]

    def add_many(
        self,
        items: Iterable[dict[str, Any] | str],
        *,
        space: str | None = None,
        progress: Progress | None = None,
    ) -> list[Episode]:
        """Bulk-append episodes, a batch per transaction (validated batch by batch).

        Each item is a text or a dict of ``add`` arguments (``text``, ``kind``, ``role``, …).
        A batch is validated whole before it is written, so a bad item leaves the earlier
        batches committed and names its position.
        """
        default_space = self._space(space)
        items = validate_items(items, what="items", of="texts or dicts of add() arguments")
        done: list[Episode] = []

        def batches() -> Iterator[list[NewEpisode]]:
            for start in range(0, len(items), _ADD_BATCH):
                yield [
                    self._item(item, start + offset, default_space, stored=start)
                    for offset, item in enumerate(items[start : start + _ADD_BATCH])
                ]

        bulk = len(items) > _ADD_BATCH
        with deferred_collection() if bulk else nullcontext():
            for stored in self._append_batches(batches(), ahead=bulk):
                done.extend(stored)
                if progress:
                    progress(len(done), len(items))
        return done

    def _item(self, item: Any, position: int, default_space: str, *, stored: int) -> NewEpisode:
        """One ``add_many`` item as an episode, or the error that names it."""
        try:
            if isinstance(item, (str, bytes, bytearray)):
                fields = {"text": item}
            elif isinstance(item, dict):
                fields = dict(item)
            else:
                raise InvalidInputError(
                    f"an item must be a text or a dict of add() arguments, got "
                    f"{type(item).__name__} {shown(item)}"
                )
            text = fields.pop("text")
            episode = self._episode(
                text,
                space=self._space(fields.pop("space", default_space)),
                kind=fields.pop("kind", "note"),
                role=fields.pop("role", None),
                session_id=fields.pop("session_id", None),
                turn_id=fields.pop("turn_id", None),
                occurred_at=fields.pop("occurred_at", None),
                meta=fields.pop("meta", None),
            )
            if fields:
                raise InvalidInputError(f"unknown field(s) {sorted(fields)}")
        except (InvalidInputError, KeyError) as exc:
            raise InvalidInputError(
                f"item {position} is invalid ({exc}); the {stored} items before "
                "its batch are stored"
            ) from None
        return episode

    def add_file(self, path: str | Path, *, space: str | None = None) -> list[Episode]:
        """Store a text/Markdown document as passages (one episode each, kind ``document``)."""
        space = self._space(space)
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidInputError(
                f"path must be a file path (str or Path), got {type(path).__name__} {shown(path)}"
            )
        file = Path(path)
        try:
            raw = file.read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"cannot read {shown(str(file))}: {exc.strerror}") from None
        except ValueError as exc:  # an embedded NUL byte
            raise InvalidInputError(
                f"path {shown(str(file))} is not a usable path: {exc}"
            ) from None
        text = validate_text(raw, what=str(file))
        passages = split_document(text)
        now = stamp(self.clock)
        return self.add_many(
            [
                {
                    "text": passage,
                    "kind": "document",
                    "occurred_at": now,
                    "meta": {"source": str(file), "part": i + 1, "parts": len(passages)},
                }
                for i, passage in enumerate(passages)
            ],
            space=space,
        )

    # -- explicit memories -----------------------------------------------------------------

    def remember(
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
        """Store an explicit memory (no model involved) and index it at once.

        An ``avoid_*`` or ``forbidden_*`` attribute makes it a forbidden rule too. A forbidden
        rule (``prohibited=True``) the space already holds in the same words (case, spacing,
        punctuation and never/don't aside) is returned as it is, not stored twice. A text (or
        value, condition, tag, entity, attribute) holding a secret is refused with
        InvalidInputError naming its kind: memories are shown to a model. Episodes (``add``)
        keep what was said.
        """
        space = self._space(space)
        memory = _new_memory(
            text,
            space=space,
            category=category,
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

        def put() -> MemoryRecord:
            self._ready_for_write(space)
            embedder = self.embedder_of(space)
            vector = embed_texts(embedder, [memory.content])[0]
            with self.store.writing():  # the look-up and the insert in one transaction
                rules = (
                    self.store.list_memories(space, prohibited=True) if memory.prohibited else []
                )
                held = held_rule(rules, memory.content)
                if held is not None:
                    return held
                return self.store.put_memory(memory, vector, embedder.id, stamp(self.clock))

        try:
            return put()
        except EmbedderMismatchError:
            if not self._refollowed([space]):
                raise
            return put()

    def forbid(self, rule: str, *, space: str | None = None, always: bool = False) -> MemoryRecord:
        """Store a forbidden rule, hoisted first as ``[FORBIDDEN: …]`` where it bears on a query.

        It bears on a query that shares a word or a topic with it (docs/recall.md, the switches
        table); with ``always=True`` (stored as the tag ``always``) on every query.

        Idempotent: forbidding a rule the space already holds returns that rule as it is (to
        change ``always``, forget the rule and forbid it again).
        """
        if not isinstance(always, bool):
            raise InvalidInputError(f"always={always!r}: use True or False")
        tags = (ALWAYS,) if always else ()
        return self.remember(
            rule, category="rule", space=space, prohibited=True, importance=1.0, tags=tags
        )

    def facts(
        self, *, space: str | None = None, include_history: bool = False
    ) -> list[MemoryRecord]:
        """Active memories (with ``include_history``, superseded ones too), oldest first."""
        space = self._space(space)
        self._settle()  # with this Memory's own reads counted (access_count, last_accessed_at)
        return self.store.list_memories(space, include_inactive=include_history)

    def close_memory(
        self, memory_id: str, *, space: str | None = None, reason: str = "forgotten"
    ) -> MemoryRecord:
        """Close a memory (``mem-…``) that is obsolete: it stays in history, never current.

        Consolidation closes a superseded state the same way (``active = 0``, stamped with
        the clock); what the memory superseded stays closed. The reason goes to the audit log.
        Closing a closed memory changes nothing. ``forget`` deletes instead (GDPR-style removal).

        Raises:
            InvalidInputError: not a memory id, or a blank reason.
            NotFoundError: no such memory in the space.
        """
        space = self._space(space)
        key = _memory_id(memory_id)
        reason = validate_text(reason, what="reason")
        with self.store.writing():  # the close and its audit entry in one transaction
            current = self.store.get_memory(space, key)
            if not current.active:
                return current
            now = stamp(self.clock)
            closed = self.store.update_memory(space, key, MemoryUpdate(active=False), now)
            item = {"closed": key, "content": closed.content}
            self.store.add_audit(space, None, item, reason, now)
        return closed

    def edit_memory(
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
        """Correct a memory: a new version supersedes it, and the old one stays as history.

        The new version (a new id, ``source="explicit"``) keeps what is not given: entity,
        attribute, condition, dates, the pin, and ``value`` while the text is unchanged (a new
        text without ``value`` clears it, so a state shows the words given). It is indexed
        (words and vector) at once; the old one is closed with ``superseded_by`` the new id,
        as consolidation supersedes a state, and the edit goes to the audit log. Everything
        is checked as ``remember`` checks it before anything is written.

        Raises:
            InvalidInputError: bad input, a rule turned into another category (or back), or
                a memory no longer current (edit the version that superseded it).
            NotFoundError: no such memory in the space.
        """
        space = self._space(space)
        key = _memory_id(memory_id)
        current = self.store.get_memory(space, key)
        _refuse_closed(current, "edit")
        if category is not None and (category == "rule") != current.prohibited:
            raise InvalidInputError(
                f"category={category!r}: {key} is {'a forbidden rule' if current.prohibited else 'not a rule'} "
                "and an edit keeps it so; forget it and `forbid` (or `remember`) it instead"
            )
        same_text = isinstance(text, str) and text.strip() == current.content
        if value is None and not same_text:
            value = _stated_value(text, current.entity, current.attribute)
        memory = _new_memory(
            text,
            space=space,
            category=category or current.category,
            importance=current.importance if importance is None else importance,
            confidence=current.confidence if confidence is None else confidence,
            tags=current.tags if tags is None else tags,
            prohibited=current.prohibited,
            entity=current.entity,
            attribute=current.attribute,
            value=value if value is not None else current.value if same_text else None,
            condition=current.condition,
            event_date=current.event_date,
            source="explicit",
        )
        memory = replace(memory, event_end=current.event_end)
        embedder = self.embedder_of(space)
        vector = embed_texts(embedder, [memory.content])[0]
        with self.store.writing():  # the new version, the close and the audit entry at once
            current = self.store.get_memory(space, key)
            _refuse_closed(current, "edit")
            now = stamp(self.clock)
            edited = self.store.put_memory(memory, vector, embedder.id, now)
            if current.pinned:
                edited = self.store.update_memory(space, edited.id, MemoryUpdate(pinned=True), now)
            self.store.update_memory(
                space, key, MemoryUpdate(active=False, superseded_by=edited.id), now
            )
            item = {"edited": key, "into": edited.id, "content": current.content}
            self.store.add_audit(space, None, item, "edited", now)
        return edited

    def pin(self, memory_id: str, pinned: bool = True, *, space: str | None = None) -> MemoryRecord:
        """Pin a memory (``pinned=False`` unpins it): it no longer decays with time.

        A pinned memory keeps its recency, Hawkes, Ebbinghaus and base-level signals at their
        value of now and gains ``signals.pinned_weight`` when a query admits it by its own
        evidence; it is never added to a block it is not relevant to. Pinning what is already
        pinned changes nothing. An edit keeps the pin.

        Raises:
            InvalidInputError: not a memory id, ``pinned`` not a bool, or a memory no longer
                current (pin the version that superseded it).
            NotFoundError: no such memory in the space.
        """
        space = self._space(space)
        key = _memory_id(memory_id)
        if not isinstance(pinned, bool):
            raise InvalidInputError(f"pinned={pinned!r}: use True or False")
        with self.store.writing():
            current = self.store.get_memory(space, key)
            _refuse_closed(current, "pin")
            if current.pinned == pinned:
                return current
            return self.store.update_memory(
                space, key, MemoryUpdate(pinned=pinned), stamp(self.clock)
            )

    def forget(self, memory_or_episode_id: str | int, *, space: str | None = None) -> None:
        """Delete a memory (``mem-…``) or an episode (``ep-<n>`` or ``n``) with its lines.

        Raises:
            NotFoundError: no such id in the space.
        """
        space = self._space(space)
        key = str(memory_or_episode_id).strip()
        if is_memory_id(key):
            self.store.delete_memory(space, key)
            return
        number = key[3:] if key.startswith("ep-") else key
        # ASCII digits only: str.isdigit() also accepts "²" and "١٢" (Arabic-Indic twelve)
        if not (number.isascii() and number.isdigit()):
            raise NotFoundError(
                f"{memory_or_episode_id!r} is neither a memory id (mem-xxxxxxxx) "
                "nor an episode id (ep-12 or 12)"
            )
        digits = number.lstrip("0") or "0"
        # beyond SQLite's integer range (checked on the text: int() refuses >4300 digits)
        if len(digits) > 19 or int(digits) > _MAX_EPISODE_ID:
            named = digits if len(digits) <= 40 else f"{digits[:37]}..."
            raise NotFoundError(f"no episode {named} in space {space!r}")
        self.store.delete_episode(space, int(digits))

    def delete_space(self, space: str) -> dict[str, int]:
        """Delete a whole space and everything in it; what was deleted, by kind.

        Its episodes, memories, rules, audit log and jobs go in one transaction (GDPR's
        "forget this user"). The name is required, never the default, and nothing of any other
        space is touched. Returns the rows deleted (``episodes``, ``memories``, …).

        Raises:
            NotFoundError: no such space (nothing was deleted).
        """
        if self._closed:
            raise ClosedError("this Memory is closed: create a new Memory()")
        space = validate_space(space)
        gone = self.store.delete_space(space)
        self._checked.discard(space)  # a later write creates the space anew
        return gone

    # -- reading ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        space: str | None = None,
        top_k: int | None = None,
        filters: SearchFilter | Mapping[str, Any] | None = None,
    ) -> RecallResult:
        """Rank passages and memories for ``query`` with the per-signal breakdown.

        ``filters`` (a :class:`SearchFilter` or a mapping of its fields: ``kind``, ``role``,
        ``session``, ``since``, ``until``, ``category``, ``metadata``) ranks only what matches;
        the store's candidate queries carry it, so a narrow filter is cheap.

        Raises:
            InvalidInputError: a blank query, or a filter value outside what it allows.
            EmbedderMismatchError: the space was embedded by another model.
        """
        space = self._space(space)
        query = validate_text(query, what="query")
        if top_k is not None:
            validate_count(top_k, what="top_k", low=1, high=1000)
        where = SearchFilter.of(filters)
        with span("recall", space=space, top_k=top_k) as current:
            if not self._ready_for_read(space):
                return RecallResult(query, space, [], [])
            result = recall(
                self.store,
                self.embedder_of(space),
                space,
                query,
                self.config,
                self.clock.now(),
                top_k=top_k,
                where=where,
            )
            current.set_attribute("orcamem.hits", len(result.hits))
            return result

    def recall(
        self,
        query: str,
        *,
        space: str | None = None,
        filters: SearchFilter | Mapping[str, Any] | None = None,
        surface: str | None = None,
        present: Sequence[str] = (),
    ) -> str:
        """The exact memory block that ``build_context`` would inject for ``query``.

        With ``filters`` (as ``search`` takes them), the block of only what matches.
        ``surface`` (``sdk``, ``proxy``, ``rest``, ``mcp``) says the block is injected, not
        previewed: with ``Config.pack.log_blocks`` on it is logged (``injected_blocks``).
        ``present``: the texts of the conversation the block goes with; a passage they hold
        already is left out (``context`` passes its messages).
        """
        if surface is not None:
            check_surface(surface)
        result = self.search(query, space=space, top_k=self.config.pack.max_items, filters=filters)
        hits = _not_in_window(result.hits, present) if present else result.hits
        block, used = pack_context(hits, result.rules, self.config, self.clock.now(), result.query)
        accessed = [hit.id for hit in used if hit.memory is not None]
        if accessed:
            self._after_read(
                lambda: self.store.mark_accessed(result.space, accessed, stamp(self.clock))
            )
        if surface is not None and block and self.config.pack.log_blocks:
            now = self.clock.now()  # when it was injected, whenever the entry is written
            config = self.config
            self._after_read(  # off the hot path: the log never costs a turn its block
                lambda: log_block(
                    self.store,
                    config,
                    now,
                    space=result.space,
                    surface=surface,
                    query=result.query,
                    block=block,
                    used=used,
                )
            )
        return block

    def explain(
        self,
        query: str,
        *,
        space: str | None = None,
        filters: SearchFilter | Mapping[str, Any] | None = None,
    ) -> Packed:
        """Why this block: ``recall``'s block for ``query`` with the same decision made visible.

        ``included`` holds the ranked hits in the block (each with its signal ``breakdown``),
        ``hoisted`` the forbidden rules in it, ``left_out`` every other ranked hit with its
        reason (``outdated``, ``guess``, ``score_cut`` or ``budget``) and a sentence. A preview: it marks
        nothing accessed and logs nothing, so looking at a block never changes the next one.
        """
        result = self.search(query, space=space, top_k=self.config.pack.max_items, filters=filters)
        return explain_pack(result.hits, result.rules, self.config, self.clock.now(), result.query)

    def injected_blocks(self, *, space: str | None = None, limit: int = 100) -> list[BlockEntry]:
        """The blocks injected in the space, newest first, while ``pack.log_blocks`` was on.

        Each entry has its time, surface, item ids, tokens and the query's ``sha256:``; the
        query and block text only when ``pack.log_block_content`` was on too. Kept: the last
        ``pack.log_blocks_keep`` per space, none older than ``pack.log_blocks_days``.
        """
        space = self._space(space)
        validate_count(limit, what="limit", low=1, high=10_000)
        self._settle()  # this Memory's own entries, still queued, are read too
        return self.store.injected_blocks(space, limit)

    def context(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        space: str | None = None,
        automation_id: str | None = None,
        surface: str = "sdk",
    ) -> BuiltContext:
        """The blocks a chat gets before its next turn, and the messages with them prepended.

        The query is the latest user message; with no user text or nothing to recall there is
        no memory block. With ``automation_id`` the automation's note block comes first, as its
        own system message (a scribe's observation; see ``engine.automations``). ``surface``
        names who injects it in the block log (``Config.pack.log_blocks``).
        """
        check_surface(surface)
        if not isinstance(messages, Sequence):
            raise InvalidInputError(
                "messages must be a list of {'role': ..., 'content': ...} dicts, got "
                f"{type(messages).__name__} {shown(messages)}"
            )
        messages = validate_messages(messages)
        note = self.notes.block(automation_id) or None if automation_id is not None else None
        query = next(
            (
                message_text(m.get("content"))
                for m in reversed(messages)
                if m.get("role") == "user" and message_text(m.get("content")).strip()
            ),
            "",
        )
        said = [message_text(m.get("content")) for m in messages]
        block = (
            (self.recall(query, space=space, surface=surface, present=said) or None)
            if query
            else None
        )
        built = [{"role": "system", "content": text} for text in (note, block) if text]
        return BuiltContext(messages=[*built, *messages], block=block, note_block=note)

    def build_context(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        space: str | None = None,
        automation_id: str | None = None,
        surface: str = "sdk",
    ) -> list[dict[str, Any]]:
        """Return ``messages`` with the memory block prepended as a system message.

        The query is the latest user message; with no user text or nothing to recall the
        messages come back unchanged (as a new list). With ``automation_id`` that
        automation's note block comes first (see :meth:`context`).
        """
        return self.context(
            messages, space=space, automation_id=automation_id, surface=surface
        ).messages

    def warm(self, *, space: str | None = None) -> None:
        """Load the space's in-process search indexes now and wait for them.

        A server that has answered for a while has them; the first searches of a big space
        otherwise wait for its vectors or run beside the load of its postings (a
        100,000-line space on PostgreSQL: 157 ms a search then, 61 ms after)."""
        self.store.warm(self._space(space))

    def stats(self, *, space: str | None = None) -> dict[str, Any]:
        """Counts for the space and the whole database, the embedder and the file size."""
        space = self._space(space)
        info = self.store.space_info(space)
        memories = self.store.list_memories(space, include_inactive=True) if info else []
        return {
            "space": space,
            "episodes": info.episodes if info else 0,
            "lines": info.lines if info else 0,
            "memories": sum(1 for m in memories if m.active and not m.prohibited),
            "rules": sum(1 for m in memories if m.active and m.prohibited),
            "inactive_memories": sum(1 for m in memories if not m.active),
            "embedder": self.embedder_of(space).id,
            "space_embedder": info.embedder_id if info else None,
            "dim": self.embedder_of(space).dim,
            "spaces": [s.name for s in self.store.list_spaces()],
            "database": self.store.counts(),
            "path": getattr(self.store, "path", None),
            "size_bytes": self.store.size_bytes(),
        }

    def space_info(self, space: str | None = None) -> SpaceInfo | None:
        """The space's counts and embedder, or ``None`` before its first write."""
        return self.store.space_info(self._space(space))

    def space_infos(self) -> list[SpaceInfo]:
        """Every space with its counts."""
        return self.store.list_spaces()

    def episode(self, episode_id: int, *, space: str | None = None) -> Episode:
        """One episode of the space (``NotFoundError`` if it is not there)."""
        space = self._space(space)
        validate_count(episode_id, what="episode_id", low=1, high=_MAX_EPISODE_ID)
        return self.store.get_episode(space, episode_id)

    def episodes_page(
        self,
        *,
        space: str | None = None,
        after: int = 0,
        limit: int = 100,
        session_id: str | None = None,
    ) -> list[Episode]:
        """Up to ``limit`` episodes with ``id > after``, oldest first (an id cursor)."""
        space = self._space(space)
        validate_count(after, what="after", low=None, high=_MAX_EPISODE_ID)
        validate_count(limit, what="limit", low=1, high=_MAX_EPISODE_ID)
        if session_id is not None:
            validate_id(session_id, what="session_id")
        return self.store.page_episodes(space, after=after, limit=limit, session_id=session_id)

    def memory(self, memory_id: str, *, space: str | None = None) -> MemoryRecord:
        """One memory of the space (``NotFoundError`` if it is not there)."""
        space = self._space(space)
        self._settle()
        return self.store.get_memory(space, memory_id)

    def cited_episodes(self, memory_id: str, *, space: str | None = None) -> list[int]:
        """The episodes a memory was consolidated from (those of the lines it cites), in order."""
        memory = self.store.get_memory(self._space(space), memory_id)
        positions = self.store.line_positions(list(memory.cited_lines))
        return sorted({episode for episode, _ in positions.values()})

    def spaces(self) -> list[str]:
        return [info.name for info in self.store.list_spaces()]

    # -- export, import, re-embed ----------------------------------------------------------

    def export(self, out: IO[str], *, space: str | None = None) -> int:
        """Write the space as JSON lines (header, episodes, memories); returns records written."""
        space = self._space(space)
        self._settle()  # this Memory's own reads are counted in what it exports
        if not callable(getattr(out, "write", None)):
            raise InvalidInputError(
                f"out must be a text file open for writing, got {type(out).__name__} {shown(out)}"
            )
        out.write(
            json.dumps(
                {
                    "type": EXPORT_FORMAT,
                    "version": EXPORT_VERSION,
                    "space": space,
                    "embedder": self.embedder_of(space).id,
                }
            )
            + "\n"
        )
        count = 0
        for episode in self.store.iter_episodes(space):
            record = {"type": "episode", **episode.__dict__}
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
        memories = self.store.list_memories(space, include_inactive=True)
        positions = self.store.line_positions(
            sorted({line for m in memories for line in m.cited_lines})
        )
        for memory in memories:
            data = memory.to_dict()
            data["cited_lines"] = [list(positions[i]) for i in memory.cited_lines if i in positions]
            out.write(
                json.dumps({"type": "memory", **data}, ensure_ascii=False, sort_keys=True) + "\n"
            )
            count += 1
        return count

    def import_jsonl(
        self, lines: Iterable[str], *, space: str | None = None, progress: Progress | None = None
    ) -> dict[str, int]:
        """Load an ``export`` file; already present episodes and memories are skipped.

        The whole file is parsed and validated before anything is written.

        Returns:
            ``{"episodes": added, "memories": added, "updated": n, "skipped": n}``:
            ``updated``, memories already held whose state the file has newer (closed,
            superseded, pinned or archived since).
        """
        target = self._space(space)
        lines = validate_items(lines, what="lines", of="export lines (strings)")
        with deferred_collection() if len(lines) > _ADD_BATCH else nullcontext():
            return self._import(target, lines, progress)

    def _import(
        self, target: str, lines: Sequence[Any], progress: Progress | None
    ) -> dict[str, int]:
        parsed = _parse_export(lines, target)
        records = parsed.memories
        self._check_lineage(target, records, parsed.memory_lines)
        total = len(parsed.episodes) + len(records)
        embedder = self.embedder_of(target)
        # the memories are embedded before the transaction; the turns a batch ahead inside it
        vectors = []
        for start in range(0, len(records), _BATCH):
            vectors.extend(
                embed_texts(embedder, [r.content for r in records[start : start + _BATCH]])
            )
        try:
            with self.store.writing():  # one transaction: the whole file lands, or nothing
                self._ready_for_write(target)
                counts = self._write_import(target, parsed, vectors, progress, total)
        except BaseException:
            self._checked.discard(target)  # the space may have been rolled back with the rest
            raise
        return counts

    def import_history(
        self,
        source: str,
        path: str | Path,
        *,
        space: str | None = None,
        progress: Progress | None = None,
    ) -> dict[str, int]:
        """Bring another tool's history in with its real dates (``engine.importers``):
        ``chatgpt``, ``claude``, ``claude-code``, ``mcp-memory`` or ``mem0``.

        The whole file is parsed and checked before anything is written; what the space
        already holds is skipped, so importing again adds only what is new.

        Returns:
            ``{"episodes": added, "skipped": n, "sessions": conversations in the file}``.
        """
        from . import importers  # the parsers load only when an import runs

        space = self._space(space)
        return importers.run(self, importers.parse(source, path), space=space, progress=progress)

    def _write_import(
        self,
        target: str,
        parsed: _ParsedExport,
        vectors: Sequence[Any],
        progress: Progress | None,
        total: int,
    ) -> dict[str, int]:
        id_map: dict[int, int] = {}
        held: dict[Any, list[int]] = {}
        keys = [
            (digest(ep.text), ep.occurred_at or "", ep.session_id, ep.turn_id, ep.role, ep.kind)
            for _, ep, _ in parsed.episodes
        ]
        for start in range(0, len(keys), _ADD_BATCH):  # what the space holds: a query a batch
            held.update(self.store.find_episodes(target, keys[start : start + _ADD_BATCH]))
        # the file's n-th episode of a key is the space's n-th one, when it has that many (an
        # older backup restored first holds some of a newer one's "Yes."s, not all of them)
        present: list[int | None] = []
        for key in keys:
            ids = held.get(key)
            present.append(ids.pop(0) if ids else None)
        embedders = {target: self.embedder_of(target)}
        seen: dict[tuple[str, str], str | None] = {}  # a session's turns run across batches

        def plans() -> Iterator[Batch]:  # every turn, held or not: each is the next's context
            for start in range(0, len(parsed.episodes), _ADD_BATCH):
                episodes = [ep for _, ep, _ in parsed.episodes[start : start + _ADD_BATCH]]
                yield Batch(
                    episodes,
                    embedders,
                    self.clock.now(),
                    _previous(episodes, seen, lambda space, sessions: {}),
                    [created for _, _, created in parsed.episodes[start : start + _ADD_BATCH]],
                )

        added = skipped = 0
        start = 0
        with closing(prepared(plans(), ahead=len(parsed.episodes) > _ADD_BATCH)) as batches:
            for writes in batches:
                chunk = range(start, start + len(writes))
                start += len(writes)
                fresh = [(i, w) for i, w in zip(chunk, writes, strict=True) if present[i] is None]
                for i in chunk:
                    if present[i] is not None:
                        id_map[parsed.episodes[i][0]] = present[i]
                stored = self.store.append_episodes([write for _, write in fresh])
                for (i, _), episode in zip(fresh, stored, strict=True):
                    id_map[parsed.episodes[i][0]] = episode.id
                added += len(fresh)
                skipped += len(writes) - len(fresh)
                if progress:
                    progress(added + skipped, total)
        restored = updated = 0
        renamed: dict[str, str] = {}
        pointing: list[tuple[str, str, str]] = []
        for record, vector in zip(parsed.memories, vectors, strict=True):
            cited = []
            for old_episode, seq in parsed.cited[record.id]:
                line = self.store.line_ids(target, id_map.get(old_episode, -1)).get(seq)
                if line is not None:
                    cited.append(line)
            superseded = record.superseded_by
            record = replace(
                record,
                cited_lines=tuple(cited),
                superseded_by=renamed.get(superseded, superseded) if superseded else None,
            )
            stored_as = self.store.restore_memory(record, vector)
            if stored_as is None:
                if self._newer_lifecycle(target, record):
                    updated += 1
                else:
                    skipped += 1
                continue
            restored += 1
            if stored_as != record.id:
                renamed[record.id] = stored_as
            if record.superseded_by:
                pointing.append((stored_as, record.superseded_by, record.updated_at))
        for stored_as, successor, updated_at in pointing:  # a successor renamed after it
            if successor in renamed:  # its exported time kept: the pointer is no change
                self.store.update_memory(
                    target, stored_as, MemoryUpdate(superseded_by=renamed[successor]), updated_at
                )
        if progress and total:
            progress(total, total)
        return {"episodes": added, "memories": restored, "updated": updated, "skipped": skipped}

    def _newer_lifecycle(self, space: str, record: MemoryRecord) -> bool:
        """Whether a memory the space already holds took the lifecycle of ``record``, the
        file's copy, because the file's is newer (a Tuesday backup over Monday's restore:
        the edited fact is closed, not active beside its new version). The text is never
        changed: a memory's words are its identity; only its state moves."""
        held = self.store.memories_by_id(space, [record.id])
        if not held or record.updated_at <= held[0].updated_at:
            return False
        current = held[0]
        change = MemoryUpdate(
            active=record.active if record.active != current.active else None,
            superseded_by=record.superseded_by
            if record.superseded_by != current.superseded_by
            else None,
            archived_at=record.archived_at if record.archived_at != current.archived_at else None,
            pinned=record.pinned if record.pinned != current.pinned else None,
        )
        if change == MemoryUpdate():
            return False
        self.store.update_memory(space, record.id, change, record.updated_at)
        return True

    def _check_lineage(
        self, space: str, records: Sequence[MemoryRecord], numbers: Sequence[int]
    ) -> None:
        """Refuse an import whose ``superseded_by`` points at a memory that is neither in the
        file nor already in ``space`` (it would dangle); names the first such line."""
        in_file = {record.id for record in records}
        wanted = {r.superseded_by for r in records if r.superseded_by} - in_file
        present = {m.id for m in self.store.memories_by_id(space, sorted(wanted))}
        for number, record in zip(numbers, records, strict=True):
            successor = record.superseded_by
            if successor and successor not in in_file and successor not in present:
                raise InvalidInputError(
                    f"line {number}: memory {record.id} has superseded_by {shown(successor)}, "
                    f"which is neither in the file nor in space {space!r}; nothing was imported"
                )

    def sleep(
        self,
        *,
        space: str | None = None,
        model: Any = None,
        progress: Progress | None = None,
        retry_failed: bool = False,
        wait: bool = False,
    ) -> SleepReport:
        """Consolidate the space's pending episodes into states, events, facts and rules.

        Each batch is a durable leased job. Without a model (``model=`` here or in the
        constructor: a chat model object, or a name asked at a local Ollama) the rule-based
        consolidator runs: zero model calls. Claims from either pass the same verification and
        gate; episodes are never changed. A batch whose model output stays unusable (or whose
        model cannot be reached) is consolidated by the rules on its last attempt, and the
        failures are reported.

        Sleep stops when a pass makes no progress and says why in the report: a batch whose
        job used all its attempts is in ``failed_batches`` and is not run again unless
        ``retry_failed=True`` re-opens it for fresh attempts; a batch another worker (maybe a
        crashed one) holds under an unexpired lease is in ``waiting``, and ``wait=True`` waits
        for that lease to expire, then takes the job over (its fence keeps the old worker from
        writing).
        """
        space = self._space(space)
        chat, owned = _sleep_model(model, None, None) if model is not None else (self.model, False)
        try:
            if not self._ready_for_read(space):
                return SleepReport()
            return Sleeper(self, chat).run(space, progress, retry_failed=retry_failed, wait=wait)
        finally:
            if owned:
                chat.close()

    def jobs_summary(self) -> dict[str, Any]:
        """The database's durable jobs by status, and the lease takeovers (a worker died or
        hung and another claimed its job) recorded in the newest ``_KEPT_JOBS`` (``/metrics``)."""
        queue = JobQueue(self.store.jobs)
        kept = queue.list(limit=_KEPT_JOBS)
        takeovers = sum(e.get("event") == "lease expired" for job in kept for e in job.history)
        return {"jobs": queue.counts(), "lease_takeovers": takeovers}

    def audit_log(self, *, space: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Claims that consolidation refused or skipped, with the reason, newest first.

        ``close_memory`` logs each memory it closes here too, with its reason."""
        space = self._space(space)
        validate_count(limit, what="limit", low=1, high=_MAX_EPISODE_ID)
        return self.store.audit_log(space, limit)

    def reembed(self, *, space: str | None = None, progress: Progress | None = None) -> int:
        """Re-embed every line and memory of the space with this Memory's embedder.

        Episodes and memories are untouched; vectors and the space's embedder record are
        swapped in one transaction, so a crash leaves the old, consistent state.

        Returns:
            how many vectors were written.
        """
        space = self._space(space)
        if self.store.space_row(space) is None:
            raise NotFoundError(f"no space {space!r}: nothing to re-embed")
        line_vectors: dict[int, Any] = {}
        memory_vectors: dict[str, Any] = {}
        for _ in range(_REEMBED_ROUNDS):  # then the lines and memories written meanwhile
            lines, memories = self.store.iter_texts_for_embedding(space)
            lines = [(key, text) for key, text in lines if key not in line_vectors]
            memories = [(key, text) for key, text in memories if key not in memory_vectors]
            texts = [text for _, text in lines] + [text for _, text in memories]
            vectors = []
            for start in range(0, len(texts), _BATCH):
                vectors.extend(embed_texts(self.embedder, texts[start : start + _BATCH]))
                if progress:
                    progress(min(start + _BATCH, len(texts)), len(texts))
            line_vectors.update((key, vectors[i]) for i, (key, _) in enumerate(lines))
            memory_vectors.update(
                (key, vectors[len(lines) + i]) for i, (key, _) in enumerate(memories)
            )
            lacking = self.store.replace_vectors(
                space,
                self.embedder.id,
                self.embedder.dim,
                line_vectors,
                memory_vectors,
                spec=self._spec,
            )
            if not any(lacking):
                break
        else:
            raise TransientError(
                f"space {space!r} kept getting new lines while it was re-embedded "
                f"({_REEMBED_ROUNDS} rounds): run `orcamem reembed` again when writes pause"
            )
        self._checked.discard(space)
        self._embedders.pop(space, None)
        return len(line_vectors) + len(memory_vectors)

    # -- health ----------------------------------------------------------------------------

    def check(self) -> CheckReport:
        """Verify the whole database; reads only.

        The SQLite file (``PRAGMA integrity_check``), every full-text index against the rows
        it indexes, rows that point at missing ones, each line's and memory's vector against
        its space's embedder, every episode against its digest, and memory lineage
        (``superseded_by`` pointing at a missing memory, at itself, or in a cycle). Each
        problem is one line that says what to run next; ``report.ok`` means none.
        """
        self._space(None)  # a closed Memory refuses
        return health.check(self.store)

    def repair(self) -> RepairReport:
        """Rebuild what :meth:`check` finds damaged and can be derived again; idempotent.

        Damaged full-text indexes are rebuilt from their rows, missing or wrong-size vectors
        are embedded with this Memory's embedder (which must be the space's), rows pointing at
        missing episodes and dangling or self-pointing ``superseded_by`` are cleared. Episodes
        are never changed: ``report.remaining`` lists what only a backup can fix.
        """
        self._space(None)
        return health.repair(self.store, self.embedder_of)

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Finish pending side effects and close the store; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._sleeper is not None:
            self._sleeper.stop()
        self._background.shutdown(wait=True)
        if self._owned_model:
            self.model.close()
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def iter_episodes(self, *, space: str | None = None) -> Iterator[Episode]:
        return self.store.iter_episodes(self._space(space))


# -- import: parse and check every line of an export before anything is written ---------

_EPISODE_FIELDS = {
    "id", "space", "kind", "role", "text", "session_id", "turn_id", "occurred_at",
    "created_at", "digest", "meta",
}  # fmt: skip
_EPISODE_REQUIRED = ("id", "kind", "text", "occurred_at")
_MEMORY_FIELDS = {f.name for f in fields(MemoryRecord)}
_MEMORY_OPTIONAL = {"space", "tags", "cited_lines", "pinned"}


def _previous(
    episodes: Sequence[NewEpisode],
    seen: dict[tuple[str, str], str | None],
    last_texts: Callable[[str, Sequence[str]], Mapping[str, str]],
) -> dict[tuple[str, str], str]:
    """The latest text of each session of ``episodes`` before them: ``seen`` (what came
    earlier in this call, updated here) or else ``last_texts`` (what the store holds), so a
    batch's turns see the one before it even when the batch before is not written yet."""
    keys = {(ep.space, ep.session_id) for ep in episodes if ep.session_id}
    for space in {space for space, _ in keys}:
        asked = sorted(session for sp, session in keys - seen.keys() if sp == space)
        if asked:
            held = last_texts(space, asked)
            seen.update(((space, session), held.get(session)) for session in asked)
    previous = {key: text for key in keys if (text := seen[key]) is not None}
    for ep in episodes:
        if ep.session_id:
            seen[(ep.space, ep.session_id)] = ep.text
    return previous


def _memory_id(memory_id: object) -> str:
    key = str(memory_id).strip()
    if not is_memory_id(key):
        raise InvalidInputError(
            f"{memory_id!r} is not a memory id (mem-xxxxxxxx): list them with "
            "`orcamem facts`; an episode is deleted with `orcamem forget ep-12`"
        )
    return key


def _refuse_closed(memory: MemoryRecord, action: str) -> None:
    """An edit or a pin acts on the current version only: history stays as it was."""
    if not memory.active:
        after = f" by {memory.superseded_by}" if memory.superseded_by else ""
        nxt = f"{action} {memory.superseded_by}" if memory.superseded_by else "remember it again"
        raise InvalidInputError(
            f"memory {memory.id} is no longer current (closed{after}): {nxt} instead"
        )


_WINDOW_MIN_CHARS = 24
"""A passage shorter than this is in the window only as a whole message ("Yes." is in every
chat, and says nothing of which)."""


def _not_in_window(hits: Sequence[Hit], present: Sequence[str]) -> list[Hit]:
    """``hits`` without the passages the conversation already holds: a chat's own earlier
    turns (recorded as it went) came back as memory, 30 of 30 block lines in a 25-turn chat,
    and a tool loop's second step got its own question. Memories always stay."""
    said = [" ".join(text.split()) for text in present if text and text.strip()]
    window = "\n".join(said)
    whole = set(said)

    def held(text: str) -> bool:
        text = " ".join(text.split())
        return text in whole or (len(text) >= _WINDOW_MIN_CHARS and text in window)

    return [hit for hit in hits if hit.kind != "passage" or not held(hit.text)]


def _new_memory(
    text: Any,
    *,
    space: str,
    category: Any,
    importance: Any,
    confidence: Any,
    tags: Any,
    prohibited: bool,
    entity: Any,
    attribute: Any,
    value: Any,
    condition: Any,
    event_date: Any,
    source: Any,
) -> NewMemory:
    """The memory ``remember`` and ``edit_memory`` write, every field checked first."""
    content = refuse_secrets(validate_text(text, what="memory text"), what="memory text")
    for name, field_value in (("value", value), ("condition", condition)):
        if field_value is not None:  # quoted in blocks as the text is: checked as the text is
            refuse_secrets(validate_text(field_value, what=name), what=name)
    if category not in CATEGORIES:
        raise InvalidInputError(f"category={category!r}: use one of {', '.join(CATEGORIES)}")
    for name, number in (("importance", importance), ("confidence", confidence)):
        if not isinstance(number, (int, float)) or not 0.0 <= float(number) <= 1.0:
            raise InvalidInputError(f"{name}={number!r}: use a number from 0 to 1")
    tags = () if tags is None else tags
    if not isinstance(tags, (list, tuple)) or not all(
        isinstance(t, str) and t.strip() for t in tags
    ):
        raise InvalidInputError(f"tags={shown(tags)}: use a list of non-blank strings")
    for tag in tags:
        refuse_secrets(validate_id(tag, what="tag"), what="tag")
    for name, field_value in (("entity", entity), ("attribute", attribute)):
        if field_value is not None:
            refuse_secrets(validate_id(field_value, what=name), what=name)
    if attribute is not None:  # a block shows "attribute: value": the pair may be a secret
        refuse_secrets(f"{attribute}: {value or content}", what="attribute and value")
    if source not in SOURCES:
        raise InvalidInputError(f"source={shown(source)}: use one of {', '.join(SOURCES)}")
    prohibited = prohibited or inhibitory(attribute)  # avoid_* is a rule too (seed 003)
    return NewMemory(
        space=space,
        content=content,
        category=category,
        source=source,
        confidence=float(confidence),
        importance=float(importance),
        tags=tuple(tags),
        entity=entity,
        attribute=attribute,
        value=value,
        condition=condition,
        prohibited=prohibited,
        event_date=validate_time(event_date, what="event_date"),
    )


class _Bad(Exception):
    """One field of one record is wrong (turned into an ``InvalidInputError`` naming the line)."""


def _optional_str(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is not None and not isinstance(value, str):
        raise _Bad(f"{name} must be a string or null, got {type(value).__name__} {shown(value)}")
    return value


def _optional_id(record: dict[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is not None:
        validate_id(value, what=name)
    return value


def _time(record: dict[str, Any], name: str, *, required: bool) -> Any:
    """The field as exported, once it parses as a time (kept as written)."""
    value = record.get(name)
    if value is None:
        if required:
            raise _Bad(f"{name} is missing or null: the export writes a time here")
        return None
    if not isinstance(value, str):
        raise _Bad(
            f"{name} must be an ISO-8601 time string, got {type(value).__name__} {shown(value)}"
        )
    validate_time(value, what=name)
    return value


def _number(record: dict[str, Any], name: str, *, high: float | None) -> float:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Bad(f"{name} must be a number, got {type(value).__name__} {shown(value)}")
    if value < 0 or (high is not None and value > high):
        raise _Bad(f"{name}={value!r}: use a number from 0" + (f" to {high:g}" if high else " up"))
    return float(value)


def _flag(record: dict[str, Any], name: str) -> bool:
    value = record.get(name)
    if not isinstance(value, bool):
        raise _Bad(f"{name} must be true or false, got {type(value).__name__} {shown(value)}")
    return value


def _fields(record: dict[str, Any], known: set[str], required: Iterable[str]) -> None:
    unknown = sorted(set(record) - known)
    if unknown:
        raise _Bad(f"unknown field {unknown[0]!r}")
    missing = [name for name in required if name not in record]
    if missing:
        raise _Bad(f"field {missing[0]!r} is missing")


def _stated_value(text: Any, entity: str | None, attribute: str | None) -> str | None:
    """The value an edit's text states for a state's ``attribute`` ("home city: Porto" →
    "Porto", "caroline · home city: Porto" too, as ``memory_content`` writes another's): the
    dashboard offers a state's content to edit, and a new text cleared the value, so the
    block showed "user.home city: home city: Porto"."""
    if not attribute or not isinstance(text, str):
        return None
    head, colon, rest = text.strip().partition(":")
    owner, dot, named = head.rpartition("·")
    if dot and owner.strip().lower() == (entity or "user").lower():
        head = named
    return rest.strip() or None if colon and head.strip().lower() == attribute.lower() else None


def _meta_problem(meta: Any) -> str | None:
    """Why ``meta`` cannot be stored, or ``None``: it must be JSON with finite numbers (NaN
    made the export invalid JSON) and valid Unicode (a lone surrogate cannot be written as
    UTF-8: a raw UnicodeEncodeError on both engines)."""
    try:
        written = json.dumps(meta, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        return f"must be JSON (strings, finite numbers, lists, objects): {exc}"
    try:
        written.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate, not text: pass valid Unicode"
    return None


def _parse_episode(record: dict[str, Any], target: str) -> tuple[int, NewEpisode, str | None]:
    _fields(record, _EPISODE_FIELDS, _EPISODE_REQUIRED)
    episode_id = record["id"]
    if isinstance(episode_id, bool) or not isinstance(episode_id, int) or episode_id < 1:
        raise _Bad(f"id must be a whole number from 1 up, got {shown(episode_id)}")
    kind = record["kind"]
    if kind not in EPISODE_KINDS:
        raise _Bad(f"kind={shown(kind)}: use one of {', '.join(EPISODE_KINDS)}")
    _optional_str(record, "space")
    _optional_str(record, "digest")
    meta = record.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise _Bad(f"meta must be an object, got {type(meta).__name__} {shown(meta)}")
    wrong = _meta_problem(meta)
    if wrong is not None:
        raise _Bad(f"meta {wrong}")
    created_at = _time(record, "created_at", required=False)
    episode = NewEpisode(
        space=target,
        kind=kind,
        text=validate_text(record["text"]),
        role=_optional_id(record, "role"),
        session_id=_optional_id(record, "session_id"),
        turn_id=_optional_id(record, "turn_id"),
        occurred_at=validate_time(_time(record, "occurred_at", required=True)),
        meta=dict(meta or {}),
    )
    return episode_id, episode, created_at


def _parse_memory(
    record: dict[str, Any], target: str
) -> tuple[MemoryRecord, list[tuple[int, int]]]:
    _fields(record, _MEMORY_FIELDS, sorted(_MEMORY_FIELDS - _MEMORY_OPTIONAL))
    _optional_str(record, "space")
    memory_id = validate_id(record["id"], what="id")
    if not is_memory_id(memory_id):  # any other id could never be read back or forgotten
        raise _Bad(f"id={shown(memory_id)}: a memory id is mem- and 8 hex digits, as exported")
    category = record["category"]
    if category not in CATEGORIES:
        raise _Bad(f"category={shown(category)}: use one of {', '.join(CATEGORIES)}")
    source = record["source"]
    if source not in SOURCES:
        raise _Bad(f"source={shown(source)}: use one of {', '.join(SOURCES)}")
    tags = record.get("tags", [])
    if not isinstance(tags, list):
        raise _Bad(f"tags must be a list of strings, got {type(tags).__name__} {shown(tags)}")
    for tag in tags:
        refuse_secrets(validate_id(tag, what="tag"), what="tag")
    for name in ("entity", "attribute", "value", "condition"):  # as remember() checks them
        if (found := _optional_str(record, name)) is not None:
            refuse_secrets(found, what=name)
    if record.get("attribute") is not None:
        said = record.get("value") or record["content"]
        refuse_secrets(f"{record['attribute']}: {said}", what="attribute and value")
    cited = record.get("cited_lines", [])
    if not isinstance(cited, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in pair)
        for pair in cited
    ):
        raise _Bad(
            f"cited_lines must be a list of [episode id, line number] pairs, got {shown(cited)}"
        )
    access_count = record["access_count"]
    if isinstance(access_count, bool) or not isinstance(access_count, int) or access_count < 0:
        raise _Bad(f"access_count must be a whole number from 0 up, got {shown(access_count)}")
    memory = MemoryRecord(
        id=memory_id,
        space=target,
        category=category,
        content=refuse_secrets(validate_text(record["content"], what="content"), what="content"),
        summary=summary_of([found]) if (found := _optional_str(record, "summary")) else None,
        confidence=_number(record, "confidence", high=1.0),
        importance=_number(record, "importance", high=1.0),
        tags=tuple(tags),
        source=source,
        entity=_optional_str(record, "entity"),
        attribute=_optional_str(record, "attribute"),
        value=_optional_str(record, "value"),
        condition=_optional_str(record, "condition"),
        prohibited=_flag(record, "prohibited"),
        event_date=_time(record, "event_date", required=False),
        session_id=_optional_str(record, "session_id"),
        turn_id=_optional_str(record, "turn_id"),
        cited_lines=(),
        created_at=_time(record, "created_at", required=True),
        updated_at=_time(record, "updated_at", required=True),
        last_accessed_at=_time(record, "last_accessed_at", required=False),
        access_count=access_count,
        staleness=_number(record, "staleness", high=None),
        archived_at=_time(record, "archived_at", required=False),
        active=_flag(record, "active"),
        superseded_by=_optional_id(record, "superseded_by"),
        event_end=_time(record, "event_end", required=False),
        pinned=_flag(record, "pinned") if "pinned" in record else False,
    )
    return memory, [(episode, seq) for episode, seq in cited]


@dataclass
class _ParsedExport:
    episodes: list[tuple[int, NewEpisode, str | None]]
    memories: list[MemoryRecord]
    memory_lines: list[int]
    cited: dict[str, list[tuple[int, int]]]


def _parse_export(lines: Sequence[Any], target: str) -> _ParsedExport:
    """Every line checked (header, record kinds, fields, ids, times, text); nothing written.

    Raises:
        InvalidInputError: naming the first bad line and field; nothing was imported.
    """
    parsed = _ParsedExport([], [], [], {})
    episode_ids: dict[int, int] = {}
    memory_ids: dict[str, int] = {}
    header = False
    for number, raw in enumerate(lines, start=1):
        if not isinstance(raw, (str, bytes, bytearray)):
            raise InvalidInputError(
                f"line {number} must be a string, got {type(raw).__name__} {shown(raw)}; "
                "nothing was imported"
            )
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, TypeError):
            raise InvalidInputError(
                f"line {number} is not an orcamem export record: it is not JSON (cut short "
                "or edited?); pass the lines of an export unchanged; nothing was imported"
            ) from None
        if not isinstance(record, dict) or "type" not in record:
            raise InvalidInputError(
                f"line {number} is not an orcamem export record (a JSON object with a "
                "'type'); nothing was imported"
            )
        kind = record.pop("type")
        try:
            if not header:
                if kind != EXPORT_FORMAT:
                    raise InvalidInputError(
                        "not an orcamem export: the first line must be the "
                        f"{EXPORT_FORMAT!r} header; nothing was imported"
                    )
                version = record.get("version")
                if version not in READABLE_EXPORT_VERSIONS or isinstance(version, bool):
                    raise _Bad(
                        f"version={shown(version)}: this orcamem reads export versions "
                        f"{', '.join(map(str, READABLE_EXPORT_VERSIONS))} "
                        "(upgrade orcamem for a newer file)"
                    )
                _optional_str(record, "space")
                _optional_str(record, "embedder")
                header = True
            elif kind == "episode":
                episode = _parse_episode(record, target)
                if episode[0] in episode_ids:
                    raise _Bad(
                        f"episode id {episode[0]} is already used on line {episode_ids[episode[0]]}"
                    )
                episode_ids[episode[0]] = number
                parsed.episodes.append(episode)
            elif kind == "memory":
                memory, cited = _parse_memory(record, target)
                if memory.id in memory_ids:
                    raise _Bad(
                        f"memory id {memory.id} is already used on line {memory_ids[memory.id]}"
                    )
                memory_ids[memory.id] = number
                parsed.memories.append(memory)
                parsed.memory_lines.append(number)
                parsed.cited[memory.id] = cited
            elif kind == EXPORT_FORMAT:
                raise _Bad("a second export header: import one export file at a time")
            else:
                raise _Bad(f"unknown record type {shown(kind)}: use 'episode' or 'memory'")
        except (_Bad, InvalidInputError) as exc:
            if isinstance(exc, InvalidInputError) and not header:
                raise
            raise InvalidInputError(
                f"line {number} ({shown(kind, 20)} record): {exc}; nothing was imported"
            ) from None
    if not header:
        raise InvalidInputError(
            "not an orcamem export: it holds no line at all (an empty file?), and an export "
            f"starts with the {EXPORT_FORMAT!r} header; nothing was imported"
        )
    return parsed

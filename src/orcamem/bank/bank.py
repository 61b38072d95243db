"""``MemoryBank``: profile-scoped, long-lived agent memory (issue 5; spec: Memory Bank).

A profile (an agent configuration: ``{"name": "researcher", "tools": ["@default", "@memory"]}``)
keeps memories the agent chose to save: preferences, facts, behaviours, short-lived context.
The bank ranks them with the ``bank`` recall preset (``recall.bank``), prepends the
``--- CONTEXT FROM MEMORY ---`` block to the prompts of profiles that opt in, and exposes the
four ``memory_*`` tools (SDK here; MCP, REST and CLI are skins over these methods).

Storage: the in-memory index is the runtime source of truth; the ``objects`` store is the
persistence tier, one JSON object per memory at ``memory/<profileName>/<memoryId>.json``,
hydrated at startup (``load_all``). A save returns only after its object landed. Access
updates (``mark_accessed``) are written in the background with ``If-Match`` and re-read and
re-applied when another runner wrote first, so concurrent runners never lose an update; saves
create with ``If-None-Match: *``. Objects that are not valid memories are skipped and
reported (``last_load``, ``stats()``), never fatal.

Profiles map to the spaces ``profile:<name>`` (``space_for``): an API key scoped to
``profile:researcher`` reaches that profile's memories and no other.

>>> bank = MemoryBank(profiles={"researcher": ["@default", "@memory"]})
>>> saved = bank.save("researcher", content="The user is allergic to peanuts.", category="fact")
>>> [hit.memory.id for hit in bank.recall("researcher", "what diet should I plan?")] == [saved.id]
True
>>> print(bank.inject("researcher", "Plan my meals."))
--- CONTEXT FROM MEMORY ---
Core knowledge (always apply):
* [fact] The user is allergic to peanuts.
---
Plan my meals.
>>> bank.close()
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from .._kernel.clock import Clock, SystemClock, parse_time, stamp
from .._kernel.env import (
    BANK_ENV,
    BANK_STORAGES,
    anthropic_api_key,
    anthropic_base_url,
    anthropic_memory_model,
    memory_bank_dir,
    memory_bank_profiles_path,
    memory_bank_s3,
    memory_bank_storage,
)
from .._kernel.llm import ChatModel
from .._kernel.model import (
    is_memory_id,
    new_memory_id,
    validate_count,
    validate_id,
    validate_items,
    validate_prompt,
    validate_text,
)
from .._kernel.redact import refuse_secrets
from ..errors import (
    ClosedError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from ..recall import bank as scoring
from ..recall.blocks import bank as bank_block
from .objects import (
    FileObjectStore,
    MemoryObjectStore,
    ObjectStore,
    PreconditionFailedError,
    S3ObjectStore,
    StoredObject,
)
from .processor import MemoryProcessor
from .profiles import (
    Profile,
    profiles_arg,
    read_profiles_file,
    space_for,
    validate_profile,
)
from .record import KEY_RE, PREFIX, BankMemory, is_unit, object_key, preview

__all__ = [
    "MAX_RAW_INPUT_BYTES",
    "REFRESH_TTL_S",
    "BankHit",
    "BankPage",
    "Injection",
    "LoadReport",
    "MemoryBank",
    "ProfileBank",
    "SkippedObject",
]

log = logging.getLogger("orcamem.bank")

MAX_RAW_INPUT_BYTES = 4 * 1024
"""RawInput is capped at 4 KiB; larger inputs are rejected."""
REFRESH_TTL_S = 2.0
"""A conductor's reads re-sync from the bucket when the last sync is older than this."""
MAX_RECALL = 100
MAX_PAGE = 1000
_CAS_ATTEMPTS = 32
_LOAD_THREADS = 8


Role = Literal["runner", "conductor"]


# -- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BankHit:
    """A recalled memory with its composite score and the breakdown."""

    memory: BankMemory
    relevance: scoring.Relevance

    @property
    def score(self) -> float:
        return self.relevance.score

    def to_dict(self) -> dict[str, Any]:
        return {
            "memory": self.memory.to_json(),
            "score": round(self.relevance.score, 6),
            "relevance": self.relevance.to_dict(),
        }


@dataclass(frozen=True)
class BankPage:
    """A page of memories, newest first (or best first with a query)."""

    memories: list[BankMemory]
    total: int
    next_offset: int | None
    hits: list[BankHit] | None = None
    """With a query: the same memories with their relevance."""


@dataclass(frozen=True)
class SkippedObject:
    """An object under ``memory/`` that is not a valid memory, and why."""

    key: str
    reason: str


@dataclass
class LoadReport:
    """What ``load_all`` or a refresh found."""

    loaded: int = 0
    profiles: int = 0
    skipped: list[SkippedObject] = field(default_factory=list)


@dataclass(frozen=True)
class Injection:
    """The rendered block (empty when nothing is injected) and the ids it holds."""

    block: str
    ids: list[str]


# -- the processor ------------------------------------------------------------------------------


# -- the bank -----------------------------------------------------------------------------------


@dataclass
class _Entry:
    memory: BankMemory
    etag: str


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


AUTO: Any = _Auto()


class MemoryBank:
    """Profile-scoped long-lived memory, persisted to an ``objects`` store.

    Args:
        objects: where memories persist (``S3ObjectStore``, ``FileObjectStore``,
            ``MemoryObjectStore``); default: in memory only. The caller closes what it passes.
        profiles: the known profiles and their tools, as ``{"name": ["@memory", ...]}`` or a
            list of ``Profile`` / ``{"name": ..., "tools": [...]}``. Profiles found in storage
            are known too, without tools: the SDK and REST reach them, but an agent session
            gets no ``memory_*`` tools and no injection.
        processor: the extraction model (a ``ChatModel``), ``None`` for none, or a
            ``MemoryProcessor``; default ``None``. ``from_env`` builds the Anthropic one.
        role: ``runner`` (the source of truth on writes; reads its own index) or ``conductor``
            (the dashboard side: reads re-sync from storage when older than ``refresh_ttl_s``).
        clock: where "now" comes from.
        refresh_ttl_s: a conductor's read-through TTL (2 seconds).
        load: hydrate the index from storage now (``load_all``).
        ticker: monotonic seconds for the TTL (tests pass a fake).

    Raises:
        StoreError: ``load`` and the storage cannot be listed.
    """

    def __init__(
        self,
        objects: ObjectStore | None = None,
        *,
        profiles: Mapping[str, Iterable[str]] | Iterable[Profile | Mapping[str, Any]] | None = None,
        processor: ChatModel | MemoryProcessor | None = None,
        role: Role = "runner",
        clock: Clock | None = None,
        refresh_ttl_s: float = REFRESH_TTL_S,
        load: bool = True,
        ticker: Callable[[], float] = time.monotonic,
    ) -> None:
        if role not in ("runner", "conductor"):
            raise InvalidInputError(f"role={role!r}: use 'runner' or 'conductor'")
        self.objects: ObjectStore = objects if objects is not None else MemoryObjectStore()
        self.role: Role = role
        self.clock = clock or SystemClock()
        self.refresh_ttl_s = refresh_ttl_s
        self.processor = (
            processor if isinstance(processor, MemoryProcessor) else MemoryProcessor(processor)
        )
        self._declared = profiles_arg(profiles)
        self._index: dict[str, dict[str, _Entry]] = {}
        self._bad: dict[str, tuple[str, str]] = {}  # key -> (etag, reason)
        self._lock = threading.RLock()
        self._refresh_lock = threading.Lock()
        self._ticker = ticker
        self._refreshed_at: float | None = None
        self._written: dict[str, float] = {}  # key -> ticker time of our last write/delete
        self._closed = False
        self._owned: list[Any] = []
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orcamem-bank")
        self.last_load = LoadReport()
        if load:
            self.load_all()

    @classmethod
    def from_env(
        cls,
        *,
        role: Role = "runner",
        profiles: Mapping[str, Iterable[str]] | Iterable[Profile | Mapping[str, Any]] | None = None,
        processor: Any = AUTO,
        clock: Clock | None = None,
        environ: dict[str, str] | None = None,
        objects: ObjectStore | None = None,
        storage: str | None = None,
    ) -> MemoryBank:
        """The bank the environment describes (what a runner and a conductor each build).

        Storage: ``INTERNAL_S3_BUCKET`` (and friends), else ``S3_BUCKET`` (and friends), else a
        directory, ``$ORCA_HOME/bank`` (``FileObjectStore``): acknowledged writes survive a
        restart. ``storage`` (else ``$ORCAMEM_BANK``) overrides: ``"memory"`` keeps memories in
        memory only (lost when the process ends, with a warning); ``"file"`` uses the directory
        even when a bucket is set. Profiles: ``profiles`` plus the profiles file
        (``$ORCAMEM_PROFILES`` or ``$ORCA_HOME/profiles.json``) if it exists. Processor:
        Anthropic with ``$ANTHROPIC_API_KEY`` and ``$ANTHROPIC_MEMORY_MODEL`` when the key is set.
        ``objects`` overrides the storage (e.g. a ``FileObjectStore``; the caller closes it).

        Raises:
            InvalidInputError: ``storage`` / ``$ORCAMEM_BANK`` is not ``file`` or ``memory``.
            StoreError: the storage cannot be listed; for a bucket the message names the
                variable that set it (``INTERNAL_S3_BUCKET`` or ``S3_BUCKET``).
        """
        named = "storage"
        if storage is None:
            storage, named = memory_bank_storage(environ), BANK_ENV
        if storage is not None and storage not in BANK_STORAGES:
            raise InvalidInputError(f"{named}={storage!r}: use one of {', '.join(BANK_STORAGES)}")
        declared = read_profiles_file(memory_bank_profiles_path(environ))
        declared.extend(profiles_arg(profiles).values())
        owned = objects is None
        settings = None if storage is not None else memory_bank_s3(environ)
        if objects is not None:
            settings = None
        elif storage == "memory":
            log.warning(
                "memory bank: in memory only (ORCAMEM_BANK=memory / --bank memory): memories "
                "are lost when this process ends"
            )
            objects = MemoryObjectStore()
        elif settings is None:
            objects = FileObjectStore(memory_bank_dir(environ))
            log.info("memory bank: no bucket set, keeping memories in %s", objects.location)
        else:
            if settings.source == "S3_BUCKET":
                log.info(
                    "memory bank: INTERNAL_S3_BUCKET is unset, using S3_BUCKET %r (single-bucket "
                    "setup)",
                    settings.bucket,
                )
            objects = S3ObjectStore(settings)
        model: Any = processor
        if processor is AUTO:
            key = anthropic_api_key(environ)
            model = None
            if key:
                from .._kernel.llm import AnthropicChat

                model = AnthropicChat(
                    api_key=key,
                    model=anthropic_memory_model(environ),
                    base_url=anthropic_base_url(environ),
                )
        try:
            bank = cls(objects, profiles=declared, processor=model, role=role, clock=clock)
        except BaseException as exc:
            if owned:
                objects.close()
            if processor is AUTO and model is not None:
                model.close()
            if settings is not None and isinstance(exc, StoreError):
                raise StoreError(
                    f"memory bank: the bucket {settings.bucket!r} set by {settings.source} "
                    f"cannot be used: {exc}"
                ) from None
            raise
        if owned:
            bank._owned.append(objects)
        if processor is AUTO and model is not None:
            bank._owned.append(model)
        return bank

    # -- plumbing ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("this MemoryBank is closed: create a new one")

    def _read(self) -> None:
        """Before a read: a conductor re-syncs when its copy is older than the TTL."""
        self._check_open()
        if self.role == "conductor":
            self.refresh_if_stale()

    def _profile(self, name: Any) -> Profile:
        name = validate_profile(name)
        with self._lock:
            declared = self._declared.get(name)
            if declared is not None:
                return declared
            if self._index.get(name):
                return Profile(name)
        raise NotFoundError(  # no list of the known ones: a caller scoped to one tenant
            # reads this too (`orcamem bank stats` lists them for the operator)
            f"unknown profile {name!r}: declare it in the profiles file (ORCAMEM_PROFILES or "
            "$ORCA_HOME/profiles.json) or with MemoryBank(profiles=...); `orcamem bank stats` "
            "lists the profiles there are"
        )

    def _entries(self, profile: str) -> list[_Entry]:
        with self._lock:
            return list(self._index.get(profile, {}).values())

    def _set(self, memory: BankMemory, etag: str) -> None:
        with self._lock:
            self._index.setdefault(memory.profile_name, {})[memory.id] = _Entry(memory, etag)

    def _drop(self, profile: str, memory_id: str) -> None:
        with self._lock:
            entries = self._index.get(profile)
            if entries is not None:
                entries.pop(memory_id, None)
                if not entries:
                    del self._index[profile]

    # -- profiles ------------------------------------------------------------------------------

    def declare(self, name: str, tools: Iterable[str] = ()) -> Profile:
        """Add (or replace) a profile and its tools."""
        self._check_open()
        tools = tuple(validate_items(tools, what="tools", of="tool names"))
        if not all(isinstance(t, str) for t in tools):
            raise InvalidInputError("tools must be strings such as '@memory' or 'memory_save'")
        for tool in tools:
            validate_id(tool, what="tool")
        profile = Profile(validate_profile(name), tools)
        with self._lock:
            self._declared[profile.name] = profile
        return profile

    def profiles(self) -> list[Profile]:
        """Every known profile (declared, or with memories in storage), by name."""
        self._read()
        with self._lock:
            names = set(self._declared) | {p for p, m in self._index.items() if m}
            return [self._declared.get(n, Profile(n)) for n in sorted(names)]

    def memory_tools(self, profile: str) -> tuple[str, ...]:
        """The ``memory_*`` tools an agent session of ``profile`` is offered (``Profile.memory_tools``).

        Raises:
            InvalidInputError: an invalid profile name.
            NotFoundError: an unknown profile.
        """
        self._read()
        return self._profile(profile).memory_tools

    def profile(self, name: str) -> ProfileBank:
        """This bank bound to one profile (``bank.profile("researcher").save(...)``)."""
        return ProfileBank(self, self._profile(name).name)

    # -- the four tools ------------------------------------------------------------------------

    def save(
        self,
        profile: str,
        *,
        raw_input: str | None = None,
        content: str | None = None,
        category: str | None = None,
        confidence: float | None = None,
        summary: str | None = None,
    ) -> BankMemory:
        """Save a memory; returns once its object has landed in storage.

        Give ``raw_input`` alone (free text: the processor extracts the structure), or
        ``content`` with optional ``category``/``confidence``/``summary`` (pre-structured; no
        model call; ``raw_input``, if given too, is kept as the audit trail).

        Without a processor, or when its call fails, the save proceeds with what the caller
        supplied (content = the raw input, category ``general``, confidence 1.0). When the
        model answers something unusable: the deterministic preview (content = the raw input,
        summary = its first 50 characters, category ``general``, confidence 0.5). Values the
        caller supplies always win.

        Raises:
            InvalidInputError: neither text given, a blank or non-text one, over 4 KiB, one
                holding a secret (the message names its kind), an unknown category, a
                confidence outside [0, 1]; nothing is written.
            NotFoundError: an unknown profile.
            StoreError: the object could not be written (nothing is kept).
        """
        self._check_open()
        name = self._profile(profile).name
        if raw_input is None and content is None:
            raise InvalidInputError(
                "nothing to save: give rawInput (free text) or content (pre-structured)"
            )
        raw = None if raw_input is None else validate_text(raw_input, what="rawInput")
        text = None if content is None else validate_text(content, what="content")
        for what, value in (("rawInput", raw), ("content", text)):
            size = len(value.encode("utf-8")) if value is not None else 0
            if size > MAX_RAW_INPUT_BYTES:
                raise InvalidInputError(
                    f"{what} is {size:,} bytes, over the 4 KiB ({MAX_RAW_INPUT_BYTES:,}-byte) "
                    "limit of a memory: save a shorter note, or split it into several memories"
                )
        _check_category(category)
        if confidence is not None and not is_unit(confidence):
            raise InvalidInputError(f"confidence={confidence!r}: use a number from 0 to 1")
        if summary is not None and (not isinstance(summary, str) or not summary.strip()):
            raise InvalidInputError("summary must be a non-blank string")
        for what, value in (("rawInput", raw), ("content", text), ("summary", summary)):
            if value is not None:  # before the processor: a secret never reaches its model
                refuse_secrets(value, what=what)
        if summary is not None:
            validate_text(summary, what="summary")
            size = len(summary.encode("utf-8"))
            if size > MAX_RAW_INPUT_BYTES:
                raise InvalidInputError(
                    f"summary is {size:,} bytes, over the 4 KiB ({MAX_RAW_INPUT_BYTES:,}-byte) "
                    "limit of a memory: give a one-line summary"
                )

        if text is not None:
            processed, default_category, default_confidence = text, "general", 1.0
            short = preview(summary) if summary is not None else preview(text)
        else:
            assert raw is not None
            extraction = self.processor.extract(raw)
            if extraction.outcome == "extracted":
                processed = extraction.processed_content or raw
                short = extraction.summary or preview(processed)
                default_category = extraction.category or "general"
                default_confidence = (
                    extraction.confidence if extraction.confidence is not None else 1.0
                )
            else:
                processed, short, default_category = raw, preview(raw), "general"
                default_confidence = 0.5 if extraction.outcome == "preview" else 1.0
            if summary is not None:
                short = preview(summary)
        chosen_category = category or default_category
        chosen_confidence = float(confidence) if confidence is not None else default_confidence
        now = stamp(self.clock)
        for _ in range(8):
            memory = BankMemory(
                id=new_memory_id(),
                profile_name=name,
                raw_input=raw if raw is not None else processed,
                processed_content=processed,
                summary=short,
                category=chosen_category,
                source="explicit",
                confidence=chosen_confidence,
                created_at=now,
                last_accessed_at=None,
                access_count=0,
                staleness_score=scoring.staleness(0.0, 0, chosen_confidence, chosen_category),
            )
            key = object_key(name, memory.id)
            try:
                etag = self.objects.put(key, memory.encode(), if_none_match=True)
            except PreconditionFailedError:  # an id collision: draw another id
                continue
            self._written[key] = self._ticker()
            self._set(memory, etag)
            return memory
        raise StoreError("could not find a free memory id after 8 tries: check the bucket")

    def recall(
        self,
        profile: str,
        query: str,
        *,
        limit: int = scoring.INJECTION_MAX_RESULTS,
        min_score: float = scoring.INJECTION_MIN_SCORE,
    ) -> list[BankHit]:
        """The profile's memories ranked for ``query``, with their relevance breakdown.

        Bumps the access count of every returned memory (in the background: see
        ``mark_accessed``).
        """
        hits = self.search(profile, query, limit=limit, min_score=min_score)
        if hits:
            self.mark_accessed(profile, [hit.memory.id for hit in hits])
        return hits

    def search(
        self,
        profile: str,
        query: str,
        *,
        limit: int = scoring.INJECTION_MAX_RESULTS,
        min_score: float = scoring.INJECTION_MIN_SCORE,
        exclude: Iterable[str] = (),
        category: str | None = None,
    ) -> list[BankHit]:
        """Like ``recall`` without side effects (the dashboard's search).

        Memories must share a topic with the query (a word or a cluster) and score at least
        ``min_score``; best first, at most ``limit``; with ``category``, only that category
        (the maturity factor stays the profile's).
        """
        self._read()
        name = self._profile(profile).name
        query = validate_text(query, what="query")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL:
            raise InvalidInputError(f"limit={limit!r}: use a whole number from 1 to {MAX_RECALL}")
        if not isinstance(min_score, (int, float)) or not 0.0 <= min_score <= 1.0:
            raise InvalidInputError(f"minScore={min_score!r}: use a number from 0 to 1")
        _check_category(category)
        return self._rank(
            name,
            query,
            limit=limit,
            min_score=min_score,
            exclude=set(exclude),
            categories=None if category is None else (category,),
        )

    def _rank(self, profile: str, query: str, **options: Any) -> list[BankHit]:
        memories = [e.memory for e in self._entries(profile)]
        ranked = scoring.rank(query, memories, self.clock.now(), **options)
        return [BankHit(memory, relevance) for memory, relevance in ranked]

    def list(self, profile: str, *, limit: int = 50, offset: int = 0) -> BankPage:
        """The profile's memories, newest first; read-only (access counts do not change)."""
        self._read()
        name = self._profile(profile).name
        _check_page(limit, offset)
        memories = sorted((e.memory for e in self._entries(name)), key=_newest)
        page = memories[offset : offset + limit]
        end = offset + len(page)
        return BankPage(page, len(memories), end if end < len(memories) else None)

    def get(self, profile: str, memory_id: str) -> BankMemory:
        """One memory of the profile.

        Raises:
            NotFoundError: an unknown profile, or no such memory in it.
        """
        self._read()
        name = self._profile(profile).name
        _check_id(memory_id)
        with self._lock:
            entry = self._index.get(name, {}).get(memory_id)
        if entry is None:
            raise NotFoundError(f"no memory {memory_id!r} in profile {name!r}")
        return entry.memory

    def delete(self, profile: str, memory_id: str) -> None:
        """Remove a memory from the index and from storage.

        Raises:
            NotFoundError: an unknown profile, or no such memory in it.
        """
        self._check_open()
        name = self._profile(profile).name
        _check_id(memory_id)
        key = object_key(name, memory_id)
        with self._lock:
            known = memory_id in self._index.get(name, {})
        if not known:
            try:  # saved by another runner since our last sync?
                self.objects.get(key)
            except NotFoundError:
                raise NotFoundError(f"no memory {memory_id!r} in profile {name!r}") from None
        self.objects.delete(key)
        self._written[key] = self._ticker()
        self._drop(name, memory_id)

    # -- access tracking -----------------------------------------------------------------------

    def mark_accessed(self, profile: str, ids: Sequence[str]) -> Future[None]:
        """Count one access of each memory now, fire-and-forget.

        The index and the stored objects are updated by a background worker with
        compare-and-swap (``If-Match``): when another runner wrote the object first, it is
        re-read and the access applied again, so no access is lost. Failures are logged, never
        raised to the caller (the returned future completes either way).
        """
        self._check_open()
        name = validate_profile(profile)
        wanted = list(dict.fromkeys(validate_items(ids, what="ids", of="memory ids")))
        for memory_id in wanted:
            _check_id(memory_id)
        at = stamp(self.clock)

        def work() -> None:
            for memory_id in wanted:
                try:
                    self._bump(name, memory_id, at)
                except Exception as exc:
                    log.warning("memory bank: access of %s not recorded: %s", memory_id, exc)

        with self._lock:
            if self._closed:
                done: Future[None] = Future()
                done.set_result(None)
                return done
            return self._background.submit(work)

    def _bump(self, profile: str, memory_id: str, at: str) -> None:
        key = object_key(profile, memory_id)
        for attempt in range(_CAS_ATTEMPTS):
            with self._lock:
                entry = self._index.get(profile, {}).get(memory_id)
            if entry is None:
                return  # deleted meanwhile
            updated = entry.memory.accessed(at)
            try:
                etag = self.objects.put(key, updated.encode(), if_match=entry.etag)
            except PreconditionFailedError:
                # another writer got there first: take its version and apply ours on top
                try:
                    fresh = self.objects.get(key)
                except NotFoundError:
                    self._drop(profile, memory_id)
                    return
                self._absorb(fresh)
                time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
                continue
            self._written[key] = self._ticker()
            self._set(updated, etag)
            return
        raise StoreError(f"{memory_id}: gave up after {_CAS_ATTEMPTS} conflicting writes")

    def _absorb(self, stored: StoredObject) -> BankMemory | None:
        try:
            memory = BankMemory.decode(stored.body, stored.key)
        except ValueError as exc:
            with self._lock:
                self._bad[stored.key] = (stored.etag, str(exc))
            log.warning("memory bank: skipped %s: %s", stored.key, exc)
            return None
        with self._lock:
            self._bad.pop(stored.key, None)
        self._set(memory, stored.etag)
        return memory

    # -- injection -----------------------------------------------------------------------------

    def context(self, profile: str, query: str) -> Injection:
        """The ``--- CONTEXT FROM MEMORY ---`` block for a run of ``profile`` on ``query``.

        Empty unless the profile opted in (``@memory`` or a ``memory_*`` tool). Core tier: the
        active preferences and facts, best first; then up to 8 query-relevant memories scoring
        at least 0.05, core ids excluded; at most 2,000 characters, the query tier trimmed
        first. The ids that made it in are passed to ``mark_accessed`` after rendering,
        fire-and-forget.
        """
        self._read()
        chosen = self._profile(profile)
        validate_prompt(query, what="query")
        if not chosen.injects:
            return Injection("", [])
        core = self._rank(
            chosen.name,
            query,
            limit=None,
            min_score=0.0,
            need_topic=False,
            categories=scoring.CORE_CATEGORIES,
        )
        core_ids = {hit.memory.id for hit in core}
        relevant = (
            self._rank(
                chosen.name,
                query,
                limit=scoring.INJECTION_MAX_RESULTS,
                min_score=scoring.INJECTION_MIN_SCORE,
                exclude=core_ids,
            )
            if query.strip()
            else []
        )

        def items(hits: list[BankHit]) -> list[bank_block.BlockItem]:
            return [
                bank_block.BlockItem(h.memory.id, h.memory.category, h.memory.processed_content)
                for h in hits
            ]

        block, ids = bank_block.render_block(items(core), items(relevant))
        if ids:
            self.mark_accessed(chosen.name, ids)
        return Injection(block, ids)

    def inject(self, profile: str, prompt: str) -> str:
        """``prompt`` with the memory block prepended (unchanged when nothing is injected)."""
        injection = self.context(profile, prompt)
        return f"{injection.block}\n{prompt}" if injection.block else prompt

    # -- storage sync --------------------------------------------------------------------------

    def load_all(self) -> LoadReport:
        """Rebuild the index from storage: every ``memory/<profile>/<id>.json`` object, all
        pages. Objects that are not valid memories are skipped and reported.

        Raises:
            StoreError: the storage cannot be listed.
        """
        self._check_open()
        with self._refresh_lock:
            started = self._ticker()
            listing = list(self.objects.list(PREFIX))
            fetched, skipped = self._fetch([(info.key, info.etag) for info in listing])
            index: dict[str, dict[str, _Entry]] = {}
            for memory, etag in fetched:
                index.setdefault(memory.profile_name, {})[memory.id] = _Entry(memory, etag)
            with self._lock:
                self._index = index
                self._bad = {s.key: (etag, s.reason) for s, etag in skipped}
            self._refreshed_at = started
            report = LoadReport(
                loaded=len(fetched),
                profiles=len(index),
                skipped=[s for s, _ in skipped],
            )
            self.last_load = report
        for item in report.skipped:
            log.warning("memory bank: skipped %s: %s", item.key, item.reason)
        return report

    def refresh_if_stale(self) -> LoadReport | None:
        """Re-sync from storage if the last sync is older than the TTL (2 s); else nothing.

        Only new or changed objects are read (the listing's etags say which); objects gone
        from storage leave the index, unless this bank wrote them since the listing began.
        """
        self._check_open()
        if (
            self._refreshed_at is not None
            and self._ticker() - self._refreshed_at < self.refresh_ttl_s
        ):
            return None
        with self._refresh_lock:
            started = self._ticker()
            if self._refreshed_at is not None and started - self._refreshed_at < self.refresh_ttl_s:
                return None  # another thread refreshed while we waited
            listing = {info.key: info.etag for info in self.objects.list(PREFIX)}
            with self._lock:
                known = {
                    object_key(p, i): e.etag
                    for p, entries in self._index.items()
                    for i, e in entries.items()
                }
                bad = dict(self._bad)
            wanted = [
                (key, etag)
                for key, etag in listing.items()
                if known.get(key) != etag and bad.get(key, ("",))[0] != etag
            ]
            fetched, skipped = self._fetch(wanted)
            with self._lock:
                for memory, etag in fetched:
                    self._index.setdefault(memory.profile_name, {})[memory.id] = _Entry(
                        memory, etag
                    )
                for item, etag in skipped:
                    self._bad[item.key] = (etag, item.reason)
                for key in set(known) - set(listing):
                    if self._written.get(key, float("-inf")) >= started:
                        continue  # written by us after the listing began
                    match = KEY_RE.fullmatch(key)
                    if match:
                        self._drop(*match.groups())
                for key in set(self._bad) - set(listing):
                    del self._bad[key]
                report = LoadReport(
                    loaded=len(fetched),
                    profiles=len(self._index),
                    skipped=[SkippedObject(k, r) for k, (_, r) in sorted(self._bad.items())],
                )
            self._refreshed_at = started
        return report

    def _fetch(
        self, wanted: Sequence[tuple[str, str]]
    ) -> tuple[list[tuple[BankMemory, str]], list[tuple[SkippedObject, str]]]:
        """Read and parse objects (in parallel); bad ones come back as skipped."""

        def one(item: tuple[str, str]) -> tuple[BankMemory | None, str, SkippedObject | None]:
            key, listed_etag = item
            if KEY_RE.fullmatch(key) is None:
                reason = "not a memory object name (memory/<profile>/mem-<8hex>.json)"
                return None, listed_etag, SkippedObject(key, reason)
            try:
                stored = self.objects.get(key)
            except NotFoundError:  # deleted between the listing and the read
                return None, listed_etag, None
            try:
                return BankMemory.decode(stored.body, key), stored.etag, None
            except ValueError as exc:
                return None, stored.etag, SkippedObject(key, str(exc))

        if len(wanted) > 1:
            with ThreadPoolExecutor(_LOAD_THREADS, thread_name_prefix="orcamem-bank-load") as pool:
                results = list(pool.map(one, wanted))
        else:
            results = [one(item) for item in wanted]
        fetched = [(memory, etag) for memory, etag, _ in results if memory is not None]
        skipped = [(bad, etag) for _, etag, bad in results if bad is not None]
        return fetched, skipped

    # -- dashboard views -----------------------------------------------------------------------

    def grouped(self) -> dict[str, list[BankMemory]]:
        """Every memory, grouped by profile (profiles by name, memories newest first)."""
        self._read()
        with self._lock:
            return {
                name: sorted((e.memory for e in entries.values()), key=_newest)
                for name, entries in sorted(self._index.items())
                if entries
            }

    def browse(
        self,
        *,
        q: str | None = None,
        category: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> BankPage:
        """One flattened page across profiles: newest first, or best first for ``q``."""
        self._read()
        _check_page(limit, offset)
        if q is not None:
            validate_prompt(q, what="q")
        _check_category(category)
        with self._lock:
            names = sorted(self._index)
        categories = [category] if category else None
        if q is not None and q.strip():
            hits = [
                hit
                for name in names
                for hit in self._rank(name, q, limit=None, min_score=0.0, categories=categories)
            ]
            hits.sort(key=lambda h: (-h.relevance.score, _newest(h.memory)))
            page = hits[offset : offset + limit]
            end = offset + len(page)
            return BankPage(
                [h.memory for h in page], len(hits), end if end < len(hits) else None, page
            )
        memories = sorted(
            (
                e.memory
                for name in names
                for e in self._entries(name)
                if category is None or e.memory.category == category
            ),
            key=_newest,
        )
        page_memories = memories[offset : offset + limit]
        end = offset + len(page_memories)
        return BankPage(page_memories, len(memories), end if end < len(memories) else None)

    def stats(self) -> dict[str, Any]:
        """Roll-up: total memories, profiles with memory, per-profile counts, and the storage."""
        self._read()
        with self._lock:
            counts = {
                name: len(entries) for name, entries in sorted(self._index.items()) if entries
            }
            skipped = [
                {"key": key, "reason": reason} for key, (_, reason) in sorted(self._bad.items())
            ]
        return {
            "totalMemories": sum(counts.values()),
            "profilesWithMemory": len(counts),
            "perProfile": counts,
            "storage": self.objects.location,
            "durable": self.objects.durable,
            "skipped": skipped,
        }

    # -- lifecycle -----------------------------------------------------------------------------

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every queued access update has been written."""
        with self._lock:
            if self._closed:
                return
            marker = self._background.submit(lambda: None)
        marker.result(timeout=timeout)

    def close(self) -> None:
        """Finish the queued access updates and close what the bank opened; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._background.shutdown(wait=True)
        for resource in self._owned:
            try:
                resource.close()
            except Exception as exc:  # closing must not mask the caller's own error
                log.warning("memory bank: closing %r failed: %s", resource, exc)

    def __enter__(self) -> MemoryBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryBank({self.objects.location!r}, role={self.role!r})"


class ProfileBank:
    """A :class:`MemoryBank` bound to one profile: the tools as an agent of it sees them."""

    def __init__(self, bank: MemoryBank, name: str) -> None:
        self.bank = bank
        self.name = name

    @property
    def space(self) -> str:
        return space_for(self.name)

    def save(self, **fields: Any) -> BankMemory:
        return self.bank.save(self.name, **fields)

    def recall(self, query: str, **options: Any) -> list[BankHit]:
        return self.bank.recall(self.name, query, **options)

    def list(self, **options: Any) -> BankPage:
        return self.bank.list(self.name, **options)

    def get(self, memory_id: str) -> BankMemory:
        return self.bank.get(self.name, memory_id)

    def delete(self, memory_id: str) -> None:
        self.bank.delete(self.name, memory_id)

    def inject(self, prompt: str) -> str:
        return self.bank.inject(self.name, prompt)


def _newest(memory: BankMemory) -> tuple[float, str]:
    """Sort key: newest ``createdAt`` first, then id (stable)."""
    return (-parse_time(memory.created_at).timestamp(), memory.id)


def _check_category(category: Any) -> None:
    if category is not None and category not in scoring.BANK_CATEGORIES:
        raise InvalidInputError(
            f"unknown category {category!r}: use one of {', '.join(scoring.BANK_CATEGORIES)}"
        )


def _check_page(limit: Any, offset: Any) -> None:
    validate_count(limit, what="limit", low=1, high=MAX_PAGE)
    validate_count(offset, what="offset", low=0)


def _check_id(memory_id: Any) -> None:
    if not isinstance(memory_id, str) or not is_memory_id(memory_id):
        raise InvalidInputError(
            f"{repr(memory_id)[:40]} is not a memory id: use mem-<8 hex digits>"
        )

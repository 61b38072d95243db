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

import json
import logging
import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from .._kernel.clock import Clock, SystemClock, format_time, parse_time
from .._kernel.config import (
    anthropic_api_key,
    anthropic_base_url,
    anthropic_memory_model,
    memory_bank_profiles_path,
    memory_bank_s3,
)
from .._kernel.llm import ChatModel, is_nothing
from .._kernel.model import is_memory_id, new_memory_id, validate_text
from ..errors import (
    BankUnavailableError,
    ClosedError,
    InvalidInputError,
    ModelOutputError,
    NotFoundError,
    StoreError,
)
from ..recall import bank as scoring
from .objects import (
    MemoryObjectStore,
    ObjectStore,
    PreconditionFailedError,
    S3ObjectStore,
    StoredObject,
)

__all__ = [
    "MAX_RAW_INPUT_BYTES",
    "MEMORY_CAPABILITY",
    "MEMORY_TOOLS",
    "PROCESSOR_DEADLINE_S",
    "REFRESH_TTL_S",
    "BankHit",
    "BankMemory",
    "BankPage",
    "BankUnavailableError",
    "Extraction",
    "Injection",
    "LoadReport",
    "MemoryBank",
    "MemoryProcessor",
    "Profile",
    "ProfileBank",
    "SkippedObject",
    "space_for",
    "validate_profile",
]

log = logging.getLogger("orcamem.bank")

MEMORY_CAPABILITY = "@memory"
MEMORY_TOOLS = ("memory_save", "memory_recall", "memory_list", "memory_delete")
MAX_RAW_INPUT_BYTES = 4 * 1024
"""RawInput is capped at 4 KiB; larger inputs are rejected."""
PROCESSOR_DEADLINE_S = 5.0
"""The processor's model call gets this many seconds, wall clock."""
REFRESH_TTL_S = 2.0
"""A conductor's reads re-sync from the bucket when the last sync is older than this."""
SUMMARY_CHARS = 50
SCHEMA_VERSION = 1
PREFIX = "memory/"
MAX_RECALL = 100
MAX_PAGE = 1000
_CAS_ATTEMPTS = 32
_LOAD_THREADS = 8

_PROFILE_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")
_KEY_RE = re.compile(r"memory/([A-Za-z0-9._-]{1,64})/(mem-[0-9a-f]{8})\.json")

Role = Literal["runner", "conductor"]


def validate_profile(name: Any) -> str:
    """``name`` if it is a valid profile name: 1-64 of ``A-Z a-z 0-9 . _ -``, not ``.``/``..``."""
    if not isinstance(name, str) or not _PROFILE_RE.fullmatch(name) or name in (".", ".."):
        raise InvalidInputError(
            f"invalid profile name {repr(name)[:70]}: use 1-64 characters from A-Z a-z 0-9 . _ - "
            "(e.g. 'researcher')"
        )
    return name


def space_for(profile: str) -> str:
    """The space that backs a profile (what API keys are scoped to): ``profile:<name>``."""
    return f"profile:{validate_profile(profile)}"


def _key(profile: str, memory_id: str) -> str:
    return f"{PREFIX}{profile}/{memory_id}.json"


def _preview(text: str) -> str:
    return " ".join(text.split())[:SUMMARY_CHARS]


# -- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BankMemory:
    """One memory of a profile (the spec's ``AgentMemory``; JSON keys are camelCase)."""

    id: str
    profile_name: str
    raw_input: str
    """What the agent saved, verbatim (audit trail), at most 4 KiB."""
    processed_content: str
    """The retrieval-friendly text (the processor's, or the caller's ``content``)."""
    summary: str
    """At most 50 characters, for lists."""
    category: str
    source: str
    """``explicit`` for every v1 save (``inferred`` is reserved)."""
    confidence: float
    created_at: str
    last_accessed_at: str | None
    access_count: int
    staleness_score: float
    is_active: bool = True
    version: int = SCHEMA_VERSION

    _FIELDS = (
        ("id", "id"),
        ("profile_name", "profileName"),
        ("raw_input", "rawInput"),
        ("processed_content", "processedContent"),
        ("summary", "summary"),
        ("category", "category"),
        ("source", "source"),
        ("confidence", "confidence"),
        ("created_at", "createdAt"),
        ("last_accessed_at", "lastAccessedAt"),
        ("access_count", "accessCount"),
        ("staleness_score", "stalenessScore"),
        ("is_active", "isActive"),
        ("version", "version"),
    )

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, attr) for attr, name in self._FIELDS}

    def encode(self) -> bytes:
        return json.dumps(self.to_json(), ensure_ascii=False, sort_keys=True).encode("utf-8")

    @classmethod
    def decode(cls, body: bytes, key: str | None = None) -> BankMemory:
        """Parse and check a stored object.

        Raises:
            ValueError: not JSON, a missing or mistyped field, or an id or profile that does
                not match ``key``.
        """
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        values: dict[str, Any] = {}
        for attr, name in cls._FIELDS:
            if name not in data:
                if name in ("isActive", "version", "stalenessScore", "lastAccessedAt"):
                    continue
                raise ValueError(f"missing {name!r}")
            values[attr] = data[name]
        checks: list[tuple[str, bool]] = [
            ("id", isinstance(values["id"], str) and is_memory_id(values["id"])),
            (
                "profileName",
                isinstance(values["profile_name"], str)
                and bool(_PROFILE_RE.fullmatch(values["profile_name"])),
            ),
            *(
                (name, isinstance(values[attr], str) and bool(values[attr].strip()))
                for attr, name in (
                    ("raw_input", "rawInput"),
                    ("processed_content", "processedContent"),
                )
            ),
            ("summary", isinstance(values["summary"], str)),
            ("category", values["category"] in scoring.BANK_CATEGORIES),
            ("source", isinstance(values["source"], str)),
            ("confidence", _is_unit(values["confidence"])),
            ("accessCount", _is_count(values["access_count"])),
            ("isActive", isinstance(values.get("is_active", True), bool)),
            ("version", _is_count(values.get("version", SCHEMA_VERSION))),
            (
                "stalenessScore",
                isinstance(values.get("staleness_score", 0.0), (int, float))
                and not isinstance(values.get("staleness_score", 0.0), bool),
            ),
        ]
        for name, ok in checks:
            if not ok:
                raise ValueError(f"bad {name!r}: {str(data.get(name))[:60]!r}")
        for attr, name in (("created_at", "createdAt"), ("last_accessed_at", "lastAccessedAt")):
            value = values.get(attr)
            if value is None and attr == "last_accessed_at":
                continue
            try:
                values[attr] = format_time(parse_time(value))
            except (TypeError, ValueError, AttributeError):
                raise ValueError(f"bad {name!r}: {str(value)[:60]!r}") from None
        values["confidence"] = float(values["confidence"])
        values["staleness_score"] = float(values.get("staleness_score", 0.0))
        if key is not None:
            match = _KEY_RE.fullmatch(key)
            if match is None or match.groups() != (values["profile_name"], values["id"]):
                raise ValueError(
                    f"its id/profile ({values['profile_name']}/{values['id']}) do not match its key"
                )
        return cls(**values)

    def accessed(self, at: str) -> BankMemory:
        """This memory after one more access at ``at`` (staleness recomputed)."""
        last = max(filter(None, (self.last_accessed_at, at)))
        count = self.access_count + 1
        return replace(
            self,
            access_count=count,
            last_accessed_at=last,
            staleness_score=scoring.staleness(
                _days(parse_time(at), last), count, self.confidence, self.category
            ),
        )

    @property
    def anchor(self) -> str:
        """Recency's anchor: the later of ``createdAt`` and ``lastAccessedAt``."""
        return max(filter(None, (self.created_at, self.last_accessed_at)))


def _is_unit(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _days(now: datetime, stamp: str | None) -> float:
    if not stamp:
        return 0.0
    return (now - parse_time(stamp)).total_seconds() / 86400


@dataclass(frozen=True)
class Profile:
    """An agent profile as the bank sees it: its name and the tools it selects."""

    name: str
    tools: tuple[str, ...] = ()

    @property
    def injects(self) -> bool:
        """Opted in: selects ``@memory`` or names any ``memory_*`` tool."""
        return MEMORY_CAPABILITY in self.tools or any(t in MEMORY_TOOLS for t in self.tools)


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

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "processedContent": {"type": "string", "minLength": 1, "maxLength": 1000},
        "summary": {"type": "string", "minLength": 1, "maxLength": SUMMARY_CHARS},
        "category": {"type": "string", "enum": list(scoring.BANK_CATEGORIES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["processedContent", "summary", "category", "confidence"],
    "additionalProperties": False,
}
EXTRACTION_PROMPT = """\
An AI agent wants to remember the note below across its future sessions. Turn it into one \
memory record:
- processedContent: the note restated as one or two short, self-contained sentences that will \
still make sense later (name who or what it is about; no filler).
- summary: a label of at most 50 characters.
- category: preference (how the user or agent likes things done), fact (something true about \
the user, the project or the world), behavior (a procedure the agent should follow), context \
(a short-lived detail of the current situation) or general (anything else).
- confidence: from 0 to 1, how certain and lasting the note is."""


@dataclass(frozen=True)
class Extraction:
    """What the processor made of a raw input.

    ``outcome``: ``extracted`` (the model's fields), ``skipped`` (no model, or the call failed:
    the save proceeds with what the caller supplied) or ``preview`` (the model answered but
    the answer could not be used: the deterministic preview).
    """

    outcome: Literal["extracted", "skipped", "preview"]
    processed_content: str | None = None
    summary: str | None = None
    category: str | None = None
    confidence: float | None = None
    reason: str = ""


class MemoryProcessor:
    """Extracts ``processedContent``, ``summary``, ``category`` and ``confidence`` from a raw
    input with a fast model, under a 5-second deadline.

    Args:
        model: any :class:`~orcamem._kernel.llm.ChatModel` (the bank builds an Anthropic
            client from ``$ANTHROPIC_API_KEY`` and ``$ANTHROPIC_MEMORY_MODEL``); ``None`` skips
            extraction.
        deadline_s: the model call's wall-clock deadline.
    """

    def __init__(self, model: ChatModel | None, *, deadline_s: float = PROCESSOR_DEADLINE_S):
        self.model = model
        self.deadline_s = deadline_s

    def extract(self, raw_input: str) -> Extraction:
        if self.model is None:
            return Extraction("skipped", reason="no model configured (ANTHROPIC_API_KEY unset)")
        try:
            value = self.model.complete_json(
                EXTRACTION_PROMPT,
                raw_input,
                EXTRACTION_SCHEMA,
                deadline_s=self.deadline_s,
                max_tokens=600,
            )
        except ModelOutputError as exc:  # it answered, with nothing usable
            return Extraction("preview", reason=str(exc))
        except Exception as exc:  # unreachable, refused, timed out: skip, never fail the save
            log.warning("memory processor call failed, saving without extraction: %s", exc)
            return Extraction("skipped", reason=str(exc))
        if is_nothing(value) or not isinstance(value, dict):
            return Extraction("preview", reason="the model answered NOTHING")
        content = " ".join(str(value.get("processedContent", "")).split())
        if not content:
            return Extraction("preview", reason="the model's processedContent is blank")
        return Extraction(
            "extracted",
            processed_content=content,
            summary=" ".join(str(value["summary"]).split())[:SUMMARY_CHARS] or _preview(content),
            category=value["category"],
            confidence=float(value["confidence"]),
        )

    def close(self) -> None:
        if self.model is not None:
            self.model.close()


# -- the bank -----------------------------------------------------------------------------------


@dataclass
class _Entry:
    memory: BankMemory
    etag: str


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


AUTO: Any = _Auto()


def _profiles_arg(
    profiles: Mapping[str, Iterable[str]] | Iterable[Profile | Mapping[str, Any]] | None,
) -> dict[str, Profile]:
    out: dict[str, Profile] = {}
    if profiles is None:
        return out
    if isinstance(profiles, Mapping):
        items: list[Any] = [Profile(name, tuple(tools)) for name, tools in profiles.items()]
    else:
        items = list(profiles)
    for item in items:
        if isinstance(item, Mapping):
            tools = item.get("tools", [])
            if isinstance(tools, str) or not all(isinstance(t, str) for t in tools):
                raise InvalidInputError(f"profile {item.get('name')!r}: tools must be a list")
            item = Profile(item.get("name"), tuple(tools))  # type: ignore[arg-type]
        out[validate_profile(item.name)] = Profile(item.name, tuple(item.tools))
    return out


def read_profiles_file(path: str | Path) -> list[Profile]:
    """Profiles from a JSON file: a list of ``{"name": ..., "tools": [...]}`` objects."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"cannot read the profiles file {file}: {exc} (it must be a JSON list of "
            '{"name": ..., "tools": [...]} objects)'
        ) from None
    if not isinstance(data, list) or not all(isinstance(p, dict) for p in data):
        raise InvalidInputError(
            f'{file} must be a JSON list of {{"name": ..., "tools": [...]}} objects'
        )
    return list(_profiles_arg(data).values())


class MemoryBank:
    """Profile-scoped long-lived memory, persisted to an ``objects`` store.

    Args:
        objects: where memories persist (``S3ObjectStore``, ``FileObjectStore``,
            ``MemoryObjectStore``); default: in memory only. The caller closes what it passes.
        profiles: the known profiles and their tools, as ``{"name": ["@memory", ...]}`` or a
            list of ``Profile`` / ``{"name": ..., "tools": [...]}``. Profiles found in storage
            are known too (without tools: they get the tools, but no injection).
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
        self._declared = _profiles_arg(profiles)
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
    ) -> MemoryBank:
        """The bank the environment describes (what a runner and a conductor each build).

        Storage: ``INTERNAL_S3_BUCKET`` (and friends), else ``S3_BUCKET`` (and friends), else in
        memory only, with a warning. Profiles: ``profiles`` plus the profiles file
        (``$ORCAMEM_PROFILES`` or ``$ORCA_HOME/profiles.json``) if it exists. Processor:
        Anthropic with ``$ANTHROPIC_API_KEY`` and ``$ANTHROPIC_MEMORY_MODEL`` when the key is set.
        ``objects`` overrides the storage (e.g. a ``FileObjectStore``; the caller closes it).
        """
        declared = read_profiles_file(memory_bank_profiles_path(environ))
        declared.extend(_profiles_arg(profiles).values())
        owned = objects is None
        settings = memory_bank_s3(environ)
        if objects is not None:
            pass
        elif settings is None:
            log.warning(
                "memory bank: neither INTERNAL_S3_BUCKET nor S3_BUCKET is set: memories are "
                "kept in memory only and are lost when this process ends"
            )
            objects = MemoryObjectStore()
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
        except BaseException:
            if owned:
                objects.close()
            if processor is AUTO and model is not None:
                model.close()
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

    def _now(self) -> str:
        return format_time(self.clock.now())

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
            known = sorted(set(self._declared) | {p for p, m in self._index.items() if m})
        shown = ", ".join(repr(p) for p in known[:20]) or "none"
        raise NotFoundError(
            f"unknown profile {name!r} (known: {shown}): declare it in the profiles file "
            "(ORCAMEM_PROFILES or $ORCA_HOME/profiles.json) or with MemoryBank(profiles=...)"
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
        tools = tuple(tools)
        if not all(isinstance(t, str) for t in tools):
            raise InvalidInputError("tools must be strings such as '@memory' or 'memory_save'")
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
            InvalidInputError: neither text given, a blank or non-text one, over 4 KiB, an
                unknown category, a confidence outside [0, 1]; nothing is written.
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
        if category is not None and category not in scoring.BANK_CATEGORIES:
            raise InvalidInputError(
                f"unknown category {category!r}: use one of {', '.join(scoring.BANK_CATEGORIES)}"
            )
        if confidence is not None and not _is_unit(confidence):
            raise InvalidInputError(f"confidence={confidence!r}: use a number from 0 to 1")
        if summary is not None and (not isinstance(summary, str) or not summary.strip()):
            raise InvalidInputError("summary must be a non-blank string")

        if text is not None:
            processed, default_category, default_confidence = text, "general", 1.0
            short = _preview(summary) if summary is not None else _preview(text)
        else:
            assert raw is not None
            extraction = self.processor.extract(raw)
            if extraction.outcome == "extracted":
                processed = extraction.processed_content or raw
                short = extraction.summary or _preview(processed)
                default_category = extraction.category or "general"
                default_confidence = (
                    extraction.confidence if extraction.confidence is not None else 1.0
                )
            else:
                processed, short, default_category = raw, _preview(raw), "general"
                default_confidence = 0.5 if extraction.outcome == "preview" else 1.0
            if summary is not None:
                short = _preview(summary)
        chosen_category = category or default_category
        chosen_confidence = float(confidence) if confidence is not None else default_confidence
        now = self._now()
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
            key = _key(name, memory.id)
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
    ) -> list[BankHit]:
        """Like ``recall`` without side effects (the dashboard's search).

        Memories must share a topic with the query (a word or a cluster) and score at least
        ``min_score``; best first, at most ``limit``.
        """
        self._read()
        name = self._profile(profile).name
        query = validate_text(query, what="query")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL:
            raise InvalidInputError(f"limit={limit!r}: use a whole number from 1 to {MAX_RECALL}")
        if not isinstance(min_score, (int, float)) or not 0.0 <= min_score <= 1.0:
            raise InvalidInputError(f"minScore={min_score!r}: use a number from 0 to 1")
        return self._rank(name, query, limit=limit, min_score=min_score, exclude=set(exclude))

    def _rank(
        self,
        profile: str,
        query: str,
        *,
        limit: int | None,
        min_score: float,
        exclude: set[str] = frozenset(),  # type: ignore[assignment]
        need_topic: bool = True,
        categories: Sequence[str] | None = None,
    ) -> list[BankHit]:
        memories = [e.memory for e in self._entries(profile)]
        total = sum(m.access_count for m in memories)
        factor = scoring.maturity(total)
        now = self.clock.now()
        wanted = scoring.terms(query)
        hits = []
        for memory in memories:
            if not memory.is_active or memory.id in exclude:
                continue
            if categories is not None and memory.category not in categories:
                continue
            topic = scoring.topic(wanted, scoring.terms(memory.processed_content))
            if need_topic and topic <= 0.0:
                continue
            relevance = scoring.composite(
                age_days=_days(now, memory.anchor),
                access_count=memory.access_count,
                topic_score=topic,
                confidence=memory.confidence,
                maturity_factor=factor,
            )
            if relevance.score >= min_score:
                hits.append(BankHit(memory, relevance))
        hits.sort(key=lambda h: (-h.relevance.score, _newest(h.memory)))
        return hits if limit is None else hits[:limit]

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
        key = _key(name, memory_id)
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
        at = self._now()
        wanted = list(dict.fromkeys(ids))

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
        key = _key(profile, memory_id)
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

        def items(hits: list[BankHit]) -> list[scoring.BlockItem]:
            return [
                scoring.BlockItem(h.memory.id, h.memory.category, h.memory.processed_content)
                for h in hits
            ]

        block, ids = scoring.render_block(items(core), items(relevant))
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
                    _key(p, i): e.etag
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
                    match = _KEY_RE.fullmatch(key)
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
            if _KEY_RE.fullmatch(key) is None:
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
        if category is not None and category not in scoring.BANK_CATEGORIES:
            raise InvalidInputError(
                f"unknown category {category!r}: use one of {', '.join(scoring.BANK_CATEGORIES)}"
            )
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


def _check_page(limit: Any, offset: Any) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit={limit!r}: use a whole number from 1 to {MAX_PAGE}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(f"offset={offset!r}: use a whole number from 0")


def _check_id(memory_id: Any) -> None:
    if not isinstance(memory_id, str) or not is_memory_id(memory_id):
        raise InvalidInputError(
            f"{repr(memory_id)[:40]} is not a memory id: use mem-<8 hex digits>"
        )

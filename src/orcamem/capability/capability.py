"""``Capability``: memory as a host capability, at two fixed points of each turn.

A host (an agent runner, a chat app) makes one ``Capability`` per session. Its settings are
read once, then:

- **before every turn** (:meth:`Capability.prepare_messages` / :meth:`~Capability.prepare_prompt`
  / :meth:`~Capability.before_turn`), memory is searched with the user's message, verbatim, as
  the query, and what it finds is spliced into that turn's context as a ``<memory>`` block that
  tells the model to use it and not to cite it unless asked. One memory is cut at 1,000
  characters, the whole block at 8,000;
- **after every turn** (:meth:`Capability.after_turn`), one small model call extracts at most
  three durable facts from the exchange, which are saved unscoped. The call is not waited on;
  "nothing worth remembering" is a normal outcome, not a failure. With no model configured the
  verified rule-based extractor consolidation uses (``_kernel.claims``) reads the user's words
  instead; its facts are tagged ``rules`` and the outcome names the extractor that ran.
  A fact already in memory is not saved again.

There is no memory tool in the model's tool list: the host invokes both. With ``enabled`` off
nothing is searched, saved, started or created, and the assembled prompt is byte-identical to
the prompt without this feature.

>>> import json, tempfile, pathlib
>>> ws = pathlib.Path(tempfile.mkdtemp())
>>> messages = [{"role": "user", "content": "What is our branching policy?"}]
>>> with Capability(ws, instance_config=ws / "none.json") as memory:   # off by default
...     memory.prepare_messages(messages) == messages
True
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._kernel.claims.turn import EXTRACTOR as RULES
from .._kernel.claims.turn import turn_statements
from .._kernel.clock import Clock, SystemClock, stamp
from .._kernel.llm import ChatModel, bounded, is_nothing
from .._kernel.model import (
    validate_count,
    validate_id,
    validate_messages,
    validate_prompt,
    validate_text,
)
from .._kernel.redact import has_secrets, redact, refuse_secrets
from .._kernel.text import message_text
from ..errors import InvalidInputError, MemoryOffError, ModelError, OrcamemError
from ..recall.blocks.budget import clip
from ..recall.blocks.capability import render_kept
from .providers import MemoryProvider, ProviderError, ProviderStatus, Recalled, Scope, make_provider
from .settings import ResolvedSettings, load_settings

__all__ = [
    "AUTOMATIC_IMPORTANCE",
    "EXTRACTION_PROMPT",
    "EXTRACTION_SCHEMA",
    "MAX_FACTS",
    "Capability",
    "MemoryOffError",
    "SaveOutcome",
    "TurnMemory",
]

log = logging.getLogger("orcamem.capability")

MAX_FACTS = 3
"""At most this many facts are saved after a turn."""
AUTOMATIC_IMPORTANCE = 0.5
"""Importance of automatically saved facts."""
EXTRACTION_DEADLINE_S = 60.0
"""Wall-clock limit of the extraction call (it runs in the background either way)."""
_EXCHANGE_CHARS = 4000


EXTRACTION_PROMPT = """You read one finished exchange between a user and an assistant and pick \
the durable facts worth remembering in later sessions: a preference the user stated, a \
decision they made, a lasting constraint about their project, a lasting fact about them.
Skip small talk, questions, one-off requests, the assistant's own suggestions, and anything \
that is only true for this turn.
Give at most three facts, each one short self-contained sentence.
Most exchanges hold nothing worth remembering: then answer with the single word NOTHING."""

EXTRACTION_SCHEMA = bounded(
    {
        "type": "object",
        "properties": {
            "facts": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_FACTS}
        },
        "required": ["facts"],
    },
    max_string=300,
)


@dataclass(frozen=True)
class TurnMemory:
    """What the before-turn search found."""

    query: str
    block: str
    """The ``<memory>`` block to splice (``""``: splice nothing)."""
    recalled: tuple[Recalled, ...] = ()
    error: str | None = None
    """Why nothing was found, when the provider failed (the turn goes on without memory)."""


@dataclass(frozen=True)
class SaveOutcome:
    """What the after-turn extraction did. Never raised: returned by the background future."""

    facts: tuple[str, ...] = ()
    """The facts extracted (at most three) and saved."""
    ids: tuple[str | None, ...] = ()
    nothing: bool = False
    """The model found nothing worth remembering (a normal outcome)."""
    error: str | None = None
    """Why nothing (or not everything) was saved: the model or the provider failed."""
    dropped: tuple[str, ...] = field(default_factory=tuple)
    """Facts refused: beyond the third, duplicates, already in memory, or holding a secret."""
    extractor: str = ""
    """What extracted them: ``model:<id>``, or ``rules`` (no model configured)."""


class Capability:
    """The memory capability of one host session in one workspace.

    Args:
        workspace: the workspace folder (settings in its ``config.json``; the built-in
            provider's files in its ``memory/``).
        instance_config: the app's ``config.json`` (default ``$ORCA_HOME/config.json``).
        model: the small chat model for after-turn extraction (``_kernel.llm``); none: the
            rule-based extractor saves what the user plainly said about themself.
        session_id, agent_id: who is searching; a memory pinned to another session or agent
            is not found. Automatic saves stay unscoped.
        provider: a ready provider instead of the one the settings name (hosts and tests);
            the caller keeps it and closes it.
        providers: ``name → factory(workspace, clock=...)`` for providers a host brings (the
            engine provider, ``orcamem.interfaces.engine_provider.ENGINE``); the settings pick
            one by name, and the capability closes what it made.
        clock: where "now" comes from (the built-in provider's decay and stamps).
        extraction_deadline_s: the wall-clock limit of one extraction call.

    Settings are read here, once: a change applies to sessions started afterwards.
    """

    def __init__(
        self,
        workspace: str | Path,
        *,
        instance_config: str | Path | None = None,
        model: ChatModel | None = None,
        session_id: str | None = None,
        agent_id: str | None = None,
        provider: MemoryProvider | None = None,
        providers: Mapping[str, Callable[..., MemoryProvider]] | None = None,
        clock: Clock | None = None,
        extraction_deadline_s: float = EXTRACTION_DEADLINE_S,
    ) -> None:
        self.workspace = Path(workspace)
        self.resolved: ResolvedSettings = load_settings(
            self.workspace, instance_config=instance_config
        )
        self.settings = self.resolved.settings
        self.model = model
        self.scope = Scope(session=session_id, agent=agent_id)
        self.clock = clock
        self.extraction_deadline_s = extraction_deadline_s
        self._provider = provider
        self._owns_provider = provider is None
        self._factories = dict(providers or {})
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: list[Future[SaveOutcome]] = []
        self._closed = False

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    @property
    def provider(self) -> MemoryProvider:
        """The selected provider, made on first use (nothing starts before memory is used)."""
        with self._lock:
            factory = self._factories.get(self.settings.provider)
            if self._provider is None and factory is not None:
                self._provider = factory(self.workspace, clock=self.clock)
            if self._provider is None:
                self._provider = make_provider(
                    self.settings.provider,
                    self.workspace,
                    half_life_days=self.settings.decay_half_life_days,
                    clock=self.clock,
                )
            return self._provider

    def _require_on(self) -> None:
        if not self.enabled:
            raise MemoryOffError(
                f"memory is off in {self.workspace}: set defaults.memory.enabled to true in its "
                "config.json (it applies to sessions started afterwards)"
            )

    # -- before the turn --------------------------------------------------------------------

    def _turn_scope(self, turn_id: str | None) -> Scope:
        if turn_id is None:
            return self.scope
        return Scope(self.scope.session, self.scope.agent, validate_id(turn_id, what="turn_id"))

    def before_turn(self, user_message: str, *, turn_id: str | None = None) -> TurnMemory:
        """Search with ``user_message`` verbatim and build the block (``""`` when memory is off,
        ``autoLoad`` is off, nothing matched, or the provider failed). With ``turn_id``, a
        memory pinned to that turn (of this session) is found too."""
        validate_prompt(user_message, what="user_message")
        scope = self._turn_scope(turn_id)
        if not self.enabled or not self.settings.auto_load or not user_message.strip():
            return TurnMemory(user_message, "")
        try:
            found = self.provider.search(
                user_message,
                top_k=self.settings.top_k,
                include_archived=self.settings.include_archived,
                scope=scope,
                destination="main-context",
            )
        except (ProviderError, OrcamemError) as exc:
            log.warning("memory search failed, the turn goes on without memory: %s", exc)
            return TurnMemory(user_message, "", error=str(exc))
        block, kept = render_kept(found)
        return TurnMemory(user_message, block, kept)

    def prepare_messages(
        self, messages: Sequence[dict[str, Any]], *, turn_id: str | None = None
    ) -> list[dict[str, Any]]:
        """``messages`` with the memory block spliced in as a system message just before the
        last user message (``turn_id``: as in :meth:`before_turn`). Off, or nothing found: the
        same messages, unchanged."""
        messages = validate_messages(messages)
        index = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"),
            None,
        )
        if index is None or not self.enabled:
            return list(messages)
        turn = self.before_turn(message_text(messages[index].get("content")), turn_id=turn_id)
        if not turn.block:
            return list(messages)
        return [*messages[:index], {"role": "system", "content": turn.block}, *messages[index:]]

    def prepare_prompt(self, prompt: str, user_message: str, *, turn_id: str | None = None) -> str:
        """``prompt`` followed by the memory block for ``user_message`` (``turn_id``: as in
        :meth:`before_turn`); off, or nothing found: ``prompt`` itself."""
        validate_prompt(prompt, what="prompt")
        validate_prompt(user_message, what="user_message")
        if not self.enabled:
            return prompt
        block = self.before_turn(user_message, turn_id=turn_id).block
        return f"{prompt}\n\n{block}" if block else prompt

    # -- after the turn ---------------------------------------------------------------------

    def after_turn(self, user_message: str, reply: str) -> Future[SaveOutcome] | None:
        """Queue the extraction of at most three durable facts from the finished exchange and
        return at once (the future is for hosts and tests; nobody has to wait on it).

        Returns None, doing nothing, when memory or ``autoSave`` is off.
        """
        validate_prompt(user_message, what="user_message")
        validate_prompt(reply, what="reply")
        if not self.enabled or not self.settings.auto_save:
            return None
        with self._lock:
            if self._closed:
                return None
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="orcamem-capability"
                )
            future = self._executor.submit(self._extract_and_save, user_message, reply)
            self._pending = [f for f in self._pending if not f.done()] + [future]
        return future

    @property
    def extractor(self) -> str:
        """What the after-turn save extracts with: ``model:<id>``, or ``rules``."""
        return f"model:{getattr(self.model, 'id', 'chat')}" if self.model is not None else RULES

    def _by_rules(self, user_message: str, reply: str) -> tuple[list[str], list[str], bool]:
        """``(facts, dropped, nothing)`` from the rule-based extractor (the user's words only)."""
        messages = [
            {"role": "user", "text": redact(user_message).text},
            {"role": "assistant", "text": redact(reply).text},
        ]
        found = [s.text for s in turn_statements(messages, stamp(self.clock or SystemClock()))]
        return found[:MAX_FACTS], found[MAX_FACTS:], not found

    def _extract(self, user_message: str, reply: str) -> tuple[list[str], list[str], bool]:
        """``(facts, dropped, nothing)`` from one model call (or the rules without a model)."""
        if self.model is None:
            return self._by_rules(user_message, reply)
        exchange = (
            f"User: {clip(redact(user_message).text, _EXCHANGE_CHARS, collapse=False)}\n\n"
            f"Assistant: {clip(redact(reply).text, _EXCHANGE_CHARS, collapse=False)}"
        )
        assert self.model is not None
        answer = self.model.complete_json(
            EXTRACTION_PROMPT,
            exchange,
            EXTRACTION_SCHEMA,
            deadline_s=self.extraction_deadline_s,
            max_tokens=400,
        )
        if is_nothing(answer):
            return [], [], True
        items = answer.get("facts") if isinstance(answer, dict) else None
        if not isinstance(items, list):
            raise ModelError(f"the extraction answer has no list of facts: {str(answer)[:200]}")
        facts: list[str] = []
        dropped: list[str] = []
        for item in items:
            text = " ".join(item.split()) if isinstance(item, str) else ""
            if not text or is_nothing(text):
                continue
            if text in facts or has_secrets(text) or len(facts) >= MAX_FACTS:
                dropped.append(text)
                continue
            facts.append(text)
        return facts, dropped, not facts and not dropped

    def _known(self, fact: str) -> bool:
        """Whether ``fact`` is already in memory, word for word (case and spacing aside)."""
        wanted = " ".join(fact.lower().split())
        found = self.provider.search(
            fact, top_k=5, include_archived=True, scope=Scope(), destination="after-turn-dedupe"
        )
        return any(" ".join(r.text.lower().split()) == wanted for r in found)

    def _extract_and_save(self, user_message: str, reply: str) -> SaveOutcome:
        extractor = self.extractor
        tags = (RULES,) if self.model is None else ()
        try:
            facts, dropped, nothing = self._extract(user_message, reply)
        except Exception as exc:  # the background path never raises into the host
            log.warning("memory extraction failed; nothing saved this turn: %s", exc)
            return SaveOutcome(error=f"{type(exc).__name__}: {exc}", extractor=extractor)
        if nothing or not facts:
            return SaveOutcome(nothing=nothing, dropped=tuple(dropped), extractor=extractor)
        ids: list[str | None] = []
        saved: list[str] = []
        for fact in facts:
            try:
                if self._known(fact):
                    dropped.append(fact)
                    continue
                ids.append(
                    self.provider.save(
                        fact, importance=AUTOMATIC_IMPORTANCE, tags=tags, scope=Scope()
                    )
                )
                saved.append(fact)
            except Exception as exc:
                log.warning("memory save failed: %s", exc)
                return SaveOutcome(
                    tuple(saved),
                    tuple(ids),
                    error=f"{type(exc).__name__}: {exc}",
                    dropped=tuple(dropped),
                    extractor=extractor,
                )
        return SaveOutcome(tuple(saved), tuple(ids), dropped=tuple(dropped), extractor=extractor)

    def wait(self, timeout: float | None = None) -> list[SaveOutcome]:
        """Wait for queued saves (tests, or a host about to exit); their outcomes."""
        with self._lock:
            pending = list(self._pending)
        return [future.result(timeout=timeout) for future in pending]

    # -- explicit use -----------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        scope: Scope | None = None,
        importance: float = AUTOMATIC_IMPORTANCE,
        tags: tuple[str, ...] = (),
    ) -> str | None:
        """Save one memory on purpose, optionally pinned to a session, agent or turn.

        Raises:
            MemoryOffError: memory is off in this workspace.
            InvalidInputError: bad text or tags, or a text holding a secret (named by kind).
            ProviderError: the provider failed.
        """
        self._require_on()
        refuse_secrets(validate_text(text, what="text"), what="text")
        if isinstance(tags, str):
            raise InvalidInputError("tags must be a list of non-blank strings, not one string")
        for tag in tags:
            validate_id(tag, what="tag")
        return self.provider.save(text, importance=importance, tags=tags, scope=scope or Scope())

    def search(
        self, query: str, *, scope: Scope | None = None, top_k: int | None = None
    ) -> list[Recalled]:
        """Search on purpose (``scope`` defaults to this session's).

        Raises:
            MemoryOffError: memory is off in this workspace.
            ProviderError: the provider failed.
        """
        self._require_on()
        validate_text(query, what="query")
        if top_k is not None:
            validate_count(top_k, what="top_k", low=0, high=1000)  # 0: the settings' top_k
        return self.provider.search(
            query,
            top_k=top_k or self.settings.top_k,
            include_archived=self.settings.include_archived,
            scope=scope or self.scope,
            destination="explicit",
        )

    def status(self) -> ProviderStatus:
        """The selected provider's state, by one real call, with its own notes."""
        return self.provider.check()

    # -- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Let queued saves finish, then stop the provider it made (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            executor = self._executor
            provider = self._provider if self._owns_provider else None
        if executor is not None:
            executor.shutdown(wait=True)
        if provider is not None:
            provider.close()

    def __enter__(self) -> Capability:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

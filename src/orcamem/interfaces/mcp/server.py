"""MCP server: five ``orma_*`` tools over a ``Memory``, for Claude Code, Cursor, Windsurf.

Built on the official ``mcp`` SDK (2.x, ``MCPServer``). Two transports:

- **stdio** (``run_stdio``; ``orcamem mcp --db PATH``): the local
  user, no keys, every space reachable.
- **streamable HTTP** (``http_app`` standalone, or ``install`` on the app from
  ``create_app``, at ``/mcp``): every HTTP request is authenticated on its own by
  ``Authorization: Bearer <key>`` (or ``x-api-key``) when the server requires keys; the key's
  ``Principal`` decides which spaces the tools may touch. A request without a valid key gets a
  401 JSON error; a tool call naming a space the key is not scoped to gets a tool error (the
  ``ForbiddenError`` message), and nothing is read or written.

Every tool takes a ``space`` and hands it to ``authorize(space) -> space`` before anything
else; library errors come back as MCP tool errors carrying the ``OrcamemError`` message,
never a traceback.

``role`` in ``orma_remember`` is recorded as the tag ``role:<role>`` on the stored memory
(``source`` stays ``explicit``: the agent asked for it).

Given a Memory Bank (``build_server(..., bank=)``, or ``app.state.bank`` set before
``install``), the server also has the bank's four tools (``BANK_TOOLS``: ``memory_save``,
``memory_recall``, ``memory_list``, ``memory_delete``). Seed 002: "Every tool requires session
context and operates against the session's profile". A session is bound to one profile: on
stdio the server's (``orcamem mcp --profile NAME`` / ``$ORCAMEM_PROFILE``), over HTTP the MCP
URL's query parameter (``/mcp?profile=NAME``; the endpoint is stateless, so every request of a
session carries it). A middleware (the SDK's documented way to refuse or rewrite messages)
lists and runs a ``memory_*`` tool only when that profile selects it (``@memory``, or the
tool by name: ``MemoryBank.memory_tools``); every call also authorizes ``profile:<name>``.
The tools' ``profile`` argument is kept for old clients and must name the session's profile.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from ... import __version__
from ..._kernel.config import Config
from ..._kernel.model import CATEGORIES, validate_space
from ..._kernel.names import META_KEY, PROFILE
from ..._kernel.redact import redact
from ...bank import MEMORY_TOOLS, MemoryBank, space_for, validate_profile
from ...engine.memory import Memory
from ...errors import InvalidInputError, OrcamemError
from ...recall.filters import KINDS as HIT_KINDS
from .stdio import serve_stdio

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from starlette.applications import Starlette
    from starlette.types import Receive, Scope, Send

    from ...engine.keys import ApiKeys

__all__ = [
    "BANK_TOOLS",
    "KINDS",
    "PROFILE_PARAM",
    "TOOLS",
    "build_server",
    "current_request",
    "http_app",
    "install",
    "run_stdio",
]

TOOLS = ("orma_recall", "orma_remember", "orma_forbid", "orma_facts", "orma_forget")
DELETE_SPACE_TOOL = "orma_delete_space"
"""Offered only when the server is built with ``delete_space=True`` (``orcamem mcp
--allow-delete-space``): seed 003's server exposes exactly ``TOOLS``, and deleting a whole
space is a person's decision, which the host turns on."""
BANK_TOOLS = MEMORY_TOOLS
"""The Memory Bank's four tools (issue 5), served when ``build_server`` is given a bank."""
KINDS = (*CATEGORIES, "anti_pattern")
"""``orma_remember`` kinds: the memory categories, plus ``anti_pattern`` (a forbidden rule)."""

PROFILE_PARAM = "profile"
"""The MCP URL's query parameter that binds an HTTP session to a profile: ``/mcp?profile=NAME``."""
ROLE_TAG = "role:"
PRINCIPAL_SCOPE_KEY = "orcamem.principal"
"""Where the HTTP endpoint leaves the caller's ``Principal`` in the ASGI scope."""

INSTRUCTIONS = """\
orcamem is this user's durable long-term memory, shared across sessions and tools.
Call orma_recall with the task or question before you start work that may depend on earlier \
sessions; obey every [FORBIDDEN: ...] line it returns. Call orma_remember when the user states \
a preference, a decision or a fact worth keeping; call orma_forbid when they tell you to stop \
doing something. Use orma_facts to review what is stored and orma_forget to close what is \
wrong or obsolete. Keep one space per project or user (default: "default")."""

# -- argument and result shapes (module level: the SDK resolves these annotations) ---------

Kind = Literal[KINDS]  # type: ignore[valid-type]
Space = Annotated[
    str,
    Field(
        description=(
            "Memory space: the isolation unit (a project, user or tenant). 1-128 characters "
            "of A-Z a-z 0-9 . _ : @ -. Use the same space for everything about one project."
        )
    ),
]
Query = Annotated[
    str,
    Field(
        description=(
            "What you need to know, in plain words: the user's question or the task at hand "
            "(e.g. 'how do we deploy the API?')."
        )
    ),
]
Text = Annotated[
    str,
    Field(
        description=(
            "The memory, as one self-contained sentence that will still make sense in a "
            "later session (e.g. 'We deploy the API with Helm on Fridays.'). No secrets."
        )
    ),
]
KindArg = Annotated[
    Kind,
    Field(
        description=(
            "What it is: fact, preference, decision, rule (a positive rule to follow), note, "
            "state, event, or anti_pattern (a mistake that must never be repeated: stored as a "
            "forbidden rule, like orma_forbid)."
        )
    ),
]
Role = Annotated[
    str,
    Field(
        pattern=PROFILE.pattern,
        description=(
            "Who it came from: 'user' (the person said or decided it) or 'assistant' (you "
            "concluded it); another agent may give its own name. Stored as the tag role:<role>."
        ),
    ),
]
Rule = Annotated[
    str,
    Field(
        description=(
            "The forbidden behaviour, stated as the rule (e.g. 'Never chain PowerShell "
            "commands with semicolons')."
        )
    ),
]
Always = Annotated[
    bool,
    Field(
        description="Show the rule in every recall, not only where the query bears on it "
        "(e.g. a house style that applies to every answer)."
    ),
]
History = Annotated[
    bool,
    Field(description="Also list memories that were superseded or closed (inactive)."),
]
HitKindArg = Annotated[
    Literal[HIT_KINDS] | None,  # type: ignore[valid-type]
    Field(description="Only 'passage' (conversation lines as said) or only 'memory' hits."),
]
SessionArg = Annotated[
    str | None, Field(max_length=256, description="Only what was said or stored in this session.")
]
SpeakerArg = Annotated[
    str | None,
    Field(max_length=256, description="Only conversation lines said by this role ('user', …)."),
]
SinceArg = Annotated[
    str | None,
    Field(
        max_length=64,
        description="ISO-8601 (e.g. '2026-10-01T00:00:00Z'): only what occurred at or after it.",
    ),
]
UntilArg = Annotated[
    str | None,
    Field(max_length=64, description="ISO-8601, at or after since: only what occurred up to it."),
]
CategoryArg = Annotated[
    Literal[CATEGORIES] | None,  # type: ignore[valid-type]
    Field(description="Only memories of this category (fact, preference, decision, …)."),
]
MetadataArg = Annotated[
    dict[str, str] | None,
    Field(
        description="Only conversation lines whose episode metadata holds each of these string "
        f"values (keys: {META_KEY.rule})."
    ),
]
StateId = Annotated[
    str,
    Field(
        description=("The memory to close: its id 'mem-xxxxxxxx' from orma_facts or orma_remember.")
    ),
]


class Stored(TypedDict):
    """What ``orma_remember`` and ``orma_forbid`` return."""

    id: str
    space: str
    kind: str
    category: str
    forbidden: bool
    tags: list[str]


class Fact(TypedDict):
    id: str
    category: str
    text: str
    forbidden: bool
    active: bool
    superseded_by: str | None
    tags: list[str]
    source: str
    created_at: str
    updated_at: str


class Facts(TypedDict):
    """What ``orma_facts`` returns."""

    space: str
    count: int
    facts: list[Fact]


Confirm = Annotated[
    str,
    Field(
        description=(
            "The space name again, exactly: a typed confirmation that the user asked for the "
            "whole space to be deleted."
        )
    ),
]


class SpaceDeleted(TypedDict):
    """What ``orma_delete_space`` returns: the space and what was deleted, by kind."""

    space: str
    deleted: dict[str, int]


class Forgotten(TypedDict):
    """What ``orma_forget`` returns: the memory it closed, when, and why."""

    forgotten: str
    space: str
    active: bool
    closed_at: str


# -- the server ------------------------------------------------------------------------------

_request: ContextVar[Any] = ContextVar("orcamem_mcp_request", default=None)
"""The HTTP request (a Starlette ``Request``) of the tool call being authorized, if any."""


_STORED_TEXT = ("rawInput", "processedContent", "summary")


def _shown(memory: dict[str, Any]) -> dict[str, Any]:
    """A bank memory as a tool result: a tool's answer goes to the model, so the stored texts
    are redacted (saves refuse secrets, but a memory stored before that rule may hold one)."""
    return {
        k: redact(v).text if k in _STORED_TEXT and isinstance(v, str) else v
        for k, v in memory.items()
    }


class _Server(MCPServer[Any]):
    """The SDK's server, with arguments that fail the tool's schema told in orcamem's words:
    the SDK answered with pydantic's text ("1 validation error for orma_rememberArguments
    … For further information visit https://errors.pydantic.dev/…")."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            told = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: "
                f"{error['msg'][0].lower()}{error['msg'][1:]}"
                for error in cause.errors(include_url=False)
            )
            raise ToolError(f"bad arguments for {name}: {told}") from cause


def current_request() -> Any:
    """The HTTP request that carried the current tool call (None on stdio)."""
    return _request.get()


def _http_request(ctx: Context) -> Any:
    try:
        return ctx.request_context.request
    except ValueError:  # no request context: called in-process outside a session
        return None


def build_server(
    memory: Memory,
    *,
    authorize: Callable[[str], str] | None = None,
    bank: MemoryBank | None = None,
    profile: str | None = None,
    delete_space: bool = False,
) -> MCPServer[Any]:
    """The MCP server with the five ``orma_*`` tools over ``memory``.

    Args:
        memory: an open ``Memory`` (the caller closes it). Its default space is the tools'
            default ``space``.
        authorize: called with every ``space`` argument before the tool runs; returns the
            space to use or raises an ``OrcamemError`` (e.g. ``ForbiddenError``). During the
            call, ``current_request()`` is the HTTP request that carried it (None on stdio).
            None: any valid space (the local user).
        bank: a Memory Bank: adds the four ``memory_*`` tools (``BANK_TOOLS``), offered to a
            session whose profile selects them, each authorized as ``profile:<name>``.
        profile: the profile every session of this server is bound to (stdio); None: each
            HTTP request's ``?profile=`` (no profile: no ``memory_*`` tools).
        delete_space: also offer ``orma_delete_space`` (``DELETE_SPACE_TOOL``).
    """
    check = authorize or validate_space
    if profile is not None:
        validate_profile(profile)
    default_space = memory.space
    server: MCPServer[Any] = _Server(
        "orcamem",
        title="orcamem memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    def scoped(ctx: Context, space: str) -> str:
        token = _request.set(_http_request(ctx))
        try:
            return check(space)
        finally:
            _request.reset(token)

    def failing(exc: OrcamemError) -> ToolError:
        return ToolError(str(exc))

    def stored(record: Any, kind: str) -> Stored:
        return {
            "id": record.id,
            "space": record.space,
            "kind": kind,
            "category": record.category,
            "forbidden": record.prohibited,
            "tags": list(record.tags),
        }

    @server.tool(
        name="orma_recall",
        title="Recall memory",
        description=(
            "Recall what is remembered that is relevant to `query`. Returns one plain-text "
            "memory block, ready to read: a short header, then forbidden rules first as "
            "[FORBIDDEN: ...] lines (hard constraints: never do, suggest or mention what they "
            "forbid), then facts, preferences and decisions as [subject.attribute: value] and "
            "earlier conversation lines as [LOG: date text]. Call it before you start a task "
            "or answer anything that may depend on earlier sessions (the user's preferences, "
            "project decisions, past mistakes), with the task or question as the query. "
            "Read-only and fast (no model call). If nothing is stored yet, it says so."
        ),
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        structured_output=False,
    )
    def orma_recall(
        query: Query,
        ctx: Context,
        space: Space = default_space,
        kind: HitKindArg = None,
        session: SessionArg = None,
        role: SpeakerArg = None,
        since: SinceArg = None,
        until: UntilArg = None,
        category: CategoryArg = None,
        metadata: MetadataArg = None,
    ) -> str:
        filters = {
            "kind": kind,
            "session": session,
            "role": role,
            "since": since,
            "until": until,
            "category": category,
            "metadata": metadata or {},
        }
        try:
            space = scoped(ctx, space)
            block = memory.recall(query, space=space, filters=filters, surface="mcp")
        except OrcamemError as exc:
            raise failing(exc) from None
        narrowed = " with these filters" if any(filters.values()) else ""
        return block or f"Nothing in memory space {space!r} matches this query{narrowed} yet."

    @server.tool(
        name="orma_remember",
        title="Remember",
        description=(
            "Store one durable memory that must survive this session: a project decision, an "
            "architecture rule, a user preference or constraint, a fact. Write it as one "
            "self-contained sentence. Set kind='anti_pattern' for a mistake that must never "
            "be repeated (stored as a forbidden rule, exactly like orma_forbid). Returns the "
            "stored memory as JSON with its id (mem-xxxxxxxx, which orma_forget takes). Call it "
            "when the user states a preference or decision, corrects you, or asks you to "
            "remember something; never store secrets or whole conversations."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )
    def orma_remember(
        text: Text,
        ctx: Context,
        kind: KindArg = "fact",
        role: Role = "user",
        space: Space = default_space,
    ) -> Stored:
        try:
            space = scoped(ctx, space)
            tags = [ROLE_TAG + role]
            if kind == "anti_pattern":
                # Memory.forbid's arguments, plus the role tag it cannot take.
                record = memory.remember(
                    text, category="rule", prohibited=True, importance=1.0, tags=tags, space=space
                )
            else:
                record = memory.remember(text, category=kind, tags=tags, space=space)
        except OrcamemError as exc:
            raise failing(exc) from None
        return stored(record, kind)

    @server.tool(
        name="orma_forbid",
        title="Forbid",
        description=(
            "Register a hard negative rule: something that must never be done, suggested or "
            "mentioned (e.g. 'Never chain PowerShell commands with semicolons'). From then on "
            "every orma_recall in the space whose query bears on it (a shared word or topic) "
            "shows it first, as [FORBIDDEN: rule]; with always=true every orma_recall does. "
            "Returns the rule as JSON with its id. Call it as soon as the user tells you to "
            "stop doing something or names a mistake not to repeat."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )
    def orma_forbid(
        rule: Rule, ctx: Context, space: Space = default_space, always: Always = False
    ) -> Stored:
        try:
            space = scoped(ctx, space)
            record = memory.forbid(rule, space=space, always=always)
        except OrcamemError as exc:
            raise failing(exc) from None
        return stored(record, "anti_pattern")

    @server.tool(
        name="orma_facts",
        title="List facts",
        description=(
            "List the memories stored in the space without searching: facts, preferences, "
            "decisions, rules and forbidden rules, oldest first. Returns JSON {space, count, "
            "facts: [{id, category, text, forbidden, active, superseded_by, tags, ...}]}. With "
            "include_history=true it also lists memories that were superseded or closed "
            "(active=false). Call it to review what is known, or to find the id to pass to "
            "orma_forget; use orma_recall instead to get what is relevant to a task."
        ),
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    def orma_facts(
        ctx: Context, space: Space = default_space, include_history: History = False
    ) -> Facts:
        try:
            space = scoped(ctx, space)
            records = memory.facts(space=space, include_history=include_history)
        except OrcamemError as exc:
            raise failing(exc) from None
        facts: list[Fact] = [
            {
                "id": r.id,
                "category": r.category,
                "text": redact(r.content).text,
                "forbidden": r.prohibited,
                "active": r.active,
                "superseded_by": r.superseded_by,
                "tags": list(r.tags),
                "source": r.source,
                "created_at": r.created_at,
                "updated_at": r.updated_at,
            }
            for r in records
        ]
        return {"space": space, "count": len(facts), "facts": facts}

    @server.tool(
        name="orma_forget",
        title="Forget",
        description=(
            "Close one memory by its id (mem-xxxxxxxx, from orma_facts or orma_remember): it "
            "is no longer recalled as current but stays in orma_facts(include_history=true). "
            "Returns JSON {forgotten: id, space, active: false, closed_at}; an unknown id is an "
            "error that says so. Call it when a memory is wrong or obsolete, e.g. a decision "
            "that was reversed or a rule that no longer applies."
        ),
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    )
    def orma_forget(state_id: StateId, ctx: Context, space: Space = default_space) -> Forgotten:
        try:
            space = scoped(ctx, space)
            closed = memory.close_memory(state_id, space=space)
        except OrcamemError as exc:
            raise failing(exc) from None
        return {
            "forgotten": closed.id,
            "space": space,
            "active": closed.active,
            "closed_at": closed.updated_at,
        }

    if delete_space:

        @server.tool(
            name=DELETE_SPACE_TOOL,
            title="Delete a space",
            description=(
                "Delete a whole memory space: every episode, memory, rule and audit entry in "
                "it, irreversibly (GDPR's 'forget this user'). `confirm` must repeat the space "
                "name. Returns JSON {space, deleted: {episodes, memories, ...}}. Call it only "
                "when the user explicitly asks for everything about a user or project to be "
                "deleted; use orma_forget for one wrong memory."
            ),
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=True, idempotent_hint=False
            ),
        )
        def orma_delete_space(
            confirm: Confirm, ctx: Context, space: Space = default_space
        ) -> SpaceDeleted:
            try:
                space = scoped(ctx, space)
                if confirm != space:
                    raise InvalidInputError(
                        f"confirm={confirm!r} does not repeat the space name {space!r}: "
                        "nothing was deleted"
                    )
                gone = memory.delete_space(space)
            except OrcamemError as exc:
                raise failing(exc) from None
            return {"space": space, "deleted": gone}

    if bank is not None:

        def authorized(request: Any, space: str) -> None:
            token = _request.set(request)
            try:
                check(space)
            finally:
                _request.reset(token)

        gate = _BankGate(bank, profile, authorized)
        server.middleware.append(gate)
        _add_bank_tools(server, gate, scoped, failing)
    return server


# -- the Memory Bank's tools (issue 5) -------------------------------------------------------

ProfileArg = Annotated[
    str | None,
    Field(
        pattern=PROFILE.pattern,
        description="Leave it out: the tool works on your session's profile. Kept for older "
        "clients; a name other than the session's profile is refused.",
    ),
]
BankCategoryArg = Literal["preference", "fact", "behavior", "context", "general"]


class BankEntry(TypedDict):
    """One Memory Bank entry."""

    id: str
    profileName: str
    rawInput: str
    processedContent: str
    summary: str
    category: str
    source: str
    confidence: float
    createdAt: str
    lastAccessedAt: str | None
    accessCount: int
    stalenessScore: float
    isActive: bool
    version: int


class BankRecallHit(TypedDict):
    memory: BankEntry
    score: float
    relevance: dict[str, Any]


class BankRecalled(TypedDict):
    """What ``memory_recall`` returns."""

    profile: str
    query: str
    hits: list[BankRecallHit]


class BankListed(TypedDict):
    """What ``memory_list`` returns."""

    profile: str
    total: int
    nextOffset: int | None
    memories: list[BankEntry]


class BankDeleted(TypedDict):
    """What ``memory_delete`` returns."""

    deleted: str
    profile: str


def _session_profile(request: Any, bound: str | None) -> str | None:
    """The session's profile: the server's (stdio), else the HTTP request's ``?profile=``."""
    if bound is not None or request is None:
        return bound
    return request.query_params.get(PROFILE_PARAM) or None


class _BankGate:
    """Offers a ``memory_*`` tool only to a session whose profile selects it.

    As SDK middleware it drops the tools the session may not use from ``tools/list`` and
    refuses a call to one before its arguments are read; the tools call ``profile`` too, so a
    call that bypasses the middleware (in-process) is gated the same way.
    """

    def __init__(
        self,
        bank: MemoryBank,
        bound: str | None,
        authorized: Callable[[Any, str], None] = lambda request, space: None,
    ) -> None:
        self.bank = bank
        self.bound = bound
        self.authorized = authorized  # raises unless the request's key may reach the space

    def refusal(self, tool: str, request: Any) -> str | None:
        """Why this session may not use ``tool`` (None: it may)."""
        name = _session_profile(request, self.bound)
        if name is None:
            return (
                f"{tool} needs a profile bound to this MCP session: start the server with "
                "`orcamem mcp --profile NAME` (or ORCAMEM_PROFILE=NAME), or over HTTP connect "
                f"to /mcp?{PROFILE_PARAM}=NAME"
            )
        try:  # the key first: what the bank says of a profile is only for those who may see it
            self.authorized(request, space_for(name))
            offered = self.bank.memory_tools(name)
        except OrcamemError as exc:
            return f"{tool} is not available in this session: {exc}"
        if tool in offered:
            return None
        return (
            f"{tool} is not available to profile {name!r}: its tools select neither @memory "
            f'nor {tool} (add "@memory" to its tools in the profiles file, $ORCAMEM_PROFILES or '
            "$ORCA_HOME/profiles.json, and restart the server)"
        )

    def profile(self, ctx: Context, tool: str, given: str | None) -> str:
        """The session's profile for a call of ``tool``, if it may use it."""
        request = _http_request(ctx)
        reason = self.refusal(tool, request)
        if reason is not None:
            raise ToolError(reason)
        name = _session_profile(request, self.bound)
        assert name is not None  # refusal() said why otherwise
        if given is not None and given != name:
            raise InvalidInputError(
                f"profile={given!r} is not this session's profile {name!r}: the memory tools "
                "work on the session's profile only; leave profile out"
            )
        return name

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        import anyio.to_thread

        if ctx.method == "tools/call":
            tool = (ctx.params or {}).get("name")
            if tool in BANK_TOOLS:
                reason = await anyio.to_thread.run_sync(self.refusal, tool, ctx.request)
                if reason is not None:
                    return CallToolResult(
                        content=[TextContent(type="text", text=reason)], is_error=True
                    )
        if ctx.method != "tools/list":
            return await call_next(ctx)
        result = await call_next(ctx)
        hidden = await anyio.to_thread.run_sync(self._hidden, ctx.request)
        # The SDK serializes a result inside the chain: here it is the wire dict already,
        # or None for a tools/list sent as a notification (no id: nothing is answered)
        if not hidden or not isinstance(result, dict):
            return result
        return {**result, "tools": [t for t in result["tools"] if t["name"] not in hidden]}

    def _hidden(self, request: Any) -> set[str]:
        return {tool for tool in BANK_TOOLS if self.refusal(tool, request) is not None}


def _add_bank_tools(
    server: MCPServer[Any],
    gate: _BankGate,
    scoped: Callable[[Context, str], str],
    failing: Callable[[OrcamemError], ToolError],
) -> None:
    """Register ``memory_save``, ``memory_recall``, ``memory_list`` and ``memory_delete``."""
    bank = gate.bank

    def profile_of(ctx: Context, tool: str, given: str | None) -> str:
        name = gate.profile(ctx, tool, given)
        scoped(ctx, space_for(name))  # the key must allow the space profile:<name>
        return name

    @server.tool(
        name="memory_save",
        title="Save to the memory bank",
        description=(
            "Save one long-lived memory for your profile: a preference, a fact, a behaviour "
            "to follow, or short-lived context. Give `rawInput` (free text, at most 4 KiB: a "
            "fast model extracts the content, a <50-character summary, the category and a "
            "confidence) or pre-structured `content` with optional `category` (preference, "
            "fact, behavior, context, general) and `confidence` (0-1). Returns the saved "
            "memory with its id (mem-xxxxxxxx) once it is stored."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )
    def memory_save(
        ctx: Context,
        rawInput: str | None = None,  # the spec's argument names
        content: str | None = None,
        category: BankCategoryArg | None = None,
        confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
        profile: ProfileArg = None,
    ) -> BankEntry:
        try:
            name = profile_of(ctx, "memory_save", profile)
            saved = bank.save(
                name, raw_input=rawInput, content=content, category=category, confidence=confidence
            )
        except OrcamemError as exc:
            raise failing(exc) from None
        return saved.to_json()  # type: ignore[return-value]

    @server.tool(
        name="memory_recall",
        title="Recall from the memory bank",
        description=(
            "Search your profile's memory bank by topic. Returns the best memories first, each "
            "with its score and the relevance breakdown (recency, usage, topic, confidence "
            "multiplier, maturity, weights). Counts an access of every memory returned."
        ),
        annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False),
    )
    def memory_recall(
        query: Query,
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=100)] = 8,
        minScore: Annotated[float, Field(ge=0, le=1)] = 0.05,
        profile: ProfileArg = None,
    ) -> BankRecalled:
        try:
            name = profile_of(ctx, "memory_recall", profile)
            hits = bank.recall(name, query, limit=limit, min_score=minScore)
        except OrcamemError as exc:
            raise failing(exc) from None
        return {
            "profile": name,
            "query": query,
            "hits": [{**h.to_dict(), "memory": _shown(h.memory.to_json())} for h in hits],
        }  # type: ignore[typeddict-item]

    @server.tool(
        name="memory_list",
        title="List the memory bank",
        description=(
            "List your profile's memories newest first, with `limit`/`offset` paging. "
            "Read-only: does not count as an access."
        ),
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    def memory_list(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=1000)] = 50,
        offset: Annotated[int, Field(ge=0)] = 0,
        profile: ProfileArg = None,
    ) -> BankListed:
        try:
            name = profile_of(ctx, "memory_list", profile)
            page = bank.list(name, limit=limit, offset=offset)
        except OrcamemError as exc:
            raise failing(exc) from None
        return {
            "profile": name,
            "total": page.total,
            "nextOffset": page.next_offset,
            "memories": [_shown(m.to_json()) for m in page.memories],  # type: ignore[misc]
        }

    @server.tool(
        name="memory_delete",
        title="Delete from the memory bank",
        description=(
            "Delete one memory of your profile by its id (mem-xxxxxxxx, from memory_list or "
            "memory_save). An unknown id is an error that says so; this cannot be undone."
        ),
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False
        ),
    )
    def memory_delete(id: str, ctx: Context, profile: ProfileArg = None) -> BankDeleted:
        try:
            name = profile_of(ctx, "memory_delete", profile)
            bank.delete(name, id)
        except OrcamemError as exc:
            raise failing(exc) from None
        return {"deleted": id, "profile": name}


# -- stdio -----------------------------------------------------------------------------------


def run_stdio(
    db_path: str | None,
    space_default: str = "default",
    *,
    embedder: str | None = None,
    bank: MemoryBank | None = None,
    profile: str | None = None,
    delete_space: bool = False,
    config: Config | None = None,
) -> None:
    """Serve MCP over stdin/stdout until the client closes the pipe.

    Opens ``Memory(db_path, config=config)`` (None: ``$ORCA_HOME/memory.db`` or
    ``~/.orca/memory.db``; the command passes its settings' config: the block log); tools
    default to ``space_default``. With ``bank``, the session is bound to ``profile`` (None: no
    ``memory_*`` tools); ``delete_space`` adds ``orma_delete_space``. Nothing but JSON-RPC
    is written to stdout.

    Raises:
        OrcamemError: the database cannot be opened (before anything is served).
    """
    with Memory(db_path, space=space_default, embedder=embedder, config=config) as memory:
        serve_stdio(build_server(memory, bank=bank, profile=profile, delete_space=delete_space))


# -- streamable HTTP -------------------------------------------------------------------------


def _authorize_from_request(space: str) -> str:
    """``authorize`` for HTTP: the space through the principal the endpoint authenticated."""
    from ...errors import AuthError

    request = current_request()
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY) if request is not None else None
    if principal is None:
        raise AuthError("this MCP call carried no authenticated API key")
    return principal.space(space)


class _HttpEndpoint:
    """ASGI endpoint for ``/mcp``: authenticate each request, then hand it to the SDK.

    The SDK's session manager (stateless, JSON responses: no server-side session to hijack
    or expire; each POST stands alone) needs a running task group: ``running()`` provides it
    and must wrap the app's lifespan. Each ``running()`` builds a fresh manager, so an app can
    be started more than once (tests).
    """

    def __init__(
        self,
        memory: Memory,
        keys: ApiKeys | None,
        *,
        host: str,
        max_body_bytes: int,
        bank: MemoryBank | None = None,
        allowed_hosts: tuple[str, ...] = (),
    ) -> None:
        from ..http.settings import is_loopback

        self.allowed_hosts = tuple(allowed_hosts)

        self.keys = keys
        self.server = build_server(memory, authorize=_authorize_from_request, bank=bank)
        self.loopback = is_loopback(host)
        self.max_body_bytes = max_body_bytes
        self._manager: Any = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        from mcp.server.transport_security import TransportSecuritySettings

        if self.loopback:  # refuse browser pages that reach loopback by DNS rebinding
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"]
                + [h for name in self.allowed_hosts for h in (name, f"{name}:*")],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
                + [
                    f"{scheme}://{name}{port}"
                    for name in self.allowed_hosts
                    for scheme in ("http", "https")
                    for port in ("", ":*")
                ],
            )
        else:  # keys are required off loopback; Host names are the deployer's business
            security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=security,
            max_request_body_size=self.max_body_bytes,
        )
        manager = self.server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        import anyio.to_thread
        from starlette.datastructures import Headers
        from starlette.responses import JSONResponse

        from ...engine.keys import ADMIN, Principal
        from ..http.deps import presented_key
        from ..http.errors import error_body

        def refuse(kind: str, message: str, status: int) -> JSONResponse:
            headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            return JSONResponse(error_body(kind, message, status), status, headers=headers)

        checked = scope.get("state", {}).get("principal")  # http.guard.Authenticate's
        if self.keys is None:
            principal = ADMIN
        elif isinstance(checked, Principal):
            principal = checked
        else:
            try:
                key = presented_key(Headers(scope=scope))
                principal = await anyio.to_thread.run_sync(self.keys.check, key)
            except OrcamemError as exc:
                await refuse(type(exc).__name__, str(exc), exc.status)(scope, receive, send)
                return
        if self._manager is None:
            message = (
                "MCP over HTTP is not running: serve the app with its lifespan (uvicorn does; "
                "in tests use `with TestClient(app)`)"
            )
            await refuse("Unavailable", message, 503)(scope, receive, send)
            return
        await self._manager.handle_request({**scope, PRINCIPAL_SCOPE_KEY: principal}, receive, send)


def http_app(
    memory: Memory,
    keys: ApiKeys | None,
    *,
    host: str = "127.0.0.1",
    max_body_bytes: int = 2 * 1024 * 1024,
    bank: MemoryBank | None = None,
) -> Starlette:
    """A standalone ASGI app serving MCP over streamable HTTP at ``/mcp``.

    Args:
        memory: an open ``Memory`` (the caller closes it).
        keys: the key store to check every request against; None: no keys (loopback only),
            every space reachable.
        host: where it will listen; on loopback, Host/Origin headers are checked against
            DNS rebinding.
        bank: a Memory Bank whose ``memory_*`` tools to serve too (the caller closes it).
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    endpoint = _HttpEndpoint(memory, keys, host=host, max_body_bytes=max_body_bytes, bank=bank)
    return Starlette(
        routes=[Route("/mcp", endpoint)],
        lifespan=lambda _app: endpoint.running(),
    )


def install(app: FastAPI) -> None:
    """Serve MCP over streamable HTTP at ``/mcp`` on an app made by ``create_app``.

    Uses ``app.state.memory``, ``app.state.keys`` (None: no keys) and ``app.state.settings``
    (host, body limit). The route goes first, ahead of any catch-all. The SDK's session manager
    needs a task group for the app's lifetime, and a mounted app's own lifespan never runs, so
    its ``run()`` is entered around the app's existing lifespan (``app.router.lifespan_context``
    is wrapped, keeping whatever it was). Installing twice changes nothing.
    """
    if getattr(app.state, "mcp", None) is not None:
        return
    settings = app.state.settings
    endpoint = _HttpEndpoint(
        app.state.memory,
        app.state.keys,
        host=settings.host,
        max_body_bytes=settings.max_body_bytes,
        bank=getattr(app.state, "bank", None),  # the Memory Bank's tools when one is wired
        allowed_hosts=settings.allowed_hosts,
    )
    app.add_route("/mcp", endpoint, include_in_schema=False)
    route = app.router.routes.pop()
    app.router.routes.insert(0, route)
    app.state.mcp = endpoint
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        async with endpoint.running(), inner(application) as state:
            yield state

    app.router.lifespan_context = lifespan

"""Request and response models of the REST API (what ``/openapi.json`` publishes).

Responses mirror the SDK's records (``Episode``, ``MemoryRecord``, ``Hit``, ``SleepReport``);
requests carry what the SDK validates, and the SDK still validates it (blank text, control
characters, times): what the schema cannot say comes back as a 400 with the reason.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from ...._kernel.model import CATEGORIES, EPISODE_KINDS
from ...._kernel.names import AUTOMATION_ID, KEY_ID, MEMORY_ID, META_KEY, PROFILE, SPACE
from ....recall.filters import KINDS, MAX_METADATA

SPACE_PATTERN = SPACE.pattern
ID_PATTERN = AUTOMATION_ID.pattern
MEMORY_ID_PATTERN = MEMORY_ID.pattern
KEY_ID_PATTERN = KEY_ID.pattern
PROFILE_PATTERN = PROFILE.pattern
MAX_BATCH = 512
"""Episodes per POST: at most one SDK batch, so a POST is all-or-nothing."""

EpisodeKind = Literal[EPISODE_KINDS]  # type: ignore[valid-type]
Category = Literal[CATEGORIES]  # type: ignore[valid-type]
CategoryIn = Literal[(*CATEGORIES, "anti_pattern")]  # type: ignore[valid-type]


class _Closed(BaseModel):
    """A request body: unknown fields and wrong JSON types are refused (no coercion)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# -- errors -----------------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    type: str = Field(description="Error class, e.g. InvalidInputError, ForbiddenError.")
    message: str = Field(description="What was wrong and what to do next.")
    status: int = Field(description="The HTTP status, repeated.")


class ErrorBody(BaseModel):
    """The one error shape of every HTTP interface."""

    error: ErrorDetail


_ERRORS = {
    400: "Invalid input (blank or oversized text, a bad time, a bad space name); nothing written.",
    401: "No API key, or an unknown or revoked one (servers that require keys).",
    403: "The key is valid but not for this space, or the route needs an admin key.",
    404: "No such record in this space.",
    409: "The space was embedded with another embedder: run `orcamem reembed`.",
    413: "The request body is over the server's limit (`max_body_bytes`).",
    422: "The request does not match the schema (the message names the field).",
    503: "The memory database cannot be used right now (locked, read-only).",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses, all with the ``ErrorBody`` shape."""
    return {code: {"model": ErrorBody, "description": _ERRORS[code]} for code in codes}


# -- spaces and stats -------------------------------------------------------------------------


class SpaceOut(BaseModel):
    name: str = Field(description="The space name.")
    created_at: str = Field(description="When the space was first written (UTC ISO-8601).")
    embedder_id: str | None = Field(description="The embedder its vectors were made with.")
    dim: int | None = Field(description="Vector dimension.")
    episodes: int = Field(description="Episodes stored.")
    lines: int = Field(description="Indexed lines (sentences) of those episodes.")
    memories: int = Field(description="Memories (facts, states, events, rules), any state.")
    last_activity: str | None = Field(
        description="When it was last written: its newest episode or memory change (UTC)."
    )
    size_bytes: int = Field(
        description="What its rows hold: episode and memory text (UTF-8) plus 4 bytes a vector "
        "dimension of each line and memory; indexes and free pages not counted."
    )


class SpacesOut(BaseModel):
    spaces: list[SpaceOut] = Field(description="Spaces this key may use that exist, by name.")


class DatabaseStats(BaseModel):
    spaces: list[str] = Field(description="Every space in the database.")
    counts: dict[str, int] = Field(description="Rows per table: spaces, episodes, lines, memories.")
    path: str | None = Field(description="The database file.")
    size_bytes: int = Field(description="Database file size (with its WAL).")


class ProblemOut(BaseModel):
    kind: str = Field(description="sqlite, fts, orphans, vectors, digest, lineage or graph.")
    message: str = Field(description="What is wrong and what to run next, in one line.")
    space: str | None = Field(description="The space it is in, when it is in one.")
    repairable: bool = Field(description="Whether `orcamem repair` can fix it.")


class CheckOut(BaseModel):
    ok: bool = Field(description="True when nothing is wrong.")
    counts: dict[str, int] = Field(description="Rows checked: spaces, episodes, lines, memories.")
    problems: list[ProblemOut] = Field(description="What `orcamem check` found, one per line.")


class StatsOut(BaseModel):
    space: str
    episodes: int = Field(description="Episodes in the space.")
    lines: int = Field(description="Indexed lines in the space.")
    memories: int = Field(description="Active memories that are not forbidden rules.")
    rules: int = Field(description="Active forbidden rules.")
    inactive_memories: int = Field(description="Superseded or deactivated memories.")
    embedder: str = Field(description="The server's embedder.")
    space_embedder: str | None = Field(description="The embedder the space was made with.")
    dim: int = Field(description="The server embedder's dimension.")
    database: DatabaseStats | None = Field(
        None, description="Whole-database figures: admin keys only (null for space keys)."
    )


# -- episodes ---------------------------------------------------------------------------------


class EpisodeIn(_Closed):
    text: str = Field(
        min_length=1, description="The text: a turn, a note, a document passage, a tool log."
    )
    kind: EpisodeKind | None = Field(
        None, description="turn, note, document or tool; default: turn with a role, else note."
    )
    role: str | None = Field(
        None, min_length=1, max_length=256, description="Speaker of a turn: user, assistant, …"
    )
    session_id: str | None = Field(None, min_length=1, max_length=256, description="Conversation.")
    turn_id: str | None = Field(None, min_length=1, max_length=256, description="Turn id.")
    occurred_at: str | None = Field(
        None, description="When it happened (ISO-8601, e.g. 2026-10-17T09:30:00Z); default now."
    )
    meta: dict[str, Any] | None = Field(None, description="Any JSON object kept with it.")


class EpisodeBatch(_Closed):
    episodes: list[EpisodeIn] = Field(
        min_length=1,
        max_length=MAX_BATCH,
        description=f"Up to {MAX_BATCH} episodes, stored all together or not at all.",
    )


def _episode_or_batch(value: Any) -> str:
    return "batch" if isinstance(value, dict) and "episodes" in value else "episode"


EpisodesIn = Annotated[
    Annotated[EpisodeIn, Tag("episode")] | Annotated[EpisodeBatch, Tag("batch")],
    Discriminator(_episode_or_batch),
]
"""One episode, or ``{"episodes": [...]}`` (errors name which: ``body.episode.text``)."""


class EpisodeOut(BaseModel):
    id: int = Field(description="Episode id (unique in the database; `ep-<id>` in citations).")
    space: str
    kind: str
    role: str | None
    text: str
    session_id: str | None
    turn_id: str | None
    occurred_at: str
    created_at: str
    digest: str = Field(description="sha256 of the text.")
    meta: dict[str, Any]


class EpisodesOut(BaseModel):
    episodes: list[EpisodeOut]


class EpisodePage(BaseModel):
    episodes: list[EpisodeOut] = Field(description="Oldest first.")
    next_after: int | None = Field(
        description="Pass as `after` for the next page; null when this is the last page."
    )


# -- memories ---------------------------------------------------------------------------------


class MemoryIn(_Closed):
    text: str = Field(min_length=1, description="The memory, as it should be recalled.")
    category: CategoryIn = Field(
        "fact",
        description="fact, preference, state, event, rule, decision or note; `anti_pattern` "
        "stores a forbidden rule (same as `forbidden: true`).",
    )
    forbidden: bool = Field(
        False, description="A forbidden rule: recall hoists it first as `[FORBIDDEN: …]`."
    )
    importance: float | None = Field(
        None, ge=0, le=1, description="0–1; default 0.5 (1.0 for forbidden rules)."
    )
    confidence: float = Field(1.0, ge=0, le=1, description="0–1.")
    tags: list[str] = Field(default_factory=list, max_length=64, description="Free labels.")
    entity: str | None = Field(None, max_length=256, description="State: whose (e.g. user).")
    attribute: str | None = Field(None, max_length=256, description="State: what (e.g. city).")
    value: str | None = Field(None, max_length=4096, description="State: the value (e.g. Pune).")
    condition: str | None = Field(None, max_length=4096, description="When it applies.")
    event_date: str | None = Field(None, description="Event time (ISO-8601).")


class MemoryEdit(_Closed):
    text: str = Field(min_length=1, description="The corrected memory, as it should be recalled.")
    category: Category | None = Field(
        None, description="A new category (a rule stays a rule); default: the memory's own."
    )
    importance: float | None = Field(None, ge=0, le=1, description="0–1; default: unchanged.")
    confidence: float | None = Field(None, ge=0, le=1, description="0–1; default: unchanged.")
    tags: list[str] | None = Field(None, max_length=64, description="Default: unchanged.")
    value: str | None = Field(
        None,
        max_length=4096,
        description="A state's value; default: kept when the text is unchanged, else cleared.",
    )


class PinIn(_Closed):
    pinned: bool = Field(description="true pins the memory, false unpins it.")


class BlockEntryOut(BaseModel):
    id: int
    space: str
    created_at: str
    surface: str = Field(description="Who injected it: proxy, sdk, rest or mcp.")
    item_ids: list[str] = Field(description="The items the block held, in block order.")
    tokens: int = Field(description="The block's WordPiece tokens.")
    query_hash: str = Field(description="sha256: of the query (the words are not kept).")
    query: str | None = Field(description="Only with the log_block_content setting.")
    block: str | None = Field(description="Only with the log_block_content setting.")


class BlocksOut(BaseModel):
    entries: list[BlockEntryOut] = Field(description="Newest first.")
    logging: bool = Field(description="Whether this server logs injected blocks now.")
    keep: int = Field(description="Entries kept per space (the oldest beyond are dropped).")
    retention_days: float = Field(description="Entries older than this are dropped.")


class MemoryOut(BaseModel):
    id: str = Field(description="mem-<8hex>")
    space: str
    category: str
    content: str
    summary: str | None
    confidence: float
    importance: float
    tags: list[str]
    source: str = Field(description="explicit, inferred or automatic.")
    entity: str | None
    attribute: str | None
    value: str | None
    condition: str | None
    prohibited: bool = Field(description="A forbidden rule.")
    event_date: str | None = Field(description="An event's day, or the first day of its range.")
    event_end: str | None = Field(
        None, description='The last day of an event said as a range ("last week"); else null.'
    )
    session_id: str | None
    turn_id: str | None
    cited_lines: list[int] = Field(description="Line ids it was distilled from.")
    created_at: str
    updated_at: str
    last_accessed_at: str | None
    access_count: int
    staleness: float
    archived_at: str | None
    active: bool = Field(description="False once superseded or deactivated.")
    superseded_by: str | None
    pinned: bool = Field(
        False, description="Pinned: does not decay, ranks higher where it is relevant."
    )


class MemoryPage(BaseModel):
    memories: list[MemoryOut] = Field(description="Oldest first.")
    total: int = Field(description="How many match the filters.")
    next_offset: int | None = Field(description="`offset` of the next page; null at the end.")


class FactsOut(BaseModel):
    facts: list[MemoryOut] = Field(description="Active memories (with history: all), oldest first.")


# -- search and context -----------------------------------------------------------------------


HitKind = Literal[KINDS]  # type: ignore[valid-type]
FILTER_FIELDS = {
    "kind": "Only passages (episodes as said) or only memories.",
    "role": "Only passages said by this role (`user`, `assistant`, a speaker's name).",
    "session": "Only passages and memories of this session id.",
    "since": "ISO-8601; only what occurred at or after it (a memory: its event date, else "
    "its creation). A date alone is its midnight UTC.",
    "until": "ISO-8601, at or after `since`; only what occurred at or before it.",
    "category": "Only memories of this category.",
}


class SearchFilterIn(_Closed):
    """What a filtered search may return; a field a hit kind lacks excludes that kind
    (`role` and `metadata` are episode fields, `category` a memory field)."""

    kind: HitKind | None = Field(None, description=FILTER_FIELDS["kind"])
    role: str | None = Field(None, min_length=1, max_length=256, description=FILTER_FIELDS["role"])
    session: str | None = Field(
        None, min_length=1, max_length=256, description=FILTER_FIELDS["session"]
    )
    since: str | None = Field(None, min_length=1, max_length=64, description=FILTER_FIELDS["since"])
    until: str | None = Field(None, min_length=1, max_length=64, description=FILTER_FIELDS["until"])
    category: Category | None = Field(None, description=FILTER_FIELDS["category"])
    metadata: (
        dict[Annotated[str, Field(pattern=META_KEY.pattern)], Annotated[str, Field(min_length=1)]]
        | None
    ) = Field(
        None,
        max_length=MAX_METADATA,
        description="Only passages whose episode metadata holds each of these string values "
        f"(keys: {META_KEY.rule}).",
    )


class SearchIn(_Closed):
    query: str = Field(min_length=1, description="What to recall.")
    top_k: int | None = Field(None, ge=1, le=1000, description="How many hits; default: config.")
    filters: SearchFilterIn | None = Field(None, description="Rank only what matches.")


class HitOut(BaseModel):
    kind: Literal["passage", "memory", "rule"]
    id: str = Field(
        description="`ep-<episode id>` for a passage (its line in `line`), or a memory id."
    )
    text: str
    score: float
    space: str
    breakdown: dict[str, float] = Field(description="Per-signal contributions to the score.")
    occurred_at: str | None
    role: str | None
    session_id: str | None
    turn_id: str | None
    episode_id: int | None
    line: str | None
    memory: MemoryOut | None = None


class RecalledOut(BaseModel):
    id: str = Field(description="The hit's id (in `hits`).")
    text: str = Field(description="The hit as a person reads it: `user · home city: Bangalore`.")


class SearchOut(BaseModel):
    query: str
    space: str
    hits: list[HitOut] = Field(description="Ranked passages and memories.")
    rules: list[HitOut] = Field(description="The space's forbidden rules (always hoisted).")
    timings_ms: dict[str, float] = Field(description="Where the time went, per stage.")
    states: list[RecalledOut] = Field(description="The hits that are states, facts, preferences.")
    events: list[RecalledOut] = Field(description="The hits that are dated events.")
    passages: list[RecalledOut] = Field(description="The hits that are episodes, as said.")


class ChatMessage(BaseModel):
    """An OpenAI-style chat message; other fields (name, tool_calls, …) pass through."""

    model_config = ConfigDict(extra="allow", strict=True)

    role: str = Field(description="system, user, assistant, tool, …")
    content: str | list[dict[str, Any]] | None = Field(
        None, description="Text, or a list of content parts ({type: text, text: …})."
    )


class ContextIn(_Closed):
    messages: list[ChatMessage] = Field(
        max_length=10_000, description="The conversation; the latest user message is the query."
    )
    automation_id: str | None = Field(
        None,
        pattern=ID_PATTERN,
        description="Also prepend this automation's note block (admin keys only).",
    )


class ContextOut(BaseModel):
    messages: list[dict[str, Any]] = Field(
        description="The messages with the context blocks prepended as system messages."
    )
    block: str | None = Field(description="The memory block injected, or null if none.")
    note_block: str | None = Field(description="The automation note block, or null.")


class RecallOut(BaseModel):
    query: str
    space: str
    block: str = Field(description="The exact block a chat would get; empty if nothing fits.")


# -- sleep, import ----------------------------------------------------------------------------


class Rejected(BaseModel):
    item: dict[str, Any] = Field(description="The claim consolidation refused.")
    reason: str


class FailedBatch(BaseModel):
    job: str = Field(description="The failed job's id.")
    batch: str | None = Field(description="The batch's episodes, `ep-<first>..ep-<last>`.")
    error: str | None = Field(description="Why its last attempt failed.")


class WaitingBatch(BaseModel):
    job: str = Field(description="The leased job's id.")
    batch: str | None = Field(description="The batch's episodes, `ep-<first>..ep-<last>`.")
    episodes: int = Field(description="Pending episodes of the space waiting behind it.")
    worker: str | None = Field(description="The worker holding the lease.")
    until: str | None = Field(description="When the lease expires (then any sleep takes over).")


class SleepOut(BaseModel):
    episodes: int = Field(description="Episodes consolidated.")
    claims: int = Field(description="Claims extracted.")
    stored: list[str] = Field(description="Memory ids stored.")
    superseded: list[str] = Field(description="Memory ids superseded by new ones.")
    duplicates: int
    rejected: list[Rejected]
    extractors: list[str] = Field(description="Which extractors ran (rules, a model id).")
    failures: list[str] = Field(description="Model attempts that were unusable.")
    failed_batches: list[FailedBatch] = Field(
        default_factory=list,
        description="Batches whose job used all its attempts; not run again until "
        "`retry_failed=true`.",
    )
    waiting: WaitingBatch | None = Field(
        default=None,
        description="The batch another worker holds under an unexpired lease, if any.",
    )


class ImportOut(BaseModel):
    episodes: int = Field(description="Episodes added.")
    memories: int = Field(description="Memories added.")
    updated: int = Field(
        description="Memories the space held whose newer state the file brought (closed, "
        "superseded, pinned or archived since)."
    )
    skipped: int = Field(description="Records the space already held.")


# -- keys and automations ---------------------------------------------------------------------


class KeyIn(_Closed):
    name: str = Field("", max_length=128, description="A label, e.g. who holds the key.")
    spaces: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="Spaces the key may read and write (needed unless admin).",
    )
    admin: bool = Field(False, description="All spaces, and the key and automation routes.")


class KeyOut(BaseModel):
    id: str = Field(description="key-<8hex>: how the key is listed and revoked.")
    name: str
    spaces: list[str]
    admin: bool
    created_at: str
    revoked_at: str | None


class KeyCreated(KeyOut):
    secret: str = Field(description="The key itself. Shown once: only its hash is stored.")


class KeysOut(BaseModel):
    keys: list[KeyOut]


class NoteIn(_Closed):
    note: str = Field(max_length=65536, description="The whole new note; empty or blank clears it.")


class NoteOut(BaseModel):
    automation_id: str
    note: str = Field(description="The note as stored; empty when there is none.")
    updated_at: str | None = Field(description="When it was last written; null when none.")
    block: str = Field(
        description="The context block a run receives (preamble + note); empty when none."
    )


# -- the dashboard's routes: delete a space, the audit log, why a block -----------------------


class SpaceDeletedOut(BaseModel):
    space: str = Field(description="The space that was deleted.")
    deleted: dict[str, int] = Field(
        description="Rows deleted, by kind (memories, episodes, consolidation_audit, jobs)."
    )


class AuditEntryOut(BaseModel):
    id: int
    job_id: str | None = Field(description="The consolidation job, if a job ran it.")
    item: dict[str, Any] = Field(description="The claim as proposed (or the memory closed).")
    reason: str = Field(description="Why it was rejected, skipped or closed.")
    created_at: str


class AuditOut(BaseModel):
    entries: list[AuditEntryOut] = Field(description="Newest first.")


class LeftOutHit(HitOut):
    reason: Literal["outdated", "guess", "score_cut", "budget"] = Field(
        description="outdated: a newer state says otherwise and is what the block shows; "
        "guess: an assistant's turn, and the query asks about the user (a model's guess is "
        "no evidence of them); "
        "score_cut: past the block's first min_block_tokens it scored below relative_score "
        "of the best hit (the adaptive count); "
        "budget: it passed the cut but no room was left in its section of the token budget."
    )
    of_best: float | None = Field(
        description="Its score as a share of the best hit's (null when the best scored 0)."
    )
    detail: str = Field(
        description='The reason in words ("below the score cut: 0.31 of the best, the cut '
        'is 0.37").'
    )


class ExplainOut(BaseModel):
    query: str
    space: str
    block: str = Field(description="The exact block build_context would inject (may be empty).")
    tokens: int = Field(description="The block's tokens, as budgets count them (WordPiece).")
    budget_tokens: int = Field(description="The block's budget, a ceiling (config.pack).")
    min_block_tokens: int = Field(
        description="Tokens packed whatever their score before the score cut applies."
    )
    relative_score: float = Field(
        description="The score cut: past min_block_tokens an item needs this share of the "
        "best hit's score (0: no cut)."
    )
    included: list[HitOut] = Field(description="Ranked hits that made it into the block.")
    cut: list[LeftOutHit] = Field(description="Ranked hits the block left out, with why.")
    rules: list[HitOut] = Field(description="Forbidden rules that bear on the query (hoisted).")

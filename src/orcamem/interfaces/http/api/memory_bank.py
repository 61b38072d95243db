"""The Memory Bank over REST: per-profile ``/api/profiles/{name}/memories`` and the global
``/api/memory-bank`` (admin keys only).

The bank lives on ``app.state.bank`` (a ``bank.bank.MemoryBank``, usually built with
``MemoryBank.from_env(role="conductor")``); without one every route answers 503. A profile's
routes resolve the space ``profile:<name>`` through the caller's key, so a key scoped to
``profile:researcher`` reaches that profile only. Reads first call ``refresh_if_stale`` (a
2-second TTL), so runner-side saves show up promptly without an S3 round-trip per request.

=========================================================  ====================================
``GET|POST /api/profiles/{name}/memories``                 list (newest first) / create
``GET /api/profiles/{name}/memories/search``               ranked with the relevance breakdown
``GET|DELETE /api/profiles/{name}/memories/{memory_id}``   one memory
``GET /api/memory-bank``                                   grouped by profile, or a flat page
``GET /api/memory-bank/stats``                             counts and skipped objects
=========================================================  ====================================
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.convertors import Convertor, register_url_convertor

from ....bank import BankHit, BankMemory, BankPage, MemoryBank, space_for
from ....errors import BankUnavailableError
from ....recall.bank import BANK_CATEGORIES, INJECTION_MAX_RESULTS, INJECTION_MIN_SCORE
from ..deps import PrincipalDep
from .common import require_admin
from .schemas import MEMORY_ID_PATTERN, PROFILE_PATTERN, ErrorBody, errors

__all__ = ["router"]

BankCategory = Literal[BANK_CATEGORIES]  # type: ignore[valid-type]

_UNAVAILABLE = {
    503: {
        "model": ErrorBody,
        "description": "The Memory Bank is not wired into this server, or its bucket cannot be "
        "reached.",
    }
}


def get_bank(request: Request) -> MemoryBank:
    """The server's bank, or 503 when none is wired."""
    bank = getattr(request.app.state, "bank", None)
    if bank is None:
        raise BankUnavailableError(
            "the Memory Bank is not wired into this server: start it with a bank "
            "(MemoryBank.from_env(role='conductor') on app.state.bank)"
        )
    return bank


BankDep = Annotated[MemoryBank, Depends(get_bank)]


def profile_name(
    principal: PrincipalDep,
    name: Annotated[
        str, Path(pattern=PROFILE_PATTERN, description="The profile (agent configuration).")
    ],
) -> str:
    """The profile, if the caller's key may use its space ``profile:<name>``."""
    principal.space(space_for(name))
    return name


ProfileDep = Annotated[str, Depends(profile_name)]


class _MemoryIdConvertor(Convertor[str]):
    """Routes ``{memory_id:bank_memory_id}`` only for ``mem-<8hex>``, so ``…/memories/search``
    never matches the id route (its ``Allow`` header then lists GET only)."""

    regex = "mem-[0-9a-f]{8}"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("bank_memory_id", _MemoryIdConvertor())
MemoryId = Annotated[str, Path(pattern=MEMORY_ID_PATTERN, description="mem-<8hex>")]


# -- shapes ---------------------------------------------------------------------------------------


class BankMemoryOut(BaseModel):
    """One Memory Bank entry (the spec's ``AgentMemory``)."""

    id: str = Field(description="mem-<8hex>")
    profileName: str = Field(description="The profile it belongs to.")
    rawInput: str = Field(description="What was saved, verbatim (audit trail), at most 4 KiB.")
    processedContent: str = Field(description="The retrieval-friendly text.")
    summary: str = Field(description="At most 50 characters, for lists.")
    category: str = Field(description="preference, fact, behavior, context or general.")
    source: str = Field(description="explicit (inferred is reserved for v2).")
    confidence: float = Field(description="0 to 1.")
    createdAt: str = Field(description="UTC ISO-8601.")
    lastAccessedAt: str | None = Field(description="UTC ISO-8601; null until first recalled.")
    accessCount: int = Field(description="Recalls and injections that returned it.")
    stalenessScore: float = Field(description="0 to 1; informational, never filters.")
    isActive: bool
    version: int = Field(description="Schema version of the stored object.")


class MemoryCreateRequest(BaseModel):
    """A memory to save: ``rawInput`` alone (the processor extracts the structure), or
    ``content`` with optional ``category``/``confidence``/``summary``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    rawInput: str | None = Field(
        None,
        min_length=1,
        description="Free text, at most 4 KiB (UTF-8): the model extracts processedContent, "
        "summary, category and confidence. Kept verbatim as the audit trail.",
    )
    content: str | None = Field(
        None, min_length=1, description="Pre-structured text (no model call), at most 4 KiB."
    )
    category: BankCategory | None = Field(
        None, description="preference, fact, behavior, context or general (default general)."
    )
    confidence: float | None = Field(None, ge=0, le=1, description="0 to 1 (default 1.0).")
    summary: str | None = Field(
        None, min_length=1, description="A label; cut to 50 characters (default: derived)."
    )


class BankPageOut(BaseModel):
    memories: list[BankMemoryOut] = Field(description="Newest first.")
    total: int = Field(description="How many there are.")
    nextOffset: int | None = Field(description="`offset` of the next page; null at the end.")


class RelevanceOut(BaseModel):
    score: float = Field(description="(wR·recency + wU·usage + wT·topic) × confidenceMultiplier.")
    recency: float = Field(description="0.5^(age/30 days), from the later of created/accessed.")
    usage: float = Field(description="0.6 (never accessed) rising to 1.0 (50+ accesses).")
    topic: float = Field(description="Word overlap + shared semantic clusters, 0 to 1.")
    confidenceMultiplier: float = Field(description="0.5 + 0.5 × confidence.")
    maturity: float = Field(description="min(1, the profile's total accesses / 50).")
    weights: dict[str, float] = Field(description="recency, usage and topic weights used.")


class BankHitOut(BaseModel):
    memory: BankMemoryOut
    score: float = Field(description="The composite score.")
    relevance: RelevanceOut


class BankSearchOut(BaseModel):
    profile: str
    query: str
    hits: list[BankHitOut] = Field(description="Best first.")


class BankListingOut(BaseModel):
    profiles: dict[str, list[BankMemoryOut]] | None = Field(
        description="Without paging, query or category: every memory grouped by profile "
        "(newest first); else null."
    )
    memories: list[BankMemoryOut] | None = Field(
        description="With limit/offset/q/category: one flat page (best first for q, else "
        "newest first); else null."
    )
    hits: list[BankHitOut] | None = Field(description="With q: the page with relevance.")
    total: int = Field(description="Memories in the grouping, or matching the filters.")
    nextOffset: int | None = Field(description="`offset` of the next page; null at the end.")


class SkippedOut(BaseModel):
    key: str = Field(description="The object key.")
    reason: str = Field(description="Why it is not a valid memory.")


class BankStatsOut(BaseModel):
    totalMemories: int
    profilesWithMemory: int
    perProfile: dict[str, int] = Field(description="Memories per profile.")
    storage: str = Field(description="Where memories persist (s3://…, file://…, memory).")
    durable: bool = Field(description="False when the bank runs in memory only.")
    skipped: list[SkippedOut] = Field(
        description="Objects under memory/ that are not valid memories (skipped, not fatal)."
    )


def _out(memory: BankMemory) -> BankMemoryOut:
    return BankMemoryOut(**memory.to_json())


def _hit(hit: BankHit) -> BankHitOut:
    return BankHitOut(**hit.to_dict())


def _page(page: BankPage) -> BankPageOut:
    return BankPageOut(
        memories=[_out(m) for m in page.memories], total=page.total, nextOffset=page.next_offset
    )


Limit = Annotated[int, Query(ge=1, le=1000, description="Page size.")]
Offset = Annotated[int, Query(ge=0, le=10**9, description="Skip this many.")]

# -- per profile ------------------------------------------------------------------------------

profiles = APIRouter(
    prefix="/profiles/{name}/memories",
    tags=["memory-bank"],
    responses={**errors(400, 401, 403, 404, 422), **_UNAVAILABLE},
)


@profiles.get("", summary="List a profile's memories")
def list_memories(
    name: ProfileDep, bank: BankDep, limit: Limit = 50, offset: Offset = 0
) -> BankPageOut:
    """The profile's memories, newest first (``limit``/``offset``). Read-only: access counts
    do not change."""
    bank.refresh_if_stale()
    return _page(bank.list(name, limit=limit, offset=offset))


@profiles.post("", status_code=201, summary="Save a memory", responses=errors(413))
def create_memory(name: ProfileDep, bank: BankDep, body: MemoryCreateRequest) -> BankMemoryOut:
    """Save a memory (``MemoryCreateRequest``); answers once the object has landed in storage.

    With ``rawInput`` alone the processor (a fast model, 5-second deadline) extracts the
    structure; without a model, or when it fails, the save keeps what was given (confidence
    1.0); an unusable model answer gives the deterministic preview (confidence 0.5).
    """
    memory = bank.save(
        name,
        raw_input=body.rawInput,
        content=body.content,
        category=body.category,
        confidence=body.confidence,
        summary=body.summary,
    )
    return _out(memory)


@profiles.get("/search", summary="Search a profile's memories")
def search_memories(
    name: ProfileDep,
    bank: BankDep,
    q: Annotated[str, Query(min_length=1, max_length=10_000, description="What to look for.")],
    limit: Annotated[
        int, Query(ge=1, le=100, description="How many hits at most.")
    ] = INJECTION_MAX_RESULTS,
    minScore: Annotated[  # the spec's parameter name
        float, Query(ge=0, le=1, description="The least composite score of a hit.")
    ] = INJECTION_MIN_SCORE,
    category: Annotated[BankCategory | None, Query(description="Only this category.")] = None,
) -> BankSearchOut:
    """Memories sharing a topic with ``q`` (a word or a semantic cluster), best first, each
    with its relevance breakdown; with ``category``, only that category. Read-only (the
    ``memory_recall`` tool bumps access counts; this dashboard search does not)."""
    bank.refresh_if_stale()
    hits = bank.search(name, q, limit=limit, min_score=minScore, category=category)
    return BankSearchOut(profile=name, query=q, hits=[_hit(h) for h in hits])


@profiles.get("/{memory_id:bank_memory_id}", summary="Get a memory")
def get_memory(name: ProfileDep, bank: BankDep, memory_id: MemoryId) -> BankMemoryOut:
    """One memory of the profile (404 for an unknown profile or id)."""
    bank.refresh_if_stale()
    return _out(bank.get(name, memory_id))


@profiles.delete("/{memory_id:bank_memory_id}", status_code=204, summary="Delete a memory")
def delete_memory(name: ProfileDep, bank: BankDep, memory_id: MemoryId) -> Response:
    """Remove the memory from the bank and its bucket (404 for an unknown profile or id)."""
    bank.delete(name, memory_id)
    return Response(status_code=204)


# -- global (admin) -----------------------------------------------------------------------------

overview = APIRouter(
    prefix="/memory-bank",
    tags=["memory-bank"],
    dependencies=[Depends(require_admin)],
    responses={**errors(400, 401, 403, 422), **_UNAVAILABLE},
)


@overview.get("", summary="All memories")
def all_memories(
    bank: BankDep,
    limit: Annotated[
        int | None, Query(ge=1, le=1000, description="Page size (asks for a flat page).")
    ] = None,
    offset: Annotated[
        int | None, Query(ge=0, le=10**9, description="Skip this many (asks for a flat page).")
    ] = None,
    q: Annotated[
        str | None,
        Query(min_length=1, max_length=10_000, description="Rank by relevance to this text."),
    ] = None,
    category: Annotated[BankCategory | None, Query(description="Only this category.")] = None,
) -> BankListingOut:
    """Every memory grouped by profile; with ``limit``/``offset``, ``q`` or ``category``, one
    flattened page across profiles instead (admin keys only)."""
    bank.refresh_if_stale()
    if limit is None and offset is None and q is None and category is None:
        grouped = bank.grouped()
        return BankListingOut(
            profiles={name: [_out(m) for m in items] for name, items in grouped.items()},
            memories=None,
            hits=None,
            total=sum(len(items) for items in grouped.values()),
            nextOffset=None,
        )
    page = bank.browse(q=q, category=category, limit=limit or 50, offset=offset or 0)
    fields: dict[str, Any] = {
        "profiles": None,
        "memories": [_out(m) for m in page.memories],
        "hits": [_hit(h) for h in page.hits] if page.hits is not None else None,
        "total": page.total,
        "nextOffset": page.next_offset,
    }
    return BankListingOut(**fields)


@overview.get("/stats", summary="Memory Bank statistics")
def bank_stats(bank: BankDep) -> BankStatsOut:
    """Total memories, profiles with memory, per-profile counts, the storage, and the objects
    that were skipped as malformed (admin keys only)."""
    bank.refresh_if_stale()
    return BankStatsOut(**bank.stats())


router = APIRouter()
router.include_router(profiles)
router.include_router(overview)

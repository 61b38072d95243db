"""Consolidation as durable jobs: one job a batch, published under the job's fence.

``enqueue_next`` queues the space's next pending batch (one active consolidation job per
space at a time); ``handle`` extracts and verifies outside any transaction, then returns an
``apply`` step that the job queue runs only while the worker still owns an unexpired lease,
in the same transaction as the job's ``done`` mark. A worker whose lease expired while a model
was answering can therefore never write, and a crash anywhere leaves either the whole batch
or nothing.

With a model, the first attempts use it; the last attempt of a batch whose model output stayed
unusable uses the rules, so pending episodes never pile up behind a broken model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from ..._kernel.claims.verify import verify_claims
from ..._kernel.embed import Embedder, embed_texts
from ..._kernel.ids import tagged
from ..._kernel.jobs import MAX_ATTEMPTS, Job, JobQueue, JobResult
from ..._kernel.redact import redact
from ..._kernel.trace import traced
from ...errors import AttemptFailed, ModelError, TransientError
from ..store.base import Store
from .extract import ExtractionFailed, Extractor, RuleExtractor
from .gate import pre_embedded
from .sleep import SleepReport, apply_batch, source_lines

__all__ = ["CONSOLIDATE", "ConsolidationJobs"]

CONSOLIDATE = "consolidate"


@dataclass
class ConsolidationJobs:
    """Enqueue and handle consolidation jobs for one store (each space by its own embedder)."""

    store: Store
    queue: JobQueue
    embedder_of: Callable[[str], Embedder]
    """The embedder of a space (``Memory.embedder_of``): a memory's vector is made by its own."""
    tz: ZoneInfo
    now: Callable[[], str]
    model_extractor: Extractor | None = None
    defeasible: bool = True
    """``Config.sleep.enable_defeasible_logic``: conditional claims are exceptions (gate)."""
    reports: dict[str, SleepReport] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def enqueue_next(self, space: str, batch_size: int) -> Job | None:
        """Queue the next pending batch of ``space`` unless one is already queued or running."""
        if any(job.kind == CONSOLIDATE for job in self.queue.list(space, status="pending")) or any(
            job.kind == CONSOLIDATE for job in self.queue.list(space, status="running")
        ):
            return None
        episodes = self.store.pending_episodes(space, batch_size)
        if not episodes:
            return None
        source = "\n".join(redact(e.text).text for e in episodes)
        digest = tagged(source)
        first, last = episodes[0].id, episodes[-1].id
        return self.queue.enqueue(
            space,
            CONSOLIDATE,
            None,
            f"ep-{first}..ep-{last}",
            digest,
            {"first": first, "last": last},
            self.now(),
            provenance={"extractor": self._extractor(1).name},
        )

    def _extractor(self, attempt: int) -> Extractor:
        if self.model_extractor is not None and attempt < MAX_ATTEMPTS:
            return self.model_extractor
        return RuleExtractor()

    @traced("sleep")
    def handle(self, job: Job) -> Any:
        """Extract and verify one batch; the returned ``apply`` writes it under the fence."""
        space, payload = job.space, job.payload
        episodes = [
            e
            for e in self.store.pending_episodes(space, payload["last"] - payload["first"] + 1)
            if e.id <= payload["last"]
        ]
        if not episodes:
            return JobResult({"episodes": 0, "note": "already consolidated"})
        extractor = self._extractor(job.attempts)
        lines = source_lines(self.store, space, episodes)
        try:
            claims = extractor.claims(lines)
        except (ExtractionFailed, ModelError) as exc:
            self.failures.append(f"{extractor.name} (attempt {job.attempts}): {exc}")
            raise AttemptFailed(f"{extractor.name}: {exc}") from None
        verified, rejected = verify_claims(claims, lines, self.tz)
        watermark_seen = episodes[0].id
        embedder = self.embedder_of(space)
        # every vector the gate needs is made now, before publish's write transaction
        embed = pre_embedded(
            self.store,
            space,
            verified,
            {line.line_id: line.text for line in lines},
            partial(embed_texts, embedder),
            defeasible=self.defeasible,
        )

        @traced("sleep.apply")
        def apply() -> None:
            pending = self.store.pending_episodes(space, 1)
            if not pending or pending[0].id != watermark_seen:
                raise TransientError(f"space {space!r} was consolidated meanwhile; batch redone")
            # a turn forgotten while the model read it must not come back as a memory: the
            # batch is extracted again without it (in publish's transaction, so no forget
            # slips in between this check and the write)
            read = {line.line_id for line in lines}
            if len(self.store.line_positions(list(read))) < len(read):
                raise TransientError(
                    f"a turn of space {space!r} was forgotten while its batch was read; "
                    "batch redone"
                )
            self.reports[job.id] = apply_batch(
                self.store,
                space,
                episodes,
                lines,
                claims,
                verified,
                rejected,
                extractor.name,
                embed,
                embedder.id,
                self.now(),
                job_id=job.id,
                defeasible=self.defeasible,
            )

        return JobResult(
            {"episodes": len(episodes), "claims": len(claims), "extractor": extractor.name},
            apply=apply,
        )

"""A LangChain retriever over orcamem's hybrid recall (``Memory.search``).

Each hit is one ``Document``: the recalled text (a passage's line, a memory's content) with
its kind, id, score, time and session in ``metadata``: the same hits, in the same order, as
``orcamem search`` shows for the space, evidence gate and abstention included. A retriever
feeds a prompt, so each text is redacted as the injected block is (``_kernel.redact``: a turn
observed with a key in it is kept, but never handed to a model in clear).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from .._kernel.redact import redact
from ..engine.memory import Memory

__all__ = ["OrcamemRetriever"]


class OrcamemRetriever(BaseRetriever):
    """``OrcamemRetriever(memory=Memory("memory.db"), space="user_alice", k=5)``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    space: str | None = None
    """The space searched (``None``: the Memory's default space)."""
    k: int = 5

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        result = self.memory.search(query, space=self.space, top_k=self.k)
        return [
            Document(page_content=redact(hit.text).text, metadata=_metadata(hit))
            for hit in result.hits
        ]


def _metadata(hit: Any) -> dict[str, Any]:
    fields = {
        "kind": hit.kind,
        "id": hit.id,
        "score": hit.score,
        "space": hit.space,
        "occurred_at": hit.occurred_at,
        "role": hit.role,
        "session_id": hit.session_id,
        "episode_id": hit.episode_id,
    }
    return {name: value for name, value in fields.items() if value is not None}

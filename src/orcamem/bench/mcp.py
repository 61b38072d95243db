"""``orma_recall`` latency as a coding agent sees it: over stdio, through the MCP SDK's client.

The server is a real subprocess (``python -m orcamem.interfaces.mcp.server``, the command
``orcamem mcp`` runs) on a database of N synthetic turns (the ``bench latency`` generator) plus
a few forbidden rules; each call is timed at the client from sending ``tools/call`` to having
the result, so JSON-RPC framing, the pipe, argument validation and the worker-thread hop are
all counted. The same queries through ``Memory.recall`` in-process give the baseline.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._kernel.env import child_environ
from ..engine.memory import Memory
from ..errors import InvalidInputError, OrcamemError
from .runs import _percentile, _Texts, _vocabulary, load_turns, machine

__all__ = ["mcp_recall_latency"]

Progress = Callable[[str, int, int], None]
SERVER_COMMAND = ("-m", "orcamem", "mcp")
"""`orcamem mcp`, run by this Python: the same server a user starts."""
RULES = (
    "Never chain PowerShell commands with semicolons.",
    "Never commit directly to the main branch.",
    "Never suggest adding a new dependency without asking first.",
)


def _load(path: Path, records: int, texts: _Texts, progress: Progress | None) -> None:
    with Memory(path, space="bench") as mem:
        load_turns(mem, texts, records, progress)
        for rule in RULES:
            mem.forbid(rule)


def _direct(path: Path, questions: Sequence[str]) -> list[float]:
    with Memory(path, space="bench") as mem:
        mem.recall(questions[0])  # warm the vector index once, as a server would
        samples = []
        for question in questions:
            begin = time.perf_counter()
            mem.recall(question)
            samples.append((time.perf_counter() - begin) * 1000)
    return samples


async def _over_stdio(
    path: Path, questions: Sequence[str], progress: Progress | None
) -> tuple[list[float], int]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = child_environ()
    params = StdioServerParameters(
        command=sys.executable,
        args=[*SERVER_COMMAND, "--db", str(path), "--space", "bench"],
        env=env,
    )
    samples: list[float] = []
    chars: list[int] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        warm = await session.call_tool("orma_recall", {"query": questions[0]})
        if warm.is_error:
            raise OrcamemError(f"orma_recall failed in the benchmark: {warm.content[0].text}")
        for i, question in enumerate(questions):
            begin = time.perf_counter()
            result = await session.call_tool("orma_recall", {"query": question})
            samples.append((time.perf_counter() - begin) * 1000)
            if result.is_error:
                raise OrcamemError(f"orma_recall failed in the benchmark: {result.content[0].text}")
            chars.append(len(result.content[0].text))
            if progress and i % 20 == 0:
                progress("orma_recall over stdio", i, len(questions))
    return samples, int(statistics.median(chars))


def mcp_recall_latency(
    records: int = 10000,
    calls: int = 200,
    *,
    progress: Progress | None = None,
    workdir: str | None = None,
) -> dict[str, Any]:
    """Time ``orma_recall`` over stdio through the SDK's ``ClientSession`` at ``records`` turns.

    Returns:
        ``{"transport": "stdio", "records", "calls", "recall_p50_ms", "recall_p95_ms",
        "direct_recall_p50_ms", "direct_recall_p95_ms", "overhead_p50_ms", "block_chars_p50",
        "machine"}``; ``direct_*`` is ``Memory.recall`` in-process on the same queries.
    """
    import anyio

    if records < 1 or calls < 1:
        raise InvalidInputError(f"records={records}, calls={calls}: use positive numbers")
    texts = _Texts(_vocabulary())
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = Path(tmp) / "bench.db"
        _load(path, records, texts, progress)
        questions = [texts.question() for _ in range(calls)]
        direct = _direct(path, questions)
        over_stdio, block_chars = anyio.run(_over_stdio, path, questions, progress)
    p50 = _percentile(over_stdio, 50)
    direct_p50 = _percentile(direct, 50)
    return {
        "transport": "stdio",
        "records": records,
        "calls": calls,
        "recall_p50_ms": round(p50, 3),
        "recall_p95_ms": round(_percentile(over_stdio, 95), 3),
        "direct_recall_p50_ms": round(direct_p50, 3),
        "direct_recall_p95_ms": round(_percentile(direct, 95), 3),
        "overhead_p50_ms": round(p50 - direct_p50, 3),
        "block_chars_p50": block_chars,
        "machine": machine(),
    }

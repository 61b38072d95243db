"""``orcamem bank …``: the Memory Bank from the command line (a thin skin over ``MemoryBank``).

Every command builds the bank the environment describes (``MemoryBank.from_env``: the
``INTERNAL_S3_BUCKET`` / ``S3_BUCKET`` buckets, the profiles file, the Anthropic processor), or,
with ``--dir PATH``, one kept in a local directory (``FileObjectStore``). Library errors become
one red line on stderr and the exit code of ``console.EXIT_CODES`` (2 for bad input).

Wire it with ``register(app)`` on the ``orcamem`` Typer app.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ...errors import OrcamemError
from .console import (
    JsonOption,
    command_group,
    fail,
    out,
    print_json,
)

if TYPE_CHECKING:
    from ...bank import MemoryBank

__all__ = ["bank_app", "register"]


bank_app = command_group("The Memory Bank: profile-scoped agent memory (see docs/memory-bank.md).")

DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        help="Keep the bank in this directory instead of the bucket the environment names.",
    ),
]
Profile = Annotated[str, typer.Argument(help="The profile (agent configuration), e.g. researcher.")]


@contextmanager
def _bank(directory: Path | None) -> Iterator[MemoryBank]:
    from ...bank import FileObjectStore, MemoryBank

    store = FileObjectStore(directory) if directory is not None else None
    try:
        with MemoryBank.from_env(objects=store) as bank:
            yield bank
    except OrcamemError as exc:
        raise fail(exc) from None
    finally:
        if store is not None:
            store.close()


@bank_app.command("save")
def save(
    profile: Profile,
    text: Annotated[str, typer.Argument(help="What to remember (at most 4 KiB).")],
    category: Annotated[
        str | None,
        typer.Option(help="preference, fact, behavior, context or general (saves pre-structured)."),
    ] = None,
    confidence: Annotated[float | None, typer.Option(help="0 to 1.")] = None,
    raw: Annotated[
        bool, typer.Option("--raw", help="Free text: let the processor extract the structure.")
    ] = False,
    directory: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Save a memory (returns once it is stored)."""
    with _bank(directory) as bank:
        if raw:
            saved = bank.save(profile, raw_input=text, category=category, confidence=confidence)
        else:
            saved = bank.save(profile, content=text, category=category, confidence=confidence)
        if as_json:
            print_json(saved.to_json())
        else:
            out.print(f"saved {saved.id} [{saved.category}] to profile {profile!r}", markup=False)


@bank_app.command("recall")
def recall(
    profile: Profile,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option(help="How many hits at most.")] = 8,
    min_score: Annotated[float, typer.Option("--min-score", help="The least score.")] = 0.05,
    directory: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rank the profile's memories for a query (counts an access of each hit)."""
    with _bank(directory) as bank:
        hits = bank.recall(profile, query, limit=limit, min_score=min_score)
        bank.flush()
        if as_json:
            print_json([hit.to_dict() for hit in hits])
            return
        for hit in hits:
            memory = hit.memory
            out.print(
                f"{hit.score:.3f}  {memory.id}  [{memory.category}] {memory.processed_content}",
                markup=False,
                highlight=False,
            )


@bank_app.command("list")
def list_memories(
    profile: Profile,
    limit: Annotated[int, typer.Option(help="Page size.")] = 50,
    offset: Annotated[int, typer.Option(help="Skip this many.")] = 0,
    directory: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the profile's memories, newest first (read-only)."""
    with _bank(directory) as bank:
        page = bank.list(profile, limit=limit, offset=offset)
        if as_json:
            print_json(
                {
                    "memories": [m.to_json() for m in page.memories],
                    "total": page.total,
                    "nextOffset": page.next_offset,
                }
            )
            return
        for memory in page.memories:
            out.print(
                f"{memory.id}  {memory.created_at[:10]}  [{memory.category}] {memory.summary}",
                markup=False,
                highlight=False,
            )
        out.print(f"{len(page.memories)} of {page.total}", markup=False)


@bank_app.command("delete")
def delete(
    profile: Profile,
    memory_id: Annotated[str, typer.Argument(help="The memory id (mem-xxxxxxxx).")],
    directory: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete one memory of the profile."""
    with _bank(directory) as bank:
        bank.delete(profile, memory_id)
        if as_json:
            print_json({"deleted": memory_id, "profile": profile})
            return
        out.print(f"deleted {memory_id} from profile {profile!r}", markup=False)


@bank_app.command("stats")
def stats(directory: DirOption = None) -> None:
    """Counts per profile, the storage, and any objects skipped as malformed (JSON)."""
    with _bank(directory) as bank:
        print_json(bank.stats())


@bank_app.command("inject")
def inject(
    profile: Profile,
    prompt: Annotated[str, typer.Argument(help="The run's prompt.")],
    directory: DirOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the prompt as an opted-in profile's run receives it (memory block first)."""
    with _bank(directory) as bank:
        if as_json:
            injection = bank.context(profile, prompt)
            bank.flush()
            print_json({"block": injection.block, "ids": injection.ids, "prompt": prompt})
            return
        text = bank.inject(profile, prompt)
        bank.flush()
        typer.echo(text)


def register(app: typer.Typer) -> None:
    """Add ``orcamem bank …`` to the ``orcamem`` app."""
    app.add_typer(bank_app, name="bank")

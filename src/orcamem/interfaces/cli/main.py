"""The ``orcamem`` command: a thin skin over ``Memory``. Parse, call one method, format.

Errors from the library become one red line on stderr and exit code 1 (2 for bad input).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ... import __version__
from ..._kernel import llm
from ..._kernel.config import Config, PackConfig
from ...errors import OrcamemError
from .console import (
    DbOption,
    EmbedderOption,
    JsonOption,
    LightCommand,
    SpaceOption,
    command_group,
    err,
    fail,
    load_settings,
    out,
    print_json,
    print_table,
    progress,
    warn,
)
from .server import AutoSleepOption, KeysOption, ModelOption, UpstreamOption

if TYPE_CHECKING:
    from ...engine import Memory
    from ...recall import Packed

app = command_group("orcamem: durable, local-first long-term memory for LLM agents.")


def _version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the orcamem version."
        ),
    ] = False,
) -> None:
    """Every command imports what it runs inside its own body (tests/test_cli_startup.py):
    ``--help``, a command's ``--help`` and ``--version`` load no system, server or numpy."""


@contextmanager
def _memory(
    db: Path | None,
    space: str = "default",
    embedder: str | None = None,
    config: Config | None = None,
    **flags: object,
) -> Iterator[Memory]:
    """Open a Memory with the settings (these flags over the environment and the file) and
    turn library errors into a clear message and exit code."""
    from ...engine import Memory

    loaded = load_settings(db=db, embedder=embedder, **flags)
    try:
        with Memory(
            loaded.settings.db,
            space=space,
            embedder=loaded.embedder,
            config=loaded.settings.config(config),
        ) as mem:
            yield mem
    except OrcamemError as exc:
        raise fail(exc) from None


def _is_file(text: str) -> bool:
    """Whether ``add``'s argument names a file: a note (a long word, CJK with no spaces, a
    NUL) that no file system takes as a name is not one."""
    try:
        return len(text) < 4096 and Path(text).is_file()
    except (OSError, ValueError):
        return False


@app.command()
def add(
    text: Annotated[
        str, typer.Argument(help="Text to remember, or the path of a text/Markdown file.")
    ],
    db: DbOption = None,
    space: SpaceOption = "default",
    role: Annotated[str | None, typer.Option(help="Who said it (user, assistant, a name).")] = None,
    session: Annotated[str | None, typer.Option(help="Session id.")] = None,
    occurred_at: Annotated[str | None, typer.Option(help="When it was said (ISO-8601).")] = None,
) -> None:
    """Add a note, or a whole file as passages, to memory."""
    path = Path(text)
    if _is_file(text) and (role, session, occurred_at) != (None, None, None):
        raise fail(
            "--role, --session and --occurred-at describe a note: a file is stored as "
            "documents without them (drop the flags, or pass the text itself)",
            2,
        )
    with _memory(db, space) as mem:
        if _is_file(text):
            episodes = mem.add_file(path)
            out.print(f"added {len(episodes)} passage(s) from {path} to space {space!r}")
        else:
            episode = mem.add(
                text,
                role=role,
                session_id=session,
                occurred_at=occurred_at,
                kind="turn" if role else "note",
            )
            out.print(f"added ep-{episode.id} to space {space!r}")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    db: DbOption = None,
    space: SpaceOption = "default",
    as_json: JsonOption = False,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many hits.")] = 10,
    explain: Annotated[bool, typer.Option(help="Show each hit's signal breakdown.")] = False,
    kind: Annotated[str | None, typer.Option(help="Only 'passage' or only 'memory' hits.")] = None,
    role: Annotated[str | None, typer.Option(help="Only passages said by this role.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session's hits.")] = None,
    since: Annotated[
        str | None, typer.Option(help="ISO-8601: only what occurred at or after it.")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="ISO-8601: only what occurred at or before it.")
    ] = None,
    category: Annotated[str | None, typer.Option(help="Only memories of this category.")] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option(help="key=value (repeatable): only passages whose episode metadata has it."),
    ] = None,
) -> None:
    """Search memory; prints ranked hits (with --explain, why each was chosen), only those
    that match the filters given."""
    from rich.table import Table

    from ...recall.filters import meta_pairs

    with _memory(db, space) as mem:
        filters = {
            "kind": kind,
            "role": role,
            "session": session,
            "since": since,
            "until": until,
            "category": category,
            "metadata": meta_pairs(meta or ()),
        }
        result = mem.search(query, top_k=top_k, filters=filters)
    if as_json:
        print_json(result.to_dict())
        return
    if not result.hits and not result.rules:
        out.print(f"no memories match in space {space!r}")
        return
    table = Table("score", "id", "when", "who", "text")
    if explain:
        table.add_column("why")
    for hit in [*result.rules, *result.hits]:
        row = [
            f"{hit.score:.3f}",
            hit.id,
            (hit.occurred_at or "")[:10],
            hit.role or hit.kind,
            hit.text[:160],
        ]
        if explain:
            row.append(" ".join(f"{k}={v:.3f}" for k, v in hit.breakdown.items() if v))
        table.add_row(*row)
    print_table(table)


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="The user's next message.")],
    db: DbOption = None,
    space: SpaceOption = "default",
    classic: Annotated[
        bool, typer.Option(help="Classic sections instead of dense brackets.")
    ] = False,
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            "--context-budget",
            help="Token budget of the block (WordPiece tokens; default: the context_budget "
            f"setting, else {PackConfig().context_budget_tokens}).",
        ),
    ] = None,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Then say why: each item in the block, and each ranked item left out with "
            "the reason (outdated, below the score cut, or the budget). A preview: nothing "
            "is marked accessed.",
        ),
    ] = False,
) -> None:
    """Print the exact memory block that would be injected before the next turn."""
    config = Config(pack=PackConfig(enable_sutra_packing=not classic))
    with _memory(db, space, config=config, context_budget=budget) as mem:
        if explain:
            packed = mem.explain(query)
            block = packed.block
        else:
            block = mem.recall(query)
    if block:
        sys.stdout.write(block + "\n")  # byte-exact: no wrapping by the console
    else:
        err.print(f"(nothing to inject for this query in space {space!r})")
    if explain:
        _print_why(packed)


def _print_why(packed: Packed) -> None:
    """``recall --explain``: one line per ranked item after the block, ``in`` with its signal
    breakdown or ``out`` with the reason it was left out (never wrapped, so one item is one
    line)."""
    lines = ["why this block:"]
    for hit in packed.used:
        why = " ".join(f"{k}={v:.3f}" for k, v in hit.breakdown.items() if v)
        lines.append(f"  in   {hit.score:.3f} {hit.id}: {hit.text[:80]!r} ({why})")
    for left in packed.left_out:
        hit = left.hit
        lines.append(f"  out  {hit.score:.3f} {hit.id}: {hit.text[:80]!r} ({left.detail})")
    for line in lines:
        out.print(line, soft_wrap=True, markup=False, highlight=False)


@app.command()
def forbid(
    rule: Annotated[str, typer.Argument(help="What must never be done.")],
    db: DbOption = None,
    space: SpaceOption = "default",
    always: Annotated[
        bool,
        typer.Option("--always", help="Hoist it into every block, not only where it bears."),
    ] = False,
) -> None:
    """Store a forbidden rule; recall hoists it first wherever it bears on the query."""
    with _memory(db, space) as mem:
        memory = mem.forbid(rule, always=always)
    out.print(f"forbidden rule {memory.id} stored in space {space!r}")


@app.command()
def facts(
    db: DbOption = None,
    space: SpaceOption = "default",
    as_json: JsonOption = False,
    history: Annotated[bool, typer.Option("--history", help="Include outdated memories.")] = False,
) -> None:
    """List the space's memories (facts, preferences, rules; --history adds outdated ones)."""
    from rich.table import Table

    with _memory(db, space) as mem:
        items = mem.facts(include_history=history)
    if as_json:
        print_json([m.to_dict() for m in items])
        return
    if not items:
        out.print(f"no memories in space {space!r} yet (add episodes, then `orcamem sleep`)")
        return
    table = Table("id", "category", "content", "created", "status")
    for m in items:
        status = (
            "forbidden"
            if m.prohibited
            else ("active" if m.active else f"outdated → {m.superseded_by or '?'}")
        )
        table.add_row(m.id, m.category, m.content[:120], m.created_at[:10], status)
    print_table(table)


@app.command()
def forget(
    item_id: Annotated[
        str, typer.Argument(metavar="ID", help="A memory id (mem-…) or episode id (ep-12).")
    ],
    db: DbOption = None,
    space: SpaceOption = "default",
    close: Annotated[
        bool,
        typer.Option("--close", help="Close the memory (kept in history) instead of deleting."),
    ] = False,
) -> None:
    """Delete one memory (mem-…) or one episode (ep-12, with its indexed lines); with
    --close, close the memory instead: it stays in `facts --history`, never current.

    A bare number is refused: it could mean a fact or an episode, and a guess would delete the
    wrong thing."""
    if close:
        with _memory(db, space) as mem:
            closed = mem.close_memory(item_id)
        out.print(f"closed {closed.id} in space {space!r} at {closed.updated_at}")
        return
    number = item_id.strip()
    if number.isascii() and number.isdigit():
        raise fail(
            f"{item_id!r} is ambiguous: run `orcamem forget mem-…` to forget a fact (ids from "
            f"`orcamem facts`) or `orcamem forget ep-{number}` to delete episode {number}"
        )
    with _memory(db, space) as mem:
        mem.forget(item_id)
    out.print(f"forgot {item_id} in space {space!r}")


@app.command()
def edit(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory (mem-…) to correct.")],
    text: Annotated[str, typer.Argument(help="Its corrected text.")],
    db: DbOption = None,
    space: SpaceOption = "default",
) -> None:
    """Correct a memory: a new version supersedes it; the old one stays in `facts --history`."""
    with _memory(db, space) as mem:
        edited = mem.edit_memory(memory_id, text)
    out.print(f"{edited.id} supersedes {memory_id} in space {space!r}")


@app.command()
def pin(
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="The memory (mem-…) to pin.")],
    db: DbOption = None,
    space: SpaceOption = "default",
    unpin: Annotated[bool, typer.Option("--unpin", help="Unpin it instead.")] = False,
) -> None:
    """Pin a memory: it no longer decays, and ranks higher where a query bears on it (never
    injected where none does)."""
    with _memory(db, space) as mem:
        memory = mem.pin(memory_id, not unpin)
    out.print(f"{'pinned' if memory.pinned else 'unpinned'} {memory.id} in space {space!r}")


@app.command()
def stats(db: DbOption = None, space: SpaceOption = "default", as_json: JsonOption = False) -> None:
    """Counts, embedder and database size."""
    from rich.table import Table

    with _memory(db, space) as mem:
        data = mem.stats()
    if as_json:
        print_json(data)
        return
    table = Table("key", "value", show_header=False)
    for key, value in data.items():
        table.add_row(key, json.dumps(value) if isinstance(value, (dict, list)) else str(value))
    print_table(table)


@app.command()
def sleep(
    db: DbOption = None,
    space: SpaceOption = "default",
    upstream: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible base URL of a chat model (Ollama, llama.cpp); with --model "
            f"alone: {llm.OLLAMA_URL} (a local Ollama)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="The model name at --upstream.")] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed", help="Re-open a failed batch's job for fresh attempts and run it."
        ),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="If another worker holds a batch, wait for its lease to expire and take it over.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Consolidate pending episodes into states, events and rules (no model needed).

    With --upstream/--model (or ANTHROPIC_API_KEY set) a chat model extracts; --model alone
    asks a local Ollama; without, the rule-based consolidator does. Either way every claim is
    verified by code first. A batch whose job failed is reported (exit 1) until --retry-failed;
    episodes waiting behind a batch another worker holds are reported until its lease expires
    (--wait takes it over).
    """
    from ..._kernel.llm import make_chat_model

    chosen = load_settings(db=db, upstream=upstream, model=model).settings
    upstream, model = chosen.upstream, chosen.model  # flags, else the upstream/model settings
    try:
        chat = make_chat_model(upstream, model)
    except OrcamemError as exc:
        raise fail(exc) from None
    with _memory(db, space) as mem, progress("sleeping") as update:
        report = mem.sleep(model=chat, progress=update, retry_failed=retry_failed, wait=wait)
    if chat is not None:
        chat.close()
    if as_json:
        print_json(report.to_dict())
        if report.failed_batches:
            raise typer.Exit(1)
        return
    out.print(report.summary(space))
    for failure in report.failures:
        warn(str(failure), "model output unusable, rules used instead")
    defaulted = bool(model and not upstream and chat is not None and llm.OLLAMA_URL in chat.id)
    if report.failures and defaulted:
        warn(
            f"no model answered at {llm.OLLAMA_URL} (where --model alone looks): start Ollama, or "
            "pass --upstream URL for another server"
        )
    if report.waiting:
        held = report.waiting
        out.print(
            f"{held['episodes']} episode(s) wait behind a batch ({held['batch']}, job "
            f"{held['job']}) leased by another worker ({held['worker']}) until {held['until']}: "
            "run `orcamem sleep --wait` to take it over when the lease expires",
            markup=False,
            highlight=False,
        )
    for failed in report.failed_batches:
        out.print(
            f"batch {failed['batch']} (job {failed['job']}) failed: {failed['error']}; run "
            "`orcamem sleep --retry-failed` to give it new attempts",
            markup=False,
            highlight=False,
        )
    if report.failed_batches:
        raise typer.Exit(1)


@app.command()
def spaces(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List the spaces in the database."""
    with _memory(db) as mem:
        names = mem.spaces()
    if as_json:
        print_json(names)
    else:
        out.print("\n".join(names) if names else "no spaces yet", markup=False)


@app.command("delete-space")
def delete_space(
    space: Annotated[str, typer.Argument(help="The space to delete, with all it holds.")],
    confirm: Annotated[
        str | None,
        typer.Option(help="The space name again (else it is asked for): a typed confirmation."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Delete a whole space: episodes, memories, rules, audit log, jobs. Irreversible.

    GDPR's "forget this user": `orcamem export --space NAME` first to keep a copy.
    """
    if confirm is None:
        confirm = typer.prompt(f"type {space} to delete it and everything it holds")
    if confirm != space:
        raise fail(f"{confirm!r} does not repeat the space name {space!r}: nothing was deleted", 2)
    with _memory(db) as mem:
        gone = mem.delete_space(space)
    counts = ", ".join(f"{n} {kind}" for kind, n in gone.items())
    out.print(f"deleted space {space!r}: {counts}", markup=False, highlight=False)


@app.command("export")
def export_(
    output: Annotated[
        Path | None, typer.Option("--out", "-o", help="File to write (default stdout).")
    ] = None,
    db: DbOption = None,
    space: SpaceOption = "default",
) -> None:
    """Export a space as JSON lines (lossless: `orcamem import` restores it).

    The file is written beside --out and renamed over it once complete, so a failed or
    mistaken export (an unknown space, a mistyped --db) leaves an earlier backup as it was.
    """
    target = load_settings(db=db).settings.db
    if target and "://" not in target and target != ":memory:" and not Path(target).exists():
        raise fail(f"no database at {target}: check --db (export never creates one)")
    with _memory(db, space) as mem:
        if space not in mem.spaces():
            raise fail(f"no space {space!r} in {mem.path}: `orcamem spaces` lists them")
        count = mem.export(sys.stdout) if output is None else _export_to(mem, output)
    err.print(f"exported {count} records from space {space!r}")


def _export_to(mem: Memory, output: Path) -> int:
    """Export into a temporary file beside ``output``, then rename it over ``output`` (a
    device or a pipe, ``/dev/stdout``, is written as it is)."""
    special = output.exists() and not output.is_file() and not output.is_dir()
    partial = output if special else output.with_name(f".{output.name}.partial")
    try:
        with partial.open("w", encoding="utf-8") as handle:
            count = mem.export(handle)
            handle.flush()
            if not special:
                os.fsync(handle.fileno())
        if not special:
            os.replace(partial, output)
    except OSError as exc:
        raise fail(f"cannot write {output}: {exc.strerror or exc}") from None
    finally:
        if not special:
            partial.unlink(missing_ok=True)
    return count


IMPORT_FORMATS = ("orcamem", "chatgpt", "claude", "claude-code", "mcp-memory", "mem0")


@app.command("import")
def import_(
    source: Annotated[
        Path,
        typer.Argument(
            help="A file written by `orcamem export` (- for stdin), or with --from another "
            "tool's export (a directory of transcripts for claude-code)."
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--from",
            help="What the file is: orcamem (an export), chatgpt (conversations.json), claude "
            "(Claude.ai's conversations.json), claude-code (session JSONL), mcp-memory "
            "(memory.jsonl), mem0 (get_all JSON).",
        ),
    ] = "orcamem",
    db: DbOption = None,
    space: SpaceOption = "default",
) -> None:
    """Import an export file into a space (records already present are skipped)."""
    if fmt not in IMPORT_FORMATS:
        raise fail(f"--from {fmt!r} is not a format: use one of {', '.join(IMPORT_FORMATS)}", 2)
    if fmt != "orcamem":
        with _memory(db, space) as mem, progress("importing") as update:
            counts = mem.import_history(fmt, source, progress=update)
        out.print(
            f"imported {counts['episodes']} episodes in {counts['sessions']} sessions "
            f"from {fmt} into {space!r} ({counts['skipped']} already present)"
        )
        return
    with _memory(db, space) as mem:
        if str(source) == "-":
            lines = sys.stdin.read().split("\n")
        else:
            try:
                # split on "\n" only: a JSON string may hold U+2028, which splitlines() splits on
                lines = source.read_text(encoding="utf-8").split("\n")
            except (OSError, UnicodeDecodeError) as exc:
                raise fail(f"cannot read {source}: {exc}", 2) from None
        with progress("importing") as update:
            counts = mem.import_jsonl(lines, progress=update)
    out.print(
        f"imported {counts['episodes']} episodes and {counts['memories']} memories "
        f"into {space!r} ({counts['skipped']} already present"
        + (
            f", {counts['updated']} updated to the file's newer state)"
            if counts["updated"]
            else ")"
        )
    )


@app.command()
def reembed(
    db: DbOption = None, space: SpaceOption = "default", embedder: EmbedderOption = None
) -> None:
    """Re-embed a space with the current embedder (episodes and memories untouched)."""
    with _memory(db, space, embedder=embedder) as mem:
        with progress("re-embedding") as update:
            count = mem.reembed(progress=update)
        out.print(f"re-embedded {count} vectors in space {space!r} with {mem.embedder.id}")


@app.command()
def check(db: DbOption = None, as_json: JsonOption = False) -> None:
    """Verify the database: SQLite file, full-text indexes, vectors, digests, lineage, graph.

    Reads only. Exit 0 when healthy, 1 when a problem is found; each problem is one line that
    says what to run next (most often `orcamem repair`).
    """
    with _memory(db) as mem:
        report = mem.check()
    if as_json:
        print_json(report.to_dict())
    else:
        for problem in report.problems:
            out.print(f"{problem.kind}: {problem.message}", markup=False, highlight=False)
        if report.ok:
            counts = ", ".join(f"{n} {table}" for table, n in report.counts.items())
            out.print(f"healthy: checked {counts}", markup=False, highlight=False)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def repair(
    db: DbOption = None, embedder: EmbedderOption = None, as_json: JsonOption = False
) -> None:
    """Rebuild damaged indexes and vectors and clear dangling lineage; safe to run again.

    Episodes are never changed. Exit 0 when `orcamem check` is clean afterwards, 1 when a
    problem only a backup can fix remains (it is printed with what to do).
    """
    with _memory(db, embedder=embedder) as mem:
        report = mem.repair()
    if as_json:
        print_json(report.to_dict())
    else:
        if not report.actions:
            out.print("nothing to repair")
        for action in report.actions:
            out.print(f"repaired: {action}", markup=False, highlight=False)
        for problem in report.remaining:
            out.print(f"{problem.kind}: {problem.message}", markup=False, highlight=False)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def demo(
    db: DbOption = None,
    space: SpaceOption = "demo",
) -> None:
    """Ingest the bundled sample conversation and answer a few recall queries."""
    from ...engine.demo import run_demo

    with _memory(db, space) as mem:
        for title, block in run_demo(mem):
            out.rule(title)
            sys.stdout.write(block + "\n")


config_app = command_group(
    "The settings every command and server runs with: defaults < [orcamem] in "
    "$ORCA_HOME/config.toml < ORCAMEM_* variables < flags (docs/configuration.md)."
)
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(
    db: DbOption = None,
    embedder: EmbedderOption = None,
    timezone: Annotated[str | None, typer.Option(help="The user's IANA time zone.")] = None,
    context_budget: Annotated[
        int | None, typer.Option(help="The memory block's budget (WordPiece tokens).")
    ] = None,
    auto_sleep: AutoSleepOption = None,
    upstream: UpstreamOption = None,
    model: ModelOption = None,
    require_keys: KeysOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print each setting with its value and origin (default | file | env | flag); the flags
    show what a command given them would run with. API keys are shown masked."""
    loaded = load_settings(
        db=db,
        embedder=embedder,
        timezone=timezone,
        context_budget=context_budget,
        auto_sleep=auto_sleep,
        upstream=upstream,
        model=model,
        require_keys=require_keys,
    )
    rows = loaded.rows()
    if as_json:
        print_json({row.pop("name"): row for row in rows})
        return
    for row in rows:  # one line each, whatever the terminal's width
        value = "(unset)" if row["value"] is None else row["value"]
        origin = " ".join(part for part in (row["origin"], row["where"]) if part)
        out.print(f"{row['name']} = {value}  ({origin})", markup=False, highlight=False)


@app.command(cls=LightCommand)
def version() -> None:
    """Print the orcamem version."""
    typer.echo(__version__)


from .bank import register as register_bank_commands  # noqa: E402
from .bench import bench_app  # noqa: E402 - the sub-app needs the helpers above
from .capability import register as register_capability_commands  # noqa: E402
from .hooks import register as register_hooks_commands  # noqa: E402
from .local import register as register_local_commands  # noqa: E402
from .server import register as register_server_commands  # noqa: E402
from .turn import register as register_turn_commands  # noqa: E402

app.add_typer(bench_app, name="bench")
register_server_commands(app)
register_bank_commands(app)
register_capability_commands(app)
register_local_commands(app)  # `remember` (user.md / project memory.md) and `memory …`
register_turn_commands(app)  # `turn start|before|after`: JSON on stdin, for any agent host
register_hooks_commands(app)  # `hooks install|uninstall|status|run`: Claude Code, Codex


def main() -> None:
    app()


if __name__ == "__main__":
    main()

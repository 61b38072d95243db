"""``orcamem remember`` and ``orcamem memory …``: local agent memory from the shell.

A thin skin over ``LocalMemory``: each command opens the current project's memory (no session
worker: the shell is not an agent session), calls one method and prints the result. Library
errors become one red line on stderr and exit code 1 (2 for bad input).
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...errors import OrcamemError
from .console import (
    JsonOption,
    command_group,
    err,
    fail,
    out,
    print_json,
    print_table,
    warn,
)

if TYPE_CHECKING:
    from ...local.memory import LocalMemory

__all__ = ["memory_app", "register"]


memory_app = command_group(
    "Local agent memory: explicit facts, automatic project memory, its ledger and jobs."
)

CwdOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd", help="The working directory that decides the project (default: the current one)."
    ),
]

DELETE_PROCEDURE = """\
Safe full deletion of this project's memory (orcamem deletes nothing by itself):

  1. set auto_memory = false (in {user_config} or the trusted project's .orca/config.toml)
     and exit every Orca / orcamem process that uses the project;
  2. inspect {project_json} and confirm it names this project
     (project_identity, last_seen_cwd);
  3. move that one directory to the Trash or another recoverable place:
       {project_dir}
  4. restart.

Deleting only auto-memory.md or index.sqlite3 clears nothing: both are rebuilt from
candidates.jsonl. Deleting only candidates.jsonl leaves the job evidence in jobs/ and is not a
complete reset. Explicit user-wide facts live in {user_md}: delete it separately, and only to
remove them. To delete single automatic candidates, use
`orcamem memory forget ID --revision N` (revisioned and idempotent; see `orcamem memory list`).
"""


@contextmanager
def _local(cwd: Path | None, model: Any = None) -> Iterator[LocalMemory]:
    from ...local.memory import LocalMemory

    try:
        with LocalMemory(cwd, model=model, start=False) as memory:
            yield memory
    except OrcamemError as exc:
        raise fail(exc) from None


def remember(
    text: Annotated[
        str,
        typer.Argument(help='The fact; start it with "project:" to keep it with this project.'),
    ],
    cwd: CwdOption = None,
) -> None:
    """Remember an explicit fact: in memory/user.md, or with "project: …" in the project's
    memory.md. Both are loaded (up to 8 KiB each) when a session starts."""
    with _local(cwd) as memory:
        result = memory.remember(text)
    where = "user facts" if result.scope == "user" else "project facts"
    verb = "remembered" if result.added else "already remembered"
    out.print(f"{verb} in {where}: {result.path}", highlight=False, soft_wrap=True)
    if not result.loaded:
        warn(
            f"{result.path.name} is over the 8 KiB a session loads and this fact lies past "
            "them: it is stored, but no session sees it until you shorten the file "
            "(`orcamem memory context` prints what loads)"
        )


@memory_app.command("show")
def show(cwd: CwdOption = None, as_json: JsonOption = False) -> None:
    """Where this project's memory lives, whether automatic memory is on, counts, problems."""
    from rich.table import Table

    with _local(cwd) as memory:
        data = memory.status()
    if as_json:
        print_json(data)
        return
    table = Table("key", "value", show_header=False)
    for key, value in data.items():
        shown = json.dumps(value) if isinstance(value, (dict, list)) else str(value)
        table.add_row(key, shown)
    print_table(table)


@memory_app.command("context")
def context(cwd: CwdOption = None) -> None:
    """Print the explicit facts a session loads at start (user.md and memory.md, bounded)."""
    with _local(cwd) as memory:
        text = memory.session_context()
    if text:
        sys.stdout.write(text)
    else:
        err.print("(no explicit facts yet: add one with `orcamem remember`)")


@memory_app.command("recall")
def recall(
    prompt: Annotated[str, typer.Argument(help="The prompt of the next turn.")],
    cwd: CwdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the automatic memory a turn with this prompt would be given (at most six
    entries, 3,072 bytes)."""
    with _local(cwd) as memory:
        if not memory.enabled:
            if as_json:
                print_json({"enabled": False, "text": "", "entries": [], "source": None})
                return
            err.print(f"(automatic memory is off: {memory.setting.source})")
            return
        text, entries, source, _, problems = memory.recall(prompt)
    if as_json:
        print_json(
            {
                "enabled": True,
                "text": text,
                "entries": [entry.id for entry in entries],
                "source": source,
                "problems": problems,
            }
        )
        return
    for problem in problems:
        warn(problem)
    if text:
        sys.stdout.write(text)
    else:
        err.print("(no automatic memory is relevant to this prompt)")
    err.print(f"(source: {source})")


@memory_app.command("list")
def list_(cwd: CwdOption = None, as_json: JsonOption = False) -> None:
    """List the automatic candidates with their ids, provenance and the ledger revision."""
    from rich.table import Table

    with _local(cwd) as memory:
        state = memory.candidates()
    if as_json:
        print_json(
            {
                "revision": state.revision,
                "candidates": [c.to_json() for c in state.candidates],
                "corrupt_lines": [c.describe() for c in state.corrupt],
            }
        )
        return
    out.print(f"ledger revision {state.revision}: {len(state.candidates)} candidate(s)")
    if state.candidates:
        table = Table("id", "category", "text", "session", "turn", "recorded")
        for c in reversed(state.candidates):
            table.add_row(
                c.id, c.category, c.text, c.session_id or "-", c.turn_id or "-", c.recorded_at[:19]
            )
        print_table(table)
    for line in state.corrupt:
        warn(f"{line.describe()} (kept as is)", "unreadable ledger")


@memory_app.command("forget")
def forget(
    ids: Annotated[
        list[str] | None, typer.Argument(help="Candidate ids (cand-…) to delete.")
    ] = None,
    revision: Annotated[
        int,
        typer.Option(
            help="The ledger revision you saw in `orcamem memory list` (stale: nothing happens)."
        ),
    ] = -1,
    all_: Annotated[
        bool, typer.Option("--all", help="Delete every candidate of that revision.")
    ] = False,
    cwd: CwdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete automatic candidates, revisioned and idempotent (a repeated request changes nothing)."""
    if revision < 0:
        raise fail("pass --revision N (see `orcamem memory list`)", 2)
    if bool(ids) == all_:
        raise fail("name candidate ids, or pass --all (not both)", 2)
    with _local(cwd) as memory:
        result = memory.forget(None if all_ else list(ids or []), revision=revision)
    if as_json:
        print_json(
            {
                "deleted": list(result.deleted),
                "revision": result.revision,
                "repeated": result.repeated,
                "problems": list(result.problems),
            }
        )
        return
    if result.repeated:
        out.print(
            f"already done: {len(result.deleted)} candidate(s) were deleted by this request; "
            f"the ledger is at revision {result.revision}"
        )
    else:
        out.print(
            f"deleted {len(result.deleted)} candidate(s); the ledger is at revision "
            f"{result.revision}"
        )


@memory_app.command("repair")
def repair(cwd: CwdOption = None) -> None:
    """Rebuild auto-memory.md and index.sqlite3 from candidates.jsonl if they are stale."""
    with _local(cwd) as memory:
        problems = memory.repair()
    for problem in problems:
        warn(problem, "problem")
    if problems:
        raise typer.Exit(1)
    out.print("derived files match the ledger")


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """A terminated ``memory work`` (an agent closing, a hook's timeout) ends like Ctrl-C: the
    job whose model is answering gives its lease back without using an attempt."""
    raise SystemExit(128 + signum)


@memory_app.command("work")
def work(
    upstream: Annotated[
        str | None,
        typer.Option(help="OpenAI-compatible base URL of the auxiliary model."),
    ] = None,
    model: Annotated[str | None, typer.Option(help="The model name at --upstream.")] = None,
    max_jobs: Annotated[int, typer.Option("--max", help="Run at most this many jobs.")] = 64,
    cwd: CwdOption = None,
) -> None:
    """Run this project's pending extraction jobs now (normally a session's worker does)."""
    from ..._kernel.llm import make_chat_model

    try:
        chat = make_chat_model(upstream, model)
    except OrcamemError as exc:
        raise fail(exc) from None
    if chat is None:
        raise fail("no model: pass --upstream URL --model M", 2)
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        with _local(cwd, model=chat) as memory:
            outcomes = memory.run_jobs(max_jobs)
    finally:
        signal.signal(signal.SIGTERM, previous)
        chat.close()
    for ran in outcomes:
        job = ran.job.id if ran.job else "-"
        out.print(f"{job}: {ran.outcome}" + (f" ({ran.error})" if ran.error else ""))
    if not outcomes:
        out.print("no extraction job is ready")


@memory_app.command("delete-project")
def delete_project(cwd: CwdOption = None) -> None:
    """Show the safe procedure to delete this project's whole memory (deletes nothing)."""
    from ..._kernel.env import user_config_file

    with _local(cwd) as memory:
        sys.stdout.write(
            DELETE_PROCEDURE.format(
                user_config=user_config_file(),
                project_json=memory.files.project_json,
                project_dir=memory.files.dir,
                user_md=memory.layout.user_md,
            )
        )


def register(app: typer.Typer) -> None:
    """Add ``remember`` and the ``memory`` sub-commands to the ``orcamem`` app."""
    app.command("remember")(remember)
    app.add_typer(memory_app, name="memory")

"""What every ``orcamem`` sub-command shares: the consoles, the common options, the one error
printer and the one exit-code table, JSON output and a progress bar.

Library errors become one red line on stderr (the message escaped, so a path or a value in
square brackets prints as it is) and an exit code from :data:`EXIT_CODES`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from ...errors import InvalidInputError, OrcamemError

if TYPE_CHECKING:
    from rich.console import Console

    from ..._kernel.settings import Loaded

__all__ = [
    "EXIT_CODES",
    "DbOption",
    "EmbedderOption",
    "JsonOption",
    "LazyConsole",
    "LightCommand",
    "LightGroup",
    "SpaceOption",
    "command_group",
    "err",
    "exit_code",
    "fail",
    "load_settings",
    "out",
    "print_json",
    "progress",
    "warn",
]


class LazyConsole:
    """A rich ``Console`` made on first use, so that a help screen, or a hook that prints
    nothing through it, never imports rich (about 50 modules).

    Attribute reads and writes go to the console (``out.print(...)``, ``out.width = 40``);
    :attr:`console` is the console itself, for a rich API that takes one.
    """

    def __init__(self, **options: Any) -> None:
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_made", None)
        object.__setattr__(self, "_lock", threading.Lock())

    @property
    def console(self) -> Console:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    from rich.console import Console

                    object.__setattr__(self, "_made", Console(**self._options))
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.console, name, value)


# soft_wrap: a long path or id is printed whole on one line, never broken where the terminal
# happens to end (output must not depend on the terminal's width)
out = LazyConsole(soft_wrap=True)
err = LazyConsole(stderr=True, soft_wrap=True)


def print_table(table: Any, **options: Any) -> None:
    """Print a rich table on ``out``; piped or captured, at its natural width.

    Off a terminal rich lays a table out in 80 columns (or ``$COLUMNS``), cutting headers and
    numbers to ``…``: what a script or a test reads would depend on the environment. Only a
    terminal's own width is honoured.
    """
    console = out.console
    if not console.is_terminal:
        from rich.measure import Measurement

        natural = Measurement.get(console, console.options.update_width(100_000), table).maximum
        console.width = max(natural, console.width)
    console.print(table, **options)


EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (InvalidInputError, 2),
    (OrcamemError, 1),
)
"""The exit code of a library error, first match wins: 2 for input that breaks a rule (a bad
name, size, option value or file), 1 for everything else (an unknown id, the store, a model,
a server). Usage errors that Typer itself finds exit 2 too."""


def _db_path(value: str) -> Path:
    """``--db`` as given: a URL is kept whole (``Path`` would fold its ``//``), so the store
    refuses it by name instead of opening a file under a directory ``postgresql:``."""
    return value if "://" in value else Path(value)  # type: ignore[return-value]


DbOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        parser=_db_path,
        help="Database file or URL (default: the db setting, $ORCAMEM_DB, else "
        "$ORCA_HOME/memory.db; `orcamem config show`).",
    ),
]
SpaceOption = Annotated[
    str, typer.Option("--space", "-s", help="The memory space (isolation unit).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
EmbedderOption = Annotated[
    str | None,
    typer.Option(
        "--embedder", help="Embedder spec: static (default), openai:<model>@<url>, st:<model>."
    ),
]


class _HelpIsFalse:
    """A ``--help`` flag that is ``False`` when not given.

    Typer leaves it ``None`` and converts a ``None`` through a pydantic adapter: without this,
    ``orcamem CMD --help`` and ``orcamem --version`` imported pydantic (about 0.15 s of CPU) to
    learn that the group above the command was not asked for its help.
    """

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and option.default is None:
            option.default = False
        return option


class LightGroup(_HelpIsFalse, TyperGroup):
    """Every orcamem group (:func:`command_group`)."""


class LightCommand(_HelpIsFalse, TyperCommand):
    """A command without parameters of its own (``orcamem version``): its ``--help`` alone
    would import pydantic."""


def command_group(help: str, **options: Any) -> typer.Typer:
    """A Typer app for a group of commands, set up the way every orcamem group is: help on a
    bare call, plain help text (no Rich markup to escape), a light ``--help``
    (:class:`LightGroup`), no shell-completion options (run alone, as ``orcamem hooks`` and
    ``orcamem turn`` are, a group would otherwise offer them)."""
    options.setdefault("add_completion", False)
    return typer.Typer(
        cls=LightGroup, help=help, no_args_is_help=True, rich_markup_mode=None, **options
    )


def exit_code(exc: BaseException) -> int:
    """The exit code :data:`EXIT_CODES` gives ``exc``."""
    return next((code for kind, code in EXIT_CODES if isinstance(exc, kind)), 1)


def fail(exc: OrcamemError | str, code: int | None = None) -> typer.Exit:
    """Print ``error: <message>`` on stderr and return the ``typer.Exit`` to raise.

    ``exc`` is a library error (its exit code from :data:`EXIT_CODES`) or a usage message
    (exit code 2 unless ``code`` says otherwise).
    """
    from rich.markup import escape

    message = str(exc)
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    if code is None:
        code = 2 if isinstance(exc, str) else exit_code(exc)
    return typer.Exit(code)


def load_settings(**flags: Any) -> Loaded:
    """The settings with the flags a command was given (``None``: not given); a bad value is
    one error line and exit 2 (``_kernel.settings.load``; pydantic loads only when a command
    needs the settings, so ``--help`` and ``version`` stay light)."""
    from ..._kernel.settings import load

    if isinstance(flags.get("db"), Path):
        flags["db"] = str(flags["db"])
    try:
        return load(flags)
    except OrcamemError as exc:
        raise fail(exc) from None


def warn(message: str, label: str = "note") -> None:
    """A yellow ``label:`` then the message (escaped) on stderr."""
    from rich.markup import escape

    err.print(f"[yellow]{escape(label)}:[/yellow] {escape(message)}", highlight=False)


def print_json(data: Any) -> None:
    """``data`` as JSON on stdout (indented; colour only on a terminal)."""
    out.print_json(json.dumps(data, ensure_ascii=False, default=str))


@contextmanager
def progress(label: str, *, quiet: bool = False) -> Iterator[Callable[..., None]]:
    """A transient progress bar on stderr; yields ``update(done, total, description=None)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err.console,
        transient=True,
        disable=quiet,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int, description: str | None = None) -> None:
            bar.update(task, completed=done, total=total, description=description or label)

        yield update

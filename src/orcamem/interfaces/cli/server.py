"""``orcamem up / serve / proxy / mcp / keys``: run orcamem as a service.

``up``, ``serve`` and ``proxy`` consolidate in the background by default (``SleepConfig(auto=True)``:
the ``--model`` when one is named, else the rules); ``--no-auto-sleep`` turns it off.
``--model`` without ``--upstream`` forwards to a local Ollama (``OLLAMA_URL``), as the seed's
``orcamem proxy --model llama3.2:3b`` expects; a model server that does not answer at start is
one warning line naming the URL and the flag (the proxy still starts: the server may come up
later). ``up`` opens the browser only once its own ``/healthz`` answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..._kernel import llm
from ..._kernel.env import PROFILE_ENV
from ..._kernel.redact import safe_url
from ...errors import InvalidInputError, OrcamemError
from .console import (
    DbOption,
    EmbedderOption,
    SpaceOption,
    command_group,
    err,
    fail,
    load_settings,
    out,
    print_table,
    warn,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ...bank import MemoryBank
    from ...engine.memory import Memory
    from ..http.settings import ServerSettings


def open_browser(url: str) -> bool:
    """How ``up`` opens the UI (tests put a recorder here instead of a real browser)."""
    import webbrowser

    return webbrowser.open(url)


BROWSER_WAIT_S = 30.0
"""How long ``up`` waits for its own ``/healthz`` before giving up on the browser."""

keys_app = command_group("API keys for servers that bind beyond loopback.")

HostOption = Annotated[
    str, typer.Option(help="Address to bind (anything but loopback needs --require-keys).")
]
PortOption = Annotated[int, typer.Option(help="Port to listen on.")]
UpstreamOption = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible base URL to forward chat to, e.g. http://127.0.0.1:9931/v1 "
        f"(llama.cpp); with --model alone: {llm.OLLAMA_URL} (a local Ollama)."
    ),
]
ModelOption = Annotated[str | None, typer.Option(help="Model to use when a request names none.")]
WorkspaceOption = Annotated[
    Path | None,
    typer.Option(help="Host workspace whose memory capability /api/capability reports and sets."),
]
KeysOption = Annotated[
    bool | None,
    typer.Option(
        "--require-keys/--no-require-keys",
        help="Require API keys on every request (default: the require_keys setting, else off).",
    ),
]
AllowedHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        help="A name clients reach the server by (Host/Origin header; repeat). Loopback names "
        "and the bound address are always allowed; anything else is refused (DNS rebinding).",
    ),
]
AutoSleepOption = Annotated[
    bool | None,
    typer.Option(
        "--auto-sleep/--no-auto-sleep",
        help="Consolidate in the background (a space idle for 2 minutes, or 32 pending turns): "
        "with --model by that model, else by the rules (no model call). Default: the "
        "auto_sleep setting, else on.",
    ),
]
LogBlocksOption = Annotated[
    bool | None,
    typer.Option(
        "--log-blocks/--no-log-blocks",
        help="Log every injected block (time, space, surface, item ids, tokens, the query's "
        "hash; never text unless the log_block_content setting is on): GET /api/blocks. "
        "Default: the log_blocks setting, else off.",
    ),
]
BankOption = Annotated[
    str | None,
    typer.Option(
        "--bank",
        help="Memory Bank storage: 'file' ($ORCA_HOME/bank) or 'memory' (lost at exit). Default: "
        "$ORCAMEM_BANK, else the bucket INTERNAL_S3_BUCKET/S3_BUCKET names, else 'file'.",
    ),
]
WorkersOption = Annotated[
    int,
    typer.Option(
        min=1,
        max=64,
        help="Server processes on the one port and database (each its own connections; "
        "SQLite: one writer at a time, reads in parallel). A process runs Python on one core "
        "at a time: try the number of cores.",
    ),
]
ProfileOption = Annotated[
    str | None,
    typer.Option(
        "--profile",
        envvar=PROFILE_ENV,
        help="The profile the Memory Bank tools work on (stdio). Its tools in the profiles file "
        "must select @memory or a memory_* tool. Over --http each client names its own: "
        "/mcp?profile=NAME.",
    ),
]


def _bank(storage: str | None) -> MemoryBank:
    """The Memory Bank every MCP transport and the REST API serve: ``MemoryBank.from_env``."""
    from ...bank import MemoryBank

    return MemoryBank.from_env(role="conductor", storage=storage)


def _check_upstream(upstream: str) -> None:
    """Warn, in one line, when no model server answers at ``upstream`` (``GET /models``)."""
    import httpx

    from ..._kernel.http import client

    try:
        with client(timeout=2.0) as http:
            http.get(f"{upstream.rstrip('/')}/models")
    except httpx.HTTPError as exc:
        warn(
            f"no model server answers at {safe_url(upstream)} ({type(exc).__name__}): chats "
            "fail with a "
            "JSON error naming it until one does; start it (Ollama: `ollama serve`) or pass "
            "--upstream URL"
        )


def _open_when_up(url: str, health: str) -> None:
    """Open ``url`` in the browser once ``health`` answers 200 (polled, at most
    ``BROWSER_WAIT_S`` seconds), from a daemon thread: the server starts on this one."""
    import httpx

    from ..._kernel.http import client

    def wait_then_open() -> None:
        deadline = time.monotonic() + BROWSER_WAIT_S
        with client(timeout=1.0) as http:
            while time.monotonic() < deadline:
                try:
                    if http.get(health).status_code == 200:
                        open_browser(url)
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.05)
        warn(f"the server did not answer {health} in {BROWSER_WAIT_S:.0f} s: open {url} yourself")

    threading.Thread(target=wait_then_open, name="orcamem-browser", daemon=True).start()


def _serve(
    db: Path | None,
    parts: tuple[str, ...],
    host: str,
    port: int,
    upstream: str | None,
    model: str | None,
    require_keys: bool | None,
    browser: bool = False,
    workspace: Path | None = None,
    allowed_hosts: list[str] | None = None,
    bank_storage: str | None = None,
    auto_sleep: bool | None = None,
    log_blocks: bool | None = None,
    workers: int = 1,
) -> None:
    from ..._kernel import trace
    from ...engine.memory import Memory
    from ..http.server import build_app, run, run_workers
    from ..http.settings import ServerSettings

    loaded = load_settings(
        db=db,
        upstream=upstream,
        model=model,
        require_keys=require_keys,
        auto_sleep=auto_sleep,
        log_blocks=log_blocks,
    )
    chosen = loaded.settings
    upstream, model = chosen.upstream, chosen.model
    auto_sleep = chosen.auto_sleep
    if "proxy" in parts and model and not upstream:
        upstream = llm.OLLAMA_URL
        err.print(f"--model without --upstream: forwarding chat to {upstream} (a local Ollama)")
    try:
        settings = ServerSettings(
            host=host,
            port=port,
            upstream=upstream,
            model=model,
            require_keys=chosen.require_keys,
            workspace=str(workspace) if workspace else None,
            allowed_hosts=tuple(allowed_hosts or ()),
            proxy_max_body_bytes=int(chosen.proxy_max_body_mb * 1024 * 1024),
            upstream_timeout_s=chosen.upstream_timeout,
        )
        spans = trace.configure()  # before the database opens: nothing to close on refusal
        opening = partial(
            Memory,
            chosen.db,
            embedder=loaded.embedder,
            config=chosen.config(auto_sleep=auto_sleep),
            model=model if auto_sleep else None,
            upstream=upstream if auto_sleep and model else None,
        )
        memory = opening()  # with --workers too: refused here, and migrated once, up front
    except OrcamemError as exc:
        raise fail(exc) from None
    bank = None
    if {"api", "mcp"} & set(parts):
        try:
            bank = _bank(bank_storage)
        except OrcamemError as exc:  # e.g. an unreachable bucket: one line, exit non-zero
            memory.close()
            raise fail(exc) from None
    try:
        app = build_app(memory, settings, parts, bank=bank)
        app.router.add_event_handler("shutdown", trace.flush)  # uvicorn may exit by the signal
        where = f"http://{host}:{port}"
        err.print(f"orcamem serving {', '.join(parts)} on {where} (db {memory.path})")
        if spans:
            err.print(f"exporting spans to {spans} (OpenTelemetry, OTLP/HTTP)", highlight=False)
        if auto_sleep:
            by = f"model {model}" if model else "rules, no model call"
            err.print(f"consolidating in the background ({by}); --no-auto-sleep turns it off")
        if bank is not None:
            kept = "durable" if bank.objects.durable else "in memory only, lost at exit"
            err.print(f"memory bank: {bank.objects.location} ({kept})", highlight=False)
        if "proxy" in parts and not upstream:
            err.print(
                "[yellow]no --upstream: /v1/chat/completions answers 503 until you name "
                "one (orcamem up --upstream URL --model M)[/yellow]"
            )
        elif "proxy" in parts and upstream:
            _check_upstream(upstream)
        if browser:
            _open_when_up(f"{where}/#/", f"{where}/healthz")
        if workers > 1:
            if memory.path in (None, ":memory:") or (bank and not bank.objects.durable):
                raise fail(
                    "--workers needs a database and a Memory Bank every process shares: a "
                    "file or postgresql:// --db, and --bank file or a bucket"
                )
            err.print(f"{workers} worker processes, each with its own connections to the database")
            if bank is not None:
                bank.close()
            memory.close()
            bank = None
            work = partial(_worker, opening, settings, parts, bank_storage)
            run_workers(work, settings, workers)
        else:
            run(app, settings)
    finally:
        if bank is not None:
            bank.close()
        memory.close()


def _worker(
    opening: Callable[[], Memory],
    settings: ServerSettings,
    parts: tuple[str, ...],
    bank_storage: str | None,
) -> FastAPI:
    """One ``--workers`` process's app: its own Memory (and bank) on the one database, closed
    when the worker stops."""
    from ..._kernel import trace
    from ..http.server import build_app

    trace.configure()
    memory = opening()
    bank = _bank(bank_storage) if {"api", "mcp"} & set(parts) else None
    app = build_app(memory, settings, parts, bank=bank)

    def close() -> None:
        trace.flush()
        if bank is not None:
            bank.close()
        memory.close()

    app.router.add_event_handler("shutdown", close)
    return app


def register(app: typer.Typer) -> None:
    """Add the service commands to the main CLI."""

    @app.command()
    def up(
        db: DbOption = None,
        host: HostOption = "127.0.0.1",
        port: PortOption = 8080,
        upstream: UpstreamOption = None,
        model: ModelOption = None,
        require_keys: KeysOption = None,
        browser: Annotated[
            bool, typer.Option(help="Open the browser at the UI once the server answers.")
        ] = True,
        workspace: WorkspaceOption = None,
        allowed_host: AllowedHostOption = None,
        bank: BankOption = None,
        auto_sleep: AutoSleepOption = None,
        log_blocks: LogBlocksOption = None,
        workers: WorkersOption = 1,
    ) -> None:
        """Run everything: REST API, memory proxy, MCP over HTTP and the upstream's web UI."""
        _serve(
            db,
            ("api", "proxy", "mcp", "ui"),
            host,
            port,
            upstream,
            model,
            require_keys,
            browser,
            workspace,
            allowed_host,
            bank,
            auto_sleep,
            log_blocks,
            workers,
        )

    @app.command()
    def serve(
        db: DbOption = None,
        host: HostOption = "127.0.0.1",
        port: PortOption = 8080,
        require_keys: KeysOption = None,
        workspace: WorkspaceOption = None,
        allowed_host: AllowedHostOption = None,
        bank: BankOption = None,
        auto_sleep: AutoSleepOption = None,
        log_blocks: LogBlocksOption = None,
        workers: WorkersOption = 1,
    ) -> None:
        """Run the REST API alone (for services that call memory directly)."""
        _serve(
            db,
            ("api",),
            host,
            port,
            None,
            None,
            require_keys,
            False,
            workspace,
            allowed_host,
            bank,
            auto_sleep,
            log_blocks,
            workers,
        )

    @app.command()
    def proxy(
        db: DbOption = None,
        host: HostOption = "127.0.0.1",
        port: PortOption = 8080,
        upstream: UpstreamOption = None,
        model: ModelOption = None,
        require_keys: KeysOption = None,
        allowed_host: AllowedHostOption = None,
        auto_sleep: AutoSleepOption = None,
        log_blocks: LogBlocksOption = None,
    ) -> None:
        """Run the OpenAI-compatible memory proxy: point any OpenAI client at http://HOST:PORT/v1.

        --model alone forwards to a local Ollama (http://localhost:11434/v1)."""
        _serve(
            db,
            ("proxy",),
            host,
            port,
            upstream,
            model,
            require_keys,
            allowed_hosts=allowed_host,
            auto_sleep=auto_sleep,
            log_blocks=log_blocks,
        )

    @app.command()
    def mcp(
        db: DbOption = None,
        space: SpaceOption = "default",
        embedder: EmbedderOption = None,
        http: Annotated[
            bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")
        ] = False,
        host: HostOption = "127.0.0.1",
        port: PortOption = 8765,
        require_keys: KeysOption = None,
        allowed_host: AllowedHostOption = None,
        bank: BankOption = None,
        profile: ProfileOption = None,
        allow_delete_space: Annotated[
            bool,
            typer.Option(
                "--allow-delete-space",
                help="Also offer orma_delete_space (stdio): the agent may delete a whole space "
                "when the user asks, with the name typed again.",
            ),
        ] = False,
    ) -> None:
        """Speak MCP over stdio (claude mcp add orcamem -- orcamem mcp), or HTTP with --http."""
        if http and allow_delete_space:
            raise fail(
                InvalidInputError(
                    "--allow-delete-space is for a stdio session (the local user's agent); over "
                    "HTTP delete a space with DELETE /api/spaces/NAME?confirm=NAME"
                )
            )
        if http and profile is not None:
            raise fail(
                InvalidInputError(
                    f"--profile / {PROFILE_ENV} binds a stdio session; over --http each client "
                    "names its profile in the URL: http://HOST:PORT/mcp?profile=NAME"
                )
            )
        if http:
            _serve(
                db,
                ("mcp",),
                host,
                port,
                None,
                None,
                require_keys,
                allowed_hosts=allowed_host,
                bank_storage=bank,
                auto_sleep=False,
            )
            return
        from ..mcp.server import run_stdio

        loaded = load_settings(db=db, embedder=embedder)
        try:
            memory_bank = _bank(bank)
        except OrcamemError as exc:
            raise fail(exc) from None
        try:
            run_stdio(
                loaded.settings.db,
                space,
                embedder=loaded.embedder,
                bank=memory_bank,
                profile=profile,
                delete_space=allow_delete_space,
                config=loaded.settings.config(),
            )
        except OrcamemError as exc:
            raise fail(exc) from None
        finally:
            memory_bank.close()

    app.add_typer(keys_app, name="keys")


@keys_app.command("create")
def keys_create(
    db: DbOption = None,
    space: Annotated[
        list[str] | None, typer.Option("--space", "-s", help="A space the key may use (repeat).")
    ] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="An admin key: every space and the key routes.")
    ] = False,
    name: Annotated[str, typer.Option(help="A label for the key.")] = "",
) -> None:
    """Create an API key; the secret is printed once and stored only as a hash."""
    from ..._kernel.clock import stamp
    from ...engine.memory import Memory

    try:
        with Memory(load_settings(db=db).settings.db) as memory:
            key_id, secret = memory.keys.create(
                spaces=list(space or []),
                admin=admin,
                name=name,
                now=stamp(memory.clock),
            )
    except OrcamemError as exc:
        raise fail(exc) from None
    err.print(f"created {key_id}; store this secret now, it is not shown again:")
    print(secret)


@keys_app.command("list")
def keys_list(db: DbOption = None) -> None:
    """List API keys (never their secrets)."""
    from rich.table import Table

    from ...engine.memory import Memory

    with Memory(load_settings(db=db).settings.db) as memory:
        rows = memory.keys.list()
    table = Table("id", "name", "spaces", "admin", "created", "revoked")
    for row in rows:
        table.add_row(
            row["id"],
            row["name"],
            ",".join(row["spaces"]),
            str(row["admin"]),
            row["created_at"][:19],
            (row["revoked_at"] or "")[:19],
        )
    print_table(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (key-…).")], db: DbOption = None
) -> None:
    """Revoke an API key at once."""
    from ..._kernel.clock import stamp
    from ...engine.memory import Memory

    try:
        with Memory(load_settings(db=db).settings.db) as memory:
            memory.keys.revoke(key_id, stamp(memory.clock))
    except OrcamemError as exc:
        raise fail(exc) from None
    out.print(f"revoked {key_id}")

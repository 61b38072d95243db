"""A memory provider behind an external MCP server over stdio (the ``headroom-mcp`` provider).

The server runs as a subprocess of this process, spoken to with the official ``mcp`` SDK's
client. One session is kept open for the provider's life (started on first use) on an event
loop in a helper thread, so the host's synchronous turn code can call it.

Limits of this surface, reported by the provider itself (:meth:`McpProvider.notes`):

- scoping collapses to a single **user** layer (a scoped save is written unscoped);
- reads come back as **text**, not records (``1. [relevance=0.50] <content>``): only the
  content and a relevance number, no tags, timestamps or importance;
- any single operation (start and handshake, tool listing, one tool call) that takes longer
  than :data:`OPERATION_TIMEOUT_S` (20 s) is treated as unavailable, for the rest of the
  session — and, with a ``down_file`` (the capability gives one in the workspace), for every
  session of the next :data:`DOWN_S` (10 minutes): a server that hangs is not started again
  on every turn, or by every short-lived hook process. An explicit ``check()`` (``orcamem
  doctor``) tries it for real and clears the mark when it answers.

State (:meth:`McpProvider.check`) is decided by one real tool call, not by whether the server
launched: a server that starts, completes its handshake and lists both tools while every call
fails is *installed but not set up*. Each state has one message: the detail ``check()``
reports is, word for word, the message of the :class:`ProviderError` an operation raises in
that state (and a state that lasts for the session, such as an operation over the limit or a
server without the memory tools, is reported the same way until the provider is closed).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..._kernel.clock import Clock, SystemClock, format_time, parse_time
from ..._kernel.env import HEADROOM_PYTHON_ENV, headroom_python
from ..._kernel.files import make_dirs, read_optional, remove, write_atomic
from ...errors import InvalidInputError, OrcamemError
from .base import (
    NOT_AVAILABLE,
    NOT_SET_UP,
    READY,
    ProviderCapabilities,
    ProviderError,
    ProviderStatus,
    Recalled,
    Scope,
)

__all__ = [
    "HEADROOM",
    "HEADROOM_ENV",
    "HEADROOM_SERVER_ARGS",
    "OPERATION_TIMEOUT_S",
    "ORCAMEM",
    "McpProfile",
    "McpProvider",
    "headroom_provider",
    "parse_orcamem_block",
    "parse_ranked_lines",
]

OPERATION_TIMEOUT_S = 20.0
"""Any single operation that takes longer than this is treated as unavailable."""
DOWN_S = 600.0
"""How long a server marked unavailable in a ``down_file`` is not started again."""

HEADROOM_SERVER_ARGS = ("-m", "headroom.memory.mcp_server")
"""How Headroom's interpreter is asked to serve its memory tools over stdio.

Checked (issue 18) against headroom-ai's own tests of ``headroom.memory.mcp_server`` in a
public copy of its source, not against an install (none can be fetched here): the module
path; the tools ``memory_search`` (``{"query", "top_k"}``) and ``memory_save`` (``{"facts":
[...], "importance"}``); "No memories found." for no hit and ``Related: …`` lines; the server
sets ``HF_HUB_OFFLINE`` itself; ``--db`` and ``--user`` are optional (Headroom's defaults).
Assumed, not checked: the exact ``N. [relevance=…] <content>`` line of a hit (its tests only
check that the content is in the text). Override ``args`` of :func:`headroom_provider` if
your Headroom differs."""

HEADROOM_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
"""Offline mode, set explicitly rather than inherited: which state the provider is in is a
property of this invocation, not of the caller's shell."""

_RANKED = re.compile(r"^\s*\d+\.\s*\[relevance=([-+0-9.eE]+)\]\s?(.*)$")


def parse_ranked_lines(text: str) -> list[Recalled]:
    """Headroom's read format: one ``N. [relevance=0.50] <content>`` line per memory.

    Other lines (``Related: …``, ``No memories found.``) carry no memory.

    >>> [(r.text, r.relevance) for r in parse_ranked_lines("1. [relevance=0.50] Uses uv\\n   Related: x")]
    [('Uses uv', 0.5)]
    """
    found = []
    for line in text.splitlines():
        matched = _RANKED.match(line)
        if matched and matched.group(2).strip():
            try:
                relevance: float | None = float(matched.group(1))
            except ValueError:
                relevance = None
            found.append(Recalled(text=matched.group(2).strip(), relevance=relevance))
    return found


def _bracket_groups(line: str) -> list[str]:
    groups, depth, current = [], 0, ""
    for char in line:
        if char == "[":
            depth += 1
            if depth == 1:
                current = ""
                continue
        elif char == "]" and depth:
            depth -= 1
            if depth == 0:
                groups.append(current)
                continue
        if depth:
            current += char
    return groups


def parse_orcamem_block(text: str) -> list[Recalled]:
    """orcamem's ``orma_recall`` read format: a ``## Memory`` block of ``[...]`` items (dense
    form) or ``- ...`` lines (classic form). "Nothing in memory …" carries no memory."""
    if not text.startswith("## Memory"):
        return []
    found = []
    for line in text.splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("["):
            found.extend(Recalled(text=item.strip()) for item in _bracket_groups(stripped))
        elif stripped.startswith("- "):
            found.append(Recalled(text=stripped[2:].strip()))
    return [item for item in found if item.text]


@dataclass(frozen=True)
class McpProfile:
    """How one memory MCP server is spoken to: its tools, their arguments, its read format."""

    name: str
    """The provider name reported in states and logs."""
    search_tool: str
    save_tool: str
    search_arguments: Callable[[str, int], dict[str, Any]]
    save_arguments: Callable[[str, float], dict[str, Any]]
    parse: Callable[[str], list[Recalled]]
    install_action: str
    """What to do when the software is missing."""
    setup_action: str
    """What to do when it is installed but calls fail."""
    leaves_machine: str
    env: Mapping[str, str] = field(default_factory=dict)
    probe_query: str = "memory capability check"


HEADROOM = McpProfile(
    name="headroom-mcp",
    search_tool="memory_search",
    save_tool="memory_save",
    search_arguments=lambda query, top_k: {"query": query, "top_k": top_k},
    save_arguments=lambda text, importance: {"facts": [text], "importance": importance},
    parse=parse_ranked_lines,
    install_action=(
        "install it with `uv tool install headroom-ai` (not `pip install headroom`, an "
        f"unrelated package), point {HEADROOM_PYTHON_ENV} at its Python, or pick the "
        "builtin-markdown provider"
    ),
    setup_action=(
        "finish the setup step, do not reinstall: run `headroom memory stats` once with "
        "network access to fetch the embedding model (~86 MB)"
    ),
    leaves_machine="a one-time ~86 MB embedding model download from HuggingFace",
    env=HEADROOM_ENV,
)

ORCAMEM = McpProfile(
    name="orcamem-mcp",
    search_tool="orma_recall",
    save_tool="orma_remember",
    search_arguments=lambda query, top_k: {"query": query},
    save_arguments=lambda text, importance: {"text": text, "kind": "fact"},
    parse=parse_orcamem_block,
    install_action="install orcamem (`pip install orcamem`) and check the server command",
    setup_action="check the server's --db path and its log",
    leaves_machine="nothing",
)
"""orcamem's own MCP server (``python -m orcamem.interfaces.mcp.server``) as a provider."""


def _text(result: Any) -> str:
    return "\n".join(
        block.text
        for block in getattr(result, "content", [])
        if getattr(block, "type", "") == "text"
    )


class McpProvider:
    """A memory provider spoken to over stdio with the ``mcp`` SDK client.

    Args:
        command: the server command and its arguments.
        profile: the server's tools and formats (:data:`HEADROOM`, :data:`ORCAMEM`).
        env: extra environment for the server (on top of the SDK's safe defaults and the
            profile's ``env``); nothing else is inherited.
        cwd: the server's working directory.
        timeout_s: the per-operation limit (:data:`OPERATION_TIMEOUT_S`).
        down_file: where a server that hung or failed to start is marked unavailable for
            later sessions and processes (for :data:`DOWN_S`); none: this provider only.
        clock: the time that mark is read and written with.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        profile: McpProfile = HEADROOM,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout_s: float = OPERATION_TIMEOUT_S,
        down_file: str | Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not command or not all(isinstance(part, str) and part for part in command):
            raise InvalidInputError("command must be a non-empty list of strings")
        if not timeout_s > 0:
            raise InvalidInputError(f"timeout_s={timeout_s!r}: use a positive number of seconds")
        self.command = list(command)
        self.profile = profile
        self.name = profile.name
        self.env = {**profile.env, **(env or {})}
        self.cwd = cwd
        self.timeout_s = float(timeout_s)
        self.down_file = Path(down_file) if down_file is not None else None
        self.clock = clock or SystemClock()
        self.capabilities = ProviderCapabilities(
            search="semantic" if profile is HEADROOM else "server-defined",
            scopes=("user",),
            reads="text",
            decay=False,
            archive=False,
            retrieval_log=False,
            leaves_machine=profile.leaves_machine,
        )
        self._lock = threading.RLock()
        self._portal_cm: Any = None
        self._portal: Any = None
        self._session_cm: Any = None
        self._session: Any = None
        self._tools: set[str] = set()
        self._failed: str | None = None
        """Why the provider is unavailable for the rest of its life (then nothing is retried)."""
        self._marked = False
        """``_failed`` was read from the ``down_file`` (an explicit check tries again)."""
        self._checking = False
        """An explicit check is under way: it starts the server whatever the mark says."""
        self._phase = "the server's start"
        """The start-up step under way, for the message of one that runs over the limit."""
        self._reaper: threading.Thread | None = None
        # The server's stderr, for the state's detail; open for the provider's life (close()).
        self._errlog = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace"
        )
        self._closed = False

    # -- what it says about itself --------------------------------------------------------

    def notes(self) -> tuple[str, ...]:
        return (
            "Scoping collapses to a single user layer: this surface writes only the user "
            "layer, so memories are not separated per session, agent, or turn.",
            "Reads come back as text, not records: results arrive as formatted lines like "
            "'1. [relevance=0.50] <content>', so tags, timestamps and importance are not "
            "available on reads — only the content and a relevance number.",
            f"Any single operation that takes longer than {self.timeout_s:g} seconds is "
            "treated as unavailable.",
            "No decay, no archive and no retrieval log.",
            f"What leaves this machine: {self.profile.leaves_machine}.",
        )

    # -- the one message of each state ----------------------------------------------------

    def _not_installed(self) -> str:
        return f"{self.command[0]} is not installed on this machine"

    def _over_limit(self, operation: str) -> str:
        return (
            f"{self.name}: {operation} took longer than {self.timeout_s:g} s, so the provider "
            "is treated as unavailable for the rest of this session"
        )

    def _without_tools(self, missing: Sequence[str]) -> str:
        return (
            f"{self.name}: the server started but offers no {', '.join(missing)} tool (it "
            f"offers {', '.join(sorted(self._tools)) or 'none'}): it is not the expected memory "
            "server"
        )

    def _call_failed(self, tool: str, result: Any) -> str:
        said = " ".join(_text(result).split())[:400] or "no message"
        return (
            f"{self.name}: the server starts and lists its tools, but a {tool} call fails: {said}"
        )

    # -- the session ----------------------------------------------------------------------

    def _executable(self) -> str | None:
        program = self.command[0]
        if "/" in program or "\\" in program:
            return program if Path(program).is_file() else None
        return shutil.which(program)

    def _stderr_tail(self, limit: int = 600) -> str:
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()
        except (OSError, ValueError):
            return ""
        text = " ".join(text.split())
        return text[-limit:]

    @contextlib.asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.command[0],
            args=self.command[1:],
            env=dict(self.env),
            cwd=str(self.cwd) if self.cwd is not None else None,
        )
        # No session-wide read timeout: the one limit is the fail_after around each operation,
        # so an operation over it always ends the same way (TimeoutError), never as an MCP
        # error that a second, racing timer raised.
        self._phase = "the server's start and handshake"
        async with (
            stdio_client(params, errlog=self._errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            with anyio.fail_after(self.timeout_s):
                await session.initialize()
            self._phase = "the server's tool listing"
            with anyio.fail_after(self.timeout_s):
                listed = await session.list_tools()
            self._tools = {tool.name for tool in listed.tools}
            yield session

    def _mark_down(self, why: str) -> None:
        """Tell later sessions and processes not to start the server for a while."""
        if self.down_file is None:
            return
        until = self.clock.now() + timedelta(seconds=DOWN_S)
        record = {"provider": self.name, "why": why, "until": format_time(until)}
        try:
            make_dirs(self.down_file.parent)
            write_atomic(self.down_file, json.dumps(record).encode("utf-8"))
        except OrcamemError:  # best effort: this session already knows
            pass

    def _marked_down(self) -> str | None:
        """The mark a recent session left, while it holds."""
        if self.down_file is None:
            return None
        data, _ = read_optional(self.down_file)
        try:
            record = json.loads(data or b"")
            until = parse_time(record["until"])
            why = str(record["why"])
        except (ValueError, KeyError, TypeError, OrcamemError):
            return None
        if until <= self.clock.now():
            return None
        return (
            f"{why} (marked by an earlier session; not started again before "
            f"{format_time(until)}: `orcamem doctor` checks it now)"
        )

    def _open(self) -> Any:
        with self._lock:
            if self._closed:
                raise ProviderError(f"the {self.name} provider was closed")
            if self._session is not None:
                return self._session
            if not self._failed and not self._checking:
                self._failed = self._marked_down()
                self._marked = self._failed is not None
            if self._failed:
                raise ProviderError(self._failed)
            if self._executable() is None:
                raise ProviderError(self._not_installed())
            from anyio.from_thread import start_blocking_portal

            with contextlib.suppress(OSError, ValueError):  # this start's stderr only
                self._errlog.seek(0)
                self._errlog.truncate()
            self._portal_cm = start_blocking_portal()
            self._portal = self._portal_cm.__enter__()
            session_cm = self._portal.wrap_async_context_manager(self._connect())
            try:
                self._session = session_cm.__enter__()
            except BaseException as exc:
                self._stop_portal()
                tail = self._stderr_tail()
                while getattr(exc, "exceptions", None):  # an exception group: its first cause
                    exc = exc.exceptions[0]
                if isinstance(exc, TimeoutError):
                    self._failed = self._over_limit(self._phase)
                    self._mark_down(self._failed)
                    raise ProviderError(self._failed) from None
                why = (
                    f"the {self.name} server could not be started ({type(exc).__name__}: {exc})"
                    + (f"; its stderr: {tail}" if tail else "")
                )
                self._mark_down(why)
                raise ProviderError(why) from None
            self._session_cm = session_cm
            missing = sorted({self.profile.search_tool, self.profile.save_tool} - self._tools)
            if missing:
                why = self._without_tools(missing)
                self._give_up(why)
                raise ProviderError(why)
            return self._session

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """One tool call within the operation limit; a timeout or a broken session makes the
        provider unavailable for the rest of its life."""
        import anyio
        from mcp.types import CallToolResult

        session = self._open()

        async def run() -> Any:
            with anyio.fail_after(self.timeout_s):
                return await session.call_tool(tool, arguments)

        try:
            result = self._portal.call(run)
        except TimeoutError:
            why = self._over_limit(f"a {tool} call")
            self._give_up(why)
            raise ProviderError(why) from None
        except Exception as exc:
            why = f"{self.name}: the session broke during {tool}: {exc}"
            self._give_up(why)
            raise ProviderError(why) from None
        if not isinstance(result, CallToolResult):
            raise ProviderError(f"{self.name}: {tool} did not return a tool result")
        return result

    def _give_up(self, why: str) -> None:
        """Mark the provider unavailable (for its life: ``why`` is then the message of every
        later operation and check) and stop the server in the background: stopping a stuck
        server takes the SDK a grace period, which the caller's turn must not wait."""
        with self._lock:
            self._failed = why
            parts = self._detach()
            self._mark_down(why)
            self._reaper = threading.Thread(
                target=self._stop, args=parts, name="orcamem-mcp-reaper", daemon=True
            )
            self._reaper.start()

    def _detach(self) -> tuple[Any, Any]:
        parts = (self._session_cm, self._portal_cm)
        self._session_cm = self._session = self._portal_cm = self._portal = None
        return parts

    @staticmethod
    def _stop(session_cm: Any, portal_cm: Any) -> None:
        for manager in (session_cm, portal_cm):
            if manager is not None:
                with contextlib.suppress(BaseException):
                    manager.__exit__(None, None, None)

    def _teardown(self) -> None:
        self._stop(*self._detach())

    def _stop_portal(self) -> None:
        self._stop(None, self._portal_cm)
        self._portal_cm = self._portal = None

    # -- the provider ---------------------------------------------------------------------

    def _status(self, state: Any, detail: str, action: str) -> ProviderStatus:
        return ProviderStatus(self.name, state, detail, action, self.notes(), self.capabilities)

    def check(self) -> ProviderStatus:
        """Start the server if needed, then call its search tool once for real (a mark an
        earlier session left is tried again, and cleared when the server answers)."""
        with self._lock:
            if self._marked:
                self._failed, self._marked = None, False
            self._checking = True
        try:
            result = self._call(
                self.profile.search_tool,
                self.profile.search_arguments(self.profile.probe_query, 1),
            )
        except ProviderError as exc:
            return self._status(NOT_AVAILABLE, str(exc), self.profile.install_action)
        finally:
            self._checking = False
        if result.is_error:
            return self._status(
                NOT_SET_UP,
                self._call_failed(self.profile.search_tool, result),
                self.profile.setup_action,
            )
        if self.down_file is not None:
            remove(self.down_file)
        return self._status(READY, f"{self.profile.search_tool} answered", "")

    def search(
        self,
        query: str,
        *,
        top_k: int,
        include_archived: bool = False,
        scope: Scope | None = None,
        destination: str = "main-context",
    ) -> list[Recalled]:
        """Search the server (user layer only: ``scope`` and ``include_archived`` do not
        apply). Results are text, as the provider's notes say."""
        result = self._call(self.profile.search_tool, self.profile.search_arguments(query, top_k))
        if result.is_error:
            raise ProviderError(self._call_failed(self.profile.search_tool, result))
        return self.profile.parse(_text(result))[:top_k]

    def save(
        self,
        text: str,
        *,
        importance: float = 0.5,
        tags: tuple[str, ...] = (),
        scope: Scope | None = None,
    ) -> str | None:
        """Save to the user layer (a scoped save collapses to it; tags are not kept)."""
        result = self._call(self.profile.save_tool, self.profile.save_arguments(text, importance))
        if result.is_error:
            raise ProviderError(self._call_failed(self.profile.save_tool, result))
        structured = getattr(result, "structured_content", None)
        if isinstance(structured, dict) and isinstance(structured.get("id"), str):
            return structured["id"]
        return None

    def close(self) -> None:
        """Stop the server (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._teardown()
            reaper = self._reaper
        if reaper is not None:
            reaper.join()
        with contextlib.suppress(OSError):
            self._errlog.close()

    def __enter__(self) -> McpProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def headroom_provider(
    *,
    python: str | Path | None = None,
    args: Sequence[str] = HEADROOM_SERVER_ARGS,
    timeout_s: float = OPERATION_TIMEOUT_S,
    down_file: str | Path | None = None,
    clock: Clock | None = None,
) -> McpProvider:
    """The ``headroom-mcp`` provider: Headroom's memory MCP server under its own interpreter
    (``$ORCAMEM_HEADROOM_PYTHON``, else the uv tool install), offline mode set explicitly."""
    interpreter = Path(python) if python is not None else headroom_python()
    return McpProvider(
        [str(interpreter), *args],
        profile=HEADROOM,
        timeout_s=timeout_s,
        down_file=down_file,
        clock=clock,
    )

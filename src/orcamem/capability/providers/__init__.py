"""Memory providers for the host capability: the built-in Markdown store and MCP servers."""

from __future__ import annotations

from pathlib import Path

from ..._kernel.clock import Clock
from ...errors import InvalidInputError
from .base import (
    LABELS,
    NOT_AVAILABLE,
    NOT_SET_UP,
    READY,
    MemoryProvider,
    ProviderCapabilities,
    ProviderError,
    ProviderStatus,
    Recalled,
    Scope,
)
from .markdown import MarkdownProvider
from .mcp import HEADROOM, OPERATION_TIMEOUT_S, ORCAMEM, McpProfile, McpProvider, headroom_provider

__all__ = [
    "HEADROOM",
    "LABELS",
    "NOT_AVAILABLE",
    "NOT_SET_UP",
    "OPERATION_TIMEOUT_S",
    "ORCAMEM",
    "READY",
    "MarkdownProvider",
    "McpProfile",
    "McpProvider",
    "MemoryProvider",
    "ProviderCapabilities",
    "ProviderError",
    "ProviderStatus",
    "Recalled",
    "Scope",
    "headroom_provider",
    "make_provider",
]


def make_provider(
    name: str,
    workspace: str | Path,
    *,
    half_life_days: float = 60.0,
    clock: Clock | None = None,
) -> MemoryProvider:
    """The provider a ``provider`` setting names (nothing is started until it is used)."""
    if name == "builtin-markdown":
        return MarkdownProvider(workspace, half_life_days=half_life_days, clock=clock)
    if name == "headroom-mcp":  # a server that hangs is marked in the workspace for a while
        down = Path(workspace) / "memory" / "headroom-unavailable.json"
        return headroom_provider(down_file=down, clock=clock)
    if name == "orcamem-engine":  # the capability may not import the engine: the host brings it
        raise ProviderError(
            "the orcamem-engine provider runs orcamem's engine in the host's process: the host "
            "passes it (Capability(..., providers=orcamem.interfaces.engine_provider.ENGINE); "
            "`orcamem turn --memory capability` does)"
        )
    raise InvalidInputError(
        f"unknown memory provider {name!r}: use builtin-markdown, headroom-mcp or orcamem-engine"
    )

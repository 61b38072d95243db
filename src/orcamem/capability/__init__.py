"""Seed 004, memory as a host capability: providers, the Markdown store, layered settings.

A host makes one ``Capability`` per session; its settings (``load_settings``, changed with
``set_workspace_override`` / ``clear_workspace_override``) choose the provider: the built-in
Markdown store (``MarkdownProvider``) or an MCP server (``McpProvider``).
"""

from .capability import Capability
from .doctor import doctor_report
from .providers import MarkdownProvider, McpProvider, MemoryProvider, Recalled, Scope
from .settings import (
    MemorySettings,
    clear_workspace_override,
    load_settings,
    set_workspace_override,
)

__all__ = [
    "Capability",
    "MarkdownProvider",
    "McpProvider",
    "MemoryProvider",
    "MemorySettings",
    "Recalled",
    "Scope",
    "clear_workspace_override",
    "doctor_report",
    "load_settings",
    "set_workspace_override",
]

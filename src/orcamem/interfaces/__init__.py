"""Interfaces: thin skins (CLI now; REST, MCP and the proxy later) over the ``Memory`` SDK."""

"""The MCP server over the engine and the Memory Bank (stdio and streamable HTTP)."""

"""A memory MCP server that misbehaves on purpose, for ``test_mcp_provider.py``.

``python tests/broken_mcp_server.py MODE`` speaks MCP over stdio with Headroom's two memory
tools (``memory_search``, ``memory_save``) and their text read format. ``MODE``:

- ``fail-calls`` — starts, completes the handshake, lists both tools; every call fails (what
  Headroom does while its embedding model is missing);
- ``mute`` — reads its input and never answers, so the handshake never completes;
- ``crash`` — writes to stderr and exits before the handshake;
- ``wrong-tools`` — a healthy server that offers no memory tools;
- ``works`` — a healthy in-memory stand-in that answers ``1. [relevance=0.50] <content>``
  (the query ``__env__`` answers with the offline switches and whether ``ORCAMEM_TEST_LEAK``
  reached it, so a test can see the environment it was started with; the query ``__hang__``
  sleeps far past any operation timeout).

With ``BROKEN_MCP_STARTS`` set to a file, each start appends a line to it first, so a test can
count how often the provider started the server.
"""

from __future__ import annotations

import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "works"

if os.environ.get("BROKEN_MCP_STARTS"):
    with open(os.environ["BROKEN_MCP_STARTS"], "a", encoding="utf-8") as starts:
        print(MODE, file=starts)

if MODE == "mute":
    sys.stdin.read()  # until the client closes the pipe
    sys.exit(0)

if MODE == "crash":
    print("fatal: cannot import the embedder (simulated crash)", file=sys.stderr)
    sys.exit(3)

from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402

server: MCPServer = MCPServer("broken-memory", log_level="WARNING")
stored: list[str] = []

if MODE == "wrong-tools":

    @server.tool(name="weather")
    def weather(city: str) -> str:
        return f"sunny in {city}"

else:

    @server.tool(name="memory_search")
    def memory_search(query: str, top_k: int = 10) -> str:
        if MODE == "fail-calls":
            raise ToolError("embedding model all-MiniLM-L6-v2 not found (HF_HUB_OFFLINE=1)")
        if query == "__hang__":
            time.sleep(3600)
        if query == "__env__":
            seen = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
            return f"1. [relevance=1.00] {seen} leak={'ORCAMEM_TEST_LEAK' in os.environ}"
        words = {w.lower() for w in query.split()}
        hits = [text for text in stored if words & {w.lower() for w in text.split()}]
        if not hits:
            return "No memories found."
        return "\n".join(
            f"{i}. [relevance=0.50] {text}\n   Related: none"
            for i, text in enumerate(hits[:top_k], 1)
        )

    @server.tool(name="memory_save")
    def memory_save(facts: list[str], importance: float = 0.7) -> str:
        if MODE == "fail-calls":
            raise ToolError("embedding model all-MiniLM-L6-v2 not found (HF_HUB_OFFLINE=1)")
        stored.extend(facts)
        return f"Saved {len(facts)} new, updated 0 existing ({len(facts)} total)"


if __name__ == "__main__":
    server.run("stdio")

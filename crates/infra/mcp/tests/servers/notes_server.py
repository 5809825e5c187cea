"""A small MCP server written with the official Python SDK (`mcp` from PyPI), for rein-mcp's
tests: one read-only tool, one tool with no hints (MCP's cautious defaults apply), one with
structured output. Run with the venv `make mcp-servers` makes:

    target/mcp/venv/bin/python notes_server.py            # stdio
    target/mcp/venv/bin/python notes_server.py --http PORT  # streamable HTTP on 127.0.0.1:PORT/mcp
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("notes")
NOTES: dict[str, str] = {"greeting": "hello from python"}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def lookup(key: str) -> str:
    """Returns the note stored under `key`."""
    if key not in NOTES:
        raise ToolError(f"no note {key!r}")
    return NOTES[key]


@server.tool()
def record(key: str, text: str) -> str:
    """Stores `text` under `key` (no hints: MCP's defaults say destructive)."""
    NOTES[key] = text
    return f"recorded {key}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def add(a: int, b: int) -> dict[str, int]:
    """Adds two integers."""
    return {"sum": a + b}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()

"""An MCP server (official Python SDK) for rein's secret-handling tests: its one tool tells
which environment values it was started with, by SHA-256 only, so no value reaches a ledger."""

import hashlib
import os

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("vault")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def digests() -> dict[str, str]:
    """The SHA-256 of LITERAL_TOKEN and REF_TOKEN as this server sees them."""
    return {
        name: hashlib.sha256(os.environ.get(name, "").encode()).hexdigest()
        for name in ("LITERAL_TOKEN", "REF_TOKEN")
    }


if __name__ == "__main__":
    server.run()

"""An MCP server (official Python SDK) for the tests of what rein passes to a server it starts:
which environment values it got (by SHA-256 only, so no value reaches a ledger), the names of
every variable it got, and how its client named itself.

    python env_server.py                 # stdio
    python env_server.py --ref URI       # `digests` takes a property whose schema is {"$ref": URI}
"""

import hashlib
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("vault")
READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


@server.tool(annotations=READ)
def digests() -> dict[str, str]:
    """The SHA-256 of LITERAL_TOKEN and REF_TOKEN as this server sees them."""
    return {
        name: hashlib.sha256(os.environ.get(name, "").encode()).hexdigest()
        for name in ("LITERAL_TOKEN", "REF_TOKEN")
    }


@server.tool(annotations=READ)
def environment() -> dict[str, list[str]]:
    """The names of the environment variables this server was started with."""
    return {"names": sorted(os.environ)}


@server.tool(annotations=READ)
def client(ctx: Context) -> dict[str, str]:
    """The name and version the client gave in `initialize`."""
    info = ctx.session.client_params.client_info
    return {"name": info.name, "version": info.version}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--ref":
        tool = server._tool_manager.get_tool("digests")
        tool.parameters = {"type": "object", "properties": {"x": {"$ref": sys.argv[2]}}}
    server.run()

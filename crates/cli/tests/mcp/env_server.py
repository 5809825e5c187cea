"""An MCP server (official Python SDK) for the tests of what rein passes to a server it starts:
which environment values it got (by SHA-256 only, so no value reaches a ledger), the names of
every variable it got, how its client named itself, and what the client answers the server's
own requests: `roots/list`, elicitation, sampling.

    python env_server.py                 # stdio
    python env_server.py --ref URI       # `digests` takes a property whose schema is {"$ref": URI}
"""

import hashlib
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp import types
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


@server.tool(annotations=READ)
async def roots(ctx: Context) -> dict[str, list[str]]:
    """The roots the client answers `roots/list` with."""
    listed = await ctx.session.list_roots()
    return {"uris": [str(root.uri) for root in listed.roots]}


@server.tool(annotations=READ)
async def ask(ctx: Context) -> dict[str, str]:
    """What the client answers an elicitation with: its action, or its error."""
    try:
        result = await ctx.session.elicit_form("Which colour?", {"type": "object", "properties": {"colour": {"type": "string"}}})
    except Exception as error:  # the client refused: say how
        return {"error": str(error)}
    return {"action": str(result.action)}


@server.tool(annotations=READ)
async def sample(ctx: Context) -> dict[str, str]:
    """What the client answers a sampling request with: its model, or its error."""
    try:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
            max_tokens=10,
        )
    except Exception as error:  # the client refused: say how
        return {"error": str(error)}
    return {"model": result.model}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--ref":
        tool = server._tool_manager.get_tool("digests")
        tool.parameters = {"type": "object", "properties": {"x": {"$ref": sys.argv[2]}}}
    server.run()

"""An MCP client rein did not write: the official Python SDK's, driving `rein mcp serve`.

    python client.py CALLS_JSON stdio REIN SCENARIO DATA_DIR
    python client.py CALLS_JSON http URL

Starts `REIN mcp serve SCENARIO --data-dir DATA_DIR` on stdio (or connects to URL over
streamable HTTP), lists its tools, makes the calls in CALLS_JSON (a list of
[tool, arguments]) in order, and prints one JSON object:
{"server_info": {"name", "version"}, "tools": [...],
"calls": [{"is_error": bool, "text": str, "structured": ...}, ...]}.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def transport(args: list):
    if args[0] == "http":
        return streamable_http_client(args[1])
    rein, scenario, data = args[1:4]
    return stdio_client(StdioServerParameters(command=rein, args=["mcp", "serve", scenario, "--data-dir", data]))


async def main(calls: list, args: list) -> None:
    out = {"server_info": None, "tools": [], "calls": []}
    async with transport(args) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            out["server_info"] = {"name": initialized.server_info.name, "version": initialized.server_info.version}
            listed = await session.list_tools()
            out["tools"] = [
                {"name": t.name, "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None}
                for t in listed.tools
            ]
            for tool, arguments in calls:
                result = await session.call_tool(tool, arguments)
                text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
                out["calls"].append(
                    {"is_error": bool(result.is_error), "text": text, "structured": result.structured_content}
                )
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1]), sys.argv[2:]))

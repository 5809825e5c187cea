"""An MCP client rein did not write: the official Python SDK's, driving `rein mcp serve`.

    python client.py REIN SCENARIO DATA_DIR CALLS_JSON

Starts `REIN mcp serve SCENARIO --data-dir DATA_DIR` on stdio, lists its tools, makes the
calls in CALLS_JSON (a list of [tool, arguments]) in order, and prints one JSON object:
{"tools": [...], "calls": [{"is_error": bool, "text": str, "structured": ...}, ...]}.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client


async def main(rein: str, scenario: str, data: str, calls: list) -> None:
    params = StdioServerParameters(command=rein, args=["mcp", "serve", scenario, "--data-dir", data])
    out = {"tools": [], "calls": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
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
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))

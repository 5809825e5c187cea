"""An MCP client rein did not write (the official Python SDK's) reading what `rein mcp serve`
offers besides tools: its prompts, its resources, and the progress and logging notifications
of a call.

    python offer_client.py TOOL REIN SCENARIO DATA_DIR [ARGUMENTS]

Starts `REIN mcp serve SCENARIO --data-dir DATA_DIR` on stdio, lists and gets its prompts,
calls TOOL (with ARGUMENTS, a JSON object; none by default) with a progress callback, reads each resource after the call, and
prints one JSON object: {"capabilities", "prompts": [{"name", "description", "text"}],
"call": {"is_error", "text"}, "progress": [message...], "logs": [{"level", "logger", "data"}],
"resources": [{"uri", "mime_type", "text"}]}.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, stdio_client


async def main(tool: str, rein: str, scenario: str, data: str, arguments: str = "{}") -> None:
    out = {"capabilities": None, "prompts": [], "call": None, "progress": [], "logs": [], "resources": []}

    async def on_log(params) -> None:
        out["logs"].append({"level": params.level, "logger": params.logger, "data": params.data})

    async def on_progress(progress, total, message) -> None:
        out["progress"].append(message)

    server = StdioServerParameters(command=rein, args=["mcp", "serve", scenario, "--data-dir", data])
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            initialized = await session.initialize()
            out["capabilities"] = initialized.capabilities.model_dump(exclude_none=True, by_alias=True)
            for prompt in (await session.list_prompts()).prompts:
                got = await session.get_prompt(prompt.name)
                text = "\n".join(m.content.text for m in got.messages if m.content.type == "text")
                out["prompts"].append({"name": prompt.name, "description": prompt.description, "text": text})
            result = await session.call_tool(tool, json.loads(arguments), progress_callback=on_progress)
            text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
            out["call"] = {"is_error": bool(result.is_error), "text": text}
            for resource in (await session.list_resources()).resources:
                read_back = await session.read_resource(resource.uri)
                for contents in read_back.contents:
                    out["resources"].append(
                        {"uri": str(contents.uri), "mime_type": contents.mime_type, "text": getattr(contents, "text", None)}
                    )
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))

"""An AI app's MCP client on the official Python SDK (mcp 2.3.0): starts the server command
its configuration names (argv[1], a JSON list: here `gatehouse mcp wrap …`) over stdio, as
Claude Desktop or VS Code do, and runs each later argument as one step (["list"] or
["call", name, arguments]), printing each answer as one line "ANSWER <json>"."""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


def say(v):
    print("ANSWER " + json.dumps(v), flush=True)


async def main():
    command = json.loads(sys.argv[1])
    params = StdioServerParameters(command=command[0], args=command[1:], env=None)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for step in sys.argv[2:]:
                step = json.loads(step)
                try:
                    if step[0] == "list":
                        r = await session.list_tools()
                        say({"tools": [t.name for t in r.tools]})
                    elif step[0] == "call":
                        r = await session.call_tool(step[1], step[2])
                        texts = [c.text for c in r.content if getattr(c, "type", "") == "text"]
                        say({"is_error": bool(r.is_error), "text": "".join(texts)})
                except MCPError as e:
                    say({"error": {"code": e.code, "message": str(e)}})


anyio.run(main)

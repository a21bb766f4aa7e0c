"""An AI app's MCP client on the official Python SDK (mcp 2.3.0) reaching a server by
address over Streamable HTTP (argv[1]), with the header argv[2] (JSON: {name: value}), as
an app configured with a server's URL and headers does; each later argument is one step
(["list"] or ["call", name, arguments]), each answer printed as "ANSWER <json>"."""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def say(v):
    print("ANSWER " + json.dumps(v), flush=True)


async def main():
    url, headers = sys.argv[1], json.loads(sys.argv[2])
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                for step in sys.argv[3:]:
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

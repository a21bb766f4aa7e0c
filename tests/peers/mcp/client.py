"""An MCP client on the official Python SDK (mcp 2.3.0) speaking over its own stdin and
stdout (Gatehouse's side of it is the test's relay). Each argument is one step, as JSON:
["list"] or ["call", name, arguments]; each step's answer is printed to stderr as one
line "ANSWER <json>" (stdout is the protocol's); then it quits. It is an app whose model
answers a server's sampling request with "four" (printing its text as the answer
{"sampled": text})."""

import json
import os
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, TextContent


def say(v):
    print("ANSWER " + json.dumps(v), file=sys.stderr, flush=True)


async def model(context, params):
    asked = " ".join(m.content.text for m in params.messages if getattr(m.content, "type", "") == "text")
    say({"sampled": asked})
    return CreateMessageResult(role="assistant", content=TextContent(type="text", text="four"), model="test-model")


async def main():
    async with stdio_server() as (read, write):
        async with ClientSession(read, write, sampling_callback=model) as session:
            await session.initialize()
            for step in sys.argv[1:]:
                step = json.loads(step)
                try:
                    if step[0] == "list":
                        r = await session.list_tools()
                        say({"tools": [{"name": t.name, "description": t.description} for t in r.tools]})
                    elif step[0] == "call":
                        r = await session.call_tool(step[1], step[2])
                        texts = [c.text for c in r.content if getattr(c, "type", "") == "text"]
                        say({"is_error": bool(r.is_error), "text": "".join(texts)})
                except MCPError as e:
                    say({"error": {"code": e.code, "message": str(e)}})
            # Done: the client goes, as an app that quits does (the stdio transport would
            # otherwise wait for its stdin to end, which is the other side's to close).
            sys.stderr.flush()
            os._exit(0)


anyio.run(main)

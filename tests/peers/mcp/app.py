"""An AI app's MCP client on the official Python SDK (mcp 2.3.0): starts the server command
its configuration names (argv[1], a JSON list: here `gatehouse mcp wrap …`) over stdio, as
Claude Desktop or VS Code do, and runs each later argument as one step (steps.py)."""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from steps import run


async def main():
    command = json.loads(sys.argv[1])
    params = StdioServerParameters(command=command[0], args=command[1:], env=None)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await run(session, sys.argv[2:])


anyio.run(main)

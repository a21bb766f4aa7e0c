"""An AI app's MCP client on the official Python SDK (mcp 2.3.0) reaching a server by
address over Streamable HTTP (argv[1]), with the headers argv[2] (JSON: {name: value}), as
an app configured with a server's URL and headers does; each later argument is one step
(steps.py)."""

import json
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from steps import run


async def main():
    url, headers = sys.argv[1], json.loads(sys.argv[2])
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await run(session, sys.argv[3:])


anyio.run(main)

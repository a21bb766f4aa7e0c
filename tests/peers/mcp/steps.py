"""The steps an AI app's session runs in the tests (app.py over stdio, app_http.py over
Streamable HTTP): each argument one step, as JSON (["list"] or ["call", name, arguments]),
each answer printed as one line "ANSWER <json>"."""

import json

from mcp.shared.exceptions import MCPError


def say(v):
    print("ANSWER " + json.dumps(v), flush=True)


async def run(session, steps):
    for step in steps:
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

"""Runs the MAIL 1.3 reference server (PyPI mail-swarms 1.3.6, unmodified) offline on
loopback for Gatehouse's tests.

What it needs beyond itself is stood in for here: its auth service (it asks one to log a
key in and to say whose token it is) by a stub in this process, and its LLM agents by
scripted agents (the reference accepts any async callable as an agent). Prints
`READY <port> <workdir>` on stdout once the server answers (the reference writes its
files, such as the event dump, in its working directory), then serves until killed.

Keys: `user-key` (role user, id alice), `admin-key` (role admin, id root); anything else
is refused as the real auth service would.

What the scripted swarm does, by the words in the user's message:
- anything: supervisor asks analyst twice ("step 1", "step 2"), the analyst answers each,
  then the supervisor completes the task: six messages with the user's own.
- "misroute": the supervisor first writes to an agent it may not reach; the reference
  reports an `agent_error` mid-stream and the task then goes on as above.
- a continuation (`resume_from: user_response`): the supervisor completes at once.
"""

import argparse
import json
import os
import socket
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEYS = {"user-key": ("user", "alice"), "admin-key": ("admin", "root")}
SWARM = "example"


class Auth(BaseHTTPRequestHandler):
    """The two calls the reference makes: POST login (key -> token), GET token-info."""

    def _bearer(self):
        h = self.headers.get("Authorization", "")
        return h[7:] if h.startswith("Bearer ") else ""

    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        key = self._bearer()
        if key in KEYS:
            self._answer(200, {"token": "token-for-" + key})
        else:
            self._answer(401, {"detail": "invalid API key"})

    def do_GET(self):
        key = self._bearer().removeprefix("token-for-")
        if key in KEYS:
            role, ident = KEYS[key]
            self._answer(200, {"role": role, "id": ident, "api_key": key})
        else:
            self._answer(401, {"detail": "invalid token"})

    def log_message(self, *_):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def last_incoming(history):
    for item in reversed(history):
        if isinstance(item, dict) and item.get("role") == "user" and isinstance(item.get("content"), str):
            return item["content"]
    return ""


def scripted(**params):
    """The factory the swarm names: returns the agent for `params["name"]`."""
    from mail.factories.base import AgentToolCall

    name = params["name"]

    def call(tool, args):
        return AgentToolCall(tool_name=tool, tool_args=args, tool_call_id=f"call-{time.monotonic_ns()}", completion={"role": "assistant", "content": "ok"})

    async def agent(history, tool_choice):  # noqa: ARG001
        text = last_incoming(history)
        if name == "analyst":
            step = "2" if "step 2" in text else "1"
            return None, [call("send_response", {"target": "supervisor", "subject": f"analysis {step}", "body": f"analysis {step}"})]
        if 'type="user"' in text and "again" in text:
            return None, [call("task_complete", {"finish_message": "continued: done again"})]
        if 'type="user"' in text and "misroute" in text:
            return None, [call("send_request", {"target": "nobody", "subject": "misrouted", "body": "misrouted"})]
        if "::invalid_recipient::" in text:
            return None, [call("send_request", {"target": "analyst", "subject": "step 1", "body": "step 1"})]
        if "analysis 2" in text:
            return None, [call("task_complete", {"finish_message": "done: both analyses in"})]
        if "analysis 1" in text:
            return None, [call("send_request", {"target": "analyst", "subject": "step 2", "body": "step 2"})]
        return None, [call("send_request", {"target": "analyst", "subject": "step 1", "body": "step 1"})]

    return agent


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()

    auth = ThreadingHTTPServer(("127.0.0.1", 0), Auth)
    threading.Thread(target=auth.serve_forever, daemon=True).start()
    auth_url = f"http://127.0.0.1:{auth.server_address[1]}"
    port = args.port or free_port()
    os.environ.update(
        AUTH_ENDPOINT=auth_url + "/login",
        TOKEN_INFO_ENDPOINT=auth_url + "/token-info",
        BASE_URL=f"http://127.0.0.1:{port}",
    )

    # The reference reads its own version from ./pyproject.toml, as when run from its
    # checkout; it runs here in a scratch directory that says the installed version.
    import importlib.metadata
    import tempfile

    os.chdir(tempfile.mkdtemp(prefix="mail-ref-"))
    with open("pyproject.toml", "w") as f:
        f.write(f'[project]\nversion = "{importlib.metadata.version("mail-swarms")}"\n')

    from mail.api import MAILAgentTemplate, MAILSwarmTemplate
    from mail.server import run_server_with_template

    agent = lambda n, targets, **kw: MAILAgentTemplate(  # noqa: E731
        name=n, factory=scripted, comm_targets=targets, actions=[], agent_params={}, **kw
    )
    template = MAILSwarmTemplate(
        name=SWARM,
        version="1.3.6",
        agents=[
            agent("supervisor", ["analyst"], can_complete_tasks=True, enable_entrypoint=True),
            agent("analyst", ["supervisor"]),
        ],
        actions=[],
        entrypoint="supervisor",
        description="Gatehouse's scripted test swarm",
    )

    def announce():
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                print(f"READY {port} {os.getcwd()}", flush=True)
                return
            except OSError:
                time.sleep(0.1)
        print("the server did not answer within 60 s", file=sys.stderr, flush=True)
        os._exit(1)

    threading.Thread(target=announce, daemon=True).start()
    run_server_with_template(template, port=port, host="127.0.0.1", print_llm_streams=False)


if __name__ == "__main__":
    main()

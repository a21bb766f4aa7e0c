"""The A2A peer as a server (a2a-sdk 1.3.0 with uvicorn): an agent that answers every
message with its text in upper case, streamed as two artifact pieces, over plain HTTP on
loopback. It requires `Authorization: Bearer <token>` on its endpoint (not on its card).
Prints `READY <port> <workdir>` once its socket listens. Driven by the tests through
crates/mail-testswarm/src/reference.rs.

usage: server.py TOKEN [ENDPOINT]   ENDPOINT: the endpoint its card names instead of its own
"""

import socket
import sys
import tempfile

import uvicorn
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb


class Upper(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        half = len(text) // 2
        await updater.add_artifact([pb.Part(text=text[:half].upper())], artifact_id="answer", name="answer", append=False, last_chunk=False)
        await updater.add_artifact([pb.Part(text=text[half:].upper())], artifact_id="answer", name="answer", append=True, last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RuntimeError("nothing to cancel")


class Bearer(BaseHTTPMiddleware):
    def __init__(self, app, token):
        super().__init__(app)
        self.token = token

    async def dispatch(self, request, call_next):
        if request.method == "POST" and request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return await call_next(request)


def main():
    token = sys.argv[1]
    # Listening before READY is said, and handed to uvicorn as it is: a client that comes
    # at once waits in the backlog instead of being refused while uvicorn starts up.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    port = s.getsockname()[1]
    endpoint = sys.argv[2] if len(sys.argv) > 2 else f"http://127.0.0.1:{port}/"
    card = pb.AgentCard(
        name="Upper",
        description="Answers in capitals.",
        version="1.0.0",
        supported_interfaces=[pb.AgentInterface(url=endpoint, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="upper", name="Upper", description="Upper-cases text", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=Upper(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"))
    app.add_middleware(Bearer, token=token)
    print(f"READY {port} {tempfile.mkdtemp()}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[s])


main()

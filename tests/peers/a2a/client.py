"""The A2A peer as a client (a2a-sdk 1.3.0, JSON-RPC): one call to an A2A agent over TLS
(or plain HTTP on this computer, CA_PEM "-"),
every answer printed as one JSON line (protobuf JSON, as the SDK reads it), an error as
{"error": <its type>, "message": ...}. Driven by crates/app/tests/it/a2a.rs.

usage: client.py BASE_URL CA_PEM ACTION [ARGS_JSON]
  ACTION  card | send | get | cancel | subscribe
  ARGS    token, cert + key (PEM files: mTLS), verify_key (hex Ed25519: the card's
          signature must verify), text, scope, message_id, context_id, stream,
          return_immediately, id (a task's)
"""

import asyncio
import json
import ssl
import sys
import uuid

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import create_signature_verifier


def out(value):
    print(json.dumps(value), flush=True)


async def main():
    base, ca, action = sys.argv[1:4]
    args = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    # "-": plain HTTP (an agent on the same computer, where the user allows it).
    tls = ssl.create_default_context(cafile=ca) if ca != "-" else ssl.create_default_context()
    if args.get("cert"):
        tls.load_cert_chain(args["cert"], args["key"])
    headers = {"Authorization": f"Bearer {args['token']}"} if args.get("token") else {}
    async with httpx.AsyncClient(verify=tls, headers=headers, timeout=120) as http:
        verifier = None
        if args.get("verify_key"):
            key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(args["verify_key"]))
            verifier = create_signature_verifier(lambda kid, jku: key, ["EdDSA"])
        try:
            card = await A2ACardResolver(http, base).get_agent_card(signature_verifier=verifier)
            if action == "card":
                out(MessageToDict(card))
                return
            config = ClientConfig(
                httpx_client=http,
                streaming=bool(args.get("stream")),
                polling=bool(args.get("return_immediately")),
            )
            client = ClientFactory(config).create(card)
            if action == "send":
                msg = pb.Message(
                    message_id=args.get("message_id") or str(uuid.uuid4()),
                    role=pb.Role.ROLE_USER,
                    parts=[pb.Part(text=args["text"])],
                )
                if args.get("context_id"):
                    msg.context_id = args["context_id"]
                if args.get("scope"):
                    msg.metadata.update({"scope": args["scope"]})
                async for event in client.send_message(pb.SendMessageRequest(message=msg)):
                    out(MessageToDict(event))
            elif action == "get":
                out(MessageToDict(await client.get_task(pb.GetTaskRequest(id=args["id"]))))
            elif action == "cancel":
                out(MessageToDict(await client.cancel_task(pb.CancelTaskRequest(id=args["id"]))))
            elif action == "subscribe":
                async for event in client.subscribe(pb.SubscribeToTaskRequest(id=args["id"])):
                    out(MessageToDict(event))
            else:
                raise SystemExit(f"unknown action {action}")
        except Exception as e:  # every failure is an answer the test reads
            out({"error": type(e).__name__, "message": str(e)})


asyncio.run(main())

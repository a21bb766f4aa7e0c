// The A2A JavaScript SDK (@a2a-js/sdk 1.3.0, JSON-RPC) as a client: one call to an A2A
// agent, every answer printed as one JSON line in the protobuf JSON form (as client.py
// prints the Python SDK's), an error as {"error": <its name>, "message": ...}. Driven by
// crates/app/tests/it/a2a.rs.
//
// usage: GATEHOUSE_A2A_JS=PEER_DIR NODE_EXTRA_CA_CERTS=CA_PEM node client.mjs BASE_URL CA_PEM ACTION [ARGS_JSON]
//   PEER_DIR  where scripts/setup-peers.sh installed the SDK (its node_modules)
//   CA_PEM    as for client.py; Node trusts it only through NODE_EXTRA_CA_CERTS
//   ACTION    card | send | get | cancel
//   ARGS      token, verify_key (hex Ed25519: the card's signature must verify), text,
//             scope, message_id, stream, id (a task's)
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [base, , action, rawArgs] = process.argv.slice(2);
const peer = process.env.GATEHOUSE_A2A_JS;
const args = rawArgs ? JSON.parse(rawArgs) : {};
const from = (p) => import(pathToFileURL(join(peer, 'node_modules/@a2a-js/sdk/dist', p)).href);
const a2a = await from('index.js');
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } = await from('client/index.js');

// Only answers go to stdout: the SDK's own logging goes to stderr.
const out = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
console.log = console.error;
console.info = console.error;
console.debug = console.error;

// The token goes on every request, the card's included.
const authed = (input, init = {}) => {
  const headers = new Headers(init.headers);
  if (args.token) headers.set('Authorization', `Bearer ${args.token}`);
  return fetch(input, { ...init, headers });
};

try {
  // The card as served: the signature covers its JSON (canonicalizeAgentCard reads JSON;
  // the resolver's normalized object would canonicalize to other bytes).
  const response = await authed(new URL(a2a.AGENT_CARD_PATH, base), { headers: { [a2a.A2A_VERSION_HEADER]: a2a.A2A_PROTOCOL_VERSION } });
  if (!response.ok) throw new Error(`Failed to fetch Agent Card: ${response.status}`);
  const raw = await response.json();
  if (args.verify_key) {
    const x = Buffer.from(args.verify_key, 'hex').toString('base64url');
    await a2a.verifyAgentCardSignature(async () => ({ kty: 'OKP', crv: 'Ed25519', x }))(raw);
  }
  const card = new DefaultAgentCardResolver({ fetchImpl: authed }).normalizeAgentCard(raw);
  if (action === 'card') {
    out(a2a.AgentCard.toJSON(card));
    process.exit(0);
  }
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
  });
  const client = await new ClientFactory(options).createFromAgentCard(card);
  if (action === 'send') {
    const message = a2a.Message.fromJSON({
      messageId: args.message_id || randomUUID(),
      role: 'ROLE_USER',
      parts: [{ text: args.text }],
      metadata: args.scope ? { scope: args.scope } : undefined,
    });
    const request = a2a.SendMessageRequest.fromJSON({ message: a2a.Message.toJSON(message) });
    if (args.stream) {
      for await (const event of client.sendMessageStream(request)) out(a2a.StreamResponse.toJSON(event));
    } else {
      const result = await client.sendMessage(request);
      out('status' in result ? { task: a2a.Task.toJSON(result) } : { message: a2a.Message.toJSON(result) });
    }
  } else if (action === 'get') {
    out(a2a.Task.toJSON(await client.getTask(a2a.GetTaskRequest.fromJSON({ id: args.id }))));
  } else if (action === 'cancel') {
    out(a2a.Task.toJSON(await client.cancelTask(a2a.CancelTaskRequest.fromJSON({ id: args.id }))));
  } else {
    throw new Error(`unknown action ${action}`);
  }
} catch (e) {
  // Every failure is an answer the test reads.
  out({ error: e?.constructor?.name ?? 'Error', message: String(e?.message ?? e) });
}

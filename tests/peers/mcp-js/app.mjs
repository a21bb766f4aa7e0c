// An AI app's MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2):
// starts the server command its configuration names (argv[2], a JSON list: here
// `gatehouse mcp wrap …`) over stdio, and runs each later argument as one step (["list"]
// or ["call", name, arguments]), printing each answer as one line "ANSWER <json>".
// The SDK is found in $GATEHOUSE_MCP_JS/node_modules (scripts/setup-peers.sh puts it there).
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.GATEHOUSE_MCP_JS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const say = (v) => console.log("ANSWER " + JSON.stringify(v));
const command = JSON.parse(process.argv[2]);
const transport = new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "inherit" });
const client = new Client({ name: "gatehouse-test-app", version: "1.0.0" });
await client.connect(transport);
for (const raw of process.argv.slice(3)) {
  const step = JSON.parse(raw);
  try {
    if (step[0] === "list") {
      const r = await client.listTools();
      say({ tools: r.tools.map((t) => t.name) });
    } else if (step[0] === "call") {
      const r = await client.callTool({ name: step[1], arguments: step[2] });
      const text = (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
      say({ is_error: Boolean(r.isError), text });
    }
  } catch (e) {
    say({ error: { code: e.code ?? null, message: String(e.message ?? e) } });
  }
}
await client.close();

// One row of the client compatibility matrix: the TypeScript SDK 1.x client
// (`@modelcontextprotocol/sdk`, protocol 2025-11-25, sessions) against Toolgate, run by
// `tests/clients.rs`. Usage: node mcp-client-sdk1.mjs <endpoint url> <tenant api key>
// The cells are in `matrix-row.mjs`; prints `ok: ...` at the end, exits non-zero on a failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { elicitationAnswer, runRow, samplingAnswer } from "./matrix-row.mjs";

const [url, key] = process.argv.slice(2);
const client = new Client(
  { name: "toolgate-matrix", version: "1.0.0" },
  { capabilities: { elicitation: {}, sampling: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async () => elicitationAnswer);
client.setRequestHandler(CreateMessageRequestSchema, async () => samplingAnswer);
const listChanged = new Promise((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, resolve));

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);
const tools = await runRow({
  names: async () => (await client.listTools()).tools.map((tool) => tool.name),
  client,
  call: (params, onprogress) => client.callTool(params, undefined, onprogress && { onprogress }),
  listChanged,
});
await transport.terminateSession();
await client.close();
console.log(`ok: TypeScript SDK 1.x, ${tools} tools; call, structured, progress, elicitation, sampling, prompts, resources, completion, list_changed`);

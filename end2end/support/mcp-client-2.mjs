// One row of the client compatibility matrix: the TypeScript client 2.x
// (`@modelcontextprotocol/client`) in `auto` (server/discover, revision 2026-07-28) or `legacy`
// (initialize) mode against Toolgate, run by `tests/clients.rs`.
// Usage: node mcp-client-2.mjs <auto|legacy> <endpoint url> <tenant api key>
// The cells are in `matrix-row.mjs`; prints `ok: ...` at the end, exits non-zero on a failure.
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { elicitationAnswer, runRow, samplingAnswer } from "./matrix-row.mjs";

const [mode, url, key] = process.argv.slice(2);
const client = new Client(
  { name: "toolgate-matrix", version: "2.0.0" },
  { capabilities: { elicitation: {}, sampling: {} }, versionNegotiation: { mode } },
);
client.setRequestHandler("elicitation/create", async () => elicitationAnswer);
client.setRequestHandler("sampling/createMessage", async () => samplingAnswer);
const listChanged = new Promise((resolve) => client.setNotificationHandler("notifications/tools/list_changed", resolve));

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);
const negotiated = client.getNegotiatedProtocolVersion();
assert.equal(negotiated, { auto: "2026-07-28", legacy: "2025-11-25" }[mode], `${mode} mode negotiated ${negotiated}`);

// A document subscribed to (`resources/subscribe` in legacy mode, `subscriptions/listen` on
// 2026-07-28); server-everything sends its updates once its toggle tool starts them.
const WATCHED = "demo://resource/static/document/architecture.md";
const toggle = () => client.callTool({ name: "ev_toggle-subscriber-updates", arguments: {} });
const updated = new Promise((resolve) =>
  client.setNotificationHandler("notifications/resources/updated", (notification) => {
    if (notification.params.uri === WATCHED) resolve();
  }),
);
const watching = mode === "auto"
  ? await client.listen({ resourceSubscriptions: [WATCHED] })
  : await client.subscribeResource({ uri: WATCHED });
if (mode === "auto") assert.deepEqual(watching.honoredFilter.resourceSubscriptions, [WATCHED]);
await toggle();
await Promise.race([
  updated,
  new Promise((_, reject) => setTimeout(() => reject(new Error("no resource update within 15 s")), 15_000).unref()),
]);
await (mode === "auto" ? watching.close() : client.unsubscribeResource({ uri: WATCHED }));
await toggle();

const tools = await runRow({
  names: async () => (await client.listTools({}, { cacheMode: "bypass" })).tools.map((tool) => tool.name),
  client,
  call: (params, onprogress) => client.callTool(params, onprogress && { onprogress }),
  listChanged,
  // On 2026-07-28 changes come on `subscriptions/listen`; a session gets them unasked.
  listen: mode === "auto" ? () => client.listen({ toolsListChanged: true }) : undefined,
});
await client.close();
console.log(`ok: TypeScript client 2.x (${mode}) on ${negotiated}, ${tools} tools; call, structured, progress, elicitation, sampling, prompts, resources, completion, subscription, list_changed`);

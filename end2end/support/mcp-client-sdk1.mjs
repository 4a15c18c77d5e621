// One row of the client compatibility matrix: the TypeScript SDK 1.x client
// (`@modelcontextprotocol/sdk`, protocol 2025-11-25, sessions) against Toolgate, run by
// `tests/clients.rs`. Usage: node mcp-client-sdk1.mjs <endpoint url> <tenant api key>
// The tenant has the built-in tools and server-everything over stdio under the prefix `ev`.
// Prints `listening` when it waits for `tools/list_changed` (the test then makes an admin
// change that removes `run_command`), `ok: ...` at the end; exits non-zero on any failure.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [url, key] = process.argv.slice(2);
const ELICITED_NAME = "Ada from TypeScript";
const SAMPLED_TEXT = "sampled by the TypeScript client";

const client = new Client(
  { name: "toolgate-matrix", version: "1.0.0" },
  { capabilities: { elicitation: {}, sampling: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: "accept",
  content: { name: ELICITED_NAME },
}));
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: "assistant",
  content: { type: "text", text: SAMPLED_TEXT },
  model: "test-model",
}));
const listChanged = new Promise((resolve) =>
  client.setNotificationHandler(ToolListChangedNotificationSchema, resolve),
);

const textOf = (result) =>
  result.content.filter((block) => block.type === "text").map((block) => block.text).join("");

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);

const names = async () => (await client.listTools()).tools.map((tool) => tool.name);
const tools = await names();
for (const name of ["write_text_file", "view_text_file", "run_command", "ev_echo"]) {
  assert.ok(tools.includes(name), `${name} missing from ${tools}`);
}

const written = await client.callTool({
  name: "write_text_file",
  arguments: { path: "typescript.txt", content: "written by the TypeScript SDK" },
});
assert.ok(!written.isError, JSON.stringify(written));
const readBack = await client.callTool({ name: "view_text_file", arguments: { path: "typescript.txt" } });
assert.match(textOf(readBack), /written by the TypeScript SDK/);

const weather = await client.callTool({ name: "ev_get-structured-content", arguments: { location: "New York" } });
assert.ok(weather.structuredContent?.temperature !== undefined, JSON.stringify(weather));

const reports = [];
const ran = await client.callTool(
  { name: "ev_trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
  undefined,
  { onprogress: (progress) => reports.push(progress) },
);
assert.ok(!ran.isError, JSON.stringify(ran));
assert.ok(reports.length > 0, "no progress reached the client");

const elicited = await client.callTool({ name: "ev_trigger-elicitation-request", arguments: {} });
assert.ok(textOf(elicited).includes(ELICITED_NAME), `the answer did not reach the upstream: ${textOf(elicited)}`);
const sampled = await client.callTool({ name: "ev_trigger-sampling-request", arguments: { prompt: "Say something" } });
assert.ok(textOf(sampled).includes(SAMPLED_TEXT), `the answer did not reach the upstream: ${textOf(sampled)}`);

console.log("listening");
await Promise.race([
  listChanged,
  new Promise((_, reject) => setTimeout(() => reject(new Error("no tools/list_changed within 20 s")), 20_000).unref()),
]);
const after = await names();
assert.ok(!after.includes("run_command"), `the admin change is not in the list: ${after}`);
await transport.terminateSession();
await client.close();
console.log(`ok: TypeScript SDK 1.x, ${tools.length} tools; call, structured, progress, elicitation, sampling, list_changed`);

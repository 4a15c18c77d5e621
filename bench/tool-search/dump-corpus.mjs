// Dumps the tool catalog of the public MCP servers of tests/corpus/servers.json into
// bench/tool-search/corpus.json: each server started as servers.json says (cwd tests/corpus, its
// args and env; `venv` commands from $TOOLGATE_VENV/bin), listed over stdio with the TypeScript
// MCP SDK client (every page of tools/list).
//
//   node bench/tool-search/dump-corpus.mjs
//
// Needs `scripts/install-deps.sh --test` (end2end/ and tests/corpus/ node_modules, the venv).
import { readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const corpusDir = join(root, "tests", "corpus");
const sdk = join(root, "end2end", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "client");
const { Client } = await import(join(sdk, "index.js"));
const { StdioClientTransport, getDefaultEnvironment } = await import(join(sdk, "stdio.js"));

const venv = process.env.TOOLGATE_VENV || join(homedir(), ".cache", "toolgate", "venv");
const servers = JSON.parse(readFileSync(join(corpusDir, "servers.json"), "utf8"));
const TIMEOUT_MS = 120_000;

async function listTools(server) {
  const command = server.venv ? join(venv, "bin", server.command) : server.command;
  const transport = new StdioClientTransport({
    command,
    args: server.args ?? [],
    cwd: corpusDir,
    env: { ...getDefaultEnvironment(), ...(server.env ?? {}) },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => { stderr = (stderr + chunk).slice(-2000); });
  // The capabilities Toolgate declares to its upstreams (engine/src/upstream/handler.rs), so the
  // servers that gate tools on them (everything) list what they list to Toolgate.
  const client = new Client(
    { name: "toolgate-tool-search-dump", version: "0.1.0" },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  try {
    await client.connect(transport, { timeout: TIMEOUT_MS });
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: TIMEOUT_MS });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  } catch (error) {
    throw new Error(`${error.message}\n--- stderr ---\n${stderr.trim()}`);
  } finally {
    await client.close().catch(() => {});
  }
}

const entries = [];
const failed = [];
for (const server of servers) {
  try {
    const tools = await listTools(server);
    console.error(`${server.name}: ${tools.length} tools`);
    for (const tool of tools) {
      entries.push({
        server: server.name,
        name: tool.name,
        description: tool.description ?? "",
        inputSchema: tool.inputSchema,
      });
    }
  } catch (error) {
    failed.push(server.name);
    console.error(`${server.name}: FAILED: ${error.message}`);
  }
}

const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
entries.sort((a, b) => cmp(a.server, b.server) || cmp(a.name, b.name));
// Compact, one tool per line: small, and diffs show which tools changed.
writeFileSync(join(here, "corpus.json"), "[\n" + entries.map((e) => JSON.stringify(e)).join(",\n") + "\n]\n");
console.error(`${entries.length} tools from ${servers.length - failed.length}/${servers.length} servers`
  + (failed.length ? `; failed: ${failed.join(", ")}` : ""));
process.exitCode = failed.length ? 1 : 0;

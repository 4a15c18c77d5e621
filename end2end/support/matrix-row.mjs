// The cells of a client compatibility row (`tests/clients.rs`) for the TypeScript clients,
// whose APIs differ only in how a call asks for progress and how the list is fetched.
import assert from "node:assert/strict";

export const ELICITED_NAME = "Ada from TypeScript";
export const SAMPLED_TEXT = "sampled by the TypeScript client";

/** What a client answers to an elicitation and a sampling request. */
export const elicitationAnswer = { action: "accept", content: { name: ELICITED_NAME } };
export const samplingAnswer = { role: "assistant", content: { type: "text", text: SAMPLED_TEXT }, model: "test-model" };

const textOf = (result) =>
  result.content.filter((block) => block.type === "text").map((block) => block.text).join("");

/**
 * server-everything's prompts, resources, templates and completions through Toolgate, by
 * `client` (either TypeScript line: their methods are alike).
 */
async function itemCells(client) {
  const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
  for (const name of ["ev_simple-prompt", "ev_args-prompt", "ev_completable-prompt"]) {
    assert.ok(prompts.includes(name), `${name} missing from ${prompts}`);
  }
  const got = await client.getPrompt({ name: "ev_args-prompt", arguments: { city: "Paris" } });
  assert.match(JSON.stringify(got.messages), /What's weather in Paris\?/);
  const completed = await client.complete({
    ref: { type: "ref/prompt", name: "ev_completable-prompt" },
    argument: { name: "department", value: "Eng" },
  });
  assert.deepEqual(completed.completion.values, ["Engineering"]);
  const listed = (await client.listResources()).resources.map((resource) => resource.uri);
  const document = listed.find((uri) => uri.startsWith("demo://resource/static/document/"));
  assert.ok(document, `no static document among ${listed}`);
  assert.ok((await client.readResource({ uri: document })).contents[0].text);
  const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  assert.ok(templates.includes("demo://resource/dynamic/text/{resourceId}"), `${templates}`);
  const dynamic = await client.readResource({ uri: "demo://resource/dynamic/text/7" });
  assert.match(dynamic.contents[0].text, /7/);
}

/**
 * Runs every cell. `names()` lists the tool names; `call(params, onprogress)` calls a tool;
 * `client` gets prompts and reads resources; `listChanged` resolves on `tools/list_changed`,
 * `listen()` (optional) opens what delivers it. Returns how many tools were listed.
 */
export async function runRow({ names, call, client, listChanged, listen }) {
  const tools = await names();
  for (const name of ["write_text_file", "view_text_file", "run_command", "ev_echo"]) {
    assert.ok(tools.includes(name), `${name} missing from ${tools}`);
  }
  const written = await call({
    name: "write_text_file",
    arguments: { path: "typescript.txt", content: "written by a TypeScript client" },
  });
  assert.ok(!written.isError, JSON.stringify(written));
  const readBack = await call({ name: "view_text_file", arguments: { path: "typescript.txt" } });
  assert.match(textOf(readBack), /written by a TypeScript client/);

  const weather = await call({ name: "ev_get-structured-content", arguments: { location: "New York" } });
  assert.ok(weather.structuredContent?.temperature !== undefined, JSON.stringify(weather));

  const reports = [];
  const ran = await call(
    { name: "ev_trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
    (progress) => reports.push(progress),
  );
  assert.ok(!ran.isError, JSON.stringify(ran));
  assert.ok(reports.length > 0, "no progress reached the client");

  const elicited = await call({ name: "ev_trigger-elicitation-request", arguments: {} });
  assert.ok(textOf(elicited).includes(ELICITED_NAME), `the answer did not reach the upstream: ${textOf(elicited)}`);
  const sampled = await call({ name: "ev_trigger-sampling-request", arguments: { prompt: "Say something" } });
  assert.ok(textOf(sampled).includes(SAMPLED_TEXT), `the answer did not reach the upstream: ${textOf(sampled)}`);
  await itemCells(client);

  const subscription = await listen?.();
  console.log("listening");
  await Promise.race([
    listChanged,
    new Promise((_, reject) => setTimeout(() => reject(new Error("no tools/list_changed within 20 s")), 20_000).unref()),
  ]);
  await subscription?.close();
  const after = await names();
  assert.ok(!after.includes("run_command"), `the admin change is not in the list: ${after}`);
  return tools.length;
}

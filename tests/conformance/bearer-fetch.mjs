// Preloaded (`node --import`) into a tool that cannot be told to send a header, such as the MCP
// conformance suite's CLI: every `fetch` carries `Authorization: Bearer $TOOLGATE_KEY`.
const key = process.env.TOOLGATE_KEY;
if (!key) throw new Error("TOOLGATE_KEY is not set");
const fetchWithoutKey = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  headers.set("authorization", `Bearer ${key}`);
  return fetchWithoutKey(input, { ...init, headers });
};

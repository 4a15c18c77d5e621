// Preloaded (`node --import`) into a tool that cannot be told to send a header, such as the MCP
// conformance suite's CLI: every request it makes — with `fetch`, undici's `request` or node's
// `http.request` (the raw requests of its host and header scenarios) — carries
// `Authorization: Bearer $TOOLGATE_KEY`.
import http from "node:http";
import { createRequire } from "node:module";

const key = process.env.TOOLGATE_KEY;
if (!key) throw new Error("TOOLGATE_KEY is not set");
const authorization = `Bearer ${key}`;

const fetchWithoutKey = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  headers.set("authorization", authorization);
  return fetchWithoutKey(input, { ...init, headers });
};

/** `options` with the key among its headers (an object of them, as the suite gives them). */
const withKey = (options = {}) => ({ ...options, headers: { ...options.headers, authorization } });

// The suite imports undici's `request` from this directory's undici, a CommonJS module whose
// exports its ESM importers read when they are first imported, after this preload.
const undici = createRequire(import.meta.url)("undici");
const undiciRequestWithoutKey = undici.request;
undici.request = (url, options) => undiciRequestWithoutKey(url, withKey(options));

const httpRequestWithoutKey = http.request;
// `request(options[, callback])` or `request(url[, options][, callback])`.
http.request = (...args) => {
  const at = args.findIndex((arg) => typeof arg === "object" && !(arg instanceof URL));
  if (at >= 0) args[at] = withKey(args[at]);
  else args.splice(1, 0, withKey());
  return httpRequestWithoutKey(...args);
};

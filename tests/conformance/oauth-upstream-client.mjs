// The conformance suite's "client" for its auth scenarios is Toolgate as an upstream's OAuth
// client. The suite starts a protected MCP server and its authorization server, then runs this
// script with the server's URL; the script does what an owner does in the panel: registers the
// server (OAuth, a shared authorization), opens Toolgate's authorization link in a signed-in
// browser session (played over HTTP with cookies: the scenario's provider redirects back at
// once), and runs the server's `test-tool` through the admin API. An authorization the server's
// page says must be given again is given again, as a person would.
//
// Environment: TOOLGATE_URL, TOOLGATE_TOKEN (an admin API token), TOOLGATE_COOKIE (the session
// of an owner signed in to the panel: scenarios run in parallel, and parallel sign-ins of one
// account count as guesses), TOOLGATE_TENANT; the suite's MCP_CONFORMANCE_SCENARIO and
// MCP_CONFORMANCE_CONTEXT (a pre-registered client).

import { randomBytes } from 'node:crypto';

const [serverUrl] = process.argv.slice(2);
const base = process.env.TOOLGATE_URL;
const token = process.env.TOOLGATE_TOKEN;
const tenant = process.env.TOOLGATE_TENANT;
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');
const name = `s${randomBytes(4).toString('hex')}`;

function fail(message) {
  console.error(`${process.env.MCP_CONFORMANCE_SCENARIO}: ${message}`);
  process.exit(1);
}

async function admin(method, path, body) {
  const response = await fetch(`${base}/api/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** A browser's navigations: Toolgate's cookies kept for Toolgate alone, redirects followed. */
class Browser {
  cookies = new Map();

  async get(url) {
    const ours = new URL(url).origin === base;
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const response = await fetch(url, { headers: ours ? { cookie } : {}, redirect: 'manual' });
    for (const line of ours ? response.headers.getSetCookie() : []) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return response;
  }

  /** Follows `url` through redirects to the page it ends on. */
  async visit(url) {
    for (let hops = 0; hops < 20; hops++) {
      const response = await this.get(url);
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) {
        return { url, status: response.status, body: await response.text() };
      }
      url = new URL(location, url).toString();
    }
    fail(`too many redirects from ${url}`);
  }
}

const browser = new Browser();
for (const pair of process.env.TOOLGATE_COOKIE.split('; ')) {
  const at = pair.indexOf('=');
  browser.cookies.set(pair.slice(0, at), pair.slice(at + 1));
}

const oauth = { mode: 'shared' };
if (context.client_id) oauth.client_id = context.client_id;
if (context.client_secret) oauth.client_secret = context.client_secret;
const created = await admin('POST', '/servers', {
  name, transport: 'streamable_http', url: serverUrl, oauth, new_tools_enabled: true,
});
if (created.status !== 201) fail(`registering the server: ${created.status} ${JSON.stringify(created.body)}`);

/** Authorizes the server in the browser, as its owner does from the server's page. */
async function authorize() {
  const page = await browser.visit(`${base}/oauth/upstream/start?server=${name}&for=shared`);
  const landed = new URL(page.url);
  if (landed.origin !== base || landed.pathname !== `/servers/${name}` || page.status !== 200) {
    fail(`the authorization ended on ${page.url} (${page.status}): ${page.body.slice(0, 2000)}`);
  }
}

/** Runs the server's test tool once it is listed; what the call answered. */
async function call() {
  for (let tries = 0; tries < 50; tries++) {
    const answer = await admin('POST', `/tenants/${tenant}/invoke`, { tool: `${name}_test-tool`, arguments: {} });
    if (!JSON.stringify(answer.body).includes('unknown tool')) return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return `\`${name}_test-tool\` was never listed`;
}

/** The authorization the server's page asks to be given again, if any. */
async function needingAuthorization() {
  const listed = await admin('GET', `/servers/${name}/authorizations`);
  return listed.body.find((authorization) => authorization.status !== 'active');
}

await authorize();
let answer = await call();
// As a person does when the server's page says its authorization must be given again (its
// token refused, a scope wanted, its provider moved): authorized again, at most twice.
for (let again = 0; again < 2 && answer?.status !== 'ok'; again++) {
  const lost = await needingAuthorization();
  if (!lost) break;
  if (!lost.reason) fail(`the page says the authorization must be given again, but not why: ${JSON.stringify(lost)}`);
  console.error(`the call answered ${JSON.stringify(answer)}; authorizing again, as ${lost.reason} (asking for ${lost.wanted_scopes.join(' ') || 'the usual scopes'})`);
  await authorize();
  answer = await call();
}
if (answer?.status !== 'ok') fail(`the call failed: ${JSON.stringify(answer)}`);
console.log(JSON.stringify(answer));

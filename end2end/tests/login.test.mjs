import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, policyRefusals, screenshots, startToolgate } from '../support/toolgate.mjs';

let toolgate;
let browser;

before(async () => {
  toolgate = await startToolgate();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await toolgate?.stop();
});

test('an administrator signs in through the hydrated form, stays signed in, and signs out', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const refusals = policyRefusals(page);
  const wasmLoaded = page.waitForResponse((r) => r.url().endsWith('/pkg/toolgate_bg.wasm') && r.ok());

  const first = await page.goto(`${toolgate.url}/`);
  assert.equal(new URL(page.url()).pathname, '/login', 'signed out, the panel leads to login');
  assert.match(first.headers()['content-security-policy'], /script-src 'self' 'nonce-/);
  await wasmLoaded;
  await page.waitForSelector('html[data-hydrated="true"]');
  await page.screenshot({ path: `${screenshots}/login.png` });

  // A wrong password is refused inline, without leaving the page or losing the username.
  const username = page.locator('input[name=username]');
  const password = page.locator('input[name=password]');
  await username.pressSequentially('admin');
  await password.pressSequentially('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  assert.match(await alert.innerText(), /invalid username or password/);
  assert.equal(await username.inputValue(), 'admin');
  assert.equal(new URL(page.url()).pathname, '/login');

  await password.fill('');
  await password.pressSequentially(toolgate.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${toolgate.url}/`);
  const signedIn = page.locator('.signed-in');
  await signedIn.waitFor();
  assert.match(await signedIn.innerText(), /Signed in as admin \(owner\)/);
  await page.screenshot({ path: `${screenshots}/dashboard.png` });

  await page.reload();
  await signedIn.waitFor();
  assert.match(await signedIn.innerText(), /Signed in as admin/, 'the session survives a reload');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${toolgate.url}/login`);
  await page.goto(`${toolgate.url}/`);
  assert.equal(new URL(page.url()).pathname, '/login', 'signed out for good');
  assert.deepEqual(refusals, [], 'the Content-Security-Policy refused part of a page');
});

test('the panel fits a narrow window', async () => {
  const page = await browser.newPage({ viewport: { width: 390, height: 800 } });
  await page.goto(`${toolgate.url}/login`);
  await page.waitForSelector('html[data-hydrated="true"]');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `no horizontal scrolling (overflow ${overflow}px)`);
  await page.screenshot({ path: `${screenshots}/login-narrow.png` });
});

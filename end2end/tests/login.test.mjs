import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseOwnPassword, launchChromium, policyRefusals, screenshots, startToolgate } from '../support/toolgate.mjs';

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

  // The printed password is for one sign-in: it leads to choosing one's own, and only then on.
  const oneTime = toolgate.password;
  await password.fill('');
  await password.pressSequentially(oneTime);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.pathname === '/account');
  const notice = page.getByRole('status').filter({ hasText: 'one-time password' });
  await notice.waitFor();
  await page.screenshot({ path: `${screenshots}/choose-password.png` });
  await page.getByLabel('One-time password').fill(oneTime);
  await page.getByLabel('New password (at least 12 characters)').fill('mine-and-long-enough');
  await page.getByLabel('The same again').fill('mine-and-long-enougH');
  await page.getByRole('button', { name: 'Save the new password' }).click();
  await alert.waitFor();
  assert.match(await alert.innerText(), /the two new passwords differ/);
  const elsewhere = await page.goto(`${toolgate.url}/servers`);
  assert.equal(new URL(page.url()).pathname, '/account', 'no other page before the password is chosen');
  assert.ok(elsewhere.ok());
  toolgate.password = await chooseOwnPassword(page, oneTime);
  assert.equal(new URL(page.url()).pathname, '/servers', 'on to where the sign-in was going');
  await page.goto(`${toolgate.url}/`);
  const signedIn = page.locator('.signed-in');
  await signedIn.waitFor();
  assert.match(await signedIn.innerText(), /Signed in as admin \(Owner\)/);
  await page.screenshot({ path: `${screenshots}/dashboard.png` });

  await page.reload();
  await signedIn.waitFor();
  assert.match(await signedIn.innerText(), /Signed in as admin/, 'the session survives a reload');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${toolgate.url}/login`);
  await page.goto(`${toolgate.url}/`);
  assert.equal(new URL(page.url()).pathname, '/login', 'signed out for good');
  await page.waitForSelector('html[data-hydrated="true"]');
  await username.fill('admin');
  await password.fill(oneTime);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await alert.waitFor();
  assert.match(await alert.innerText(), /invalid username or password/, 'the one-time password works once');
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

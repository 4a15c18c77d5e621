// Starts a real `toolgate serve` on its own embedded PostgreSQL (a fresh data folder), as a
// user would on first start, and launches Debian's Chromium headless.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const screenshots = new URL('../screenshots/', import.meta.url).pathname;
mkdirSync(screenshots, { recursive: true });

/** Resolves once `pattern` matches the accumulated output of `stream`. */
function waitFor(stream, pattern, what, child) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; output:\n${seen}`)), 60_000);
    child.once('exit', (code) => reject(new Error(`toolgate exited (${code}) before ${what}; output:\n${seen}`)));
    stream.on('data', (chunk) => {
      seen += chunk;
      const match = seen.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
  });
}

export async function startToolgate() {
  const bin = process.env.TOOLGATE_BIN;
  if (!bin) throw new Error('TOOLGATE_BIN must name the toolgate binary (make test sets it)');
  const dataDir = mkdtempSync(join(tmpdir(), 'toolgate-e2e-'));
  const env = { ...process.env, TOOLGATE_ADDR: '127.0.0.1:0', TOOLGATE_DATA_DIR: dataDir };
  delete env.DATABASE_URL; // the embedded default, as on a fresh machine
  const child = spawn(bin, ['serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  let password, url;
  try {
    [password, [, url]] = await Promise.all([
      waitFor(child.stdout, /one-time password:\n(\S+)\n/, 'the one-time password', child).then((m) => m[1]),
      waitFor(child.stderr, /listening url=(http:\/\/[\d.:]+)/, 'the listening address', child),
    ]);
  } catch (err) {
    child.kill('SIGTERM');
    throw err;
  }
  return {
    url,
    password,
    /** Runs a `toolgate` command against this instance's database; returns its stdout. */
    cli(args, input = '') {
      const run = spawnSync(bin, args, { env, input, encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`toolgate ${args.join(' ')} failed: ${run.stderr}`);
      return run.stdout;
    },
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited; // toolgate stops its PostgreSQL cluster on the way out
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A port nobody listens on now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on `port`. */
function listening(port) {
  return new Promise((resolve) => {
    const socket = createConnection(port, '127.0.0.1');
    socket.once('error', () => resolve(false));
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
  });
}

/** server-everything (the public MCP reference server) on the legacy HTTP+SSE transport. */
export async function startSseServer() {
  const port = await freePort();
  const script = new URL('../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url);
  const child = spawn('node', [script.pathname, 'sse'], { env: { ...process.env, PORT: `${port}` }, stdio: 'ignore' });
  const deadline = Date.now() + 30_000;
  while (!(await listening(port))) {
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`server-everything never listened on ${port}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { url: `http://127.0.0.1:${port}/sse`, stop: () => child.kill('SIGTERM') };
}

/**
 * Launches Chromium. Every page it opens writes its script errors to the test's output, so
 * that a test waiting in vain after a click (not only after the loads `hydrated` watches) shows
 * what the page reported: a panic while hydrating or rendering, a refused request.
 */
export async function launchChromium() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
    ],
  });
  // `browser.newPage` makes its page's context through `newContext` too.
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (options) => {
    const context = await newContext(options);
    context.on('page', (page) => {
      page.on('pageerror', (err) => console.error(`[${page.url()}] page error: ${err.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') console.error(`[${page.url()}] console: ${message.text()}`);
      });
    });
    return context;
  };
  return browser;
}

/** Signs in through the login form and waits for the dashboard. */
export async function signIn(page, toolgate, username = 'admin', password = toolgate.password) {
  await hydrated(page, () => page.goto(`${toolgate.url}/login`));
  await page.locator('input[name=username]').fill(username);
  await page.locator('input[name=password]').fill(password);
  await hydrated(page, async () => {
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((url) => url.pathname === '/' || url.pathname === '/account');
  });
  if (new URL(page.url()).pathname === '/account') {
    // The printed password was for this one sign-in: the account chooses its own first.
    const own = await chooseOwnPassword(page, password);
    if (username === 'admin') toolgate.password = own;
  }
  // The client goes to the dashboard itself (the page stays hydrated): the menu the account's
  // role decides arrives after.
  await page.locator('.sidebar nav a', { hasText: 'Dashboard' }).waitFor();
}

/**
 * On the account page a one-time password leads to: chooses a password of one's own (returned)
 * and waits to be taken on where the sign-in was going.
 */
export async function chooseOwnPassword(page, oneTime) {
  const own = `${oneTime}-own`;
  await page.getByLabel('One-time password').fill(oneTime);
  await page.getByLabel('New password (at least 12 characters)').fill(own);
  await page.getByLabel('The same again').fill(own);
  await page.getByRole('button', { name: 'Save the new password' }).click();
  await page.waitForURL((url) => url.pathname !== '/account');
  return own;
}

/**
 * Runs `navigate` and waits until the client has taken over the page it leads to; if it never
 * does, the error carries the answer's status and title and what the page reported (a panic while
 * hydrating, a failed fetch).
 */
async function hydrated(page, navigate) {
  const reported = [];
  const onError = (err) => reported.push(`page error: ${err.message}`);
  const onConsole = (message) => {
    if (message.type() === 'error') reported.push(`console: ${message.text()}`);
  };
  page.on('pageerror', onError);
  page.on('console', onConsole);
  let response;
  try {
    response = await navigate();
    await page.waitForSelector('html[data-hydrated="true"]');
  } catch (err) {
    const answer = response ? `${response.status()} "${await page.title().catch(() => '')}"` : 'the page';
    err.message += `\n${page.url()} (${answer}) reported:\n${reported.join('\n') || '(nothing)'}`;
    throw err;
  } finally {
    page.off('pageerror', onError);
    page.off('console', onConsole);
  }
}

/** Goes to a panel page and waits until the client has taken over. */
export async function open(page, toolgate, path) {
  await hydrated(page, () => page.goto(`${toolgate.url}${path}`));
}

/** Reloads the page and waits until the client has taken over again (inputs get their values then). */
export async function reload(page) {
  await hydrated(page, () => page.reload());
}

/**
 * Retries `check` until it passes, reloading the page between tries: for what the server does
 * off the request path (catalog reloads, discovery, batched invocation records).
 */
export async function eventually(page, check, what, timeout = 15_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) {
        const shown = (await page.locator('main').innerText().catch(() => '')).slice(0, 600);
        throw new Error(`${what}: ${err.message}\n${page.url()} showed:\n${shown}`);
      }
      await page.waitForTimeout(300);
      await reload(page);
    }
  }
}

/** Collects what the page's Content-Security-Policy refused (Chromium reports each on the console). */
export function policyRefusals(page) {
  const refused = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && message.text().includes('Content Security Policy')) refused.push(`${page.url()}: ${message.text()}`);
  });
  return refused;
}

/**
 * The web app and a squatter on svc's port (issue 32 finding 1; docs/security.md): an open tab,
 * svc stops, another process takes the port. The tab must send it nothing that is worth anything
 * (no CSRF token, no form data), say that something else answers, and, once svc is back, prove
 * svc, renew its token and go on without a new login. Minting an API key then asks for the
 * password (sudo mode: the renewed session has not proved the owner since the restart).
 */
import http from 'node:http';
import path from 'node:path';
import t from 'tap';
import { api, OWNER_PASSWORD, setupOwner, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { freePort } from '../helpers/ports.js';
import { launchBrowser, newPage, screenshot } from '../helpers/browser.js';

interface Captured {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const home = path.join(tempDir(), 'home');
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
let svc: RunningSvc = await startSvc({ home, args: ['--port', String(port)] });
t.teardown(() => svc.stop());
await setupOwner(svc);
await api(base, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'one', domain: 'example.test' } });

const browser = await launchBrowser();
t.teardown(() => browser.close());
const page = await newPage(browser);

const captured: Captured[] = [];
/** A squatter: records every request and upgrade; answers every request like svc would look, with a proof that cannot be right. */
const squatter = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    captured.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ proof: 'A'.repeat(43), challenge: 'squatter-challenge', inboxes: [], count: 0, limit: 20 }));
  });
});
squatter.on('upgrade', (req, socket) => {
  captured.push({ method: 'UPGRADE', url: req.url ?? '', headers: req.headers, body: '' });
  socket.destroy();
});

/** The new-key form is a disclosure that stays open after a key was made. */
async function openNewKeyForm(): Promise<void> {
  if (!(await page.getByLabel('Name').isVisible())) await page.getByText('New API key').click();
}

t.test('the owner signs in and the app is live', async () => {
  await page.goto(base + '/');
  await page.getByLabel('Owner password').fill(OWNER_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Inboxes' }).waitFor();
  await page.locator('[data-live="live"]').waitFor();
});

t.test('svc stops and a squatter takes the port: the tab sends it no token and says something else answers', async (t) => {
  const csrf = await page.evaluate(() => window.localStorage.getItem('svc.csrf'));
  t.ok(csrf, 'the tab holds a token');
  await svc.stop();
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
  await page.getByTestId('impostor-banner').waitFor({ timeout: 60_000 });
  t.equal(await page.locator('[data-live]').getAttribute('data-live'), 'impostor', 'the live badge says so');
  await screenshot(page, 'squatter-warning');
  // The owner clicks on: a page load of the app's own data is not sent either.
  await page.getByRole('link', { name: 'API keys', exact: true }).click();
  await page.waitForTimeout(1500);
  const sent = JSON.stringify(captured);
  t.notOk(sent.includes(`csrf.${csrf}`), 'no WebSocket upgrade carried the token');
  t.notOk(captured.some((c) => c.headers['x-svc-csrf']), 'no request carried X-Svc-CSRF');
  t.ok(captured.some((c) => c.url === '/v0/owner/session-proof'), 'the tab asked whatever answers to prove it is svc');
  t.notOk(captured.some((c) => c.url === '/v0/owner/session-renew'), 'and, with a wrong proof, never answered its challenge');
  t.notOk(captured.some((c) => c.method === 'UPGRADE'), 'nor opened a WebSocket to it');
});

t.test('svc comes back: the tab proves it, renews its token and goes on without a new login', async (t) => {
  const before = await page.evaluate(() => window.localStorage.getItem('svc.csrf'));
  await new Promise<void>((resolve) => squatter.close(() => resolve()));
  svc = await startSvc({ home, args: ['--port', String(port)] });
  await page.locator('[data-live="live"]').waitFor({ timeout: 60_000 });
  t.equal(await page.getByTestId('impostor-banner').count(), 0, 'the warning is gone');
  const after = await page.evaluate(() => window.localStorage.getItem('svc.csrf'));
  t.ok(after && after !== before, 'a token of the new start');
  await page.goto(base + '/api-keys');
  await page.getByText('New API key').waitFor();
  t.equal(await page.getByRole('heading', { name: 'Sign in to svc' }).count(), 0, 'still signed in');
  // What the squatter holds, replayed now that svc is back, is nothing.
  const old = captured.find((c) => c.headers.cookie);
  const replay = await api<{ authenticated: boolean }>(base, 'GET', '/v0/owner/status', { headers: { Cookie: old?.headers.cookie ?? '', 'X-Svc-CSRF': before ?? '' } });
  t.equal(replay.body.authenticated, false, "the squatter's cookie with the old token is no session");
});

t.test('creating an API key after the restart asks for the password first (sudo mode)', async (t) => {
  await page.getByText('New API key').click();
  await page.getByLabel('Name').fill('after restart');
  await page.getByRole('button', { name: 'Create key' }).click();
  const dialog = page.getByTestId('sudo-dialog');
  await dialog.waitFor();
  await screenshot(page, 'sudo-dialog');
  await dialog.getByLabel('Owner password').fill('not the password at all');
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  await dialog.getByRole('alert').filter({ hasText: 'password is not correct' }).waitFor();
  await dialog.getByLabel('Owner password').fill(OWNER_PASSWORD);
  await dialog.getByRole('button', { name: 'Confirm' }).click();
  const secret = (await page.getByTestId('new-secret').locator('code').textContent()) ?? '';
  t.match(secret, /^svc_key_/, 'the key is created once the owner confirmed');
  t.equal((await api(base, 'GET', '/v0/inboxes', { token: secret })).status, 200, 'and works');
  await page.getByRole('button', { name: 'Done' }).click();
  await openNewKeyForm();
  await page.getByLabel('Name').fill('second');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByTestId('new-secret').waitFor();
  t.equal(await page.getByTestId('sudo-dialog').count(), 0, 'within ten minutes it does not ask again');
});

t.test('cancelling the prompt creates nothing and says why', async (t) => {
  const keys = await api<{ api_keys: unknown[] }>(base, 'GET', '/v0/api-keys', { token: svc.ownerToken });
  // A fresh start again: the proof is per start.
  await svc.stop();
  svc = await startSvc({ home, args: ['--port', String(port)] });
  await page.locator('[data-live="live"]').waitFor({ timeout: 60_000 });
  await page.getByRole('button', { name: 'Done' }).click().catch(() => undefined);
  await openNewKeyForm();
  await page.getByLabel('Name').fill('cancelled');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.getByTestId('sudo-dialog').getByRole('button', { name: 'Cancel' }).click();
  await page.getByRole('alert').filter({ hasText: 'confirm your password' }).waitFor();
  const after = await api<{ api_keys: unknown[] }>(base, 'GET', '/v0/api-keys', { token: svc.ownerToken });
  t.equal(after.body.api_keys.length, keys.body.api_keys.length, 'no key was made');
  // The restart above: while svc drains and starts, a request of the open page may be refused,
  // reset (sent on a kept-alive connection just as the stopping service closed it) or answered 503
  // (service_unavailable); the page retries. Anything else is an error.
  t.same(page.problems.filter((p) => !/ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|Failed to fetch|WebSocket|status of 503/.test(p)), [], 'no page errors');
});

/**
 * The owner's first run and account in a real browser (issue 8, flow 1): setup with the printed
 * code, login honouring `return_to` (same-origin paths only), logout, login-link redemption,
 * sessions list and sign-out, the last backup's age, password change, and the navigation on a
 * phone-sized screen.
 */
import t from 'tap';
import { api, OWNER_PASSWORD, startSvc } from '../helpers/svc.js';
import { launchBrowser, newPage, PHONE, screenshot } from '../helpers/browser.js';
import path from 'node:path';
import { tempDir } from '../helpers/svc.js';
import { svcCli } from '../e2e/cli-run.js';

const svc = await startSvc();
t.teardown(() => svc.stop());
const browser = await launchBrowser();
t.teardown(() => browser.close());
const page = await newPage(browser);

async function signIn(password = OWNER_PASSWORD) {
  await page.getByLabel('Owner password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

t.test('first run shows setup; the printed code and a password sign the owner in', async (t) => {
  await page.goto(svc.url + '/');
  await page.getByRole('heading', { name: 'Set up svc' }).waitFor();
  await screenshot(page, 'setup');
  await page.getByLabel('Setup code').fill('WRONG-CODE1');
  await page.getByLabel('Password (12 characters or more)').fill(OWNER_PASSWORD);
  await page.getByLabel('Password again').fill(OWNER_PASSWORD);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.getByRole('alert').filter({ hasText: 'setup code does not match' }).waitFor();
  await page.getByLabel('Setup code').fill(svc.setupCode!);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.getByRole('heading', { name: 'Inboxes' }).waitFor();
  t.equal(new URL(page.url()).pathname, '/mail', 'the app opens on the mail list');
  const status = await api(svc.url, 'GET', '/v0/owner/status');
  t.equal(status.body.setup_required, false, 'the password is set');
  await page.locator('[data-live="live"]').waitFor();
  t.pass('the live event stream connected with the cookie and CSRF subprotocol');
});

t.test('logout ends the session; a signed-out visit goes to login and back to the page asked for', async (t) => {
  await page.goto(svc.url + '/account');
  await page.getByRole('button', { name: 'Sign out' }).first().click();
  await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
  const cookies = await browser.context.cookies(svc.url);
  t.notOk(cookies.some((c) => c.name === 'svc_session'), 'the session cookie is gone');

  await page.goto(svc.url + '/account');
  await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
  t.equal(new URL(page.url()).searchParams.get('return_to'), '/account', 'return_to remembers the page');
  await screenshot(page, 'login');
  await signIn('not the password at all');
  await page.getByRole('alert').filter({ hasText: 'password is not correct' }).waitFor();
  await signIn();
  await page.getByRole('heading', { name: 'Account' }).waitFor();
  t.equal(new URL(page.url()).pathname, '/account');
});

t.test('return_to outside this origin is ignored', async (t) => {
  await page.getByRole('button', { name: 'Sign out' }).first().click();
  await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
  for (const evil of ['//evil.test/x', 'https://evil.test/', '/\\evil.test']) {
    await page.goto(`${svc.url}/login?return_to=${encodeURIComponent(evil)}`);
    await signIn();
    await page.getByRole('heading', { name: 'Inboxes' }).waitFor();
    t.equal(new URL(page.url()).origin, svc.url, `${evil}: stayed on svc`);
    await page.goto(svc.url + '/account');
    await page.getByRole('button', { name: 'Sign out' }).first().click();
    await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
  }
});

t.test('a login link signs in once and leaves no token in the address bar', async (t) => {
  const link = await api<{ url: string }>(svc.url, 'POST', '/v0/owner/login-links', { token: svc.ownerToken });
  t.equal(link.status, 200);
  await page.goto(link.body.url);
  await page.getByRole('heading', { name: 'Inboxes' }).waitFor();
  t.notMatch(page.url(), /token=/, 'the fragment was removed');
  await page.goto(svc.url + '/account');
  await page.getByRole('button', { name: 'Sign out' }).first().click();
  await page.getByRole('heading', { name: 'Sign in to svc' }).waitFor();
  await page.goto(link.body.url);
  await page.getByRole('alert').filter({ hasText: 'invalid, already used or expired' }).waitFor();
  t.pass('a used link is refused');
  await signIn();
  await page.getByRole('heading', { name: 'Inboxes' }).waitFor();
});

t.test('sessions are listed and another session can be signed out', async (t) => {
  const other = await api(svc.url, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD }, headers: { 'user-agent': 'other-device' } });
  t.equal(other.status, 200);
  const otherCookie = (other.headers.get('set-cookie') ?? '').split(';')[0];
  const otherCsrf = (other.body as { csrf_token: string }).csrf_token;
  await page.goto(svc.url + '/account');
  const rows = page.locator('[data-testid="sessions"] tbody tr');
  await t.resolves(rows.nth(1).waitFor(), 'two sessions listed');
  t.equal(await rows.count(), 2);
  await page.locator('[data-testid="sessions"] tr', { hasText: 'this browser' }).waitFor();
  await screenshot(page, 'account');
  page.once('dialog', (d) => void d.accept());
  await page.locator('[data-testid="sessions"] tbody tr', { hasNotText: 'this browser' }).getByRole('button', { name: 'Sign out' }).click();
  await t.resolves(page.waitForFunction(() => document.querySelectorAll('[data-testid="sessions"] tbody tr').length === 1));
  const check = await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: otherCookie, 'x-svc-csrf': otherCsrf } });
  t.equal(check.status, 401, 'the other session no longer works');
});

t.test('the Backups page shows the last backup\'s age (docs/backup.md)', async (t) => {
  await page.goto(svc.url + '/backups');
  await page.locator('[data-testid="last-backup"]', { hasText: 'No backup yet.' }).waitFor();
  t.pass('a home never backed up says so');
  const made = await svcCli(['backup', '--to', path.join(tempDir(), 'browser.svcbackup'), '--home', svc.home]);
  t.equal(made.code, 0, made.stderr);
  await page.reload();
  const line = page.locator('[data-testid="last-backup"]', { hasText: /Last backup \d+ seconds ago/ });
  await t.resolves(line.waitFor(), 'after `svc backup`, its age');
  t.equal(await page.getByText('svc key recovery').count(), 0, 'no recovery-code warning for a home that has one');
  await page.goto(svc.url + '/account');
});

t.test('password change keeps this session, signs out others, and the new password works', async (t) => {
  const other = await api(svc.url, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD } });
  const otherCookie = (other.headers.get('set-cookie') ?? '').split(';')[0];
  const next = 'a brand new owner password';
  await page.getByLabel('Current password').fill(OWNER_PASSWORD);
  await page.getByLabel('New password (12 characters or more)').fill(next);
  await page.getByLabel('New password again').fill(next);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('status').filter({ hasText: 'Password changed' }).waitFor();
  t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: otherCookie } })).status, 401, 'other sessions signed out');
  await page.reload();
  await page.getByRole('heading', { name: 'Account' }).waitFor();
  t.pass('this browser is still signed in');
  t.equal((await api(svc.url, 'POST', '/v0/owner/login', { body: { password: next } })).status, 200, 'new password works');
});

t.test('on a phone the menu button opens the navigation', async (t) => {
  await page.setViewportSize(PHONE);
  await page.goto(svc.url + '/inboxes');
  const nav = page.getByRole('navigation', { name: 'Main' });
  t.notOk(await nav.isVisible(), 'navigation folded away');
  await page.getByRole('button', { name: 'Menu' }).click();
  await nav.waitFor({ state: 'visible' });
  await screenshot(page, 'phone-menu');
  await nav.getByRole('link', { name: 'Account' }).click();
  await page.getByRole('heading', { name: 'Account' }).waitFor();
  t.notOk(await nav.isVisible(), 'navigation folds again after choosing a page');
  t.same(page.problems, [], 'no script errors');
});

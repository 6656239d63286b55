/**
 * Issue 16 finding 5: the login throttle counts an attempt when it starts, so a parallel burst
 * of wrong passwords cannot all be checked, and a flood of guesses at the password cannot lock
 * the owner out of login-link redemption (`svc open`) or of setup. Numbers: docs/web-app.md
 * ("Login throttling") — 5 password attempts per 5 minutes, failed or in progress, for all
 * clients together.
 */
import t from 'tap';
import { api, OWNER_PASSWORD, sessionCookie, startSvc, type ApiResponse } from '../helpers/svc.js';

const BURST = 200;
const PASSWORD_ATTEMPTS_PER_WINDOW = 5;

const login = (url: string, password: string) => api<{ code: string; csrf_token: string }>(url, 'POST', '/v0/owner/login', { body: { password } });
const statusCounts = (responses: ApiResponse<unknown>[]) =>
  responses.reduce<Record<number, number>>((counts, r) => ({ ...counts, [r.status]: (counts[r.status] ?? 0) + 1 }), {});

t.test('a parallel burst of wrong passwords: only the budget is checked, the owner still signs in with a link', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const setup = await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: svc.setupCode } });
  t.equal(setup.status, 200, setup.text);

  const burst = await Promise.all(Array.from({ length: BURST }, (_, i) => login(svc.url, `wrong password number ${i}`)));
  const counts = statusCounts(burst);
  t.same(counts, { 401: PASSWORD_ATTEMPTS_PER_WINDOW, 429: BURST - PASSWORD_ATTEMPTS_PER_WINDOW }, 'only the budget reached the password check');
  for (const refused of burst.filter((r) => r.status === 429)) {
    if (refused.body.code !== 'rate_limited' || !(Number(refused.headers.get('retry-after')) > 0)) {
      t.fail(`a 429 without rate_limited and Retry-After: ${refused.text}`);
      break;
    }
  }

  const right = await login(svc.url, OWNER_PASSWORD);
  t.equal(right.status, 429, 'the right password waits too while the budget is spent (documented rule)');

  // Guessing at login links is hopeless (256 random bits) and is not throttled, so it cannot block the real one.
  const bogus = await Promise.all(Array.from({ length: 50 }, (_, i) => api(svc.url, 'POST', '/v0/owner/login-links/redeem', { body: { token: `svc_link_guess${i}` } })));
  t.same(statusCounts(bogus), { 401: 50 }, 'bad link tokens are refused, and not counted against anything');
  const link = await api<{ url: string }>(svc.url, 'POST', '/v0/owner/login-links', { token: svc.ownerToken });
  t.equal(link.status, 200, link.text);
  const token = new URL(link.body.url).hash.replace('#token=', '');
  const redeemed = await api<{ csrf_token: string }>(svc.url, 'POST', '/v0/owner/login-links/redeem', { body: { token } });
  t.equal(redeemed.status, 200, `svc open works during the flood: ${redeemed.text}`);
  const cookie = sessionCookie(redeemed);
  t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie, 'x-svc-csrf': redeemed.body.csrf_token } })).status, 200, 'the redeemed session is the owner');

  // The signed-in owner can still change the password: that budget is separate from the login one.
  const changed = await api(svc.url, 'POST', '/v0/owner/password', { headers: { cookie, 'x-svc-csrf': redeemed.body.csrf_token }, body: { current_password: OWNER_PASSWORD, password: 'another long password' } });
  t.equal(changed.status, 200, changed.text);
});

t.test('setup is not locked out by a password flood; setup-code guesses have their own budget', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const flood = await Promise.all(Array.from({ length: 50 }, (_, i) => login(svc.url, `guess ${i}`)));
  t.same(statusCounts(flood), { 403: 50 }, 'before setup every login is refused as not set up');

  const guesses = await Promise.all(Array.from({ length: 50 }, () => api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: 'AAAAA-AAAAA' } })));
  t.same(statusCounts(guesses), { 403: PASSWORD_ATTEMPTS_PER_WINDOW, 429: 50 - PASSWORD_ATTEMPTS_PER_WINDOW }, 'setup-code guesses are throttled');

  const second = await startSvc();
  t.teardown(() => second.stop());
  await Promise.all(Array.from({ length: 50 }, (_, i) => login(second.url, `guess ${i}`)));
  const setup = await api(second.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: second.setupCode } });
  t.equal(setup.status, 200, `a password flood does not block setup: ${setup.text}`);
});

t.test('a successful login gives its slot back: the owner signing in often is never throttled', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: svc.setupCode } });
  const logins = await Promise.all(Array.from({ length: PASSWORD_ATTEMPTS_PER_WINDOW * 2 }, () => login(svc.url, OWNER_PASSWORD)));
  t.ok(logins.filter((r) => r.status === 200).length >= PASSWORD_ATTEMPTS_PER_WINDOW, 'parallel right passwords are at most held back by the in-progress ones');
  const later = [];
  for (let i = 0; i < PASSWORD_ATTEMPTS_PER_WINDOW * 2; i++) later.push((await login(svc.url, OWNER_PASSWORD)).status);
  t.same(later, later.map(() => 200), 'sequential successful logins never use up the budget');
});

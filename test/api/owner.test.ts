/** Owner routes (spec §4.13, §5.1): status, setup, login and its throttle, login links, sessions, password, CSRF. */
import t from 'tap';
import { api, OWNER_PASSWORD, sessionCookie, startSvc, type RunningSvc } from '../helpers/svc.js';

const UA = 'Mozilla/5.0 (X11; Linux x86_64) svc-test';

async function login(svc: RunningSvc, password = OWNER_PASSWORD, ua = UA) {
  const res = await api<{ csrf_token: string; expires_at: string }>(svc.url, 'POST', '/v0/owner/login', { body: { password }, headers: { 'user-agent': ua } });
  return { res, cookie: sessionCookie(res), csrf: res.body.csrf_token };
}

t.test('setup: code and password rules, once only', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const wrongCode = await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: 'AAAAA-AAAAA' } });
  t.equal(wrongCode.status, 403);
  t.match(wrongCode.body, { code: 'forbidden', fix: /owner.setup_required/ });
  const short = await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: 'eleven char', code: svc.setupCode } });
  t.equal(short.status, 400);
  t.match(short.body, { code: 'validation_error', message: /12 to 1024/ });
  const long = await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: 'x'.repeat(1025), code: svc.setupCode } });
  t.equal(long.status, 400);
  const missing = await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD } });
  t.equal(missing.status, 400);
  const ok = await api<{ csrf_token: string; expires_at: string }>(svc.url, 'POST', '/v0/owner/setup', { body: { password: 'x'.repeat(12), code: svc.setupCode!.toLowerCase() } });
  t.equal(ok.status, 200, 'exactly 12 characters is enough; the code is case-insensitive');
  t.match(ok.body, { csrf_token: String, expires_at: String });
  const setCookie = ok.headers.get('set-cookie') ?? '';
  t.match(setCookie, /^svc_session=svc_session_/);
  t.match(setCookie, /HttpOnly/);
  t.match(setCookie, /SameSite=Strict/);
  t.match(setCookie, /Path=\//);
  const again = await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: svc.setupCode } });
  t.equal(again.status, 409, 'setup works once');
  const status = await api(svc.url, 'GET', '/v0/owner/status', { headers: { cookie: sessionCookie(ok), 'x-svc-csrf': ok.body.csrf_token } });
  t.same(status.body, { setup_required: false, authenticated: true, locked: false });
  t.equal(status.headers.get('x-svc-csrf'), ok.body.csrf_token, 'status confirms the CSRF token of the session');
  const cookieOnly = await api(svc.url, 'GET', '/v0/owner/status', { headers: { cookie: sessionCookie(ok) } });
  t.same(cookieOnly.body, { setup_required: false, authenticated: false, locked: false }, 'the cookie alone is no session');
  t.notOk(cookieOnly.headers.get('x-svc-csrf'), 'and never learns the CSRF token');
  const anonymous = await api(svc.url, 'GET', '/v0/owner/status');
  t.same(anonymous.body, { setup_required: false, authenticated: false, locked: false });
  t.notOk(anonymous.headers.get('x-svc-csrf'));
  const bearer = await api(svc.url, 'GET', '/v0/owner/status', { token: svc.ownerToken });
  t.equal((bearer.body as { authenticated: boolean }).authenticated, true, 'the owner bearer is authenticated');
});

t.test('login, throttling, sessions, logout and password change', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: svc.setupCode } });

  t.test('login with the right password starts a session', async (t) => {
    const { res, cookie, csrf } = await login(svc);
    t.equal(res.status, 200);
    t.ok(csrf);
    const sessions = await api<{ sessions: { session_id: string; user_agent: string; current: boolean }[]; count: number }>(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie, 'x-svc-csrf': csrf } });
    t.equal(sessions.status, 200);
    const mine = sessions.body.sessions.find((s) => s.current)!;
    t.ok(mine, 'the caller\'s session is marked current');
    t.match(mine.user_agent, /^[0-9a-f]{64}$/, 'user agent stored as a hash');
    t.notMatch(sessions.text, /Mozilla/, 'the raw user agent never comes back');
  });

  t.test('CSRF: every request with a cookie needs X-Svc-CSRF', async (t) => {
    const { cookie, csrf } = await login(svc);
    const without = await api(svc.url, 'POST', '/v0/owner/logout', { headers: { cookie } });
    t.equal(without.status, 403);
    t.equal((without.body as { code: string }).code, 'forbidden');
    const wrong = await api(svc.url, 'POST', '/v0/owner/logout', { headers: { cookie, 'x-svc-csrf': 'nope' } });
    t.equal(wrong.status, 403);
    const readWithout = await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie } });
    t.equal(readWithout.status, 401, 'reads need the token too: the cookie alone may be a port-mate\'s copy');
    const ok = await api(svc.url, 'POST', '/v0/owner/logout', { headers: { cookie, 'x-svc-csrf': csrf } });
    t.equal(ok.status, 200);
    t.equal(ok.text, '', 'empty 200');
    const after = await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie, 'x-svc-csrf': csrf } });
    t.equal(after.status, 401, 'the session ended');
  });

  t.test('delete a session by id', async (t) => {
    const a = await login(svc);
    const b = await login(svc);
    const list = await api<{ sessions: { session_id: string; current: boolean }[] }>(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: b.cookie, 'x-svc-csrf': b.csrf } });
    const bId = list.body.sessions.find((s) => s.current)!.session_id;
    const del = await api(svc.url, 'DELETE', `/v0/owner/sessions/${bId}`, { headers: { cookie: a.cookie, 'x-svc-csrf': a.csrf } });
    t.equal(del.status, 200);
    t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: b.cookie, 'x-svc-csrf': b.csrf } })).status, 401);
    t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: a.cookie, 'x-svc-csrf': a.csrf } })).status, 200);
    const unknown = await api(svc.url, 'DELETE', `/v0/owner/sessions/${bId}`, { token: svc.ownerToken });
    t.equal(unknown.status, 404);
  });

  t.test('password change signs out other sessions', async (t) => {
    const keep = await login(svc);
    const other = await login(svc);
    const bad = await api(svc.url, 'POST', '/v0/owner/password', { headers: { cookie: keep.cookie, 'x-svc-csrf': keep.csrf }, body: { current_password: 'wrong password!', password: 'a brand new password' } });
    t.equal(bad.status, 403);
    const short = await api(svc.url, 'POST', '/v0/owner/password', { headers: { cookie: keep.cookie, 'x-svc-csrf': keep.csrf }, body: { current_password: OWNER_PASSWORD, password: 'short' } });
    t.equal(short.status, 400);
    const ok = await api(svc.url, 'POST', '/v0/owner/password', { headers: { cookie: keep.cookie, 'x-svc-csrf': keep.csrf }, body: { current_password: OWNER_PASSWORD, password: 'a brand new password' } });
    t.equal(ok.status, 200);
    t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: other.cookie, 'x-svc-csrf': other.csrf } })).status, 401, 'other session signed out');
    t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: keep.cookie, 'x-svc-csrf': keep.csrf } })).status, 200, 'the caller stays signed in');
    t.equal((await login(svc)).res.status, 401, 'old password no longer works');
    t.equal((await login(svc, 'a brand new password')).res.status, 200);
    await api(svc.url, 'POST', '/v0/owner/password', { token: svc.ownerToken, body: { current_password: 'a brand new password', password: OWNER_PASSWORD } });
    t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: keep.cookie, 'x-svc-csrf': keep.csrf } })).status, 401, 'a change by the bearer signs out every session');
  });

});

t.test('login links: owner bearer only, single use', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const setup = await api<{ csrf_token: string }>(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: svc.setupCode } });
  const cookie = sessionCookie(setup);
  const viaSession = await api(svc.url, 'POST', '/v0/owner/login-links', { headers: { cookie, 'x-svc-csrf': setup.body.csrf_token } });
  t.equal(viaSession.status, 403, 'a browser session cannot mint login links');
  const noAuth = await api(svc.url, 'POST', '/v0/owner/login-links');
  t.equal(noAuth.status, 401);
  const link = await api<{ url: string; expires_at: string }>(svc.url, 'POST', '/v0/owner/login-links', { token: svc.ownerToken });
  t.equal(link.status, 200);
  t.match(link.body.url, new RegExp(`^${svc.url}/login#token=svc_link_`));
  const remaining = Date.parse(link.body.expires_at) - Date.now();
  t.ok(remaining > 100_000 && remaining <= 120_000, 'valid for two minutes');
  const token = new URL(link.body.url).hash.replace('#token=', '');
  const redeemed = await api<{ csrf_token: string }>(svc.url, 'POST', '/v0/owner/login-links/redeem', { body: { token } });
  t.equal(redeemed.status, 200);
  t.ok(redeemed.body.csrf_token);
  t.equal((await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: sessionCookie(redeemed), 'x-svc-csrf': redeemed.body.csrf_token } })).status, 200);
  const reuse = await api(svc.url, 'POST', '/v0/owner/login-links/redeem', { body: { token } });
  t.equal(reuse.status, 401, 'single use');
  const bogus = await api(svc.url, 'POST', '/v0/owner/login-links/redeem', { body: { token: 'svc_link_bogus' } });
  t.equal(bogus.status, 401);
});

t.test('login is throttled after repeated failures', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  await api(svc.url, 'POST', '/v0/owner/setup', { body: { password: OWNER_PASSWORD, code: svc.setupCode } });
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await login(svc, `wrong password ${i}`)).res.status);
  t.same(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
  const throttled = await login(svc);
  t.equal(throttled.res.status, 429, 'even the right password waits while throttled');
  t.match(throttled.res.body, { code: 'rate_limited' });
  t.ok(Number(throttled.res.headers.get('retry-after')) > 0, 'Retry-After is set');
});

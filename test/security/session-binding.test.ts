/**
 * The owner's browser session, attacked as in issue 16 finding 6: browsers send cookies for
 * 127.0.0.1 to every port, so a page or server on another local port receives `svc_session` and
 * can replay it. A stolen cookie alone must not make the owner:
 * - the CSRF token is returned only by setup, login and login-link redemption (response body);
 * - every cookie-authenticated /v0 request, GET included, carries X-Svc-CSRF; a cookie-only
 *   request is unauthenticated (401 on protected routes), and `GET /v0/owner/status` answers it
 *   `authenticated: false` without an X-Svc-CSRF header;
 * - the event WebSocket takes the token as the `csrf.<token>` subprotocol, and refuses a
 *   cookie-only upgrade.
 * Replays here carry no Origin and no Sec-Fetch headers: a port-mate server replays the cookie
 * it received, it does not need a browser to do so.
 */
import t from 'tap';
import WebSocket from 'ws';
import { api, OWNER_PASSWORD, sessionCookie, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { servedRouteTable, type RouteEntry } from '../helpers/fuzz.js';
import { segmentsOf, CANONICAL } from '../helpers/spellings.js';
import { eachLimited, wireRequest, type WireAnswer } from '../helpers/wire.js';
import { CSRF_HEADER } from '../helpers/principals.js';

const CONCURRENCY = 8;
const DECOY_ID = '01900000-0000-7000-8000-000000000000';
/** Routes a request with no credential may call (spec §4.13, §4.7): nothing to bind there. */
const PUBLIC_V0 = new Set(['GET /v0/owner/status', 'POST /v0/owner/setup', 'POST /v0/owner/login', 'POST /v0/owner/login-links/redeem', 'GET /v0/downloads/:token',
  // The reconnect handshake: the cookie names the session, the answer to svc's challenge proves it (test/security/port-squatter.test.ts).
  'POST /v0/owner/session-proof', 'POST /v0/owner/session-renew',
  // AgentMail's sign-up: the SDK sends it with no credential, and it only ever answers not_supported (src/routes/hosted-only.ts).
  'POST /v0/agent/sign-up']);

interface BrowserSession {
  how: string;
  cookie: string;
  csrf: string;
}

let svc: RunningSvc;
let port: number;
let routes: RouteEntry[] = [];
/** One session from each way of starting one (spec §4.13). */
const sessions: BrowserSession[] = [];

t.before(async () => {
  routes = await servedRouteTable();
  svc = await startSvc();
  port = Number(new URL(svc.url).port);
  const setup = await setupOwner(svc);
  sessions.push({ how: 'setup', ...setup });
  const login = await api<{ csrf_token: string }>(svc.url, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD } });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${login.text}`);
  sessions.push({ how: 'login', cookie: sessionCookie(login), csrf: login.body.csrf_token });
  const link = await api<{ url: string }>(svc.url, 'POST', '/v0/owner/login-links', { token: svc.ownerToken });
  const token = decodeURIComponent(/#token=(.+)$/.exec(link.body.url)?.[1] ?? '');
  const redeemed = await api<{ csrf_token: string }>(svc.url, 'POST', '/v0/owner/login-links/redeem', { body: { token } });
  if (redeemed.status !== 200) throw new Error(`redeem: ${redeemed.status} ${redeemed.text}`);
  sessions.push({ how: 'login-link redemption', cookie: sessionCookie(redeemed), csrf: redeemed.body.csrf_token });
});
t.teardown(() => svc?.stop());

const get = (target: string, headers: Record<string, string>) => wireRequest({ port, method: 'GET', target, headers });

t.test('setup, login and login-link redemption each return the CSRF token in the body, with an HttpOnly cookie', async (t) => {
  for (const s of sessions) {
    t.match(s.csrf, /^\S{16,}$/, `${s.how} returned a csrf_token`);
    t.match(s.cookie, /^[^=;\s]+=\S+$/, `${s.how} set a session cookie`);
  }
  t.equal(new Set(sessions.map((s) => s.csrf)).size, sessions.length, 'each session has its own token');
  const login = await wireRequest({ port, method: 'POST', target: '/v0/owner/login', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ password: OWNER_PASSWORD }) });
  t.match(login.headers['set-cookie'] ?? '', /HttpOnly/i, 'the cookie is out of reach of page scripts');
  t.match(login.headers['set-cookie'] ?? '', /SameSite=Strict/i, 'and is not sent on cross-site requests');
});

t.test('a replayed cookie alone is not the owner: status says so and hands out no CSRF token', async (t) => {
  for (const s of sessions) {
    const status = await get('/v0/owner/status', { Cookie: s.cookie });
    t.equal(status.status, 200, `status answers a cookie-only request (${s.how})`);
    t.equal((status.body as { authenticated?: unknown }).authenticated, false, `authenticated: false (${s.how})`);
    t.notOk(status.headers['x-svc-csrf'], `no X-Svc-CSRF header (${s.how})`);
    t.notOk(status.text.includes(s.csrf), `the token is nowhere in the answer (${s.how})`);
  }
  // The same replay from a browser page on another loopback port (Origin and Sec-Fetch set).
  const fromPortMate = await get('/v0/owner/status', { Cookie: sessions[0].cookie, Origin: `http://127.0.0.1:${port + 1}`, 'Sec-Fetch-Site': 'same-site', 'Sec-Fetch-Mode': 'cors' });
  t.notOk(fromPortMate.headers['x-svc-csrf'], 'no X-Svc-CSRF header for a page on another port');
  t.notOk(fromPortMate.text.includes(sessions[0].csrf), 'nor the token in the body');
  t.not((fromPortMate.body as { authenticated?: unknown } | undefined)?.authenticated, true, 'nor an authenticated answer');
});

t.test('the cookie with its X-Svc-CSRF token is the owner', async (t) => {
  for (const s of sessions) {
    const status = await get('/v0/owner/status', { Cookie: s.cookie, [CSRF_HEADER]: s.csrf });
    t.equal((status.body as { authenticated?: unknown }).authenticated, true, `status: authenticated (${s.how})`);
    t.equal((await get('/v0/api-keys', { Cookie: s.cookie, [CSRF_HEADER]: s.csrf })).status, 200, `GET /v0/api-keys (${s.how})`);
  }
});

t.test('with the cookie alone, GET /v0/api-keys is 401', async (t) => {
  for (const s of sessions) {
    const answer = await get('/v0/api-keys', { Cookie: s.cookie });
    t.equal(answer.status, 401, `cookie only (${s.how})`);
    t.notOk(JSON.stringify(answer.body ?? '').includes('api_key_id'), 'and no key is listed');
  }
});

t.test('a wrong CSRF token, or another session\'s, is refused', async (t) => {
  const [mine, other] = sessions;
  for (const [what, csrf] of [['a made-up token', 'x'.repeat(mine.csrf.length)], ["another session's token", other.csrf], ['an empty token', '']] as const) {
    const keys = await get('/v0/api-keys', { Cookie: mine.cookie, [CSRF_HEADER]: csrf });
    t.ok(keys.status === 401 || keys.status === 403, `GET /v0/api-keys with ${what}: ${keys.status}`);
    const created = await wireRequest({ port, method: 'POST', target: '/v0/api-keys', headers: { Cookie: mine.cookie, [CSRF_HEADER]: csrf, 'Content-Type': 'application/json' }, body: JSON.stringify({ permissions: ['message_read'], send_policy: 'read_only' }) });
    t.ok(created.status === 401 || created.status === 403, `POST /v0/api-keys with ${what}: ${created.status}`);
    const status = await get('/v0/owner/status', { Cookie: mine.cookie, [CSRF_HEADER]: csrf });
    t.not((status.body as { authenticated?: unknown } | undefined)?.authenticated, true, `status is not authenticated with ${what}`);
    t.notOk(status.headers['x-svc-csrf'], `and hands out no token with ${what}`);
  }
});

t.test('every protected /v0 route treats a cookie-only request as unauthenticated', async (t) => {
  const protectedRoutes = routes.filter((r) => r.url.startsWith('/v0/') && r.url !== '/v0/ws' && !PUBLIC_V0.has(`${r.method} ${r.url}`));
  t.ok(protectedRoutes.length > 100, `the protected routes were read (${protectedRoutes.length})`);
  const failures: string[] = [];
  await eachLimited(protectedRoutes, CONCURRENCY, async (route) => {
    // Identifiers that name nothing: authentication comes before the lookup (ARCHITECTURE §7).
    const target = CANONICAL.target(segmentsOf(route.url, (param) => (param === 'inbox_id' ? 'nobody%40sec.test' : DECOY_ID)), '');
    const answer: WireAnswer = await wireRequest({ port, method: route.method, target, headers: { Cookie: sessions[0].cookie } });
    // Reads are 401 (spec §7.2 unauthenticated); writes may name the missing token (403).
    const refused = route.method === 'GET' ? answer.status === 401 : answer.status === 401 || answer.status === 403;
    if (!refused) failures.push(`${route.method} ${route.url}: ${answer.status}`);
  });
  t.same(failures, [], `every one refuses the cookie alone (${protectedRoutes.length} requests)`);
});

/** Opens the event WebSocket as a browser would; resolves with whether it opened, or the HTTP status that refused it. */
function openEvents(opts: { cookie: string; origin: string; protocols: string[] }): Promise<{ opened: boolean; status: number | null; protocol: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}/v0/ws`, opts.protocols, { headers: { Cookie: opts.cookie }, origin: opts.origin, handshakeTimeout: 10_000 });
    socket.on('open', () => {
      const protocol = socket.protocol;
      socket.close();
      resolve({ opened: true, status: null, protocol });
    });
    socket.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve({ opened: false, status: res.statusCode ?? null, protocol: '' });
      socket.terminate();
    });
    socket.on('error', (err) => reject(err));
  });
}

t.test('the event WebSocket refuses a cookie-only upgrade and opens with the CSRF subprotocol', async (t) => {
  const [s] = sessions;
  const cookieOnly = await openEvents({ cookie: s.cookie, origin: svc.url, protocols: ['svc.events'] });
  t.equal(cookieOnly.opened, false, 'cookie only: not opened');
  t.ok(cookieOnly.status === 401 || cookieOnly.status === 403, `cookie only: refused before the upgrade (${cookieOnly.status})`);
  const wrong = await openEvents({ cookie: s.cookie, origin: svc.url, protocols: ['svc.events', `csrf.${sessions[1].csrf}`] });
  t.equal(wrong.opened, false, "another session's token: not opened");
  const portMate = await openEvents({ cookie: s.cookie, origin: `http://127.0.0.1:${port + 1}`, protocols: ['svc.events', `csrf.${s.csrf}`] });
  t.equal(portMate.opened, false, 'from another port, even with the token: not opened');
  const withToken = await openEvents({ cookie: s.cookie, origin: svc.url, protocols: ['svc.events', `csrf.${s.csrf}`] });
  t.equal(withToken.opened, true, 'cookie, own origin and csrf.<token>: opened');
  t.equal(withToken.protocol, 'svc.events', 'the server selects svc.events, never echoing the token');
});

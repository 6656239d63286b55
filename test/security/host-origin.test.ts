/**
 * Host and Origin, attacked as in issue 16 finding 2: a DNS-rebinding page is same-origin with
 * the loopback listener under its own name, and a page on another site (or on another loopback
 * port) posts to the API with the owner's cookie.
 *
 * Rules under test (issue 16 "Host and Origin", spec §4 "Cross-origin browser requests to /v0 are
 * rejected", §5.3 CORS for the OAuth endpoints):
 * - The loopback listener serves only `Host` 127.0.0.1:PORT, localhost:PORT and [::1]:PORT; any
 *   other Host is refused with a 4xx error body before authentication, on every kind of route.
 *   The tunnel listener serves only its configured hostname.
 * - On every state-changing route a browser request with a foreign Origin, or with
 *   `Sec-Fetch-Site: cross-site | same-site`, is refused with 403 — public routes included.
 *   OAuth discovery, registration, token and revocation allow any origin; a top-level GET
 *   navigation of the web app or /oauth/authorize from another site is allowed.
 */
import t, { type Test } from 'tap';
import { api, OWNER_PASSWORD, startSvc, type RunningSvc } from '../helpers/svc.js';
import { servedRouteTable, type RouteEntry } from '../helpers/fuzz.js';
import { authorizePath, ensureWebApp, pkce, REDIRECT, register } from '../helpers/oauth.js';
import { seedPrincipals, type Principals } from '../helpers/principals.js';
import { HOSTILE_SPELLINGS, CANONICAL, segmentsOf } from '../helpers/spellings.js';
import { eachLimited, wireRequest, type WireAnswer, type WireRequest } from '../helpers/wire.js';

const CONCURRENCY = 8;
const TUNNEL_HOST = 'mail.sec.test';
const EVIL_ORIGIN = 'http://evil.example';
/** 127.0.0.1 as one decimal number: resolvers and browsers accept it, and it is not our name. */
const DECIMAL_LOOPBACK = '2130706433';
const DECOY_ID = '01900000-0000-7000-8000-000000000000';
/** §5.3: these answer any origin (CORS `*`); every other state-changing route refuses foreign ones. */
const ANY_ORIGIN_ROUTES = new Set(['POST /oauth/register', 'POST /oauth/token', 'POST /oauth/revoke']);

let svc: RunningSvc;
let port: number;
/** A loopback port that is not the service's: the page of another local program. */
let otherPort: number;
let who: Principals;
let routes: RouteEntry[] = [];
let authorize = '';

t.before(async () => {
  ensureWebApp();
  routes = await servedRouteTable();
  svc = await startSvc();
  port = Number(new URL(svc.url).port);
  otherPort = port === 65535 ? port - 1 : port + 1;
  who = await seedPrincipals(svc);
  const client = await register(svc.url);
  authorize = authorizePath({
    response_type: 'code',
    client_id: client.body.client_id,
    redirect_uri: REDIRECT,
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
    resource: `${svc.url}/mcp`,
    state: 'st',
  });
});
t.teardown(() => svc?.stop());

const MCP_INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'host-origin', version: '1' } } });

interface RouteKind {
  name: string;
  request: () => Omit<WireRequest, 'port'>;
  /** The status the request gets when its Host is one the listener serves. */
  served: number;
}

/** One request per kind of route, each with the credential that makes it succeed. */
function routeKinds(listener: 'local' | 'tunnel'): RouteKind[] {
  const key = who.headers('key_in_scope');
  const kinds: RouteKind[] = [
    { name: 'a /v0 agent route with a valid key', request: () => ({ method: 'GET', target: '/v0/inboxes', headers: key }), served: 200 },
    {
      name: '/mcp with a valid key',
      request: () => ({ method: 'POST', target: '/mcp', headers: { ...key, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: MCP_INITIALIZE }),
      served: 200,
    },
    { name: 'OAuth server metadata', request: () => ({ method: 'GET', target: '/.well-known/oauth-authorization-server' }), served: 200 },
    { name: 'OAuth resource metadata', request: () => ({ method: 'GET', target: '/.well-known/oauth-protected-resource/mcp' }), served: 200 },
    {
      name: 'OAuth registration',
      request: () => ({ method: 'POST', target: '/oauth/register', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ client_name: 'Rebound', redirect_uris: [REDIRECT] }) }),
      served: 201,
    },
  ];
  if (listener === 'tunnel') return kinds;
  return [
    ...kinds,
    { name: 'an owner route with the owner bearer', request: () => ({ method: 'GET', target: '/v0/api-keys', headers: who.headers('owner_bearer') }), served: 200 },
    { name: 'the public owner status', request: () => ({ method: 'GET', target: '/v0/owner/status' }), served: 200 },
    { name: 'OAuth authorize', request: () => ({ method: 'GET', target: authorize }), served: 302 },
    { name: "the web app's /", request: () => ({ method: 'GET', target: '/' }), served: 200 },
    { name: "the web app's /login", request: () => ({ method: 'GET', target: '/login' }), served: 200 },
  ];
}

/** Why an answer is not a refusal with an error body (svc's `{code, message}` or OAuth's `{error}`), or null. */
function notRefused(answer: WireAnswer): string | null {
  if (answer.status < 400 || answer.status >= 500) return `answered ${answer.status}`;
  const body = answer.body as Record<string, unknown> | undefined;
  const errorBody = typeof body === 'object' && body !== null && ((typeof body.code === 'string' && typeof body.message === 'string') || typeof body.error === 'string');
  if (!errorBody) return `${answer.status} without an error body: ${JSON.stringify(answer.text.slice(0, 120))}`;
  if (answer.headers['set-cookie']) return `${answer.status} that sets a cookie`;
  return null;
}

function expectAll(t: Test, failures: string[], count: number, what: string): void {
  t.same(failures, [], `${what} (${count} requests)`);
}

t.test('the loopback listener serves its own names; the web app lives at 127.0.0.1 only', async (t) => {
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
    for (const kind of routeKinds('local')) {
      const answer = await wireRequest({ port, host, ...kind.request() });
      // The app's pages at localhost or [::1] redirect to 127.0.0.1, where browser sessions are
      // made (docs/security.md, "A squatter on svc's port"; test/security/port-squatter.test.ts).
      const webApp = kind.name.startsWith("the web app's");
      const expected = webApp && !host.startsWith('127.0.0.1') ? 308 : kind.served;
      t.equal(answer.status, expected, `${kind.name} with Host ${host}`);
      if (expected === 308) t.match(answer.headers.location, new RegExp(`^http://127\\.0\\.0\\.1:${port}/`), 'to the same page at 127.0.0.1');
    }
  }
});

// First among the OAuth callers: registration has an hourly allowance (src/oauth/limits.ts).
t.test('what any origin may do: OAuth discovery, registration, token and revocation, and top-level navigation', async (t) => {
  const cors = { Origin: EVIL_ORIGIN, 'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'cors' };
  for (const target of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource/v0']) {
    const answer = await wireRequest({ port, method: 'GET', target, headers: cors });
    t.equal(answer.status, 200, `GET ${target}`);
    t.equal(answer.headers['access-control-allow-origin'], '*', `GET ${target} allows any origin`);
  }
  const registered = await wireRequest({ port, method: 'POST', target: '/oauth/register', headers: { ...cors, 'Content-Type': 'application/json' }, body: JSON.stringify({ client_name: 'Web client', redirect_uris: [REDIRECT] }) });
  t.equal(registered.status, 201, 'POST /oauth/register');
  t.equal(registered.headers['access-control-allow-origin'], '*', 'registration allows any origin');
  const token = await wireRequest({ port, method: 'POST', target: '/oauth/token', headers: { ...cors, 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token&refresh_token=nope&client_id=nope' });
  t.ok(token.status === 400 || token.status === 401, `POST /oauth/token is judged on its grant, not its origin (${token.status})`);
  t.type((token.body as { error?: unknown } | undefined)?.error, 'string', 'with an OAuth error body');
  t.equal(token.headers['access-control-allow-origin'], '*', 'token allows any origin');
  const revoked = await wireRequest({ port, method: 'POST', target: '/oauth/revoke', headers: { ...cors, 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'token=nope' });
  t.equal(revoked.status, 200, 'POST /oauth/revoke');
  t.equal(revoked.headers['access-control-allow-origin'], '*', 'revocation allows any origin');

  // A link followed from another site: a GET navigation changes nothing.
  const navigate = { 'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'navigate', 'Sec-Fetch-Dest': 'document', 'Sec-Fetch-User': '?1' };
  for (const target of ['/', '/inboxes']) {
    const page = await wireRequest({ port, method: 'GET', target, headers: navigate });
    t.equal(page.status, 200, `GET ${target} opened from another site`);
    t.match(page.headers['content-type'] ?? '', /^text\/html/, `GET ${target} is the web app`);
  }
  const consent = await wireRequest({ port, method: 'GET', target: authorize, headers: navigate });
  t.equal(consent.status, 302, '/oauth/authorize opened from another site');
  t.match(consent.headers.location ?? '', /\/login\?return_to=/, 'sends the signed-out browser to log in');
});

t.test('any other Host is refused before authentication, on every kind of route', async (t) => {
  const foreignHosts = ['evil.example', `evil.example:${port}`, `127.0.0.1:${otherPort}`, `localhost.evil.example:${port}`, `${DECIMAL_LOOPBACK}:${port}`, '127.0.0.1', 'localhost', ''];
  const failures: string[] = [];
  const cases = routeKinds('local').flatMap((kind) => foreignHosts.map((host) => ({ kind, host })));
  await eachLimited(cases, CONCURRENCY, async ({ kind, host }) => {
    const why = notRefused(await wireRequest({ port, host, ...kind.request() }));
    if (why) failures.push(`${kind.name}, Host ${JSON.stringify(host)}: ${why}`);
  });
  for (const kind of routeKinds('local')) {
    const http10 = await wireRequest({ port, host: null, version: '1.0', ...kind.request() });
    const why = notRefused(http10);
    if (why) failures.push(`${kind.name}, HTTP/1.0 without Host: ${why}`);
    // An absolute-form target names the host itself, and it wins over the Host header (RFC 9112 §3.2.2).
    const request = kind.request();
    const absolute = await wireRequest({ port, ...request, target: `http://evil.example:${port}${request.target}` });
    const whyAbsolute = notRefused(absolute);
    if (whyAbsolute) failures.push(`${kind.name}, absolute-form target naming evil.example:${port}: ${whyAbsolute}`);
  }
  expectAll(t, failures, cases.length + 2 * routeKinds('local').length, 'every foreign Host is refused');

  // Before authentication: with no credential the answer is the Host refusal, not a 401 challenge.
  const anonymous = await wireRequest({ port, host: `evil.example:${port}`, method: 'GET', target: '/v0/inboxes' });
  t.not(anonymous.status, 401, 'a foreign Host is refused before the credential is looked at');
  t.equal(notRefused(anonymous), null, 'and refused with an error body');
  const login = await wireRequest({ port, host: `evil.example:${port}`, method: 'POST', target: '/v0/owner/login', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ password: OWNER_PASSWORD }) });
  t.equal(notRefused(login), null, 'a rebound page cannot log in even with the right password');
});

t.test('the tunnel listener serves only its configured hostname', async (t) => {
  const enabled = await api<{ listener: { port: number | null } }>(svc.url, 'POST', '/v0/owner/remote/enable', { token: svc.ownerToken, body: { hostname: TUNNEL_HOST, command: 'sleep 600' } });
  t.equal(enabled.status, 200, 'remote access enabled by the owner');
  const tunnelPort = enabled.body.listener.port!;
  for (const kind of routeKinds('tunnel')) {
    const answer = await wireRequest({ port: tunnelPort, host: TUNNEL_HOST, ...kind.request() });
    t.equal(answer.status, kind.served, `${kind.name} with Host ${TUNNEL_HOST}`);
  }
  const foreignHosts = ['evil.example', `127.0.0.1:${tunnelPort}`, `localhost:${tunnelPort}`, `127.0.0.1:${port}`, `evil.${TUNNEL_HOST}`, `${TUNNEL_HOST}.evil.example`];
  const failures: string[] = [];
  for (const kind of routeKinds('tunnel')) {
    for (const host of foreignHosts) {
      const why = notRefused(await wireRequest({ port: tunnelPort, host, ...kind.request() }));
      if (why) failures.push(`${kind.name}, Host ${JSON.stringify(host)}: ${why}`);
    }
    const why = notRefused(await wireRequest({ port: tunnelPort, host: null, version: '1.0', ...kind.request() }));
    if (why) failures.push(`${kind.name}, HTTP/1.0 without Host: ${why}`);
  }
  expectAll(t, failures, routeKinds('tunnel').length * (foreignHosts.length + 1), 'every other Host is refused on the tunnel');
  const disabled = await api(svc.url, 'POST', '/v0/owner/remote/disable', { token: svc.ownerToken, body: {} });
  t.equal(disabled.status, 200, 'remote access disabled again');
});

/** What a browser adds to a request from another page, by where that page is. */
const FOREIGN_BROWSERS: readonly { name: string; headers: (port: number, otherPort: number) => Record<string, string> }[] = [
  { name: 'another site', headers: () => ({ Origin: EVIL_ORIGIN, 'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'cors' }) },
  { name: 'another site, Origin only', headers: () => ({ Origin: EVIL_ORIGIN }) },
  { name: 'another loopback port', headers: (_p, other) => ({ Origin: `http://127.0.0.1:${other}`, 'Sec-Fetch-Site': 'same-site', 'Sec-Fetch-Mode': 'cors' }) },
  { name: 'a rebound name on our port', headers: (p) => ({ Origin: `http://localhost.evil.example:${p}` }) },
  { name: 'an opaque origin (sandbox, file:)', headers: () => ({ Origin: 'null' }) },
  { name: 'Sec-Fetch-Site cross-site without Origin', headers: () => ({ 'Sec-Fetch-Site': 'cross-site' }) },
  { name: 'Sec-Fetch-Site same-site without Origin', headers: () => ({ 'Sec-Fetch-Site': 'same-site' }) },
];

t.test('a cross-site bodiless POST with the session cookie creates nothing, under any spelling', async (t) => {
  const keyIds = async () => {
    const res = await api<{ api_keys: { api_key_id: string }[] }>(svc.url, 'GET', '/v0/api-keys?limit=100', { token: svc.ownerToken });
    return res.body.api_keys.map((k) => k.api_key_id).sort();
  };
  const before = await keyIds();
  const failures: string[] = [];
  // What the attacker's page makes the browser send: the cookie, never the CSRF header. A
  // no-cors fetch has no body and no Content-Type; an empty form post has a form Content-Type.
  const browsers = [
    (origin: string, site: string) => ({ Cookie: who.session.cookie, Origin: origin, 'Sec-Fetch-Site': site, 'Sec-Fetch-Mode': 'no-cors', 'Sec-Fetch-Dest': 'empty' }),
    (origin: string, site: string) => ({ Cookie: who.session.cookie, Origin: origin, 'Sec-Fetch-Site': site, 'Sec-Fetch-Mode': 'navigate', 'Sec-Fetch-Dest': 'document', 'Content-Type': 'application/x-www-form-urlencoded' }),
  ];
  // API keys (the brief's case), and login links: a bodiless POST there is a complete request,
  // and its answer is an owner login (issue 16 finding 2, the drive-by that went through).
  const targets = ['/v0/api-keys', '/%76%30/api-keys', `http://127.0.0.1:${port}/v0/api-keys`, '/v0/owner/login-links', '/%76%30/owner/login-links', `http://127.0.0.1:${port}/v0/owner/login-links`];
  for (const target of targets) {
    for (const [origin, site] of [[EVIL_ORIGIN, 'cross-site'], [`http://127.0.0.1:${otherPort}`, 'same-site']]) {
      for (const browser of browsers) {
        const answer = await wireRequest({ port, method: 'POST', target, headers: browser(origin, site) });
        const canonical = target.startsWith('/v0/');
        const why = canonical && answer.status !== 403 ? `answered ${answer.status}, not 403` : notRefused(answer);
        if (why) failures.push(`POST ${target} from ${origin}: ${why}`);
        if (/"url"\s*:/.test(answer.text)) failures.push(`POST ${target} from ${origin} handed out a login link`);
      }
    }
  }
  t.same(failures, [], `every drive-by POST is refused (${targets.length * 2 * browsers.length} requests)`);
  t.same(await keyIds(), before, 'no API key was created');
});

t.test('every state-changing route refuses a foreign Origin or Sec-Fetch-Site with 403', async (t) => {
  const unsafe = routes.filter((r) => r.method !== 'GET' && !ANY_ORIGIN_ROUTES.has(`${r.method} ${r.url}`));
  t.ok(unsafe.length > 60, `the state-changing routes were read (${unsafe.length})`);
  const cases = unsafe.flatMap((route) => FOREIGN_BROWSERS.map((browser) => ({ route, browser })));
  const failures: string[] = [];
  await eachLimited(cases, CONCURRENCY, async ({ route, browser }) => {
    // Identifiers that name nothing: a route that forgot the check answers 404 and changes nothing.
    const target = CANONICAL.target(segmentsOf(route.url, (param) => (param === 'inbox_id' ? 'nobody%40sec.test' : DECOY_ID)), '');
    const answer = await wireRequest({ port, method: route.method, target, headers: { ...credentialFor(route), ...browser.headers(port, otherPort) } });
    if (answer.status !== 403 || notRefused(answer)) failures.push(`${route.method} ${route.url} from ${browser.name}: ${answer.status} ${answer.text.slice(0, 100)}`);
  });
  expectAll(t, failures, cases.length, 'all refused with 403');
});

/** The credential a browser (or, for /mcp and login links, the client) would bring to the route. */
function credentialFor(route: RouteEntry): Record<string, string> {
  if (route.url === '/mcp') return who.headers('key_in_scope');
  if (route.url === '/v0/owner/login-links') return who.headers('owner_bearer');
  return who.headers('session');
}

t.test('the public login, setup and key routes refuse a foreign Origin under every spelling, and do nothing', async (t) => {
  const sessionsBefore = await api<{ sessions: unknown[] }>(svc.url, 'GET', '/v0/owner/sessions', { token: svc.ownerToken });
  const inboxesBefore = await api<{ count: number }>(svc.url, 'GET', '/v0/inboxes?limit=100', { token: svc.ownerToken });
  const keysBefore = await api<{ count: number }>(svc.url, 'GET', '/v0/api-keys?limit=100', { token: svc.ownerToken });
  // Bodies that would succeed: a refusal by the handler's validation would prove nothing.
  const attempts = [
    { url: '/v0/owner/login', body: { password: OWNER_PASSWORD }, headers: {} },
    { url: '/v0/owner/setup', body: { password: OWNER_PASSWORD, code: svc.setupCode ?? '' }, headers: {} },
    { url: '/v0/api-keys', body: { permissions: ['message_read'], send_policy: 'read_only' }, headers: who.headers('session') },
    { url: '/v0/inboxes', body: { username: 'planted', domain: 'sec.test' }, headers: who.headers('session') },
  ];
  const failures: string[] = [];
  for (const attempt of attempts) {
    for (const spelling of [CANONICAL, ...HOSTILE_SPELLINGS]) {
      const target = spelling.target(segmentsOf(attempt.url, () => ''), `127.0.0.1:${port}`);
      const answer = await wireRequest({ port, method: 'POST', target, headers: { ...attempt.headers, Origin: EVIL_ORIGIN, 'Content-Type': 'application/json' }, body: JSON.stringify(attempt.body) });
      const why = spelling === CANONICAL && answer.status !== 403 ? `answered ${answer.status}, not 403` : notRefused(answer);
      if (why) failures.push(`POST ${target} (${spelling.name}): ${why}`);
    }
  }
  t.same(failures, [], `every attempt is refused (${attempts.length * (HOSTILE_SPELLINGS.length + 1)} requests)`);
  const sessionsAfter = await api<{ sessions: unknown[] }>(svc.url, 'GET', '/v0/owner/sessions', { token: svc.ownerToken });
  t.equal(sessionsAfter.body.sessions.length, sessionsBefore.body.sessions.length, 'no session was started');
  t.equal((await api<{ count: number }>(svc.url, 'GET', '/v0/inboxes?limit=100', { token: svc.ownerToken })).body.count, inboxesBefore.body.count, 'no inbox was created');
  t.equal((await api<{ count: number }>(svc.url, 'GET', '/v0/api-keys?limit=100', { token: svc.ownerToken })).body.count, keysBefore.body.count, 'no key was created');
});

t.test('reads of /v0 from another site are refused too', async (t) => {
  for (const browser of FOREIGN_BROWSERS) {
    const answer = await wireRequest({ port, method: 'GET', target: '/v0/owner/status', headers: { ...who.headers('session'), ...browser.headers(port, otherPort) } });
    t.equal(answer.status, 403, `GET /v0/owner/status from ${browser.name}`);
    t.notOk(answer.headers['x-svc-csrf'], 'and no CSRF token in the answer');
  }
});

/**
 * The route gate, attacked the way issue 16 finding 1 was found: every route of the served route
 * table (test/helpers/fuzz.ts `servedRouteTable`), with each credential kind, under its canonical
 * path and hostile spellings of it (test/helpers/spellings.ts), sent byte for byte on raw
 * sockets, on the loopback listener and on the tunnel listener.
 *
 * The expected access of each route comes from the spec (interface.md §4, §4.13, §4.14, §5), not
 * from the code: public routes, `/mcp` (a bearer), owner-only routes and agent routes (any valid
 * credential, then scope → 404, permission → 403). A route the classification does not know fails
 * the test, so every new route gets classified here.
 *
 * The rule: a request without the credential its route needs is refused with a 4xx error body —
 * whether the gate refuses the odd spelling or normalises it and then authenticates. The one 2xx
 * a hostile GET may get on loopback is the web app's shell (the owner app is public and draws its
 * own "not found"); on the tunnel owner routes do not exist under any spelling.
 */
import t, { type Test } from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { errorContractViolation, servedRouteTable, type RouteEntry } from '../helpers/fuzz.js';
import { CREDENTIAL_KINDS, seedPrincipals, type CredentialKind, type Principals } from '../helpers/principals.js';
import { CANONICAL, HOSTILE_SPELLINGS, segmentsOf, type Spelling } from '../helpers/spellings.js';
import { eachLimited, wireRequest, type WireAnswer } from '../helpers/wire.js';

/** Requests in flight at once: enough to finish in seconds, few enough not to trip rate limits by load alone. */
const CONCURRENCY = 16;
/** Hostile spellings tried per route for each credential other than none (none gets every one). */
const SPELLINGS_PER_CREDENTIAL = 2;
/** Example violations printed for a failing sweep; the counts are always given. */
const SHOWN_VIOLATIONS = 60;
const TUNNEL_HOST = 'mail.sec.test';
/** Identifiers that name nothing, for parameters whose real value would let a probe end the test's own session. */
const DECOY_ID = '01900000-0000-7000-8000-000000000000';

// ---------------------------------------------------------------------------------------------
// Expected access, from the spec.

type SpecAccess = 'public' | 'mcp' | 'agent' | 'owner' | 'owner_bearer';

/** §4.13 public owner routes, §4.7 downloads (the token is the capability), §5.3 OAuth, §4.14 the web app. */
const PUBLIC_ROUTES = new Set([
  'GET /v0/owner/status',
  'POST /v0/owner/setup',
  'POST /v0/owner/login',
  'POST /v0/owner/login-links/redeem',
  // The reconnect handshake (docs/security.md): the cookie names the session, the proof and the
  // renewal answer are the credential; test/security/port-squatter.test.ts attacks them.
  'POST /v0/owner/session-proof',
  'POST /v0/owner/session-renew',
  'GET /v0/downloads/:token',
  'GET /.well-known/oauth-protected-resource',
  'GET /.well-known/oauth-protected-resource/mcp',
  'GET /.well-known/oauth-protected-resource/v0',
  'GET /.well-known/oauth-authorization-server',
  'POST /oauth/register',
  'GET /oauth/authorize',
  'POST /oauth/token',
  'POST /oauth/revoke',
  'GET /*',
  // Issue 35: AgentMail's sign-up, which the SDK sends without a credential; it only ever answers not_supported.
  'POST /v0/agent/sign-up',
]);
/** §4.13: "Owner bearer only". */
const OWNER_BEARER_ROUTES = new Set(['POST /v0/owner/login-links']);
/** §4.14 + mcp docs: a bearer credential, never a cookie. */
const MCP_ROUTES = new Set(['GET /mcp', 'POST /mcp', 'DELETE /mcp']);
/** §4.11, §4.12, §4.13 and the rows marked "Owner" in §4.5, §4.6. */
const OWNER_PATHS = [
  /^\/v0\/owner\//,
  /^\/v0\/api-keys(\/|$)/,
  /^\/v0\/inboxes\/:inbox_id\/api-keys(\/|$)/,
  /^\/v0\/domains(\/|$)/,
  /^\/v0\/inboxes\/:inbox_id\/drafts\/:draft_id\/(approve|reject)$/,
  /^\/v0\/inboxes\/:inbox_id\/messages\/:message_id\/resolve$/,
  // Issue 35: the organization's counts are of the whole home.
  /^\/v0\/organizations$/,
];
/** The agent surface, row by row: §4.3 inboxes, §4.4 threads, §4.5 messages, §4.6 drafts, §4.8 lists, §4.9 webhooks, §4.10 ws. */
const AGENT_ROUTES: readonly [RegExp, RegExp][] = [
  [/^(GET|POST)$/, /^\/v0\/inboxes$/],
  [/^GET$/, /^\/v0\/inboxes\/search$/],
  [/^(GET|PATCH|DELETE)$/, /^\/v0\/inboxes\/:inbox_id$/],
  [/^GET$/, /^\/v0(\/inboxes\/:inbox_id)?\/threads(\/search)?$/],
  [/^(GET|PATCH|DELETE)$/, /^\/v0(\/inboxes\/:inbox_id)?\/threads\/:thread_id$/],
  [/^GET$/, /^\/v0(\/inboxes\/:inbox_id)?\/threads\/:thread_id\/attachments\/:attachment_id$/],
  [/^GET$/, /^\/v0\/inboxes\/:inbox_id\/messages(\/search)?$/],
  // Issue 20 §1: waiting for the next message, inbox-scoped and over the caller's scope.
  [/^GET$/, /^\/v0(\/inboxes\/:inbox_id)?\/messages\/wait$/],
  [/^(GET|PATCH|DELETE)$/, /^\/v0\/inboxes\/:inbox_id\/messages\/:message_id$/],
  [/^POST$/, /^\/v0\/inboxes\/:inbox_id\/messages\/(batch-get|batch-update|send)$/],
  [/^GET$/, /^\/v0\/inboxes\/:inbox_id\/messages\/:message_id\/(raw|attachments\/:attachment_id)$/],
  [/^POST$/, /^\/v0\/inboxes\/:inbox_id\/messages\/:message_id\/(reply|reply-all|forward)$/],
  [/^GET$/, /^\/v0\/drafts(\/:draft_id(\/attachments\/:attachment_id)?)?$/],
  [/^(GET|POST)$/, /^\/v0\/inboxes\/:inbox_id\/drafts$/],
  [/^(GET|PATCH|DELETE)$/, /^\/v0\/inboxes\/:inbox_id\/drafts\/:draft_id$/],
  [/^GET$/, /^\/v0\/inboxes\/:inbox_id\/drafts\/:draft_id\/attachments\/:attachment_id$/],
  [/^POST$/, /^\/v0\/inboxes\/:inbox_id\/drafts\/:draft_id\/send$/],
  [/^(GET|POST)$/, /^\/v0(\/inboxes\/:inbox_id)?\/lists\/(receive|send|reply)\/(allow|block)$/],
  [/^(GET|DELETE)$/, /^\/v0(\/inboxes\/:inbox_id)?\/lists\/(receive|send|reply)\/(allow|block)\/:entry$/],
  [/^(GET|POST)$/, /^\/v0(\/inboxes\/:inbox_id)?\/webhooks$/],
  [/^(GET|PATCH|DELETE)$/, /^\/v0(\/inboxes\/:inbox_id)?\/webhooks\/:webhook_id$/],
  [/^(GET|PATCH)$/, /^\/v0(\/inboxes\/:inbox_id)?\/webhooks\/:webhook_id\/headers$/],
  [/^GET$/, /^\/v0\/ws$/],
  // Issue 35: the AgentMail SDK's socket, and an inbox's label change log.
  [/^GET$/, /^\/v0$/],
  [/^GET$/, /^\/v0\/inboxes\/:inbox_id\/events$/],
  // Issue 20 §5: usage metrics (AgentMail's metrics API) and live counts, inbox-scoped and over the caller's scope.
  [/^GET$/, /^\/v0(\/inboxes\/:inbox_id)?\/metrics\/(events|usage|counts)$/],
  // Issue 35: who is calling, and AgentMail's hosted-only methods (they answer not_supported).
  [/^GET$/, /^\/v0\/auth\/me$/],
  [/^POST$/, /^\/v0\/agent\/verify$/],
  [/^GET$/, /^\/v0\/(providers(\/search|\/:provider_id(\/accounts)?)?|accounts(\/:account_id)?)$/],
  [/^POST$/, /^\/v0\/(providers\/:provider_id\/connect|inboxes\/:inbox_id\/authorize)$/],
];

/** Issue 35 §2 (docs/pods.md): pods themselves — reading is any credential's (its own pods), creating and deleting the owner's. */
const POD_ROUTES: Record<string, SpecAccess> = { 'GET /v0/pods': 'agent', 'GET /v0/pods/:pod_id': 'agent', 'POST /v0/pods': 'owner', 'DELETE /v0/pods/:pod_id': 'owner' };
/** Every other pod route is the home's route of the same name, narrowed to the pod: the same access. */
const homeRouteOf = (route: RouteEntry): RouteEntry => ({ ...route, url: route.url.replace(/^\/v0\/pods\/:pod_id(?=\/)/, '/v0') });

function specAccess(podOrHomeRoute: RouteEntry): SpecAccess | undefined {
  const podRoute = POD_ROUTES[`${podOrHomeRoute.method} ${podOrHomeRoute.url}`];
  if (podRoute) return podRoute;
  const route = homeRouteOf(podOrHomeRoute);
  const key = `${route.method} ${route.url}`;
  if (PUBLIC_ROUTES.has(key)) return 'public';
  if (OWNER_BEARER_ROUTES.has(key)) return 'owner_bearer';
  if (MCP_ROUTES.has(key)) return 'mcp';
  if (OWNER_PATHS.some((p) => p.test(route.url))) return 'owner';
  if (AGENT_ROUTES.some(([methods, p]) => methods.test(route.method) && p.test(route.url))) return 'agent';
  return undefined;
}

/** Parameters whose resource belongs to the attacked inbox: out of scope for the other inbox's key (§5.2). */
const INBOX_BOUND = /:(inbox_id|thread_id|message_id|draft_id)\b/;

/** Whether `kind` lacks what `route` needs, so the route must refuse it (never answer 2xx). */
function mustRefuse(podOrHomeRoute: RouteEntry, access: SpecAccess, kind: CredentialKind): boolean {
  const route = homeRouteOf(podOrHomeRoute);
  if (access === 'public') return false;
  // Missing, invalid, or a cookie without its CSRF token (finding 6): unauthenticated everywhere.
  if (kind === 'none' || kind === 'bad_bearer' || kind === 'cookie_only') return true;
  switch (access) {
    case 'mcp':
      return kind === 'session'; // cookies are never read on /mcp
    case 'owner_bearer':
      return kind !== 'owner_bearer';
    case 'owner':
      return kind !== 'owner_bearer' && kind !== 'session';
    case 'agent':
      if (kind === 'owner_bearer' || kind === 'session') return false;
      // §4.8 / §2.9: global lists need a key without an inbox restriction.
      if (/^\/v0\/lists\//.test(route.url)) return true;
      // §4.9: agents see only webhooks their own key created; this one the owner created.
      if (/:webhook_id/.test(route.url)) return true;
      return kind === 'key_other_inbox' && INBOX_BOUND.test(route.url);
  }
}

// ---------------------------------------------------------------------------------------------
// The service under attack.

let svc: RunningSvc;
let port: number;
let who: Principals;
let routes: RouteEntry[] = [];
/** What GET / serves: the web app's shell, the one 2xx a hostile GET may get on loopback. */
let shell = '';
/** A real identifier per path parameter, so a request that got through would find its resource. */
const real: Record<string, string> = {};

t.before(async () => {
  routes = await servedRouteTable();
  svc = await startSvc();
  port = Number(new URL(svc.url).port);
  who = await seedPrincipals(svc);
  const owner = { token: svc.ownerToken };
  const inboxPath = `/v0/inboxes/${encodeURIComponent(who.inbox)}`;
  const db = openHomeDb(svc.home);
  try {
    const mail = await seedMail(db, simpleMail({ to: who.inbox, subject: 'Target', messageId: '<target@sec.test>' }), { inboxId: who.inbox });
    real.thread_id = mail.threadId;
    real.message_id = encodeURIComponent(mail.messageId);
  } finally {
    db.close();
  }
  const draft = await api<{ draft_id: string }>(svc.url, 'POST', `${inboxPath}/drafts`, { ...owner, body: { to: ['someone@example.org'], subject: 's', text: 't' } });
  const hook = await api<{ webhook_id: string }>(svc.url, 'POST', `${inboxPath}/webhooks`, { ...owner, body: { url: 'https://hooks.example/x', event_types: ['message.received'] } });
  const domain = await api<{ domain_id: string }>(svc.url, 'POST', '/v0/domains', { ...owner, body: { domain: 'sec.test' } });
  // A key of its own, so a bypassed DELETE cannot take away the keys the other probes use.
  const spare = await api<{ api_key_id: string }>(svc.url, 'POST', '/v0/api-keys', { ...owner, body: { permissions: ['message_read'], send_policy: 'read_only' } });
  for (const [what, res] of [['draft', draft], ['webhook', hook], ['domain', domain], ['key', spare]] as const) {
    if (res.status !== 200 && res.status !== 201) throw new Error(`seed ${what}: ${res.status} ${res.text}`);
  }
  Object.assign(real, {
    inbox_id: encodeURIComponent(who.inbox),
    draft_id: draft.body.draft_id,
    webhook_id: hook.body.webhook_id,
    domain_id: domain.body.domain_id,
    api_key_id: spare.body.api_key_id,
    // The home's inboxes are in the pod every home starts with.
    pod_id: 'default',
    entry: encodeURIComponent('someone@example.org'),
  });
  shell = (await wireRequest({ port, method: 'GET', target: '/' })).text;
});
t.teardown(() => svc?.stop());

/** The path's segments with real identifiers (decoys for sessions, grants and the like). */
const segmentsFor = (route: RouteEntry) => segmentsOf(route.url, (param) => real[param] ?? DECOY_ID);

interface Probe {
  route: RouteEntry;
  access: SpecAccess;
  kind: CredentialKind;
  spelling: Spelling;
}

interface Violation {
  probe: Probe;
  line: string;
  why: string;
}

function violation(p: Probe, target: string, answer: WireAnswer | Error, why: string): Violation {
  const status = answer instanceof Error ? answer.message : String(answer.status);
  return { probe: p, why, line: `${p.route.method} ${p.route.url} [${p.access}] as ${p.kind}, ${p.spelling.name} (${JSON.stringify(target)}): ${status} — ${why}` };
}

/** Why a refused request's answer is not an acceptable refusal, or null when it is. */
function badRefusal(answer: WireAnswer, method: string, allowShell: boolean): string | null {
  if (answer.status >= 400 && answer.status < 500) {
    const violation = errorContractViolation(answer.status, answer.body);
    return violation ? `refused without the documented error body (${violation})` : null;
  }
  if (allowShell && method === 'GET' && answer.status === 200 && answer.text === shell) return null;
  return answer.status < 300 ? 'answered without the credential the route needs' : 'not refused with a 4xx';
}

async function sweep(probes: Probe[], authority: string, listenerPort: number, hostHeader: string | undefined, judge: (p: Probe, a: WireAnswer) => string | null): Promise<Violation[]> {
  const violations: Violation[] = [];
  await eachLimited(probes, CONCURRENCY, async (p) => {
    // A wait answers when mail comes or at its timeout (30 s by default): the gate is probed without the wait.
    const target = p.spelling.target(segmentsFor(p.route), authority) + (p.route.url.endsWith('/messages/wait') ? '?timeout=0' : '');
    let answer: WireAnswer;
    try {
      answer = await wireRequest({ port: listenerPort, method: p.route.method, target, host: hostHeader, headers: who.headers(p.kind) });
    } catch (err) {
      violations.push(violation(p, target, err as Error, 'no answer'));
      return;
    }
    const why = judge(p, answer);
    if (why) violations.push(violation(p, target, answer, why));
  });
  return violations;
}

/** One assertion per sweep; on failure, counts per spelling and credential and one example of each. */
function reportViolations(t: Test, violations: Violation[], probes: number, what: string): void {
  t.equal(violations.length, 0, `${what}: ${violations.length} of ${probes} requests broke the rule`);
  if (violations.length === 0) return;
  const tally = (key: (v: Violation) => string) => {
    const counts = new Map<string, number>();
    for (const v of violations) counts.set(key(v), (counts.get(key(v)) ?? 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${n}`).join('; ');
  };
  const examples = new Map<string, string>();
  for (const v of violations) {
    const key = `${v.probe.spelling.name}|${v.probe.kind}|${v.probe.access}|${v.why}`;
    if (!examples.has(key)) examples.set(key, v.line);
  }
  t.comment(`by spelling: ${tally((v) => v.probe.spelling.name)}`);
  t.comment(`by credential: ${tally((v) => v.probe.kind)}`);
  t.comment(`by access: ${tally((v) => v.probe.access)}`);
  t.comment(`one example per spelling, credential, access and reason:\n${[...examples.values()].slice(0, SHOWN_VIOLATIONS).join('\n')}`);
}

/** A few hostile spellings, rotated by route and `offset` so that each route meets different ones. */
function rotatedSpellings(routeIndex: number, offset: number): Spelling[] {
  const n = HOSTILE_SPELLINGS.length;
  return [CANONICAL, ...Array.from({ length: SPELLINGS_PER_CREDENTIAL }, (_, j) => HOSTILE_SPELLINGS[(routeIndex * 3 + offset + j * 5) % n])];
}

/**
 * The pod routes are the home's routes served again under `/v0/pods/{pod_id}` (docs/pods.md): the
 * same handlers behind the same gate, so they get the canonical path and one rotated spelling per
 * credential here; test/security/pods.test.ts attacks them with another pod's ids.
 */
const isPodCopy = (route: RouteEntry) => route.url.startsWith('/v0/pods/:pod_id/');

/** Every hostile spelling with no credential (the finding's own attack); a rotated few with the others. */
function spellingsFor(routeIndex: number, kind: CredentialKind, route: RouteEntry): Spelling[] {
  if (isPodCopy(route)) return [CANONICAL, HOSTILE_SPELLINGS[(routeIndex + CREDENTIAL_KINDS.indexOf(kind)) % HOSTILE_SPELLINGS.length]];
  return kind === 'none' ? [CANONICAL, ...HOSTILE_SPELLINGS] : rotatedSpellings(routeIndex, CREDENTIAL_KINDS.indexOf(kind));
}

// ---------------------------------------------------------------------------------------------

t.test('every route in the route table has an access level from the spec', async (t) => {
  t.ok(routes.length > 100, `the route table was read (${routes.length} routes)`);
  const unknown = routes.filter((r) => specAccess(r) === undefined).map((r) => `${r.method} ${r.url}`);
  t.same(unknown, [], 'routes the spec classification does not know: classify them in this file');
  t.ok(routes.some((r) => r.url === '/v0/owner/remote/enable'), 'remote-access routes are in the table');
  t.ok(routes.some((r) => r.url === '/*'), 'the web app is in the table (run npm run build)');
});

t.test('the credentials are real: each works where the spec lets it', async (t) => {
  const get = (target: string, kind: CredentialKind) => wireRequest({ port, method: 'GET', target, headers: who.headers(kind) });
  t.equal((await get('/v0/api-keys', 'owner_bearer')).status, 200, 'owner bearer on an owner route');
  t.equal((await get('/v0/api-keys', 'session')).status, 200, 'session with CSRF on an owner route');
  t.equal((await get(`/v0/inboxes/${real.inbox_id}`, 'key_in_scope')).status, 200, 'the in-scope key reads its inbox');
  t.equal((await get('/v0/inboxes', 'key_other_inbox')).status, 200, 'the other key authenticates');
  t.equal((await get(`/v0/inboxes/${real.inbox_id}`, 'key_other_inbox')).status, 404, 'the other key is out of scope');
  t.match(shell, /<html|<!doctype/i, 'GET / serves the web app shell');
  const initialize = await wireRequest({
    port,
    method: 'POST',
    target: '/mcp',
    headers: { ...who.headers('key_in_scope'), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'route-gate', version: '1' } } }),
  });
  t.equal(initialize.status, 200, 'an API key opens /mcp');
  // Every GET each credential may call authenticates under its canonical path: the owner's
  // credentials are neither refused (401) nor forbidden (403); a key is not refused (a 403 there
  // is a permission or scope rule of the route, not the gate's business).
  const allowedGets: Probe[] = [];
  for (const route of routes) {
    const access = specAccess(route);
    if (route.method !== 'GET' || !access || access === 'public' || access === 'mcp' || route.url === '/v0/ws' || route.url === '/v0') continue;
    for (const kind of ['owner_bearer', 'session', 'key_in_scope'] as const) {
      if (!mustRefuse(route, access, kind)) allowedGets.push({ route, access, kind, spelling: CANONICAL });
    }
  }
  const violations = await sweep(allowedGets, `127.0.0.1:${port}`, port, undefined, (p, a) => {
    const refused = a.status === 401 || a.status >= 500 || (a.status === 403 && p.kind !== 'key_in_scope');
    return refused ? 'the credential did not work' : null;
  });
  reportViolations(t, violations, allowedGets.length, 'GET routes with a credential they accept');
});

t.test('POST /v0/owner/remote/enable never runs a command for a caller who is not the owner', async (t) => {
  const marker = path.join(tempDir('svc-sec-'), 'pwned');
  const body = JSON.stringify({ hostname: 'pwned.sec.test', command: `touch ${marker}` });
  const route = { method: 'POST', url: '/v0/owner/remote/enable' };
  const violations: Violation[] = [];
  for (const kind of ['none', 'bad_bearer', 'cookie_only', 'key_in_scope'] as const) {
    for (const spelling of [CANONICAL, ...HOSTILE_SPELLINGS]) {
      const target = spelling.target(segmentsFor(route), `127.0.0.1:${port}`);
      const answer = await wireRequest({ port, method: 'POST', target, headers: { ...who.headers(kind), 'Content-Type': 'application/json' }, body });
      const why = badRefusal(answer, 'POST', false);
      if (why) violations.push(violation({ route, access: 'owner', kind, spelling }, target, answer, why));
    }
  }
  reportViolations(t, violations, 4 * (HOSTILE_SPELLINGS.length + 1), 'remote enable without the owner');
  const remote = await api<{ enabled: boolean; command: string | null; hostname: string | null }>(svc.url, 'GET', '/v0/owner/remote', { token: svc.ownerToken });
  t.match(remote.body, { enabled: false, command: null, hostname: null }, 'remote access is still off, with no command stored');
  t.notOk(fs.existsSync(marker), 'the command never ran');
});

t.test('loopback: no protected route answers without its credential, under any spelling', async (t) => {
  const probes: Probe[] = [];
  routes.forEach((route, index) => {
    const access = specAccess(route);
    if (!access || access === 'public') return;
    for (const kind of CREDENTIAL_KINDS) {
      if (!mustRefuse(route, access, kind)) continue;
      for (const spelling of spellingsFor(index, kind, route)) probes.push({ route, access, kind, spelling });
    }
  });
  t.ok(probes.length < 6_500, `a bounded sweep (${probes.length} requests)`);
  const violations = await sweep(probes, `127.0.0.1:${port}`, port, undefined, (p, a) => badRefusal(a, p.route.method, p.spelling !== CANONICAL));
  reportViolations(t, violations, probes.length, 'protected routes without their credential');
  // The canonical answers name the refusal the spec gives: 401 without a credential (§7.2).
  const canonical = routes.filter((r) => specAccess(r) === 'owner' || specAccess(r) === 'agent');
  const wrongStatus: string[] = [];
  await eachLimited(canonical, CONCURRENCY, async (route) => {
    const answer = await wireRequest({ port, method: route.method, target: CANONICAL.target(segmentsFor(route), ''), headers: {} });
    if (answer.status !== 401) wrongStatus.push(`${route.method} ${route.url}: ${answer.status}`);
  });
  t.same(wrongStatus, [], 'every owner and agent route answers 401 to a request with no credential');
});

t.test('tunnel: owner routes do not exist under any spelling or credential, and the web app is not served', async (t) => {
  const enabled = await api<{ listener: { port: number | null } }>(svc.url, 'POST', '/v0/owner/remote/enable', { token: svc.ownerToken, body: { hostname: TUNNEL_HOST, command: 'sleep 600' } });
  t.equal(enabled.status, 200, 'remote access enabled by the owner');
  const tunnelPort = enabled.body.listener.port!;
  const onTunnel = (target: string, kind: CredentialKind) => wireRequest({ port: tunnelPort, method: 'GET', target, host: TUNNEL_HOST, headers: who.headers(kind) });
  t.equal((await onTunnel('/v0/inboxes', 'key_in_scope')).status, 200, 'the tunnel serves agent routes to an API key');

  const probes: Probe[] = [];
  routes.forEach((route, index) => {
    const access = specAccess(route);
    if (!access) return;
    const ownerRoute = access === 'owner' || access === 'owner_bearer' || route.url.startsWith('/v0/owner/');
    if (ownerRoute) {
      for (const spelling of isPodCopy(route) ? rotatedSpellings(index, 0) : [CANONICAL, ...HOSTILE_SPELLINGS]) probes.push({ route, access, kind: 'owner_bearer', spelling });
      for (const kind of ['none', 'key_in_scope', 'session'] as const) probes.push({ route, access, kind, spelling: CANONICAL });
    } else if (access === 'agent' || access === 'mcp') {
      for (const spelling of isPodCopy(route) ? [CANONICAL] : rotatedSpellings(index, 0)) probes.push({ route, access, kind: 'none', spelling });
      // The owner bearer and the session belong to loopback: refused here (docs/remote-access.md).
      for (const kind of ['owner_bearer', 'session', 'cookie_only'] as const) probes.push({ route, access, kind, spelling: CANONICAL });
    }
  });
  // The pod copies of the home routes (docs/pods.md) add some 400 canonical probes here.
  t.ok(probes.length < 2_900, `a bounded sweep (${probes.length} requests)`);
  const violations = await sweep(probes, TUNNEL_HOST, tunnelPort, TUNNEL_HOST, (p, a) => {
    const ownerRoute = p.access === 'owner' || p.access === 'owner_bearer' || p.route.url.startsWith('/v0/owner/');
    if (!ownerRoute) return badRefusal(a, p.route.method, false);
    if (p.spelling === CANONICAL && a.status !== 404) return 'an owner route answered on the tunnel instead of 404';
    if (a.status !== 404 && a.status !== 400) return 'an owner route spelled oddly was not refused as malformed (400) or missing (404)';
    const violation = errorContractViolation(a.status, a.body);
    return violation ? `refused without the documented error body (${violation})` : null;
  });
  reportViolations(t, violations, probes.length, 'tunnel listener');

  const asset = /src="(\/assets\/[^"]+)"/.exec(shell)?.[1] ?? '/assets/index.js';
  for (const target of ['/', '/login', '/inboxes', '/favicon.svg', asset]) {
    const answer = await onTunnel(target, 'none');
    t.equal(answer.status, 404, `GET ${target} is not served on the tunnel`);
    t.notOk(answer.text === shell && shell !== '', `GET ${target} does not carry the web app`);
  }
});

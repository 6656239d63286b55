/**
 * A request fuzzer over every `/v0` route (issue 10 item 3), against a real `svc serve`: the
 * routes come from the app's own fastify route table; each gets seeded random requests with
 * wrong types, unknown fields, hostile ids in the path (traversal, encoded NULs, bad UTF-8),
 * huge and duplicated query parameters, wrong content types, bad UTF-8 and deeply nested
 * bodies, as the owner, as an agent and with no or a bad credential. The rule: every answer is
 * a documented error code with the `{name, code, message}` body (spec §7.1, ARCHITECTURE §5),
 * or a success — never a 500, never a dead service. `/mcp` and `/oauth/*` get garbage too and
 * must answer in their own error formats without a 5xx.
 *
 * Replay a failure with SVC_FUZZ_SEED=<seed printed in the failing assertion>.
 */
import t, { type Test } from 'tap';
import http from 'node:http';
import { startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { HOSTILE_SEGMENTS, HOSTILE_STRINGS, Rng, deepJson, errorContractViolation, fuzzSeed, randomJson, routeTable, type RouteEntry } from '../helpers/fuzz.js';
import { PERMISSIONS } from '../../src/auth/permissions.js';

const SEED = fuzzSeed(20_261_010);
/** Random requests per route and method; ~110 routes → about 1,000 requests. */
const CASES_PER_ROUTE = 7;

interface RawAnswer {
  status: number;
  text: string;
  body: unknown;
  headers: http.IncomingHttpHeaders;
}

/** node:http so the path goes out byte for byte (fetch would normalise `..` and re-encode). */
function raw(base: string, method: string, path: string, headers: Record<string, string | number> = {}, body?: Buffer | string, partial?: string): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, agent: false, headers: { ...(body !== undefined ? { 'content-length': Buffer.byteLength(body) } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = undefined;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          /* not JSON: the contract check reports it */
        }
        resolve({ status: res.statusCode ?? 0, text, body: parsed, headers: res.headers });
      });
    });
    req.on('error', reject);
    if (partial !== undefined) return void req.write(partial); // the rest never comes
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Field names seen across the route bodies, so random bodies reach past the "unknown field" check. */
const FIELDS = [
  'to', 'cc', 'bcc', 'reply_to', 'subject', 'text', 'html', 'attachments', 'headers', 'labels', 'add_labels', 'remove_labels',
  'message_ids', 'domain', 'username', 'display_name', 'status', 'metadata', 'client_id', 'permissions', 'send_policy', 'inbox_id',
  'inbox_ids', 'name', 'expires_at', 'url', 'event_types', 'enabled', 'add_inbox_ids', 'remove_inbox_ids', 'remove_headers', 'entry',
  'reason', 'decision', 'password', 'current_password', 'code', 'token', 'send_at', 'in_reply_to', 'forward_of', 'reply_all',
  'references', 'add_attachments', 'remove_attachments', 'feature_flags', 'hostname',
];
const QUERY_KEYS = ['limit', 'page_token', 'ascending', 'labels', 'before', 'after', 'q', 'include_spam', 'include_blocked', 'include_unauthenticated', 'include_trash', 'senders', 'recipients', 'subject', 'inbox_id', 'last_event_id', 'from'];

let svc: RunningSvc;
let agentKey = '';
let routes: RouteEntry[] = [];
/** Real identifiers per path parameter, so some requests reach the handlers' deeper code. */
const real: Record<string, string[]> = {};

t.before(async () => {
  routes = await routeTable();
  svc = await startSvc();
  const db = openHomeDb(svc.home);
  try {
    const inbox = await createInbox(svc, 'fuzz@fuzz.test');
    const mail = await seedMail(db, simpleMail({ to: inbox, subject: 'Fuzz target', messageId: '<target@fuzz.test>' }), { inboxId: inbox });
    agentKey = (await createApiKey(svc, { permissions: [...PERMISSIONS], inboxIds: [inbox], sendPolicy: 'approval' })).secret;
    const key = await createApiKey(svc, { permissions: ['message_read'] });
    real.inbox_id = [inbox];
    real.message_id = [mail.messageId];
    real.thread_id = [mail.threadId];
    real.api_key_id = [key.id];
  } finally {
    db.close();
  }
  const draft = await raw(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(real.inbox_id[0])}/drafts`, { authorization: `Bearer ${svc.ownerToken}`, 'content-type': 'application/json' }, JSON.stringify({ to: ['a@b.test'], subject: 's', text: 't' }));
  real.draft_id = [(draft.body as { draft_id: string }).draft_id];
  const hook = await raw(svc.url, 'POST', '/v0/webhooks', { authorization: `Bearer ${svc.ownerToken}`, 'content-type': 'application/json' }, JSON.stringify({ url: 'https://hooks.example/x', event_types: ['message.received'] }));
  real.webhook_id = [(hook.body as { webhook_id: string }).webhook_id];
  const domain = await raw(svc.url, 'POST', '/v0/domains', { authorization: `Bearer ${svc.ownerToken}`, 'content-type': 'application/json' }, JSON.stringify({ domain: 'fuzz.test' }));
  real.domain_id = [(domain.body as { domain_id: string }).domain_id];
  real.entry = ['someone%40fuzz.test', 'fuzz.test'];
  // Every home's first pod (docs/pods.md): the pod copies of the routes reach the same resources.
  real.pod_id = ['default'];
});
t.teardown(() => svc?.stop());

/** Percent-encodes every UTF-8 byte; lone surrogates (which encodeURIComponent refuses) become U+FFFD. */
const pct = (value: string) => [...Buffer.from(value, 'utf8')].map((b) => '%' + b.toString(16).padStart(2, '0')).join('');

function pathFor(rng: Rng, route: RouteEntry): string {
  return route.url.replace(/:([a-z_]+)/g, (_m, name: string) => {
    if (real[name] && rng.chance(0.5)) return encodeURIComponent(rng.pick(real[name])).replace(/%2540/g, '%40');
    return rng.chance(0.7) ? rng.pick(HOSTILE_SEGMENTS) : pct(String(rng.pick(HOSTILE_STRINGS)).slice(0, 300)) || 'x';
  });
}

function queryFor(rng: Rng): string {
  if (rng.chance(0.4)) return '';
  const parts: string[] = [];
  for (let i = rng.int(1, 6); i > 0; i--) {
    const key = rng.pick(QUERY_KEYS);
    const value = rng.chance(0.7) ? String(rng.pick(HOSTILE_STRINGS)).slice(0, rng.pick([20, 300, 3_000])) : rng.pick(['-5', '0', '101', '1e3', 'true', 'yes', '']);
    parts.push(`${key}=${pct(value)}`);
    if (rng.chance(0.3)) parts.push(`${key}=${pct(value)}`); // duplicated parameter
  }
  if (rng.chance(0.1)) parts.push(`q=${'%FF'.repeat(50)}`); // bad UTF-8 in the query
  if (rng.chance(0.05)) parts.push(`limit=${'9'.repeat(4_000)}`); // a huge query string, under Node's 16 KiB header cap
  return '?' + parts.join('&');
}

function bodyFor(rng: Rng): { headers: Record<string, string>; body?: Buffer | string } {
  const roll = rng.int(0, 12);
  if (roll === 0) return { headers: {} };
  if (roll === 1) return { headers: { 'content-type': rng.pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json; charset=latin1', 'application/jsonx']) }, body: 'to=a&subject=b' };
  if (roll === 2) return { headers: { 'content-type': 'application/json' }, body: Buffer.concat([Buffer.from('{"subject":"'), Buffer.from([0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80]), Buffer.from('"}')]) };
  if (roll === 3) return { headers: { 'content-type': 'application/json' }, body: deepJson(rng.pick([200, 5_000, 100_000])) };
  if (roll === 4) return { headers: { 'content-type': 'application/json' }, body: rng.pick(['', '{', 'null', '"x"', '[]', '1', '{"a":1,"a":2}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"x":1}}}']) };
  if (roll === 5) return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(randomJson(rng, 4)) };
  // Most bodies: objects built from real field names with wrong-typed or hostile values.
  const out: Record<string, unknown> = {};
  for (let i = rng.int(1, 5); i > 0; i--) out[rng.pick(FIELDS)] = randomJson(rng, 3);
  if (rng.chance(0.2)) out[rng.pick(['unknown_field', 'x'.repeat(200), '__proto__'])] = 1;
  return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(out) };
}

function authFor(rng: Rng): Record<string, string> {
  switch (rng.int(0, 5)) {
    case 0:
      return {};
    case 1:
      return { authorization: rng.pick(['Bearer ', 'Bearer x', 'Basic Zm9vOmJhcg==', `Bearer ${'a'.repeat(5_000)}`, 'Bearer svc_oauth_nope', 'bearer']) };
    case 2:
      return { authorization: `Bearer ${agentKey}` };
    default:
      return { authorization: `Bearer ${svc.ownerToken}` };
  }
}

async function fuzzRoute(t: Test, rng: Rng, route: RouteEntry, cases: number): Promise<number> {
  let failures = 0;
  for (let i = 0; i < cases; i++) {
    const path = pathFor(rng, route) + queryFor(rng);
    const { headers, body } = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(route.method) || rng.chance(0.1) ? bodyFor(rng) : { headers: {}, body: undefined };
    let res: RawAnswer;
    try {
      res = await raw(svc.url, route.method, path, { ...authFor(rng), ...headers }, body);
    } catch (err) {
      failures++;
      t.fail(`${route.method} ${route.url}: connection failed (${(err as Error).message})`, { seed: rng.seed, path: path.slice(0, 300), body: String(body ?? '').slice(0, 300), alive: svc.proc.exitCode === null });
      continue;
    }
    const violation = errorContractViolation(res.status, res.body);
    if (violation) {
      failures++;
      t.fail(`${route.method} ${route.url}: ${violation}`, { seed: rng.seed, path: path.slice(0, 300), body: String(body ?? '').slice(0, 300), answer: res.text.slice(0, 300) });
    }
  }
  return failures;
}

t.test('the route table covers the whole /v0 surface', async (t) => {
  const v0 = routes.filter((r) => r.url.startsWith('/v0/'));
  t.ok(v0.length >= 100, `${v0.length} /v0 routes`);
  for (const expected of ['POST /v0/inboxes/:inbox_id/messages/send', 'PATCH /v0/webhooks/:webhook_id/headers', 'DELETE /v0/owner/quarantine/:id', 'POST /v0/inboxes/:inbox_id/drafts/:draft_id/approve']) {
    t.ok(v0.some((r) => `${r.method} ${r.url}` === expected), expected);
  }
});

t.test('every /v0 route answers hostile requests with documented error codes only, never a 500', async (t) => {
  const rng = new Rng(SEED);
  // Remote access lives on the running service (it needs the connector); fuzz its read and disable routes too.
  const v0 = [...routes.filter((r) => r.url.startsWith('/v0/')), { method: 'GET', url: '/v0/owner/remote' }, { method: 'POST', url: '/v0/owner/remote/disable' }];
  // A wait route holds each answer up to its 30 s timeout: its requests run side by side with the
  // other routes, each from its own seed, which its failures print.
  const waits = v0.filter((r) => r.url.endsWith('/wait'));
  const waiting = Promise.all(waits.flatMap((route, r) => Array.from({ length: CASES_PER_ROUTE }, (_, i) => fuzzRoute(t, new Rng(SEED + 1_000 * (r + 1) + i), route, 1))));
  let failures = 0;
  for (const route of v0.filter((r) => r.method !== 'DELETE' && !waits.includes(r))) failures += await fuzzRoute(t, rng, route, CASES_PER_ROUTE);
  for (const n of await waiting) failures += n;
  // Deletes last, so the real identifiers keep leading somewhere for most of the run.
  for (const route of v0.filter((r) => r.method === 'DELETE')) failures += await fuzzRoute(t, rng, route, CASES_PER_ROUTE);
  t.equal(failures, 0, `seed ${SEED}: ${v0.length} routes × ${CASES_PER_ROUTE} requests`);
  const status = await raw(svc.url, 'GET', '/v0/owner/status');
  t.equal(status.status, 200, 'the service is still serving');
  t.equal(svc.proc.exitCode, null, 'the process is alive');
});

t.test('unknown methods and paths, path traversal outside the routes and oversize bodies keep the contract', async (t) => {
  const owner = { authorization: `Bearer ${svc.ownerToken}` };
  const cases: [string, string, Record<string, string>?, string?][] = [
    ['GET', '/v0/..%2F..%2Fetc%2Fpasswd'],
    ['GET', '/v0/inboxes/..%2F..%2F..%2Fsvc.db'],
    ['GET', '/v0/%2e%2e/%2e%2e/keys.json'],
    ['GET', '/v0/inboxes/%00'],
    ['GET', '/v0/inboxes/%FF'],
    ['GET', '/v0/inboxes/%'],
    ['PUT', '/v0/inboxes', owner],
    ['PATCH', '/v0/owner/status', owner],
    ['DELETE', '/v0/ws', owner],
    ['GET', `/v0/threads?${'labels=x&'.repeat(1_500)}`, owner],
    ['GET', `/v0/inboxes/${'a'.repeat(4_100)}`, owner],
    ['POST', '/v0/inboxes', { ...owner, 'content-type': 'application/json' }, '{"domain":"x.test","domain":"y.test","username":{"$gt":""}}'],
  ];
  for (const [method, path, headers, body] of cases) {
    const res = await raw(svc.url, method, path, headers, body);
    t.equal(errorContractViolation(res.status, res.body), null, `${method} ${path.slice(0, 80)} → ${res.status} ${res.text.slice(0, 120)}`);
    t.notMatch(res.text, /"home_id"|wrapped_key|SQLite format/, 'nothing from the home leaks');
  }
  // Announce 9 MiB and send only the start: the answer must come before the rest of the body.
  const big = await raw(svc.url, 'POST', `/v0/inboxes/${encodeURIComponent(real.inbox_id[0])}/messages/send`, { ...owner, 'content-type': 'application/json', 'content-length': 9 * 1024 * 1024 }, undefined, '{"to":"a@b.test","text":"');
  t.equal(big.status, 413);
  t.equal(errorContractViolation(big.status, big.body), null);
});

t.test('/mcp and /oauth/* answer garbage in their own formats, never with a 5xx', async (t) => {
  const rng = new Rng(SEED + 1);
  const targets: [string, string][] = [
    ['POST', '/mcp'],
    ['GET', '/mcp'],
    ['DELETE', '/mcp'],
    ['POST', '/oauth/register'],
    ['POST', '/oauth/token'],
    ['POST', '/oauth/revoke'],
    ['GET', '/oauth/authorize'],
    ['GET', '/.well-known/oauth-authorization-server'],
    ['GET', '/.well-known/oauth-protected-resource/mcp'],
  ];
  const mcpBodies = [
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_message","arguments":{"inbox_id":"../x","to":"a\\r\\nBcc: x@y"}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}',
    '{"jsonrpc":"1.0"}',
    '[{"jsonrpc":"2.0"}]',
  ];
  for (const [method, path] of targets) {
    for (let i = 0; i < 12; i++) {
      const auth = rng.pick([{}, { authorization: `Bearer ${svc.ownerToken}` }, { authorization: `Bearer ${agentKey}` }, { authorization: 'Bearer svc_oauth_garbage' }]);
      const { headers, body } = method === 'GET' ? { headers: {}, body: undefined } : rng.chance(0.4) && path === '/mcp' ? { headers: { 'content-type': 'application/json' }, body: rng.pick(mcpBodies) } : bodyFor(rng);
      const query = method === 'GET' && path === '/oauth/authorize' ? queryFor(rng).replace(/^\?|^$/, '?response_type=code&client_id=%00&') : '';
      const res = await raw(svc.url, method, path + query, { accept: 'application/json, text/event-stream', ...auth, ...headers }, body);
      t.ok(res.status < 500, `${method} ${path} → ${res.status}`, { seed: SEED + 1, body: String(body ?? '').slice(0, 200), answer: res.text.slice(0, 200) });
      if (path.startsWith('/oauth/') && res.status >= 400 && path !== '/oauth/authorize') t.match(res.body, { error: String }, `${method} ${path}: OAuth error body`);
    }
  }
  t.equal((await raw(svc.url, 'GET', '/v0/owner/status')).status, 200, 'still serving');
});

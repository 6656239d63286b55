/**
 * Webhook delivery (spec §6, §8; ARCHITECTURE §8) against a real HTTP receiver on loopback:
 * order, Standard Webhooks signatures checked by the `standardwebhooks` package, the svix-*
 * aliases, retries, drops, health fields, filters, the creator's current scope and permissions,
 * revocation, and disabling after unbroken failure (test-shortened timings, docs/testing.md).
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { deliveredEvents, expireApiKey, narrowApiKeyScope, openHomeDb } from '../helpers/db.js';
import { createApiKey, updateApiKey } from '../helpers/seed.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { until } from '../helpers/until.js';

const RETRY_MS = 150;
const DISABLE_MS = 6_000;
const TIMEOUT_MS = 500;
/** How long "nothing more arrives" is watched: longer than the loop's one-second tick. */
const SETTLE_MS = 2_500;
const PUBLIC_URL = 'https://93.184.215.14/hooks';
const enc = encodeURIComponent;

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}
type Mode = 'ok' | 'fail' | 'hang';
interface Receiver {
  url: string;
  requests: Received[];
  mode: Mode;
  /** Distinct webhook-ids in the order they first succeeded. */
  delivered(): Received[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const requests: Received[] = [];
  const ok: Received[] = [];
  const state = { mode: 'ok' as Mode };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(r);
      if (state.mode === 'hang') return; // never answers; the socket is destroyed by svc's timeout
      if (state.mode === 'fail') return void res.writeHead(500).end('no');
      ok.push(r);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    requests,
    get mode() {
      return state.mode;
    },
    set mode(m: Mode) {
      state.mode = m;
    },
    delivered: () => ok,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let svc: RunningSvc;
let db: Db;
let n = 0;
const receivers: Receiver[] = [];

t.before(async () => {
  svc = await startSvc({
    env: { SVC_TEST_WEBHOOK_RETRY_MS: String(RETRY_MS), SVC_TEST_WEBHOOK_DISABLE_MS: String(DISABLE_MS), SVC_TEST_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), SVC_TEST_WEBHOOK_UNGUARDED: '1' },
  });
  db = openHomeDb(svc.home);
});
t.teardown(async () => {
  for (const r of receivers) await r.close();
  db.close();
  await svc.stop();
});

const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

async function newInbox(): Promise<string> {
  const res = await owner<{ inbox_id: string }>('POST', '/v0/inboxes', { username: `hook${++n}`, domain: 'deliver.example.com' });
  if (res.status !== 200) throw new Error(`inbox: ${res.text}`);
  return res.body.inbox_id;
}

async function createHook(body: Record<string, unknown>, path = '/v0/webhooks', token = svc.ownerToken): Promise<{ webhook_id: string; secret: string }> {
  const res = await api<{ webhook_id: string; secret: string }>(svc.url, 'POST', path, { token, body });
  if (res.status !== 200) throw new Error(`webhook: ${res.status} ${res.text}`);
  return res.body;
}

interface Health {
  enabled: boolean;
  failure_count: number;
  dropped_count: number;
  disabled_reason: string | null;
  last_error_code: string | null;
  last_success_at: string | null;
}
const health = async (id: string) => (await owner<Health>('GET', `/v0/webhooks/${id}`)).body;

/** Receives mail into an inbox the way the inbound pipeline does; returns the event's id. */
async function mail(inbox: string, subject = `Subject ${++n}`, hiddenLabels?: ('spam' | 'blocked' | 'unauthenticated')[]): Promise<string> {
  const result = await seedMail(db, simpleMail({ to: inbox, subject, messageId: `<m${++n}.${Date.now()}@sender.example>` }), { inboxId: inbox, hiddenLabels });
  return db.prepare('SELECT event_id FROM events WHERE seq = ?').pluck().get(result.seq) as string;
}

const ids = (list: Received[]) => list.map((r) => r.headers['webhook-id']);
const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

t.test('events arrive once, in log order, as the stored event object, signed per Standard Webhooks with svix-* aliases and custom headers', async (t) => {
  const inbox = await newInbox();
  const r = await receiver();
  const hook = await createHook({ url: r.url, event_types: ['message.received'], inbox_ids: [inbox], headers: { Authorization: 'Bearer receiver-token', 'X-Tenant': 'acme' } });
  const sent: string[] = [];
  for (let i = 0; i < 5; i++) sent.push(await mail(inbox, `Order ${i}`));
  await until('5 deliveries', () => r.delivered().length >= 5);
  await settle();
  t.same(ids(r.requests), sent, 'each event once, in order');
  const verifier = new StandardWebhook(hook.secret);
  for (const [i, req] of r.requests.entries()) {
    const [stored] = deliveredEvents(db, 'event_id = ?', sent[i]);
    t.equal(req.body, stored, 'body = the stored event object');
    const event = verifier.verify(req.body, req.headers as Record<string, string>) as Record<string, unknown>;
    t.equal(event.event_id, sent[i], 'standardwebhooks verifies the signature');
    t.equal(event.event_type, 'message.received');
    t.equal((event.message as { subject: string }).subject, `Order ${i}`);
    t.equal(req.headers['svix-id'], req.headers['webhook-id']);
    t.equal(req.headers['svix-timestamp'], req.headers['webhook-timestamp']);
    t.equal(req.headers['svix-signature'], req.headers['webhook-signature']);
    t.match(req.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
    t.ok(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000) < 60, 'timestamp in unix seconds');
    t.equal(req.headers['content-type'], 'application/json');
    t.equal(req.headers.authorization, 'Bearer receiver-token');
    t.equal(req.headers['x-tenant'], 'acme');
  }
  // The svix-* names alone verify too (existing AgentMail/Svix receiver code).
  const svixOnly = { 'webhook-id': r.requests[0].headers['svix-id'], 'webhook-timestamp': r.requests[0].headers['svix-timestamp'], 'webhook-signature': r.requests[0].headers['svix-signature'] } as Record<string, string>;
  t.ok(verifier.verify(r.requests[0].body, svixOnly));
  t.throws(() => new StandardWebhook('whsec_' + Buffer.alloc(32, 1).toString('base64')).verify(r.requests[0].body, r.requests[0].headers as Record<string, string>), 'another secret does not verify');
  const h = await health(hook.webhook_id);
  t.equal(h.failure_count, 0);
  t.ok(h.last_success_at);
  t.equal(h.last_error_code, null);
});

t.test('a failing receiver is retried until it succeeds; later events wait; health reflects it', async (t) => {
  const inbox = await newInbox();
  const r = await receiver();
  r.mode = 'fail';
  const hook = await createHook({ url: r.url, event_types: ['message.received'], inbox_ids: [inbox] });
  const first = await mail(inbox);
  const second = await mail(inbox);
  await until('two failed attempts', () => r.requests.length >= 2);
  t.same([...new Set(ids(r.requests))], [first], 'the second event waits behind the failing first');
  const failing = await until('failure recorded', async () => {
    const h = await health(hook.webhook_id);
    return h.failure_count >= 2 ? h : null;
  });
  t.equal(failing.last_error_code, 'http_500');
  t.equal(failing.enabled, true);
  r.mode = 'ok';
  await until('both delivered', () => r.delivered().length >= 2);
  t.same(ids(r.delivered()), [first, second]);
  t.same(ids(r.requests).filter((id) => id === second).length, 1);
  const recovered = await health(hook.webhook_id);
  t.equal(recovered.failure_count, 0, 'success resets failure_count');
  t.ok(recovered.last_success_at);
  t.equal(recovered.last_error_code, 'http_500', 'the last error stays visible');
});

t.test('a receiver that does not answer times out (last_error_code timeout) and is retried', async (t) => {
  const inbox = await newInbox();
  const r = await receiver();
  r.mode = 'hang';
  const hook = await createHook({ url: r.url, event_types: ['message.received'], inbox_ids: [inbox] });
  const id = await mail(inbox);
  await until('timeout recorded', async () => (await health(hook.webhook_id)).last_error_code === 'timeout');
  r.mode = 'ok';
  await until('delivered after the timeout', () => r.delivered().length === 1);
  t.same(ids(r.delivered()), [id]);
});

t.test('a closed port is connection_refused; one slow receiver does not hold back another webhook', async (t) => {
  const inbox = await newInbox();
  const gone = await startReceiver();
  await gone.close();
  const slow = await receiver();
  slow.mode = 'hang';
  const fast = await receiver();
  const refused = await createHook({ url: gone.url, event_types: ['message.received'], inbox_ids: [inbox] });
  await createHook({ url: slow.url, event_types: ['message.received'], inbox_ids: [inbox] });
  await createHook({ url: fast.url, event_types: ['message.received'], inbox_ids: [inbox] });
  const started = Date.now();
  const id = await mail(inbox);
  await until('fast receiver got it', () => fast.delivered().length === 1);
  t.ok(Date.now() - started < 2_000 + TIMEOUT_MS, 'not delayed by the hanging receiver');
  t.same(ids(fast.delivered()), [id]);
  await until('connection_refused recorded', async () => (await health(refused.webhook_id)).last_error_code === 'connection_refused');
  await owner('DELETE', `/v0/webhooks/${refused.webhook_id}`);
  slow.mode = 'ok';
});

t.test('after the last retry a delivery is dropped and counted, and the webhook moves on', async (t) => {
  const inbox = await newInbox();
  const r = await receiver();
  r.mode = 'fail';
  const hook = await createHook({ url: r.url, event_types: ['message.received'], inbox_ids: [inbox] });
  const doomed = await mail(inbox);
  const dropped = await until('dropped', async () => {
    const h = await health(hook.webhook_id);
    return h.dropped_count === 1 ? h : null;
  });
  r.mode = 'ok';
  t.equal(ids(r.requests).filter((id) => id === doomed).length, 8, 'one attempt and seven retries');
  t.equal(dropped.enabled, true);
  const next = await mail(inbox);
  await until('the next event delivered', () => r.delivered().length === 1);
  t.same(ids(r.delivered()), [next]);
  // The receiver sees the request before the loop commits its success, so wait for the commit.
  const healed = await until('failure_count reset by the success', async () => {
    const h = await health(hook.webhook_id);
    return h.last_success_at !== null ? h : null;
  });
  t.equal(healed.failure_count, 0);
  t.equal(healed.dropped_count, 1, 'the dropped delivery stays counted');
});

t.test('filters: event_types and inbox_ids', async (t) => {
  const wanted = await newInbox();
  const other = await newInbox();
  const r = await receiver();
  const spam = await receiver();
  await createHook({ url: r.url, event_types: ['message.received'], inbox_ids: [wanted] });
  await createHook({ url: spam.url, event_types: ['message.received.spam'], inbox_ids: [wanted, other] });
  const a = await mail(wanted);
  await mail(other);
  const s1 = await mail(wanted, 'spammy', ['spam']);
  const s2 = await mail(other, 'spammy too', ['spam']);
  const b = await mail(wanted);
  await until('deliveries', () => r.delivered().length >= 2 && spam.delivered().length >= 2);
  await settle();
  t.same(ids(r.requests), [a, b], 'message.received of the filtered inbox only');
  t.same(ids(spam.requests), [s1, s2], 'the spam variant only');
});

t.test('inbox webhooks get their inbox only; delivery follows the creator key\'s CURRENT scope and permissions', async (t) => {
  const mine = await newInbox();
  const theirs = await newInbox();
  const inboxKey = await createApiKey(svc, { permissions: ['message_read', 'webhook_create', 'webhook_read'], inboxIds: [mine] });
  const r1 = await receiver();
  const inboxHook = await createHook({ url: PUBLIC_URL, event_types: ['message.received'] }, `/v0/inboxes/${enc(mine)}/webhooks`, inboxKey.secret);
  db.prepare('UPDATE webhooks SET url = ? WHERE webhook_id = ?').run(r1.url, inboxHook.webhook_id); // loopback only through the test switch

  const wideKey = await createApiKey(svc, { permissions: ['message_read', 'webhook_create', 'webhook_read'] });
  const r2 = await receiver();
  const wideHook = await createHook({ url: PUBLIC_URL, event_types: ['message.received'], inbox_ids: [mine, theirs] }, '/v0/webhooks', wideKey.secret);
  db.prepare('UPDATE webhooks SET url = ? WHERE webhook_id = ?').run(r2.url, wideHook.webhook_id);
  narrowApiKeyScope(db, wideKey.id, [mine]); // the key's scope narrows later (no route changes a key's inboxes)

  const m1 = await mail(mine);
  await mail(theirs);
  const m2 = await mail(mine);
  await until('deliveries', () => r1.delivered().length >= 2 && r2.delivered().length >= 2);
  await settle();
  t.same(ids(r1.requests), [m1, m2], 'the inbox webhook: its inbox only');
  t.same(ids(r2.requests), [m1, m2], 'the instance-wide webhook: only what the creator can see now');

  await updateApiKey(svc, wideKey.id, { permissions: ['webhook_read'] });
  const m3 = await mail(mine);
  await until('inbox webhook got the next', () => r1.delivered().length === 3);
  await settle();
  t.same(ids(r1.requests).at(-1), m3);
  t.equal(r2.requests.length, 2, 'no message_read, no message events');
});

t.test('deleting or expiring the creator key stops delivery', async (t) => {
  const inbox = await newInbox();
  const deleted = await createApiKey(svc, { permissions: ['message_read', 'webhook_create'] });
  const expiring = await createApiKey(svc, { permissions: ['message_read', 'webhook_create'] });
  const r1 = await receiver();
  const r2 = await receiver();
  for (const [key, r] of [[deleted, r1], [expiring, r2]] as const) {
    const hook = await createHook({ url: PUBLIC_URL, event_types: ['message.received'], inbox_ids: [inbox] }, '/v0/webhooks', key.secret);
    db.prepare('UPDATE webhooks SET url = ? WHERE webhook_id = ?').run(r.url, hook.webhook_id);
  }
  const before = await mail(inbox);
  await until('both delivered', () => r1.delivered().length === 1 && r2.delivered().length === 1);
  t.equal((await owner('DELETE', `/v0/api-keys/${deleted.id}`)).status, 200);
  expireApiKey(db, expiring.id);
  await mail(inbox);
  await settle();
  t.same(ids(r1.requests), [before], 'revoked: nothing more');
  t.same(ids(r2.requests), [before], 'expired: nothing more');
});

t.test('unbroken failure for the (shortened) window disables the webhook; re-enabling starts with new events', async (t) => {
  const inbox = await newInbox();
  const r = await receiver();
  r.mode = 'fail';
  const hook = await createHook({ url: r.url, event_types: ['message.received'], inbox_ids: [inbox] });
  const started = Date.now();
  // Enough events that dropping one after its last retry leads straight into the next failure.
  for (let i = 0; i < 8; i++) await mail(inbox);
  const disabled = await until(
    'disabled',
    async () => {
      const h = await health(hook.webhook_id);
      return h.enabled ? null : h;
    },
    DISABLE_MS + 10_000,
  );
  t.ok(Date.now() - started >= DISABLE_MS, 'not before the window');
  t.equal(disabled.disabled_reason, 'consecutive_failures');
  t.equal(disabled.last_error_code, 'http_500');
  const attempts = r.requests.length;
  await mail(inbox);
  await settle();
  t.equal(r.requests.length, attempts, 'a disabled webhook gets nothing');
  r.mode = 'ok';
  const on = await owner<Health>('PATCH', `/v0/webhooks/${hook.webhook_id}`, { enabled: true });
  t.equal(on.body.enabled, true);
  t.equal(on.body.disabled_reason, null);
  t.equal(on.body.failure_count, 0);
  const fresh = await mail(inbox);
  await until('delivered after re-enabling', () => r.delivered().length === 1);
  t.same(ids(r.delivered()), [fresh], 'only events after re-enabling');
});

t.test('retention keeps events past 30 days while an enabled webhook still must deliver them', async (t) => {
  const inbox = await newInbox();
  const r = await receiver();
  r.mode = 'fail';
  const hook = await createHook({ url: r.url, event_types: ['message.received'], inbox_ids: [inbox] });
  const id = await mail(inbox);
  await until('attempted', () => r.requests.length >= 1);
  const { pruneEvents } = await import('../../src/events/retention.js');
  db.prepare('UPDATE events SET created_at = ? WHERE event_id = ?').run(new Date(Date.now() - 40 * 24 * 3600_000).toISOString(), id);
  pruneEvents(db);
  t.ok(db.prepare('SELECT 1 FROM events WHERE event_id = ?').get(id), 'kept while pending');
  await owner('PATCH', `/v0/webhooks/${hook.webhook_id}`, { enabled: false });
  // Other tests' webhooks may still be behind; once none is, the old event goes.
  await until('no enabled webhook holds it', () => {
    pruneEvents(db);
    return !db.prepare('SELECT 1 FROM events WHERE event_id = ?').get(id);
  });
  t.pass('pruned once no enabled webhook needs it');
});

/**
 * The event WebSocket, `GET /v0/ws` (spec §6.4, §5.1, §5.2, §8), against real services with a
 * real `ws` client. Events are appended to the running service's log from this process, as a
 * writer the service does not hear on its bus, so delivery also proves the hub's log poll; the
 * inboxes and API keys are created through the API, as the owner would.
 * One service runs the spec's timings; a second one shortens ping and pong through the test-only
 * variables (docs/websocket.md) for the timing rules.
 */
import t from 'tap';
import WebSocket from 'ws';
import { OWNER_PASSWORD, api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { deliveredEvents, expireApiKey, narrowApiKeyScope, openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox, deleteApiKey, updateApiKey } from '../helpers/seed.js';
import type { Db } from '../../src/db/open.js';
import { appendEvent } from '../../src/events/log.js';
import { pruneEvents } from '../../src/events/retention.js';
import { SPEC_EVENT_STREAM_TIMING, eventStreamTiming } from '../../src/events/hub.js';
import { until } from '../helpers/until.js';

const A = 'a@x.test';
const B = 'b@x.test';
const FAST = { pingMs: 250, pongTimeoutMs: 1_000 };
const ALL_READ = ['message_read', 'draft_read', 'label_spam_read', 'label_blocked_read', 'label_unauthenticated_read'];

type Frame = { type: string; [key: string]: unknown };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connected client that records every frame (raw and parsed) and how the socket closed. */
class StreamClient {
  readonly raw: string[] = [];
  readonly frames: Frame[] = [];
  readonly openedAt = Date.now();
  closedWith: { code: number; reason: string; at: number } | null = null;
  readonly closed: Promise<{ code: number; reason: string; at: number }>;

  constructor(
    readonly ws: WebSocket,
    autoPong: boolean,
  ) {
    ws.on('message', (data) => {
      const text = String(data);
      const frame = JSON.parse(text) as Frame;
      this.raw.push(text);
      this.frames.push(frame);
      if (autoPong && frame.type === 'ping' && ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'pong' }));
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closedWith = { code, reason: reason.toString(), at: Date.now() };
        resolve(this.closedWith);
      }),
    );
  }

  events(): Frame[] {
    return this.frames.filter((f) => f.type === 'event');
  }

  eventIds(): string[] {
    return this.events().map((e) => e.event_id as string);
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  async subscribe(fields: Record<string, unknown> = {}): Promise<Frame> {
    this.send({ type: 'subscribe', ...fields });
    await until('subscribed', () => this.frames.some((f) => f.type === 'subscribed') || this.closedWith !== null);
    const answer = this.frames.find((f) => f.type === 'subscribed');
    if (!answer) throw new Error(`closed instead of subscribed: ${JSON.stringify(this.closedWith)}`);
    return answer;
  }

  /** Waits until the event arrived (or the socket closed). */
  async sawEvent(eventId: string, timeoutMs = 5_000): Promise<void> {
    await until(`event ${eventId}`, () => this.eventIds().includes(eventId) || this.closedWith !== null, timeoutMs);
  }

  async closeCode(timeoutMs = 5_000): Promise<number> {
    await until('close', () => this.closedWith !== null, timeoutMs);
    return this.closedWith!.code;
  }

  end(): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.terminate();
  }
}

interface ConnectOptions {
  token?: string;
  headers?: Record<string, string>;
  protocols?: string[];
  query?: string;
  autoPong?: boolean;
}

type Attempt = { client: StreamClient } | { refused: { status: number; body: Record<string, unknown> } };

function attempt(svc: RunningSvc, opts: ConnectOptions = {}): Promise<Attempt> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const ws = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/v0/ws${opts.query ?? ''}`, opts.protocols ?? [], { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        ws.on('error', () => undefined);
        resolve({ refused: { status: res.statusCode ?? 0, body: body ? (JSON.parse(body) as Record<string, unknown>) : {} } });
      });
    });
    ws.once('open', () => resolve({ client: new StreamClient(ws, opts.autoPong ?? true) }));
    ws.once('error', reject);
  });
}

const clients: StreamClient[] = [];

async function connect(svc: RunningSvc, opts: ConnectOptions = {}): Promise<StreamClient> {
  const result = await attempt(svc, opts);
  if ('refused' in result) throw new Error(`upgrade refused: ${result.refused.status} ${JSON.stringify(result.refused.body)}`);
  clients.push(result.client);
  return result.client;
}

async function refused(svc: RunningSvc, opts: ConnectOptions = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const result = await attempt(svc, opts);
  if ('client' in result) {
    result.client.end();
    throw new Error('the upgrade was accepted');
  }
  return result.refused;
}

/** A payload shaped like §6.2's for each type family. */
function payloadFor(eventType: string, inboxId: string | null, size = 0): { payloadKey: string; payload: Record<string, unknown>; extra?: Record<string, unknown> } {
  const family = eventType.split('.')[0];
  const now = new Date().toISOString();
  switch (family) {
    case 'message':
      return {
        payloadKey: 'message',
        payload: { inbox_id: inboxId, thread_id: 'thr-1', message_id: `<${Math.random()}@x.test>`, subject: 'Hello', text: 'x'.repeat(size), timestamp: now },
        extra: { thread: { inbox_id: inboxId, thread_id: 'thr-1', subject: 'Hello' } },
      };
    case 'draft':
      return { payloadKey: 'draft', payload: { inbox_id: inboxId, draft_id: 'drf-1', timestamp: now } };
    case 'domain':
      return { payloadKey: 'domain', payload: { domain_id: 'dom-1', domain: 'x.test', status: 'verified' } };
    case 'inbound':
      return { payloadKey: 'quarantine', payload: { quarantine_id: 'q-1', reason_code: 'decrypt_failed', timestamp: now } };
    default:
      return { payloadKey: 'oauth', payload: { grant_id: 'g-1', client_id: 'c-1', timestamp: now } };
  }
}

function seed(db: Db, eventType: string, inboxId: string | null, size = 0): string {
  return appendEvent(db, { eventType, inboxId, ...payloadFor(eventType, inboxId, size) }).eventId;
}

const storedPayload = (db: Db, eventId: string) => deliveredEvents(db, 'event_id = ?', eventId)[0];

let main: RunningSvc;
let fast: RunningSvc;
let mainDb: Db;
let session: { cookie: string; csrf: string };

t.before(async () => {
  [main, fast] = await Promise.all([
    startSvc(),
    startSvc({ env: { SVC_TEST_WS_PING_MS: String(FAST.pingMs), SVC_TEST_WS_PONG_TIMEOUT_MS: String(FAST.pongTimeoutMs) } }),
  ]);
  // Keys come from the API, and a key's scope may only name inboxes that exist.
  await createInbox(main, A);
  await createInbox(main, B);
  mainDb = openHomeDb(main.home);
  session = await setupOwner(main);
});

t.afterEach(() => {
  for (const client of clients.splice(0)) client.end();
});

t.teardown(async () => {
  mainDb?.close();
  await Promise.all([main?.stop(), fast?.stop()]);
});

t.test('authenticate with Authorization: Bearer — the owner token or an API key', async (t) => {
  const owner = await connect(main, { token: main.ownerToken });
  t.same(await owner.subscribe(), { type: 'subscribed' });
  const key = await createApiKey(main, { permissions: ['message_read'] });
  const agent = await connect(main, { token: key.secret });
  t.same(await agent.subscribe(), { type: 'subscribed' });
});

t.test('no credential, or one that is unknown, gets 401 before the upgrade', async (t) => {
  const none = await refused(main);
  t.equal(none.status, 401);
  t.match(none.body, { name: 'UnauthorizedError', code: 'unauthorized', message: String, fix: String });
  const unknown = await refused(main, { token: 'svc_key_not-a-real-key' });
  t.equal(unknown.status, 401);
  t.equal(unknown.body.code, 'unauthorized');
  const revokedKey = await createApiKey(main, { permissions: ['message_read'] });
  await deleteApiKey(main, revokedKey.id);
  t.equal((await refused(main, { token: revokedKey.secret })).status, 401, 'a revoked key');
  const expiredKey = await createApiKey(main, { permissions: ['message_read'] });
  // SQL: no route makes a key that has already expired (`expires_at` must lie ahead).
  expireApiKey(mainDb, expiredKey.id);
  t.equal((await refused(main, { token: expiredKey.secret })).status, 401, 'an expired key');
});

t.test('credentials in the URL are not accepted', async (t) => {
  for (const name of ['access_token', 'token', 'api_key']) {
    const res = await refused(main, { query: `?${name}=${encodeURIComponent(main.ownerToken)}` });
    t.equal(res.status, 400, name);
    t.equal(res.body.code, 'validation_error', name);
  }
});

t.test('the credential needs message_read or draft_read; webhook permissions alone are not enough', async (t) => {
  const webhookOnly = await createApiKey(main, { permissions: ['webhook_read', 'webhook_create', 'webhook_update', 'webhook_delete'] });
  const res = await refused(main, { token: webhookOnly.secret });
  t.equal(res.status, 403);
  t.match(res.body, { name: 'MissingPermissionError', code: 'missing_permission', message: /message_read.*draft_read/, fix: String });
  const labelsOnly = await createApiKey(main, { permissions: ['label_spam_read', 'inbox_read'] });
  t.equal((await refused(main, { token: labelsOnly.secret })).status, 403);
  const draftOnly = await createApiKey(main, { permissions: ['draft_read'] });
  const client = await connect(main, { token: draftOnly.secret });
  t.equal((await client.subscribe()).type, 'subscribed', 'draft_read alone is enough');
});

t.test('a plain GET without the upgrade is not a REST route for the log', async (t) => {
  const res = await api(main.url, 'GET', '/v0/ws', { token: main.ownerToken });
  t.equal(res.status, 404);
  t.equal((res.body as { code: string }).code, 'not_found');
});

t.test('browser sessions authenticate with the cookie, the exact origin and the subprotocols svc.events and csrf.<csrf_token>', async (t) => {
  const browser = { cookie: session.cookie, origin: main.url };
  const client = await connect(main, { headers: browser, protocols: ['svc.events', `csrf.${session.csrf}`] });
  t.equal(client.ws.protocol, 'svc.events', 'the server selects svc.events');
  await client.subscribe();
  const eventId = seed(mainDb, 'domain.verified', null);
  await client.sawEvent(eventId);
  t.same(client.eventIds(), [eventId], 'the session is the owner and sees owner-only events');

  const reversed = await connect(main, { headers: browser, protocols: [`csrf.${session.csrf}`, 'svc.events'] });
  t.equal(reversed.ws.protocol, 'svc.events', 'svc.events is selected whatever the order; the CSRF token is never echoed');

  // The app opened as http://localhost:PORT is the same listener (spec §4: its own origin).
  const viaLocalhost = await connect(main, { headers: { cookie: session.cookie, origin: main.url.replace('127.0.0.1', 'localhost') }, protocols: ['svc.events', `csrf.${session.csrf}`] });
  t.equal(viaLocalhost.ws.protocol, 'svc.events', 'the same listener under its localhost name');

  const cases: [string, ConnectOptions][] = [
    ['no csrf subprotocol', { headers: browser, protocols: ['svc.events'] }],
    ['a wrong csrf token', { headers: browser, protocols: ['svc.events', 'csrf.wrong-token'] }],
    ['no svc.events subprotocol', { headers: browser, protocols: [`csrf.${session.csrf}`] }],
    ['no subprotocols', { headers: browser }],
    ['no Origin', { headers: { cookie: session.cookie }, protocols: ['svc.events', `csrf.${session.csrf}`] }],
    ['another origin', { headers: { cookie: session.cookie, origin: 'http://evil.test' }, protocols: ['svc.events', `csrf.${session.csrf}`] }],
  ];
  for (const [name, opts] of cases) {
    const res = await refused(main, opts);
    t.equal(res.status, 403, name);
    t.equal(res.body.code, 'forbidden', name);
  }
  const res = await refused(main, { headers: { cookie: 'svc_session=svc_session_unknown', origin: main.url }, protocols: ['svc.events', `csrf.${session.csrf}`] });
  t.equal(res.status, 401, 'an unknown session cookie');
});

t.test('nothing is sent before the subscribe frame', async (t) => {
  const client = await connect(main, { token: main.ownerToken });
  const control = await connect(main, { token: main.ownerToken });
  await control.subscribe();
  const eventId = seed(mainDb, 'message.received', A);
  await control.sawEvent(eventId);
  await sleep(700);
  t.same(client.frames, [], 'no event and no ping before subscribe');
  t.same(await client.subscribe(), { type: 'subscribed' });
  await client.sawEvent(eventId);
  t.same(client.frames.map((f) => f.type), ['subscribed', 'event'], 'the answer comes first, then the event appended after the connection opened');
});

t.test('the server answers with subscribed and streams the stored event objects exactly', async (t) => {
  const client = await connect(main, { token: main.ownerToken });
  const subscribed = await client.subscribe({ event_types: ['message.received', 'draft.created'], inbox_ids: ['A@X.test', B] });
  t.same(subscribed, { type: 'subscribed', event_types: ['message.received', 'draft.created'], inbox_ids: [A, B] }, 'the filters are echoed, inbox ids normalized');
  const eventId = seed(mainDb, 'message.received', A);
  await client.sawEvent(eventId);
  const raw = client.raw[client.raw.length - 1];
  t.equal(raw, storedPayload(mainDb, eventId), 'the frame is the stored event JSON');
  t.match(client.events()[0], { type: 'event', event_type: 'message.received', event_id: eventId, message: { inbox_id: A }, thread: { inbox_id: A } });
});

t.test('without last_event_id, the stream starts with events after the connection opened', async (t) => {
  const before = seed(mainDb, 'message.received', A);
  const client = await connect(main, { token: main.ownerToken });
  const between = seed(mainDb, 'message.received', A);
  await client.subscribe();
  const after = seed(mainDb, 'message.received', A);
  await client.sawEvent(after);
  t.same(client.eventIds(), [between, after], `${before} is older than the connection`);
});

t.test('an omitted filter means everything the credential can see', async (t) => {
  const owner = await connect(main, { token: main.ownerToken });
  await owner.subscribe();
  const types = ['message.received', 'message.received.spam', 'message.sent', 'draft.created', 'domain.verified', 'inbound.quarantined', 'oauth.authorized'];
  const ids = types.map((type) => seed(mainDb, type, type.startsWith('message') || type.startsWith('draft') ? B : null));
  await owner.sawEvent(ids[ids.length - 1]);
  t.same(owner.eventIds(), ids, 'the owner sees every type, in log order');
});

t.test('event_types and inbox_ids filters', async (t) => {
  const byType = await connect(main, { token: main.ownerToken });
  await byType.subscribe({ event_types: ['draft.created', 'domain.verified'] });
  const byInbox = await connect(main, { token: main.ownerToken });
  await byInbox.subscribe({ inbox_ids: [B] });
  const both = await connect(main, { token: main.ownerToken });
  await both.subscribe({ event_types: ['message.received'], inbox_ids: [A] });
  const ids = {
    receivedA: seed(mainDb, 'message.received', A),
    receivedB: seed(mainDb, 'message.received', B),
    draftA: seed(mainDb, 'draft.created', A),
    draftB: seed(mainDb, 'draft.created', B),
    domain: seed(mainDb, 'domain.verified', null),
    sentinelA: seed(mainDb, 'message.received', A),
    sentinelB: seed(mainDb, 'draft.created', B),
  };
  await byType.sawEvent(ids.sentinelB);
  await byInbox.sawEvent(ids.sentinelB);
  await both.sawEvent(ids.sentinelA);
  t.same(byType.eventIds(), [ids.draftA, ids.draftB, ids.domain, ids.sentinelB], 'only the listed types');
  t.same(byInbox.eventIds(), [ids.receivedB, ids.draftB, ids.sentinelB], 'only the listed inboxes; events of no inbox do not match an inbox filter');
  t.same(both.eventIds(), [ids.receivedA, ids.sentinelA], 'both filters apply together');
});

t.test('an empty array matches nothing', async (t) => {
  const control = await connect(main, { token: main.ownerToken });
  await control.subscribe();
  const noTypes = await connect(main, { token: main.ownerToken });
  t.same(await noTypes.subscribe({ event_types: [] }), { type: 'subscribed', event_types: [] });
  const noInboxes = await connect(main, { token: main.ownerToken });
  await noInboxes.subscribe({ inbox_ids: [] });
  const ids = [seed(mainDb, 'message.received', A), seed(mainDb, 'draft.created', B), seed(mainDb, 'domain.verified', null)];
  await control.sawEvent(ids[2]);
  await sleep(300);
  t.same(noTypes.events(), [], 'event_types: []');
  t.same(noInboxes.events(), [], 'inbox_ids: []');
  t.equal(noTypes.closedWith, null, 'still connected');
});

t.test('agents see only their inbox scope and the types their permissions allow (§6.2 "Visible to")', async (t) => {
  const messages = await createApiKey(main, { permissions: ['message_read'], inboxIds: [A] });
  const drafts = await createApiKey(main, { permissions: ['draft_read'] });
  const spam = await createApiKey(main, { permissions: ['message_read', 'label_spam_read'] });
  const everything = await createApiKey(main, { permissions: ALL_READ });
  const c = {
    messages: await connect(main, { token: messages.secret }),
    drafts: await connect(main, { token: drafts.secret }),
    spam: await connect(main, { token: spam.secret }),
    everything: await connect(main, { token: everything.secret }),
  };
  for (const client of Object.values(c)) await client.subscribe();
  const ids = {
    receivedA: seed(mainDb, 'message.received', A),
    receivedB: seed(mainDb, 'message.received', B),
    deliveredA: seed(mainDb, 'message.delivered', A),
    spamA: seed(mainDb, 'message.received.spam', A),
    blockedA: seed(mainDb, 'message.received.blocked', A),
    unauthenticatedA: seed(mainDb, 'message.received.unauthenticated', A),
    draftA: seed(mainDb, 'draft.created', A),
    domain: seed(mainDb, 'domain.verified', null),
    quarantine: seed(mainDb, 'inbound.quarantined', null),
    oauth: seed(mainDb, 'oauth.authorized', null),
    sentinel: seed(mainDb, 'draft.sent', A),
    sentinelMessage: seed(mainDb, 'message.sent', A),
  };
  for (const client of Object.values(c)) await client.sawEvent(client === c.drafts ? ids.sentinel : ids.sentinelMessage);
  t.same(c.messages.eventIds(), [ids.receivedA, ids.deliveredA, ids.sentinelMessage], 'message_read in scope A: no B, no hidden variants, no drafts, nothing owner-only');
  t.same(c.drafts.eventIds(), [ids.draftA, ids.sentinel], 'draft_read: draft.* only');
  t.same(c.spam.eventIds(), [ids.receivedA, ids.receivedB, ids.deliveredA, ids.spamA, ids.sentinelMessage], 'label_spam_read opens message.received.spam only');
  t.same(
    c.everything.eventIds(),
    [ids.receivedA, ids.receivedB, ids.deliveredA, ids.spamA, ids.blockedA, ids.unauthenticatedA, ids.draftA, ids.sentinel, ids.sentinelMessage],
    'every read permission: still no domain, inbound or oauth events',
  );
});

t.test('to resume, pass last_event_id in the frame: later events are replayed, then the stream continues live', async (t) => {
  const first = seed(mainDb, 'message.received', A);
  // More than one read batch, with live appends landing while the replay runs: no gap, no duplicate.
  const backlog = mainDb.transaction(() => Array.from({ length: 250 }, (_, i) => seed(mainDb, i % 2 ? 'draft.created' : 'message.received', i % 3 ? A : B)))();
  const client = await connect(main, { token: main.ownerToken });
  const subscribed = await client.subscribe({ last_event_id: first });
  t.same(subscribed, { type: 'subscribed', last_event_id: first });
  const live = Array.from({ length: 20 }, () => seed(mainDb, 'message.sent', A));
  await client.sawEvent(live[live.length - 1]);
  t.same(client.eventIds(), [...backlog, ...live]);
});

t.test('to resume, pass ?last_event_id= in the URL', async (t) => {
  const first = seed(mainDb, 'message.received', A);
  const second = seed(mainDb, 'message.received', B);
  const client = await connect(main, { token: main.ownerToken, query: `?last_event_id=${first}` });
  t.same(await client.subscribe(), { type: 'subscribed', last_event_id: first });
  const live = seed(mainDb, 'message.received', A);
  await client.sawEvent(live);
  t.same(client.eventIds(), [second, live]);
  const same = await connect(main, { token: main.ownerToken, query: `?last_event_id=${first}` });
  await same.subscribe({ last_event_id: first });
  await same.sawEvent(live);
  t.same(same.eventIds(), [second, live], 'the same id in the URL and the frame is fine');
  const different = await connect(main, { token: main.ownerToken, query: `?last_event_id=${first}` });
  different.send({ type: 'subscribe', last_event_id: second });
  t.equal(await different.closeCode(), 1008, 'two different resume points close the connection');
});

t.test('the replay uses current permissions and filters', async (t) => {
  const key = await createApiKey(main, { permissions: ['message_read', 'draft_read'], inboxIds: [A, B] });
  const from = seed(mainDb, 'message.received', A);
  const ids = [seed(mainDb, 'message.received', A), seed(mainDb, 'message.received', B), seed(mainDb, 'draft.created', A), seed(mainDb, 'message.received.spam', A), seed(mainDb, 'message.sent', A)];
  await updateApiKey(main, key.id, { permissions: ['message_read'] });
  // SQL: no route narrows a key's scope (PATCH changes only name, permissions and send policy).
  narrowApiKeyScope(mainDb, key.id, [A]);
  const client = await connect(main, { token: key.secret });
  await client.subscribe({ last_event_id: from, event_types: ['message.received', 'message.received.spam', 'draft.created'] });
  const sentinel = seed(mainDb, 'message.received', A);
  await client.sawEvent(sentinel);
  t.same(client.eventIds(), [ids[0], sentinel], 'B is out of scope now, drafts and spam are not readable, message.sent is filtered out');
});

t.test('an unknown or expired ID in the URL returns 400 validation_error', async (t) => {
  const unknown = await refused(main, { token: main.ownerToken, query: '?last_event_id=evt_00000000-0000-7000-8000-000000000000' });
  t.equal(unknown.status, 400);
  t.match(unknown.body, { name: 'ValidationError', code: 'validation_error', message: /last_event_id/, fix: String });
  const old = seed(mainDb, 'message.received', A);
  // SQL: time travel, no route ages an event; waiting 31 days is not a test.
  mainDb.prepare('UPDATE events SET created_at = ? WHERE event_id = ?').run(new Date(Date.now() - 31 * 24 * 3600 * 1000).toISOString(), old);
  t.ok(pruneEvents(mainDb) >= 1, 'retention removed the 31-day-old event');
  const expired = await refused(main, { token: main.ownerToken, query: `?last_event_id=${old}` });
  t.equal(expired.status, 400);
  t.equal(expired.body.code, 'validation_error');
  t.equal((await refused(main, { token: main.ownerToken, query: '?last_event_id=' })).status, 400, 'an empty id');
  t.equal((await refused(main, { token: main.ownerToken, query: '?cursor=1' })).status, 400, 'an unknown query parameter');
});

t.test('an unknown resume ID in the frame closes with 1008', async (t) => {
  const client = await connect(main, { token: main.ownerToken });
  client.send({ type: 'subscribe', last_event_id: 'evt_unknown' });
  t.equal(await client.closeCode(), 1008);
  t.same(client.frames, [], 'no subscribed answer');
});

t.test('an invalid frame closes with 1008', async (t) => {
  const invalid: [string, string | Buffer][] = [
    ['not JSON', 'subscribe please'],
    ['not an object', '"subscribe"'],
    ['an unknown frame type', JSON.stringify({ type: 'hello' })],
    ['an unknown field', JSON.stringify({ type: 'subscribe', pod_ids: [] })],
    ['event_types not a list', JSON.stringify({ type: 'subscribe', event_types: 'message.received' })],
    ['an event type that does not exist', JSON.stringify({ type: 'subscribe', event_types: ['message.*'] })],
    ['inbox_ids with a number', JSON.stringify({ type: 'subscribe', inbox_ids: [1] })],
    ['last_event_id not a string', JSON.stringify({ type: 'subscribe', last_event_id: 7 })],
    ['a pong with extra fields', JSON.stringify({ type: 'pong', late: true })],
    ['a binary frame', Buffer.from(JSON.stringify({ type: 'subscribe' }))],
  ];
  for (const [name, frame] of invalid) {
    const client = await connect(main, { token: main.ownerToken });
    client.ws.send(frame);
    t.equal(await client.closeCode(), 1008, name);
  }
});

t.test('a second subscribe closes with 1008', async (t) => {
  const client = await connect(main, { token: main.ownerToken });
  await client.subscribe();
  client.send({ type: 'subscribe' });
  t.equal(await client.closeCode(), 1008);
  t.equal(client.frames.filter((f) => f.type === 'subscribed').length, 1);
});

t.test('a client frame over 8,192 characters closes with 1009', async (t) => {
  const base = JSON.stringify({ type: 'subscribe' });
  const exact = await connect(main, { token: main.ownerToken });
  exact.send(base + ' '.repeat(8_192 - base.length));
  await until('an answer', () => exact.frames.length > 0 || exact.closedWith !== null);
  t.equal(exact.frames[0]?.type, 'subscribed', 'exactly 8,192 characters is accepted');

  const multibyte = await connect(main, { token: main.ownerToken });
  const inboxIds = Array.from({ length: 30 }, (_, i) => `${'é'.repeat(240)}${i}@x.test`);
  const frame = JSON.stringify({ type: 'subscribe', inbox_ids: inboxIds });
  t.ok(frame.length <= 8_192 && Buffer.byteLength(frame) > 8_192, 'under the limit in characters, over it in bytes');
  multibyte.send(frame);
  await until('an answer', () => multibyte.frames.length > 0 || multibyte.closedWith !== null);
  t.equal(multibyte.frames[0]?.type, 'subscribed', 'characters are counted, not bytes');

  const over = await connect(main, { token: main.ownerToken });
  over.send(base + ' '.repeat(8_193 - base.length));
  t.equal(await over.closeCode(), 1009, '8,193 characters');
  const afterSubscribe = await connect(main, { token: main.ownerToken });
  await afterSubscribe.subscribe();
  afterSubscribe.send(JSON.stringify({ type: 'pong' }) + ' '.repeat(9_000));
  t.equal(await afterSubscribe.closeCode(), 1009, 'any frame, also after subscribing');
  const huge = await connect(main, { token: main.ownerToken });
  huge.send('x'.repeat(200_000));
  t.equal(await huge.closeCode(), 1009, 'a frame far over the limit');
});

t.test('more than 1 MiB waiting for a slow client closes with 1013', async (t) => {
  const slow = await connect(main, { token: main.ownerToken });
  await slow.subscribe({ event_types: ['message.received'] });
  // A client that reads everything: once it has an event, the service has handed that event to
  // every subscriber, the slow one included. The waits below follow the service, not the clock,
  // so a loaded machine cannot make the slow client's buffer look empty.
  const witness = await connect(main, { token: main.ownerToken });
  await witness.subscribe({ event_types: ['message.received'] });
  slow.ws.pause();
  // Enough to fill the kernel's socket buffers and leave the server's own buffer backed up...
  const burst = mainDb.transaction(() => Array.from({ length: 48 }, () => seed(mainDb, 'message.received', A, 256 * 1024)))();
  await witness.sawEvent(burst[burst.length - 1], 30_000);
  // ...then more events arrive for a client that is not reading.
  const more: string[] = [];
  for (let i = 0; i < 4; i++) {
    more.push(seed(mainDb, 'message.received', A, 256 * 1024));
    await witness.sawEvent(more[i], 30_000);
    await sleep(100);
  }
  witness.ws.close();
  slow.ws.resume();
  t.equal(await slow.closeCode(10_000), 1013);
  t.ok(slow.events().length < burst.length + more.length, `closed before everything was sent (${slow.events().length} of ${burst.length + more.length})`);
  t.same(slow.eventIds(), [...burst, ...more].slice(0, slow.events().length), 'what arrived came in order');

  const reader = await connect(main, { token: main.ownerToken, query: `?last_event_id=${burst[0]}` });
  await reader.subscribe({ event_types: ['message.received'] });
  await reader.sawEvent(more[more.length - 1], 10_000);
  t.equal(reader.events().length, burst.length - 1 + more.length, 'a client that keeps reading gets a backlog of many MiB without a 1013');
  t.equal(reader.closedWith, null);
});

t.test('a revoked credential closes with 1008 at the next delivery', async (t) => {
  const key = await createApiKey(main, { permissions: ['message_read'] });
  const client = await connect(main, { token: key.secret });
  await client.subscribe();
  const before = seed(mainDb, 'message.received', A);
  await client.sawEvent(before);
  await deleteApiKey(main, key.id);
  const after = seed(mainDb, 'message.received', A);
  t.equal(await client.closeCode(), 1008);
  t.same(client.eventIds(), [before], `${after} was not delivered`);
});

t.test('lost read permission closes with 1008 at the next delivery', async (t) => {
  const key = await createApiKey(main, { permissions: ['message_read', 'webhook_read'] });
  const client = await connect(main, { token: key.secret });
  await client.subscribe();
  await updateApiKey(main, key.id, { permissions: ['webhook_read'] });
  seed(mainDb, 'message.received', A);
  t.equal(await client.closeCode(), 1008);
  t.same(client.events(), []);
});

t.test('every event is filtered by the current scope and permissions at delivery time', async (t) => {
  const key = await createApiKey(main, { permissions: ['message_read', 'draft_read'], inboxIds: [A, B] });
  const client = await connect(main, { token: key.secret });
  await client.subscribe();
  const early = seed(mainDb, 'message.received', B);
  await client.sawEvent(early);
  await updateApiKey(main, key.id, { permissions: ['draft_read'] });
  // SQL: no route narrows a key's scope (PATCH changes only name, permissions and send policy).
  narrowApiKeyScope(mainDb, key.id, [A]);
  const ids = [seed(mainDb, 'message.received', A), seed(mainDb, 'draft.created', B), seed(mainDb, 'draft.created', A)];
  await client.sawEvent(ids[2]);
  t.same(client.eventIds(), [early, ids[2]], 'message_read and inbox B were taken away; the stream stays open for drafts in A');
  t.equal(client.closedWith, null);
});

t.test('a browser session that ends closes with 1008', async (t) => {
  const login = await api<{ csrf_token: string }>(main.url, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD } });
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0];
  const client = await connect(main, { headers: { cookie, origin: main.url }, protocols: ['svc.events', `csrf.${login.body.csrf_token}`] });
  await client.subscribe();
  const logout = await api(main.url, 'POST', '/v0/owner/logout', { headers: { cookie, origin: main.url, 'x-svc-csrf': login.body.csrf_token } });
  t.equal(logout.status, 200);
  seed(mainDb, 'domain.verified', null);
  t.equal(await client.closeCode(), 1008);
  t.same(client.events(), []);
});

t.test('the spec timings are the defaults: ping every 20 s, close after 60 s without pong', async (t) => {
  t.same(SPEC_EVENT_STREAM_TIMING, { pingMs: 20_000, pongTimeoutMs: 60_000 });
  t.same(eventStreamTiming({}), SPEC_EVENT_STREAM_TIMING);
  t.same(eventStreamTiming({ SVC_TEST_WS_PING_MS: 'soon', SVC_TEST_WS_PONG_TIMEOUT_MS: '-5' }), SPEC_EVENT_STREAM_TIMING, 'nonsense falls back to the spec');
  const client = await connect(main, { token: main.ownerToken, autoPong: false });
  await client.subscribe();
  await sleep(1_500);
  t.same(client.frames.map((f) => f.type), ['subscribed'], 'no ping within the first seconds under the spec timing');
  t.equal(client.closedWith, null);
});

t.test('the server sends { type: "ping", timestamp } every interval; answering pong keeps the connection', async (t) => {
  const client = await connect(fast, { token: fast.ownerToken, autoPong: true });
  await sleep(FAST.pingMs * 2 + 100);
  t.same(client.frames, [], 'no ping before the subscribe frame');
  await client.subscribe();
  await sleep(FAST.pongTimeoutMs * 2);
  const pings = client.frames.filter((f) => f.type === 'ping');
  t.ok(pings.length >= 6, `${pings.length} pings in ${FAST.pongTimeoutMs * 2} ms`);
  for (const ping of pings) {
    t.same(Object.keys(ping).sort(), ['timestamp', 'type']);
    t.match(ping.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  }
  t.equal(client.closedWith, null, 'still open well past the pong timeout');
});

t.test('no pong closes with 1001', async (t) => {
  const client = await connect(fast, { token: fast.ownerToken, autoPong: false });
  // Timed from before the subscribe frame is sent, the last sign of life: the server cannot have
  // seen it earlier, so a close sooner than the timeout after this is early (a few ms for clocks).
  const sentAt = Date.now();
  await client.subscribe();
  t.equal(await client.closeCode(), 1001);
  const after = client.closedWith!.at - sentAt;
  t.ok(after >= FAST.pongTimeoutMs - 5 && after < FAST.pongTimeoutMs + 1_000, `closed ${after} ms after the last sign of life`);
  t.ok(client.frames.filter((f) => f.type === 'ping').length >= 2, 'pings went unanswered');

  const silent = await connect(fast, { token: fast.ownerToken, autoPong: false });
  t.equal(await silent.closeCode(), 1001, 'a client that never subscribes is closed the same way');
  t.same(silent.frames, []);
});

t.test('a revoked credential closes with 1008 on the ping tick, with no event needed', async (t) => {
  const key = await createApiKey(fast, { permissions: ['draft_read'] });
  const client = await connect(fast, { token: key.secret });
  await client.subscribe();
  await deleteApiKey(fast, key.id);
  t.equal(await client.closeCode(FAST.pingMs * 4), 1008);
});

t.test('an expired credential closes with 1008', async (t) => {
  const key = await createApiKey(fast, { permissions: ['message_read'], expiresAt: new Date(Date.now() + 1_000).toISOString() });
  const client = await connect(fast, { token: key.secret });
  await client.subscribe();
  t.equal(await client.closeCode(3_000), 1008);
  t.ok(client.closedWith!.at >= client.openedAt + 500, 'not before it expired');
});

t.test('on shutdown the sockets close and the service stops promptly', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const listening = await connect(svc, { token: svc.ownerToken });
  await listening.subscribe();
  const stalled = await connect(svc, { token: svc.ownerToken });
  await stalled.subscribe();
  // A peer that never answers the close handshake must not hold the service up.
  stalled.ws.pause();
  const started = Date.now();
  t.equal(await svc.stop(), 0);
  const took = Date.now() - started;
  t.ok(took < 4_000, `stopped in ${took} ms`);
  t.equal(await listening.closeCode(), 1001, 'going away');
  stalled.ws.resume();
  await stalled.closeCode();
});

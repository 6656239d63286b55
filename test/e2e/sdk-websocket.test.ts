/**
 * The AgentMail SDK's event socket and inbox event list, unchanged, against a real
 * `svc serve --local-edge` (issue 35 §3 and §5; docs/websocket.md, docs/agentmail-compat.md):
 * `client.websockets.connect()` opens `GET /v0` (key in the header and as `?api_key=`), subscribes
 * and receives `message.received` for mail sent over SMTP into the edge; when svc closes it, the
 * SDK's own reconnect brings it back to receive again. (The SDK stops reconnecting at its first
 * failed attempt, so a restart of svc longer than its 1–5 s retry delay needs a new connect():
 * docs/websocket.md.)
 * `client.inboxes.events.list` pages the inbox's label changes. Raw frames and answers are
 * validated with the SDK's own schemas with unknown keys failing (svc's documented message
 * extension fields excepted, as in test/api/sdk-conformance.test.ts).
 */
import t from 'tap';
import nodemailer from 'nodemailer';
import { AgentMailClient } from 'agentmail';
import * as serialization from 'agentmail/serialization';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { createApiKey, createInbox, updateApiKey } from '../helpers/seed.js';
import { until } from '../helpers/until.js';

const INBOX = 'agent@sdkws.test';
/** Pings every 200 ms, closed after 1 s without a pong: the SDK must answer ping frames by itself. */
const FAST_PINGS = { SVC_TEST_WS_PING_MS: '200', SVC_TEST_WS_PONG_TIMEOUT_MS: '1000' };
/** svc's documented extension fields of a message (docs/agentmail-compat.md). */
const MESSAGE_EXTENSIONS = ['send_status', 'send_reason', 'extracted', 'manipulation'];

type Parser = { parse(raw: unknown, opts: Record<string, unknown>): { ok: true } | { ok: false; errors: { path: string[]; message: string }[] } };
const STRICT = { unrecognizedObjectKeys: 'fail', allowUnrecognizedUnionMembers: false, allowUnrecognizedEnumValues: false, skipValidation: false, breadcrumbsPrefix: [] };

/** The schema errors that stand, leaving out the documented extension keys under `extensionsAt`. */
function schemaErrors(schema: Parser, raw: unknown, extensionsAt?: string): string[] {
  const parsed = schema.parse(raw, STRICT);
  if (parsed.ok) return [];
  return parsed.errors
    .filter((e) => {
      const key = /Unexpected key "([^"]+)"/.exec(e.message)?.[1];
      return !(key && extensionsAt !== undefined && e.path.slice(0, -1).join('.') === extensionsAt && MESSAGE_EXTENSIONS.includes(key));
    })
    .map((e) => `${e.path.join('.')}: ${e.message}`);
}

const schemas = serialization as unknown as Record<string, Parser>;

let dns: Awaited<ReturnType<typeof startLoopbackDns>>;
let svc: RunningSvc;

t.before(async () => {
  dns = await startLoopbackDns({});
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server], env: FAST_PINGS });
});
t.teardown(async () => {
  await svc.stop();
  dns.close();
});

/** Sends one message over SMTP into the running service's edge (retrying while routing is pushed). */
async function sendMail(to: string, subject: string): Promise<void> {
  const ready = svc.stdoutLines.find((l) => l.event === 'server.ready')!;
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: Number(String(ready.smtp).split(':')[1]), secure: false, ignoreTLS: true });
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await smtp.sendMail({ from: 'Sender <sender@elsewhere.test>', to, subject, text: `This is ${subject}.` });
      return;
    } catch (err) {
      if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

type Received = { type: string; eventType?: string; message?: { subject?: string; messageId?: string } };

t.test('client.websockets.connect() subscribes, receives message.received over SMTP, and reconnects after svc closes it', async (t) => {
  const inbox = await createInbox(svc, INBOX);
  const key = await createApiKey(svc, { permissions: ['message_read'], inboxIds: [inbox] });
  const client = new AgentMailClient({ apiKey: key.secret, baseUrl: svc.url });

  const socket = await client.websockets.connect();
  t.teardown(() => socket.close());
  const parsed: Received[] = [];
  const raw: string[] = [];
  const closes: number[] = [];
  let opens = 0;
  const subscribe = () => socket.sendSubscribe({ type: 'subscribe', eventTypes: ['message.received'], inboxIds: [inbox] });
  socket.on('message', (m) => parsed.push(m as Received));
  socket.on('close', (e) => closes.push((e as { code: number }).code));
  // The SDK calls this on every (re)connect; the first open happened inside connect().
  socket.on('open', () => {
    opens++;
    subscribe();
  });
  socket.socket.addEventListener('message', (e) => raw.push(String((e as { data: unknown }).data)));
  subscribe();

  await until('subscribed', () => parsed.some((m) => m.type === 'subscribed'));
  const subscribed = JSON.parse(raw[0]) as Record<string, unknown>;
  t.same(subscribed, { type: 'subscribed', event_types: ['message.received'], inbox_ids: [inbox] }, 'subscribed echoes the filters');
  t.same(schemaErrors(schemas.Subscribed, subscribed), [], "subscribed matches the SDK's Subscribed");

  // Longer than the pong timeout: the SDK's socket answers svc's ping frames, so it stays open.
  await new Promise((r) => setTimeout(r, 2_500));
  t.same(closes, [], 'no close while the SDK sends nothing but automatic pongs');

  await sendMail(inbox, 'first over smtp');
  const first = await until('message.received', () => parsed.find((m) => m.eventType === 'message.received' && m.message?.subject === 'first over smtp'));
  t.ok(first.message?.messageId, 'the SDK parsed the event, message and all');
  const firstRaw = JSON.parse(raw.find((r) => r.includes('first over smtp'))!) as Record<string, unknown>;
  t.equal(firstRaw.type, 'event');
  t.same(schemaErrors(schemas.MessageReceivedEvent, firstRaw, 'message'), [], "the frame matches the SDK's MessageReceivedEvent");
  t.notOk(raw.some((r) => r.includes('"ping"')), 'no JSON pings: the SDK has no way to answer them');

  // svc closes the socket (the key lost its read permission: 1008), the owner gives it back, and
  // the SDK's own reconnect opens a new socket, which the open handler subscribes again.
  await updateApiKey(svc, key.id, { permissions: ['draft_update'] });
  await until('the close reached the SDK', () => closes.length > 0);
  await updateApiKey(svc, key.id, { permissions: ['message_read'] });
  t.equal(closes[0], 1008, 'closed with 1008 by svc');
  await until('the SDK reconnected and subscribed again', () => opens >= 1 && parsed.filter((m) => m.type === 'subscribed').length >= 2);

  await sendMail(inbox, 'second over smtp');
  await until('message.received after the reconnect', () => parsed.find((m) => m.eventType === 'message.received' && m.message?.subject === 'second over smtp'));
  t.pass('the same SDK socket receives again after the reconnect');
});

t.test('AgentMail subscribe frames: an unknown field gets an error frame and 1008; pod_ids, message.opened and a late subscribe work', async (t) => {
  const key = await createApiKey(svc, { permissions: ['message_read'] });
  const client = new AgentMailClient({ apiKey: key.secret, baseUrl: svc.url });
  const socket = await client.websockets.connect({ reconnectAttempts: 1 });
  const raw: string[] = [];
  const closes: number[] = [];
  socket.socket.addEventListener('message', (e) => raw.push(String((e as { data: unknown }).data)));
  socket.on('close', (e) => closes.push((e as { code: number }).code));
  socket.on('error', () => undefined);
  socket.socket.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'], surprise: true }));
  await until('closed', () => closes.length > 0);
  socket.close();
  t.equal(closes[0], 1008);
  const error = JSON.parse(raw[0]) as Record<string, unknown>;
  t.equal(error.type, 'error');
  t.same(schemaErrors(schemas.Error_, error), [], "the error frame matches the SDK's Error_");

  const pods = await client.websockets.connect({ reconnectAttempts: 1 });
  const podFrames: string[] = [];
  pods.socket.addEventListener('message', (e) => podFrames.push(String((e as { data: unknown }).data)));
  const podCloses: number[] = [];
  pods.on('close', (e) => podCloses.push((e as { code: number }).code));
  // Longer than the pong timeout before subscribing: ping frames flow from the upgrade on.
  await new Promise((r) => setTimeout(r, 2_500));
  t.same(podCloses, [], 'a socket that subscribes late is not closed');
  pods.sendSubscribe({ type: 'subscribe', eventTypes: ['message.received', 'message.opened'], podIds: ['default'] });
  await until('subscribed', () => podFrames.length > 0);
  pods.close();
  t.same(JSON.parse(podFrames[0]), { type: 'subscribed', event_types: ['message.received', 'message.opened'], pod_ids: ['default'] }, "AgentMail's pod_ids and message.opened are accepted");
});

t.test('client.inboxes.events.list pages the inbox label changes, validated by the SDK schema', async (t) => {
  const bodies: string[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    bodies.push(await res.clone().text());
    return res;
  };
  const key = await createApiKey(svc, { permissions: ['message_read', 'message_update'], inboxIds: [INBOX] });
  const client = new AgentMailClient({ apiKey: key.secret, baseUrl: svc.url, maxRetries: 0, fetch: recordingFetch });
  const messages = await client.inboxes.messages.list(INBOX);
  t.equal(messages.messages.length, 2, 'both messages from the first test are stored');
  const target = messages.messages.find((m) => m.subject === 'first over smtp')!;
  await client.inboxes.messages.update(INBOX, target.messageId, { addLabels: ['followup'], removeLabels: ['unread'] });

  const newest = await client.inboxes.events.list(INBOX, { limit: 2 });
  t.same(schemaErrors(schemas.ListInboxEventsResponse, JSON.parse(bodies.at(-1)!)), [], "the answer matches the SDK's ListInboxEventsResponse");
  t.equal(newest.count, 2);
  t.equal(newest.limit, 2);
  t.ok(newest.nextPageToken, 'more pages');
  const top = newest.events.map((e) => `${e.eventType} ${e.label}`).sort();
  t.same(top, ['label.added followup', 'label.removed unread'], 'newest first: the edit just made');
  t.ok(newest.events.every((e) => e.messageId === target.messageId && e.inboxId === INBOX && e.eventAt instanceof Date), 'each names the message, inbox and time');

  // Every page, newest first, then the same log oldest first: the same events in reverse.
  const descending = [...newest.events];
  for (let token = newest.nextPageToken; token; ) {
    const page = await client.inboxes.events.list(INBOX, { limit: 2, pageToken: token });
    t.same(schemaErrors(schemas.ListInboxEventsResponse, JSON.parse(bodies.at(-1)!)), [], 'each page matches the schema');
    descending.push(...page.events);
    token = page.nextPageToken;
  }
  const ascending = await client.inboxes.events.list(INBOX, { limit: 100, ascending: true });
  t.same(ascending.events.map((e) => e.eventId), descending.map((e) => e.eventId).reverse(), 'ascending is the same log, oldest first');
  t.same([...ascending.events.map((e) => e.eventId)].sort(), ascending.events.map((e) => e.eventId), 'event ids sort as the log does');
  const received = ascending.events.filter((e) => e.eventType === 'label.added' && e.label === 'received').map((e) => e.messageId);
  t.same(received.sort(), messages.messages.map((m) => m.messageId).sort(), 'each received message recorded its labels on arrival');
});

t.test("pod_ids filters by each event's pod, and a pod key's socket hears its pod only (docs/pods.md)", async (t) => {
  const owner = { token: svc.ownerToken };
  const pod = await api<{ pod_id: string }>(svc.url, 'POST', '/v0/pods', { ...owner, body: { name: 'socket pod' } });
  t.equal(pod.status, 200, pod.text);
  const podId = pod.body.pod_id;
  t.equal((await api(svc.url, 'POST', `/v0/pods/${podId}/inboxes`, { ...owner, body: { username: 'in-pod', domain: 'sdkws.test' } })).status, 200);
  await createInbox(svc, 'outside@sdkws.test');

  /** A socket subscribed with `podIds` (when given); the subjects of the mail it hears. */
  const listen = async (apiKey: string, podIds?: string[]) => {
    const socket = await new AgentMailClient({ apiKey, baseUrl: svc.url }).websockets.connect({ reconnectAttempts: 1 });
    t.teardown(() => socket.close());
    const heard: Received[] = [];
    socket.on('message', (m) => heard.push(m as Received));
    socket.sendSubscribe({ type: 'subscribe', eventTypes: ['message.received'], ...(podIds ? { podIds } : {}) });
    await until('subscribed', () => heard.some((m) => m.type === 'subscribed'));
    return () => heard.filter((m) => m.eventType === 'message.received').map((m) => m.message?.subject);
  };
  const wide = await createApiKey(svc, { permissions: ['message_read'] });
  const filtered = await listen(wide.secret, [podId]);
  const defaultOnly = await listen(wide.secret, ['default']);
  const podKey = await api<{ api_key: string }>(svc.url, 'POST', `/v0/pods/${podId}/api-keys`, { ...owner, body: { permissions: ['message_read'] } });
  const ofPodKey = await listen(podKey.body.api_key);

  // Outside first: a filter that let it through would deliver it before the pod's mail.
  await sendMail('outside@sdkws.test', 'outside the pod');
  await sendMail('in-pod@sdkws.test', 'inside the pod');
  await until("the pod's mail heard", () => filtered().includes('inside the pod') && ofPodKey().includes('inside the pod') && defaultOnly().includes('outside the pod'));
  t.same(filtered(), ['inside the pod'], 'pod_ids [the pod]: its mail only');
  t.same(ofPodKey(), ['inside the pod'], "a pod key without a filter: its pod's mail only");
  t.same(defaultOnly(), ['outside the pod'], "pod_ids ['default']: the default pod's mail only");
});

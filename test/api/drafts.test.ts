/**
 * Drafts (spec §2.5, §3.2, §4.2, §4.6, §6.2, §8) through a real service: CRUD with the official
 * AgentMail SDK, errors over raw HTTP, the approval flow with events on a real WebSocket, the
 * scheduled-drafts loop, and sends that reach a real SMTP sink configured as the smart host.
 */
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { AgentMailClient } from 'agentmail';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { fixture, seedMail } from '../helpers/mail.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { until } from '../helpers/until.js';

interface DraftBody {
  inbox_id: string;
  draft_id: string;
  client_id: string | null;
  labels: string[];
  to: string[] | null;
  cc: string[] | null;
  bcc: string[] | null;
  reply_to: string[] | null;
  subject: string | null;
  text: string | null;
  preview: string | null;
  attachments: { attachment_id: string; filename: string | null; size: number; content_type: string | null }[];
  in_reply_to: string | null;
  forward_of: string | null;
  references: string[] | null;
  /** The AgentMail SDK's subset of `state`; absent for `draft`, `pending_approval` and `sent`. */
  send_status?: 'scheduled' | 'sending' | 'failed';
  state: string;
  send_reason: string | null;
  send_at: string | null;
  message_id: string | null;
  thread_id: string | null;
  updated_at: string;
  created_at: string;
}
interface DraftList {
  count: number;
  limit: number;
  next_page_token?: string;
  drafts: DraftBody[];
}
interface ErrorBody {
  code: string;
  message: string;
  draft_id?: string;
}

// ---- a real SMTP smart host that keeps what it receives (test/helpers/sink.ts) ----

let sink: Sink;
/** What the sink got, as text, whose raw message contains `needle`. */
const sunkWith = (needle: string) => sink.messages.map((m) => ({ to: m.to, raw: m.raw.toString('utf8') })).filter((m) => m.raw.includes(needle));
const waitForSunk = (needle: string) => until(`a message containing ${needle} at the sink`, () => sunkWith(needle)[0]);

// ---- a real WebSocket event stream ----

type Event = { event_type: string; event_id: string; draft?: { draft_id: string; inbox_id: string; message_id?: string; thread_id?: string; timestamp: string } };
const events: Event[] = [];
let ws: WebSocket;
async function openStream(token: string): Promise<void> {
  ws = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/v0/ws`, { headers: { authorization: `Bearer ${token}` } });
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => {
      ws.send(JSON.stringify({ type: 'subscribe' }));
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { type: string } & Event;
        if (frame.type === 'subscribed') resolve();
        else if (frame.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
        else if (frame.type === 'event') events.push(frame);
      });
    });
  });
}
const draftEvents = (type: string, draftId: string) => events.filter((e) => e.event_type === type && e.draft?.draft_id === draftId);
const nextEvent = (type: string, draftId: string): Promise<Event> =>
  until(
    () => `${type} for ${draftId}; saw ${events.map((e) => e.event_type).join(', ')}`,
    () => draftEvents(type, draftId)[0],
  );

// ---- the service ----

let svc: RunningSvc;
let db: Db;
let inboxCounter = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const enc = encodeURIComponent;

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  sink = await startSink();
  const res = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  if (res.status !== 200) throw new Error(`transport: ${res.status} ${res.text}`);
  await openStream(svc.ownerToken);
});
t.teardown(async () => {
  ws.close();
  db.close();
  await svc.stop();
  await sink.close();
});

const newInbox = () => createInbox(svc, `drafts${++inboxCounter}@example.com`);
const DRAFT_ALL = ['draft_read', 'draft_create', 'draft_update', 'draft_delete', 'draft_send'];
const key = async (permissions: string[], opts: { inboxIds?: string[]; sendPolicy?: 'direct' | 'approval' | 'read_only' } = {}) =>
  (await createApiKey(svc, { permissions, inboxIds: opts.inboxIds ?? null, sendPolicy: opts.sendPolicy ?? 'direct' })).secret;
const sdk = (token: string) => new AgentMailClient({ baseUrl: svc.url, apiKey: token, maxRetries: 0, timeoutInSeconds: 15 });
const draftsPath = (inbox: string, rest = '') => `/v0/inboxes/${enc(inbox)}/drafts${rest}`;
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

async function createDraft(inbox: string, body: Record<string, unknown>, token = svc.ownerToken): Promise<DraftBody> {
  const res = await api<DraftBody>(svc.url, 'POST', draftsPath(inbox), { token, body });
  if (res.status !== 200) throw new Error(`create: ${res.status} ${res.text}`);
  return res.body;
}
const getDraft = async (inbox: string, draftId: string) => (await api<DraftBody>(svc.url, 'GET', draftsPath(inbox, `/${draftId}`), { token: svc.ownerToken })).body;
async function pollDraft(inbox: string, draftId: string, status: string): Promise<DraftBody> {
  let last: DraftBody | undefined;
  return until(
    () => `draft ${draftId} to be ${status}; it is ${last?.state} (${last?.send_reason})`,
    async () => {
      last = await getDraft(inbox, draftId);
      return last.state === status ? last : undefined;
    },
  );
}
/** A draft awaiting approval, made the way §3.2 says: an `approval`-policy send. */
async function approvalDraft(inbox: string, subject: string): Promise<string> {
  const agent = await key(['message_send', 'draft_read'], { sendPolicy: 'approval' });
  const res = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: agent, body: { to: 'ann@example.net', subject, text: 'Please approve.' } });
  if (res.status !== 403 || !res.body.draft_id) throw new Error(`approval send: ${res.status} ${res.text}`);
  return res.body.draft_id;
}
const expectError = (t: Test, res: { status: number; body: unknown }, status: number, code: string, what: string) => {
  t.equal(res.status, status, `${what}: status`);
  t.equal((res.body as ErrorBody).code, code, `${what}: code`);
};

t.test('SDK: create, get, list, update and delete a draft', async (t) => {
  const inbox = await newInbox();
  const client = sdk(await key(DRAFT_ALL));
  const created = await client.inboxes.drafts.create(inbox, {
    to: ['Ann <ann@example.net>'],
    subject: 'Plan',
    text: 'Hello Ann',
    labels: ['project'],
    attachments: [{ filename: 'notes.txt', contentType: 'text/plain', content: b64('the notes') }],
  });
  t.match(created, { inboxId: inbox, draftId: String, to: ['Ann <ann@example.net>'], subject: 'Plan', text: 'Hello Ann', labels: ['project'], preview: 'Hello Ann' });
  // The SDK's enum has no name for an unsent draft: no sendStatus; svc's `state` reaches the SDK user as an extra key.
  t.equal(created.sendStatus, undefined, 'a draft without send_at has no SDK send status');
  t.equal((created as unknown as { state: string }).state, 'draft', 'a draft without send_at is in state draft');
  t.equal(created.attachments?.length, 1);
  t.match(created.attachments?.[0], { filename: 'notes.txt', size: 9, contentType: 'text/plain' });

  const got = await client.inboxes.drafts.get(inbox, created.draftId);
  t.equal(got.subject, 'Plan');
  const listed = await client.inboxes.drafts.list(inbox);
  t.equal(listed.count, 1);
  t.same(
    listed.drafts.map((d) => d.draftId),
    [created.draftId],
  );
  t.ok((await client.drafts.list()).drafts.some((d) => d.draftId === created.draftId), 'instance-wide list');
  t.equal((await client.drafts.get(created.draftId)).subject, 'Plan', 'instance-wide read');

  const updated = await client.inboxes.drafts.update(inbox, created.draftId, { subject: 'Plan v2', cc: ['bob@example.net'], addLabels: ['urgent'], removeLabels: ['project'] });
  t.match(updated, { subject: 'Plan v2', cc: ['bob@example.net'], labels: ['urgent'], to: ['Ann <ann@example.net>'], text: 'Hello Ann' });
  const cleared = await client.inboxes.drafts.update(inbox, created.draftId, { cc: null, text: null });
  t.notOk(cleared.cc, 'null clears cc');
  t.notOk(cleared.text, 'null clears text');

  await client.inboxes.drafts.delete(inbox, created.draftId);
  const gone = await api(svc.url, 'GET', draftsPath(inbox, `/${created.draftId}`), { token: svc.ownerToken });
  expectError(t, gone, 404, 'not_found', 'deleted draft');
  const again = await api(svc.url, 'DELETE', draftsPath(inbox, `/${created.draftId}`), { token: svc.ownerToken });
  expectError(t, again, 404, 'not_found', 'deleting twice');
});

t.test('recipients take a single string; list filters by labels and time, pages ascending, stale tokens', async (t) => {
  const inbox = await newInbox();
  const single = await createDraft(inbox, { to: 'a@example.net, B <b@example.net>', labels: 'one' });
  t.same(single.to, ['a@example.net', 'B <b@example.net>']);
  t.same(single.labels, ['one']);
  await sleep(5);
  const second = await createDraft(inbox, { text: 'no recipients yet', labels: ['two'] });
  t.same(second.to, null, 'a draft may have no recipients');
  await sleep(5);
  const third = await createDraft(inbox, { subject: 'third', labels: ['one', 'two'] });

  const ids = async (query: string) => {
    const res = await api<DraftList>(svc.url, 'GET', draftsPath(inbox, `?${query}`), { token: svc.ownerToken });
    t.equal(res.status, 200, query);
    return res.body.drafts.map((d) => d.draft_id);
  };
  t.same(await ids(''), [third.draft_id, second.draft_id, single.draft_id], 'newest first');
  t.same(await ids('labels=one'), [third.draft_id, single.draft_id]);
  t.same(await ids('labels=one&labels=two'), [third.draft_id]);
  t.same(await ids(`labels=${enc('["two"]')}`), [third.draft_id, second.draft_id], 'the SDK’s JSON-encoded arrays');
  t.same(await ids(`after=${enc(single.updated_at)}`), [third.draft_id, second.draft_id]);
  t.same(await ids(`before=${enc(third.updated_at)}`), [second.draft_id, single.draft_id]);

  const first = await api<DraftList>(svc.url, 'GET', draftsPath(inbox, '?ascending=true&limit=2'), { token: svc.ownerToken });
  t.match(first.body, { count: 2, limit: 2, next_page_token: String });
  t.same(
    first.body.drafts.map((d) => d.draft_id),
    [single.draft_id, second.draft_id],
  );
  const next = await api<DraftList>(svc.url, 'GET', draftsPath(inbox, `?ascending=true&limit=2&page_token=${enc(first.body.next_page_token!)}`), { token: svc.ownerToken });
  t.same(
    next.body.drafts.map((d) => d.draft_id),
    [third.draft_id],
  );
  t.notOk(next.body.next_page_token);
  const stale = await api(svc.url, 'GET', draftsPath(inbox, `?limit=2&page_token=${enc(first.body.next_page_token!)}`), { token: svc.ownerToken });
  expectError(t, stale, 409, 'page_token_stale', 'token reused with other filters');
  const otherCaller = await api(svc.url, 'GET', draftsPath(inbox, `?ascending=true&limit=2&page_token=${enc(first.body.next_page_token!)}`), { token: await key(['draft_read']) });
  expectError(t, otherCaller, 409, 'page_token_stale', 'token reused by another caller');
  const bad = await api(svc.url, 'GET', draftsPath(inbox, '?limit=101'), { token: svc.ownerToken });
  expectError(t, bad, 400, 'validation_error', 'limit over 100');
});

t.test('send_status filter (svc extension): only drafts in the named states, on both list forms', async (t) => {
  const inbox = await newInbox();
  const plain = await createDraft(inbox, { subject: 'plain', text: 'x' });
  const scheduled = await createDraft(inbox, { to: ['a@example.net'], subject: 'later', text: 'x', send_at: new Date(Date.now() + 3_600_000).toISOString() });
  t.equal(plain.state, 'draft');
  t.not(scheduled.state, 'draft', 'a draft with send_at is in another state');
  const ids = async (path: string) => {
    const res = await api<DraftList>(svc.url, 'GET', path, { token: svc.ownerToken });
    t.equal(res.status, 200, path);
    return res.body.drafts.map((d) => d.draft_id);
  };
  t.same(await ids(draftsPath(inbox, '?send_status=draft')), [plain.draft_id]);
  t.same(await ids(draftsPath(inbox, `?send_status=${scheduled.state}`)), [scheduled.draft_id]);
  t.same(await ids(draftsPath(inbox, `?send_status=draft&send_status=${scheduled.state}`)), [scheduled.draft_id, plain.draft_id], 'repeated: either state');
  const everywhere = await ids(`/v0/drafts?send_status=${scheduled.state}&limit=100`);
  t.ok(everywhere.includes(scheduled.draft_id) && !everywhere.includes(plain.draft_id), 'the instance-wide list filters too');
  const bad = await api(svc.url, 'GET', draftsPath(inbox, '?send_status=waiting'), { token: svc.ownerToken });
  expectError(t, bad, 400, 'validation_error', 'an unknown state');
});

t.test('send_status is what the AgentMail SDK can read of each state; state is svc’s own, in every answer', async (t) => {
  const inbox = await newInbox();
  const plain = await createDraft(inbox, { subject: 'mapping draft', text: 'x' });
  const pendingId = await approvalDraft(inbox, 'mapping pending');
  const scheduled = await createDraft(inbox, { to: ['a@example.net'], subject: 'mapping scheduled', text: 'x', send_at: new Date(Date.now() + 3_600_000).toISOString() });
  // `sending` lasts only the milliseconds of a send and has no route; set directly to read how it is shown.
  const sending = await createDraft(inbox, { to: ['a@example.net'], subject: 'mapping sending', text: 'x', send_at: new Date(Date.now() + 3_600_000).toISOString() });
  db.prepare("UPDATE drafts SET send_status = 'sending' WHERE draft_id = ?").run(sending.draft_id);
  const toSend = await createDraft(inbox, { to: ['a@example.net'], subject: 'mapping sent', text: 'x' });
  t.equal((await api(svc.url, 'POST', draftsPath(inbox, `/${toSend.draft_id}/send`), { token: svc.ownerToken, body: {} })).status, 200);
  const rejectId = await approvalDraft(inbox, 'mapping rejected');
  const rejected = await api<DraftBody>(svc.url, 'POST', draftsPath(inbox, `/${rejectId}/reject`), { token: svc.ownerToken, body: { reason: 'no' } });
  t.match(rejected.body, { state: 'rejected', send_status: 'failed' }, 'the reject answer');
  const pausedInbox = await newInbox();
  t.equal((await api(svc.url, 'PATCH', `/v0/inboxes/${enc(pausedInbox)}`, { token: svc.ownerToken, body: { status: 'paused' } })).status, 200);
  const failing = await createDraft(pausedInbox, { to: ['a@example.net'], subject: 'mapping failed', text: 'x', send_at: new Date().toISOString() });
  await pollDraft(pausedInbox, failing.draft_id, 'failed');

  const expected: [string, string, string, string | undefined][] = [
    [inbox, plain.draft_id, 'draft', undefined],
    [inbox, pendingId, 'pending_approval', undefined],
    [inbox, scheduled.draft_id, 'scheduled', 'scheduled'],
    [inbox, sending.draft_id, 'sending', 'sending'],
    [inbox, toSend.draft_id, 'sent', undefined],
    [inbox, rejectId, 'rejected', 'failed'],
    [pausedInbox, failing.draft_id, 'failed', 'failed'],
  ];
  const listed = new Map<string, DraftBody>();
  for (const path of [draftsPath(inbox), draftsPath(pausedInbox), '/v0/drafts?limit=100']) {
    const page = await api<DraftList>(svc.url, 'GET', path, { token: svc.ownerToken });
    for (const d of page.body.drafts) listed.set(`${path}|${d.draft_id}`, d);
  }
  for (const [inboxId, draftId, state, sendStatus] of expected) {
    const answers: [string, DraftBody | undefined][] = [
      ['get', await getDraft(inboxId, draftId)],
      ['instance-wide get', (await api<DraftBody>(svc.url, 'GET', `/v0/drafts/${draftId}`, { token: svc.ownerToken })).body],
      ['list item', listed.get(`${draftsPath(inboxId)}|${draftId}`)],
      ['instance-wide list item', listed.get(`/v0/drafts?limit=100|${draftId}`)],
    ];
    for (const [form, d] of answers) {
      t.equal(d?.state, state, `${state}: ${form} state`);
      if (sendStatus === undefined) t.notOk(d && 'send_status' in d, `${state}: ${form} has no send_status`);
      else t.equal(d?.send_status, sendStatus, `${state}: ${form} send_status is ${sendStatus}`);
    }
  }
  // The filter keeps svc's own state names: rejected and failed stay apart.
  const filtered = async (state: string) =>
    (await api<DraftList>(svc.url, 'GET', draftsPath(inbox, `?send_status=${state}`), { token: svc.ownerToken })).body.drafts.map((d) => d.draft_id);
  t.same(await filtered('pending_approval'), [pendingId]);
  t.same(await filtered('rejected'), [rejectId]);
  t.same(await filtered('failed'), [], 'a rejected draft is not in the failed state');
});

t.test('client_id: repeating a create in the same inbox returns the existing draft, with no second event', async (t) => {
  const inbox = await newInbox();
  const first = await createDraft(inbox, { client_id: 'plan-1', subject: 'First' });
  const again = await api<DraftBody>(svc.url, 'POST', draftsPath(inbox), { token: svc.ownerToken, body: { client_id: 'plan-1', subject: 'Second' } });
  t.equal(again.status, 200);
  t.equal(again.body.draft_id, first.draft_id);
  t.equal(again.body.subject, 'First', 'the existing draft, unchanged');
  t.equal(again.body.client_id, 'plan-1');
  await nextEvent('draft.created', first.draft_id);
  await sleep(200);
  t.equal(draftEvents('draft.created', first.draft_id).length, 1, 'one draft.created');
  const otherInbox = await createDraft(await newInbox(), { client_id: 'plan-1', subject: 'Elsewhere' });
  t.not(otherInbox.draft_id, first.draft_id, 'client_id is per inbox');
  const list = await api<DraftList>(svc.url, 'GET', draftsPath(inbox), { token: svc.ownerToken });
  t.equal(list.body.count, 1);
});

t.test('a reply draft derives recipients, subject and references; sending it threads the reply', async (t) => {
  const inbox = await newInbox();
  await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox });
  const reply = await createDraft(inbox, { in_reply_to: 'multi-1@example.org', text: 'Thanks, Bob.' });
  t.match(reply, {
    to: ['Bob Builder <bob@example.org>'],
    cc: null,
    subject: 'Re: Site photos and invoice',
    in_reply_to: '<multi-1@example.org>',
    references: ['<multi-1@example.org>'],
    forward_of: null,
  });
  const all = await createDraft(inbox, { in_reply_to: '<multi-1@example.org>', reply_all: true, text: 'Thanks, all.' });
  t.same(all.to, ['Bob Builder <bob@example.org>', 'agent@example.com'], 'reply-all adds the original To');
  t.same(all.cc, ['Carol <carol@example.org>'], 'and Cc');
  const own = await createDraft(inbox, { in_reply_to: '<multi-1@example.org>', to: ['other@example.net'], subject: 'My subject', text: 'x' });
  t.match(own, { to: ['other@example.net'], subject: 'My subject' }, 'given to and subject are kept');

  const sent = await api<{ message_id: string; thread_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${reply.draft_id}/send`), { token: svc.ownerToken, body: {} });
  t.equal(sent.status, 200, sent.text);
  const mail = await waitForSunk('Thanks, Bob.');
  t.same(mail.to, ['bob@example.org']);
  t.match(mail.raw, /In-Reply-To: <multi-1@example\.org>/);
  t.match(mail.raw, /Subject: Re: Site photos and invoice/);
  const message = await api<{ thread_id: string }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc('<multi-1@example.org>')}`, { token: svc.ownerToken });
  t.equal(sent.body.thread_id, message.body.thread_id, 'the reply joined the original thread');
  t.match(await getDraft(inbox, reply.draft_id), { state: 'sent', message_id: sent.body.message_id, thread_id: sent.body.thread_id });
});

t.test('a plain draft with references is sent with them and joins the thread they name', async (t) => {
  const inbox = await newInbox();
  await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox });
  const draft = await createDraft(inbox, { to: ['bob@example.org'], subject: 'Following up', text: 'Following up on the photos.', references: ['multi-1@example.org'] });
  t.same(draft.references, ['<multi-1@example.org>']);
  t.equal(draft.in_reply_to, null);
  const sent = await api<{ message_id: string; thread_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/send`), { token: svc.ownerToken, body: {} });
  t.equal(sent.status, 200, sent.text);
  const mail = await waitForSunk('Following up on the photos.');
  t.match(mail.raw, /References: <multi-1@example\.org>/);
  const original = await api<{ thread_id: string }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc('<multi-1@example.org>')}`, { token: svc.ownerToken });
  t.equal(sent.body.thread_id, original.body.thread_id);
});

t.test('draft send under the approval policy asks the owner instead, once per unapproved draft', async (t) => {
  const inbox = await newInbox();
  const agent = await key(DRAFT_ALL, { sendPolicy: 'approval' });
  const draft = await createDraft(inbox, { to: ['ann@example.net'], subject: 'Agent draft send', text: 'x' }, agent);
  t.equal(draft.state, 'draft');
  const res = await api<ErrorBody>(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/send`), { token: agent, body: {} });
  expectError(t, res, 403, 'approval_required', 'draft send by an approval-policy credential');
  t.equal(res.body.draft_id, draft.draft_id, 'the same draft now waits');
  t.equal((await getDraft(inbox, draft.draft_id)).state, 'pending_approval');
  await nextEvent('draft.approval_required', draft.draft_id);
  const approved = await api<{ message_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/approve`), { token: svc.ownerToken });
  t.equal(approved.status, 200, approved.text);
  await waitForSunk('Agent draft send');
});

t.test('a forward draft keeps the caller’s subject choice and sends the original attachments', async (t) => {
  const inbox = await newInbox();
  await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox });
  const client = sdk(await key([...DRAFT_ALL, 'message_read']));
  const forward = await client.inboxes.drafts.create(inbox, { forwardOf: '<multi-1@example.org>', to: ['fwd-target@example.net'], text: 'FYI, forwarded.' });
  t.equal(forward.forwardOf, '<multi-1@example.org>');
  t.notOk(forward.subject, 'no subject stored: `Fwd: …` is derived when it is sent');
  const sent = await client.inboxes.drafts.send(inbox, forward.draftId, {});
  t.match(sent, { messageId: String, threadId: String });
  const mail = await waitForSunk('FYI, forwarded.');
  t.same(mail.to, ['fwd-target@example.net']);
  t.match(mail.raw, /Subject: Fwd: Site photos and invoice/);
  t.match(mail.raw, /filename="?photo\.png/);
  t.match(mail.raw, /filename="?invoice\.pdf/);
  t.match(mail.raw, /Forwarded message/);
  await nextEvent('draft.sent', forward.draftId);
});

t.test('payload rules: send_at, reply and forward fields, recipients, attachments, labels', async (t) => {
  const inbox = await newInbox();
  await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox });
  const post = (body: Record<string, unknown>) => api<ErrorBody>(svc.url, 'POST', draftsPath(inbox), { token: svc.ownerToken, body });
  const many = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@example.net`);
  const cases: [string, Record<string, unknown>, number, string][] = [
    ['send_at not a timestamp', { send_at: 'tomorrow' }, 400, 'validation_error'],
    ['send_at without a time zone', { send_at: '2030-01-01T10:00:00' }, 400, 'validation_error'],
    ['send_at on a day that does not exist', { send_at: '2030-02-30T10:00:00Z' }, 400, 'validation_error'],
    ['in_reply_to and forward_of together', { in_reply_to: '<multi-1@example.org>', forward_of: '<multi-1@example.org>' }, 400, 'validation_error'],
    ['reply_all with to', { in_reply_to: '<multi-1@example.org>', reply_all: true, to: ['x@example.net'] }, 400, 'validation_error'],
    ['reply_all without in_reply_to', { reply_all: true }, 400, 'validation_error'],
    ['51 recipients', { to: many(30), cc: many(51).slice(30) }, 400, 'validation_error'],
    ['two reply_to addresses', { reply_to: ['a@example.net', 'b@example.net'] }, 400, 'validation_error'],
    ['subject with a line break', { subject: 'a\nb' }, 400, 'validation_error'],
    ['attachment that is not canonical base64', { attachments: [{ filename: 'x.bin', content: 'abc' }] }, 400, 'validation_error'],
    ['inline attachment without content_id', { attachments: [{ content: b64('x'), content_disposition: 'inline' }] }, 400, 'validation_error'],
    ['URL attachment', { attachments: [{ url: 'https://example.net/x.pdf' }] }, 400, 'not_supported'],
    ['33 attachments', { attachments: Array.from({ length: 33 }, () => ({ content: b64('x') })) }, 400, 'validation_error'],
    ['a system label', { labels: ['sent'] }, 400, 'validation_error'],
    ['an unknown field', { headers: { 'X-A': '1' } }, 400, 'validation_error'],
    ['a reply to a message that does not exist', { in_reply_to: '<nope@example.org>' }, 404, 'not_found'],
    ['a forward of a message that does not exist', { forward_of: '<nope@example.org>' }, 404, 'not_found'],
  ];
  for (const [what, body, status, code] of cases) expectError(t, await post(body), status, code, what);
  const before = await api<DraftList>(svc.url, 'GET', draftsPath(inbox), { token: svc.ownerToken });
  t.equal(before.body.count, 0, 'nothing was stored');

  const fifty = await createDraft(inbox, { to: many(50) });
  t.equal(fifty.to?.length, 50, '50 recipients are allowed');
  const past = await createDraft(inbox, { send_at: '2001-01-01T00:00:00+02:00', to: ['x@example.net'], text: 'late', subject: 'sent at once' });
  t.equal(past.send_at, '2000-12-31T22:00:00.000Z', 'send_at is stored in UTC; a past time is allowed');

  const patch = (body: Record<string, unknown>) => api<ErrorBody>(svc.url, 'PATCH', draftsPath(inbox, `/${fifty.draft_id}`), { token: svc.ownerToken, body });
  expectError(t, await patch({ cc: ['one-more@example.net'] }), 400, 'validation_error', 'a patch past 50 recipients');
  expectError(t, await patch({ add_attachments: Array.from({ length: 33 }, () => ({ content: b64('x') })) }), 400, 'validation_error', 'a patch past 32 attachments');
  expectError(t, await patch({ send_at: 'soon' }), 400, 'validation_error', 'a patch with a bad send_at');
  expectError(t, await patch({ in_reply_to: '<multi-1@example.org>' }), 400, 'validation_error', 'in_reply_to is not a patch field');
  t.equal((await getDraft(inbox, fifty.draft_id)).to?.length, 50, 'failed patches change nothing');
});

t.test('scope before permissions; draft_send for send_at; read_only cannot schedule; owner-only approval', async (t) => {
  const inbox = await newInbox();
  const other = await newInbox();
  const creator = await key(['draft_create', 'draft_read'], { inboxIds: [inbox] });
  const inScopeOnly = await key([], { inboxIds: [inbox] });
  expectError(t, await api(svc.url, 'POST', draftsPath(other), { token: creator, body: {} }), 404, 'not_found', 'out-of-scope inbox');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox), { token: inScopeOnly, body: {} }), 403, 'missing_permission', 'no draft_create');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox), { token: creator, body: { send_at: '2030-01-01T00:00:00Z' } }), 403, 'missing_permission', 'send_at without draft_send');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox), { token: creator, body: { in_reply_to: '<x@y>' } }), 403, 'missing_permission', 'a reply draft without message_read');
  const readOnly = await key(DRAFT_ALL, { sendPolicy: 'read_only' });
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox), { token: readOnly, body: { send_at: '2030-01-01T00:00:00Z' } }), 403, 'missing_permission', 'read_only with send_at');
  t.equal((await api(svc.url, 'POST', draftsPath(inbox), { token: readOnly, body: { subject: 'kept for the owner' } })).status, 200, 'read_only may still write drafts');

  const elsewhere = await createDraft(other, { subject: 'not yours' });
  expectError(t, await api(svc.url, 'GET', `/v0/drafts/${elsewhere.draft_id}`, { token: creator }), 404, 'not_found', 'instance-wide read out of scope');
  const scopedList = await api<DraftList>(svc.url, 'GET', '/v0/drafts?limit=100', { token: creator });
  t.ok(scopedList.body.drafts.every((d) => d.inbox_id === inbox), 'the instance-wide list covers the scope only');
  expectError(t, await api(svc.url, 'GET', '/v0/drafts', { token: inScopeOnly }), 403, 'missing_permission', 'list without draft_read');
  expectError(t, await api(svc.url, 'GET', draftsPath(other, `/${elsewhere.draft_id}`), { token: inScopeOnly }), 404, 'not_found', 'scope is checked before permission');
  const mine = await createDraft(inbox, { subject: 'mine' });
  expectError(t, await api(svc.url, 'GET', draftsPath(inbox, `/${mine.draft_id}`), { token: inScopeOnly }), 403, 'missing_permission', 'read without draft_read');
  expectError(t, await api(svc.url, 'DELETE', draftsPath(inbox, `/${mine.draft_id}`), { token: creator }), 403, 'missing_permission', 'delete without draft_delete');
  expectError(t, await api(svc.url, 'GET', draftsPath(inbox, '/00000000-0000-7000-8000-000000000000'), { token: creator }), 404, 'not_found', 'unknown draft');
  const agentAll = await key([...DRAFT_ALL, 'message_send', 'message_read']);
  for (const action of ['approve', 'reject']) {
    expectError(t, await api(svc.url, 'POST', draftsPath(inbox, `/${mine.draft_id}/${action}`), { token: agentAll, body: {} }), 403, 'missing_permission', `${action} is owner-only`);
  }
});

t.test('approval: an approval-policy send becomes a draft; the owner approves; it is sent with events', async (t) => {
  const inbox = await newInbox();
  const draftId = await approvalDraft(inbox, 'Needs the owner OK');
  await nextEvent('draft.approval_required', draftId);
  t.match(await getDraft(inbox, draftId), { state: 'pending_approval', to: ['ann@example.net'], subject: 'Needs the owner OK' });
  t.equal(sunkWith('Needs the owner OK').length, 0, 'nothing was sent');

  const approved = await api<{ message_id: string; thread_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${draftId}/approve`), { token: svc.ownerToken });
  t.equal(approved.status, 200, approved.text);
  t.match(approved.body, { message_id: /^<.+@example\.com>$/, thread_id: String });
  await nextEvent('draft.approved', draftId);
  const sentEvent = await nextEvent('draft.sent', draftId);
  t.match(sentEvent.draft, { inbox_id: inbox, draft_id: draftId, message_id: approved.body.message_id, thread_id: approved.body.thread_id, timestamp: String });
  t.notOk('subject' in sentEvent.draft!, 'draft events carry no content');
  const mail = await waitForSunk('Needs the owner OK');
  t.same(mail.to, ['ann@example.net']);
  t.match(await getDraft(inbox, draftId), { state: 'sent', message_id: approved.body.message_id });
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox, `/${draftId}/approve`), { token: svc.ownerToken }), 409, 'conflict', 'approving a sent draft');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox, `/${draftId}/reject`), { token: svc.ownerToken, body: {} }), 409, 'conflict', 'rejecting a sent draft');
  expectError(t, await api(svc.url, 'PATCH', draftsPath(inbox, `/${draftId}`), { token: svc.ownerToken, body: { subject: 'x' } }), 409, 'conflict', 'editing a sent draft');
});

t.test('reject: final, with the reason; a second reject changes nothing; sending it is a conflict', async (t) => {
  const inbox = await newInbox();
  const draftId = await approvalDraft(inbox, 'Please reject me');
  const rejected = await api<DraftBody>(svc.url, 'POST', draftsPath(inbox, `/${draftId}/reject`), { token: svc.ownerToken, body: { reason: 'Not to this customer.' } });
  t.equal(rejected.status, 200);
  t.match(rejected.body, { draft_id: draftId, state: 'rejected', send_reason: 'Not to this customer.' });
  await nextEvent('draft.rejected', draftId);
  const again = await api<DraftBody>(svc.url, 'POST', draftsPath(inbox, `/${draftId}/reject`), { token: svc.ownerToken, body: { reason: 'other' } });
  t.equal(again.status, 200);
  t.equal(again.body.send_reason, 'Not to this customer.', 'the first reason stays');
  await sleep(200);
  t.equal(draftEvents('draft.rejected', draftId).length, 1, 'one draft.rejected event');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox, `/${draftId}/send`), { token: svc.ownerToken, body: {} }), 409, 'conflict', 'sending a rejected draft');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox, `/${draftId}/approve`), { token: svc.ownerToken }), 409, 'conflict', 'approving a rejected draft');
  expectError(t, await api(svc.url, 'PATCH', draftsPath(inbox, `/${draftId}`), { token: svc.ownerToken, body: { text: 'x' } }), 409, 'conflict', 'editing a rejected draft');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox, `/${draftId}/reject`), { token: svc.ownerToken, body: { reason: 'x'.repeat(1001) } }), 400, 'validation_error', 'a reason over 1000 characters');
  t.equal(sunkWith('Please reject me').length, 0);
});

t.test('approve with an Idempotency-Key twice: the same result and one copy sent', async (t) => {
  const inbox = await newInbox();
  const draftId = await approvalDraft(inbox, 'Approve me once');
  const headers = { 'idempotency-key': 'approve-once-1' };
  const first = await api<{ message_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${draftId}/approve`), { token: svc.ownerToken, headers });
  const second = await api<{ message_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${draftId}/approve`), { token: svc.ownerToken, headers });
  t.equal(first.status, 200, first.text);
  t.equal(second.status, 200, second.text);
  t.same(second.body, first.body);
  await waitForSunk('Approve me once');
  await sleep(500);
  t.equal(sunkWith('Approve me once').length, 1, 'the sink got one copy');
  expectError(t, await api(svc.url, 'POST', draftsPath(inbox, `/${draftId}/approve`), { token: svc.ownerToken }), 409, 'conflict', 'approving again without the key');

  const sendKey = { 'idempotency-key': 'draft-send-1' };
  const draft = await createDraft(inbox, { to: ['zed@example.net'], subject: 'Draft send once', text: 'x' });
  const s1 = await api<{ message_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/send`), { token: svc.ownerToken, headers: sendKey, body: { add_labels: ['outgoing'] } });
  const s2 = await api<{ message_id: string }>(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/send`), { token: svc.ownerToken, headers: sendKey, body: { add_labels: ['outgoing'] } });
  t.equal(s1.status, 200, s1.text);
  t.same(s2.body, s1.body, 'a repeated draft send returns the original result');
  const s3 = await api(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/send`), { token: svc.ownerToken, headers: sendKey, body: {} });
  expectError(t, s3, 409, 'idempotency_conflict', 'the same key with another payload');
  const message = await api<{ labels: string[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(s1.body.message_id)}`, { token: svc.ownerToken });
  t.ok(message.body.labels.includes('outgoing'), 'add_labels reach the sent message');
});

t.test('a scheduled draft is sent by the loop when send_at comes; an overdue one on the next pass', async (t) => {
  const inbox = await newInbox();
  const agent = await key(DRAFT_ALL);
  const soon = new Date(Date.now() + 1500).toISOString();
  const scheduled = await createDraft(inbox, { to: ['later@example.net'], subject: 'Scheduled soon', text: 'tick', send_at: soon }, agent);
  t.match(scheduled, { state: 'scheduled', send_at: soon });
  await sleep(300);
  t.equal((await getDraft(inbox, scheduled.draft_id)).state, 'scheduled', 'not before its time');
  const sent = await pollDraft(inbox, scheduled.draft_id, 'sent');
  t.ok(Date.now() >= Date.parse(soon), 'sent after send_at');
  t.match(sent, { message_id: String, thread_id: String });
  await waitForSunk('Scheduled soon');
  await nextEvent('draft.sent', scheduled.draft_id);

  const overdue = await createDraft(inbox, { to: ['late@example.net'], subject: 'Overdue draft', text: 'tock', send_at: '2020-01-01T00:00:00Z' }, agent);
  await pollDraft(inbox, overdue.draft_id, 'sent');
  await waitForSunk('Overdue draft');
});

t.test('schedules and approval: pending until the owner approves; agent edits withdraw approval; null cancels', async (t) => {
  const inbox = await newInbox();
  const agent = await key(DRAFT_ALL, { sendPolicy: 'approval' });
  const later = new Date(Date.now() + 3600_000).toISOString();
  const draft = await createDraft(inbox, { to: ['boss@example.net'], subject: 'Later', text: 'x', send_at: later }, agent);
  t.equal(draft.state, 'pending_approval');
  await nextEvent('draft.created', draft.draft_id);
  await nextEvent('draft.approval_required', draft.draft_id);

  const approved = await api<DraftBody>(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/approve`), { token: svc.ownerToken });
  t.equal(approved.status, 200);
  t.match(approved.body, { draft_id: draft.draft_id, state: 'scheduled', send_at: later, message_id: null }, 'send_at ahead: the draft stays scheduled');
  await nextEvent('draft.approved', draft.draft_id);

  const edited = await api<DraftBody>(svc.url, 'PATCH', draftsPath(inbox, `/${draft.draft_id}`), { token: agent, body: { text: 'changed by the agent' } });
  t.equal(edited.body.state, 'pending_approval', 'an approval-policy edit withdraws approval');
  await sleep(200);
  t.equal(draftEvents('draft.approval_required', draft.draft_id).length, 2, 'approval is asked for again');

  await api(svc.url, 'POST', draftsPath(inbox, `/${draft.draft_id}/approve`), { token: svc.ownerToken });
  const ownerEdit = await api<DraftBody>(svc.url, 'PATCH', draftsPath(inbox, `/${draft.draft_id}`), { token: svc.ownerToken, body: { subject: 'Later (owner)' } });
  t.equal(ownerEdit.body.state, 'scheduled', 'owner edits keep approval');
  const cancelled = await api<DraftBody>(svc.url, 'PATCH', draftsPath(inbox, `/${draft.draft_id}`), { token: agent, body: { send_at: null } });
  t.match(cancelled.body, { state: 'draft', send_at: null });

  const direct = await key(DRAFT_ALL);
  const rescheduled = await api<DraftBody>(svc.url, 'PATCH', draftsPath(inbox, `/${draft.draft_id}`), { token: direct, body: { send_at: later } });
  t.match(rescheduled.body, { state: 'scheduled', send_at: later }, 'a direct credential schedules approved');
  const noSend = await key(['draft_update', 'draft_read']);
  expectError(t, await api(svc.url, 'PATCH', draftsPath(inbox, `/${draft.draft_id}`), { token: noSend, body: { send_at: later } }), 403, 'missing_permission', 'setting send_at needs draft_send');
  t.equal(sunkWith('Later').length, 0);
});

t.test('a scheduled draft of a paused inbox fails with send_reason inbox_paused', async (t) => {
  const inbox = await newInbox();
  const paused = await api(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}`, { token: svc.ownerToken, body: { status: 'paused' } });
  t.equal(paused.status, 200, paused.text);
  const draft = await createDraft(inbox, { to: ['nobody@example.net'], subject: 'From a paused inbox', text: 'x', send_at: new Date().toISOString() });
  const failed = await pollDraft(inbox, draft.draft_id, 'failed');
  t.equal(failed.send_reason, 'inbox_paused');
  t.equal(sunkWith('From a paused inbox').length, 0);
  const edited = await api<DraftBody>(svc.url, 'PATCH', draftsPath(inbox, `/${draft.draft_id}`), { token: svc.ownerToken, body: { text: 'fixed' } });
  t.match(edited.body, { state: 'failed', send_reason: 'inbox_paused' }, 'a failed draft may be edited; it stays failed until sent or rescheduled');
});

t.test('draft attachments: metadata with a download URL that serves the bytes; removal by id', async (t) => {
  const inbox = await newInbox();
  const bytes = Buffer.from([0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0x10]);
  const reader = await key(['draft_read', 'draft_update']);
  const draft = await createDraft(inbox, { attachments: [{ filename: 'report.pdf', content_type: 'application/pdf', content: b64(bytes) }] });
  const attachmentId = draft.attachments[0].attachment_id;
  const meta = await api<{ attachment_id: string; filename: string; size: number; download_url: string; expires_at: string }>(
    svc.url,
    'GET',
    draftsPath(inbox, `/${draft.draft_id}/attachments/${attachmentId}`),
    { token: reader },
  );
  t.equal(meta.status, 200, meta.text);
  t.match(meta.body, { attachment_id: attachmentId, filename: 'report.pdf', size: bytes.length, content_type: 'application/pdf', download_url: String, expires_at: String });
  const file = await fetch(meta.body.download_url);
  t.equal(file.status, 200);
  t.same(Buffer.from(await file.arrayBuffer()), bytes);
  t.match(file.headers.get('content-disposition'), /^attachment; filename="report.pdf"/);
  t.equal(file.headers.get('content-type'), 'application/pdf');
  const viaInstance = await api(svc.url, 'GET', `/v0/drafts/${draft.draft_id}/attachments/${attachmentId}`, { token: reader });
  t.equal(viaInstance.status, 200, 'the instance-wide form');

  const added = await api<DraftBody>(svc.url, 'PATCH', draftsPath(inbox, `/${draft.draft_id}`), {
    token: reader,
    body: { add_attachments: [{ filename: 'b.txt', content: b64('b') }], remove_attachments: [attachmentId, 'att_unknown'] },
  });
  t.equal(added.status, 200, added.text);
  t.same(
    added.body.attachments.map((a) => a.filename),
    ['b.txt'],
    'removed by id (unknown ids are ignored), then added',
  );
  expectError(t, await api(svc.url, 'GET', draftsPath(inbox, `/${draft.draft_id}/attachments/${attachmentId}`), { token: reader }), 404, 'not_found', 'a removed attachment');
  t.equal((await fetch(meta.body.download_url)).status, 404, 'its URL no longer serves it');
});

t.test('without a transport a due draft stays scheduled, and a draft send is 503; configuring one sends it at once', async (t) => {
  const bare = await startSvc();
  t.teardown(() => bare.stop());
  const inbox = await createInbox(bare, 'waiting@example.com');
  const path = (rest = '') => `/v0/inboxes/${enc(inbox)}/drafts${rest}`;
  const created = await api<DraftBody>(bare.url, 'POST', path(), { token: bare.ownerToken, body: { to: ['x@example.net'], subject: 'Waits for a transport', text: 'x', send_at: new Date().toISOString() } });
  t.equal(created.body.state, 'scheduled');
  const now = await api(bare.url, 'POST', path(`/${created.body.draft_id}/send`), { token: bare.ownerToken, body: {} });
  expectError(t, now, 503, 'service_unavailable', 'draft send with no transport');
  await sleep(1500);
  const waiting = await api<DraftBody>(bare.url, 'GET', path(`/${created.body.draft_id}`), { token: bare.ownerToken });
  t.match(waiting.body, { state: 'scheduled', send_reason: null }, 'still scheduled, not failed');

  t.equal((await api(bare.url, 'PUT', '/v0/owner/transport', { token: bare.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } })).status, 200);
  // Configuring a transport wakes the scheduled-drafts loop: the waiting draft goes at once.
  const sent = await until('the waiting draft sent', async () => {
    const draft = (await api<DraftBody>(bare.url, 'GET', path(`/${created.body.draft_id}`), { token: bare.ownerToken })).body;
    return draft.state === 'sent' ? draft : undefined;
  });
  t.equal(sent.state, 'sent');
  await waitForSunk('Waits for a transport');
});

/**
 * The `guarded` send policy (issue 20 §4, docs/guarded.md) through a real service whose smart
 * host is a real SMTP server on loopback, with the AgentMail SDK as the agent: clean mail goes out
 * at once; a credential, a private key in a text attachment, a home secret (a webhook's signing
 * secret, a secret the owner added) or too many first contacts turn the send into a draft awaiting
 * the owner, answered `approval_required` with the draft id and the reasons, exactly like the
 * `approval` policy; the owner approves it and it goes out; the owner turns a check off and the
 * same mail goes out at once; a guarded schedule is held the same way.
 */
import t from 'tap';
import { AgentMailClient } from 'agentmail';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { subscribe, type EventStream } from '../helpers/events.js';
import { until } from '../helpers/until.js';

let svc: RunningSvc;
let db: Db;
let sink: Sink;
let events: EventStream;
let n = 0;

const ALL = ['inbox_read', 'message_read', 'message_send', 'message_reply', 'draft_read', 'draft_create', 'draft_update', 'draft_send'];
const enc = encodeURIComponent;
const newInbox = () => createInbox(svc, `guarded${++n}@home.example`);
const guardedKey = async (inbox: string) => (await createApiKey(svc, { permissions: ALL, inboxIds: [inbox], sendPolicy: 'guarded' })).secret;
const sdk = (token: string) => new AgentMailClient({ apiKey: token, baseUrl: svc.url, maxRetries: 0 });
// A real-looking AWS secret pair; never a live key.
const AWS_KEY = 'AKIAZ7QF3XK2MPLW4NRD';
const PRIVATE_KEY = ['-----BEGIN OPENSSH PRIVATE KEY-----', 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW', 'QyNTUxOQAAACBj3xqJ0m1cOq2x5a7Yd1kq9Zr0v0u7n1x2c3v4b5n6mQAAAJg8a9Kz', '-----END OPENSSH PRIVATE KEY-----'].join('\n');

interface ErrorBody {
  code: string;
  message: string;
  fix?: string;
  draft_id?: string;
  reasons?: { detector: string; detail: string }[];
}
interface DraftBody {
  draft_id: string;
  state: string;
  guard_findings: { detector: string; detail: string }[] | null;
  send_status?: string;
  message_id: string | null;
}

async function owner<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await api<T>(svc.url, method, path, { token: svc.ownerToken, body });
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}
const draftOf = (inbox: string, draftId: string) => owner<DraftBody>('GET', `/v0/inboxes/${enc(inbox)}/drafts/${enc(draftId)}`);
const sinkHas = (marker: string) => sink.messages.some((m) => m.raw.toString('latin1').includes(marker));

/** Sends through the SDK; answers the error body of a refusal (the SDK throws it with the status). */
async function sendAs(token: string, inbox: string, body: Parameters<AgentMailClient['inboxes']['messages']['send']>[1]): Promise<{ messageId: string } | { status: number; error: ErrorBody }> {
  try {
    const sent = await sdk(token).inboxes.messages.send(inbox, body);
    return { messageId: sent.messageId };
  } catch (err) {
    const e = err as { statusCode?: number; body?: ErrorBody };
    if (e.statusCode === undefined) throw err;
    return { status: e.statusCode, error: e.body! };
  }
}

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  sink = await startSink();
  events = await subscribe(svc.url, svc.ownerToken);
  await owner('PUT', '/v0/owner/transport', { smtp: { host: '127.0.0.1', port: sink.port } });
});
t.teardown(async () => {
  events.close();
  db.close();
  await sink.close();
  await svc.stop();
});

t.test('a guarded key is created and read back with its policy (REST and SDK)', async (t) => {
  const inbox = await newInbox();
  const created = await api<{ api_key_id: string; send_policy: string }>(svc.url, 'POST', '/v0/api-keys', { token: svc.ownerToken, body: { inbox_ids: [inbox], permissions: ALL, send_policy: 'guarded' } });
  t.equal(created.status, 200, 'created');
  t.equal(created.body.send_policy, 'guarded');
  const read = await owner<{ send_policy: string }>('GET', `/v0/api-keys/${created.body.api_key_id}`);
  t.equal(read.send_policy, 'guarded');
  const bad = await api<ErrorBody>(svc.url, 'POST', '/v0/api-keys', { token: svc.ownerToken, body: { permissions: ALL, send_policy: 'guarded-ish' } });
  t.equal(bad.status, 400);
  t.equal(bad.body.code, 'validation_error');
});

t.test('clean mail from a guarded key goes out at once', async (t) => {
  const inbox = await newInbox();
  const res = await sendAs(await guardedKey(inbox), inbox, { to: ['bob@remote.example'], subject: 'Lunch', text: 'Lunch at noon? Order #4111 1111 is ready. Call 555-0100.' });
  t.ok('messageId' in res, JSON.stringify(res));
  await until('the clean mail at the sink', () => sinkHas('Lunch at noon'));
});

t.test('a credential in the text: approval_required with the draft and the reasons; the owner approves and it goes out', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const res = await sendAs(token, inbox, { to: ['ops@remote.example'], subject: 'Access', text: `Here is the key: ${AWS_KEY} with secret in the vault. marker-cred-1` });
  t.ok('status' in res);
  if (!('status' in res)) return;
  t.equal(res.status, 403);
  t.equal(res.error.code, 'approval_required', 'the same answer as the approval policy');
  t.match(res.error.draft_id, String);
  t.match(res.error.reasons, [{ detector: 'credentials', detail: /AWS access key id.*the text/i }]);
  t.notMatch(JSON.stringify(res.error), AWS_KEY, 'the answer never repeats the secret');
  t.notMatch(JSON.stringify(res.error), AWS_KEY.slice(0, 16), 'nor most of it');
  const event = await events.next('draft.approval_required', (e) => (e.draft as { draft_id: string }).draft_id === res.error.draft_id);
  t.match((event.draft as DraftBody).guard_findings, [{ detector: 'credentials' }], 'the event carries the reasons');

  const draft = await draftOf(inbox, res.error.draft_id!);
  t.equal(draft.state, 'pending_approval');
  t.match(draft.guard_findings, [{ detector: 'credentials' }]);
  t.notOk(sinkHas('marker-cred-1'), 'nothing left');

  // The agent cannot push it out by sending the draft itself: the guard holds it again.
  const again = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts/${enc(draft.draft_id)}/send`, { token, body: {} });
  t.equal(again.status, 403);
  t.equal(again.body.code, 'approval_required');
  t.notOk(sinkHas('marker-cred-1'));

  const approved = await owner<{ message_id: string }>('POST', `/v0/inboxes/${enc(inbox)}/drafts/${enc(draft.draft_id)}/approve`, {});
  t.match(approved.message_id, String);
  await until('the approved mail at the sink', () => sinkHas('marker-cred-1'));
  t.equal((await draftOf(inbox, draft.draft_id)).state, 'sent');
});

t.test('a private key in a text attachment is held, named by the attachment', async (t) => {
  const inbox = await newInbox();
  const res = await sendAs(await guardedKey(inbox), inbox, {
    to: ['dev@remote.example'],
    subject: 'Config',
    text: 'Attached the deploy config. marker-att-1',
    attachments: [{ filename: 'deploy.txt', contentType: 'text/plain', content: Buffer.from(`host: example\n${PRIVATE_KEY}\n`).toString('base64') }],
  });
  t.ok('status' in res && res.error.code === 'approval_required', JSON.stringify(res));
  if (!('status' in res)) return;
  t.match(res.error.reasons, [{ detector: 'private_keys', detail: /deploy\.txt/ }]);
  t.notOk(sinkHas('marker-att-1'));
});

t.test('a home secret (a webhook signing secret) and a secret the owner added are held; neither is ever shown', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const hook = await owner<{ secret: string }>('POST', '/v0/webhooks', { url: 'https://hooks.example/guard', event_types: ['message.received'] });
  t.match(hook.secret, /^whsec_/);
  const first = await sendAs(token, inbox, { to: ['x@remote.example'], subject: 'Hook', text: `verify with ${hook.secret} marker-home-1` });
  t.ok('status' in first);
  if (!('status' in first)) return;
  t.match(first.error.reasons, [{ detector: 'home_secrets' }]);
  t.notMatch(JSON.stringify(first.error), hook.secret);

  const mine = 'correct-horse-battery-staple-42!';
  const view = await owner<{ secrets: { secret_id: string; hint: string }[] }>('PATCH', '/v0/owner/guard', { add_secrets: [mine] });
  t.match(view.secrets, [{ secret_id: String, hint: '…-42!' }]);
  t.notMatch(JSON.stringify(view), 'battery', 'the owner\u2019s secret is shown by its last 4 characters only');
  const second = await sendAs(token, inbox, { to: ['x@remote.example'], subject: 'Wifi', text: `The wifi password is ${mine} marker-home-2` });
  t.ok('status' in second);
  if (!('status' in second)) return;
  t.match(second.error.reasons, [{ detector: 'home_secrets' }]);
  t.notOk(sinkHas('marker-home-2'));
  await owner('PATCH', '/v0/owner/guard', { remove_secrets: [view.secrets[0].secret_id] });
});

t.test('too many first contacts in one message are held; known correspondents are not first contacts', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const many = Array.from({ length: 11 }, (_, i) => `person${i}@crowd.example`);
  const res = await sendAs(token, inbox, { to: many, subject: 'Hello all', text: 'An announcement. marker-vol-1' });
  t.ok('status' in res);
  if (!('status' in res)) return;
  t.match(res.error.reasons, [{ detector: 'new_recipients', detail: /11 recipients.*more than 10/ }]);
  // The owner approves; the eleven are now known, and writing to them again is not a first contact.
  await owner('POST', `/v0/inboxes/${enc(inbox)}/drafts/${enc(res.error.draft_id!)}/approve`, {});
  await until('the approved announcement at the sink', () => sinkHas('marker-vol-1'));
  const again = await sendAs(token, inbox, { to: many, subject: 'Follow-up', text: 'marker-vol-2' });
  t.ok('messageId' in again, JSON.stringify(again));
});

t.test('the daily first-contact limit counts earlier sends; the owner tunes it', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const before = await owner<{ new_recipients: { per_message: number; per_day: number } }>('GET', '/v0/owner/guard');
  t.same(before.new_recipients, { per_message: 10, per_day: 30 }, 'the documented defaults');
  await owner('PATCH', '/v0/owner/guard', { new_recipients: { per_day: 4 } });
  t.teardown(() => owner('PATCH', '/v0/owner/guard', { new_recipients: before.new_recipients }));
  const first = await sendAs(token, inbox, { to: ['a1@day.example', 'a2@day.example', 'a3@day.example'], subject: 'One', text: 'first batch' });
  t.ok('messageId' in first, JSON.stringify(first));
  const second = await sendAs(token, inbox, { to: ['a4@day.example', 'a5@day.example'], subject: 'Two', text: 'second batch' });
  t.ok('status' in second);
  if (!('status' in second)) return;
  t.match(second.error.reasons, [{ detector: 'new_recipients', detail: /5 first contacts within 24 hours/ }]);
  const known = await sendAs(token, inbox, { to: ['a1@day.example', 'a2@day.example'], subject: 'Three', text: 'to the known ones' });
  t.ok('messageId' in known, 'writing again to the first batch is fine');
});

t.test('the owner turns a check off: the same mail goes out at once', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const view = await owner<{ checks: { name: string; enabled: boolean }[] }>('PATCH', '/v0/owner/guard', { checks: { credentials: false } });
  t.teardown(() => owner('PATCH', '/v0/owner/guard', { checks: { credentials: true } }));
  t.match(view.checks.find((c) => c.name === 'credentials'), { enabled: false });
  t.same(
    view.checks.map((c) => c.name),
    ['credentials', 'private_keys', 'card_numbers', 'iban', 'national_ids', 'home_secrets', 'new_recipients'],
  );
  const res = await sendAs(token, inbox, { to: ['ops@remote.example'], subject: 'Key', text: `${AWS_KEY} marker-off-1` });
  t.ok('messageId' in res, JSON.stringify(res));
  await until('the mail at the sink', () => sinkHas('marker-off-1'));
  const unknown = await api<ErrorBody>(svc.url, 'PATCH', '/v0/owner/guard', { token: svc.ownerToken, body: { checks: { telepathy: false } } });
  t.equal(unknown.status, 400);
  t.match(unknown.body, { code: 'validation_error', message: /unknown check/, fix: /credentials/ });
});

t.test('a guarded schedule: clean is scheduled, a card number waits for the owner, an edit adding one takes approval away', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const create = (text: string) => api<DraftBody & ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/drafts`, { token, body: { to: ['pay@remote.example'], subject: 'Invoice', text, send_at: later } });
  const clean = await create('Invoice attached.');
  t.equal(clean.status, 200, clean.text);
  t.equal(clean.body.state, 'scheduled');
  t.equal(clean.body.guard_findings, null);
  const held = await create('Charge card 4242 4242 4242 4242 exp 12/30.');
  t.equal(held.status, 200, held.text);
  t.equal(held.body.state, 'pending_approval');
  t.match(held.body.guard_findings, [{ detector: 'card_numbers', detail: /ending in 4242/ }]);
  t.notMatch(JSON.stringify(held.body.guard_findings), '4242 4242 4242');

  const edit = await api<DraftBody>(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}/drafts/${enc(clean.body.draft_id)}`, { token, body: { text: 'IBAN DE89 3704 0044 0532 0130 00 please.' } });
  t.equal(edit.status, 200, edit.text);
  t.equal(edit.body.state, 'pending_approval', 'no longer approved to go out');
  t.match(edit.body.guard_findings, [{ detector: 'iban' }]);
  await events.next('draft.approval_required', (e) => (e.draft as { draft_id: string }).draft_id === clean.body.draft_id);
});

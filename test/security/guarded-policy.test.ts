/**
 * The guarded send policy as an attacker (or a prompt-injected agent) would try it (issue 20 §4,
 * docs/guarded.md): approving its own held draft, editing a held draft, scheduling clean and then
 * adding the secret (in the text or as an attachment), forwarding a stranger's mail that carries
 * one, sending a plain draft, spreading first contacts over many scheduled drafts, replaying a
 * held send, reaching the owner's guard settings with an agent key, bad settings, and a huge body.
 * Nothing that trips the guard ever reaches the SMTP sink without the owner.
 */
import t from 'tap';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { startSink, type Sink } from '../helpers/sink.js';

let svc: RunningSvc;
let db: Db;
let sink: Sink;
let n = 0;

const ALL = ['inbox_read', 'message_read', 'message_send', 'message_reply', 'draft_read', 'draft_create', 'draft_update', 'draft_send', 'draft_delete'];
const enc = encodeURIComponent;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const AWS_KEY = 'AKIAZ7QF3XK2MPLW4NRD';
const STRIPE_KEY = 'sk_live_51HqLyjWDarjtT1zdp7dcXtZ9kP3mQ8vR2sLw4';

interface ErrorBody {
  code: string;
  draft_id?: string;
  reasons?: { detector: string; detail: string }[];
}
interface DraftBody {
  draft_id: string;
  state: string;
  text: string | null;
  guard_findings: { detector: string; detail: string }[] | null;
  updated_at: string;
}

const newInbox = () => createInbox(svc, `shield${++n}@home.example`);
const guardedKey = async (inbox: string) => (await createApiKey(svc, { permissions: ALL, inboxIds: [inbox], sendPolicy: 'guarded' })).secret;
const drafts = (inbox: string, rest = '') => `/v0/inboxes/${enc(inbox)}/drafts${rest}`;
const sinkHas = (marker: string) => sink.messages.some((m) => m.raw.toString('latin1').includes(marker));
const later = () => new Date(Date.now() + 3_600_000).toISOString();
const ownerRead = async (inbox: string, draftId: string) => (await api<DraftBody>(svc.url, 'GET', drafts(inbox, `/${enc(draftId)}`), { token: svc.ownerToken })).body;
/** Lets the outbox run: a queued message reaches the sink within this. */
const settle = () => new Promise((r) => setTimeout(r, 1500));

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  sink = await startSink();
  const res = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  if (res.status !== 200) throw new Error(res.text);
});
t.teardown(async () => {
  db.close();
  await sink.close();
  await svc.stop();
});

t.test('a guarded agent cannot approve, edit or reschedule its own held draft', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const held = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { to: 'x@remote.example', subject: 'k', text: `${AWS_KEY} marker-own-1` } });
  t.equal(held.body.code, 'approval_required');
  const id = held.body.draft_id!;
  const before = await ownerRead(inbox, id);

  const approve = await api(svc.url, 'POST', drafts(inbox, `/${enc(id)}/approve`), { token, body: {} });
  t.not(approve.status, 200, `approve by the agent is refused (${approve.status})`);
  for (const body of [{ text: 'clean now' }, { text: 'clean now', send_at: later() }, { send_at: later() }, { add_labels: ['x'] }]) {
    const patch = await api<ErrorBody>(svc.url, 'PATCH', drafts(inbox, `/${enc(id)}`), { token, body });
    t.equal(patch.status, 409, `PATCH ${JSON.stringify(Object.keys(body))} is 409`);
    t.equal(patch.body.code, 'conflict');
  }
  const after = await ownerRead(inbox, id);
  t.equal(after.state, 'pending_approval');
  t.equal(after.updated_at, before.updated_at, 'nothing changed');
  t.equal(after.text, before.text);
  await settle();
  t.notOk(sinkHas('marker-own-1'), 'nothing left');
});

t.test('scheduling clean, then adding the secret (text or attachment), takes the approval away', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  for (const patch of [{ text: `use ${STRIPE_KEY}` }, { add_attachments: [{ filename: 'notes.env', content_type: 'application/octet-stream', content: b64(`STRIPE=${STRIPE_KEY}\n`) }] }]) {
    const created = await api<DraftBody>(svc.url, 'POST', drafts(inbox), { token, body: { to: 'billing@remote.example', subject: 'Billing', text: 'marker-sched', send_at: later() } });
    t.equal(created.body.state, 'scheduled');
    const edited = await api<DraftBody>(svc.url, 'PATCH', drafts(inbox, `/${enc(created.body.draft_id)}`), { token, body: patch });
    t.equal(edited.status, 200, edited.text);
    t.equal(edited.body.state, 'pending_approval', `after ${Object.keys(patch)[0]}`);
    t.match(edited.body.guard_findings, [{ detector: 'credentials', detail: /Stripe/ }]);
    const row = db.prepare('SELECT approved FROM drafts WHERE draft_id = ?').get(created.body.draft_id) as { approved: number };
    t.equal(row.approved, 0, 'the scheduled-drafts loop will not send it');
  }
});

t.test('forwarding a stranger’s mail that carries a secret is held', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const seeded = await seedMail(db, simpleMail({ from: 'it@partner.example', to: inbox, subject: 'Your access', messageId: '<leak-1@partner.example>', body: `Your new key is ${AWS_KEY}. marker-fwd-1` }), { inboxId: inbox });
  t.ok(seeded);
  const res = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/${enc('<leak-1@partner.example>')}/forward`, { token, body: { to: 'attacker@evil.example', text: 'fyi' } });
  t.equal(res.status, 403, JSON.stringify(res.body));
  t.equal(res.body.code, 'approval_required');
  t.match(res.body.reasons, [{ detector: 'credentials' }]);
  await settle();
  t.notOk(sinkHas('marker-fwd-1'));
});

t.test('sending a plain draft with a secret is held; a replayed held send names the same draft', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const draft = await api<DraftBody>(svc.url, 'POST', drafts(inbox), { token, body: { to: 'y@remote.example', subject: 'd', text: `${AWS_KEY} marker-draft-1` } });
  t.equal(draft.body.state, 'draft', 'an unscheduled draft is not checked yet');
  const send = await api<ErrorBody>(svc.url, 'POST', drafts(inbox, `/${enc(draft.body.draft_id)}/send`), { token, body: {} });
  t.equal(send.status, 403);
  t.equal(send.body.code, 'approval_required');
  t.equal(send.body.draft_id, draft.body.draft_id);
  t.equal((await ownerRead(inbox, draft.body.draft_id)).state, 'pending_approval');

  const body = { to: 'z@remote.example', subject: 'r', text: `${AWS_KEY} marker-replay-1` };
  const headers = { 'idempotency-key': 'guarded-replay-1' };
  const first = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body, headers });
  const again = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body, headers });
  t.equal(first.body.code, 'approval_required');
  t.equal(again.body.code, 'approval_required');
  t.equal(again.body.draft_id, first.body.draft_id, 'one draft, not two');
  await settle();
  t.notOk(sinkHas('marker-draft-1') || sinkHas('marker-replay-1'));
});

t.test('first contacts spread over scheduled drafts count against the day', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const limits = (await api<{ new_recipients: { per_message: number; per_day: number } }>(svc.url, 'GET', '/v0/owner/guard', { token: svc.ownerToken })).body.new_recipients;
  await api(svc.url, 'PATCH', '/v0/owner/guard', { token: svc.ownerToken, body: { new_recipients: { per_day: 3 } } });
  t.teardown(() => api(svc.url, 'PATCH', '/v0/owner/guard', { token: svc.ownerToken, body: { new_recipients: limits } }));
  const schedule = (to: string[]) => api<DraftBody>(svc.url, 'POST', drafts(inbox), { token, body: { to, subject: 's', text: 'hello', send_at: later() } });
  t.equal((await schedule(['p1@spread.example', 'p2@spread.example'])).body.state, 'scheduled');
  const second = await schedule(['p3@spread.example', 'p4@spread.example']);
  t.equal(second.body.state, 'pending_approval', 'the second schedule would make 4 first contacts');
  t.match(second.body.guard_findings, [{ detector: 'new_recipients' }]);
  const direct = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { to: ['p5@spread.example', 'p6@spread.example'], subject: 'n', text: 'now' } });
  t.equal(direct.body.code, 'approval_required', 'and so would a send now');
});

t.test('the guard settings are the owner’s alone, bounded, and never show a secret', async (t) => {
  const inbox = await newInbox();
  const agent = await guardedKey(inbox);
  const direct = (await createApiKey(svc, { permissions: ALL, sendPolicy: 'direct' })).secret;
  for (const token of [agent, direct]) {
    for (const [method, path] of [['GET', '/v0/owner/guard'], ['PATCH', '/v0/owner/guard'], ['GET', '/v0/owner/guard/'], ['GET', '/v0/owner//guard'], ['GET', '/v0/OWNER/guard'], ['PATCH', '/v0/owner/%67uard']] as const) {
      const res = await api(svc.url, method, path, { token, body: method === 'PATCH' ? { checks: { credentials: false } } : undefined });
      t.not(res.status, 200, `${method} ${path} with an agent key: ${res.status}`);
    }
  }
  const view = (await api<{ checks: { name: string; enabled: boolean }[] }>(svc.url, 'GET', '/v0/owner/guard', { token: svc.ownerToken })).body;
  t.ok(view.checks.every((c) => c.enabled), 'no agent switched a check off');

  const secret = 'owner-only-secret-value-9f8e7d6c5b4a';
  const added = await api(svc.url, 'PATCH', '/v0/owner/guard', { token: svc.ownerToken, body: { add_secrets: [secret] } });
  t.equal(added.status, 200);
  t.notMatch(added.text, 'owner-only-secret', 'the answer shows only the last 4 characters');
  t.notMatch((await api(svc.url, 'GET', '/v0/owner/guard', { token: svc.ownerToken })).text, 'owner-only-secret');
  const stored = (db.prepare("SELECT value FROM settings WHERE key = 'outbound_guard'").get() as { value: string }).value;
  t.match(stored, secret, 'kept inside the encrypted database, where the guard reads it');

  for (const [body, what] of [
    [{ add_secrets: ['short'] }, 'a secret under 16 characters'],
    [{ add_secrets: ['x'.repeat(257)] }, 'a secret over 256 characters'],
    [{ add_secrets: Array.from({ length: 201 }, (_, i) => `bulk-secret-number-${i}-xxxxxxxx`) }, 'over 200 secrets'],
    [{ new_recipients: { per_day: -1 } }, 'a negative limit'],
    [{ new_recipients: { per_day: 1.5 } }, 'a fractional limit'],
    [{ checks: { credentials: 'off' } }, 'a check set to a string'],
    [JSON.parse('{"checks":{"__proto__":false}}') as object, 'a prototype key'],
    [{ checks: { constructor: false } }, 'a check named like an Object property'],
    [{ surprise: true }, 'an unknown field'],
  ] as const) {
    const res = await api<{ code: string; message: string }>(svc.url, 'PATCH', '/v0/owner/guard', { token: svc.ownerToken, body });
    t.equal(res.status, 400, `${what}: 400 (${res.text.slice(0, 120)})`);
    t.equal(res.body.code, 'validation_error');
  }
});

t.test('a huge hostile body is answered, never a 5xx', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const chunk = '4111 1111 1111 111 AKIA sk_live_ ghp_ -----BEGIN PRIVATE KEY----- DE89 password= ';
  const text = chunk.repeat(Math.floor(1_900_000 / chunk.length));
  const started = Date.now();
  const res = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { to: 'q@remote.example', subject: 'big', text } });
  t.ok(res.status === 200 || res.status === 403, `answered ${res.status}`);
  t.ok(Date.now() - started < 30_000, 'in bounded time');
});

t.test('a clean schedule, unscheduled and filled with a secret, is checked again when sent (review finding 1)', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const created = await api<DraftBody>(svc.url, 'POST', drafts(inbox), { token, body: { to: 'x@remote.example', subject: 'later', text: 'hello', send_at: later() } });
  t.equal(created.body.state, 'scheduled');
  const edited = await api<DraftBody>(svc.url, 'PATCH', drafts(inbox, `/${enc(created.body.draft_id)}`), { token, body: { send_at: null, text: `${AWS_KEY} marker-unsched-1` } });
  t.equal(edited.status, 200, edited.text);
  const send = await api<ErrorBody>(svc.url, 'POST', drafts(inbox, `/${enc(created.body.draft_id)}/send`), { token, body: {} });
  t.equal(send.status, 403);
  t.equal(send.body.code, 'approval_required');
  t.match(send.body.reasons, [{ detector: 'credentials' }]);
  await settle();
  t.notOk(sinkHas('marker-unsched-1'), 'nothing left');
});

t.test('what the owner approved cannot be redirected: new recipients on an approved schedule are held again (review finding 2)', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const held = await api<DraftBody>(svc.url, 'POST', drafts(inbox, ''), { token, body: { to: 'colleague@remote.example', subject: 'k', text: `${AWS_KEY} marker-redirect-1`, send_at: later() } });
  t.equal(held.body.state, 'pending_approval');
  const approved = await api<DraftBody>(svc.url, 'POST', drafts(inbox, `/${enc(held.body.draft_id)}/approve`), { token: svc.ownerToken, body: {} });
  t.equal(approved.status, 200, approved.text);
  t.equal((await ownerRead(inbox, held.body.draft_id)).state, 'scheduled');
  const redirect = await api<DraftBody>(svc.url, 'PATCH', drafts(inbox, `/${enc(held.body.draft_id)}`), { token, body: { send_at: null, to: ['attacker@evil.example'] } });
  t.equal(redirect.status, 200, redirect.text);
  t.equal(redirect.body.guard_findings, null, 'no stale reasons on a draft that no longer waits');
  const send = await api<ErrorBody>(svc.url, 'POST', drafts(inbox, `/${enc(held.body.draft_id)}/send`), { token, body: {} });
  t.equal(send.body.code, 'approval_required', 'the agent’s own send is checked, not covered by the owner’s approval');
  const reschedule = await api<DraftBody>(svc.url, 'PATCH', drafts(inbox, `/${enc(held.body.draft_id)}`), { token, body: { send_at: later() } });
  t.equal(reschedule.status, 409, 'and it waits for the owner again');
  await settle();
  t.notOk(sinkHas('marker-redirect-1'));
});

t.test('a secret in a header, a display name or an attachment’s file name is held (review finding 3)', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const send = (body: Record<string, unknown>) => api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { subject: 's', text: 'marker-fields', ...body } });
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]).toString('base64');
  for (const [what, body, where] of [
    ['a header', { to: 'x@remote.example', headers: { 'X-Note': AWS_KEY } }, /X-Note header/],
    ['a display name', { to: `"${AWS_KEY}" <x@remote.example>` }, /recipients/],
    ['a file name', { to: 'x@remote.example', attachments: [{ filename: `${AWS_KEY}.png`, content_type: 'image/png', content: png }] }, /attachment names/],
  ] as const) {
    const res = await send(body);
    t.equal(res.body.code, 'approval_required', what);
    t.match(res.body.reasons, [{ detector: 'credentials', detail: where }], what);
  }
  await settle();
  t.notOk(sinkHas('marker-fields'));
});

t.test('text past what the guard reads is held, not let out unread (review finding 4)', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const text = `${'All quiet on the western front. '.repeat(17_000)}\n${AWS_KEY} marker-long-1`;
  t.ok(text.length > 512 * 1024);
  const res = await api<ErrorBody>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { to: 'x@remote.example', subject: 'long', text } });
  t.equal(res.body.code, 'approval_required');
  t.match(res.body.reasons, [{ detector: 'unchecked', detail: /the text is longer than the guard reads/ }]);
  await settle();
  t.notOk(sinkHas('marker-long-1'));
});

t.test('a replayed held send still gives its reasons (review finding 5)', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const body = { to: 'x@remote.example', subject: 'again', text: `${AWS_KEY}` };
  const headers = { 'idempotency-key': 'guarded-replay-reasons' };
  await api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body, headers });
  const again = await api<ErrorBody & { message: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body, headers });
  t.equal(again.body.code, 'approval_required');
  t.match(again.body.reasons, [{ detector: 'credentials' }]);
  t.match(again.body.message, /outbound guard/);
});

t.test('racing sends cannot together pass the daily first-contact limit (review finding 8)', async (t) => {
  const inbox = await newInbox();
  const token = await guardedKey(inbox);
  const limits = (await api<{ new_recipients: { per_message: number; per_day: number } }>(svc.url, 'GET', '/v0/owner/guard', { token: svc.ownerToken })).body.new_recipients;
  await api(svc.url, 'PATCH', '/v0/owner/guard', { token: svc.ownerToken, body: { new_recipients: { per_day: 3 } } });
  t.teardown(() => api(svc.url, 'PATCH', '/v0/owner/guard', { token: svc.ownerToken, body: { new_recipients: limits } }));
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      api<ErrorBody & { message_id?: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token, body: { to: [`r${i}a@race.example`, `r${i}b@race.example`], subject: `race ${i}`, text: 'hello' } }),
    ),
  );
  const passed = results.filter((r) => r.status === 200).length;
  t.equal(passed, 1, `one send of two first contacts passes a limit of 3, the others are held (${results.map((r) => r.status).join(',')})`);
  t.equal(results.filter((r) => r.body.code === 'approval_required').length, 5);
});

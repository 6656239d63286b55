/**
 * Sending (spec §2.4, §4.2, §4.5, §6.2, §8 outbox) through a real service whose SMTP smart host
 * is a real SMTP server on loopback: send/reply/reply-all/forward with the AgentMail SDK, the
 * checks in their order, idempotency, outcomes (sent, rejected, failed, send_unknown), owner
 * resolve, and the outbox's recheck of the send lists.
 */
import t from 'tap';
import { AgentMailClient } from 'agentmail';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { fixture, seedMail, simpleMail } from '../helpers/mail.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { subscribe, type EventStream } from '../helpers/events.js';
import { until } from '../helpers/until.js';

const RETRY_MS = 300;
let svc: RunningSvc;
let db: Db;
let sink: Sink;
let events: EventStream;
let n = 0;

const ALL = ['inbox_read', 'message_read', 'message_send', 'message_reply', 'message_update', 'draft_read'];
const enc = encodeURIComponent;
const newInbox = () => createInbox(svc, `sender${++n}@home.example`);
const keyFor = async (inbox: string, permissions = ALL, sendPolicy: 'direct' | 'approval' | 'read_only' = 'direct') => (await createApiKey(svc, { permissions, inboxIds: [inbox], sendPolicy })).secret;
/** A change the owner makes through the API; throws unless it succeeds. */
async function asOwner(method: string, path: string, body?: unknown): Promise<void> {
  const res = await api(svc.url, method, path, { token: svc.ownerToken, body });
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
}
const sdk = (token: string) => new AgentMailClient({ apiKey: token, baseUrl: svc.url, maxRetries: 0 });
const sendPath = (inbox: string, rest = '/send') => `/v0/inboxes/${enc(inbox)}/messages${rest}`;

async function message(inbox: string, messageId: string) {
  const res = await api<Record<string, unknown>>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(messageId)}`, { token: svc.ownerToken });
  return res.body;
}

async function settled(inbox: string, messageId: string, ms?: number): Promise<Record<string, unknown>> {
  return until(`message ${messageId} to leave queued`, async () => {
    const m = await message(inbox, messageId);
    return m.send_status !== 'queued' ? m : undefined;
  }, ms);
}

async function useSmtp(port: number) {
  const res = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port } } });
  if (res.status !== 200) throw new Error(`transport: ${res.status} ${res.text}`);
}

t.before(async () => {
  svc = await startSvc({ env: { SVC_TEST_OUTBOX_RETRY_MS: String(RETRY_MS) } });
  db = openHomeDb(svc.home);
  sink = await startSink();
  events = await subscribe(svc.url, svc.ownerToken);
});
t.teardown(async () => {
  events.close();
  db.close();
  await sink.close();
  await svc.stop();
});

t.test('without a transport a send is 503 service_unavailable, after the other checks pass', async (t) => {
  const inbox = await newInbox();
  const res = await api(svc.url, 'POST', sendPath(inbox), { token: await keyFor(inbox), body: { to: 'bob@remote.example', subject: 'Hi', text: 'Hello' } });
  t.equal(res.status, 503);
  t.equal(res.body.code, 'service_unavailable');
  t.match(res.body.fix, /transport/);
  const stored = db.prepare("SELECT count(*) AS c FROM messages WHERE inbox_id = ? AND direction = 'outbound'").get(inbox) as { c: number };
  t.equal(stored.c, 0, 'nothing stored');
  await useSmtp(sink.port);
});

t.test('send with the SDK: queued with {message_id, thread_id}, then sent through the smart host with message.sent', async (t) => {
  const inbox = await newInbox();
  await asOwner('PATCH', `/v0/inboxes/${enc(inbox)}`, { display_name: 'Agent Smith' });
  const before = sink.messages.length;
  const sent = await sdk(await keyFor(inbox)).inboxes.messages.send(inbox, {
    to: ['Bob <bob@remote.example>'],
    cc: 'carol@remote.example',
    bcc: ['dave@remote.example'],
    replyTo: 'replies@home.example',
    subject: 'Quarterly numbers',
    text: 'Numbers attached.',
    html: '<p>Numbers attached.</p>',
    labels: ['reports'],
    headers: { 'X-Campaign': 'q3', 'Auto-Submitted': 'auto-generated' },
    attachments: [{ filename: 'q3.csv', contentType: 'text/csv', content: Buffer.from('a,b\n1,2\n').toString('base64') }],
  });
  t.match(sent.messageId, /^<[0-9a-f-]+@home\.example>$/);
  t.ok(sent.threadId);

  const m = await settled(inbox, sent.messageId);
  t.equal(m.send_status, 'sent');
  t.same((m.labels as string[]).sort(), ['reports', 'sent']);
  t.equal(m.thread_id, sent.threadId);
  t.equal(m.from, `Agent Smith <${inbox}>`);
  t.same(m.bcc, ['dave@remote.example'], 'the sender sees its own bcc');
  t.equal((m.attachments as unknown[]).length, 1);

  const [delivered] = (await sink.waitFor(before + 1)).slice(before);
  t.same(delivered.to.sort(), ['bob@remote.example', 'carol@remote.example', 'dave@remote.example']);
  t.match(delivered.from, /^svc-bounce\+[0-9a-f-]+@home\.example$/, 'VERP return path');
  const parsed = await simpleParser(delivered.raw);
  t.equal(parsed.messageId, sent.messageId);
  t.equal(parsed.subject, 'Quarterly numbers');
  t.equal(parsed.headers.get('x-campaign'), 'q3');
  t.equal(parsed.headers.get('auto-submitted'), 'auto-generated');
  t.notOk(parsed.headers.has('bcc'), 'bcc never in the headers');
  t.equal(parsed.attachments[0].filename, 'q3.csv');

  const event = await events.next('message.sent', (e) => (e.send as { message_id: string }).message_id === sent.messageId);
  t.match(event.send, { inbox_id: inbox, thread_id: sent.threadId, message_id: sent.messageId, recipients: ['bob@remote.example', 'carol@remote.example', 'dave@remote.example'] });

  const raw = await api<{ download_url: string }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.messageId)}/raw`, { token: svc.ownerToken });
  const download = await fetch(raw.body.download_url);
  t.equal(Buffer.compare(Buffer.from(await download.arrayBuffer()), delivered.raw), 0, 'the stored raw MIME is exactly what was sent');
});

t.test('a sent message keeps its reply-free text and HTML, derived with the MIME off the request thread', async (t) => {
  const inbox = await newInbox();
  const sent = await sdk(await keyFor(inbox)).inboxes.messages.send(inbox, {
    to: ['bob@remote.example'],
    subject: 'Re: plans',
    text: 'Friday works.\n\nOn Mon, 2 Mar 2026 at 09:00, Bob <bob@remote.example> wrote:\n> Which day suits you?\n',
    html: '<div>Friday works.</div><blockquote class="gmail_quote">Which day suits you?</blockquote>',
  });
  const m = await message(inbox, sent.messageId);
  t.equal(m.extracted_text, 'Friday works.', 'the quoted history is not in extracted_text');
  t.notMatch(String(m.extracted_html), /Which day suits you/, 'nor in extracted_html');
  t.match(m.text, /Which day suits you/, 'the whole text is kept');
});

t.test('reply, reply-all and forward derive recipients, subject, threading and attachments', async (t) => {
  const inbox = await newInbox();
  const original = await seedMail(
    db,
    simpleMail({ from: 'Alice <alice@remote.example>', to: `${inbox}, bob@remote.example`, cc: 'carol@remote.example', subject: 'Plans', messageId: '<plans-1@remote.example>', references: '<older@remote.example>', body: 'Shall we?' }),
    { inboxId: inbox },
  );
  const client = sdk(await keyFor(inbox));
  const before = sink.messages.length;

  const reply = await client.inboxes.messages.reply(inbox, original.messageId, { text: 'Yes.' });
  t.equal(reply.threadId, original.threadId, 'a reply joins the original thread');
  const r = await settled(inbox, reply.messageId);
  t.same(r.to, ['Alice <alice@remote.example>']);
  t.equal(r.subject, 'Re: Plans');
  t.equal(r.in_reply_to, '<plans-1@remote.example>');
  t.same(r.references, ['<older@remote.example>', '<plans-1@remote.example>']);

  const all = await client.inboxes.messages.replyAll(inbox, original.messageId, { text: 'Yes, all.' });
  const ra = await settled(inbox, all.messageId);
  t.same(ra.to, ['Alice <alice@remote.example>', 'bob@remote.example'], 'original To minus the inbox itself');
  t.same(ra.cc, ['carol@remote.example']);

  const attached = await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox });
  const fwd = await client.inboxes.messages.forward(inbox, attached.messageId, { to: 'erin@remote.example', text: 'FYI' });
  const f = await settled(inbox, fwd.messageId);
  t.match(f.subject, /^Fwd: /);
  t.match(f.text, /^FYI\n\n---------- Forwarded message ---------\nFrom: /);
  t.ok((f.attachments as unknown[]).length >= 1, 'original attachments are included');

  const delivered = (await sink.waitFor(before + 3)).slice(before);
  const parsed = await Promise.all(delivered.map((d) => simpleParser(d.raw)));
  const replyIndex = parsed.findIndex((p) => p.messageId === reply.messageId);
  const replyMime = parsed[replyIndex];
  t.equal(replyMime.inReplyTo, '<plans-1@remote.example>');
  t.same(replyMime.headers.get('references'), ['<older@remote.example>', '<plans-1@remote.example>']);

  // The DKIM signature verifies against the domain's published key (served here by a resolver function).
  const key = db.prepare('SELECT selector, public_key FROM dkim_keys WHERE domain = ?').get('home.example') as { selector: string; public_key: string };
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === `${key.selector}._domainkey.home.example`) return [[`v=DKIM1; k=rsa; p=${key.public_key}`]];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  const verified = await dkimVerify(delivered[replyIndex].raw, { resolver });
  t.equal(verified.results[0]?.status?.result, 'pass', 'DKIM pass');
  t.equal(verified.results[0]?.signingDomain, 'home.example');
  const tampered = Buffer.from(delivered[replyIndex].raw.toString('latin1').replace('Yes.', 'No.'), 'latin1');
  t.not((await dkimVerify(tampered, { resolver })).results[0]?.status?.result, 'pass', 'a changed body does not verify');
  const fwdMime = parsed.find((p) => p.messageId === fwd.messageId)!;
  t.ok(fwdMime.attachments.length >= 1);
});

t.test('idempotency: same key and payload → the original result, once; a different payload → 409; keys are shared across routes', async (t) => {
  const inbox = await newInbox();
  const token = await keyFor(inbox);
  const body = { to: 'bob@remote.example', subject: 'Once', text: 'Only once' };
  const before = sink.messages.length;
  const first = await api<{ message_id: string; thread_id: string }>(svc.url, 'POST', sendPath(inbox), { token, body, headers: { 'idempotency-key': 'order-42.a_b~c' } });
  t.equal(first.status, 200);
  const again = await api(svc.url, 'POST', sendPath(inbox), { token, body: { text: 'Only once', subject: 'Once', to: 'bob@remote.example' }, headers: { 'idempotency-key': 'order-42.a_b~c' } });
  t.same(again.body, first.body, 'key order does not matter');
  const conflict = await api(svc.url, 'POST', sendPath(inbox), { token, body: { ...body, text: 'Changed' }, headers: { 'idempotency-key': 'order-42.a_b~c' } });
  t.equal(conflict.status, 409);
  t.equal(conflict.body.code, 'idempotency_conflict');

  const original = await seedMail(db, simpleMail({ from: 'alice@remote.example', to: inbox, subject: 'Q' }), { inboxId: inbox });
  const crossRoute = await api(svc.url, 'POST', sendPath(inbox, `/${enc(original.messageId)}/reply`), { token, body: { text: 'Only once' }, headers: { 'idempotency-key': 'order-42.a_b~c' } });
  t.equal(crossRoute.status, 409, 'the same key on another route is a different request');

  const otherInbox = await newInbox();
  const scoped = await api(svc.url, 'POST', sendPath(otherInbox), { token: await keyFor(otherInbox), body, headers: { 'idempotency-key': 'order-42.a_b~c' } });
  t.equal(scoped.status, 200, 'keys are scoped to the inbox');
  t.not(scoped.body.message_id, first.body.message_id);

  for (const bad of ['', 'has space', 'x'.repeat(257), 'slash/no']) {
    const res = await api(svc.url, 'POST', sendPath(inbox), { token, body, headers: { 'idempotency-key': bad } });
    t.equal(res.status, 400, `key ${JSON.stringify(bad.slice(0, 10))}`);
    t.equal(res.body.code, 'validation_error');
  }
  await settled(inbox, first.body.message_id);
  await sink.waitFor(before + 2);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(sink.messages.slice(before).filter((m) => m.raw.includes('Subject: Once')).length, 2, 'one copy per inbox, never a second for the repeat');
});

t.test('checks come in the order of spec §4.5', async (t) => {
  const inbox = await newInbox();
  const direct = await keyFor(inbox);
  const body = { to: 'blocked@remote.example', subject: 'x', text: 'x' };
  const big = { to: 'blocked@remote.example', subject: 'x', text: 'x', attachments: [{ filename: 'big.bin', content: Buffer.alloc(5 * 1024 * 1024).toString('base64') }] };

  await asOwner('POST', `/v0/inboxes/${enc(inbox)}/lists/send/block`, { entry: 'blocked@remote.example' });
  await asOwner('PATCH', `/v0/inboxes/${enc(inbox)}`, { status: 'paused' });

  let res = await api(svc.url, 'POST', sendPath(inbox), { token: direct, body: big });
  t.equal(res.status, 413, 'size first');
  t.equal(res.body.code, 'payload_too_large');
  res = await api(svc.url, 'POST', sendPath(inbox), { token: direct, body });
  t.equal(res.status, 403);
  t.equal(res.body.code, 'message_rejected', 'then the send lists');
  t.same(res.body.recipients, ['blocked@remote.example']);
  res = await api(svc.url, 'POST', sendPath(inbox), { token: direct, body: { ...body, to: 'ok@remote.example' } });
  t.equal(res.body.code, 'inbox_paused', 'then the inbox status');
  await asOwner('PATCH', `/v0/inboxes/${enc(inbox)}`, { status: 'active' });

  const readOnly = await keyFor(inbox, ALL, 'read_only');
  res = await api(svc.url, 'POST', sendPath(inbox), { token: readOnly, body: { ...body, to: 'ok@remote.example' } });
  t.equal(res.status, 403);
  t.equal(res.body.code, 'missing_permission', 'read_only policy → missing_permission');
  res = await api(svc.url, 'POST', sendPath(inbox), { token: readOnly, body });
  t.equal(res.body.code, 'message_rejected', 'read_only is checked last');

  const approval = await keyFor(inbox, ALL, 'approval');
  res = await api(svc.url, 'POST', sendPath(inbox), { token: approval, body: { ...body, to: 'ok@remote.example' }, headers: { 'idempotency-key': 'needs-ok' } });
  t.equal(res.status, 403);
  t.equal(res.body.code, 'approval_required');
  t.match(res.body.draft_id, /^[0-9a-f-]{36}$/);
  const event = await events.next('draft.approval_required', (e) => (e.draft as { draft_id: string }).draft_id === res.body.draft_id);
  t.same(Object.keys(event.draft as object).sort(), ['draft_id', 'inbox_id', 'timestamp'], 'no content in draft events');
  const repeat = await api(svc.url, 'POST', sendPath(inbox), { token: approval, body: { ...body, to: 'ok@remote.example' }, headers: { 'idempotency-key': 'needs-ok' } });
  t.equal(repeat.body.draft_id, res.body.draft_id, 'a repeated approval request names the same draft');
  const drafts = db.prepare('SELECT count(*) AS c FROM drafts WHERE inbox_id = ?').get(inbox) as { c: number };
  t.equal(drafts.c, 1);
  const outbound = db.prepare("SELECT count(*) AS c FROM messages WHERE inbox_id = ? AND direction = 'outbound'").get(inbox) as { c: number };
  t.equal(outbound.c, 0, 'nothing was queued by refused sends');
});

t.test('permissions: scope first (404), then each route’s pair', async (t) => {
  const inbox = await newInbox();
  const other = await newInbox();
  const original = await seedMail(db, simpleMail({ from: 'alice@remote.example', to: inbox, subject: 'P' }), { inboxId: inbox });
  const body = { to: 'bob@remote.example', subject: 's', text: 't' };
  let res = await api(svc.url, 'POST', sendPath(other), { token: await keyFor(inbox), body });
  t.equal(res.status, 404);
  res = await api(svc.url, 'POST', sendPath(inbox), { token: await keyFor(inbox, ['message_read']), body });
  t.equal(res.body.code, 'missing_permission');
  t.match(res.body.message, /message_send/);
  res = await api(svc.url, 'POST', sendPath(inbox, `/${enc(original.messageId)}/reply`), { token: await keyFor(inbox, ['message_reply']), body: { text: 'x' } });
  t.match(res.body.message, /message_read/, 'reply also needs message_read');
  res = await api(svc.url, 'POST', sendPath(inbox, `/${enc(original.messageId)}/forward`), { token: await keyFor(inbox, ['message_send']), body });
  t.match(res.body.message, /message_read/, 'forward also needs message_read');
  res = await api(svc.url, 'POST', sendPath(inbox, `/${enc('<nope@x>')}/reply`), { token: await keyFor(inbox), body: { text: 'x' } });
  t.equal(res.status, 404);
  res = await api(svc.url, 'POST', sendPath(inbox, `/${enc(original.messageId)}/reply`), { token: await keyFor(inbox), body: { text: 'x', subject: 'derived' } });
  t.equal(res.body.code, 'validation_error', 'replies derive the subject');
});

t.test('payload rules over HTTP give validation_error or not_supported with a message and fix', async (t) => {
  const inbox = await newInbox();
  const token = await keyFor(inbox);
  const base = { to: 'bob@remote.example', subject: 's', text: 't' };
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    ['no recipients', { ...base, to: [] }, 'validation_error', /at least one recipient/],
    ['51 recipients', { ...base, to: Array.from({ length: 51 }, (_, i) => `r${i}@remote.example`) }, 'validation_error', /at most 50/],
    ['bad address', { ...base, to: 'not an address' }, 'validation_error', /not an email address/],
    ['two reply_to', { ...base, reply_to: ['a@remote.example', 'b@remote.example'] }, 'validation_error', /reply_to/],
    ['subject line break', { ...base, subject: 'a\r\nBcc: x@y.z' }, 'validation_error', /line breaks/],
    ['subject too long', { ...base, subject: 'x'.repeat(999) }, 'validation_error', /998/],
    ['no body', { to: 'bob@remote.example', subject: 's' }, 'validation_error', /text.*html/],
    ['33 attachments', { ...base, attachments: Array.from({ length: 33 }, () => ({ content: 'YQ==' })) }, 'validation_error', /at most 32/],
    ['non-canonical base64', { ...base, attachments: [{ content: 'YR==' }] }, 'validation_error', /canonical base64/],
    ['base64 with newline', { ...base, attachments: [{ content: 'YWJj\nZGVm' }] }, 'validation_error', /canonical base64/],
    ['inline without content_id', { ...base, attachments: [{ content: 'YQ==', content_disposition: 'inline' }] }, 'validation_error', /content_id/],
    ['URL attachment', { ...base, attachments: [{ url: 'https://files.example/a.pdf' }] }, 'not_supported', /URL/],
    ['header not allowed', { ...base, headers: { From: 'ceo@bank.example' } }, 'validation_error', /cannot be set/],
    ['reserved header', { ...base, headers: { References: '<a@b>' } }, 'validation_error', /reserved for threading/],
    ['header injection', { ...base, headers: { 'X-Note': 'ok\r\nBcc: victim@remote.example' } }, 'validation_error', /line break/],
    ['header name too long', { ...base, headers: { [`X-${'a'.repeat(99)}`]: 'v' } }, 'validation_error', /100 bytes/],
    ['header value too long', { ...base, headers: { 'X-Big': 'v'.repeat(2049) } }, 'validation_error', /2048 bytes/],
    ['headers over 16 KiB', { ...base, headers: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`X-H${i}`, 'v'.repeat(2000)])) }, 'validation_error', /16384/],
    ['bad Auto-Submitted', { ...base, headers: { 'Auto-Submitted': 'yes' } }, 'validation_error', /Auto-Submitted/],
    ['system label', { ...base, labels: ['sent'] }, 'validation_error', /System state labels/],
    ['unknown field', { ...base, priority: 'high' }, 'validation_error', /priority|additional/],
    ['open tracking', { ...base, track_opens: true }, 'not_supported', /tracking/],
  ];
  for (const [name, body, code, message] of cases) {
    const res = await api(svc.url, 'POST', sendPath(inbox), { token, body });
    t.equal(res.body.code, code, name);
    t.equal(res.status, code === 'not_supported' ? 400 : 400, `${name}: status`);
    t.match(res.body.message, message, `${name}: message`);
    t.ok(res.body.fix || code === 'validation_error', `${name}: has a fix`);
  }
  const ok = await api(svc.url, 'POST', sendPath(inbox), { token, body: { ...base, to: Array.from({ length: 50 }, (_, i) => `r${i}@remote.example`), subject: 'y'.repeat(998) } });
  t.equal(ok.status, 200, '50 recipients and a 998-character subject are allowed');
});

t.test('outcomes: a 5xx is rejected (provider_rejected), repeated 4xx fail after retries, a lost answer is send_unknown', async (t) => {
  const inbox = await newInbox();
  const token = await keyFor(inbox);
  const send = async (subject: string) =>
    (await api<{ message_id: string }>(svc.url, 'POST', sendPath(inbox), { token, body: { to: 'bob@remote.example', subject, text: 'x' } })).body.message_id;

  sink.mode = 'reject';
  const rejected = await send('rejected');
  let m = await settled(inbox, rejected);
  t.equal(m.send_status, 'rejected');
  t.equal(m.send_reason, 'provider_rejected');
  t.same(m.labels, ['rejected']);
  const rejectEvent = await events.next('message.rejected', (e) => (e.reject as { message_id: string }).message_id === rejected);
  t.equal((rejectEvent.reject as { reason: string }).reason, 'provider_rejected');

  sink.mode = 'defer';
  const deferred = await send('deferred');
  m = await settled(inbox, deferred, 20_000);
  t.equal(m.send_status, 'failed');
  t.equal(m.send_reason, 'transport_failed');
  await events.next('message.failed', (e) => (e.failure as { message_id: string }).message_id === deferred);

  sink.mode = 'hangup';
  const unknown = await send('unknown');
  m = await settled(inbox, unknown);
  t.equal(m.send_status, 'send_unknown');
  t.same(m.labels, ['send_unknown']);
  await events.next('message.send_unknown', (e) => (e.outcome as { message_id: string }).message_id === unknown);
  sink.mode = 'accept';

  const resolvePath = `/v0/inboxes/${enc(inbox)}/messages/${enc(unknown)}/resolve`;
  let res = await api(svc.url, 'POST', resolvePath, { token, body: { decision: 'sent' } });
  t.equal(res.status, 403, 'agents cannot resolve');
  res = await api(svc.url, 'POST', resolvePath, { token: svc.ownerToken, body: { decision: 'maybe' } });
  t.equal(res.status, 400);
  res = await api(svc.url, 'POST', resolvePath, { token: svc.ownerToken, body: { decision: 'sent' } });
  t.equal(res.status, 200);
  m = await message(inbox, unknown);
  t.equal(m.send_status, 'sent');
  t.same(m.labels, ['sent']);
  const confirmed = await events.next('message.sent', (e) => (e.send as { message_id: string }).message_id === unknown);
  t.equal((confirmed.send as { reason: string }).reason, 'owner_confirmed_sent');
  res = await api(svc.url, 'POST', resolvePath, { token: svc.ownerToken, body: { decision: 'failed' } });
  t.equal(res.status, 409, 'only send_unknown can be resolved');

  sink.mode = 'hangup';
  const second = await send('unknown 2');
  await settled(inbox, second);
  sink.mode = 'accept';
  res = await api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/${enc(second)}/resolve`, { token: svc.ownerToken, body: { decision: 'failed' } });
  t.equal(res.status, 200);
  const failed = await events.next('message.failed', (e) => (e.failure as { message_id: string }).message_id === second);
  t.equal((failed.failure as { reason: string }).reason, 'owner_confirmed_not_sent');
  res = await api(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/${enc('<none@x>')}/resolve`, { token: svc.ownerToken, body: { decision: 'failed' } });
  t.equal(res.status, 404);
});

t.test('the outbox rechecks the send lists: a recipient blocked after queueing fails the message', async (t) => {
  const inbox = await newInbox();
  sink.mode = 'defer';
  const res = await api<{ message_id: string }>(svc.url, 'POST', sendPath(inbox), { token: await keyFor(inbox), body: { to: 'late@remote.example', subject: 'late', text: 'x' } });
  t.equal(res.status, 200);
  await asOwner('POST', '/v0/lists/send/block', { entry: 'late@remote.example' });
  const m = await settled(inbox, res.body.message_id, 20_000);
  sink.mode = 'accept';
  await asOwner('DELETE', `/v0/lists/send/block/${enc('late@remote.example')}`);
  t.equal(m.send_status, 'failed');
  t.equal(m.send_reason, 'recipient_refused_by_lists');
  const event = await events.next('message.failed', (e) => (e.failure as { message_id: string }).message_id === res.body.message_id);
  t.equal((event.failure as { reason: string }).reason, 'recipient_refused_by_lists');
});

t.test('a send key is reusable 24 hours after its send became final, not before', async (t) => {
  const inbox = await newInbox();
  const token = await keyFor(inbox);
  const headers = { 'idempotency-key': 'daily-report' };
  const first = await api<{ message_id: string }>(svc.url, 'POST', sendPath(inbox), { token, body: { to: 'bob@remote.example', subject: 'Day 1', text: 'x' }, headers });
  await settled(inbox, first.body.message_id);
  const row = db.prepare('SELECT final_at FROM idempotency_keys WHERE inbox_id = ? AND key = ?').get(inbox, 'daily-report') as { final_at: string | null };
  t.ok(row.final_at, 'the key records when the send became final');
  let res = await api(svc.url, 'POST', sendPath(inbox), { token, body: { to: 'bob@remote.example', subject: 'Day 2', text: 'x' }, headers });
  t.equal(res.status, 409, 'within 24 hours the key still guards the first send');
  // SQL: 24 hours cannot pass in a test, so the stored final_at is moved back a day instead.
  db.prepare('UPDATE idempotency_keys SET final_at = ? WHERE inbox_id = ? AND key = ?').run(new Date(Date.now() - 24 * 3600_000 - 1000).toISOString(), inbox, 'daily-report');
  res = await api(svc.url, 'POST', sendPath(inbox), { token, body: { to: 'bob@remote.example', subject: 'Day 2', text: 'x' }, headers });
  t.equal(res.status, 200, 'after 24 hours the key is new again');
  t.not(res.body.message_id, first.body.message_id);
});

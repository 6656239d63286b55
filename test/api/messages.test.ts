/**
 * Messages, read side (spec §2.3, §2.6, §4.1, §4.5, §6.3) through a real service, with mail
 * seeded while it runs the way the inbound pipeline commits it.
 */
import t from 'tap';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { deliveredEvents, indexedRows, openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { fixture, seedMail, simpleMail } from '../helpers/mail.js';

interface MessageItem {
  message_id: string;
  thread_id: string;
  inbox_id: string;
  labels: string[];
  timestamp: string;
  from: string;
  to: string[];
  subject: string | null;
  preview: string | null;
  attachments: { attachment_id: string; filename: string | null; size: number }[];
  text?: string | null;
}
interface Message extends MessageItem {
  text: string | null;
  html: string | null;
  extracted_text: string | null;
  extracted_html: string | null;
  send_status: string | null;
  send_reason: string | null;
  headers: Record<string, string>;
}
interface MessageList {
  count: number;
  limit: number;
  next_page_token?: string;
  messages: MessageItem[];
}

let svc: RunningSvc;
let db: Db;
let inboxCounter = 0;

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
});
t.teardown(async () => {
  db.close();
  await svc.stop();
});

const newInbox = () => createInbox(svc, `mbox${++inboxCounter}@example.com`);
const key = async (permissions: string[], inboxIds?: string[]) => (await createApiKey(svc, { permissions, inboxIds })).secret;
const at = (minute: number) => new Date(Date.UTC(2025, 3, 1, 9, minute)).toISOString();
const enc = encodeURIComponent;

async function seed(inboxId: string, fields: Parameters<typeof simpleMail>[0], minute: number, hidden?: ('spam' | 'blocked' | 'unauthenticated')[]) {
  return seedMail(db, simpleMail({ to: inboxId, ...fields }), { inboxId, receivedAt: at(minute), hiddenLabels: hidden });
}

const messagesPath = (inbox: string, rest = '') => `/v0/inboxes/${enc(inbox)}/messages${rest}`;

t.test('GET messages lists messages newest first with AgentMail MessageItem fields, without bodies', async (t) => {
  const inbox = await newInbox();
  await seed(inbox, { messageId: '<m1@x.org>', subject: 'First', body: 'one' }, 1);
  await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox, receivedAt: at(2) });
  const res = await api<MessageList>(svc.url, 'GET', messagesPath(inbox), { token: svc.ownerToken });
  t.equal(res.status, 200);
  t.equal(res.body.count, 2);
  t.equal(res.body.limit, 20);
  t.same(
    res.body.messages.map((m) => m.message_id),
    ['<multi-1@example.org>', '<m1@x.org>'],
  );
  t.match(res.body.messages[0], {
    inbox_id: inbox,
    labels: ['received', 'unread'],
    timestamp: at(2),
    from: 'Bob Builder <bob@example.org>',
    to: ['agent@example.com'],
    cc: ['Carol <carol@example.org>'],
    subject: 'Site photos and invoice',
    preview: 'Here is the site photo and the invoice.',
    attachments: [{ filename: 'photo.png' }, { filename: 'invoice.pdf' }],
    headers: { Subject: 'Site photos and invoice' },
    size: Number,
    created_at: String,
    updated_at: String,
  });
  for (const field of ['text', 'html', 'extracted_text', 'extracted_html']) t.notOk(field in res.body.messages[0], `${field} only on the single read`);
  const asc = await api<MessageList>(svc.url, 'GET', messagesPath(inbox, '?ascending=true&limit=1'), { token: svc.ownerToken });
  t.same(
    asc.body.messages.map((m) => m.message_id),
    ['<m1@x.org>'],
  );
  const next = await api<MessageList>(svc.url, 'GET', messagesPath(inbox, `?ascending=true&limit=1&page_token=${enc(asc.body.next_page_token!)}`), { token: svc.ownerToken });
  t.same(
    next.body.messages.map((m) => m.message_id),
    ['<multi-1@example.org>'],
  );
  t.notOk(next.body.next_page_token);
});

t.test('message list filters: time, labels, substring from/to/subject; no senders or recipients', async (t) => {
  const inbox = await newInbox();
  await seed(inbox, { messageId: '<f1@x.org>', subject: 'Invoice 42', from: 'Billing <billing@vendor.example>' }, 1);
  await seed(inbox, { messageId: '<f2@x.org>', subject: 'Hello', from: 'Kim <kim@friends.example>', cc: 'Team <team@corp.example>' }, 2);
  await seed(inbox, { messageId: '<f3@x.org>', subject: 'Re: Invoice 42', from: 'Kim <kim@friends.example>' }, 3);
  await api(svc.url, 'PATCH', messagesPath(inbox, `/${enc('<f2@x.org>')}`), { token: svc.ownerToken, body: { add_labels: ['important'] } });
  const ids = async (query: string) => {
    const res = await api<MessageList>(svc.url, 'GET', messagesPath(inbox, `?${query}`), { token: svc.ownerToken });
    t.equal(res.status, 200, query);
    return res.body.messages.map((m) => m.message_id);
  };
  t.same(await ids(`before=${enc(at(2))}`), ['<f1@x.org>']);
  t.same(await ids(`after=${enc(at(2))}`), ['<f3@x.org>']);
  t.same(await ids('labels=important'), ['<f2@x.org>']);
  t.same(await ids('labels=important&labels=unread'), ['<f2@x.org>']);
  t.same(await ids('from=kim'), ['<f3@x.org>', '<f2@x.org>']);
  t.same(await ids('from=Billing'), ['<f1@x.org>']);
  t.same(await ids('to=team%40corp'), ['<f2@x.org>'], 'to matches every recipient field');
  t.same(await ids('subject=invoice'), ['<f3@x.org>', '<f1@x.org>']);
  t.same(await ids(`subject=${enc('["hello","re:"]')}`), ['<f3@x.org>', '<f2@x.org>'], 'the SDK\'s JSON-encoded arrays work');
  t.same(await ids('from=kim&subject=invoice'), ['<f3@x.org>'], 'filters combine');
  for (const unsupported of ['senders=kim', 'recipients=team', 'q=x']) {
    const res = await api(svc.url, 'GET', messagesPath(inbox, `?${unsupported}`), { token: svc.ownerToken });
    t.equal(res.status, 400, unsupported);
    t.equal((res.body as { code: string }).code, 'validation_error');
  }
  const first = await api<MessageList>(svc.url, 'GET', messagesPath(inbox, '?limit=1&from=kim'), { token: svc.ownerToken });
  const stale = await api(svc.url, 'GET', messagesPath(inbox, `?limit=1&from=billing&page_token=${enc(first.body.next_page_token!)}`), { token: svc.ownerToken });
  t.equal(stale.status, 409, 'a token reused with another filter is stale');
  t.equal((stale.body as { code: string }).code, 'page_token_stale');
});

t.test('GET message returns text, html, extracted_text, extracted_html, send_status and send_reason', async (t) => {
  const inbox = await newInbox();
  await seedMail(db, fixture('quoted-reply.eml'), { inboxId: inbox, receivedAt: at(1) });
  const reader = await key(['message_read']);
  const res = await api<Message>(svc.url, 'GET', messagesPath(inbox, `/${enc('<quoted-1@example.org>')}`), { token: reader });
  t.equal(res.status, 200);
  t.match(res.body, {
    message_id: '<quoted-1@example.org>',
    inbox_id: inbox,
    subject: 'Re: Lunch on Friday?',
    text: /Friday works for me[\s\S]*> Are you free/,
    html: /gmail_quote/,
    extracted_text: "Friday works for me. Let's meet at noon.",
    extracted_html: `<div dir="ltr"><div>Friday works for me. Let's meet at noon.</div></div><br>`,
    send_status: null,
    send_reason: null,
    in_reply_to: '<lunch-0@example.com>',
    references: ['<lunch-0@example.com>'],
  });
  t.ok('send_status' in res.body && 'send_reason' in res.body, 'present, null for received mail');
  const bare = await api<Message>(svc.url, 'GET', messagesPath(inbox, `/${enc('quoted-1@example.org')}`), { token: reader });
  t.equal(bare.status, 200, 'the angle brackets may be left out');
  const slash = await seed(inbox, { messageId: '<a/b+c%d@x.org>', subject: 'Odd id' }, 2);
  const odd = await api<Message>(svc.url, 'GET', messagesPath(inbox, `/${enc(slash.messageId)}`), { token: reader });
  t.equal(odd.status, 200, 'ids with / + % survive URL encoding');
  t.equal(odd.body.message_id, '<a/b+c%d@x.org>');
  t.equal((await api(svc.url, 'GET', messagesPath(inbox, `/${enc('<nope@x.org>')}`), { token: reader })).status, 404);
});

t.test('scope: another inbox\'s messages are 404 before permissions; in scope without permission is 403', async (t) => {
  const mine = await newInbox();
  const theirs = await newInbox();
  await seed(mine, { messageId: '<s1@x.org>' }, 1);
  await seed(theirs, { messageId: '<s2@x.org>' }, 1);
  const noPerms = await key([], [mine]);
  const scoped = await key(['message_read', 'message_update', 'message_delete'], [mine]);
  const routes = (inbox: string, id: string): [string, string, unknown?][] => [
    ['GET', messagesPath(inbox)],
    ['GET', messagesPath(inbox, '/search?q=x')],
    ['GET', messagesPath(inbox, `/${enc(id)}`)],
    ['PATCH', messagesPath(inbox, `/${enc(id)}`), {}],
    ['DELETE', messagesPath(inbox, `/${enc(id)}`)],
    ['POST', messagesPath(inbox, '/batch-get'), { message_ids: [id] }],
    ['POST', messagesPath(inbox, '/batch-update'), { message_ids: [id], add_labels: ['x'] }],
    ['GET', messagesPath(inbox, `/${enc(id)}/raw`)],
    ['GET', messagesPath(inbox, `/${enc(id)}/attachments/att_x`)],
  ];
  for (const [method, path, body] of routes(theirs, '<s2@x.org>')) {
    for (const token of [noPerms, scoped]) {
      const res = await api(svc.url, method, path, { token, body });
      t.equal(res.status, 404, `${method} ${path}`);
    }
  }
  for (const [method, path, body] of routes(mine, '<s1@x.org>')) {
    const res = await api(svc.url, method, path, { token: noPerms, body });
    t.equal(res.status, 403, `${method} ${path} without permission`);
    t.equal((res.body as { code: string }).code, 'missing_permission');
  }
  const readOnly = await key(['message_read'], [mine]);
  t.equal((await api(svc.url, 'PATCH', messagesPath(mine, `/${enc('<s1@x.org>')}`), { token: readOnly, body: { add_labels: ['x'] } })).status, 403, 'PATCH needs message_update');
  t.equal((await api(svc.url, 'DELETE', messagesPath(mine, `/${enc('<s1@x.org>')}`), { token: readOnly })).status, 403, 'DELETE needs message_delete');
});

t.test('hidden messages: invisible without the label permission, listed only with include_*', async (t) => {
  const inbox = await newInbox();
  await seed(inbox, { messageId: '<v1@x.org>', subject: 'Visible' }, 1);
  await seed(inbox, { messageId: '<v2@x.org>', subject: 'Spam' }, 2, ['spam']);
  await seed(inbox, { messageId: '<v3@x.org>', subject: 'Blocked' }, 3, ['blocked']);
  const reader = await key(['message_read']);
  const spamReader = await key(['message_read', 'label_spam_read']);
  const list = async (token: string, query = '') => api<MessageList>(svc.url, 'GET', messagesPath(inbox, query), { token });
  t.same((await list(reader)).body.messages.map((m) => m.message_id), ['<v1@x.org>']);
  t.same((await list(spamReader)).body.messages.map((m) => m.message_id), ['<v1@x.org>'], 'permission alone does not list hidden mail');
  t.same((await list(spamReader, '?include_spam=true')).body.messages.map((m) => m.message_id), ['<v2@x.org>', '<v1@x.org>']);
  const denied = await list(reader, '?include_spam=true');
  t.equal(denied.status, 403);
  t.match(denied.body, { code: 'missing_permission', message: /label_spam_read/ });
  t.equal((await list(spamReader, '?include_blocked=true')).status, 403);
  t.equal((await api(svc.url, 'GET', messagesPath(inbox, `/${enc('<v2@x.org>')}`), { token: reader })).status, 404, 'a spam message is not found without label_spam_read');
  const got = await api<Message>(svc.url, 'GET', messagesPath(inbox, `/${enc('<v2@x.org>')}`), { token: spamReader });
  t.equal(got.status, 200);
  t.same(got.body.labels, ['received', 'spam', 'unread']);
  t.equal((await api(svc.url, 'GET', messagesPath(inbox, `/${enc('<v3@x.org>')}`), { token: spamReader })).status, 404, 'each hidden label needs its own permission');
  t.equal((await api(svc.url, 'GET', messagesPath(inbox, `/${enc('<v2@x.org>')}/raw`), { token: reader })).status, 404, 'raw of hidden mail: not found');
  t.equal((await api(svc.url, 'PATCH', messagesPath(inbox, `/${enc('<v2@x.org>')}`), { token: await key(['message_update']), body: { remove_labels: 'unread' } })).status, 404);
  const notSpam = await api<{ labels: string[] }>(svc.url, 'PATCH', messagesPath(inbox, `/${enc('<v2@x.org>')}`), { token: await key(['message_update', 'label_spam_read']), body: { remove_labels: ['spam'] } });
  t.same(notSpam.body.labels, ['received', 'unread'], 'a caller who may read spam can mark a message as not spam');
  t.same((await list(reader)).body.messages.map((m) => m.message_id), ['<v2@x.org>', '<v1@x.org>']);
});

t.test('PATCH message labels: unread and custom labels are editable; system labels are a validation_error', async (t) => {
  const inbox = await newInbox();
  await seed(inbox, { messageId: '<e1@x.org>' }, 1);
  const editor = await key(['message_read', 'message_update']);
  const path = messagesPath(inbox, `/${enc('<e1@x.org>')}`);
  const res = await api<{ message_id: string; labels: string[] }>(svc.url, 'PATCH', path, { token: editor, body: { add_labels: ['to-do', 'Kunde: Müller'], remove_labels: ['unread'] } });
  t.equal(res.status, 200);
  t.same(res.body, { message_id: '<e1@x.org>', labels: ['Kunde: Müller', 'received', 'to-do'] });
  const both = await api<{ labels: string[] }>(svc.url, 'PATCH', path, { token: editor, body: { add_labels: ['x', 'to-do'], remove_labels: ['to-do'] } });
  t.same(both.body.labels, ['Kunde: Müller', 'received', 'x'], 'removal wins over addition');
  const upper = await api<{ labels: string[] }>(svc.url, 'PATCH', path, { token: editor, body: { add_labels: ['UNREAD'] } });
  t.ok(upper.body.labels.includes('unread'), 'reserved names are case-insensitive');
  for (const label of ['received', 'queued', 'sent', 'send_unknown', 'failed', 'delivered', 'bounced', 'complained', 'rejected', 'deferred', 'Sent']) {
    for (const field of ['add_labels', 'remove_labels']) {
      const bad = await api(svc.url, 'PATCH', path, { token: editor, body: { [field]: [label] } });
      t.equal(bad.status, 400, `${field} ${label}`);
      t.match(bad.body, { code: 'validation_error', message: /System state labels/ });
    }
  }
  const fields = await api(svc.url, 'PATCH', path, { token: editor, body: { labels: ['x'] } });
  t.equal(fields.status, 400, 'unknown fields are rejected');
  const tooMany = await api(svc.url, 'PATCH', path, { token: editor, body: { add_labels: Array.from({ length: 51 }, (_, i) => `l${i}`) } });
  t.equal(tooMany.status, 400);
  const missing = await api(svc.url, 'PATCH', messagesPath(inbox, `/${enc('<none@x.org>')}`), { token: editor, body: { add_labels: ['x'] } });
  t.equal(missing.status, 404);
});

t.test('POST batch-get returns up to 500 messages; missing and hidden ones are omitted', async (t) => {
  const inbox = await newInbox();
  await seed(inbox, { messageId: '<b1@x.org>', body: 'body one' }, 1);
  await seed(inbox, { messageId: '<b2@x.org>' }, 2);
  await seed(inbox, { messageId: '<b3@x.org>' }, 3, ['spam']);
  const reader = await key(['message_read']);
  const res = await api<{ count: number; limit: number; messages: Message[] }>(svc.url, 'POST', messagesPath(inbox, '/batch-get'), {
    token: reader,
    body: { message_ids: ['<b2@x.org>', '<missing@x.org>', '<b3@x.org>', 'b1@x.org', '<b2@x.org>'] },
  });
  t.equal(res.status, 200);
  t.same(
    res.body.messages.map((m) => m.message_id),
    ['<b2@x.org>', '<b1@x.org>'],
    'in request order, once each',
  );
  t.equal(res.body.count, 2);
  t.match(res.body.messages[1], { text: /body one/, extracted_text: 'body one' });
  const spamReader = await key(['message_read', 'label_spam_read']);
  const withSpam = await api<{ messages: Message[] }>(svc.url, 'POST', messagesPath(inbox, '/batch-get'), { token: spamReader, body: { message_ids: ['<b3@x.org>'] } });
  t.same(
    withSpam.body.messages.map((m) => m.message_id),
    ['<b3@x.org>'],
    'hidden means hidden from this caller',
  );
  const max = await api(svc.url, 'POST', messagesPath(inbox, '/batch-get'), { token: reader, body: { message_ids: Array.from({ length: 500 }, (_, i) => `<n${i}@x.org>`) } });
  t.equal(max.status, 200, '500 ids are fine');
  const over = await api(svc.url, 'POST', messagesPath(inbox, '/batch-get'), { token: reader, body: { message_ids: Array.from({ length: 501 }, (_, i) => `<n${i}@x.org>`) } });
  t.equal(over.status, 400, '501 are a validation error');
  t.equal((over.body as { code: string }).code, 'validation_error');
  const extra = await api(svc.url, 'POST', messagesPath(inbox, '/batch-get'), { token: reader, body: { message_ids: ['<b1@x.org>'], full: true } });
  t.equal(extra.status, 400);
});

t.test('POST batch-update edits up to 50 messages atomically; removal wins', async (t) => {
  const inbox = await newInbox();
  for (let i = 1; i <= 3; i++) await seed(inbox, { messageId: `<u${i}@x.org>` }, i);
  const editor = await key(['message_read', 'message_update']);
  const path = messagesPath(inbox, '/batch-update');
  const res = await api<{ count: number; updates: { message_id: string; labels: string[] }[] }>(svc.url, 'POST', path, {
    token: editor,
    body: { message_ids: ['<u1@x.org>', '<u2@x.org>', '<missing@x.org>'], add_labels: ['done', 'archive'], remove_labels: ['unread', 'archive'] },
  });
  t.equal(res.status, 200);
  t.same(res.body.updates, [
    { message_id: '<u1@x.org>', labels: ['done', 'received'] },
    { message_id: '<u2@x.org>', labels: ['done', 'received'] },
  ]);
  t.equal(res.body.count, 2);
  const atomic = await api(svc.url, 'POST', path, { token: editor, body: { message_ids: ['<u1@x.org>', '<u3@x.org>'], add_labels: ['fine', 'delivered'] } });
  t.equal(atomic.status, 400);
  t.match(atomic.body, { code: 'validation_error', message: /delivered/ });
  const check = await api<{ messages: Message[] }>(svc.url, 'POST', messagesPath(inbox, '/batch-get'), { token: editor, body: { message_ids: ['<u1@x.org>', '<u3@x.org>'] } });
  for (const m of check.body.messages) t.notOk(m.labels.includes('fine'), `${m.message_id} untouched after the failed batch`);
  const over = await api(svc.url, 'POST', path, { token: editor, body: { message_ids: Array.from({ length: 51 }, (_, i) => `<n${i}@x.org>`), add_labels: ['x'] } });
  t.equal(over.status, 400, 'more than 50 ids is a validation error');
  const fifty = await api(svc.url, 'POST', path, { token: editor, body: { message_ids: Array.from({ length: 50 }, (_, i) => `<n${i}@x.org>`), add_labels: ['x'] } });
  t.equal(fifty.status, 200);
});

t.test('DELETE message removes it for good and redacts its event payload in the same transaction', async (t) => {
  const inbox = await newInbox();
  const root = await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox, receivedAt: at(1) });
  const reply = await seed(inbox, { messageId: '<r1@x.org>', subject: 'Re: Site photos and invoice', inReplyTo: '<multi-1@example.org>', body: 'keep me' }, 2);
  const deleter = await key(['message_read', 'message_delete']);
  const res = await api(svc.url, 'DELETE', messagesPath(inbox, `/${enc('<multi-1@example.org>')}`), { token: deleter });
  t.equal(res.status, 200);
  t.equal(res.text, '');
  t.equal((await api(svc.url, 'GET', messagesPath(inbox, `/${enc('<multi-1@example.org>')}`), { token: deleter })).status, 404);
  t.equal((await api(svc.url, 'DELETE', messagesPath(inbox, `/${enc('<multi-1@example.org>')}`), { token: deleter })).status, 404, 'deleting twice: not found');
  const event = { payload: deliveredEvents(db, 'seq = ?', root.seq)[0] };
  const payload = JSON.parse(event.payload);
  t.match(payload.message, { message_id: '<multi-1@example.org>', subject: null, preview: null, text: null, html: null, extracted_text: null, extracted_html: null, extracted: null, headers: null, attachments: null, redacted: true });
  t.notMatch(event.payload, /Site photos|invoice|site photo/i, 'no subject, body or attachment name remains');
  const sibling = JSON.parse(deliveredEvents(db, 'seq = ?', reply.seq)[0]);
  t.equal(sibling.message.text.trim(), 'keep me', 'the other message\'s event keeps its own content');
  t.same(sibling.thread.attachments, [], 'its thread summary no longer names the deleted attachments');
  t.equal(indexedRows(db, { rowid: root.messageRowid }), 0, 'gone from the search index');
  const thread = await api<{ message_count: number; messages: { message_id: string }[] }>(svc.url, 'GET', `/v0/threads/${root.threadId}`, { token: deleter });
  t.equal(thread.status, 200, 'the thread stays while it has messages');
  t.same(
    thread.body.messages.map((m) => m.message_id),
    ['<r1@x.org>'],
  );
  await api(svc.url, 'DELETE', messagesPath(inbox, `/${enc('<r1@x.org>')}`), { token: deleter });
  t.equal((await api(svc.url, 'GET', `/v0/threads/${root.threadId}`, { token: deleter })).status, 404, 'deleting the last message deletes the thread');
});

t.test('GET raw and attachment routes return download links', async (t) => {
  const inbox = await newInbox();
  await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox, receivedAt: at(1) });
  const reader = await key(['message_read']);
  const raw = await api<Record<string, string>>(svc.url, 'GET', messagesPath(inbox, `/${enc('<multi-1@example.org>')}/raw`), { token: reader });
  t.equal(raw.status, 200);
  t.same(Object.keys(raw.body).sort(), ['download_url', 'expires_at', 'message_id', 'size'], 'raw returns { download_url, expires_at } with the AgentMail SDK\'s message_id and size');
  t.equal(raw.body.message_id, '<multi-1@example.org>');
  t.match(raw.body.download_url, new RegExp(`^${svc.url}/v0/downloads/`));
  const ttl = Date.parse(raw.body.expires_at) - Date.now();
  t.ok(ttl > 4 * 60_000 && ttl <= 5 * 60_000, 'valid five minutes');
  const message = await api<Message>(svc.url, 'GET', messagesPath(inbox, `/${enc('<multi-1@example.org>')}`), { token: reader });
  const photo = message.body.attachments[0];
  const att = await api<Record<string, unknown>>(svc.url, 'GET', messagesPath(inbox, `/${enc('<multi-1@example.org>')}/attachments/${photo.attachment_id}`), { token: reader });
  t.equal(att.status, 200);
  t.match(att.body, { attachment_id: photo.attachment_id, filename: 'photo.png', size: 70, content_type: 'image/png', content_disposition: 'inline', content_id: 'photo1@example.org', download_url: /\/v0\/downloads\//, expires_at: String });
  t.equal((await api(svc.url, 'GET', messagesPath(inbox, `/${enc('<multi-1@example.org>')}/attachments/att_none`), { token: reader })).status, 404);
});

t.test('GET messages/search ranks by relevance and never returns hidden mail; tokens go stale on index change', async (t) => {
  const inbox = await newInbox();
  await seed(inbox, { messageId: '<q1@x.org>', subject: 'Misc', body: 'A long note about many things, including one mention of a harpsichord somewhere in the middle of lots of words.' }, 1);
  await seed(inbox, { messageId: '<q2@x.org>', subject: 'Harpsichord tuning', body: 'The harpsichord needs tuning.' }, 2);
  await seed(inbox, { messageId: '<q3@x.org>', subject: 'Harpsichord harpsichord', body: 'harpsichord harpsichord' }, 3, ['unauthenticated']);
  const owner = svc.ownerToken;
  const res = await api<MessageList>(svc.url, 'GET', messagesPath(inbox, '/search?q=harpsichord'), { token: owner });
  t.equal(res.status, 200);
  t.same(
    res.body.messages.map((m) => m.message_id),
    ['<q2@x.org>', '<q1@x.org>'],
  );
  const page = await api<MessageList>(svc.url, 'GET', messagesPath(inbox, '/search?q=harpsichord&limit=1'), { token: owner });
  t.same(
    page.body.messages.map((m) => m.message_id),
    ['<q2@x.org>'],
  );
  const page2 = await api<MessageList>(svc.url, 'GET', messagesPath(inbox, `/search?q=harpsichord&limit=1&page_token=${enc(page.body.next_page_token!)}`), { token: owner });
  t.same(
    page2.body.messages.map((m) => m.message_id),
    ['<q1@x.org>'],
  );
  await api(svc.url, 'DELETE', messagesPath(inbox, `/${enc('<q1@x.org>')}`), { token: owner });
  const stale = await api(svc.url, 'GET', messagesPath(inbox, `/search?q=harpsichord&limit=1&page_token=${enc(page.body.next_page_token!)}`), { token: owner });
  t.equal(stale.status, 409, 'a delete changes the index, so the token is stale');
});

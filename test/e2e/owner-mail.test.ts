/**
 * The owner web app's mail list routes (docs/web-app.md "Mail"): one list over the inboxes the
 * owner chose, `has_attachment`, full-text search over the chosen inboxes, unread thread counts
 * per inbox; with the owner's browser session and the owner bearer, against a real `svc serve`.
 */
import t from 'tap';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { createInbox } from '../helpers/seed.js';

const svc = await startSvc();
t.teardown(() => svc.stop());
const session = await setupOwner(svc);
const asSession = { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } };
const a = await createInbox(svc, 'a@mail.test');
const b = await createInbox(svc, 'b@mail.test');
const c = await createInbox(svc, 'c@mail.test');

const db = openHomeDb(svc.home);
t.teardown(() => db.close());
await seedMail(db, simpleMail({ from: 'Ada <ada@far.test>', to: a, subject: 'For A', body: 'apples' }), { inboxId: a, receivedAt: '2026-01-01T10:00:00.000Z' });
await seedMail(db, simpleMail({ from: 'Bob <bob@far.test>', to: b, subject: 'For B', body: 'bananas' }), { inboxId: b, receivedAt: '2026-01-01T11:00:00.000Z' });
await seedMail(db, simpleMail({ from: 'Cy <cy@far.test>', to: c, subject: 'For C', body: 'cherries' }), { inboxId: c, receivedAt: '2026-01-01T12:00:00.000Z' });
await seedMail(db, 'multipart-attachment.eml', { inboxId: b, receivedAt: '2026-01-01T13:00:00.000Z' });
await seedMail(db, simpleMail({ from: 'spam@far.test', to: a, subject: 'Hidden spam', body: 'apples' }), { inboxId: a, hiddenLabels: ['spam'] });

type Threads = { threads: { inbox_id: string; subject: string; attachments: unknown[] }[]; next_page_token?: string };
const q = (ids: string[], extra = '') => `?${ids.map((i) => `inbox_ids=${encodeURIComponent(i)}`).join('&')}${extra}`;

t.test('one list over the chosen inboxes, newest first', async (t) => {
  const res = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([a, c])}`, asSession);
  t.equal(res.status, 200);
  t.same(res.body.threads.map((x) => x.subject), ['For C', 'For A'], 'only a and c, no hidden spam');
  const all = await api<Threads>(svc.url, 'GET', '/v0/owner/mail/threads', { token: svc.ownerToken });
  t.equal(all.status, 200, 'the owner bearer works too');
  t.same(new Set(all.body.threads.map((x) => x.inbox_id)), new Set([a, b, c]), 'no choice: every inbox');
});

t.test('has_attachment and the usual filters', async (t) => {
  const res = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([a, b, c], '&has_attachment=true')}`, asSession);
  t.equal(res.status, 200);
  t.equal(res.body.threads.length, 1, 'only the thread with an attachment');
  t.ok(res.body.threads[0].attachments.length > 0);
  const from = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([], '&senders=bob%40far.test')}`, asSession);
  t.same(from.body.threads.map((x) => x.subject), ['For B']);
});

t.test('exclude_labels leaves out archived threads until a new message arrives in them', async (t) => {
  const listed = await api<{ threads: { thread_id: string; subject: string }[] }>(svc.url, 'GET', `/v0/owner/mail/threads${q([a])}`, asSession);
  const thread = listed.body.threads.find((x) => x.subject === 'For A')!;
  t.equal((await api(svc.url, 'PATCH', `/v0/threads/${thread.thread_id}`, { ...asSession, body: { add_labels: ['archived'] } })).status, 200);
  const inbox = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([a], '&exclude_labels=archived')}`, asSession);
  t.same(inbox.body.threads, [], 'archived: out of the list');
  const archive = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([a], '&labels=archived')}`, asSession);
  t.same(archive.body.threads.map((x) => x.subject), ['For A'], 'still there under its label');
  const first = await api<{ messages: { message_id: string }[] }>(svc.url, 'GET', `/v0/inboxes/${encodeURIComponent(a)}/messages`, asSession);
  await seedMail(db, simpleMail({ from: 'Ada <ada@far.test>', to: a, subject: 'Re: For A', inReplyTo: first.body.messages[0].message_id, body: 'more apples' }), { inboxId: a });
  const back = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([a], '&exclude_labels=archived')}`, asSession);
  t.equal(back.body.threads.length, 1, 'a new message brings the thread back');
});

t.test('a page token continues only the same choice of inboxes', async (t) => {
  const first = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([a, b, c], '&limit=1')}`, asSession);
  t.ok(first.body.next_page_token);
  const next = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q([a, b, c], `&limit=1&page_token=${first.body.next_page_token}`)}`, asSession);
  t.equal(next.status, 200);
  const other = await api<{ code: string }>(svc.url, 'GET', `/v0/owner/mail/threads${q([a], `&limit=1&page_token=${first.body.next_page_token}`)}`, asSession);
  t.equal(other.status, 409);
  t.equal(other.body.code, 'page_token_stale');
});

t.test('search over the chosen inboxes', async (t) => {
  const hit = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads/search${q([b], '&q=bananas')}`, asSession);
  t.equal(hit.status, 200);
  t.same(hit.body.threads.map((x) => x.subject), ['For B']);
  const miss = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads/search${q([a], '&q=bananas')}`, asSession);
  t.same(miss.body.threads, [], 'not in the chosen inbox');
});

t.test('unread thread counts per inbox, hidden mail not counted; reading lowers them', async (t) => {
  const before = await api<{ inboxes: { inbox_id: string; unread_threads: number }[] }>(svc.url, 'GET', '/v0/owner/mail/unread', asSession);
  t.equal(before.status, 200);
  t.same(before.body.inboxes, [
    { inbox_id: a, unread_threads: 1 },
    { inbox_id: b, unread_threads: 2 },
    { inbox_id: c, unread_threads: 1 },
  ]);
  const list = await api<{ threads: { thread_id: string }[] }>(svc.url, 'GET', `/v0/owner/mail/threads${q([c])}`, asSession);
  const read = await api(svc.url, 'PATCH', `/v0/threads/${list.body.threads[0].thread_id}`, { ...asSession, body: { remove_labels: ['unread'] } });
  t.equal(read.status, 200);
  const after = await api<{ inboxes: { inbox_id: string; unread_threads: number }[] }>(svc.url, 'GET', '/v0/owner/mail/unread', asSession);
  t.same(after.body.inboxes.map((x) => x.inbox_id), [a, b], 'c has nothing unread now');
});

t.test("svc's own authentication verdict of a message, null when it was not kept", async (t) => {
  const auth = {
    spf: { result: 'pass' as const, domain: 'far.test' },
    dkim: { result: 'pass' as const, signatures: [{ domain: 'far.test', selector: 's1', result: 'pass' as const, aligned: true }] },
    dmarc: { result: 'pass' as const, policy: 'reject', domain: 'far.test' },
    arc: { result: 'none' as const },
  };
  const signed = await seedMail(db, simpleMail({ from: 'Dee <dee@far.test>', to: c, subject: 'Signed', messageId: '<signed-1@far.test>' }), { inboxId: c, auth });
  const path = (id: string) => `/v0/owner/mail/inboxes/${encodeURIComponent(c)}/messages/${encodeURIComponent(id)}/authentication`;
  const res = await api<{ message_id: string; authentication: unknown }>(svc.url, 'GET', path(signed.messageId), asSession);
  t.equal(res.status, 200);
  t.same(res.body, { message_id: '<signed-1@far.test>', authentication: auth });
  const list = await api<{ messages: { message_id: string; subject: string }[] }>(svc.url, 'GET', `/v0/inboxes/${encodeURIComponent(c)}/messages`, asSession);
  const unsigned = list.body.messages.find((m) => m.subject === 'For C')!;
  t.same((await api(svc.url, 'GET', path(unsigned.message_id), asSession)).body, { message_id: unsigned.message_id, authentication: null });
  const missing = await api<{ code: string }>(svc.url, 'GET', path('<nope@far.test>'), asSession);
  t.equal(missing.status, 404);
  t.equal(missing.body.code, 'not_found');
});

t.test('bad input gets the documented error', async (t) => {
  const tooMany = await api<{ code: string }>(svc.url, 'GET', `/v0/owner/mail/threads${q(Array.from({ length: 101 }, (_, i) => `x${i}@mail.test`))}`, asSession);
  t.equal(tooMany.status, 400);
  t.equal(tooMany.body.code, 'validation_error');
  const unknown = await api<{ code: string }>(svc.url, 'GET', '/v0/owner/mail/threads?nope=1', asSession);
  t.equal(unknown.status, 400);
  const emptyQ = await api<{ code: string }>(svc.url, 'GET', '/v0/owner/mail/threads/search', asSession);
  t.equal(emptyQ.status, 400);
  const absent = await api<Threads>(svc.url, 'GET', `/v0/owner/mail/threads${q(['nobody@mail.test'])}`, asSession);
  t.equal(absent.status, 200);
  t.same(absent.body.threads, [], 'an inbox that does not exist lists nothing');
});

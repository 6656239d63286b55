/**
 * Threads (spec §2.2, §2.3, §4.1, §4.4) through a real service: mail is seeded while it runs,
 * the way the inbound pipeline commits it (real MIME, commitInbound, the service's own database).
 */
import t from 'tap';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { deliveredEvents, indexedRows, openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { fixture, seedMail, simpleMail } from '../helpers/mail.js';

interface ThreadItem {
  thread_id: string;
  inbox_id: string;
  labels: string[];
  timestamp: string;
  senders: string[];
  recipients: string[];
  subject: string | null;
  preview: string | null;
  message_count: number;
  last_message_id: string;
  attachments: { attachment_id: string; filename: string | null }[];
  size: number;
  created_at: string;
  updated_at: string;
}
interface ThreadList {
  count: number;
  limit: number;
  next_page_token?: string;
  threads: ThreadItem[];
}
interface Thread extends ThreadItem {
  count: number;
  limit: number;
  next_page_token?: string;
  messages: { message_id: string; text: string | null; extracted_text: string | null; labels: string[] }[];
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

/** A fresh inbox per test keeps the tests independent on one service. */
const newInbox = () => createInbox(svc, `agent${++inboxCounter}@example.com`);

const key = async (permissions: string[], inboxIds?: string[]) => (await createApiKey(svc, { permissions, inboxIds })).secret;

const at = (minute: number) => new Date(Date.UTC(2025, 2, 1, 12, minute)).toISOString();

async function seed(inboxId: string, fields: Parameters<typeof simpleMail>[0], minute: number, hidden?: ('spam' | 'blocked' | 'unauthenticated')[]) {
  return seedMail(db, simpleMail({ to: inboxId, ...fields }), { inboxId, receivedAt: at(minute), hiddenLabels: hidden });
}

const enc = encodeURIComponent;

t.test('GET /threads lists threads newest first by last activity, with AgentMail ThreadItem fields', async (t) => {
  const inbox = await newInbox();
  const a = await seed(inbox, { messageId: '<a1@x.org>', subject: 'Alpha', from: 'Ann <ann@x.org>' }, 1);
  const b = await seed(inbox, { messageId: '<b1@x.org>', subject: 'Beta', from: 'Bo <bo@x.org>' }, 2);
  const c = await seed(inbox, { messageId: '<c1@x.org>', subject: 'Gamma' }, 3);
  // A reply moves Alpha to the top.
  await seed(inbox, { messageId: '<a2@x.org>', subject: 'Re: Alpha', from: 'Zed <zed@x.org>', to: `${inbox}, Ann <ann@x.org>`, inReplyTo: '<a1@x.org>', body: 'Reply body here' }, 4);
  const res = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads`, { token: svc.ownerToken });
  t.equal(res.status, 200);
  t.equal(res.body.count, 3);
  t.equal(res.body.limit, 20, 'default limit');
  t.notOk('next_page_token' in res.body, 'no token when nothing more exists');
  t.same(
    res.body.threads.map((x) => x.thread_id),
    [a.threadId, c.threadId, b.threadId],
  );
  t.match(res.body.threads[0], {
    inbox_id: inbox,
    thread_id: a.threadId,
    labels: ['received', 'unread'],
    timestamp: at(4),
    senders: ['Ann <ann@x.org>', 'Zed <zed@x.org>'],
    recipients: [inbox, 'Ann <ann@x.org>'],
    subject: 'Alpha',
    preview: 'Reply body here',
    message_count: 2,
    last_message_id: '<a2@x.org>',
    attachments: [],
    size: Number,
    created_at: at(1),
    updated_at: at(4),
  });
  t.match(res.body.threads[0].timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'RFC 3339 UTC with milliseconds');
});

t.test('limit and page_token page through threads; ascending reverses the order', async (t) => {
  const inbox = await newInbox();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await seed(inbox, { messageId: `<p${i}@x.org>`, subject: `P${i}` }, i)).threadId);
  const seen: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const res = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?limit=2${token ? `&page_token=${enc(token)}` : ''}`, { token: svc.ownerToken });
    t.equal(res.status, 200);
    t.equal(res.body.limit, 2);
    seen.push(...res.body.threads.map((x) => x.thread_id));
    token = res.body.next_page_token;
    pages++;
  } while (token);
  t.equal(pages, 3);
  t.same(seen, [...ids].reverse(), 'newest first, each thread once');
  const asc = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?ascending=true&limit=3`, { token: svc.ownerToken });
  t.same(
    asc.body.threads.map((x) => x.thread_id),
    ids.slice(0, 3),
  );
  const next = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?ascending=true&limit=3&page_token=${enc(asc.body.next_page_token!)}`, { token: svc.ownerToken });
  t.same(
    next.body.threads.map((x) => x.thread_id),
    ids.slice(3),
  );
  for (const bad of ['limit=0', 'limit=101', 'limit=abc']) {
    const res = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?${bad}`, { token: svc.ownerToken });
    t.equal(res.status, 400, bad);
    t.equal((res.body as { code: string }).code, 'validation_error');
  }
  const forged = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?page_token=abc.def`, { token: svc.ownerToken });
  t.equal(forged.status, 400, 'a token that was not issued is a validation error');
});

t.test('a list page token reused with other filters is page_token_stale', async (t) => {
  const inbox = await newInbox();
  for (let i = 0; i < 3; i++) await seed(inbox, { messageId: `<s${i}@x.org>`, subject: `Stale ${i}` }, i);
  const first = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?limit=1&subject=Stale`, { token: svc.ownerToken });
  const token = enc(first.body.next_page_token!);
  const same = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?limit=1&subject=Stale&page_token=${token}`, { token: svc.ownerToken });
  t.equal(same.status, 200, 'same filters, another limit: fine');
  for (const changed of ['subject=Other', 'ascending=true', 'labels=unread&subject=Stale', 'subject=Stale&include_spam=true']) {
    const res = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?limit=1&${changed}&page_token=${token}`, { token: svc.ownerToken });
    t.equal(res.status, 409, changed);
    t.match(res.body, { code: 'page_token_stale', fix: String });
  }
  const otherCaller = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?limit=1&subject=Stale&page_token=${token}`, { token: await key(['message_read']) });
  t.equal(otherCaller.status, 409, 'tokens are bound to the caller');
  const otherForm = await api(svc.url, 'GET', `/v0/threads?limit=1&subject=Stale&page_token=${token}`, { token: svc.ownerToken });
  t.equal(otherForm.status, 409, 'and to the route');
});

t.test('list filters: before, after, labels, senders, recipients, subject', async (t) => {
  const inbox = await newInbox();
  const a = await seed(inbox, { messageId: '<f1@x.org>', subject: 'Invoice March', from: 'Billing Dept <billing@vendor.example>', to: `${inbox}` }, 1);
  const b = await seed(inbox, { messageId: '<f2@x.org>', subject: 'Lunch plans', from: 'Kim <kim@friends.example>', to: `${inbox}`, cc: 'Lee <lee@friends.example>' }, 2);
  const c = await seed(inbox, { messageId: '<f3@x.org>', subject: 'Über Straße', from: 'Öz <oz@vendor.example>' }, 3);
  await api(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}/threads/${b.threadId}`, { token: svc.ownerToken, body: { add_labels: ['follow-up', 'personal'], remove_labels: ['unread'] } });
  const list = async (query: string) => {
    const res = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?${query}`, { token: svc.ownerToken });
    t.equal(res.status, 200, query);
    return res.body.threads.map((x) => x.thread_id);
  };
  t.same(await list(`before=${enc(at(2))}`), [a.threadId], 'before is exclusive');
  t.same(await list(`after=${enc(at(2))}`), [c.threadId], 'after is exclusive');
  t.same(await list(`after=${enc(at(1))}&before=${enc(at(3))}`), [b.threadId]);
  t.same(await list('labels=follow-up'), [b.threadId]);
  t.same(await list('labels=follow-up&labels=personal'), [b.threadId], 'every label must be present');
  t.same(await list('labels=follow-up&labels=nope'), []);
  t.same(await list(`labels=${enc('["follow-up","personal"]')}`), [b.threadId], 'the SDK\'s JSON-encoded array works too');
  t.same(await list('labels=unread'), [c.threadId, a.threadId]);
  t.same(await list('senders=vendor.example'), [c.threadId, a.threadId], 'senders: substring of the From');
  t.same(await list('senders=BILLING'), [a.threadId], 'case-insensitive');
  t.same(await list('senders=billing&senders=kim'), [b.threadId, a.threadId], 'several values: any of them');
  t.same(await list('recipients=lee%40friends'), [b.threadId], 'recipients include Cc');
  t.same(await list('subject=invoice'), [a.threadId]);
  t.same(await list(`subject=${enc('über')}`), [c.threadId], 'non-ASCII case folding');
  t.same(await list(`subject=${enc('["lunch","invoice"]')}`), [b.threadId, a.threadId]);
  const bad = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?before=yesterday`, { token: svc.ownerToken });
  t.equal(bad.status, 400, 'timestamps must be RFC 3339');
  const unknown = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads?from=kim`, { token: svc.ownerToken });
  t.equal(unknown.status, 400, 'unknown query parameters are rejected');
});

t.test('hidden mail is left out of lists unless included; include_* needs the label permission', async (t) => {
  const inbox = await newInbox();
  const clean = await seed(inbox, { messageId: '<h0@x.org>', subject: 'Clean' }, 1);
  const spam = await seed(inbox, { messageId: '<h1@x.org>', subject: 'Spammy' }, 2, ['spam']);
  const blocked = await seed(inbox, { messageId: '<h2@x.org>', subject: 'Blocked' }, 3, ['blocked']);
  const unauth = await seed(inbox, { messageId: '<h3@x.org>', subject: 'Unauth' }, 4, ['unauthenticated']);
  // A hidden reply inside a visible thread: the thread shows, without that message.
  await seed(inbox, { messageId: '<h4@x.org>', subject: 'Re: Clean', inReplyTo: '<h0@x.org>', from: 'Spammer <s@spam.example>' }, 5, ['spam']);
  const reader = await key(['message_read']);
  const spamReader = await key(['message_read', 'label_spam_read']);
  const all = await key(['message_read', 'label_spam_read', 'label_blocked_read', 'label_unauthenticated_read', 'label_trash_read']);
  const ids = async (token: string, query = '') => {
    const res = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads${query}`, { token });
    return { status: res.status, body: res.body, ids: res.body.threads?.map((x) => x.thread_id) };
  };
  for (const token of [reader, svc.ownerToken]) {
    const res = await ids(token);
    t.same(res.ids, [clean.threadId], 'default: hidden mail is left out, even for the owner');
    t.match(res.body.threads[0], { message_count: 1, senders: ['Sender <sender@example.org>'], labels: ['received', 'unread'], last_message_id: '<h0@x.org>' });
  }
  for (const flag of ['include_spam', 'include_blocked', 'include_unauthenticated', 'include_trash']) {
    const res = await ids(reader, `?${flag}=true`);
    t.equal(res.status, 403, flag);
    t.match(res.body, { code: 'missing_permission', message: new RegExp(`label_${flag.slice(8)}_read`) });
  }
  t.equal((await ids(reader, '?include_spam=false')).status, 200, 'false asks for nothing');
  const withSpam = await ids(spamReader, '?include_spam=true');
  t.same(withSpam.ids, [clean.threadId, spam.threadId]);
  t.match(withSpam.body.threads[0], { message_count: 2, labels: ['received', 'spam', 'unread'], last_message_id: '<h4@x.org>' });
  t.same((await ids(all, '?include_spam=true&include_blocked=true&include_unauthenticated=true')).ids, [clean.threadId, unauth.threadId, blocked.threadId, spam.threadId]);
  t.same((await ids(svc.ownerToken, '?include_blocked=true')).ids, [clean.threadId, blocked.threadId], 'the owner holds every label permission');
  // Direct reads show hidden mail to callers with the permission, and 404 to the others.
  const get = (token: string, id: string) => api<Thread>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/${id}`, { token });
  t.equal((await get(reader, spam.threadId)).status, 404);
  t.equal((await get(spamReader, spam.threadId)).status, 200);
  t.same(
    (await get(reader, clean.threadId)).body.messages.map((m) => m.message_id),
    ['<h0@x.org>'],
  );
  t.same(
    (await get(spamReader, clean.threadId)).body.messages.map((m) => m.message_id),
    ['<h0@x.org>', '<h4@x.org>'],
  );
  // trash is hidden the same way once a caller with its permission sets it.
  await api(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}/threads/${clean.threadId}`, { token: svc.ownerToken, body: { add_labels: 'trash' } });
  t.same((await ids(reader)).ids, [], 'trashed threads leave the default list');
  t.same((await ids(all, '?include_trash=true')).ids, [clean.threadId]);
  t.equal((await get(reader, clean.threadId)).status, 404, 'a trashed thread is invisible to a caller without label_trash_read');
  const cannotUntrash = await api(svc.url, 'PATCH', `/v0/inboxes/${enc(inbox)}/threads/${clean.threadId}`, { token: await key(['message_read', 'message_update']), body: { remove_labels: ['trash'] } });
  t.equal(cannotUntrash.status, 403, 'taking mail out of trash needs label_trash_read');
});

t.test('scope: out-of-scope inboxes and threads are 404 before permissions are checked (403)', async (t) => {
  const mine = await newInbox();
  const theirs = await newInbox();
  const own = await seed(mine, { messageId: '<sc1@x.org>', subject: 'Mine' }, 1);
  const other = await seed(theirs, { messageId: '<sc2@x.org>', subject: 'Theirs' }, 2);
  const scoped = await key(['message_read', 'message_update', 'message_delete'], [mine]);
  const noPerms = await key([], [mine]);
  const paths = (inbox: string, thread: string) => [
    ['GET', `/v0/inboxes/${enc(inbox)}/threads`],
    ['GET', `/v0/inboxes/${enc(inbox)}/threads/search?q=x`],
    ['GET', `/v0/inboxes/${enc(inbox)}/threads/${thread}`],
    ['PATCH', `/v0/inboxes/${enc(inbox)}/threads/${thread}`],
    ['DELETE', `/v0/inboxes/${enc(inbox)}/threads/${thread}`],
    ['GET', `/v0/inboxes/${enc(inbox)}/threads/${thread}/attachments/att_x`],
    ['GET', `/v0/threads/${thread}`],
    ['PATCH', `/v0/threads/${thread}`],
    ['DELETE', `/v0/threads/${thread}`],
    ['GET', `/v0/threads/${thread}/attachments/att_x`],
  ];
  for (const [method, path] of paths(theirs, other.threadId)) {
    for (const token of [scoped, noPerms]) {
      const res = await api(svc.url, method, path, { token, body: method === 'PATCH' ? {} : undefined });
      t.equal(res.status, 404, `${method} ${path} out of scope`);
      t.equal((res.body as { code: string }).code, 'not_found');
    }
  }
  for (const [method, path] of paths(mine, own.threadId)) {
    const res = await api(svc.url, method, path, { token: noPerms, body: method === 'PATCH' ? {} : undefined });
    t.equal(res.status, 403, `${method} ${path} in scope without permission`);
    t.equal((res.body as { code: string }).code, 'missing_permission');
  }
  for (const path of ['/v0/threads', '/v0/threads/search?q=x']) {
    const res = await api(svc.url, 'GET', path, { token: noPerms });
    t.equal(res.status, 403, `${path} without message_read`);
  }
  const wrongInbox = await api(svc.url, 'GET', `/v0/inboxes/${enc(mine)}/threads/${other.threadId}`, { token: svc.ownerToken });
  t.equal(wrongInbox.status, 404, 'a thread is only found under its own inbox');
  const unknown = await api(svc.url, 'GET', '/v0/threads/0190f3f0-0000-7000-8000-000000000000', { token: svc.ownerToken });
  t.equal(unknown.status, 404);
  const noInbox = await api(svc.url, 'GET', '/v0/inboxes/nobody%40example.com/threads', { token: svc.ownerToken });
  t.equal(noInbox.status, 404);
});

t.test('instance-wide /threads resolves within the caller\'s scope', async (t) => {
  const one = await newInbox();
  const two = await newInbox();
  const three = await newInbox();
  // Far-future timestamps keep these on the first page of the owner's instance-wide list.
  const late = (m: number) => new Date(Date.UTC(2030, 0, 1, 0, m)).toISOString();
  const a = await seedMail(db, simpleMail({ messageId: '<w1@x.org>', subject: 'One' }), { inboxId: one, receivedAt: late(1) });
  const b = await seedMail(db, simpleMail({ messageId: '<w2@x.org>', subject: 'Two' }), { inboxId: two, receivedAt: late(2) });
  const c = await seedMail(db, simpleMail({ messageId: '<w3@x.org>', subject: 'Three' }), { inboxId: three, receivedAt: late(3) });
  const scoped = await key(['message_read'], [one, two]);
  const list = await api<ThreadList>(svc.url, 'GET', '/v0/threads', { token: scoped });
  t.equal(list.status, 200);
  t.same(
    list.body.threads.map((x) => x.thread_id),
    [b.threadId, a.threadId],
    'threads of every inbox in scope, merged by last activity',
  );
  const paged = await api<ThreadList>(svc.url, 'GET', '/v0/threads?limit=1', { token: scoped });
  const rest = await api<ThreadList>(svc.url, 'GET', `/v0/threads?limit=1&page_token=${enc(paged.body.next_page_token!)}`, { token: scoped });
  t.same(
    [...paged.body.threads, ...rest.body.threads].map((x) => x.thread_id),
    [b.threadId, a.threadId],
  );
  const owner = await api<ThreadList>(svc.url, 'GET', '/v0/threads?limit=3', { token: svc.ownerToken });
  t.same(
    owner.body.threads.map((x) => x.thread_id),
    [c.threadId, b.threadId, a.threadId],
    'the owner sees every inbox',
  );
  const get = await api<Thread>(svc.url, 'GET', `/v0/threads/${a.threadId}`, { token: scoped });
  t.equal(get.status, 200);
  t.equal(get.body.inbox_id, one);
  t.equal((await api(svc.url, 'GET', `/v0/threads/${c.threadId}`, { token: scoped })).status, 404, 'outside the scope: not found');
});

t.test('GET thread returns its messages: a page holds the newest messages, oldest first within the page', async (t) => {
  const inbox = await newInbox();
  const root = await seed(inbox, { messageId: '<t0@x.org>', subject: 'Long thread', body: 'first' }, 0);
  for (let i = 1; i < 5; i++) await seed(inbox, { messageId: `<t${i}@x.org>`, subject: 'Re: Long thread', inReplyTo: `<t${i - 1}@x.org>`, body: `reply ${i}\n\nOn Mon, someone wrote:\n> earlier` }, i);
  const full = await api<Thread>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/${root.threadId}`, { token: svc.ownerToken });
  t.equal(full.status, 200);
  t.match(full.body, { thread_id: root.threadId, inbox_id: inbox, message_count: 5, count: 5, limit: 20, subject: 'Long thread', last_message_id: '<t4@x.org>' });
  t.same(
    full.body.messages.map((m) => m.message_id),
    ['<t0@x.org>', '<t1@x.org>', '<t2@x.org>', '<t3@x.org>', '<t4@x.org>'],
  );
  t.match(full.body.messages[4], { text: /reply 4[\s\S]*> earlier/, extracted_text: 'reply 4', labels: ['received', 'unread'] });
  const page1 = await api<Thread>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/${root.threadId}?limit=2`, { token: svc.ownerToken });
  t.same(
    page1.body.messages.map((m) => m.message_id),
    ['<t3@x.org>', '<t4@x.org>'],
    'the newest two, oldest first',
  );
  t.equal(page1.body.message_count, 5, 'the summary covers the whole thread');
  const page2 = await api<Thread>(svc.url, 'GET', `/v0/threads/${root.threadId}?limit=2&page_token=${enc(page1.body.next_page_token!)}`, { token: svc.ownerToken });
  t.same(
    page2.body.messages.map((m) => m.message_id),
    ['<t1@x.org>', '<t2@x.org>'],
    'both forms of the route page the same thread',
  );
  const page3 = await api<Thread>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/${root.threadId}?limit=2&page_token=${enc(page2.body.next_page_token!)}`, { token: svc.ownerToken });
  t.same(
    page3.body.messages.map((m) => m.message_id),
    ['<t0@x.org>'],
  );
  t.notOk(page3.body.next_page_token);
});

t.test('PATCH thread labels: add and remove on every message; system labels are a validation_error', async (t) => {
  const inbox = await newInbox();
  const root = await seed(inbox, { messageId: '<l0@x.org>', subject: 'Labels' }, 0);
  await seed(inbox, { messageId: '<l1@x.org>', subject: 'Re: Labels', inReplyTo: '<l0@x.org>' }, 1);
  const editor = await key(['message_read', 'message_update']);
  const path = `/v0/inboxes/${enc(inbox)}/threads/${root.threadId}`;
  const res = await api<{ thread_id: string; labels: string[] }>(svc.url, 'PATCH', path, { token: editor, body: { add_labels: ['project-x', 'Waiting on reply'], remove_labels: ['unread'] } });
  t.equal(res.status, 200);
  t.same(res.body, { thread_id: root.threadId, labels: ['Waiting on reply', 'project-x', 'received'] });
  const thread = await api<Thread>(svc.url, 'GET', path, { token: editor });
  for (const m of thread.body.messages) t.same(m.labels, ['Waiting on reply', 'project-x', 'received'], `labels on ${m.message_id}`);
  const instance = await api<{ labels: string[] }>(svc.url, 'PATCH', `/v0/threads/${root.threadId}`, { token: editor, body: { add_labels: 'unread' } });
  t.same(instance.body.labels, ['Waiting on reply', 'project-x', 'received', 'unread'], 'the instance-wide form and a single string work too');
  for (const body of [{ add_labels: ['sent'] }, { remove_labels: ['received'] }, { add_labels: ['ok', 'Delivered'] }, { add_labels: ['ok'], remove_labels: ['queued'] }]) {
    const bad = await api(svc.url, 'PATCH', path, { token: editor, body });
    t.equal(bad.status, 400, JSON.stringify(body));
    t.match(bad.body, { code: 'validation_error', message: /System state labels/ });
  }
  const after = await api<Thread>(svc.url, 'GET', path, { token: editor });
  t.notOk(after.body.labels.includes('ok'), 'a rejected edit changes nothing');
  for (const label of ['', ' padded', 'x'.repeat(65), 'tab\there']) {
    const bad = await api(svc.url, 'PATCH', path, { token: editor, body: { add_labels: [label] } });
    t.equal(bad.status, 400, `label ${JSON.stringify(label)}`);
  }
  const unknownField = await api(svc.url, 'PATCH', path, { token: editor, body: { add_labels: ['a'], labels: ['b'] } });
  t.equal(unknownField.status, 400);
  t.equal((unknownField.body as { code: string }).code, 'validation_error');
  const hidden = await api(svc.url, 'PATCH', path, { token: editor, body: { add_labels: ['spam'] } });
  t.equal(hidden.status, 403, 'moving mail into a hidden label needs its read permission');
  t.match(hidden.body, { code: 'missing_permission', message: /label_spam_read/ });
});

t.test('DELETE thread removes the thread, its messages and search rows, and redacts their events', async (t) => {
  const inbox = await newInbox();
  const root = await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox, receivedAt: at(0) });
  await seed(inbox, { messageId: '<d1@x.org>', subject: 'Re: Site photos and invoice', inReplyTo: '<multi-1@example.org>', body: 'zanzibar' }, 1);
  const deleter = await key(['message_read', 'message_delete']);
  const res = await api(svc.url, 'DELETE', `/v0/threads/${root.threadId}`, { token: deleter });
  t.equal(res.status, 200);
  t.equal(res.text, '', 'an empty 200');
  t.equal((await api(svc.url, 'GET', `/v0/threads/${root.threadId}`, { token: deleter })).status, 404);
  t.equal((db.prepare('SELECT count(*) AS n FROM messages WHERE thread_id = ?').get(root.threadId) as { n: number }).n, 0);
  t.equal(indexedRows(db, { match: 'zanzibar' }), 0, 'search rows are gone');
  const events = deliveredEvents(db, "inbox_id = ? AND event_type = 'message.received'", inbox).map((payload) => ({ payload }));
  t.equal(events.length, 2);
  for (const e of events) {
    t.notMatch(e.payload, /zanzibar|Site photos|invoice\.pdf/, 'no body, subject or attachment name left');
    t.match(JSON.parse(e.payload), { message: { redacted: true, subject: null, text: null }, thread: { redacted: true } });
  }
  t.equal((await api(svc.url, 'DELETE', `/v0/threads/${root.threadId}`, { token: deleter })).status, 404, 'deleting twice: not found');
});

t.test('GET thread attachment: metadata with a download URL', async (t) => {
  const inbox = await newInbox();
  const root = await seedMail(db, fixture('multipart-attachment.eml'), { inboxId: inbox, receivedAt: at(0) });
  const thread = await api<Thread & { attachments: { attachment_id: string }[] }>(svc.url, 'GET', `/v0/threads/${root.threadId}`, { token: svc.ownerToken });
  const pdf = thread.body.attachments.find((a) => a.filename === 'invoice.pdf')!;
  const reader = await key(['message_read']);
  for (const path of [`/v0/threads/${root.threadId}/attachments/${pdf.attachment_id}`, `/v0/inboxes/${enc(inbox)}/threads/${root.threadId}/attachments/${pdf.attachment_id}`]) {
    const res = await api<Record<string, unknown>>(svc.url, 'GET', path, { token: reader });
    t.equal(res.status, 200, path);
    t.match(res.body, {
      attachment_id: pdf.attachment_id,
      filename: 'invoice.pdf',
      size: 78,
      content_type: 'application/pdf',
      content_disposition: 'attachment',
      content_id: null,
      download_url: new RegExp(`^${svc.url}/v0/downloads/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
      expires_at: /Z$/,
    });
    const ttl = Date.parse(res.body.expires_at as string) - Date.now();
    t.ok(ttl > 4 * 60_000 && ttl <= 5 * 60_000, 'valid five minutes');
    t.notOk('text_url' in res.body, 'text_url is never populated');
  }
  const missing = await api(svc.url, 'GET', `/v0/threads/${root.threadId}/attachments/att_nope`, { token: reader });
  t.equal(missing.status, 404);
});

t.test('GET /threads/search ranks by relevance, filters by time and never returns hidden mail', async (t) => {
  const inbox = await newInbox();
  const weak = await seed(inbox, { messageId: '<q1@x.org>', subject: 'Weekly notes', body: 'Lots of unrelated words about gardening, cooking and travel. Also the word telescope appears once here among many many other words that dilute it.' }, 1);
  const strong = await seed(inbox, { messageId: '<q2@x.org>', subject: 'Telescope order', body: 'Your telescope ships tomorrow. Telescope accessories follow.' }, 2);
  await seed(inbox, { messageId: '<q3@x.org>', subject: 'Telescope deal', body: 'Cheap telescope telescope telescope' }, 3, ['spam']);
  await seed(inbox, { messageId: '<q4@x.org>', subject: 'Nothing', body: 'No match here' }, 4);
  const reader = await key(['message_read', 'label_spam_read']);
  const search = (q: string, extra = '') => api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/search?q=${enc(q)}${extra}`, { token: reader });
  const res = await search('telescope');
  t.equal(res.status, 200);
  t.same(
    res.body.threads.map((x) => x.thread_id),
    [strong.threadId, weak.threadId],
    'the better match first; the spam thread never appears, even for a caller allowed to read spam',
  );
  t.same((await search('telescope', `&before=${enc(at(2))}`)).body.threads.map((x) => x.thread_id), [weak.threadId]);
  t.same((await search('telescope', `&after=${enc(at(1))}`)).body.threads.map((x) => x.thread_id), [strong.threadId]);
  t.same((await search('TELESCOPE ships')).body.threads.map((x) => x.thread_id), [strong.threadId], 'all words must match, case-insensitively');
  t.same((await search('teles*')).body.threads.map((x) => x.thread_id), [strong.threadId, weak.threadId], 'a trailing * matches a prefix');
  t.same((await search('sender@example.org')).body.threads.length, 3, 'participants are searchable (every non-spam thread here)');
  t.same((await search('"unbalanced (quote AND OR NEAR')).body.threads, [], 'FTS syntax in the query is taken literally, never an error');
  t.same((await search('!!!')).body.threads, [], 'nothing searchable: empty result');
  t.equal((await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/search`, { token: reader })).status, 400, 'q is required');
  const instance = await api<ThreadList>(svc.url, 'GET', `/v0/threads/search?q=telescope`, { token: await key(['message_read'], [inbox]) });
  t.same(
    instance.body.threads.map((x) => x.thread_id),
    [strong.threadId, weak.threadId],
    'instance-wide search covers the caller\'s scope',
  );
});

t.test('search page tokens go stale when a new message is committed', async (t) => {
  const inbox = await newInbox();
  for (let i = 0; i < 3; i++) await seed(inbox, { messageId: `<g${i}@x.org>`, subject: `Quokka ${i}` }, i);
  const first = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/search?q=quokka&limit=1`, { token: svc.ownerToken });
  const token = enc(first.body.next_page_token!);
  const second = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/search?q=quokka&limit=1&page_token=${token}`, { token: svc.ownerToken });
  t.equal(second.status, 200);
  t.not(second.body.threads[0].thread_id, first.body.threads[0].thread_id);
  const otherQuery = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/search?q=wombat&limit=1&page_token=${token}`, { token: svc.ownerToken });
  t.equal(otherQuery.status, 409);
  await seed(await newInbox(), { messageId: '<g9@x.org>', subject: 'Elsewhere' }, 9);
  const stale = await api(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/search?q=quokka&limit=1&page_token=${token}`, { token: svc.ownerToken });
  t.equal(stale.status, 409, 'any change to the index makes the token stale');
  t.match(stale.body, { code: 'page_token_stale' });
  const restart = await api<ThreadList>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/threads/search?q=quokka&limit=1`, { token: svc.ownerToken });
  t.equal(restart.status, 200, 'starting again without a token works');
});

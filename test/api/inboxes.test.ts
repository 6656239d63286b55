/** Inboxes (spec §2.1, §4.1, §4.3, §5.2): create rules, scope before permission, patch, paging, search, delete. */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { deliveredEvents, indexedRows, openHomeDb } from '../helpers/db.js';
import { seedMail } from '../helpers/mail.js';

interface Inbox {
  inbox_id: string;
  email: string;
  username: string;
  domain: string;
  display_name: string | null;
  status: string;
  metadata: Record<string, unknown> | null;
  client_id: string | null;
  created_at: string;
  updated_at: string;
}
interface InboxPage {
  count: number;
  limit: number;
  next_page_token?: string;
  inboxes: Inbox[];
}

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });
const as = <T = Record<string, unknown>>(token: string, method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token, body });
const enc = encodeURIComponent;

async function createInbox(body: Record<string, unknown>): Promise<Inbox> {
  const res = await owner<Inbox>('POST', '/v0/inboxes', body);
  if (res.status !== 200) throw new Error(`create inbox: ${res.status} ${res.text}`);
  return res.body;
}

/** An API key made through the owner route. */
async function agentKey(permissions: string[], inboxIds?: string[]): Promise<string> {
  const res = await owner<{ api_key: string }>('POST', '/v0/api-keys', { permissions, send_policy: 'direct', ...(inboxIds ? { inbox_ids: inboxIds } : {}) });
  if (res.status !== 200) throw new Error(`create key: ${res.status} ${res.text}`);
  return res.body.api_key;
}

t.test('create: address is username@domain lower-cased; full inbox response', async (t) => {

  const res = await owner<Inbox>('POST', '/v0/inboxes', { username: 'Alice.Smith+Bot', domain: 'Agents.Example.COM', display_name: 'Alice' });
  t.equal(res.status, 200, 'create answers 200 with the resource');
  t.same(Object.keys(res.body).sort(), ['client_id', 'created_at', 'display_name', 'domain', 'email', 'inbox_id', 'metadata', 'pod_id', 'status', 'updated_at', 'username']);
  t.match(res.body, {
    inbox_id: 'alice.smith+bot@agents.example.com',
    email: 'alice.smith+bot@agents.example.com',
    username: 'alice.smith+bot',
    domain: 'agents.example.com',
    display_name: 'Alice',
    status: 'active',
    metadata: null,
    client_id: null,
  });
  t.match(res.body.created_at, RFC3339_MS);
  t.equal(res.body.updated_at, res.body.created_at);
});

t.test('create: username omitted → 16 random lowercase hex characters', async (t) => {
  const a = await createInbox({ domain: 'random.example.com' });
  const b = await createInbox({ domain: 'random.example.com' });
  t.match(a.username, /^[0-9a-f]{16}$/);
  t.equal(a.inbox_id, `${a.username}@random.example.com`);
  t.not(a.username, b.username);
});

t.test('create: domain must be a DNS name', async (t) => {
  for (const domain of ['localhost', 'exa mple.com', '-bad.example.com', 'bad-.example.com', 'a..example.com', '192.168.0.1', 'example.com.', `${'a'.repeat(64)}.com`, 'ümlaut.de']) {
    const res = await owner('POST', '/v0/inboxes', { username: 'x', domain });
    t.equal(res.status, 400, domain);
    t.match(res.body, { code: 'validation_error', fix: String }, domain);
  }
  t.equal((await owner('POST', '/v0/inboxes', { username: 'x', domain: 'xn--mlaut-jva.de' })).status, 200, 'IDNs in xn-- form are fine');
});

t.test('create: local part is letters, digits, . _ - + and at most 64 characters', async (t) => {
  for (const username of ['has space', 'quote"d', 'a@b', '.lead', 'trail.', 'two..dots', 'x'.repeat(65), 'tab\t', 'ünï']) {
    const res = await owner('POST', '/v0/inboxes', { username, domain: 'local.example.com' });
    t.equal(res.status, 400, JSON.stringify(username));
    t.equal(res.body.code, 'validation_error');
  }
  const max = await owner<Inbox>('POST', '/v0/inboxes', { username: 'a_b-c+d.e' + 'x'.repeat(55), domain: 'local.example.com' });
  t.equal(max.status, 200, '64 characters is allowed');
  t.equal(max.body.username.length, 64);
});

t.test('create: svc-selftest is reserved on every domain', async (t) => {
  for (const username of ['svc-selftest', 'SVC-SelfTest']) {
    const res = await owner('POST', '/v0/inboxes', { username, domain: 'reserved.example.com' });
    t.equal(res.status, 400);
    t.match(res.body, { code: 'validation_error', message: /reserved/, fix: /another username/ });
  }
});

t.test('create: unknown body fields are rejected', async (t) => {
  const res = await owner('POST', '/v0/inboxes', { domain: 'x.example.com', pod_id: 'p1' });
  t.equal(res.status, 400);
  t.equal(res.body.code, 'validation_error');
  const badStatus = await owner('POST', '/v0/inboxes', { domain: 'x.example.com', status: 'closed' });
  t.equal(badStatus.status, 400);
});

t.test('create: an address that already exists → 409 already_exists', async (t) => {
  await createInbox({ username: 'taken', domain: 'dup.example.com' });
  const again = await owner('POST', '/v0/inboxes', { username: 'TAKEN', domain: 'dup.example.com' });
  t.equal(again.status, 409);
  t.match(again.body, { code: 'already_exists', message: /taken@dup\.example\.com/ });
});

t.test('create: repeating a create with the same client_id returns the existing inbox', async (t) => {
  const first = await owner<Inbox>('POST', '/v0/inboxes', { username: 'idem', domain: 'idem.example.com', client_id: 'create-1' });
  t.equal(first.status, 200);
  t.equal(first.body.client_id, 'create-1');
  const second = await owner<Inbox>('POST', '/v0/inboxes', { username: 'idem', domain: 'idem.example.com', client_id: 'create-1' });
  t.equal(second.status, 200, 'not a 409');
  t.same(second.body, first.body);
  const random = await owner<Inbox>('POST', '/v0/inboxes', { domain: 'idem.example.com', client_id: 'create-2' });
  const randomAgain = await owner<Inbox>('POST', '/v0/inboxes', { domain: 'idem.example.com', client_id: 'create-2' });
  t.equal(randomAgain.body.inbox_id, random.body.inbox_id, 'a random username is not drawn twice');
  const list = await owner<InboxPage>('GET', '/v0/inboxes/search?q=idem.example.com&limit=100');
  t.equal(list.body.count, 2, 'no duplicate inboxes were made');
});

t.test('create: status and metadata; metadata holds string, number and boolean values within limits', async (t) => {
  const res = await owner<Inbox>('POST', '/v0/inboxes', { username: 'meta', domain: 'meta.example.com', status: 'paused', metadata: { team: 'ops', priority: 2, vip: true } });
  t.equal(res.status, 200);
  t.equal(res.body.status, 'paused');
  t.same(res.body.metadata, { team: 'ops', priority: 2, vip: true });
  for (const metadata of [{ nested: { a: 1 } }, { list: [1] }, { n: null }, { ['k'.repeat(65)]: 1 }, { s: 'v'.repeat(1025) }, Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i]))]) {
    const bad = await owner('POST', '/v0/inboxes', { domain: 'meta.example.com', metadata });
    t.equal(bad.status, 400, JSON.stringify(metadata).slice(0, 40));
    t.equal(bad.body.code, 'validation_error');
  }
  const tooBig = await owner('POST', '/v0/inboxes', { domain: 'meta.example.com', metadata: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'v'.repeat(1000)])) });
  t.equal(tooBig.status, 400, 'over 8 KiB of metadata JSON');
  t.match(tooBig.body, { code: 'validation_error', message: /8192 bytes/ });
});

t.test('create: the new address must be inside the caller scope (404), then inbox_create (403)', async (t) => {
  const mine = await createInbox({ username: 'scoped-home', domain: 'scope.example.com' });
  const noCreate = await agentKey(['inbox_read'], [mine.inbox_id]);
  const withCreate = await agentKey(['inbox_create'], [mine.inbox_id]);
  const outside = await as(noCreate, 'POST', '/v0/inboxes', { username: 'elsewhere', domain: 'scope.example.com' });
  t.equal(outside.status, 404, 'outside the scope is 404 even without inbox_create');
  t.equal(outside.body.code, 'not_found');
  const outside2 = await as(withCreate, 'POST', '/v0/inboxes', { username: 'elsewhere', domain: 'scope.example.com' });
  t.equal(outside2.status, 404);
  const randomName = await as(withCreate, 'POST', '/v0/inboxes', { domain: 'scope.example.com' });
  t.equal(randomName.status, 404, 'a random address is never inside a restricted scope');

  const unrestrictedNoCreate = await agentKey(['inbox_read']);
  const denied = await as(unrestrictedNoCreate, 'POST', '/v0/inboxes', { username: 'agent-made', domain: 'scope.example.com' });
  t.equal(denied.status, 403);
  t.equal(denied.body.code, 'missing_permission');
  const unrestricted = await agentKey(['inbox_create']);
  const made = await as<Inbox>(unrestricted, 'POST', '/v0/inboxes', { username: 'agent-made', domain: 'scope.example.com' });
  t.equal(made.status, 200, 'an unrestricted agent key with inbox_create can create');
  t.equal(made.body.inbox_id, 'agent-made@scope.example.com');

  const existingInScope = await as(withCreate, 'POST', '/v0/inboxes', { username: 'scoped-home', domain: 'scope.example.com' });
  t.equal(existingInScope.status, 409, 'an address in scope passes the scope check and meets already_exists');
});

t.test('create: a client_id repeat is still subject to scope and inbox_create', async (t) => {
  await createInbox({ username: 'cid-owner', domain: 'cid.example.com', client_id: 'owner-made' });
  const other = await createInbox({ username: 'cid-other', domain: 'cid.example.com' });
  const restricted = await agentKey(['inbox_create'], [other.inbox_id]);
  const res = await as(restricted, 'POST', '/v0/inboxes', { domain: 'cid.example.com', client_id: 'owner-made' });
  t.equal(res.status, 404, 'the existing inbox is outside the key scope');
});

t.test('get: one inbox by its URL-encoded address; unknown → 404', async (t) => {
  const inbox = await createInbox({ username: 'get+me', domain: 'get.example.com' });
  const res = await owner<Inbox>('GET', `/v0/inboxes/${enc(inbox.inbox_id)}`);
  t.equal(res.status, 200);
  t.same(res.body, inbox);
  const upper = await owner<Inbox>('GET', `/v0/inboxes/${enc('GET+ME@Get.Example.com')}`);
  t.equal(upper.status, 200, 'the address is matched case-insensitively');
  const missing = await owner('GET', `/v0/inboxes/${enc('nobody@get.example.com')}`);
  t.equal(missing.status, 404);
  t.equal(missing.body.code, 'not_found');
});

t.test('patch: display_name (null clears), status, and metadata merge semantics', async (t) => {
  const inbox = await createInbox({ username: 'patch', domain: 'patch.example.com', display_name: 'Patchy', metadata: { a: 1, b: 'two', c: true } });
  const path = `/v0/inboxes/${enc(inbox.inbox_id)}`;

  const merged = await owner<Inbox>('PATCH', path, { metadata: { b: null, d: 'four', a: 10 } });
  t.equal(merged.status, 200);
  t.same(merged.body.metadata, { a: 10, c: true, d: 'four' }, 'keys merge; a null value removes a key');
  t.equal(merged.body.display_name, 'Patchy', 'fields not sent stay');

  const paused = await owner<Inbox>('PATCH', path, { status: 'paused' });
  t.equal(paused.body.status, 'paused');
  t.same(paused.body.metadata, { a: 10, c: true, d: 'four' }, 'metadata untouched when not sent');
  t.ok(paused.body.updated_at >= inbox.updated_at);
  const active = await owner<Inbox>('PATCH', path, { status: 'active' });
  t.equal(active.body.status, 'active');

  const cleared = await owner<Inbox>('PATCH', path, { display_name: null, metadata: null });
  t.equal(cleared.body.display_name, null, 'display_name: null clears it');
  t.equal(cleared.body.metadata, null, 'metadata: null clears everything');
  const again = await owner<Inbox>('GET', path);
  t.same(again.body, cleared.body, 'the patch was stored');

  const readded = await owner<Inbox>('PATCH', path, { metadata: { z: 'zed' } });
  t.same(readded.body.metadata, { z: 'zed' });

  const renamed = await owner<Inbox>('PATCH', path, { display_name: 'New Name' });
  t.equal(renamed.body.display_name, 'New Name');
  t.equal(renamed.body.inbox_id, inbox.inbox_id);
});

t.test('patch: only display_name, status and metadata; values are validated', async (t) => {
  const inbox = await createInbox({ username: 'patch-rules', domain: 'patch.example.com' });
  const path = `/v0/inboxes/${enc(inbox.inbox_id)}`;
  for (const body of [{ username: 'other' }, { domain: 'other.example.com' }, { client_id: 'x' }, { status: 'deleted' }, { display_name: 'line\nbreak' }, { metadata: { a: { b: 1 } } }]) {
    const res = await owner('PATCH', path, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal(res.body.code, 'validation_error');
  }
  const missing = await owner('PATCH', `/v0/inboxes/${enc('ghost@patch.example.com')}`, { status: 'paused' });
  t.equal(missing.status, 404);
});

t.test('scope: a restricted key lists only its inboxes, gets 404 for others (before permission) and 403 without the permission', async (t) => {
  const a = await createInbox({ username: 'scope-a', domain: 'restrict.example.com' });
  const b = await createInbox({ username: 'scope-b', domain: 'restrict.example.com' });
  const reader = await agentKey(['inbox_read'], [a.inbox_id]);
  const list = await as<InboxPage>(reader, 'GET', '/v0/inboxes?limit=100');
  t.equal(list.status, 200);
  t.same(list.body.inboxes.map((i) => i.inbox_id), [a.inbox_id], 'only the inbox in scope');
  const search = await as<InboxPage>(reader, 'GET', '/v0/inboxes/search?q=scope-');
  t.same(search.body.inboxes.map((i) => i.inbox_id), [a.inbox_id], 'search is scoped too');
  t.equal((await as(reader, 'GET', `/v0/inboxes/${enc(a.inbox_id)}`)).status, 200);
  const other = await as(reader, 'GET', `/v0/inboxes/${enc(b.inbox_id)}`);
  t.equal(other.status, 404);
  t.equal(other.body.code, 'not_found');

  const nothing = await agentKey(['message_read'], [a.inbox_id]);
  for (const [method, body, permission] of [
    ['GET', undefined, 'inbox_read'],
    ['PATCH', { status: 'paused' }, 'inbox_update'],
    ['DELETE', undefined, 'inbox_delete'],
  ] as const) {
    const outOfScope = await as(nothing, method, `/v0/inboxes/${enc(b.inbox_id)}`, body);
    t.equal(outOfScope.status, 404, `${method} another inbox without ${permission}: 404 first`);
    const own = await as(nothing, method, `/v0/inboxes/${enc(a.inbox_id)}`, body);
    t.equal(own.status, 403, `${method} own inbox without ${permission}`);
    t.match(own.body, { code: 'missing_permission', message: new RegExp(permission) });
  }
  const listDenied = await as(nothing, 'GET', '/v0/inboxes');
  t.equal(listDenied.status, 403);
  t.equal(listDenied.body.code, 'missing_permission');
  t.equal((await as(nothing, 'GET', '/v0/inboxes/search?q=a')).status, 403);

  const updater = await agentKey(['inbox_update'], [a.inbox_id]);
  const patched = await as<Inbox>(updater, 'PATCH', `/v0/inboxes/${enc(a.inbox_id)}`, { display_name: 'By agent' });
  t.equal(patched.status, 200);
  t.equal(patched.body.display_name, 'By agent');
  t.equal((await owner<Inbox>('GET', `/v0/inboxes/${enc(b.inbox_id)}`)).body.display_name, null, 'the other inbox is untouched');
});

t.test('pagination: limit 1 to 100, newest first, ascending, tokens walk every inbox once', async (t) => {
  for (const limit of ['0', '101', '-1', 'abc']) {
    const res = await owner(`GET`, `/v0/inboxes?limit=${limit}`);
    t.equal(res.status, 400, `limit=${limit}`);
    t.equal(res.body.code, 'validation_error');
  }
  const made: string[] = [];
  for (let i = 0; i < 7; i++) made.push((await createInbox({ username: `page${i}`, domain: 'paging.example.com' })).inbox_id);

  const all = await owner<InboxPage>('GET', '/v0/inboxes?limit=100');
  t.equal(all.body.limit, 100);
  t.notOk(all.body.next_page_token, 'no token when everything fits');
  const stamps = all.body.inboxes.map((i) => i.created_at);
  t.same(stamps, [...stamps].sort().reverse(), 'newest first by default');
  const defaultLimit = await owner<InboxPage>('GET', '/v0/inboxes');
  t.equal(defaultLimit.body.limit, 20);

  for (const ascending of [false, true]) {
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const res: { status: number; body: InboxPage } = await owner<InboxPage>('GET', `/v0/inboxes/search?q=paging.example.com&limit=3&ascending=${ascending}${token ? `&page_token=${enc(token)}` : ''}`);
      t.equal(res.status, 200);
      t.equal(res.body.count, res.body.inboxes.length);
      t.ok(res.body.count <= 3);
      seen.push(...res.body.inboxes.map((i) => i.inbox_id));
      token = res.body.next_page_token;
      pages++;
    } while (token);
    t.equal(pages, 3, `7 inboxes in pages of 3 (ascending=${ascending})`);
    t.same(seen, ascending ? made : [...made].reverse(), `every inbox once, in order (ascending=${ascending})`);
  }

  const first = await owner<InboxPage>('GET', '/v0/inboxes?limit=2');
  const token = first.body.next_page_token!;
  t.ok(token);
  const second = await owner<InboxPage>('GET', `/v0/inboxes?limit=2&page_token=${enc(token)}`);
  t.equal(second.status, 200);
  t.notSame(second.body.inboxes, first.body.inboxes);
  const otherOrder = await owner('GET', `/v0/inboxes?limit=2&ascending=true&page_token=${enc(token)}`);
  t.equal(otherOrder.status, 409, 'a token reused with other filters');
  t.equal(otherOrder.body.code, 'page_token_stale');
  const otherRoute = await owner('GET', `/v0/inboxes/search?q=page&limit=2&page_token=${enc(token)}`);
  t.equal(otherRoute.status, 409, 'a list token is not a search token');
  const searchFirst = await owner<InboxPage>('GET', '/v0/inboxes/search?q=page&limit=2');
  const otherQuery = await owner('GET', `/v0/inboxes/search?q=paging&limit=2&page_token=${enc(searchFirst.body.next_page_token!)}`);
  t.equal(otherQuery.status, 409, 'a search token is bound to q');
  const otherCaller = await as(await agentKey(['inbox_read']), 'GET', `/v0/inboxes?limit=2&page_token=${enc(token)}`);
  t.equal(otherCaller.status, 409, 'a token is bound to the caller');
  const forged = await owner('GET', `/v0/inboxes?page_token=${enc(token.slice(0, -2) + 'xx')}`);
  t.equal(forged.status, 400, 'a tampered token is invalid');
});

t.test('search: substring of the address or display name, case-insensitive; q required', async (t) => {
  await createInbox({ username: 'support', domain: 'find.example.com', display_name: 'Customer Helpdesk' });
  await createInbox({ username: 'billing', domain: 'find.example.com', display_name: 'Invoices' });
  const byAddress = await owner<InboxPage>('GET', '/v0/inboxes/search?q=PORT@find');
  t.same(byAddress.body.inboxes.map((i) => i.inbox_id), ['support@find.example.com']);
  const byName = await owner<InboxPage>('GET', '/v0/inboxes/search?q=helpdesk');
  t.same(byName.body.inboxes.map((i) => i.inbox_id), ['support@find.example.com']);
  const both = await owner<InboxPage>('GET', '/v0/inboxes/search?q=find.example');
  t.equal(both.body.count, 2);
  const none = await owner<InboxPage>('GET', '/v0/inboxes/search?q=zzzz-nothing');
  t.same(none.body, { count: 0, limit: 20, inboxes: [] });
  const literal = await owner<InboxPage>('GET', `/v0/inboxes/search?q=${enc('%')}`);
  t.equal(literal.body.count, 0, 'q is a literal substring, not a pattern');
  t.equal((await owner('GET', '/v0/inboxes/search')).status, 400, 'q is required');
});

t.test('delete: removes the inbox and everything in it permanently; empty 200', async (t) => {
  const inbox = await createInbox({ username: 'doomed', domain: 'delete.example.com' });
  const keep = await createInbox({ username: 'kept', domain: 'delete.example.com' });
  const scopedKey = await owner<{ api_key_id: string; api_key: string }>('POST', '/v0/api-keys', { permissions: ['inbox_read'], send_policy: 'direct', inbox_ids: [inbox.inbox_id, keep.inbox_id] });
  const onlyKey = await owner<{ api_key_id: string; api_key: string }>('POST', '/v0/api-keys', { permissions: ['inbox_read'], send_policy: 'direct', inbox_id: inbox.inbox_id });

  const db = openHomeDb(svc.home);
  t.teardown(() => db.close());
  // Received mail has no route: it is committed the way the inbound pipeline commits it.
  const seed = async (inboxId: string, n: number) => {
    const raw = [
      'From: a@b.example',
      `To: ${inboxId}`,
      'Subject: Secret plans',
      `Message-ID: <m${n}@example>`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'body text',
      '--b',
      'Content-Type: text/plain; name="a.txt"',
      'Content-Disposition: attachment; filename="a.txt"',
      '',
      'A',
      '--b--',
      '',
    ].join('\r\n');
    const { messageRowid } = await seedMail(db, raw, { inboxId });
    const listed = await owner('POST', `/v0/inboxes/${enc(inboxId)}/lists/receive/block`, { entry: 'spam.example' });
    if (listed.status !== 200) throw new Error(`list entry: ${listed.status} ${listed.text}`);
    return messageRowid;
  };
  const doomedRow = await seed(inbox.inbox_id, 1);
  const keptRow = await seed(keep.inbox_id, 2);
  t.equal((await owner('POST', '/v0/lists/receive/block', { entry: 'global.example' })).status, 200);
  const generation = () => Number((db.prepare("SELECT value FROM settings WHERE key = 'search_generation'").pluck().get() as string | undefined) ?? 0);
  const before = generation();

  const res = await owner('DELETE', `/v0/inboxes/${enc(inbox.inbox_id)}`);
  t.equal(res.status, 200);
  t.equal(res.text, '', 'empty 200');

  t.equal((await owner('GET', `/v0/inboxes/${enc(inbox.inbox_id)}`)).status, 404, 'the inbox is gone');
  t.equal((await owner('DELETE', `/v0/inboxes/${enc(inbox.inbox_id)}`)).status, 404, 'a second delete finds nothing');
  const count = (sql: string, ...params: unknown[]) => db.prepare(sql).pluck().get(...params) as number;
  t.equal(count('SELECT count(*) FROM threads WHERE inbox_id = ?', inbox.inbox_id), 0, 'threads removed');
  t.equal(count('SELECT count(*) FROM messages WHERE inbox_id = ?', inbox.inbox_id), 0, 'messages removed');
  t.equal(count('SELECT count(*) FROM message_labels WHERE message_rowid = ?', doomedRow), 0, 'labels removed');
  t.equal(count('SELECT count(*) FROM attachments WHERE message_rowid = ?', doomedRow), 0, 'attachments removed');
  t.equal(count('SELECT count(*) FROM raw_message_parts WHERE message_rowid = ?', doomedRow), 0, 'raw MIME removed');
  t.equal(indexedRows(db, { rowid: doomedRow }), 0, 'search index rows removed');
  t.equal(indexedRows(db, { match: 'secret' }), 1, 'only the other inbox is still searchable');
  t.equal(count('SELECT count(*) FROM list_entries WHERE inbox_id = ?', inbox.inbox_id), 0, 'the inbox lists removed');
  t.ok(generation() > before, 'the search generation moved, so search page tokens go stale');

  const redacted = JSON.parse(deliveredEvents(db, 'message_rowid = ?', doomedRow)[0]) as { message: Record<string, unknown>; thread: Record<string, unknown> };
  t.equal(redacted.message.subject, null, 'stored event subject redacted');
  t.equal(redacted.message.text, null, 'stored event body redacted');
  t.equal(redacted.thread.preview, null);
  t.equal(redacted.message.redacted, true);
  t.notMatch(JSON.stringify(redacted), /Secret plans|body text/);

  t.equal(count('SELECT count(*) FROM messages WHERE id = ?', keptRow), 1, 'the other inbox keeps its mail');
  t.equal(count('SELECT count(*) FROM list_entries WHERE inbox_id = ?', keep.inbox_id), 1);
  t.equal(count("SELECT count(*) FROM list_entries WHERE inbox_id = ''"), 1, 'global lists untouched');
  t.match(deliveredEvents(db, 'message_rowid = ?', keptRow)[0], /Secret plans/, 'other events untouched');

  const key = await owner<{ inbox_ids: string[] }>('GET', `/v0/api-keys/${scopedKey.body.api_key_id}`);
  t.same(key.body.inbox_ids, [keep.inbox_id], 'keys scoped to the inbox lose it from their scope');
  t.equal((await owner('GET', `/v0/api-keys/${onlyKey.body.api_key_id}`)).status, 404, 'a key scoped only to the deleted inbox is revoked');
  t.equal((await as(onlyKey.body.api_key, 'GET', '/v0/inboxes')).status, 401);
  const recreated = await createInbox({ username: 'doomed', domain: 'delete.example.com' });
  const viaOldKey = await as(scopedKey.body.api_key, 'GET', `/v0/inboxes/${enc(recreated.inbox_id)}`);
  t.equal(viaOldKey.status, 404, 'a new inbox at the same address is not shared with the old key');
  t.same(recreated.metadata, null);
});

t.test('delete: needs inbox_delete, after the scope check', async (t) => {
  const inbox = await createInbox({ username: 'agent-delete', domain: 'delete.example.com' });
  const deleter = await agentKey(['inbox_delete', 'inbox_read'], [inbox.inbox_id]);
  const res = await as(deleter, 'DELETE', `/v0/inboxes/${enc(inbox.inbox_id)}`);
  t.equal(res.status, 200);
  t.equal((await owner('GET', `/v0/inboxes/${enc(inbox.inbox_id)}`)).status, 404);
});

t.test('inbox routes need a credential', async (t) => {
  for (const [method, path] of [['GET', '/v0/inboxes'], ['POST', '/v0/inboxes'], ['GET', '/v0/inboxes/search?q=a'], ['GET', '/v0/inboxes/a%40b.example.com']]) {
    const res = await api(svc.url, method, path);
    t.equal(res.status, 401, `${method} ${path}`);
  }
});

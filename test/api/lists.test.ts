/** Allow and block lists over REST (spec §2.7, §4.8; docs/lists.md). */
import t from 'tap';
import { AgentMailClient } from 'agentmail';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';

const DIRECTIONS = ['receive', 'send', 'reply'] as const;
const TYPES = ['allow', 'block'] as const;
const ALL_LIST_PERMISSIONS = ['list_entry_read', 'list_entry_create', 'list_entry_delete'];
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface Entry {
  entry: string;
  entry_type: string;
  direction: string;
  list_type: string;
  reason: string | null;
  inbox_id: string | null;
  created_at: string;
}
interface Page {
  count: number;
  limit: number;
  next_page_token?: string;
  entries: Entry[];
}

let svc: RunningSvc;
let inbox: string;
let otherInbox: string;
t.before(async () => {
  svc = await startSvc();
  inbox = await createInbox(svc, 'Lists@Example.org');
  otherInbox = await createInbox(svc, 'other@example.org');
});
t.teardown(async () => {
  await svc.stop();
});

const owner = () => svc.ownerToken;
const base = (inboxId: string | null) => (inboxId === null ? '/v0/lists' : `/v0/inboxes/${encodeURIComponent(inboxId)}/lists`);
const entryPath = (inboxId: string | null, d: string, ty: string, entry: string) => `${base(inboxId)}/${d}/${ty}/${encodeURIComponent(entry)}`;

for (const form of ['global', 'inbox'] as const) {
  t.test(`${form} lists: POST, GET, list and DELETE work for every direction and type`, async (t) => {
    const inboxId = form === 'global' ? null : inbox;
    for (const d of DIRECTIONS) {
      for (const ty of TYPES) {
        const listPath = `${base(inboxId)}/${d}/${ty}`;
        const created = await api<Entry>(svc.url, 'POST', listPath, { token: owner(), body: { entry: `Someone@${d}-${ty}.Example`, reason: 'because' } });
        t.equal(created.status, 200, `create ${listPath}`);
        t.same(
          { ...created.body, created_at: 'x' },
          // organization_id and (inbox lists) pod_id: the constants the AgentMail SDK's types require (docs/agentmail-compat.md).
          { entry: `someone@${d}-${ty}.example`, entry_type: 'email', direction: d, list_type: ty, reason: 'because', inbox_id: inboxId, created_at: 'x', organization_id: 'default', ...(inboxId === null ? {} : { pod_id: 'default' }) },
        );
        t.match(created.body.created_at, ISO_MS);
        const domain = await api<Entry>(svc.url, 'POST', listPath, { token: owner(), body: { entry: `${d}-${ty}.example` } });
        t.equal(domain.status, 200);
        t.equal(domain.body.entry_type, 'domain');
        t.equal(domain.body.reason, null, 'reason is optional');

        const one = await api<Entry>(svc.url, 'GET', entryPath(inboxId, d, ty, `someone@${d}-${ty}.example`), { token: owner() });
        t.equal(one.status, 200);
        t.same(one.body, created.body, 'the read returns what the create returned');

        const list = await api<Page>(svc.url, 'GET', listPath, { token: owner() });
        t.equal(list.status, 200);
        t.same(list.body, { count: 2, limit: 20, entries: [domain.body, created.body] });

        const del = await api(svc.url, 'DELETE', entryPath(inboxId, d, ty, `someone@${d}-${ty}.example`), { token: owner() });
        t.equal(del.status, 200);
        t.equal(del.text, '', 'delete answers an empty 200');
        const gone = await api(svc.url, 'GET', entryPath(inboxId, d, ty, `someone@${d}-${ty}.example`), { token: owner() });
        t.equal(gone.status, 404);
        t.equal((gone.body as { code: string }).code, 'not_found');
        const again = await api(svc.url, 'DELETE', entryPath(inboxId, d, ty, `someone@${d}-${ty}.example`), { token: owner() });
        t.equal(again.status, 404, 'deleting a missing entry is not_found');
        await api(svc.url, 'DELETE', entryPath(inboxId, d, ty, `${d}-${ty}.example`), { token: owner() });
      }
    }
  });
}

t.test('global and inbox lists are separate lists', async (t) => {
  await api(svc.url, 'POST', '/v0/lists/receive/block', { token: owner(), body: { entry: 'global-only.example' } });
  await api(svc.url, 'POST', `${base(inbox)}/receive/block`, { token: owner(), body: { entry: 'inbox-only.example' } });
  const global = await api<Page>(svc.url, 'GET', '/v0/lists/receive/block', { token: owner() });
  t.same(global.body.entries.map((e) => [e.entry, e.inbox_id]), [['global-only.example', null]]);
  const mine = await api<Page>(svc.url, 'GET', `${base(inbox)}/receive/block`, { token: owner() });
  t.same(mine.body.entries.map((e) => [e.entry, e.inbox_id]), [['inbox-only.example', 'lists@example.org']]);
  const other = await api<Page>(svc.url, 'GET', `${base(otherInbox)}/receive/block`, { token: owner() });
  t.same(other.body.entries, []);
  const crossRead = await api(svc.url, 'GET', entryPath(null, 'receive', 'block', 'inbox-only.example'), { token: owner() });
  t.equal(crossRead.status, 404);
  const upper = await api<Page>(svc.url, 'GET', `${base('LISTS@EXAMPLE.ORG')}/receive/block`, { token: owner() });
  t.equal(upper.body.count, 1, 'the inbox id in the path is case-insensitive');
  await api(svc.url, 'DELETE', entryPath(null, 'receive', 'block', 'global-only.example'), { token: owner() });
  await api(svc.url, 'DELETE', entryPath(inbox, 'receive', 'block', 'inbox-only.example'), { token: owner() });
});

t.test('entries are validated and stored lower-cased; the path entry is URL-encoded', async (t) => {
  const listPath = `${base(inbox)}/send/allow`;
  for (const entry of ['not an address', '@example.com', 'a@b', '*.example.com', 'https://example.com', 'localhost', '', 'x'.repeat(321)]) {
    const res = await api(svc.url, 'POST', listPath, { token: owner(), body: { entry } });
    t.equal(res.status, 400, JSON.stringify(entry).slice(0, 40));
    t.equal((res.body as { code: string }).code, 'validation_error');
  }
  const created = await api<Entry>(svc.url, 'POST', listPath, { token: owner(), body: { entry: ' Bob+Tag@Example.COM ', reason: null } });
  t.equal(created.status, 200);
  t.equal(created.body.entry, 'bob+tag@example.com');
  const idn = await api<Entry>(svc.url, 'POST', listPath, { token: owner(), body: { entry: 'Bücher.example' } });
  t.equal(idn.body.entry, 'xn--bcher-kva.example', 'international domains are stored in ASCII form');
  const read = await api<Entry>(svc.url, 'GET', entryPath(inbox, 'send', 'allow', 'BOB+tag@example.com'), { token: owner() });
  t.equal(read.status, 200, 'the path entry is matched case-insensitively');
  t.equal(read.body.entry, 'bob+tag@example.com');
  const idnRead = await api(svc.url, 'GET', entryPath(inbox, 'send', 'allow', 'bücher.example'), { token: owner() });
  t.equal(idnRead.status, 200, 'and in either IDN form');
  const badPath = await api(svc.url, 'GET', entryPath(inbox, 'send', 'allow', 'not valid'), { token: owner() });
  t.equal(badPath.status, 400);
  t.equal((badPath.body as { code: string }).code, 'validation_error');
  await api(svc.url, 'DELETE', entryPath(inbox, 'send', 'allow', 'bob+tag@example.com'), { token: owner() });
  await api(svc.url, 'DELETE', entryPath(inbox, 'send', 'allow', 'xn--bcher-kva.example'), { token: owner() });
});

t.test('reason is at most 500 characters and unknown body fields are rejected', async (t) => {
  const listPath = '/v0/lists/reply/block';
  const long = await api(svc.url, 'POST', listPath, { token: owner(), body: { entry: 'r.example', reason: 'x'.repeat(501) } });
  t.equal(long.status, 400);
  t.equal((long.body as { code: string }).code, 'validation_error');
  const ok = await api<Entry>(svc.url, 'POST', listPath, { token: owner(), body: { entry: 'r.example', reason: 'x'.repeat(500) } });
  t.equal(ok.status, 200);
  t.equal(ok.body.reason?.length, 500);
  const unknown = await api(svc.url, 'POST', listPath, { token: owner(), body: { entry: 's.example', type: 'block' } });
  t.equal(unknown.status, 400);
  t.equal((unknown.body as { code: string }).code, 'validation_error');
  const missing = await api(svc.url, 'POST', listPath, { token: owner(), body: { reason: 'no entry' } });
  t.equal(missing.status, 400);
  await api(svc.url, 'DELETE', entryPath(null, 'reply', 'block', 'r.example'), { token: owner() });
});

t.test('a duplicate entry is 409 already_exists and the first one is kept', async (t) => {
  const listPath = `${base(inbox)}/receive/allow`;
  const first = await api<Entry>(svc.url, 'POST', listPath, { token: owner(), body: { entry: 'dup@example.com', reason: 'first' } });
  t.equal(first.status, 200);
  const second = await api(svc.url, 'POST', listPath, { token: owner(), body: { entry: 'DUP@example.com', reason: 'second' } });
  t.equal(second.status, 409);
  t.match(second.body, { name: 'AlreadyExistsError', code: 'already_exists', message: String, fix: String });
  const read = await api<Entry>(svc.url, 'GET', entryPath(inbox, 'receive', 'allow', 'dup@example.com'), { token: owner() });
  t.equal(read.body.reason, 'first');
  const otherList = await api(svc.url, 'POST', `${base(inbox)}/receive/block`, { token: owner(), body: { entry: 'dup@example.com' } });
  t.equal(otherList.status, 200, 'the same entry may be on another list');
  await api(svc.url, 'DELETE', entryPath(inbox, 'receive', 'allow', 'dup@example.com'), { token: owner() });
  await api(svc.url, 'DELETE', entryPath(inbox, 'receive', 'block', 'dup@example.com'), { token: owner() });
});

t.test('an unknown direction or type is an unknown path: 404 not_found', async (t) => {
  for (const p of ['/v0/lists/inbound/allow', '/v0/lists/receive/deny', '/v0/lists/receive', '/v0/lists/receive/allow/a.example/extra', `${base(inbox)}/outbound/block`, `${base(inbox)}/send/maybe/x.example`]) {
    for (const token of [owner(), undefined]) {
      const res = await api(svc.url, 'GET', p, { token });
      t.equal(res.status, 404, `${p} ${token ? 'with' : 'without'} a credential`);
      t.equal((res.body as { code: string }).code, 'not_found');
    }
  }
  const post = await api(svc.url, 'POST', '/v0/lists/forward/allow', { token: owner(), body: { entry: 'a.example' } });
  t.equal(post.status, 404);
});

t.test('list pages are sorted by entry ascending and page tokens walk them', async (t) => {
  const listPath = `${base(inbox)}/reply/allow`;
  const entries = ['d.example', 'a@z.example', 'b.example', 'zz@a.example', 'c.example', 'a.example', 'e.example'];
  for (const entry of entries) await api(svc.url, 'POST', listPath, { token: owner(), body: { entry } });
  const seen: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const res = await api<Page>(svc.url, 'GET', `${listPath}?limit=3${token ? `&page_token=${encodeURIComponent(token)}` : ''}`, { token: owner() });
    t.equal(res.status, 200);
    t.equal(res.body.limit, 3);
    t.equal(res.body.count, res.body.entries.length);
    seen.push(...res.body.entries.map((e) => e.entry));
    token = res.body.next_page_token;
    pages++;
  } while (token && pages < 10);
  t.same(seen, [...entries].sort(), 'every entry once, in ascending order');
  t.equal(pages, 3);

  const asc = await api<Page>(svc.url, 'GET', `${listPath}?ascending=true&limit=100`, { token: owner() });
  t.equal(asc.status, 200);
  t.same(asc.body.entries.map((e) => e.entry), [...entries].sort());
  t.notOk('next_page_token' in asc.body, 'no token on the last page');
  const desc = await api(svc.url, 'GET', `${listPath}?ascending=false`, { token: owner() });
  t.equal(desc.status, 400, 'ascending only: ascending=false is refused');
  t.match(desc.body, { code: 'validation_error', message: /ascending only/ });
  for (const limit of ['0', '101', 'x']) {
    const bad = await api(svc.url, 'GET', `${listPath}?limit=${limit}`, { token: owner() });
    t.equal(bad.status, 400, `limit=${limit}`);
  }

  const first = await api<Page>(svc.url, 'GET', `${listPath}?limit=2`, { token: owner() });
  const stale = await api(svc.url, 'GET', `${base(inbox)}/reply/block?limit=2&page_token=${encodeURIComponent(first.body.next_page_token!)}`, { token: owner() });
  t.equal(stale.status, 409, 'a token from another list is stale');
  t.equal((stale.body as { code: string }).code, 'page_token_stale');
  const forged = await api(svc.url, 'GET', `${listPath}?page_token=abc.def`, { token: owner() });
  t.equal(forged.status, 400);
  for (const entry of entries) await api(svc.url, 'DELETE', entryPath(inbox, 'reply', 'allow', entry), { token: owner() });
});

t.test('the list routes need a credential', async (t) => {
  for (const [method, p] of [['GET', '/v0/lists/send/block'], ['POST', '/v0/lists/send/block'], ['GET', entryPath(inbox, 'send', 'block', 'a.example')], ['DELETE', entryPath(inbox, 'send', 'block', 'a.example')]]) {
    const res = await api(svc.url, method, p, method === 'POST' ? { body: { entry: 'a.example' } } : {});
    t.equal(res.status, 401, `${method} ${p}`);
  }
});

t.test('global lists need a key without an inbox restriction', async (t) => {
  const restricted = await createApiKey(svc, { permissions: ALL_LIST_PERMISSIONS, inboxIds: [inbox] });
  await api(svc.url, 'POST', '/v0/lists/send/block', { token: owner(), body: { entry: 'g.example' } });
  for (const [method, p] of [['GET', '/v0/lists/send/block'], ['POST', '/v0/lists/send/block'], ['GET', entryPath(null, 'send', 'block', 'g.example')], ['DELETE', entryPath(null, 'send', 'block', 'g.example')]]) {
    const res = await api(svc.url, method, p, { token: restricted.secret, ...(method === 'POST' ? { body: { entry: 'h.example' } } : {}) });
    t.equal(res.status, 403, `${method} ${p}`);
    t.equal((res.body as { code: string }).code, 'missing_permission');
  }
  const own = await api(svc.url, 'POST', `${base(inbox)}/send/block`, { token: restricted.secret, body: { entry: 'h.example' } });
  t.equal(own.status, 200, 'the same key may use its inbox lists');
  const unrestricted = await createApiKey(svc, { permissions: ALL_LIST_PERMISSIONS });
  const global = await api<Page>(svc.url, 'GET', '/v0/lists/send/block', { token: unrestricted.secret });
  t.equal(global.status, 200, 'a key without an inbox restriction may use the global lists');
  t.same(global.body.entries.map((e) => e.entry), ['g.example']);
  const del = await api(svc.url, 'DELETE', entryPath(null, 'send', 'block', 'g.example'), { token: unrestricted.secret });
  t.equal(del.status, 200);
  await api(svc.url, 'DELETE', entryPath(inbox, 'send', 'block', 'h.example'), { token: owner() });
});

t.test('an inbox outside the scope is 404 before permissions are checked', async (t) => {
  const noPermissions = await createApiKey(svc, { permissions: [], inboxIds: [inbox] });
  const full = await createApiKey(svc, { permissions: ALL_LIST_PERMISSIONS, inboxIds: [inbox] });
  for (const token of [noPermissions.secret, full.secret]) {
    for (const target of [otherInbox, 'missing@example.org']) {
      for (const [method, p] of [['GET', `${base(target)}/receive/allow`], ['POST', `${base(target)}/receive/allow`], ['GET', entryPath(target, 'receive', 'allow', 'a.example')], ['DELETE', entryPath(target, 'receive', 'allow', 'a.example')]]) {
        const res = await api(svc.url, method, p, { token, ...(method === 'POST' ? { body: { entry: 'a.example' } } : {}) });
        t.equal(res.status, 404, `${method} ${p}`);
        t.equal((res.body as { code: string }).code, 'not_found');
      }
    }
  }
  const ownerMissing = await api(svc.url, 'GET', `${base('missing@example.org')}/receive/allow`, { token: owner() });
  t.equal(ownerMissing.status, 404, 'an inbox that does not exist is not_found for the owner too');
});

t.test('each route needs its permission: list_entry_read, list_entry_create, list_entry_delete', async (t) => {
  await api(svc.url, 'POST', `${base(inbox)}/receive/block`, { token: owner(), body: { entry: 'perm.example' } });
  await api(svc.url, 'POST', '/v0/lists/receive/block', { token: owner(), body: { entry: 'perm.example' } });
  const routes: [string, (inboxId: string | null) => string, string][] = [
    ['GET', (i) => `${base(i)}/receive/block`, 'list_entry_read'],
    ['GET', (i) => entryPath(i, 'receive', 'block', 'perm.example'), 'list_entry_read'],
    ['POST', (i) => `${base(i)}/receive/block`, 'list_entry_create'],
    ['DELETE', (i) => entryPath(i, 'receive', 'block', 'perm.example'), 'list_entry_delete'],
  ];
  for (const inboxId of [inbox, null]) {
    for (const [method, path, needed] of routes) {
      const others = ALL_LIST_PERMISSIONS.filter((p) => p !== needed);
      const without = await createApiKey(svc, { permissions: [...others, 'message_read', 'inbox_read'] });
      const denied = await api(svc.url, method, path(inboxId), { token: without.secret, ...(method === 'POST' ? { body: { entry: 'new.example' } } : {}) });
      t.equal(denied.status, 403, `${method} ${path(inboxId)} without ${needed}`);
      t.match(denied.body, { code: 'missing_permission', message: new RegExp(needed) });
      const withIt = await createApiKey(svc, { permissions: [needed], inboxIds: inboxId ? [inbox] : null });
      const allowed = await api(svc.url, method, path(inboxId), { token: withIt.secret, ...(method === 'POST' ? { body: { entry: 'new.example' } } : {}) });
      t.equal(allowed.status, 200, `${method} ${path(inboxId)} with only ${needed}`);
    }
    await api(svc.url, 'DELETE', entryPath(inboxId, 'receive', 'block', 'new.example'), { token: owner() });
  }
});

t.test('the AgentMail SDK reads and writes lists', async (t) => {
  const client = new AgentMailClient({ apiKey: owner(), baseUrl: svc.url });
  const created = await client.lists.create('send', 'block', { entry: 'SDK.example', reason: 'sdk' });
  t.equal(created.entry, 'sdk.example');
  t.equal(created.listType, 'block');
  t.equal(created.entryType, 'domain');
  const page = await client.lists.list('send', 'block', { limit: 5 });
  t.same(page.entries.map((e) => e.entry), ['sdk.example']);
  const one = await client.lists.get('send', 'block', 'sdk.example');
  t.equal(one.reason, 'sdk');
  await client.lists.delete('send', 'block', 'sdk.example');
  const inboxEntry = await client.inboxes.lists.create(inbox, 'receive', 'allow', { entry: 'friend@example.net' });
  t.equal(inboxEntry.inboxId, inbox);
  const inboxPage = await client.inboxes.lists.list(inbox, 'receive', 'allow');
  t.same(inboxPage.entries.map((e) => e.entry), ['friend@example.net']);
  await client.inboxes.lists.delete(inbox, 'receive', 'allow', 'friend@example.net');
  const missing = await client.lists.get('send', 'block', 'sdk.example').then(() => null, (err: unknown) => err);
  t.match(missing, { statusCode: 404 }, 'a deleted entry is 404 through the SDK too');
});

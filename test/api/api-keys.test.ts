/** API keys (spec §2.9, §4.11, §5.2): owner-only management, secret once, hashed at rest, scope, revocation. */
import t from 'tap';
import { createHash } from 'node:crypto';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { expireApiKey, openHomeDb } from '../helpers/db.js';

interface ApiKey {
  type: string;
  api_key_id: string;
  name: string | null;
  prefix: string;
  permissions: Record<string, boolean>;
  send_policy: string;
  inbox_id: string | null;
  inbox_ids: string[] | null;
  expires_at: string | null;
  created_at: string;
  updated_at: string;
  used_at: string | null;
  api_key?: string;
}
interface KeyPage {
  count: number;
  limit: number;
  next_page_token?: string;
  api_keys: ApiKey[];
}

const ALL_PERMISSIONS = [
  'inbox_read', 'inbox_create', 'inbox_update', 'inbox_delete',
  'message_read', 'message_update', 'message_delete', 'message_send', 'message_reply',
  'draft_read', 'draft_create', 'draft_update', 'draft_delete', 'draft_send',
  'list_entry_read', 'list_entry_create', 'list_entry_delete',
  'webhook_read', 'webhook_create', 'webhook_update', 'webhook_delete',
  'label_spam_read', 'label_blocked_read', 'label_unauthenticated_read', 'label_trash_read',
];
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });
const as = <T = Record<string, unknown>>(token: string, method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token, body });
const enc = encodeURIComponent;

async function createKey(body: Record<string, unknown>, path = '/v0/api-keys'): Promise<ApiKey & { api_key: string }> {
  const res = await owner<ApiKey & { api_key: string }>('POST', path, body);
  if (res.status !== 200) throw new Error(`create key: ${res.status} ${res.text}`);
  return res.body;
}

async function createInbox(username: string, domain = 'keys.example.com'): Promise<string> {
  const res = await owner<{ inbox_id: string }>('POST', '/v0/inboxes', { username, domain });
  if (res.status !== 200) throw new Error(`create inbox: ${res.status} ${res.text}`);
  return res.body.inbox_id;
}

t.test('create: returns the secret once with the full key response', async (t) => {
  const res = await owner<ApiKey>('POST', '/v0/api-keys', { name: 'Support bot', permissions: { inbox_read: true, message_read: true, message_send: false }, send_policy: 'approval' });
  t.equal(res.status, 200, 'create answers 200 with the resource');
  const key = res.body;
  t.match(key.api_key, /^svc_key_[A-Za-z0-9_-]{43}$/, 'svc_key_ + 32 random bytes, base64url');
  t.equal(key.prefix, key.api_key!.slice(0, 12), 'prefix is the first 12 characters');
  t.same(Object.keys(key).sort(), ['api_key', 'api_key_id', 'created_at', 'expires_at', 'inbox_id', 'inbox_ids', 'name', 'permissions', 'prefix', 'send_policy', 'type', 'updated_at', 'used_at']);
  t.match(key, { type: 'bearer', name: 'Support bot', send_policy: 'approval', inbox_id: null, inbox_ids: null, expires_at: null, used_at: null });
  t.match(key.api_key_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'UUIDv7 id');
  t.match(key.created_at, RFC3339_MS);
  t.same(Object.keys(key.permissions).sort(), [...ALL_PERMISSIONS].sort(), 'permissions come back as the object of every known name');
  t.same(Object.entries(key.permissions).filter(([, v]) => v).map(([k]) => k).sort(), ['inbox_read', 'message_read']);

  const works = await as(key.api_key!, 'GET', '/v0/inboxes');
  t.equal(works.status, 200, 'the new key authenticates');

  const again = await createKey({ permissions: ['inbox_read'], send_policy: 'direct' });
  t.not(again.api_key, key.api_key, 'every key has its own secret');
  t.equal(again.name, null, 'name is optional');
});

t.test('the secret and its hash never appear in get or list', async (t) => {
  const key = await createKey({ name: 'hidden', permissions: ['inbox_read'], send_policy: 'read_only' });
  const hash = createHash('sha256').update(key.api_key).digest('hex');
  const one = await owner<ApiKey>('GET', `/v0/api-keys/${key.api_key_id}`);
  t.equal(one.status, 200);
  t.notOk('api_key' in one.body, 'no api_key field on get');
  t.notOk('key_hash' in one.body);
  const { api_key: _secret, ...withoutSecret } = key;
  t.same(one.body, withoutSecret, 'get returns the create response minus the secret');
  const list = await owner<KeyPage>('GET', '/v0/api-keys?limit=100');
  t.ok(list.body.api_keys.some((k) => k.api_key_id === key.api_key_id));
  for (const text of [one.text, list.text]) {
    t.notMatch(text, key.api_key);
    t.notMatch(text, hash);
    t.notMatch(text, /"api_key"|key_hash/);
  }
});

t.test('stored hashed: the row holds sha256(secret) and never the secret', async (t) => {
  const key = await createKey({ permissions: ['inbox_read', 'message_read'], send_policy: 'direct' });
  const db = openHomeDb(svc.home);
  t.teardown(() => db.close());
  const row = db.prepare('SELECT * FROM api_keys WHERE api_key_id = ?').get(key.api_key_id) as Record<string, unknown>;
  t.equal(row.key_hash, createHash('sha256').update(key.api_key).digest('hex'));
  t.equal(row.prefix, key.api_key.slice(0, 12));
  for (const [column, value] of Object.entries(row)) {
    if (typeof value === 'string') t.notOk(value.includes(key.api_key.slice(12)), `${column} does not hold the secret`);
  }
  t.same(JSON.parse(row.permissions as string), ['inbox_read', 'message_read'], 'permissions stored as the list of granted names');
});

t.test('permissions: object of booleans or array of names; an unknown name in the array → validation_error, in the object ignored', async (t) => {
  const fromArray = await createKey({ permissions: ['draft_send', 'label_spam_read', 'message_reply'], send_policy: 'direct' });
  t.same(Object.entries(fromArray.permissions).filter(([, v]) => v).map(([k]) => k).sort(), ['draft_send', 'label_spam_read', 'message_reply']);
  const fromObject = await createKey({ permissions: { webhook_read: true, webhook_create: false, list_entry_read: null }, send_policy: 'direct' });
  t.same(Object.entries(fromObject.permissions).filter(([, v]) => v).map(([k]) => k), ['webhook_read'], 'false and null grant nothing');
  const none = await createKey({ permissions: {}, send_policy: 'read_only' });
  t.notOk(Object.values(none.permissions).some(Boolean), 'an empty set is allowed');

  for (const permissions of [['inbox_read', 'pod_read'], ['INBOX_READ'], ['inbox_read', 'domain_read']]) {
    const res = await owner('POST', '/v0/api-keys', { permissions, send_policy: 'direct' });
    t.equal(res.status, 400, JSON.stringify(permissions));
    t.match(res.body, { code: 'validation_error', message: /Unknown permission/, fix: /inbox_read/ });
  }
  // The object form is AgentMail's: its own names and a newer SDK's are ignored, never granted.
  for (const permissions of [{ inbox_read: true, domain_create: true }, { not_a_permission: false, inbox_read: true }, { inbox_read: true, INBOX_READ: true, metrics_read: false }]) {
    const key = await createKey({ permissions, send_policy: 'direct' });
    t.same(Object.entries(key.permissions).filter(([, v]) => v).map(([k]) => k), ['inbox_read'], JSON.stringify(permissions));
  }
  for (const permissions of ['inbox_read', 7, { inbox_read: 'yes' }, [1], { domain_read: 1 }, { future_permission: 'yes' }]) {
    const res = await owner('POST', '/v0/api-keys', { permissions, send_policy: 'direct' });
    t.equal(res.status, 400, JSON.stringify(permissions));
  }
});

t.test('create: permissions default to all and send_policy to approval (issue 17); send_policy is direct, approval or read_only', async (t) => {
  const bare = await createKey({});
  t.equal(bare.send_policy, 'approval', 'send_policy missing: approval');
  t.ok(Object.values(bare.permissions).every((granted) => granted === true), 'permissions missing: all, as AgentMail documents');
  t.equal((await owner('POST', '/v0/api-keys', { permissions: [], send_policy: 'yolo' })).status, 400);
  t.equal((await owner('POST', '/v0/api-keys', { permissions: [], send_policy: 'direct', pod_id: 'x' })).status, 400, 'unknown field');
  for (const policy of ['direct', 'approval', 'read_only']) {
    t.equal((await createKey({ permissions: [], send_policy: policy })).send_policy, policy);
  }
});

t.test('create: inbox_id or inbox_ids scope; every inbox must exist', async (t) => {
  const a = await createInbox('scope-a');
  const b = await createInbox('scope-b');
  const one = await createKey({ permissions: ['inbox_read'], send_policy: 'direct', inbox_id: a.toUpperCase() });
  t.equal(one.inbox_id, a, 'inbox_id is shown when the scope is exactly one inbox');
  t.same(one.inbox_ids, [a]);
  const two = await createKey({ permissions: ['inbox_read'], send_policy: 'direct', inbox_ids: [a, b, a] });
  t.equal(two.inbox_id, null);
  t.same(two.inbox_ids, [a, b], 'duplicates collapse');
  const listed = await as<{ inboxes: { inbox_id: string }[] }>(two.api_key, 'GET', '/v0/inboxes?limit=100');
  t.same(listed.body.inboxes.map((i) => i.inbox_id).sort(), [a, b], 'the scope is what the key sees');

  const missing = await owner('POST', '/v0/api-keys', { permissions: ['inbox_read'], send_policy: 'direct', inbox_ids: [a, 'ghost@keys.example.com'] });
  t.equal(missing.status, 400);
  t.match(missing.body, { code: 'validation_error', message: /ghost@keys\.example\.com/, fix: /ghost@keys\.example\.com/ });
  const both = await owner('POST', '/v0/api-keys', { permissions: [], send_policy: 'direct', inbox_id: a, inbox_ids: [b] });
  t.equal(both.status, 400);
  t.match(both.body, { code: 'validation_error', message: /either/ });
  const empty = await owner('POST', '/v0/api-keys', { permissions: [], send_policy: 'direct', inbox_ids: [] });
  t.equal(empty.status, 400, 'an empty scope is refused rather than read as every inbox');
});

t.test('create: expires_at must be an RFC 3339 time in the future', async (t) => {
  const future = new Date(Date.now() + 3600_000).toISOString();
  const key = await createKey({ permissions: ['inbox_read'], send_policy: 'direct', expires_at: future });
  t.equal(key.expires_at, future);
  t.equal((await as(key.api_key, 'GET', '/v0/inboxes')).status, 200);
  const past = await owner('POST', '/v0/api-keys', { permissions: [], send_policy: 'direct', expires_at: new Date(Date.now() - 1000).toISOString() });
  t.equal(past.status, 400);
  t.match(past.body, { code: 'validation_error', message: /future/ });
  t.equal((await owner('POST', '/v0/api-keys', { permissions: [], send_policy: 'direct', expires_at: 'tomorrow' })).status, 400);
});

t.test('an expired key → 401', async (t) => {
  const expired = await createKey({ permissions: ['inbox_read'], send_policy: 'direct' });
  // SQL: no route makes a key that has already expired (`expires_at` must lie ahead), and waiting
  // for one to expire would make the test depend on the clock.
  const db = openHomeDb(svc.home);
  t.teardown(() => db.close());
  expireApiKey(db, expired.api_key_id);
  const res = await as(expired.api_key, 'GET', '/v0/inboxes');
  t.equal(res.status, 401);
  t.equal((res.body as { code: string }).code, 'unauthorized');
});

t.test('patch: name, permissions and send_policy only; changes apply to the next request', async (t) => {
  const inbox = await createInbox('patched');
  const key = await createKey({ name: 'before', permissions: ['message_read'], send_policy: 'approval', inbox_id: inbox });
  const path = `/v0/api-keys/${key.api_key_id}`;
  t.equal((await as(key.api_key, 'GET', `/v0/inboxes/${enc(inbox)}`)).status, 403, 'no inbox_read yet');

  const res = await owner<ApiKey>('PATCH', path, { name: 'after', permissions: { inbox_read: true }, send_policy: 'read_only' });
  t.equal(res.status, 200);
  t.match(res.body, { name: 'after', send_policy: 'read_only', inbox_id: inbox, prefix: key.prefix, created_at: key.created_at });
  t.same(Object.entries(res.body.permissions).filter(([, v]) => v).map(([k]) => k), ['inbox_read'], 'permissions are replaced, not merged');
  t.notOk('api_key' in res.body, 'patch never returns the secret');
  t.equal((await as(key.api_key, 'GET', `/v0/inboxes/${enc(inbox)}`)).status, 200, 'the new permission works at once');

  const renamed = await owner<ApiKey>('PATCH', path, { name: null });
  t.equal(renamed.body.name, null, 'name: null clears it');
  t.equal(renamed.body.send_policy, 'read_only', 'fields not sent stay');

  for (const body of [{ inbox_id: inbox }, { inbox_ids: [inbox] }, { expires_at: new Date(Date.now() + 60_000).toISOString() }, { api_key: 'svc_key_x' }, { prefix: 'x' }, { send_policy: 'sometimes' }, { permissions: ['nope'] }]) {
    const bad = await owner('PATCH', path, body);
    t.equal(bad.status, 400, JSON.stringify(body));
    t.equal((bad.body as { code: string }).code, 'validation_error');
  }
  t.equal((await owner('PATCH', '/v0/api-keys/0190a8f0-0000-7000-8000-000000000000', { name: 'x' })).status, 404, 'unknown key');
});

t.test('delete revokes immediately: the next request with the key → 401', async (t) => {
  const key = await createKey({ permissions: ['inbox_read'], send_policy: 'direct' });
  t.equal((await as(key.api_key, 'GET', '/v0/inboxes')).status, 200);
  const res = await owner('DELETE', `/v0/api-keys/${key.api_key_id}`);
  t.equal(res.status, 200);
  t.equal(res.text, '', 'empty 200');
  const after = await as(key.api_key, 'GET', '/v0/inboxes');
  t.equal(after.status, 401);
  t.equal((after.body as { code: string }).code, 'unauthorized');
  t.equal((await owner('GET', `/v0/api-keys/${key.api_key_id}`)).status, 404, 'the key is gone');
  t.equal((await owner('DELETE', `/v0/api-keys/${key.api_key_id}`)).status, 404);
});

t.test('owner only: agent keys get 403 missing_permission on every api-key route', async (t) => {
  const inbox = await createInbox('agent-keys');
  const target = await createKey({ permissions: [], send_policy: 'direct', inbox_id: inbox });
  const agent = await createKey({ permissions: { ...Object.fromEntries(ALL_PERMISSIONS.map((p) => [p, true])) }, send_policy: 'direct' });
  const routes: [string, string, unknown?][] = [
    ['GET', '/v0/api-keys'],
    ['POST', '/v0/api-keys', { permissions: ['inbox_read'], send_policy: 'direct' }],
    ['GET', `/v0/api-keys/${target.api_key_id}`],
    ['PATCH', `/v0/api-keys/${target.api_key_id}`, { name: 'x' }],
    ['DELETE', `/v0/api-keys/${target.api_key_id}`],
    ['GET', `/v0/inboxes/${enc(inbox)}/api-keys`],
    ['POST', `/v0/inboxes/${enc(inbox)}/api-keys`, { permissions: ['inbox_read'], send_policy: 'direct' }],
    ['GET', `/v0/inboxes/${enc(inbox)}/api-keys/${target.api_key_id}`],
    ['PATCH', `/v0/inboxes/${enc(inbox)}/api-keys/${target.api_key_id}`, { name: 'x' }],
    ['DELETE', `/v0/inboxes/${enc(inbox)}/api-keys/${target.api_key_id}`],
  ];
  for (const [method, path, body] of routes) {
    const res = await as(agent.api_key, method, path, body);
    t.equal(res.status, 403, `${method} ${path}`);
    t.equal((res.body as { code: string }).code, 'missing_permission');
    t.equal((await api(svc.url, method, path, { body })).status, 401, `${method} ${path} without a credential`);
  }
  t.equal((await owner('GET', `/v0/api-keys/${target.api_key_id}`)).status, 200, 'the target key survived');
  t.equal((await owner<KeyPage>('GET', '/v0/api-keys?limit=100')).body.api_keys.filter((k) => k.name === 'x').length, 0, 'nothing was renamed');
});

t.test('an owner browser session manages keys too', async (t) => {
  const session = await setupOwner(svc);
  const res = await api<ApiKey>(svc.url, 'POST', '/v0/api-keys', { body: { permissions: ['inbox_read'], send_policy: 'direct' }, headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal(res.status, 200);
  t.match(res.body.api_key, /^svc_key_/);
});

t.test('inbox form: the path fixes the scope; keys not scoped to the inbox → 404', async (t) => {
  const a = await createInbox('form-a');
  const b = await createInbox('form-b');
  const created = await createKey({ name: 'via inbox', permissions: ['inbox_read'], send_policy: 'approval' }, `/v0/inboxes/${enc(a)}/api-keys`);
  t.equal(created.inbox_id, a, 'the path inbox is the scope');
  t.same(created.inbox_ids, [a]);
  t.equal((await as(created.api_key, 'GET', `/v0/inboxes/${enc(b)}`)).status, 404, 'the key sees only that inbox');
  t.equal((await as(created.api_key, 'GET', `/v0/inboxes/${enc(a)}`)).status, 200);

  for (const body of [{ permissions: [], send_policy: 'direct', inbox_id: b }, { permissions: [], send_policy: 'direct', inbox_ids: [a] }]) {
    const res = await owner('POST', `/v0/inboxes/${enc(a)}/api-keys`, body);
    t.equal(res.status, 400, `scope fields are not accepted in the body: ${Object.keys(body).join(',')}`);
  }
  t.equal((await owner('POST', `/v0/inboxes/${enc('ghost@keys.example.com')}/api-keys`, { permissions: [], send_policy: 'direct' })).status, 404, 'unknown inbox');

  const both = await createKey({ permissions: [], send_policy: 'direct', inbox_ids: [a, b] });
  const onlyB = await createKey({ permissions: [], send_policy: 'direct', inbox_id: b });
  const everywhere = await createKey({ permissions: [], send_policy: 'direct' });
  const listA = await owner<KeyPage>('GET', `/v0/inboxes/${enc(a)}/api-keys?limit=100`);
  t.equal(listA.status, 200);
  t.same(listA.body.api_keys.map((k) => k.api_key_id).sort(), [created.api_key_id, both.api_key_id].sort(), 'keys whose scope includes the inbox');
  t.notMatch(listA.text, /"api_key"/);

  const base = `/v0/inboxes/${enc(a)}/api-keys`;
  t.equal((await owner('GET', `${base}/${created.api_key_id}`)).status, 200);
  for (const other of [onlyB, everywhere]) {
    t.equal((await owner('GET', `${base}/${other.api_key_id}`)).status, 404, 'get of a key not scoped to the inbox');
    t.equal((await owner('PATCH', `${base}/${other.api_key_id}`, { name: 'x' })).status, 404, 'patch of a key not scoped to the inbox');
    t.equal((await owner('DELETE', `${base}/${other.api_key_id}`)).status, 404, 'delete of a key not scoped to the inbox');
  }
  t.equal((await owner('GET', `/v0/api-keys/${onlyB.api_key_id}`)).status, 200, 'the other key still exists');

  const patched = await owner<ApiKey>('PATCH', `${base}/${created.api_key_id}`, { send_policy: 'direct' });
  t.equal(patched.body.send_policy, 'direct');
  t.equal((await owner('DELETE', `${base}/${created.api_key_id}`)).status, 200);
  t.equal((await as(created.api_key, 'GET', `/v0/inboxes/${enc(a)}`)).status, 401, 'revoked through the inbox form');
  t.equal((await owner('GET', `/v0/inboxes/${enc('ghost@keys.example.com')}/api-keys`)).status, 404, 'listing under an unknown inbox');
});

t.test('list: paged newest first, tokens walk every key once, stale tokens → 409', async (t) => {
  const inbox = await createInbox('paging');
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await createKey({ name: `page-${i}`, permissions: [], send_policy: 'direct' }, `/v0/inboxes/${enc(inbox)}/api-keys`)).api_key_id);
  for (const limit of ['0', '101']) t.equal((await owner('GET', `/v0/api-keys?limit=${limit}`)).status, 400, `limit=${limit}`);

  for (const ascending of [false, true]) {
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const res: { body: KeyPage } = await owner<KeyPage>('GET', `/v0/inboxes/${enc(inbox)}/api-keys?limit=2&ascending=${ascending}${token ? `&page_token=${enc(token)}` : ''}`);
      t.equal(res.body.limit, 2);
      t.equal(res.body.count, res.body.api_keys.length);
      seen.push(...res.body.api_keys.map((k) => k.api_key_id));
      token = res.body.next_page_token;
    } while (token);
    const whole = await owner<KeyPage>('GET', `/v0/inboxes/${enc(inbox)}/api-keys?limit=100&ascending=${ascending}`);
    t.same(seen, whole.body.api_keys.map((k) => k.api_key_id), `pages join up to the one-page list (ascending=${ascending})`);
    t.same([...seen].sort(), [...made].sort(), 'every key exactly once');
    const stamps = whole.body.api_keys.map((k) => k.created_at);
    t.same(stamps, ascending ? [...stamps].sort() : [...stamps].sort().reverse(), ascending ? 'oldest first' : 'newest first');
  }
  const first = await owner<KeyPage>(`GET`, `/v0/inboxes/${enc(inbox)}/api-keys?limit=2`);
  const stale = await owner('GET', `/v0/api-keys?limit=2&page_token=${enc(first.body.next_page_token!)}`);
  t.equal(stale.status, 409, 'a token from the inbox form is not valid on the instance-wide list');
  t.equal((stale.body as { code: string }).code, 'page_token_stale');
  const flipped = await owner('GET', `/v0/inboxes/${enc(inbox)}/api-keys?limit=2&ascending=true&page_token=${enc(first.body.next_page_token!)}`);
  t.equal(flipped.status, 409);
});

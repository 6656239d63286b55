/**
 * The AgentMail SDK methods issue 35 added, from an attacker's side:
 * - the hosted-only methods (src/routes/hosted-only.ts) need a credential like any agent route,
 *   answer every caller and every id the same fixed `not_supported` (nothing echoed, nothing
 *   looked up), and `inboxes.authorize` keeps the scope rule (an inbox outside it is 404);
 * - `auth.me` tells a key only about itself, follows the owner's changes at once, and says
 *   nothing to an expired or revoked key; `organizations.get` (counts of the whole home) is the
 *   owner's alone;
 * - the AgentMail permissions object cannot widen a key: AgentMail's own names, a newer SDK's
 *   names and prototype names grant nothing, on create and on patch, and a value of the wrong
 *   type is still refused.
 */
import t from 'tap';
import { AgentMailClient } from 'agentmail';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { expireApiKey, narrowApiKeyScope, openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { PERMISSIONS } from '../../src/auth/permissions.js';

const MINE = 'mine@identity.example.com';
const OTHER = 'other@identity.example.com';
const THIRD = 'third@identity.example.com';

let svc: RunningSvc;
let db: Db;
let mineKey: { id: string; secret: string };
let pairKey: { id: string; secret: string };
let wideKey: { id: string; secret: string };
let bareKey: { id: string; secret: string };

t.before(async () => {
  svc = await startSvc();
  db = openHomeDb(svc.home);
  for (const address of [MINE, OTHER, THIRD]) await createInbox(svc, address);
  mineKey = await createApiKey(svc, { permissions: [...PERMISSIONS], inboxIds: [MINE] });
  pairKey = await createApiKey(svc, { permissions: [...PERMISSIONS], inboxIds: [MINE, OTHER] });
  wideKey = await createApiKey(svc, { permissions: [...PERMISSIONS] });
  bareKey = await createApiKey(svc, { permissions: [], inboxIds: [MINE] });
});
t.teardown(() => {
  db.close();
  return svc.stop();
});

const call = (token: string | undefined, method: string, path: string, body?: unknown) => api(svc.url, method, path, { token, body });
const enc = encodeURIComponent;

/** The hosted-only routes, with ids an attacker would try in them. */
const HOSTILE_IDS = ['d5e9c84f-c2b2-4bf4-b4b0-7ffd7a9ffc32', '..%2F..%2Fapi-keys', '%3Cscript%3Ealert(1)%3C%2Fscript%3E', 'x'.repeat(300), enc(MINE), '%00'];
const hostedRoutes = (id: string): [string, string][] => [
  ['POST', '/v0/agent/verify'],
  ['GET', '/v0/providers'],
  ['GET', `/v0/providers/search?q=${id}`],
  ['GET', `/v0/providers/${id}`],
  ['GET', `/v0/providers/${id}/accounts`],
  ['POST', `/v0/providers/${id}/connect`],
  ['GET', '/v0/accounts'],
  ['GET', `/v0/accounts/${id}`],
];

t.test('hosted-only methods need a credential: none, a wrong one, an expired or a revoked key → 401', async (t) => {
  const expired = await createApiKey(svc, { permissions: [...PERMISSIONS] });
  expireApiKey(db, expired.id);
  const revoked = await createApiKey(svc, { permissions: [...PERMISSIONS] });
  t.equal((await call(svc.ownerToken, 'DELETE', `/v0/api-keys/${revoked.id}`)).status, 200);
  for (const [method, path] of [...hostedRoutes('p1'), ['POST', `/v0/inboxes/${enc(MINE)}/authorize`] as [string, string]]) {
    for (const token of [undefined, 'svc_key_not-a-real-key', expired.secret, revoked.secret]) {
      const res = await call(token, method, path, method === 'POST' ? {} : undefined);
      t.equal(res.status, 401, `${method} ${path} with ${token ? 'a bad credential' : 'none'}`);
      t.notMatch(res.text, /not_supported/, 'the not_supported answer is not shown before authentication');
    }
  }
  // Sign-up is how AgentMail hands out a first credential, so the SDK sends none: it answers
  // anyone the same fixed text, but a credential that is sent is still checked.
  const anonymous = await call(undefined, 'POST', '/v0/agent/sign-up', { human_email: 'a@example.org', username: 'x' });
  t.equal(anonymous.status, 400);
  t.match(anonymous.body, { code: 'not_supported' });
  t.equal((await call('svc_key_not-a-real-key', 'POST', '/v0/agent/sign-up', {})).status, 401, 'a bad credential on sign-up is 401');
  const asOwner = await call(svc.ownerToken, 'POST', '/v0/agent/sign-up', { human_email: 'someone-else@example.org' });
  t.equal(asOwner.text, anonymous.text, 'the same answer whoever asks, whatever the body');
});

t.test('every caller and every id gets the same fixed not_supported: nothing echoed, nothing revealed', async (t) => {
  const answers = new Map<string, string>();
  for (const token of [svc.ownerToken, wideKey.secret, mineKey.secret, bareKey.secret]) {
    for (const id of HOSTILE_IDS) {
      for (const [method, path] of hostedRoutes(id)) {
        const res = await call(token, method, path, method === 'POST' ? { inbox_id: OTHER, accept_disclosure: true } : undefined);
        if (id === '%00' && res.status === 400 && (res.body as { code?: string }).code === 'validation_error') continue; // refused as a target first
        t.equal(res.status, 400, `${method} ${path.slice(0, 60)}`);
        t.equal((res.body as { code?: string }).code, 'not_supported');
        t.notMatch(res.text, /script|\.\.|%2F|xxxxxxxxxx|identity\.example|mine@|other@/, 'nothing from the request or the home in the answer');
        const group = path.startsWith('/v0/agent') ? 'sign-up' : 'network';
        const seen = answers.get(group);
        if (seen === undefined) answers.set(group, res.text);
        else t.equal(res.text, seen, 'byte for byte the same answer');
      }
    }
  }
  // Other methods on those paths do not exist.
  for (const [method, path] of [['DELETE', '/v0/providers'], ['PUT', '/v0/accounts/x'], ['GET', '/v0/agent/sign-up'], ['GET', `/v0/inboxes/${enc(MINE)}/authorize`]]) {
    const res = await call(svc.ownerToken, method, path);
    t.equal(res.status, 404, `${method} ${path}: no route`);
  }
});

t.test('inboxes.authorize keeps the scope rule: outside the scope is 404, like an inbox that does not exist', async (t) => {
  const inScope = await call(mineKey.secret, 'POST', `/v0/inboxes/${enc(MINE)}/authorize`, { auth_token: 't' });
  t.equal(inScope.status, 400);
  t.match(inScope.body, { code: 'not_supported', fix: /extract/ });
  const outside = await call(mineKey.secret, 'POST', `/v0/inboxes/${enc(OTHER)}/authorize`, { auth_token: 't' });
  const missing = await call(mineKey.secret, 'POST', `/v0/inboxes/${enc('nobody@identity.example.com')}/authorize`, { auth_token: 't' });
  t.equal(outside.status, 404);
  t.equal(outside.text, missing.text, 'an inbox outside the scope reads as one that does not exist');
  t.equal((await call(bareKey.secret, 'POST', `/v0/inboxes/${enc(MINE)}/authorize`, {})).status, 400, 'no permission reaches more than not_supported');
});

t.test('auth.me tells a key only about itself', async (t) => {
  const mine = await call(mineKey.secret, 'GET', '/v0/auth/me');
  t.same(mine.body, { scope_type: 'inbox', scope_id: MINE, organization_id: 'default', pod_id: 'default', inbox_id: MINE, api_key_id: mineKey.id }, 'a one-inbox key: exactly its identity');
  t.notMatch(mine.text, /other@|third@|svc_key_|permissions|send_policy/, 'no other inbox, no secret, no grants');

  const pair = await call(pairKey.secret, 'GET', '/v0/auth/me');
  t.same(pair.body, { scope_type: 'pod', scope_id: 'default', organization_id: 'default', pod_id: 'default', api_key_id: pairKey.id });
  t.notMatch(pair.text, /@identity\.example\.com/, 'a several-inbox key: no addresses at all');

  const bare = await call(bareKey.secret, 'GET', '/v0/auth/me');
  t.equal(bare.status, 200, 'a key without permissions may still ask who it is');
  t.equal((bare.body as { inbox_id?: string }).inbox_id, MINE);

  // The owner narrows the pair key to one inbox: the next call says so.
  narrowApiKeyScope(db, pairKey.id, [OTHER]);
  const narrowed = await call(pairKey.secret, 'GET', '/v0/auth/me');
  t.match(narrowed.body, { scope_type: 'inbox', inbox_id: OTHER });
  t.notMatch(narrowed.text, /mine@/, 'the inbox it lost is gone from the answer');

  const gone = await createApiKey(svc, { permissions: [], inboxIds: [THIRD] });
  expireApiKey(db, gone.id);
  t.equal((await call(gone.secret, 'GET', '/v0/auth/me')).status, 401, 'an expired key learns nothing');
  t.equal((await call(undefined, 'GET', '/v0/auth/me')).status, 401, 'no credential: 401');
});

t.test('organizations.get counts the whole home: the owner only', async (t) => {
  for (const key of [wideKey, mineKey, bareKey]) {
    const res = await call(key.secret, 'GET', '/v0/organizations');
    t.equal(res.status, 403);
    t.match(res.body, { code: 'missing_permission' });
    t.notMatch(res.text, /inbox_count|domain_count/, 'no counts in the refusal');
  }
  const owner = await call(svc.ownerToken, 'GET', '/v0/organizations');
  t.equal(owner.status, 200);
  t.match(owner.body, { organization_id: 'default', inbox_count: 3, domain_count: 0 });
  const again = await call(svc.ownerToken, 'GET', '/v0/organizations');
  t.equal((again.body as { created_at: string }).created_at, (owner.body as { created_at: string }).created_at, 'created_at is stable');
});

t.test("auth.me for a home key over several inboxes: their one pod, else the organization, never a pod that does not hold them", async (t) => {
  const pod = await call(svc.ownerToken, 'POST', '/v0/pods', { name: 'identity' });
  const podId = (pod.body as { pod_id: string }).pod_id;
  const inPod = ['one@identity-pod.example.com', 'two@identity-pod.example.com'];
  for (const [username, domain] of inPod.map((a) => a.split('@'))) t.equal((await call(svc.ownerToken, 'POST', `/v0/pods/${podId}/inboxes`, { username, domain })).status, 200);
  const samePod = await createApiKey(svc, { permissions: [], inboxIds: inPod });
  t.same((await call(samePod.secret, 'GET', '/v0/auth/me')).body, { scope_type: 'pod', scope_id: podId, organization_id: 'default', pod_id: podId, api_key_id: samePod.id }, 'both inboxes in one pod: that pod');
  const across = await createApiKey(svc, { permissions: [], inboxIds: [inPod[0], MINE] });
  const me = await call(across.secret, 'GET', '/v0/auth/me');
  t.same(me.body, { scope_type: 'organization', scope_id: 'default', organization_id: 'default', api_key_id: across.id }, 'inboxes in two pods: the organization, the smallest tier holding both');
  t.notMatch(me.text, /@identity/, 'still no addresses');
});

t.test('the AgentMail permissions object cannot widen a key', async (t) => {
  const agentmailNames = ['domain_read', 'domain_create', 'domain_update', 'domain_delete', 'metrics_read', 'api_key_read', 'api_key_create', 'api_key_update', 'api_key_delete', 'provider_connect', 'provider_share_owner', 'pod_read', 'pod_create', 'pod_delete'];
  const hostile = JSON.parse(
    `{${[...agentmailNames, 'a_permission_from_a_newer_sdk', 'owner', 'admin', 'all', '*', '__proto__', 'constructor', 'INBOX_READ'].map((n) => `"${n}": true`).join(', ')}, "inbox_read": true}`,
  ) as Record<string, boolean>;
  const created = await api<{ api_key: string; api_key_id: string; permissions: Record<string, boolean> }>(svc.url, 'POST', '/v0/api-keys', {
    token: svc.ownerToken,
    body: { permissions: hostile, send_policy: 'direct', inbox_ids: [MINE] },
  });
  t.equal(created.status, 200, created.text);
  t.same(Object.keys(created.body.permissions).sort(), [...PERMISSIONS].sort(), 'the answer names only svc permissions');
  t.same(Object.entries(created.body.permissions).filter(([, v]) => v).map(([k]) => k), ['inbox_read'], 'only the svc name granted');
  const stored = db.prepare('SELECT permissions FROM api_keys WHERE api_key_id = ?').get(created.body.api_key_id) as { permissions: string };
  t.same(JSON.parse(stored.permissions), ['inbox_read'], 'stored: inbox_read alone');

  // What AgentMail's names would have granted stays the owner's.
  const key = created.body.api_key;
  for (const [method, path, body] of [
    ['GET', '/v0/domains'],
    ['POST', '/v0/domains', { domain: 'escalate.example.com' }],
    ['GET', '/v0/api-keys'],
    ['POST', '/v0/api-keys', { name: 'minted' }],
    ['GET', '/v0/organizations'],
    ['GET', `/v0/inboxes/${enc(MINE)}/messages`],
    ['GET', `/v0/inboxes/${enc(MINE)}/metrics/events`],
  ] as [string, string, unknown?][]) {
    t.equal((await call(key, method, path, body)).status, 403, `${method} ${path}: still refused`);
  }
  t.equal((await call(key, 'GET', `/v0/inboxes/${enc(OTHER)}`)).status, 404, 'the scope is unchanged');

  // A patch with the same names grants nothing either.
  const patched = await api<{ permissions: Record<string, boolean> }>(svc.url, 'PATCH', `/v0/api-keys/${created.body.api_key_id}`, {
    token: svc.ownerToken,
    body: { permissions: Object.fromEntries(agentmailNames.map((n) => [n, true])) },
  });
  t.equal(patched.status, 200, patched.text);
  t.notOk(Object.values(patched.body.permissions).some(Boolean), 'patched with only AgentMail names: nothing granted');
  t.equal((await call(key, 'GET', `/v0/inboxes/${enc(MINE)}`)).status, 403, 'and the key lost inbox_read as the patch replaced the set');
});

t.test('the SDK sends its full permissions object and it is accepted; a wrong value type is still 400', async (t) => {
  const client = new AgentMailClient({ apiKey: svc.ownerToken, baseUrl: svc.url, maxRetries: 0 });
  const made = await client.apiKeys.create({
    name: 'full-object',
    permissions: { inboxRead: true, messageRead: true, domainRead: false, metricsRead: true, apiKeyCreate: true, podRead: true, providerConnect: true },
  });
  const read = await api<{ permissions: Record<string, boolean> }>(svc.url, 'GET', `/v0/api-keys/${made.apiKeyId}`, { token: svc.ownerToken });
  t.same(Object.entries(read.body.permissions).filter(([, v]) => v).map(([k]) => k).sort(), ['inbox_read', 'message_read']);

  for (const permissions of [{ domain_read: 'true' }, { inbox_read: 1 }, { future_permission: { nested: true } }, { metrics_read: [] }, Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`p${i}`, false]))]) {
    const res = await call(svc.ownerToken, 'POST', '/v0/api-keys', { permissions });
    t.equal(res.status, 400, JSON.stringify(permissions).slice(0, 60));
    t.match(res.body, { code: 'validation_error' });
  }
});

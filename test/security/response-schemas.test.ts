/**
 * Response schemas as a safety net for secrets (issue 18): the serializer sends only the fields a
 * route's response schema declares, so a secret that reaches a view by mistake (a key's hash, the
 * secret itself on a read) still never reaches the wire.
 *
 * - The API key schemas, served by fastify exactly as svc serves them, strip a view that carries
 *   `key_hash` and `api_key`: the schema, not the store's care, is what keeps them off the wire.
 * - Through a real service: every API key read (list, get, patch, both route forms) shows exactly
 *   the declared fields, never the hash or the secret; the secret appears once, on create.
 * - Every kind of answer carries the gate's security headers (src/auth/gate.ts SECURITY_HEADERS):
 *   a success, a refusal, an unknown path, and `/mcp`, which writes its answer itself.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import Fastify from 'fastify';
import { ApiKeyResponse, CreatedApiKeyResponse } from '../../src/auth/api-key-schemas.js';
import { SECURITY_HEADERS } from '../../src/auth/gate.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';

const SECRET = 'svc_key_probe-secret-never-on-the-wire';
const HASH = createHash('sha256').update(SECRET).digest('hex');

/** A view as the store builds it, plus what must never be sent. */
const leakyView = {
  type: 'bearer',
  api_key_id: '0190aaaa-0000-7000-8000-000000000001',
  name: 'probe',
  prefix: SECRET.slice(0, 12),
  permissions: { inbox_read: true, message_send: false },
  send_policy: 'approval',
  inbox_id: null,
  inbox_ids: null,
  expires_at: null,
  created_at: '2026-11-24T00:00:00.000Z',
  updated_at: '2026-11-24T00:00:00.000Z',
  used_at: null,
  key_hash: HASH,
  api_key: SECRET,
};

t.test('the API key read schema drops the hash and the secret a view carries by mistake', async (t) => {
  const app = Fastify();
  app.get('/key', { schema: { response: { 200: ApiKeyResponse } } }, async () => leakyView);
  app.get('/created', { schema: { response: { 200: CreatedApiKeyResponse } } }, async () => leakyView);
  t.teardown(() => app.close());

  const read = await app.inject({ method: 'GET', url: '/key' });
  t.equal(read.statusCode, 200);
  t.notMatch(read.body, HASH, 'the hash is not on the wire');
  t.notMatch(read.body, SECRET, 'the secret is not on the wire');
  const { key_hash: _hash, api_key: _secret, ...declared } = leakyView;
  t.same(JSON.parse(read.body), declared, 'every declared field still is');

  const created = await app.inject({ method: 'GET', url: '/created' });
  t.notMatch(created.body, HASH, 'the create schema drops the hash too');
  t.equal(JSON.parse(created.body).api_key, SECRET, 'and carries the secret, the one time it is shown');
});

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });
const DECLARED_FIELDS = Object.keys(ApiKeyResponse.properties).sort();
/** A key of the home belongs to no pod: its `pod_id` is left out (docs/pods.md); a pod's key carries it. */
const READ_FIELDS = DECLARED_FIELDS.filter((f) => f !== 'pod_id');

t.test('API key reads through svc carry exactly the declared fields, never the secret or its hash', async (t) => {
  const inbox = await owner<{ inbox_id: string }>('POST', '/v0/inboxes', { username: 'schema-probe', domain: 'schemas.example.com' });
  t.equal(inbox.status, 200);
  const inboxId = encodeURIComponent(inbox.body.inbox_id);

  for (const base of ['/v0/api-keys', `/v0/inboxes/${inboxId}/api-keys`]) {
    const created = await owner<{ api_key: string; api_key_id: string }>('POST', base, { name: 'probe', send_policy: 'read_only', permissions: ['message_read'] });
    t.equal(created.status, 200, `${base}: created`);
    t.same(Object.keys(created.body).sort(), [...READ_FIELDS, 'api_key'].sort(), `${base}: create shows the declared fields and the secret once`);
    const secret = created.body.api_key;
    const hash = createHash('sha256').update(secret).digest('hex');
    const id = created.body.api_key_id;

    const reads = [
      ['list', await owner<{ api_keys: Record<string, unknown>[] }>('GET', base)],
      ['get', await owner('GET', `${base}/${id}`)],
      ['patch', await owner('PATCH', `${base}/${id}`, { name: 'renamed' })],
    ] as const;
    for (const [what, res] of reads) {
      t.equal(res.status, 200, `${base} ${what}: 200`);
      t.notMatch(res.text, secret, `${base} ${what}: the secret is not shown again`);
      t.notMatch(res.text, hash, `${base} ${what}: the hash is never shown`);
      const item = 'api_keys' in res.body ? (res.body.api_keys as Record<string, unknown>[]).find((k) => k.api_key_id === id) : res.body;
      t.same(Object.keys(item ?? {}).sort(), READ_FIELDS, `${base} ${what}: exactly the declared fields`);
    }
  }
  const podKey = await owner<Record<string, unknown>>('POST', '/v0/pods/default/api-keys', { name: 'pod probe', send_policy: 'read_only', permissions: ['message_read'] });
  t.equal(podKey.status, 200, podKey.text);
  t.same(Object.keys(podKey.body).sort(), [...DECLARED_FIELDS, 'api_key'].sort(), 'a pod\u2019s key: every declared field, pod_id included, and the secret once');
  t.equal(podKey.body.pod_id, 'default');
});

t.test('every kind of answer carries the security headers, /mcp included', async (t) => {
  const answers = [
    ['a public success', await api(svc.url, 'GET', '/v0/owner/status')],
    ['an owner success', await owner('GET', '/v0/api-keys')],
    ['a refusal without a credential', await api(svc.url, 'GET', '/v0/api-keys')],
    ['a cross-origin refusal', await api(svc.url, 'GET', '/v0/owner/status', { headers: { origin: 'http://evil.test' } })],
    ['an unknown path', await api(svc.url, 'GET', '/v0/no-such-route')],
    ['/mcp, which writes its own answer', await api(svc.url, 'POST', '/mcp', { token: svc.ownerToken, headers: { accept: 'application/json, text/event-stream' }, body: { jsonrpc: '2.0', id: 1, method: 'ping' } })],
  ] as const;
  for (const [what, res] of answers) {
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) t.equal(res.headers.get(name), value, `${what} (${res.status}): ${name}`);
  }
});

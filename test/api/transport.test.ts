/** Owner transport configuration (spec §4.13, ARCHITECTURE §6): secrets are write-only. */
import t from 'tap';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey } from '../helpers/seed.js';

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

const EDGE_TOKEN = 'edge-token-0123456789abcdef';

t.test('a new home has no transport', async (t) => {
  const res = await api(svc.url, 'GET', '/v0/owner/transport', { token: svc.ownerToken });
  t.equal(res.status, 200);
  t.same(res.body, { configured: false, edge: null, edges: [], smtp: null });
});

t.test('PUT stores the edge; the token is never read back', async (t) => {
  const put = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: 'http://127.0.0.1:9999/', token: EDGE_TOKEN } } });
  t.equal(put.status, 200);
  t.match(put.body, { configured: true, edge: { url: 'http://127.0.0.1:9999', token_set: true }, edges: [{ url: 'http://127.0.0.1:9999', token_set: true, health: { consecutive_failures: Number } }], smtp: null });
  t.equal((put.body as { edges: unknown[] }).edges.length, 1, 'the single edge form pairs one edge');
  const get = await api(svc.url, 'GET', '/v0/owner/transport', { token: svc.ownerToken });
  t.notMatch(get.text, EDGE_TOKEN);
  t.notMatch(put.text, EDGE_TOKEN);
  t.same({ ...get.body, edges: null }, { ...put.body, edges: null }, 'GET answers what PUT stored (health aside, which the loops update)');
});

t.test('an SMTP smart host keeps the edge and hides its password', async (t) => {
  const put = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: 'smtp.example.test', port: 587, username: 'agent', password: 'smtp-secret-pw' } } });
  t.equal(put.status, 200);
  t.match(put.body, { edge: { token_set: true }, smtp: { host: 'smtp.example.test', port: 587, secure: false, username: 'agent', password_set: true } });
  t.notMatch(put.text, 'smtp-secret-pw');
  const removed = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: null } });
  t.match(removed.body, { edge: { token_set: true }, smtp: null });
});

t.test('invalid configurations are validation errors', async (t) => {
  for (const body of [
    { edge: { url: 'not a url', token: EDGE_TOKEN } },
    { edge: { url: 'http://edge.example.com', token: EDGE_TOKEN } },
    { edge: { url: 'https://edge.example.com', token: 'short' } },
    { edge: { url: 'https://edge.example.com', token: EDGE_TOKEN, extra: 1 } },
    { smtp: { host: 'x', port: 70000 } },
    { relay: true },
  ]) {
    const res = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body });
    t.equal(res.status, 400, JSON.stringify(body));
    t.equal((res.body as { code: string }).code, 'validation_error');
  }
});

t.test('the stored secret lives only in the encrypted database', async (t) => {
  const db = openHomeDb(svc.home);
  t.teardown(() => db.close());
  const row = db.prepare("SELECT value FROM settings WHERE key = 'transport'").get() as { value: string };
  t.match(row.value, EDGE_TOKEN, 'kept for the loops to use');
});

t.test('agents cannot read or change the transport', async (t) => {
  const key = await createApiKey(svc, { permissions: ['inbox_read', 'message_read', 'message_send'] });
  for (const method of ['GET', 'PUT', 'DELETE']) {
    const res = await api(svc.url, method, '/v0/owner/transport', { token: key.secret, body: method === 'PUT' ? { smtp: null } : undefined });
    t.equal(res.status, 403, method);
    t.equal((res.body as { code: string }).code, 'missing_permission');
  }
});

t.test('DELETE removes the configuration', async (t) => {
  const del = await api(svc.url, 'DELETE', '/v0/owner/transport', { token: svc.ownerToken });
  t.equal(del.status, 200);
  t.equal(del.text, '');
  const get = await api(svc.url, 'GET', '/v0/owner/transport', { token: svc.ownerToken });
  t.same(get.body, { configured: false, edge: null, edges: [], smtp: null });
});

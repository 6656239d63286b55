/**
 * The domain routes the AgentMail SDK reaches (issue 35 §4): `GET /v0/domains/{id}/setup-link`
 * and `POST /v0/domains/{id}/verify`, which now provisions a domain never applied. Both are owner
 * only like every domain route (docs/domains.md): no credential or a bad one → 401, any API key
 * → 403 missing_permission (nothing provisioned), a cookie without its CSRF header cannot
 * provision, an id that names no domain → 404. The setup link is on the home's own origin
 * whatever Host the request names, and carries no secret.
 */
import t from 'tap';
import { AgentMailClient, AgentMailError } from 'agentmail';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { seedPrincipals, type Principals } from '../helpers/principals.js';
import { createApiKey } from '../helpers/seed.js';
import { PERMISSIONS } from '../../src/auth/permissions.js';

let svc: RunningSvc;
let who: Principals;
let instanceKey: string;
let domainId: string;

t.before(async () => {
  svc = await startSvc();
  who = await seedPrincipals(svc);
  instanceKey = (await createApiKey(svc, { name: 'every permission, every inbox', permissions: [...PERMISSIONS] })).secret;
  const d = await api<{ domain_id: string }>(svc.url, 'POST', '/v0/domains', { token: svc.ownerToken, body: { domain: 'target.example.com' } });
  if (d.status !== 200) throw new Error(d.text);
  domainId = d.body.domain_id;
});
t.teardown(() => svc.stop());

const stateOf = async (id: string) => (await api<{ state: string }>(svc.url, 'GET', `/v0/domains/${id}`, { token: svc.ownerToken })).body.state;

t.test('no credential or a bad one: 401; any API key: 403 missing_permission, and nothing is provisioned', async (t) => {
  const attempts: [string, Record<string, string>, number][] = [
    ['no credential', who.headers('none'), 401],
    ['a never-issued key', who.headers('bad_bearer'), 401],
    ['an inbox key with every permission', who.headers('key_in_scope'), 403],
    ["another inbox's key", who.headers('key_other_inbox'), 403],
    ['an instance-wide key with every permission', { Authorization: `Bearer ${instanceKey}` }, 403],
  ];
  for (const [label, headers, status] of attempts) {
    for (const [method, path] of [['GET', `/v0/domains/${domainId}/setup-link`], ['POST', `/v0/domains/${domainId}/verify`]] as const) {
      const res = await api(svc.url, method, path, { headers, ...(method === 'POST' ? { body: {} } : {}) });
      t.equal(res.status, status, `${label}: ${method} ${path.split('/').pop()} → ${status}`);
      if (status === 403) t.equal(res.body.code, 'missing_permission');
      t.notMatch(res.text, /\/domains\/[0-9a-f-]{36}/, `${label}: no link in the refusal`);
    }
  }
  t.equal(await stateOf(domainId), 'pending', 'no refused verify provisioned the domain');
});

t.test('through the SDK with a non-owner key: getSetupLink and verify raise 403', async (t) => {
  const sdk = new AgentMailClient({ apiKey: instanceKey, baseUrl: svc.url, maxRetries: 0, timeoutInSeconds: 10 });
  for (const call of [() => sdk.domains.getSetupLink(domainId), () => sdk.domains.verify(domainId)]) {
    const error = await call().then(() => null, (e: unknown) => e);
    t.ok(error instanceof AgentMailError);
    t.equal((error as AgentMailError).statusCode, 403);
  }
  t.equal(await stateOf(domainId), 'pending');
});

t.test('a session cookie without its CSRF header cannot provision a domain through verify', async (t) => {
  const res = await api(svc.url, 'POST', `/v0/domains/${domainId}/verify`, { headers: who.headers('cookie_only'), body: {} });
  t.ok(res.status >= 400 && res.status < 500, `refused: ${res.status}`);
  t.equal(await stateOf(domainId), 'pending');
});

t.test('ids that name no domain: 404 not_found, as every domain route; malformed ids are 400', async (t) => {
  const other = await api<{ domain_id: string }>(svc.url, 'POST', '/v0/domains', { token: svc.ownerToken, body: { domain: 'deleted.example.com' } });
  await api(svc.url, 'DELETE', `/v0/domains/${other.body.domain_id}`, { token: svc.ownerToken });
  const keyId = (await api<{ api_keys: { api_key_id: string }[] }>(svc.url, 'GET', '/v0/api-keys', { token: svc.ownerToken })).body.api_keys[0].api_key_id;
  const unknown = [other.body.domain_id, '01900000-0000-7000-8000-000000000000', keyId, encodeURIComponent(who.inbox), domainId.toUpperCase()];
  for (const id of unknown) {
    for (const [method, route] of [['GET', 'setup-link'], ['POST', 'verify']] as const) {
      const res = await api(svc.url, method, `/v0/domains/${id}/${route}`, { token: svc.ownerToken, ...(method === 'POST' ? { body: {} } : {}) });
      t.equal(res.status, 404, `${method} ${route} of ${id}: 404`);
      t.equal(res.body.code, 'not_found');
    }
  }
  for (const id of ['x'.repeat(65), `${domainId}%2F..%2F..%2Fapi-keys`]) {
    const res = await api(svc.url, 'GET', `/v0/domains/${id}/setup-link`, { token: svc.ownerToken });
    t.ok([400, 404].includes(res.status), `${id.slice(0, 40)}…: ${res.status}`);
    t.notOk('url' in res.body, 'no link');
  }
});

t.test("the link is on the home's own origin whatever Host or forwarding header the request names, and carries no secret", async (t) => {
  const spoofs: Record<string, string>[] = [{}, { 'X-Forwarded-Host': 'evil.example' }, { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'evil.example:443' }, { Host: 'evil.example' }, { Host: `localhost:${new URL(svc.url).port}` }];
  for (const headers of spoofs) {
    const res = await api<{ url?: string; supported?: boolean }>(svc.url, 'GET', `/v0/domains/${domainId}/setup-link`, { token: svc.ownerToken, headers });
    const label = JSON.stringify(headers);
    if (res.status !== 200) {
      t.ok(res.status >= 400 && res.status < 500, `${label}: refused (${res.status})`);
      continue;
    }
    const url = new URL(res.body.url!);
    t.equal(url.origin, svc.url, `${label}: the home's origin`);
    t.equal(url.pathname, `/domains/${domainId}`);
    t.equal(url.search + url.hash + url.username + url.password, '', `${label}: no query, fragment or credentials`);
    for (const secret of [svc.ownerToken, who.session.csrf, who.keyInScope, instanceKey]) t.notOk(res.text.includes(secret), `${label}: no credential in the answer`);
  }
  const page = await fetch(`${svc.url}/domains/${domainId}`);
  t.equal(page.status, 200, 'the link opens the web app');
  const data = await api(svc.url, 'GET', `/v0/domains/${domainId}`, {});
  t.equal(data.status, 401, 'whose data needs the owner: the link alone reads nothing');
});

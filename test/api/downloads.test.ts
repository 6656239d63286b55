/** GET /v0/downloads/{token} against a running service (spec §4.7). */
import t from 'tap';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

/** A well-formed token (body.mac) that this service never signed. */
const forged = () => `${Buffer.from(JSON.stringify({ issuer: { kind: 'owner', id: 'owner' }, audience: null, origin: svc.url, target: { kind: 'raw', inboxId: 'a@example.org', messageId: '<x@y>' }, exp: Date.now() + 60_000 })).toString('base64url')}.${'A'.repeat(43)}`;

t.test('an invalid or forged token is 404 not_found, with or without a credential', async (t) => {
  for (const token of ['nope', forged(), `${forged()}.extra`, 'a.b']) {
    for (const bearer of [undefined, svc.ownerToken]) {
      const res = await api(svc.url, 'GET', `/v0/downloads/${encodeURIComponent(token)}`, { token: bearer });
      t.equal(res.status, 404, `${token.slice(0, 12)} ${bearer ? 'with' : 'without'} bearer`);
      t.match(res.body, { code: 'not_found', message: String, fix: String });
      t.equal(res.headers.get('cache-control'), 'no-store');
      t.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
  }
});

t.test('a bearer that does not authenticate is 401 before the token is looked at', async (t) => {
  const res = await api(svc.url, 'GET', `/v0/downloads/${forged()}`, { token: 'svc_key_not-a-real-key' });
  t.equal(res.status, 401);
  t.equal((res.body as { code: string }).code, 'unauthorized');
});

t.test('the route takes no cookie: a session cookie changes nothing', async (t) => {
  const session = await setupOwner(svc);
  const res = await api(svc.url, 'GET', `/v0/downloads/${forged()}`, { headers: { cookie: session.cookie } });
  t.equal(res.status, 404);
});

t.test('only GET /v0/downloads/{token} exists', async (t) => {
  for (const [method, p] of [['GET', '/v0/downloads'], ['GET', '/v0/downloads/'], ['GET', '/v0/downloads/a/b'], ['DELETE', `/v0/downloads/${forged()}`], ['POST', `/v0/downloads/${forged()}`]]) {
    const res = await api(svc.url, method, p, { token: svc.ownerToken });
    t.equal(res.status, 404, `${method} ${p.slice(0, 30)}`);
    t.equal((res.body as { code: string }).code, 'not_found');
  }
});

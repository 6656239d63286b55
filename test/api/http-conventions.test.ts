/** HTTP conventions for all of /v0: error body, unknown paths and fields, origins, credentials in URLs. */
import t from 'tap';
import http from 'node:http';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';

/** Announces a body over the limit and reads the answer without sending it all. */
function oversizeRequest(url: string, length: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': length } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.write('{"password":"');
  });
}

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

t.test('unknown paths under /v0 answer 404 not_found with the error body', async (t) => {
  for (const p of ['/v0/nope', '/v0', '/v0/owner', '/v0/owner/status/extra', '/v0/owner/sessions/a/b']) {
    const res = await api(svc.url, 'GET', p, { token: svc.ownerToken });
    t.equal(res.status, 404, p);
    t.match(res.body, { name: 'NotFoundError', code: 'not_found', message: String }, p);
  }
});

t.test('there is no health, version or OpenAPI route', async (t) => {
  for (const p of ['/v0/health', '/v0/healthz', '/v0/version', '/v0/openapi.json', '/v0/docs']) {
    const res = await api(svc.url, 'GET', p, { token: svc.ownerToken });
    t.equal(res.status, 404, p);
    t.equal((res.body as { code: string }).code, 'not_found');
  }
});

t.test('unknown body fields are rejected with validation_error', async (t) => {
  const res = await api(svc.url, 'POST', '/v0/owner/login', { body: { password: 'x'.repeat(20), remember_me: true } });
  t.equal(res.status, 400);
  t.match(res.body, { name: 'ValidationError', code: 'validation_error', message: /remember_me|additional/, fix: String });
});

t.test('wrong types and malformed JSON are validation errors, never 500', async (t) => {
  const wrongType = await api(svc.url, 'POST', '/v0/owner/login', { body: { password: 12345678901234 } });
  t.equal(wrongType.status, 400);
  t.equal((wrongType.body as { code: string }).code, 'validation_error');
  const broken = await api(svc.url, 'POST', '/v0/owner/login', { rawBody: '{"password":', headers: { 'content-type': 'application/json' } });
  t.equal(broken.status, 400);
  t.equal((broken.body as { code: string }).code, 'validation_error');
  const notObject = await api(svc.url, 'POST', '/v0/owner/login', { rawBody: '[1,2]', headers: { 'content-type': 'application/json' } });
  t.equal(notObject.status, 400);
  const media = await api(svc.url, 'POST', '/v0/owner/login', { rawBody: 'password=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(media.status, 415);
  t.equal((media.body as { code: string }).code, 'unsupported_media_type');
  const huge = await oversizeRequest(svc.url + '/v0/owner/login', 9 * 1024 * 1024);
  t.equal(huge.status, 413);
  t.equal(JSON.parse(huge.body).code, 'payload_too_large');
});

t.test('cross-origin browser requests to /v0 are rejected', async (t) => {
  const foreign = await api(svc.url, 'GET', '/v0/owner/status', { headers: { origin: 'https://evil.example' } });
  t.equal(foreign.status, 403);
  t.equal((foreign.body as { code: string }).code, 'forbidden');
  t.notOk(foreign.headers.get('access-control-allow-origin'), 'no CORS grant');
  const crossSite = await api(svc.url, 'POST', '/v0/owner/login', { body: { password: 'x'.repeat(20) }, headers: { 'sec-fetch-site': 'cross-site' } });
  t.equal(crossSite.status, 403);
  const same = await api(svc.url, 'GET', '/v0/owner/status', { headers: { origin: svc.url } });
  t.equal(same.status, 200, 'the listener\'s own origin is fine');
});

t.test('credentials are never taken from the URL', async (t) => {
  const res = await api(svc.url, 'GET', `/v0/owner/sessions?access_token=${svc.ownerToken}`);
  t.equal(res.status, 400);
  t.match(res.body, { code: 'validation_error', message: /URL/ });
  const noAuth = await api(svc.url, 'GET', '/v0/owner/sessions');
  t.equal(noAuth.status, 401);
  t.match(noAuth.body, { name: 'UnauthorizedError', code: 'unauthorized' });
});

t.test('a bad bearer is 401 and the cookie is ignored when Authorization is present', async (t) => {
  const session = await setupOwner(svc);
  const withCookie = await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal(withCookie.status, 200, 'the cookie with its CSRF token works');
  const badBearer = await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { cookie: session.cookie, authorization: 'Bearer wrong' } });
  t.equal(badBearer.status, 401, 'a present Authorization header wins over the cookie');
  const malformed = await api(svc.url, 'GET', '/v0/owner/sessions', { headers: { authorization: 'Basic abc' } });
  t.equal(malformed.status, 401);
});

t.test('responses carry nosniff and no-store', async (t) => {
  const res = await api(svc.url, 'GET', '/v0/owner/status');
  t.equal(res.headers.get('x-content-type-options'), 'nosniff');
  t.equal(res.headers.get('cache-control'), 'no-store');
});

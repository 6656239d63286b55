/** Serving the built web app (spec §4.14): app routes get the shell, API paths stay the API's. */
import t from 'tap';
import { api, startSvc } from '../helpers/svc.js';

const svc = await startSvc();
t.teardown(() => svc.stop());

t.test('app routes answer the shell with a strict CSP and no caching', async (t) => {
  for (const p of ['/', '/login', '/setup', '/consent?request=x', '/inboxes/a%40b.test/threads/123', '/inboxes/a%40b.test']) {
    const res = await fetch(svc.url + p);
    t.equal(res.status, 200, p);
    t.match(res.headers.get('content-type'), /^text\/html/, p);
    t.match(await res.text(), /<div id="app"><\/div>/, p);
    const csp = res.headers.get('content-security-policy') ?? '';
    t.match(csp, /script-src 'self'(;|$)/, `${p}: scripts only from svc`);
    t.match(csp, /frame-ancestors 'none'/, p);
    t.match(csp, /object-src 'none'/, p);
    t.equal(res.headers.get('cache-control'), 'no-store', p);
  }
});

t.test('hashed assets are cached for a year and gzipped on request', async (t) => {
  const html = await (await fetch(svc.url + '/')).text();
  const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  t.ok(script, 'the shell references a hashed bundle');
  const res = await fetch(svc.url + script!, { headers: { 'accept-encoding': 'gzip' } });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/javascript/);
  t.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  t.equal(res.headers.get('content-encoding'), 'gzip');
  t.equal(res.headers.get('x-content-type-options'), 'nosniff');
});

t.test('missing files are 404, never the shell', async (t) => {
  for (const p of ['/assets/index-missing.js', '/nope.png', '/favicon.ico']) {
    const res = await fetch(svc.url + p);
    t.equal(res.status, 404, p);
  }
});

t.test('API paths are never the web app', async (t) => {
  const v0 = await api(svc.url, 'GET', '/v0/nope');
  t.equal(v0.status, 404);
  t.match(v0.body, { code: 'not_found', message: /no route GET \/v0\/nope/ });
  for (const p of ['/mcp/x', '/oauth/nope', '/.well-known/nope', '/v0']) {
    const res = await fetch(svc.url + p);
    t.not(res.headers.get('content-type') ?? '', /text\/html/, `${p} is not the shell`);
    t.not(res.status, 200, p);
  }
});

t.test('path traversal cannot leave the built app', async (t) => {
  for (const p of ['/..%2f..%2fpackage.json', '/assets/..%2f..%2f..%2fpackage.json', '/%2e%2e/%2e%2e/package.json']) {
    const res = await fetch(svc.url + p);
    const text = await res.text();
    t.notMatch(text, /"name": "svc"/, p);
  }
});

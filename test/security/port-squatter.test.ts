/**
 * A squatter on svc's port (issue 32 finding 1; docs/security.md): svc's URL is stable, so while
 * svc is stopped any local process can bind its port. It then receives what an open tab still
 * sends there (the session cookie, the CSRF token in `X-Svc-CSRF` and in the WebSocket's
 * `csrf.<token>` subprotocol, the reconnect handshake's requests) and can serve a page that reads
 * the origin's storage. None of that may open a session once svc is back on the port. Actions that
 * mint credentials or run commands also need a recent proof of the owner (sudo mode).
 *
 * The squatter here is a plain HTTP server that records every request and upgrade it receives;
 * the "tab" is a client sending what the web app sends. test/browser/port-squatter.test.ts drives
 * the real web app through the same sequence.
 */
import http from 'node:http';
import { createHmac } from 'node:crypto';
import t from 'tap';
import WebSocket from 'ws';
import { api, OWNER_PASSWORD, sessionCookie, setupOwner, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { freePort } from '../helpers/ports.js';
import { CSRF_HEADER } from '../helpers/principals.js';
import path from 'node:path';
import net from 'node:net';
import { wireRequest } from '../helpers/wire.js';

interface Captured {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An HTTP server on `port` that records everything and answers like a page would. */
async function squat(port: number): Promise<{ captured: Captured[]; close: () => Promise<void> }> {
  const captured: Captured[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      captured.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      // Pretends to be svc: a proof that cannot be right, and a challenge of its own.
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ proof: 'A'.repeat(43), challenge: 'squatter-challenge', authenticated: true, csrf_token: 'x' }));
    });
  });
  server.on('upgrade', (req, socket) => {
    captured.push({ method: 'UPGRADE', url: req.url ?? '', headers: req.headers, body: '' });
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { captured, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const hmac = (key: string, text: string) => createHmac('sha256', key).update(text).digest('base64url');

/** What the web app sends on a lost connection (web/src/api.ts, live.ts), aimed at whatever holds the port. */
async function tabReconnects(base: string, port: number, cookie: string, csrf: string): Promise<void> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v0/ws`, ['svc.events', `csrf.${csrf}`], { headers: { Cookie: cookie, Origin: base } });
  await new Promise<void>((resolve) => {
    ws.on('error', () => resolve());
    ws.on('close', () => resolve());
    ws.on('open', () => resolve());
  });
  ws.terminate();
  await fetch(`${base}/v0/owner/status`, { headers: { Cookie: cookie, [CSRF_HEADER]: csrf } });
  await fetch(`${base}/v0/owner/session-proof`, { method: 'POST', headers: { Cookie: cookie, 'content-type': 'application/json', Origin: base }, body: JSON.stringify({ nonce: 'n'.repeat(32) }) });
}

function wsOpens(port: number, cookie: string, csrf: string): Promise<boolean> {
  const origin = `http://127.0.0.1:${port}`;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v0/ws`, ['svc.events', `csrf.${csrf}`], { headers: { Cookie: cookie, Origin: origin } });
  return new Promise((resolve) => {
    ws.on('open', () => {
      ws.terminate();
      resolve(true);
    });
    ws.on('error', () => resolve(false));
    ws.on('unexpected-response', () => resolve(false));
  });
}

const home = path.join(tempDir(), 'home');
let port: number;
let base: string;
let svc: RunningSvc;
let session: { cookie: string; csrf: string };
let keys: { server_key: string; renewal_key: string };
let oldOwnerToken: string;
let captured: Captured[] = [];

async function restart(): Promise<void> {
  svc = await startSvc({ home, args: ['--port', String(port)] });
}

t.before(async () => {
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  await restart();
  session = await setupOwner(svc);
  const k = await api<{ server_key: string; renewal_key: string }>(base, 'GET', '/v0/owner/session-keys', { headers: { Cookie: session.cookie, [CSRF_HEADER]: session.csrf } });
  if (k.status !== 200) throw new Error(`session-keys: ${k.status} ${k.text}`);
  keys = k.body;
  oldOwnerToken = svc.ownerToken;
  // svc stops; a local process takes the port; the open tab reconnects to it; svc comes back.
  await svc.stop();
  const squatter = await squat(port);
  await tabReconnects(base, port, session.cookie, session.csrf);
  captured = squatter.captured;
  await squatter.close();
  await restart();
});
t.teardown(() => svc?.stop());

t.test('the squatter did capture the cookie and the token (the attack is real)', async (t) => {
  t.ok(captured.some((c) => c.headers.cookie?.includes(session.cookie)), 'the session cookie reached it');
  t.ok(captured.some((c) => String(c.headers['sec-websocket-protocol'] ?? '').includes(session.csrf)), 'the token reached it in the WebSocket subprotocol');
  t.ok(captured.some((c) => c.headers[CSRF_HEADER.toLowerCase()] === session.csrf), 'and in X-Svc-CSRF');
  t.notOk(JSON.stringify(captured).includes(keys.renewal_key), 'the renewal key never left the tab');
  t.notOk(JSON.stringify(captured).includes(keys.server_key), 'nor the server key');
});

t.test('after the restart, what was captured opens no session', async (t) => {
  const status = await api<{ authenticated: boolean }>(base, 'GET', '/v0/owner/status', { headers: { Cookie: session.cookie, [CSRF_HEADER]: session.csrf } });
  t.equal(status.body.authenticated, false, 'status: not authenticated');
  t.notOk(status.headers.get('x-svc-csrf'), 'and no token handed out');
  const mint = await api(base, 'POST', '/v0/api-keys', { headers: { Cookie: session.cookie, [CSRF_HEADER]: session.csrf }, body: { name: 'stolen', permissions: 'all' } });
  t.equal(mint.status, 403, 'POST /v0/api-keys is refused');
  t.notOk(JSON.stringify(mint.body).includes('svc_key_'), 'and no key is returned');
  const remote = await api(base, 'POST', '/v0/owner/remote/enable', { headers: { Cookie: session.cookie, [CSRF_HEADER]: session.csrf }, body: { command: 'true' } });
  t.ok([401, 403].includes(remote.status), `remote/enable is refused (${remote.status})`);
  const read = await api(base, 'GET', '/v0/inboxes', { headers: { Cookie: session.cookie, [CSRF_HEADER]: session.csrf } });
  t.equal(read.status, 401, 'a read is unauthenticated');
  t.equal(await wsOpens(port, session.cookie, session.csrf), false, 'the WebSocket with the captured subprotocol does not open');
  for (const c of captured.filter((c) => c.method !== 'UPGRADE')) {
    const replay = await fetch(base + c.url, { method: c.method, headers: { cookie: c.headers.cookie ?? '', [CSRF_HEADER]: String(c.headers[CSRF_HEADER.toLowerCase()] ?? ''), 'content-type': 'application/json' }, body: c.method === 'GET' ? undefined : c.body });
    const text = await replay.text();
    t.notOk(/"authenticated":true|"csrf_token"|"renewal_key"/.test(text), `replaying ${c.method} ${c.url} yields nothing (${replay.status})`);
  }
  const keysReplay = await api(base, 'GET', '/v0/owner/session-keys', { headers: { Cookie: session.cookie, [CSRF_HEADER]: session.csrf } });
  t.equal(keysReplay.status, 401, 'the session keys are not handed to the old token');
});

t.test("the owner bearer a CLI sent to the squatter is dead after the restart", async (t) => {
  t.not(svc.ownerToken, oldOwnerToken, 'a new bearer per start');
  const old = await api(base, 'GET', '/v0/inboxes', { token: oldOwnerToken });
  t.equal(old.status, 401, 'the old bearer is refused');
});

t.test('the reconnect handshake: only the tab holding the renewal key gets a token for the new start', async (t) => {
  const nonce = 'a'.repeat(32);
  const asked = await api<{ proof: string; challenge: string }>(base, 'POST', '/v0/owner/session-proof', { headers: { Cookie: session.cookie }, body: { nonce } });
  t.equal(asked.status, 200, 'svc answers the cookie with a proof and a challenge');
  t.equal(asked.body.proof, hmac(keys.server_key, `svc server proof v1\n${nonce}\n${asked.body.challenge}`), 'the proof is HMAC(server key) over the nonce and challenge: only svc can make it');
  t.not(asked.body.proof, 'A'.repeat(43), "the squatter's made-up proof differs");

  const renew = (challenge: string, answer: string, cookie = session.cookie) => api<{ csrf_token?: string }>(base, 'POST', '/v0/owner/session-renew', { headers: { Cookie: cookie }, body: { challenge, answer } });
  t.equal((await renew(asked.body.challenge, 'x'.repeat(43))).status, 401, 'a wrong answer is refused');
  t.equal((await renew(asked.body.challenge, hmac(keys.renewal_key, `svc session renewal v1\n${asked.body.challenge}`))).status, 401, 'and burns the challenge: single use');
  t.equal((await renew('squatter-challenge', hmac(keys.renewal_key, 'svc session renewal v1\nsquatter-challenge'))).status, 401, "an answer to the squatter's own challenge is worth nothing");
  const other = await api(base, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD } });
  const otherCookie = sessionCookie(other);
  const fresh = await api<{ challenge: string }>(base, 'POST', '/v0/owner/session-proof', { headers: { Cookie: otherCookie }, body: { nonce } });
  t.equal((await renew(fresh.body.challenge, hmac(keys.renewal_key, `svc session renewal v1\n${fresh.body.challenge}`))).status, 401, "another session's challenge cannot be answered for this one");
  t.equal((await api(base, 'POST', '/v0/owner/session-proof', { body: { nonce } })).status, 401, 'no cookie, no proof');
  t.equal((await api(base, 'POST', '/v0/owner/session-proof', { headers: { Cookie: session.cookie }, body: { nonce: 'short' } })).status, 400, 'a malformed nonce is a validation error');

  const good = await api<{ challenge: string }>(base, 'POST', '/v0/owner/session-proof', { headers: { Cookie: session.cookie }, body: { nonce } });
  const renewed = await renew(good.body.challenge, hmac(keys.renewal_key, `svc session renewal v1\n${good.body.challenge}`));
  t.equal(renewed.status, 200, 'the right answer renews');
  const token = renewed.body.csrf_token!;
  t.not(token, session.csrf, 'with a token of the new start');
  const status = await api<{ authenticated: boolean }>(base, 'GET', '/v0/owner/status', { headers: { Cookie: session.cookie, [CSRF_HEADER]: token } });
  t.equal(status.body.authenticated, true, 'which is a session again');
  t.equal(await wsOpens(port, session.cookie, token), true, 'and opens the WebSocket');
  session = { cookie: session.cookie, csrf: token };
});

t.test('sudo mode: a renewed session must prove the owner before it mints credentials or runs commands', async (t) => {
  const h = { Cookie: session.cookie, [CSRF_HEADER]: session.csrf };
  const sudoRoutes: [string, string, unknown][] = [
    ['POST', '/v0/api-keys', { name: 'k', permissions: 'all' }],
    ['PATCH', '/v0/api-keys/01900000-0000-7000-8000-000000000000', { name: 'k' }],
    ['POST', '/v0/owner/remote/enable', { command: 'true' }],
    ['PUT', '/v0/owner/transport', { edge: { url: 'http://127.0.0.1:9', token: 'x' } }],
    ['DELETE', '/v0/owner/transport', undefined],
    ['PUT', '/v0/owner/dns-provider', { kind: 'powerdns', url: 'http://127.0.0.1:9', api_key: 'x' }],
    ['DELETE', '/v0/owner/dns-provider', undefined],
    ['PATCH', '/v0/owner/guard', {}],
    ['POST', '/v0/webhooks', { url: 'https://hooks.example.com/x', event_types: ['message.received'] }],
    ['POST', '/v0/owner/oauth/requests/01900000-0000-7000-8000-000000000000/approve', {}],
  ];
  for (const [method, url, body] of sudoRoutes) {
    const res = await api<{ code?: string }>(base, method, url, { headers: h, body });
    t.equal(res.status, 403, `${method} ${url}: 403`);
    t.equal(res.headers.get('x-svc-sudo'), 'required', `${method} ${url}: x-svc-sudo: required`);
  }
  const reads = await api(base, 'GET', '/v0/api-keys', { headers: h });
  t.equal(reads.status, 200, 'reading is not sudo');
  const bearer = await api<{ key?: string }>(base, 'POST', '/v0/api-keys', { token: svc.ownerToken, body: { name: 'cli', permissions: { inbox_read: true } } });
  t.equal(bearer.status, 200, 'the owner bearer (the local CLI) is not asked');

  for (let i = 0; i < 5; i++) t.equal((await api(base, 'POST', '/v0/owner/sudo', { headers: h, body: { password: 'not the password at all' } })).status, 403, `wrong password ${i + 1}: 403`);
  const paused = await api(base, 'POST', '/v0/owner/sudo', { headers: h, body: { password: OWNER_PASSWORD } });
  t.equal(paused.status, 429, "five wrong tries pause this session's confirmation");
  const elsewhere = await api(base, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD } });
  t.equal(elsewhere.status, 200, 'without locking anyone else out');
  const other = { Cookie: sessionCookie(elsewhere), [CSRF_HEADER]: (elsewhere.body as { csrf_token: string }).csrf_token };
  const minted = await api<{ api_key?: string }>(base, 'POST', '/v0/api-keys', { headers: other, body: { name: 'fresh', permissions: { inbox_read: true } } });
  t.equal(minted.status, 200, 'a session that just signed in is proved');
  t.match(minted.body.api_key, /^svc_key_/, 'and gets its key');
  const noSession = await api(base, 'POST', '/v0/owner/sudo', { token: svc.ownerToken, body: { password: OWNER_PASSWORD } });
  t.equal(noSession.status, 400, 'the bearer has no session to confirm');
  const anon = await api(base, 'POST', '/v0/owner/sudo', { body: { password: OWNER_PASSWORD } });
  t.equal(anon.status, 401, 'nobody: 401');
});

t.test('login: a local guesser cannot lock out a browser that signed in before', async (t) => {
  const first = await fetch(`${base}/v0/owner/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: OWNER_PASSWORD }) });
  const device = first.headers.getSetCookie().find((c) => c.startsWith('svc_device='))?.split(';')[0];
  t.ok(device, 'a successful login sets the device cookie');
  t.match(first.headers.getSetCookie().find((c) => c.startsWith('svc_device=')) ?? '', /HttpOnly/i, 'HttpOnly');
  let guesses = 0;
  for (let i = 0; i < 8; i++) {
    const res = await api(base, 'POST', '/v0/owner/login', { body: { password: `guess number ${i} here` } });
    if (res.status === 429) guesses++;
  }
  t.ok(guesses >= 3, 'the anonymous guesser is paused');
  const noDevice = await api(base, 'POST', '/v0/owner/login', { body: { password: OWNER_PASSWORD } });
  t.equal(noDevice.status, 429, 'the right password without a device cookie waits too');
  const forged = await api(base, 'POST', '/v0/owner/login', { headers: { Cookie: 'svc_device=AAAAAAAAAAAAAAAAAAAAAA.forged' }, body: { password: OWNER_PASSWORD } });
  t.equal(forged.status, 429, 'a forged device cookie counts as anonymous');
  const owner = await api(base, 'POST', '/v0/owner/login', { headers: { Cookie: device! }, body: { password: OWNER_PASSWORD } });
  t.equal(owner.status, 200, 'the browser with its device cookie signs in');
  for (let i = 0; i < 5; i++) await api(base, 'POST', '/v0/owner/login', { headers: { Cookie: device! }, body: { password: `device guess ${i} here` } });
  t.equal((await api(base, 'POST', '/v0/owner/login', { headers: { Cookie: device! }, body: { password: OWNER_PASSWORD } })).status, 429, 'a device has a budget of its own too');
});

t.test('[::1] and localhost: the same port on another address can be held while svc runs, so sessions live at 127.0.0.1 only', async (t) => {
  // svc listens on 127.0.0.1 only; nothing stops another process from binding [::1] on its port.
  const other = net.createServer();
  const bound = await new Promise<boolean>((resolve) => {
    other.once('error', () => resolve(false));
    other.listen(port, '::1', () => resolve(true));
  });
  if (bound) await new Promise((resolve) => other.close(resolve));
  t.comment(`binding [::1]:${port} beside svc ${bound ? 'worked' : 'failed (no IPv6 loopback here)'}`);
  for (const host of [`localhost:${port}`, `[::1]:${port}`]) {
    const shell = await wireRequest({ port, method: 'GET', target: '/inboxes?x=1', host });
    t.equal(shell.status, 308, `the app at ${host} redirects`);
    t.equal(shell.headers.location, `${base}/inboxes?x=1`, 'to the same page at http://127.0.0.1');
    const login = await wireRequest({ port, method: 'POST', target: '/v0/owner/login', host, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ password: OWNER_PASSWORD }) });
    t.equal(login.status, 403, `no session is made at ${host}`);
    t.notOk(login.headers['set-cookie'], 'and no cookie is set');
    t.match((login.body as { fix?: string }).fix, /127\.0\.0\.1/, 'the fix names the address to use');
    const renew = await wireRequest({ port, method: 'POST', target: '/v0/owner/session-renew', host, headers: { 'Content-Type': 'application/json', Cookie: session.cookie }, body: JSON.stringify({ challenge: 'c', answer: 'a' }) });
    t.equal(renew.status, 403, `nor renewed at ${host}`);
  }
  const canonical = await wireRequest({ port, method: 'GET', target: '/inboxes' });
  t.equal(canonical.status, 200, 'the app itself is served at 127.0.0.1');
});

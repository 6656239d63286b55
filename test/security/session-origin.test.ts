/**
 * Review of issue 16 (finding 6 follow-up): the owner session must be bound to the origin it was
 * issued for. svc's default port is 0 (a new free port each start) and sessions outlive restarts,
 * so after a restart the old origin `http://127.0.0.1:<old port>` is free for any local process
 * to bind. A web-app tab still open on the old origin keeps reconnecting its WebSocket there
 * (web/src/live.ts) with the session cookie (cookies ignore ports) and `csrf.<token>` as a
 * subprotocol, and localStorage of that origin still holds `svc.csrf`: whoever binds the old port
 * receives both halves of the session and replays them against the new port.
 *
 * The rule tested: a cookie + CSRF token issued on one listener origin does not authenticate on
 * a listener with another origin.
 */
import t from 'tap';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { CSRF_HEADER } from '../helpers/principals.js';

let first: RunningSvc | null = null;
let second: RunningSvc | null = null;
t.teardown(async () => {
  await first?.stop();
  await second?.stop();
});

t.test('a session issued on one port is refused on the next start, on another port', async (t) => {
  first = await startSvc();
  const session = await setupOwner(first);
  const headers = { cookie: session.cookie, [CSRF_HEADER]: session.csrf };
  const before = await api(first.url, 'GET', '/v0/api-keys', { headers });
  t.equal(before.status, 200, 'the session works where it was issued');
  const { home, url } = first;
  await first.stop();
  first = null;

  second = await startSvc({ home, init: false });
  t.not(second.url, url, `the second start listens elsewhere (${url} then ${second.url})`);
  const replay = await api(second.url, 'GET', '/v0/api-keys', { headers });
  t.equal(replay.status, 401, 'the old origin\'s cookie + CSRF token (what a process on the freed port receives) is no session here');
  const mint = await api(second.url, 'POST', '/v0/api-keys', { headers, body: { name: 'minted-with-a-stale-session' } });
  t.equal(mint.status >= 400 && mint.status < 500, true, `minting a key with it is refused (got ${mint.status})`);
  t.end();
});

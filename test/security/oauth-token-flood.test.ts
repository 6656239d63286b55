/**
 * Issue 32 item 5: `/oauth/token` and `/oauth/revoke` answer any origin, over loopback and over the
 * tunnel, with 120 requests a minute each. With one window per listener, 125 junk requests made a
 * real client's refresh fail with 429. Now every client that presents one of its own codes or
 * tokens has its own window and everything unproven shares one more, so against a real service:
 * junk of every shape (unknown client, bad grant type, a real client's public `client_id` with a
 * made-up token, its access token sent as a refresh token, repeated or non-string parameters)
 * fills only the shared window; a real refresh, code exchange and revocation still work; a client
 * that floods with its own code is refused alone; and the tunnel's flood leaves loopback alone.
 *
 * Every "still works" is sandwiched: a junk request right after it is still refused, so the real
 * request did not just land in a new minute.
 */
import t from 'tap';
import { api, setupOwner, startSvc, type ApiResponse, type RunningSvc } from '../helpers/svc.js';
import { answers, freePort } from '../helpers/ports.js';
import { tunnelProxyCommand } from '../helpers/tunnel.js';
import { approve, authorizePath, ensureWebApp, exchange, form, pkce, REDIRECT, refresh, register, visit, type Session, type Tokens } from '../helpers/oauth.js';
import { TOKEN_REQUESTS_PER_MINUTE } from '../../src/oauth/limits.js';

const HOST = 'mail.flood.test';
const INBOX = 'agent@flood.test';
/** Requests sent at once while flooding; a flood sends at least MIN_FLOOD (the finding's 125), then stops at its first 429 or after MAX_FLOOD. */
const BATCH = 20;
const MIN_FLOOD = 125;
const MAX_FLOOD = 3 * TOKEN_REQUESTS_PER_MINUTE;

let svc: RunningSvc;
let session: Session;
let tunnel: string;

interface Client {
  clientId: string;
  tokens: Tokens;
}

type Junk = () => Promise<ApiResponse>;

/** The browser part through `base` (the tunnel sends consent to loopback); the code and its verifier. */
async function codeThrough(base: string, resource: string, clientId: string): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const path = authorizePath({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource });
  if (base !== svc.url) {
    const redirected = await visit(base, path);
    if (redirected.status !== 302) throw new Error(`tunnel authorize: ${redirected.status}`);
  }
  const res = await visit(svc.url, path, session.cookie);
  const requestId = decodeURIComponent(/request=(.+)$/.exec(res.location ?? '')![1]);
  const approved = await approve(svc.url, session, requestId, { inbox_ids: [INBOX], permissions: ['inbox_read'] });
  return { code: new URL(approved.body.redirect_to).searchParams.get('code')!, verifier };
}

async function clientThrough(base: string, resource: string): Promise<Client> {
  const clientId = (await register(base)).body.client_id;
  const { code, verifier } = await codeThrough(base, resource, clientId);
  const exchanged = await exchange(base, { code, verifier, clientId, resource });
  if (exchanged.status !== 200) throw new Error(`token: ${exchanged.status} ${exchanged.text}`);
  return { clientId, tokens: exchanged.body };
}

/** Sends junk (cycling through the shapes) until the first 429, at least MIN_FLOOD; the statuses seen. */
async function flood(shapes: Junk[]): Promise<number[]> {
  const statuses: number[] = [];
  for (let sent = 0; sent < MAX_FLOOD && (sent < MIN_FLOOD || !statuses.includes(429)); sent += BATCH) {
    const replies = await Promise.all(Array.from({ length: BATCH }, (_, i) => shapes[(sent + i) % shapes.length]()));
    statuses.push(...replies.map((r) => r.status));
  }
  return statuses;
}

/** Junk token requests of every shape an attacker would try, some naming `victim`'s public client_id. */
function tokenJunk(base: string, victim: Client): Junk[] {
  return [
    () => form(base, '/oauth/token', { grant_type: 'authorization_code', code: 'svc_code_made_up', code_verifier: pkce().verifier, client_id: 'no-such-client', redirect_uri: REDIRECT, resource: `${base}/mcp` }),
    () => form(base, '/oauth/token', { grant_type: 'password', username: 'owner', password: 'guess' }),
    () => form(base, '/oauth/token', {}),
    () => form(base, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'svc_refresh_made_up', client_id: victim.clientId }),
    () => form(base, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'svc_refresh_made_up' }),
    () => form(base, '/oauth/token', { grant_type: 'authorization_code', code: 'svc_code_made_up', code_verifier: pkce().verifier, client_id: victim.clientId, redirect_uri: REDIRECT, resource: `${base}/v0` }),
    // The victim's access token is a real token of that client, but not a refresh token.
    () => form(base, '/oauth/token', { grant_type: 'refresh_token', refresh_token: victim.tokens.access_token, client_id: victim.clientId }),
    () => api(base, 'POST', '/oauth/token', { rawBody: `grant_type=refresh_token&refresh_token=${victim.tokens.refresh_token}&refresh_token=x`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
    () => api(base, 'POST', '/oauth/token', { body: { grant_type: 'refresh_token', refresh_token: 42, client_id: victim.clientId } }),
    () => api(base, 'POST', '/oauth/token', { body: ['grant_type', 'refresh_token'] }),
  ];
}

const junkToken = (base: string) => form(base, '/oauth/token', { grant_type: 'refresh_token', refresh_token: 'svc_refresh_made_up' });

t.before(async () => {
  ensureWebApp();
  svc = await startSvc();
  session = await setupOwner(svc);
  await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'agent', domain: 'flood.test' } });
  const port = await freePort();
  const enabled = await api<{ listener: { port: number | null } }>(svc.url, 'POST', '/v0/owner/remote/enable', { token: svc.ownerToken, body: { hostname: HOST, command: tunnelProxyCommand(port) } });
  if (enabled.status !== 200) throw new Error(`enable: ${enabled.status} ${enabled.text}`);
  for (let i = 0; i < 100 && !(await answers(port)); i++) await new Promise((r) => setTimeout(r, 100));
  tunnel = `http://127.0.0.1:${port}`;
});
t.teardown(() => svc.stop());

// First, while loopback's windows are untouched: the tunnel's flood must not reach them.
t.test('a junk flood through the tunnel refuses neither a tunnel client nor anyone on loopback', async (t) => {
  const origin = `https://${HOST}`;
  const remote = await clientThrough(tunnel, `${origin}/mcp`);
  const local = await clientThrough(svc.url, `${svc.url}/mcp`);

  const statuses = await flood(tokenJunk(tunnel, remote));
  t.ok(statuses.length >= MIN_FLOOD, `${statuses.length} junk requests were sent`);
  t.equal(statuses.at(-1), 429, 'the tunnel junk window is used up');
  t.notOk(statuses.includes(500), 'no junk shape crashed the endpoint');

  const renewed = await refresh(tunnel, remote.tokens.refresh_token, remote.clientId);
  t.equal(renewed.status, 200, 'the tunnel client still refreshes');

  const localJunk = await junkToken(svc.url);
  t.equal(localJunk.status, 400, 'loopback junk is answered on its merits, not 429');
  t.equal(localJunk.body.error, 'invalid_grant');
  const localRenewed = await refresh(svc.url, local.tokens.refresh_token, local.clientId);
  t.equal(localRenewed.status, 200, 'a loopback client refreshes');
  t.equal((await junkToken(tunnel)).status, 429, 'and the tunnel junk window was still used up all along');
});

t.test('a junk flood on loopback does not refuse real token and revoke requests', async (t) => {
  const victim = await clientThrough(svc.url, `${svc.url}/v0`);
  const other = await clientThrough(svc.url, `${svc.url}/v0`);
  const pendingId = (await register(svc.url)).body.client_id;
  const pending = await codeThrough(svc.url, `${svc.url}/v0`, pendingId);

  const statuses = await flood(tokenJunk(svc.url, victim));
  t.ok(statuses.length >= MIN_FLOOD, `${statuses.length} junk requests were sent`);
  t.equal(statuses.at(-1), 429, 'the junk window is used up');
  t.notOk(statuses.includes(500), 'no junk shape crashed the endpoint');
  t.notOk(statuses.includes(200), 'no junk shape was served tokens');

  const renewed = await refresh(svc.url, victim.tokens.refresh_token, victim.clientId);
  t.equal(renewed.status, 200, 'the client whose client_id the junk named still refreshes');
  victim.tokens = renewed.body;
  t.equal((await api(svc.url, 'GET', '/v0/inboxes', { token: victim.tokens.access_token })).status, 200, 'with a working access token');
  const withoutClientId = await form(svc.url, '/oauth/token', { grant_type: 'refresh_token', refresh_token: victim.tokens.refresh_token });
  t.equal(withoutClientId.status, 200, 'a refresh without client_id is counted by its token too');
  victim.tokens = withoutClientId.body as Tokens;
  const exchanged = await exchange(svc.url, { code: pending.code, verifier: pending.verifier, clientId: pendingId, resource: `${svc.url}/v0` });
  t.equal(exchanged.status, 200, 'a code is still exchanged');
  t.equal((await junkToken(svc.url)).status, 429, 'while junk is still refused');

  t.test('revocation: junk fills its own window, a real revocation still takes effect', async (t) => {
    const revokeJunk: Junk[] = [
      () => form(svc.url, '/oauth/revoke', { token: 'svc_oauth_made_up' }),
      () => form(svc.url, '/oauth/revoke', { token: 'svc_refresh_made_up', client_id: other.clientId }),
      () => form(svc.url, '/oauth/revoke', {}),
      () => api(svc.url, 'POST', '/oauth/revoke', { body: { token: ['a', 'b'] } }),
    ];
    const revokes = await flood(revokeJunk);
    t.equal(revokes.at(-1), 429, 'the revoke junk window is used up');
    t.equal((await refresh(svc.url, other.tokens.refresh_token, other.clientId)).status, 200, 'token requests have their own windows');
    const revoked = await form(svc.url, '/oauth/revoke', { token: victim.tokens.access_token, client_id: victim.clientId });
    t.equal(revoked.status, 200, 'a real revocation is served');
    t.equal((await api(svc.url, 'GET', '/v0/inboxes', { token: victim.tokens.access_token })).status, 401, 'and the token is revoked');
    t.equal((await form(svc.url, '/oauth/revoke', { token: 'svc_oauth_made_up' })).status, 429, 'while revoke junk is still refused');
  });
});

t.test('a client that floods with its own code is refused alone', async (t) => {
  const bystander = await clientThrough(svc.url, `${svc.url}/mcp`);
  const flooderId = (await register(svc.url)).body.client_id;
  const { code, verifier } = await codeThrough(svc.url, `${svc.url}/mcp`, flooderId);
  // A wrong verifier does not use the code up, so its owner (or whoever holds it) can repeat it.
  const wrongVerifier = () => exchange(svc.url, { code, verifier: pkce().verifier, clientId: flooderId, resource: `${svc.url}/mcp` });
  const statuses = await flood([wrongVerifier]);
  t.equal(statuses.at(-1), 429, 'the flooding client is refused');
  t.ok(statuses.filter((s) => s === 400).length >= TOKEN_REQUESTS_PER_MINUTE, 'after its own allowance of failures');
  t.equal((await exchange(svc.url, { code, verifier, clientId: flooderId, resource: `${svc.url}/mcp` })).status, 429, 'its real exchange waits for the next minute too');
  t.equal((await refresh(svc.url, bystander.tokens.refresh_token, bystander.clientId)).status, 200, 'another client is not affected');
  t.equal((await wrongVerifier()).status, 429, 'while the flooder is still refused');
});

/**
 * The OAuth authorization server against a real service (spec §5.3, §4.13, §6.2, §7): discovery,
 * registration, authorization and consent, tokens, rotation and reuse detection, revocation, the
 * owner's routes, and the binding of tokens to their audience. Rate limits, the web-app switch and
 * the registration cap are in oauth-limits.test.ts; the tunnel in oauth-tunnel.test.ts.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey } from '../helpers/seed.js';
import { subscribe, type EventStream } from '../helpers/events.js';
import {
  approve,
  authorizeCode,
  authorizePath,
  ensureWebApp,
  exchange,
  form,
  pkce,
  REDIRECT,
  refresh,
  register,
  startConsent,
  visit,
  type Session,
  type Tokens,
} from '../helpers/oauth.js';
import type { Db } from '../../src/db/open.js';

const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const INBOX = 'agent@oauth.test';
const OTHER = 'other@oauth.test';

let svc: RunningSvc;
let session: Session;
let db: Db;
let events: EventStream;
let clientId: string;
let MCP: string;
let V0: string;

t.before(async () => {
  ensureWebApp();
  svc = await startSvc();
  session = await setupOwner(svc);
  db = openHomeDb(svc.home);
  for (const address of [INBOX, OTHER]) {
    const [username, domain] = address.split('@');
    const res = await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain } });
    if (res.status !== 200) throw new Error(`inbox: ${res.status} ${res.text}`);
  }
  events = await subscribe(svc.url, svc.ownerToken);
  clientId = (await register(svc.url)).body.client_id;
  MCP = `${svc.url}/mcp`;
  V0 = `${svc.url}/v0`;
});
t.teardown(async () => {
  events?.close();
  db?.close();
  await svc?.stop();
});

/** A fresh grant for the shared client and its first tokens. */
async function tokensFor(resource: string, approval: { inbox_ids?: string[]; permissions?: string[]; send_policy?: string } = {}): Promise<Tokens> {
  const { code, verifier } = await authorizeCode(svc.url, session, { clientId, resource, inbox_ids: [INBOX], ...approval });
  const res = await exchange(svc.url, { code, verifier, clientId, resource });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${res.text}`);
  return res.body;
}

const inboxesWith = (token: string) => api<{ inboxes: { inbox_id: string }[] }>(svc.url, 'GET', '/v0/inboxes', { token });
const grantOf = (accessToken: string) =>
  (db.prepare("SELECT grant_id FROM oauth_tokens WHERE token_hash = ?").get(createHash('sha256').update(accessToken).digest('hex')) as { grant_id: string } | undefined)?.grant_id;

t.test('resource metadata names this origin for /mcp and /v0', async (t) => {
  for (const audience of ['mcp', 'v0']) {
    const res = await api(svc.url, 'GET', `/.well-known/oauth-protected-resource/${audience}`);
    t.equal(res.status, 200);
    t.same(res.body, { resource: `${svc.url}/${audience}`, authorization_servers: [svc.url], scopes_supported: ['svc'], bearer_methods_supported: ['header'] });
  }
  const root = await api(svc.url, 'GET', '/.well-known/oauth-protected-resource');
  t.equal((root.body as { resource: string }).resource, MCP, 'clients that only probe the root are answered for /mcp');
});

t.test('authorization server metadata follows RFC 8414', async (t) => {
  const res = await api(svc.url, 'GET', '/.well-known/oauth-authorization-server');
  t.equal(res.status, 200);
  t.match(res.body, {
    issuer: svc.url,
    authorization_endpoint: `${svc.url}/oauth/authorize`,
    token_endpoint: `${svc.url}/oauth/token`,
    registration_endpoint: `${svc.url}/oauth/register`,
    revocation_endpoint: `${svc.url}/oauth/revoke`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    scopes_supported: ['svc'],
  });
});

t.test('CORS: discovery, registration, token and revocation allow any origin without credentials', async (t) => {
  const headers = { origin: 'https://client.example' };
  for (const res of [
    await api(svc.url, 'GET', '/.well-known/oauth-protected-resource/mcp', { headers }),
    await api(svc.url, 'GET', '/.well-known/oauth-authorization-server', { headers }),
    await api(svc.url, 'POST', '/oauth/register', { headers, body: { redirect_uris: ['https://x'] , token_endpoint_auth_method: 'client_secret_post' } }),
    await form(svc.url, '/oauth/token', { grant_type: 'password' }, headers),
    await form(svc.url, '/oauth/revoke', { token: 'nothing' }, headers),
  ]) {
    t.equal(res.headers.get('access-control-allow-origin'), '*', 'any origin, errors included');
    t.notOk(res.headers.get('access-control-allow-credentials'), 'never with credentials');
  }
  for (const path of ['/oauth/token', '/oauth/register', '/oauth/revoke', '/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/mcp']) {
    const res = await fetch(svc.url + path, {
      method: 'OPTIONS',
      headers: { origin: 'https://client.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, mcp-protocol-version' },
    });
    t.equal(res.status, 204, `preflight ${path}`);
    t.equal(res.headers.get('access-control-allow-origin'), '*');
    t.match(res.headers.get('access-control-allow-headers'), /authorization.*content-type.*mcp-protocol-version/);
    t.match(res.headers.get('access-control-allow-methods'), /POST/);
  }
  const foreign = await api(svc.url, 'GET', '/.well-known/oauth-authorization-server', { headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } });
  t.equal(foreign.status, 200, 'the /v0 origin rule does not apply outside /v0');
});

t.test('registration: public clients only, 201 with the client record', async (t) => {
  const res = await register(svc.url, { client_name: 'Claude', token_endpoint_auth_method: 'none', logo_uri: 'https://example.com/logo.png', software_id: 'x' });
  t.equal(res.status, 201);
  t.match(res.body.client_id, UUIDV7);
  t.same({ ...res.body, client_id: 'id', client_id_issued_at: 0 }, {
    client_id: 'id',
    client_name: 'Claude',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    client_id_issued_at: 0,
  }, 'unknown metadata (logo_uri, software_id) is ignored, as RFC 7591 requires');
  t.ok(Math.abs((res.body.client_id_issued_at as number) - Date.now() / 1000) < 60, 'issued_at is in seconds');
  for (const method of ['client_secret_basic', 'client_secret_post', 'private_key_jwt']) {
    const confidential = await register(svc.url, { token_endpoint_auth_method: method });
    t.equal(confidential.status, 400, method);
    t.equal(confidential.body.error, 'invalid_client_metadata');
    t.type(confidential.body.error_description, 'string');
  }
  const implicit = await register(svc.url, { response_types: ['token'] });
  t.equal(implicit.body.error, 'invalid_client_metadata', 'only the code response type');
  const password = await register(svc.url, { grant_types: ['password'] });
  t.equal(password.body.error, 'invalid_client_metadata', 'only authorization_code and refresh_token');
  const notJson = await api(svc.url, 'POST', '/oauth/register', { rawBody: '{', headers: { 'content-type': 'application/json' } });
  t.equal(notJson.status, 400);
  t.equal((notJson.body as { error: string }).error, 'invalid_client_metadata');
});

t.test('registration: redirect URIs are https, http on loopback, or a reverse-DNS private scheme; 1 to 10', async (t) => {
  const good = ['https://client.example/cb', 'http://127.0.0.1:8080/cb', 'http://[::1]/cb', 'http://localhost:3000/callback', 'com.example.app:/oauth2redirect'];
  const ok = await register(svc.url, { redirect_uris: good });
  t.equal(ok.status, 201);
  t.same(ok.body.redirect_uris, good);
  for (const bad of ['http://client.example/cb', 'http://192.168.1.2/cb', 'javascript:alert(1)', 'data:text/html,x', 'myapp:/cb', 'https://client.example/cb#frag', 'https://user:pw@client.example/cb', '/relative', 'file:///etc/passwd']) {
    const res = await register(svc.url, { redirect_uris: [bad] });
    t.equal(res.status, 400, bad);
    t.equal(res.body.error, 'invalid_redirect_uri', bad);
    t.type(res.body.error_description, 'string');
  }
  for (const count of [0, 11]) {
    const res = await register(svc.url, { redirect_uris: Array.from({ length: count }, (_, i) => `https://client.example/cb${i}`) });
    t.equal(res.body.error, 'invalid_redirect_uri', `${count} URIs`);
  }
  const missing = await api(svc.url, 'POST', '/oauth/register', { body: { client_name: 'x' } });
  t.equal((missing.body as { error: string }).error, 'invalid_redirect_uri');
  const ten = await register(svc.url, { redirect_uris: Array.from({ length: 10 }, (_, i) => `https://client.example/cb${i}`) });
  t.equal(ten.status, 201, 'ten is allowed');
});

t.test('authorize: a bad client_id or redirect_uri is an error response, never a redirect', async (t) => {
  const { challenge } = pkce();
  const base = { response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256', resource: MCP, state: 's' };
  const unknown = await visit(svc.url, authorizePath({ ...base, client_id: '0190a0a0-0000-7000-8000-000000000000', redirect_uri: REDIRECT }), session.cookie);
  t.equal(unknown.status, 400);
  t.equal(unknown.location, null);
  t.equal(unknown.body?.error, 'invalid_client');
  const missing = await visit(svc.url, authorizePath({ ...base, redirect_uri: REDIRECT }), session.cookie);
  t.equal(missing.status, 400);
  t.equal(missing.body?.error, 'invalid_request');
  for (const redirect of ['https://attacker.example/cb', 'http://127.0.0.1:53682/other', 'http://localhost:53682/callback']) {
    const res = await visit(svc.url, authorizePath({ ...base, client_id: clientId, redirect_uri: redirect }), session.cookie);
    t.equal(res.status, 400, redirect);
    t.equal(res.location, null);
    t.equal(res.body?.error, 'invalid_request');
  }
  const noRedirect = await visit(svc.url, authorizePath({ ...base, client_id: clientId }), session.cookie);
  t.equal(noRedirect.status, 400);
  t.equal(noRedirect.location, null);
});

t.test('authorize: a loopback redirect URI may use another port', async (t) => {
  const { challenge } = pkce();
  const requestId = await startConsent(svc.url, session, { clientId, resource: MCP, challenge, redirectUri: 'http://127.0.0.1:41234/callback' });
  const view = await api<{ redirect_uri: string }>(svc.url, 'GET', `/v0/owner/oauth/requests/${requestId}`, { token: svc.ownerToken });
  t.equal(view.body.redirect_uri, 'http://127.0.0.1:41234/callback');
});

t.test('authorize: other parameter errors are answered to the browser too, never redirected (RFC 9700 §4.11.2)', async (t) => {
  const { challenge } = pkce();
  const good = { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP, state: 'xyz' };
  const cases: [string, Record<string, string | undefined>, string][] = [
    ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
    ['no response_type', { response_type: undefined }, 'invalid_request'],
    ['no code_challenge', { code_challenge: undefined }, 'invalid_request'],
    ['plain PKCE', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['no code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
    ['short code_challenge', { code_challenge: 'abc' }, 'invalid_request'],
    ['no resource', { resource: undefined }, 'invalid_request'],
    ['another origin', { resource: 'https://elsewhere.example/mcp' }, 'invalid_target'],
    ['another path', { resource: `${svc.url}/v1` }, 'invalid_target'],
    ['trailing slash', { resource: `${MCP}/` }, 'invalid_target'],
    ['unknown scope', { scope: 'svc email' }, 'invalid_scope'],
  ];
  for (const [name, change, error] of cases) {
    const res = await visit(svc.url, authorizePath({ ...good, ...change }), session.cookie);
    t.equal(res.status, 400, name);
    t.equal(res.location, null, `${name}: no redirect`);
    t.equal(res.body?.error, error, name);
    t.ok(res.body?.error_description, name);
  }
  const repeated = await visit(svc.url, `${authorizePath(good)}&resource=${encodeURIComponent(V0)}`, session.cookie);
  t.equal(repeated.status, 400);
  t.equal(repeated.body?.error, 'invalid_request', 'a repeated parameter is refused');
  const longState = await visit(svc.url, authorizePath({ ...good, state: 'x'.repeat(1025) }), session.cookie);
  t.match(longState, { status: 400, location: null, body: { error: 'invalid_request' } }, 'a state over 1,024 characters');
});

t.test('authorize: a signed-out owner is sent to /login and back', async (t) => {
  const { challenge } = pkce();
  const path = authorizePath({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP, state: 'a b&c' });
  for (const cookie of [undefined, 'svc_session=svc_session_not-a-session']) {
    const res = await visit(svc.url, path, cookie);
    t.equal(res.status, 302);
    t.equal(res.location, `/login?return_to=${encodeURIComponent(path)}`);
    t.equal(new URL(res.location!, svc.url).searchParams.get('return_to'), path, 'return_to is the full authorize path and query');
  }
});

t.test('consent: the owner reads the request with its defaults', async (t) => {
  const { challenge } = pkce();
  const requestId = await startConsent(svc.url, session, { clientId, resource: V0, challenge, state: 'st' });
  t.match(requestId, UUIDV7);
  const res = await api<Record<string, unknown>>(svc.url, 'GET', `/v0/owner/oauth/requests/${requestId}`, { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal(res.status, 200);
  const defaults = res.body.defaults as { permissions: Record<string, boolean>; send_policy: string; inbox_ids: string[] };
  t.match(res.body, { request_id: requestId, client_id: clientId, client_name: 'Test Client', redirect_uri: REDIRECT, redirect_host: '127.0.0.1:53682', verified: false, resource: V0 });
  t.ok(Date.parse(res.body.expires_at as string) - Date.now() > 9 * 60_000, 'expires in 10 minutes');
  t.equal(defaults.send_policy, 'approval');
  t.same(defaults.inbox_ids, []);
  t.ok(Object.values(defaults.permissions).every((granted) => granted === true), 'every permission');
  for (const name of ['inbox_read', 'message_send', 'webhook_delete', 'label_spam_read', 'label_blocked_read', 'label_unauthenticated_read']) t.equal(defaults.permissions[name], true, name);
  const agent = await createApiKey(svc, { permissions: ['inbox_read'] });
  t.equal((await api(svc.url, 'GET', `/v0/owner/oauth/requests/${requestId}`, { token: agent.secret })).status, 403, 'agents cannot read it');
  t.equal((await api(svc.url, 'GET', '/v0/owner/oauth/requests/0190a0a0-0000-7000-8000-000000000000', { token: svc.ownerToken })).status, 404);
});

t.test('consent: approval needs existing inboxes and CSRF; deny sends access_denied', async (t) => {
  const { challenge } = pkce();
  const requestId = await startConsent(svc.url, session, { clientId, resource: MCP, challenge, state: 'st8' });
  const noInbox = await approve(svc.url, session, requestId, { inbox_ids: [] });
  t.equal(noInbox.status, 400, 'at least one inbox');
  const unknownInbox = await approve(svc.url, session, requestId, { inbox_ids: ['nobody@oauth.test'] });
  t.equal(unknownInbox.status, 400);
  t.match(unknownInbox.body, { code: 'validation_error' });
  const badPermission = await approve(svc.url, session, requestId, { inbox_ids: [INBOX], permissions: ['root'] });
  t.equal(badPermission.status, 400);
  const noCsrf = await api(svc.url, 'POST', `/v0/owner/oauth/requests/${requestId}/approve`, { headers: { cookie: session.cookie }, body: { inbox_ids: [INBOX], permissions: [], send_policy: 'approval' } });
  t.equal(noCsrf.status, 403, 'a session needs X-Svc-CSRF');
  const denied = await api<{ redirect_to: string }>(svc.url, 'POST', `/v0/owner/oauth/requests/${requestId}/deny`, { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal(denied.status, 200);
  const location = new URL(denied.body.redirect_to);
  t.equal(`${location.origin}${location.pathname}`, REDIRECT);
  t.equal(location.searchParams.get('error'), 'access_denied');
  t.equal(location.searchParams.get('state'), 'st8');
  t.equal(location.searchParams.get('code'), null);
  t.equal((await api(svc.url, 'GET', `/v0/owner/oauth/requests/${requestId}`, { token: svc.ownerToken })).status, 404, 'answered once');
  t.equal((await approve(svc.url, session, requestId, { inbox_ids: [INBOX] })).status, 404);
});

t.test('full flow: consent, code, tokens, the API with the token, refresh rotation', async (t) => {
  const { code, verifier, redirectTo } = await authorizeCode(svc.url, session, {
    clientId,
    resource: V0,
    inbox_ids: [INBOX],
    permissions: { inbox_read: true, message_read: true, inbox_create: false },
    send_policy: 'read_only',
    state: 'state-1',
  });
  t.equal(redirectTo.searchParams.get('state'), 'state-1');
  t.equal(`${redirectTo.origin}${redirectTo.pathname}`, REDIRECT);
  // JSON is accepted beside the form encoding.
  const res = await api<Tokens>(svc.url, 'POST', '/oauth/token', { body: { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: REDIRECT, resource: V0 } });
  t.equal(res.status, 200);
  t.match(res.body, { access_token: /^svc_oauth_/, token_type: 'Bearer', expires_in: 300, refresh_token: String, scope: 'svc' });
  t.equal(res.headers.get('cache-control'), 'no-store');
  const grantId = grantOf(res.body.access_token)!;
  const authorized = await events.next('oauth.authorized', (e) => (e.oauth as { grant_id: string }).grant_id === grantId);
  t.match(authorized.oauth, { grant_id: grantId, client_id: clientId, timestamp: String });

  const inboxes = await inboxesWith(res.body.access_token);
  t.equal(inboxes.status, 200);
  t.same(inboxes.body.inboxes.map((i) => i.inbox_id), [INBOX], 'only the inboxes the owner chose');
  t.equal((await api(svc.url, 'GET', `/v0/inboxes/${OTHER}`, { token: res.body.access_token })).status, 404, 'other inboxes are out of scope');
  const update = await api(svc.url, 'PATCH', `/v0/inboxes/${INBOX}`, { token: res.body.access_token, body: { display_name: 'x' } });
  t.equal(update.status, 403, 'only the permissions the owner chose');
  t.match(update.body, { code: 'missing_permission' });
  t.equal((await api(svc.url, 'GET', '/v0/owner/oauth/clients', { token: res.body.access_token })).status, 403, 'owner routes refuse OAuth tokens');

  const rotated = await refresh(svc.url, res.body.refresh_token, clientId, { resource: V0 });
  t.equal(rotated.status, 200);
  t.match(rotated.body, { access_token: /^svc_oauth_/, token_type: 'Bearer', expires_in: 300, refresh_token: String, scope: 'svc' });
  t.not(rotated.body.refresh_token, res.body.refresh_token, 'the refresh token rotates');
  t.not(rotated.body.access_token, res.body.access_token);
  t.equal(grantOf(rotated.body.access_token), grantId, 'same grant, same family');
  t.equal((await inboxesWith(rotated.body.access_token)).status, 200);
  const again = await refresh(svc.url, rotated.body.refresh_token, clientId);
  t.equal(again.status, 200, 'resource is optional on refresh');
  const wrongResource = await refresh(svc.url, again.body.refresh_token, clientId, { resource: MCP });
  t.equal(wrongResource.body.error, 'invalid_target', 'but must match when given');
});

t.test('tokens are stored only as SHA-256 hashes', async (t) => {
  const tokens = await tokensFor(V0);
  const dump = JSON.stringify([
    db.prepare('SELECT * FROM oauth_tokens').all(),
    db.prepare('SELECT * FROM oauth_codes').all(),
    db.prepare('SELECT * FROM oauth_grants').all(),
  ]);
  t.notOk(dump.includes(tokens.access_token), 'no access token in the clear');
  t.notOk(dump.includes(tokens.refresh_token), 'no refresh token in the clear');
  t.ok(grantOf(tokens.access_token), 'the hash is there');
});

t.test('an authorization code works once; reusing it revokes the tokens it issued', async (t) => {
  const { code, verifier } = await authorizeCode(svc.url, session, { clientId, resource: V0, inbox_ids: [INBOX] });
  const first = await exchange(svc.url, { code, verifier, clientId, resource: V0 });
  t.equal(first.status, 200);
  const grantId = grantOf(first.body.access_token)!;
  t.equal((await inboxesWith(first.body.access_token)).status, 200);
  const second = await exchange(svc.url, { code, verifier, clientId, resource: V0 });
  t.equal(second.status, 400);
  t.equal(second.body.error, 'invalid_grant');
  t.equal((await inboxesWith(first.body.access_token)).status, 401, 'the access token it issued is revoked');
  t.equal((await refresh(svc.url, first.body.refresh_token, clientId)).body.error, 'invalid_grant', 'and the refresh token');
  const revoked = await events.next('oauth.tokens_revoked', (e) => (e.oauth as { grant_id: string }).grant_id === grantId);
  t.match(revoked.oauth, { grant_id: grantId, client_id: clientId });
});

t.test('reusing a used refresh token revokes the whole family', async (t) => {
  const first = await tokensFor(V0);
  const grantId = grantOf(first.access_token)!;
  const second = (await refresh(svc.url, first.refresh_token, clientId)).body;
  const third = (await refresh(svc.url, second.refresh_token, clientId)).body;
  t.equal((await inboxesWith(third.access_token)).status, 200);
  const reuse = await refresh(svc.url, first.refresh_token, clientId);
  t.equal(reuse.status, 400);
  t.equal(reuse.body.error, 'invalid_grant');
  for (const token of [first.access_token, second.access_token, third.access_token]) t.equal((await inboxesWith(token)).status, 401, 'every access token of the family');
  t.equal((await refresh(svc.url, third.refresh_token, clientId)).body.error, 'invalid_grant', 'the newest refresh token too');
  await events.next('oauth.tokens_revoked', (e) => (e.oauth as { grant_id: string }).grant_id === grantId);
});

t.test('token request errors use RFC 6749 codes', async (t) => {
  const { code, verifier } = await authorizeCode(svc.url, session, { clientId, resource: MCP, inbox_ids: [INBOX] });
  const base = { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: REDIRECT, resource: MCP };
  const cases: [string, Record<string, string | undefined>, number, string][] = [
    ['no grant_type', { grant_type: undefined }, 400, 'invalid_request'],
    ['password grant', { grant_type: 'password' }, 400, 'unsupported_grant_type'],
    ['no code_verifier', { code_verifier: undefined }, 400, 'invalid_request'],
    ['wrong verifier', { code_verifier: pkce().verifier }, 400, 'invalid_grant'],
    ['no resource', { resource: undefined }, 400, 'invalid_request'],
    ['another resource', { resource: V0 }, 400, 'invalid_target'],
    ['no redirect_uri', { redirect_uri: undefined }, 400, 'invalid_request'],
    ['another redirect_uri', { redirect_uri: 'http://127.0.0.1:53683/callback' }, 400, 'invalid_grant'],
    ['unknown client', { client_id: '0190a0a0-0000-7000-8000-000000000000' }, 401, 'invalid_client'],
    ['unknown code', { code: 'svc_code_nope' }, 400, 'invalid_grant'],
  ];
  for (const [name, change, status, error] of cases) {
    const params = Object.fromEntries(Object.entries({ ...base, ...change }).filter(([, v]) => v !== undefined)) as Record<string, string>;
    const res = await form<{ error: string; error_description: string }>(svc.url, '/oauth/token', params);
    t.equal(res.status, status, name);
    t.equal(res.body.error, error, name);
    t.type(res.body.error_description, 'string', name);
  }
  const repeated = await api<{ error: string }>(svc.url, 'POST', '/oauth/token', {
    rawBody: `${new URLSearchParams(base)}&code=again`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(repeated.body.error, 'invalid_request', 'a repeated parameter');
  const xml = await api<{ error: string }>(svc.url, 'POST', '/oauth/token', { rawBody: '<x/>', headers: { 'content-type': 'application/xml' } });
  t.equal(xml.status, 400);
  t.equal(xml.body.error, 'invalid_request');
  const ok = await form(svc.url, '/oauth/token', base);
  t.equal(ok.status, 200, 'failed attempts do not use up the code');
});

t.test('an authorization code expires after 5 minutes', async (t) => {
  const { code, verifier } = await authorizeCode(svc.url, session, { clientId, resource: V0, inbox_ids: [INBOX] });
  // SQL: codes live 5 minutes; the stored expiry is moved back instead of waiting.
  db.prepare('UPDATE oauth_codes SET expires_at = ? WHERE code_hash = ?').run(new Date(Date.now() - 1000).toISOString(), createHash('sha256').update(code).digest('hex'));
  const res = await exchange(svc.url, { code, verifier, clientId, resource: V0 });
  t.equal(res.body.error, 'invalid_grant');
});

t.test('the family ends 30 days after consent; rotation does not extend it', async (t) => {
  const first = await tokensFor(V0);
  const grantId = grantOf(first.access_token)!;
  const grant = db.prepare('SELECT created_at, expires_at FROM oauth_grants WHERE grant_id = ?').get(grantId) as { created_at: string; expires_at: string };
  t.equal(Date.parse(grant.expires_at) - Date.parse(grant.created_at), 30 * 24 * 3600 * 1000);
  const rotated = (await refresh(svc.url, first.refresh_token, clientId)).body;
  const after = db.prepare('SELECT expires_at FROM oauth_grants WHERE grant_id = ?').get(grantId) as { expires_at: string };
  t.equal(after.expires_at, grant.expires_at, 'rotation keeps the end');
  // SQL: a grant outlives any test; its stored end is moved back instead of waiting.
  db.prepare('UPDATE oauth_grants SET expires_at = ? WHERE grant_id = ?').run(new Date(Date.now() - 1000).toISOString(), grantId);
  t.equal((await inboxesWith(rotated.access_token)).status, 401, 'access tokens end with the family');
  t.equal((await refresh(svc.url, rotated.refresh_token, clientId)).body.error, 'invalid_grant');
});

t.test('a token for /mcp does not work on /v0', async (t) => {
  const mcp = await tokensFor(MCP);
  const res = await inboxesWith(mcp.access_token);
  t.equal(res.status, 401);
  t.match(res.body, { code: 'unauthorized' });
  const v0 = await tokensFor(V0);
  t.equal((await inboxesWith(v0.access_token)).status, 200);
  t.equal((await api(svc.url, 'GET', '/v0/inboxes', { token: v0.refresh_token })).status, 401, 'a refresh token is not a bearer');
});

t.test('WebSocket: a /v0 token opens the stream, revocation closes it 1008, an /mcp token is refused', async (t) => {
  const wsUrl = `${svc.url.replace(/^http/, 'ws')}/v0/ws`;
  const mcp = await tokensFor(MCP);
  const refused = await new Promise<number>((resolve) => {
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${mcp.access_token}` } });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => resolve(101));
  });
  t.equal(refused, 401, 'an /mcp token is not a /v0 credential');

  const tokens = await tokensFor(V0);
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ type: 'subscribe' })));
    ws.on('message', (data) => {
      if ((JSON.parse(String(data)) as { type: string }).type === 'subscribed') resolve();
    });
  });
  t.pass('subscribed with the OAuth token');
  const grantId = grantOf(tokens.access_token)!;
  t.equal((await api(svc.url, 'DELETE', `/v0/owner/oauth/grants/${grantId}`, { token: svc.ownerToken })).status, 200);
  t.equal(await closed, 1008, 'closed once the grant is revoked');
});

t.test('revocation always answers 200 and revokes the whole family', async (t) => {
  for (const body of [{ token: 'svc_oauth_unknown' }, { token: '' }, {}]) {
    const res = await form(svc.url, '/oauth/revoke', body as Record<string, string>);
    t.equal(res.status, 200, JSON.stringify(body));
  }
  const first = await tokensFor(V0);
  const grantId = grantOf(first.access_token)!;
  const second = (await refresh(svc.url, first.refresh_token, clientId)).body;
  const res = await form(svc.url, '/oauth/revoke', { token: second.refresh_token, token_type_hint: 'refresh_token', client_id: clientId });
  t.equal(res.status, 200);
  t.equal(res.text, '');
  t.equal((await inboxesWith(second.access_token)).status, 401, 'its access tokens');
  t.equal((await refresh(svc.url, second.refresh_token, clientId)).body.error, 'invalid_grant');
  await events.next('oauth.revoked', (e) => (e.oauth as { grant_id: string }).grant_id === grantId);
  t.equal((await form(svc.url, '/oauth/revoke', { token: second.refresh_token })).status, 200, 'again: still 200');

  const byAccess = await tokensFor(V0);
  t.equal((await api(svc.url, 'POST', '/oauth/revoke', { body: { token: byAccess.access_token } })).status, 200, 'JSON, with the access token');
  t.equal((await refresh(svc.url, byAccess.refresh_token, clientId)).body.error, 'invalid_grant', 'revoking the access token ends the family');
  const seen = events.all('oauth.revoked').filter((e) => (e.oauth as { grant_id: string }).grant_id === grantId);
  t.equal(seen.length, 1, 'one event for one revocation');
});

t.test('owner: clients with their grants; revoking a grant; purging registrations without one', async (t) => {
  const tokens = await tokensFor(MCP, { inbox_ids: [INBOX, OTHER], permissions: ['message_read'], send_policy: 'direct' });
  const grantId = grantOf(tokens.access_token)!;
  const unused = (await register(svc.url, { client_name: 'Never used' })).body.client_id;
  const list = await api<{ count: number; limit: number; clients: { client_id: string; client_name: string; redirect_uris: string[]; created_at: string; grants: Record<string, unknown>[] }[] }>(
    svc.url,
    'GET',
    '/v0/owner/oauth/clients?limit=100',
    { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } },
  );
  t.equal(list.status, 200);
  t.equal(list.body.limit, 100);
  t.equal(list.body.count, list.body.clients.length);
  const client = list.body.clients.find((c) => c.client_id === clientId)!;
  t.match(client, { client_name: 'Test Client', redirect_uris: [REDIRECT], created_at: String });
  const grant = client.grants.find((g) => g.grant_id === grantId)!;
  t.match(grant, { grant_id: grantId, resource: MCP, origin: svc.url, inbox_ids: [INBOX, OTHER], send_policy: 'direct', created_at: String, expires_at: String, last_used_at: String });
  t.equal((grant.permissions as Record<string, boolean>).message_read, true);
  t.equal((grant.permissions as Record<string, boolean>).inbox_read, false);
  t.same(list.body.clients.find((c) => c.client_id === unused)!.grants, []);
  t.notOk(client.grants.some((g) => db.prepare('SELECT revoked_at FROM oauth_grants WHERE grant_id = ?').get(g.grant_id as string) === undefined), 'only stored grants');
  const page = await api<{ clients: unknown[]; next_page_token?: string }>(svc.url, 'GET', '/v0/owner/oauth/clients?limit=1', { token: svc.ownerToken });
  t.equal(page.body.clients.length, 1);
  t.type(page.body.next_page_token, 'string', 'paged');

  const agent = await createApiKey(svc, { permissions: ['inbox_read'] });
  t.equal((await api(svc.url, 'GET', '/v0/owner/oauth/clients', { token: agent.secret })).status, 403);
  t.equal((await api(svc.url, 'DELETE', `/v0/owner/oauth/grants/${grantId}`, { token: agent.secret })).status, 403);
  t.equal((await api(svc.url, 'POST', '/v0/owner/oauth/clients/purge', { token: agent.secret })).status, 403);

  const revoked = await api(svc.url, 'DELETE', `/v0/owner/oauth/grants/${grantId}`, { headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf } });
  t.equal(revoked.status, 200);
  t.equal(revoked.text, '');
  await events.next('oauth.revoked', (e) => (e.oauth as { grant_id: string }).grant_id === grantId);
  t.equal((await refresh(svc.url, tokens.refresh_token, clientId)).body.error, 'invalid_grant', 'its tokens are revoked');
  t.equal((await api(svc.url, 'DELETE', `/v0/owner/oauth/grants/${grantId}`, { token: svc.ownerToken })).status, 404, 'already revoked');
  t.equal((await api(svc.url, 'DELETE', '/v0/owner/oauth/grants/0190a0a0-0000-7000-8000-000000000000', { token: svc.ownerToken })).status, 404);
  const after = await api<{ clients: { client_id: string; grants: { grant_id: string }[] }[] }>(svc.url, 'GET', '/v0/owner/oauth/clients?limit=100', { token: svc.ownerToken });
  t.notOk(after.body.clients.find((c) => c.client_id === clientId)!.grants.some((g) => g.grant_id === grantId), 'revoked grants are not listed');

  const live = await tokensFor(V0);
  const purge = await api<{ deleted_clients: number }>(svc.url, 'POST', '/v0/owner/oauth/clients/purge', { token: svc.ownerToken });
  t.equal(purge.status, 200);
  t.ok(purge.body.deleted_clients >= 1);
  const remaining = await api<{ clients: { client_id: string }[] }>(svc.url, 'GET', '/v0/owner/oauth/clients?limit=100', { token: svc.ownerToken });
  t.notOk(remaining.body.clients.some((c) => c.client_id === unused), 'the unused registration is gone');
  t.ok(remaining.body.clients.some((c) => c.client_id === clientId), 'a client with a grant stays');
  t.equal((await inboxesWith(live.access_token)).status, 200, 'and its grant still works');
  t.same((await api(svc.url, 'POST', '/v0/owner/oauth/clients/purge', { token: svc.ownerToken })).body, { deleted_clients: 0 });
});

t.test('a registration without a grant expires after 24 hours', async (t) => {
  const res = await register(svc.url, { client_name: 'Stale' });
  const stale = res.body.client_id;
  // SQL: registrations age out after 24 hours; the stored creation time is moved back instead.
  db.prepare('UPDATE oauth_clients SET created_at = ? WHERE client_id = ?').run(new Date(Date.now() - 24 * 3600 * 1000 - 1000).toISOString(), stale);
  const { challenge } = pkce();
  const authorize = await visit(
    svc.url,
    authorizePath({ response_type: 'code', client_id: stale, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource: MCP }),
    session.cookie,
  );
  t.equal(authorize.status, 400);
  t.equal(authorize.body?.error, 'invalid_client');
  const list = await api<{ clients: { client_id: string }[] }>(svc.url, 'GET', '/v0/owner/oauth/clients?limit=100', { token: svc.ownerToken });
  t.notOk(list.body.clients.some((c) => c.client_id === stale));
  // SQL: two days cannot pass in a test; the granted client's stored creation time is moved back instead.
  db.prepare("UPDATE oauth_clients SET created_at = ? WHERE client_id = ?").run(new Date(Date.now() - 48 * 3600 * 1000).toISOString(), clientId);
  t.ok((await tokensFor(V0)).access_token, 'a client that has had a grant does not expire');
});

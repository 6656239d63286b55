/**
 * OAuth over the tunnel listener (spec §5.3, §5.2, §8): metadata names the tunnel origin, the
 * browser is sent to the loopback origin for consent, tokens work only on the origin they were
 * issued for, owner OAuth routes do not exist there, rate counters are per listener, and a new
 * remote hostname leaves tokens for the old one with nowhere to work. The tunnel listener is
 * reached through the stand-in connector, which sends the public hostname as `Host`; its origin
 * is `https://<hostname>`.
 */
import t from 'tap';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { answers, freePort } from '../helpers/ports.js';
import { tunnelProxyCommand } from '../helpers/tunnel.js';
import { authorizePath, ensureWebApp, exchange, form, pkce, approve, REDIRECT, refresh, register, visit, type Session, type Tokens } from '../helpers/oauth.js';

const HOST = 'mail.oauth.test';
const NEW_HOST = 'agents.oauth.test';
const INBOX = 'agent@oauth.test';

let svc: RunningSvc;
let session: Session;

interface RemoteView {
  listener: { port: number | null };
}

/** Enables remote access for `hostname` and returns the base URL of the connector in front of it. */
async function enableTunnel(hostname: string): Promise<string> {
  const port = await freePort();
  const res = await api<RemoteView>(svc.url, 'POST', '/v0/owner/remote/enable', { token: svc.ownerToken, body: { hostname, command: tunnelProxyCommand(port) } });
  if (res.status !== 200 || !res.body.listener.port) throw new Error(`enable: ${res.status} ${res.text}`);
  for (let i = 0; i < 100 && !(await answers(port)); i++) await new Promise((r) => setTimeout(r, 100));
  return `http://127.0.0.1:${port}`;
}

/** Register, authorize and approve through `base`, and exchange the code there. */
async function tokensThrough(base: string, resource: string): Promise<{ tokens: Tokens; clientId: string }> {
  const clientId = (await register(base)).body.client_id;
  const { verifier, challenge } = pkce();
  const path = authorizePath({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', resource, state: 'st' });
  let res = await visit(base, path);
  if (base !== svc.url) {
    if (res.status !== 302 || res.location !== svc.url + path) throw new Error(`tunnel authorize: ${res.status} ${res.location}`);
    res = await visit(svc.url, path, session.cookie);
  } else {
    res = await visit(base, path, session.cookie);
  }
  const requestId = decodeURIComponent(/request=(.+)$/.exec(res.location ?? '')![1]);
  const approved = await approve(svc.url, session, requestId, { inbox_ids: [INBOX] });
  const code = new URL(approved.body.redirect_to).searchParams.get('code')!;
  const exchanged = await exchange(base, { code, verifier, clientId, resource });
  if (exchanged.status !== 200) throw new Error(`token: ${exchanged.status} ${exchanged.text}`);
  return { tokens: exchanged.body, clientId };
}

t.before(async () => {
  ensureWebApp();
  svc = await startSvc();
  session = await setupOwner(svc);
  await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'agent', domain: 'oauth.test' } });
});
t.teardown(() => svc.stop());

t.test('over the tunnel', async (t) => {
  const tunnel = await enableTunnel(HOST);
  const origin = `https://${HOST}`;
  let tunnelV0: { tokens: Tokens; clientId: string };

  t.test('metadata names the tunnel origin', async (t) => {
    const resource = await api(tunnel, 'GET', '/.well-known/oauth-protected-resource/mcp');
    t.same(resource.body, { resource: `${origin}/mcp`, authorization_servers: [origin], scopes_supported: ['svc'], bearer_methods_supported: ['header'] });
    const server = await api<Record<string, string>>(tunnel, 'GET', '/.well-known/oauth-authorization-server');
    t.equal(server.body.issuer, origin);
    t.equal(server.body.token_endpoint, `${origin}/oauth/token`);
  });

  t.test('authorize over the tunnel sends the browser to the same request on the loopback origin', async (t) => {
    tunnelV0 = await tokensThrough(tunnel, `${origin}/v0`);
    t.match(tunnelV0.tokens, { access_token: /^svc_oauth_/, refresh_token: String });
    const grants = await api<{ clients: { client_id: string; grants: { resource: string; origin: string }[] }[] }>(svc.url, 'GET', '/v0/owner/oauth/clients', { token: svc.ownerToken });
    const grant = grants.body.clients.find((c) => c.client_id === tunnelV0.clientId)!.grants[0];
    t.match(grant, { resource: `${origin}/v0`, origin }, 'the grant stays bound to the resource the client asked for');
    const badResource = await visit(tunnel, authorizePath({ response_type: 'code', client_id: tunnelV0.clientId, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: 'https://other.oauth.test/v0' }));
    t.match(badResource, { status: 400, location: null, body: { error: 'invalid_target' } }, 'checked on the tunnel before redirecting, and answered there');
  });

  t.test('a tunnel token works only through the tunnel; a loopback token only on loopback', async (t) => {
    t.equal((await api(tunnel, 'GET', '/v0/inboxes', { token: tunnelV0.tokens.access_token })).status, 200);
    t.equal((await api(svc.url, 'GET', '/v0/inboxes', { token: tunnelV0.tokens.access_token })).status, 401, 'not on loopback');
    const local = await tokensThrough(svc.url, `${svc.url}/v0`);
    t.equal((await api(svc.url, 'GET', '/v0/inboxes', { token: local.tokens.access_token })).status, 200);
    t.equal((await api(tunnel, 'GET', '/v0/inboxes', { token: local.tokens.access_token })).status, 401, 'not through the tunnel');
    const mcp = await tokensThrough(tunnel, `${origin}/mcp`);
    t.equal((await api(tunnel, 'GET', '/v0/inboxes', { token: mcp.tokens.access_token })).status, 401, 'an /mcp token is not a /v0 token');
  });

  t.test('owner OAuth routes answer 404 on the tunnel', async (t) => {
    for (const [method, path] of [
      ['GET', '/v0/owner/oauth/clients'],
      ['POST', '/v0/owner/oauth/clients/purge'],
      ['DELETE', '/v0/owner/oauth/grants/0190a0a0-0000-7000-8000-000000000000'],
      ['GET', '/v0/owner/oauth/requests/0190a0a0-0000-7000-8000-000000000000'],
    ]) {
      const res = await api(tunnel, method, path, { token: tunnelV0.tokens.access_token });
      t.equal(res.status, 404, `${method} ${path}`);
    }
  });

  t.test('token rate windows are counted per listener', async (t) => {
    const statuses: number[] = [];
    for (let batch = 0; batch < 7; batch++) {
      const replies = await Promise.all(Array.from({ length: 20 }, () => form(svc.url, '/oauth/token', { grant_type: 'none' })));
      statuses.push(...replies.map((a) => a.status));
    }
    t.ok(statuses.includes(429), 'loopback is over its limit');
    const through = await refresh(tunnel, tunnelV0.tokens.refresh_token, tunnelV0.clientId);
    t.equal(through.status, 200, 'the tunnel still serves token requests');
    tunnelV0.tokens = through.body;
  });

  t.test('a new remote hostname leaves tokens for the old one with nowhere to work', async (t) => {
    const moved = await enableTunnel(NEW_HOST);
    t.equal((await api(moved, 'GET', '/v0/inboxes', { token: tunnelV0.tokens.access_token })).status, 401);
    const renewed = await refresh(moved, tunnelV0.tokens.refresh_token, tunnelV0.clientId);
    t.equal(renewed.status, 400);
    t.equal(renewed.body.error, 'invalid_grant');
    const metadata = await api<{ resource: string }>(moved, 'GET', '/.well-known/oauth-protected-resource/v0');
    t.equal(metadata.body.resource, `https://${NEW_HOST}/v0`);
  });
});

/**
 * Issue 16 finding 11 (RFC 9700 §4.11.2): a client anyone can register, with an attacker's
 * redirect URI, must not turn `/oauth/authorize` into an open redirector. Every parameter error
 * is answered by svc itself (400, JSON for clients, an HTML page for browsers) — never a 302 to
 * the client — until the owner has acted on the consent screen; an owner's deny may then send
 * the browser back with `error=access_denied`, as OAuth expects.
 */
import t from 'tap';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { authorizePath, ensureWebApp, pkce, register, startConsent, visit, type Session } from '../helpers/oauth.js';

const ATTACKER = 'https://attacker.example/cb';

let svc: RunningSvc;
let session: Session;
let clientId: string;
let MCP: string;

t.before(async () => {
  ensureWebApp();
  svc = await startSvc();
  session = await setupOwner(svc);
  const registered = await register(svc.url, { client_name: 'Totally legit', redirect_uris: [ATTACKER] });
  if (registered.status !== 201) throw new Error(`register: ${registered.status} ${registered.text}`);
  clientId = registered.body.client_id;
  MCP = `${svc.url}/mcp`;
});
t.teardown(() => svc?.stop());

const good = () => ({ response_type: 'code', client_id: clientId, redirect_uri: ATTACKER, code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: MCP, state: 'st' });

/** Bad authorization requests a hostile client can make with its genuine client_id and redirect URI. */
const BAD: [string, Record<string, string | undefined>, string][] = [
  ['no PKCE challenge', { code_challenge: undefined }, 'invalid_request'],
  ['plain PKCE', { code_challenge_method: 'plain' }, 'invalid_request'],
  ['no code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
  ['malformed challenge', { code_challenge: 'short' }, 'invalid_request'],
  ['unsupported response_type', { response_type: 'token' }, 'unsupported_response_type'],
  ['no response_type', { response_type: undefined }, 'invalid_request'],
  ['resource of another origin', { resource: 'https://attacker.example/mcp' }, 'invalid_target'],
  ['no resource', { resource: undefined }, 'invalid_request'],
  ['unknown scope', { scope: 'openid email' }, 'invalid_scope'],
  ['state too long', { state: 'x'.repeat(1025) }, 'invalid_request'],
];

t.test('parameter errors never redirect to the client, signed in or not', async (t) => {
  for (const cookie of [session.cookie, undefined]) {
    for (const [name, change, error] of BAD) {
      const what = `${name} (${cookie ? 'owner signed in' : 'signed out'})`;
      const res = await visit(svc.url, authorizePath({ ...good(), ...change }), cookie);
      t.equal(res.status, 400, what);
      t.equal(res.location, null, `${what}: no Location header`);
      t.equal(res.body?.error, error, what);
    }
  }
  const repeated = await visit(svc.url, `${authorizePath(good())}&resource=${encodeURIComponent(MCP)}`, session.cookie);
  t.match(repeated, { status: 400, location: null }, 'a repeated parameter');
});

t.test('a browser gets an HTML page with the error, escaped, and no link onward', async (t) => {
  const res = await fetch(svc.url + authorizePath({ ...good(), response_type: '<script>alert(1)</script>' }), {
    redirect: 'manual',
    headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', cookie: session.cookie },
  });
  const html = await res.text();
  t.equal(res.status, 400);
  t.equal(res.headers.get('location'), null);
  t.match(res.headers.get('content-type'), /^text\/html/);
  t.match(res.headers.get('content-security-policy'), /default-src 'none'/);
  t.match(html, /unsupported_response_type/);
  t.notMatch(html, /attacker\.example/, 'the page does not link to the client');
  t.notMatch(html, /<script>/, 'nothing from the request is rendered as markup');
});

t.test('the success path still redirects only within svc, and a deny by the owner goes back to the client', async (t) => {
  const requestId = await startConsent(svc.url, session, { clientId, resource: MCP, challenge: pkce().challenge, redirectUri: ATTACKER, state: 'st' });
  const denied = await api<{ redirect_to: string }>(svc.url, 'POST', `/v0/owner/oauth/requests/${encodeURIComponent(requestId)}/deny`, {
    body: {},
    headers: { cookie: session.cookie, 'x-svc-csrf': session.csrf },
  });
  t.equal(denied.status, 200, denied.text);
  const back = new URL(denied.body.redirect_to);
  t.equal(`${back.origin}${back.pathname}`, ATTACKER);
  t.equal(back.searchParams.get('error'), 'access_denied', 'after the owner acted, the client hears the answer');
  t.equal(back.searchParams.get('state'), 'st');
});

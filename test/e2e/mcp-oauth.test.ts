/**
 * The MCP SDK's own client-side OAuth flow against a real service (spec §5.3, ARCHITECTURE §9):
 * `StreamableHTTPClientTransport` with an `authProvider` gets 401 from /mcp, discovers the
 * resource and authorization-server metadata, registers dynamically, and sends the owner's browser
 * to authorize with PKCE; the test plays the browser (owner cookie, consent API), the transport
 * finishes with the code, lists inboxes through /mcp, and refreshes when its access token expires.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { api, setupOwner, startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { seedMail, simpleMail } from '../helpers/mail.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { approve, ensureWebApp, MemoryOAuthProvider, visit, type Session } from '../helpers/oauth.js';
import type { Db } from '../../src/db/open.js';

const INBOX = 'agent@mcp-oauth.test';

class MemoryProvider extends MemoryOAuthProvider {
  constructor() {
    super('MCP SDK test client', 'mcp-state');
  }
}

let svc: RunningSvc;
let session: Session;
let db: Db;
let sink: Sink;
const clients: Client[] = [];

t.before(async () => {
  ensureWebApp();
  svc = await startSvc();
  session = await setupOwner(svc);
  db = openHomeDb(svc.home);
  sink = await startSink();
  const transport = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { smtp: { host: '127.0.0.1', port: sink.port } } });
  if (transport.status !== 200) throw new Error(`transport: ${transport.status} ${transport.text}`);
  for (const username of ['agent', 'other']) await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain: 'mcp-oauth.test' } });
});
t.teardown(async () => {
  await Promise.all(clients.map((c) => c.close()));
  db.close();
  await svc.stop();
  await sink.close();
});

async function connect(provider: MemoryProvider): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { authProvider: provider });
  const client = new Client({ name: 'svc-oauth-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

async function listInboxes(client: Client): Promise<string[]> {
  const result = await client.callTool({ name: 'list_inboxes', arguments: {} });
  if (result.isError) throw new Error(JSON.stringify(result.content));
  const body = JSON.parse((result.content as { text: string }[])[0].text) as { inboxes: { inbox_id: string }[] };
  return body.inboxes.map((i) => i.inbox_id);
}

t.test('the SDK client discovers, registers, authorizes with PKCE, exchanges, lists inboxes and refreshes', async (t) => {
  const provider = new MemoryProvider();
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { authProvider: provider });
  const first = new Client({ name: 'svc-oauth-test', version: '1.0.0' });
  await t.rejects(first.connect(transport), { message: /Unauthorized/ }, 'without a token the client is sent to authorize (UnauthorizedError)');
  t.match(provider.info, { client_id: String, token_endpoint_auth_method: 'none' }, 'it registered dynamically');

  const url = provider.authorizationUrl!;
  t.equal(`${url.origin}${url.pathname}`, `${svc.url}/oauth/authorize`, 'the endpoint from the server metadata');
  t.equal(url.searchParams.get('resource'), `${svc.url}/mcp`, 'the resource from the resource metadata');
  t.equal(url.searchParams.get('code_challenge_method'), 'S256');
  t.equal(url.searchParams.get('scope'), 'svc', 'the scope the resource metadata offers');
  t.equal(url.searchParams.get('client_id'), provider.info!.client_id);

  // The owner's browser: the signed-in session lands on the consent page, and the owner approves.
  const landing = await visit(svc.url, url.pathname + url.search, session.cookie);
  t.equal(landing.status, 302);
  const requestId = decodeURIComponent(/^\/consent\?request=(.+)$/.exec(landing.location ?? '')![1]);
  const approved = await approve(svc.url, session, requestId, { inbox_ids: [INBOX], permissions: ['inbox_read'], send_policy: 'read_only' });
  t.equal(approved.status, 200);
  const callback = new URL(approved.body.redirect_to);
  t.equal(callback.searchParams.get('state'), 'mcp-state');

  await transport.finishAuth(callback.searchParams.get('code')!);
  t.match(provider.saved, { access_token: /^svc_oauth_/, refresh_token: String, token_type: 'Bearer', expires_in: 300 });
  const firstRefresh = provider.saved!.refresh_token;

  const { client } = await connect(provider);
  t.same(await listInboxes(client), [INBOX], 'only the inbox the owner chose, through /mcp');

  // The access token runs out: the next call gets 401, the transport refreshes and retries.
  // SQL: no route ends an access token early, and waiting out its lifetime would time the test.
  db.prepare("UPDATE oauth_tokens SET expires_at = ? WHERE kind = 'access'").run(new Date(Date.now() - 1000).toISOString());
  t.same(await listInboxes(client), [INBOX], 'still works after the refresh');
  t.not(provider.saved!.refresh_token, firstRefresh, 'the refresh token rotated');
  t.equal(provider.savedTokens.length, 2, 'one exchange, one refresh');
  const v0 = await api(svc.url, 'GET', '/v0/inboxes', { token: provider.saved!.access_token });
  t.equal(v0.status, 401, 'an /mcp token does not work on /v0');
});

t.test('with a grant that may reply, the SDK client replies through /mcp and the reply is delivered in its thread', async (t) => {
  const provider = new MemoryProvider();
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), { authProvider: provider });
  await t.rejects(new Client({ name: 'svc-oauth-reply', version: '1.0.0' }).connect(transport), { message: /Unauthorized/ });
  const url = provider.authorizationUrl!;
  const landing = await visit(svc.url, url.pathname + url.search, session.cookie);
  const requestId = decodeURIComponent(/^\/consent\?request=(.+)$/.exec(landing.location ?? '')![1]);
  const approved = await approve(svc.url, session, requestId, { inbox_ids: [INBOX], permissions: ['inbox_read', 'message_read', 'message_reply'], send_policy: 'direct' });
  t.equal(approved.status, 200);
  await transport.finishAuth(new URL(approved.body.redirect_to).searchParams.get('code')!);

  const original = await seedMail(db, simpleMail({ from: 'Alice <alice@remote.example>', to: INBOX, subject: 'Lunch?', messageId: '<lunch-1@remote.example>' }), { inboxId: INBOX });
  const before = sink.messages.length;
  const { client } = await connect(provider);
  const result = await client.callTool({ name: 'reply_to_message', arguments: { inboxId: INBOX, messageId: original.messageId, text: 'Noon works.', idempotencyKey: 'oauth-reply-1' } });
  t.notOk(result.isError, JSON.stringify(result.content));
  const body = JSON.parse((result.content as { text: string }[])[0].text) as { message_id: string; thread_id: string };
  t.equal(body.thread_id, original.threadId, 'the reply joins the original thread');

  const [delivered] = (await sink.waitFor(before + 1, 30_000)).slice(before);
  t.same(delivered.to, ['alice@remote.example'], 'delivered to the original sender');
  const raw = delivered.raw.toString('utf8');
  t.match(raw, /^In-Reply-To: <lunch-1@remote\.example>/m, 'threading header of the original');
  t.match(raw, /^Subject: Re: Lunch\?/m, 'derived subject');

  const other = await client.callTool({ name: 'send_message', arguments: { inboxId: INBOX, to: 'bob@remote.example', subject: 'New', text: 'x' } });
  t.ok(other.isError, 'a new send needs message_send, which this grant lacks');
  t.match(JSON.parse((other.content as { text: string }[])[0].text), { code: 'missing_permission' });
});

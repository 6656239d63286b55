/**
 * Every JSON route declares a response schema (issue 18). fast-json-stringify sends only the
 * fields a schema declares, so the schema is the safety net that keeps a secret which reached a
 * view by mistake off the wire — but only on routes that have one.
 *
 * The routes are read with their options from an app assembled from svc's own route plugins, the
 * way src/http/app.ts assembles it (cookie, WebSocket and gate plugins first), with an `onRoute`
 * hook in front that records each route's schema. The remote-access routes are included (svc
 * registers them only with a RemoteAccess), and so is the web app's `GET /*` when web/dist is built.
 * That the assembly misses no plugin is checked against svc's own route table (test/helpers/fuzz.ts
 * `routeTable`, built by `buildApp` itself): a route plugin added to the app but not here fails.
 *
 * Routes that answer no JSON body are allowed without a response schema only when listed in
 * NO_JSON_BODY below, each with the reason; a listed route that gains a schema, or no longer
 * exists, fails too, so the list stays exact.
 *
 * And the net for the webhook secret: every webhook read declares `secret` as the empty string,
 * so a view that carries the real secret by mistake still sends `""`; only the create's schema
 * carries it.
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Fastify, { type RouteOptions } from 'fastify';
import cookie from '@fastify/cookie';
import websocket from '@fastify/websocket';
import { httpGate } from '../../src/auth/gate.js';
import { openDatabase } from '../../src/db/open.js';
import { OwnerAccount } from '../../src/owner/owner-account.js';
import { Bus } from '../../src/supervisor/bus.js';
import { CpuPool } from '../../src/supervisor/pool.js';
import { RemoteAccess } from '../../src/remote/remote-access.js';
import type { AppContext } from '../../src/context.js';
import { ownerRoutes } from '../../src/routes/owner.js';
import { ownerGuardRoutes } from '../../src/routes/owner-guard.js';
import { ownerMailRoutes } from '../../src/routes/owner-mail.js';
import { transportRoutes } from '../../src/routes/transport.js';
import { dnsProviderRoutes } from '../../src/routes/dns-provider.js';
import { inboundRoutes } from '../../src/routes/inbound.js';
import { metricRoutes } from '../../src/routes/metrics.js';
import { identityRoutes } from '../../src/routes/identity.js';
import { hostedOnlyRoutes } from '../../src/routes/hosted-only.js';
import { podRoutes } from '../../src/routes/pods.js';
import { ownerOAuthRoutes } from '../../src/routes/owner-oauth.js';
import { oauthRoutes } from '../../src/routes/oauth.js';
import { remoteRoutes } from '../../src/routes/remote.js';
import { backupRoutes } from '../../src/routes/backup.js';
import { doctorRoutes } from '../../src/routes/doctor.js';
import { BackupService } from '../../src/backup/service.js';
import { mcpRoutes } from '../../src/routes/mcp.js';
import { inboxRoutes } from '../../src/routes/inboxes.js';
import { apiKeyRoutes } from '../../src/routes/api-keys.js';
import { threadRoutes } from '../../src/routes/threads.js';
import { messageRoutes } from '../../src/routes/messages.js';
import { sendRoutes } from '../../src/routes/send.js';
import { draftRoutes } from '../../src/routes/drafts.js';
import { listRoutes } from '../../src/routes/lists.js';
import { downloadRoutes } from '../../src/routes/downloads.js';
import { wsRoutes } from '../../src/routes/ws.js';
import { inboxEventRoutes } from '../../src/routes/inbox-events.js';
import { domainRoutes } from '../../src/routes/domains.js';
import { webhookRoutes } from '../../src/routes/webhooks.js';
import { webAppRoutes } from '../../src/routes/web.js';
import { WebhookReadResponse, WebhookResponse } from '../../src/webhooks/webhooks.js';
import { routeTable } from '../helpers/fuzz.js';

/** Deletions and acknowledgements: an empty answer (`reply.send()` or a 204). */
const NO_BODY = 'answers with no body';
/** `METHOD /pattern` of the routes that answer no JSON body, and why each needs no response schema. */
const NO_JSON_BODY = new Map<string, string>([
  // Deletions and other acknowledgements.
  ['DELETE /v0/inboxes/:inbox_id', NO_BODY],
  ['DELETE /v0/pods/:pod_id', NO_BODY],
  ['DELETE /v0/api-keys/:api_key_id', NO_BODY],
  ['DELETE /v0/inboxes/:inbox_id/api-keys/:api_key_id', NO_BODY],
  ['DELETE /v0/threads/:thread_id', NO_BODY],
  ['DELETE /v0/inboxes/:inbox_id/threads/:thread_id', NO_BODY],
  ['DELETE /v0/inboxes/:inbox_id/messages/:message_id', NO_BODY],
  ['DELETE /v0/inboxes/:inbox_id/drafts/:draft_id', NO_BODY],
  ['DELETE /v0/domains/:domain_id', NO_BODY],
  ['DELETE /v0/webhooks/:webhook_id', NO_BODY],
  ['PATCH /v0/webhooks/:webhook_id/headers', NO_BODY],
  ['DELETE /v0/inboxes/:inbox_id/webhooks/:webhook_id', NO_BODY],
  ['PATCH /v0/inboxes/:inbox_id/webhooks/:webhook_id/headers', NO_BODY],
  ['DELETE /v0/owner/quarantine/:id', NO_BODY],
  ['DELETE /v0/owner/lists/rejections/:id', NO_BODY],
  ['DELETE /v0/owner/sessions/:id', NO_BODY],
  ['POST /v0/owner/logout', NO_BODY],
  ['POST /v0/owner/password', NO_BODY],
  ['DELETE /v0/owner/transport', NO_BODY],
  ['DELETE /v0/owner/oauth/grants/:grant_id', NO_BODY],
  ['POST /oauth/revoke', 'RFC 7009 §2.2: an empty 200 whether or not the token existed'],
  // Answers that are not JSON.
  ['GET /v0/domains/:domain_id/zone-file', 'a DNS zone file, text/plain'],
  ['GET /v0/downloads/:token', 'the file itself, streamed'],
  ['POST /v0/owner/backup', 'the backup file itself, streamed (application/octet-stream)'],
  ['GET /oauth/authorize', 'redirects to the owner login or consent page; errors come from the error handler'],
  ['GET /mcp', 'the MCP transport writes its own answer (an SSE stream or a JSON-RPC message)'],
  ['POST /mcp', 'the MCP transport writes its own answer (an SSE stream or a JSON-RPC message)'],
  ['DELETE /mcp', 'the MCP transport writes its own answer'],
  ['GET /v0/ws', 'a WebSocket upgrade'],
  ['GET /v0', "a WebSocket upgrade (the AgentMail SDK's socket)"],
  ['GET /*', 'the web app: its HTML shell and static files'],
  // AgentMail's hosted-only methods (src/routes/hosted-only.ts): they only ever answer `not_supported`.
  ...['POST /v0/agent/sign-up', 'POST /v0/agent/verify', 'GET /v0/providers', 'GET /v0/providers/search', 'GET /v0/providers/:provider_id', 'GET /v0/providers/:provider_id/accounts', 'POST /v0/providers/:provider_id/connect', 'GET /v0/accounts', 'GET /v0/accounts/:account_id', 'POST /v0/inboxes/:inbox_id/authorize'].map(
    (route): [string, string] => [route, 'answers only the not_supported error, from the error handler'],
  ),
]);
/** List entries are registered once per direction and type (src/routes/lists.ts): their deletions, by pattern. */
const NO_JSON_BODY_PATTERNS: readonly [RegExp, string][] = [[/^DELETE \/v0(\/inboxes\/:inbox_id)?\/lists\/(receive|send|reply)\/(allow|block)\/:entry$/, NO_BODY]];
/** A pod copy of a home route (`/v0/pods/:pod_id/…`, docs/pods.md) answers as the home route does. */
const homeKeyOf = (key: string) => key.replace(/^(\S+) \/v0\/pods\/:pod_id\//, '$1 /v0/');
const answersNoJson = (podOrHomeKey: string) => {
  const key = homeKeyOf(podOrHomeKey);
  return NO_JSON_BODY.has(key) || NO_JSON_BODY_PATTERNS.some(([pattern]) => pattern.test(key));
};
/** CORS preflights (`OPTIONS`), answered 204 with headers only, are not API routes. */
const SKIPPED_METHODS = new Set(['HEAD', 'OPTIONS']);

interface Declared {
  key: string;
  hasResponse: boolean;
}

/** Every route svc's plugins register, with whether it declares `schema.response`. */
async function declaredRoutes(): Promise<Declared[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-schemas-'));
  const db = openDatabase(path.join(dir, 'svc.db'), randomBytes(32), { migrate: true });
  const pool = new CpuPool();
  const bus = new Bus();
  // Never started: the routes are read without listening, so no tunnel listener is ever built.
  const remote = new RemoteAccess(db, bus, () => Promise.reject(new Error('the route table never opens a tunnel listener')));
  const ctx: AppContext = { db, bus, pool, owner: new OwnerAccount(db), origin: () => 'http://127.0.0.1:1', listener: 'local', remote };
  const seen: Declared[] = [];
  const app = Fastify();
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const hasResponse = route.schema?.response !== undefined;
    for (const method of methods) if (!SKIPPED_METHODS.has(method)) seen.push({ key: `${method} ${route.url}`, hasResponse });
  });
  app.decorate('svc', ctx);
  app.decorateRequest('principal', null);
  try {
    await app.register(cookie);
    await app.register(websocket);
    await app.register(httpGate, ctx);
    const backups = new BackupService(dir, 'schema-test', randomBytes(32));
    for (const routes of [ownerRoutes, transportRoutes, dnsProviderRoutes, ownerGuardRoutes, ownerMailRoutes, inboundRoutes, ownerOAuthRoutes, remoteRoutes(remote), backupRoutes(backups), doctorRoutes({ home: dir, loops: () => [] })]) await app.register(routes, { prefix: '/v0/owner' });
    await app.register(oauthRoutes);
    await app.register(mcpRoutes);
    for (const routes of [inboxRoutes, apiKeyRoutes, threadRoutes, messageRoutes, sendRoutes, draftRoutes, listRoutes, downloadRoutes, wsRoutes, inboxEventRoutes, domainRoutes, webhookRoutes, metricRoutes, identityRoutes, hostedOnlyRoutes, podRoutes]) {
      await app.register(routes, { prefix: '/v0' });
    }
    await app.register(webAppRoutes);
    await app.ready();
    return seen;
  } finally {
    await app.close();
    await pool.close();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

t.test('every route that answers JSON declares a response schema', async (t) => {
  const declared = await declaredRoutes();
  const byKey = new Map(declared.map((r) => [r.key, r]));

  const served = await routeTable();
  const missed = served.map((r) => `${r.method} ${r.url}`).filter((key) => !byKey.has(key));
  t.same(missed, [], "every route of svc's own table was inspected (a new route plugin must be registered in declaredRoutes too)");

  const undeclared = declared.filter((r) => !r.hasResponse && !answersNoJson(r.key)).map((r) => r.key);
  t.same(undeclared, [], 'routes that answer JSON without a response schema');

  const listedWithSchema = declared.filter((r) => r.hasResponse && answersNoJson(r.key)).map((r) => r.key);
  t.same(listedWithSchema, [], 'routes listed as answering no JSON that do declare a response schema');
  const listedUnknown = [...NO_JSON_BODY.keys()].filter((key) => !byKey.has(key) && !(key === 'GET /*' && !served.some((r) => r.url === '/*')));
  t.same(listedUnknown, [], 'listed routes that do not exist');
});

t.test('the webhook read schema never sends a secret the view carries by mistake', async (t) => {
  const secret = 'whsec_probe-secret-never-on-a-read';
  const leakyView = {
    webhook_id: '0190aaaa-0000-7000-8000-000000000002',
    url: 'https://hooks.example.com/in',
    event_types: ['message.received'],
    inbox_id: null,
    inbox_ids: null,
    enabled: true,
    created_at: '2026-11-24T00:00:00.000Z',
    updated_at: '2026-11-24T00:00:00.000Z',
    client_id: null,
    secret,
  };
  const app = Fastify();
  app.get('/read', { schema: { response: { 200: WebhookReadResponse } } }, async () => leakyView);
  app.get('/created', { schema: { response: { 200: WebhookResponse } } }, async () => leakyView);
  t.teardown(() => app.close());

  const read = await app.inject({ method: 'GET', url: '/read' });
  t.equal(read.statusCode, 200);
  t.notMatch(read.body, secret, 'the secret is not on the wire');
  t.same(JSON.parse(read.body), { ...leakyView, secret: '' }, 'every other field is, and `secret` is the empty string the SDK expects');

  const created = await app.inject({ method: 'GET', url: '/created' });
  t.equal(JSON.parse(created.body).secret, secret, 'the create schema carries it, the one time it is shown');
});

/**
 * Inbox-restricted credentials on the instance-wide webhook routes (issue 17 §2 opened them for
 * the AgentMail SDK's `webhooks.*`): the scope still bounds everything. A restricted key cannot
 * name, add, see or receive events of an inbox outside its scope, cannot reach webhooks other
 * credentials made, and a `client_id` never hands one creator another creator's webhook or secret.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db } from '../../src/db/open.js';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { narrowApiKeyScope, openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { seedMail, simpleMail } from '../helpers/mail.js';

const MINE = 'mine@scope.example.com';
const THEIRS = 'theirs@scope.example.com';
const PUBLIC_URL = 'https://93.184.215.14/hooks';
const WEBHOOK_ALL = ['webhook_read', 'webhook_create', 'webhook_update', 'webhook_delete', 'message_read'];
/** Bounds the wait for a delivery; the loop ticks every second. */
const DELIVERY_WAIT_MS = 15_000;

let svc: RunningSvc;
let db: Db;
let server: http.Server;
let receiverUrl: string;
const received: string[] = [];

t.before(async () => {
  // The test switch lets an agent's webhook reach a loopback receiver (agents are refused internal targets).
  svc = await startSvc({ env: { SVC_TEST_WEBHOOK_UNGUARDED: '1' } });
  db = openHomeDb(svc.home);
  await createInbox(svc, MINE);
  await createInbox(svc, THEIRS);
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
t.teardown(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  db.close();
  await svc.stop();
});

const as = <T = Record<string, unknown>>(token: string, method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token, body });

t.test('a restricted key can name, add and see only inboxes in its scope on the instance-wide routes', async (t) => {
  const key = (await createApiKey(svc, { permissions: WEBHOOK_ALL, inboxIds: [MINE] })).secret;
  t.equal((await as(key, 'POST', '/v0/webhooks', { url: PUBLIC_URL, event_types: ['message.received'], inbox_ids: [THEIRS] })).status, 404, 'naming an outside inbox: 404');
  t.equal((await as(key, 'POST', '/v0/webhooks', { url: PUBLIC_URL, event_types: ['message.received'], inbox_ids: [MINE, THEIRS] })).status, 404, 'one outside inbox is enough');
  const mine = await as<{ webhook_id: string }>(key, 'POST', '/v0/webhooks', { url: PUBLIC_URL, event_types: ['message.received'], inbox_ids: [MINE] });
  t.equal(mine.status, 200);
  t.equal((await as(key, 'PATCH', `/v0/webhooks/${mine.body.webhook_id}`, { add_inbox_ids: [THEIRS] })).status, 404, 'a patch cannot widen it');
  t.same((await as<{ inbox_ids: string[] }>(key, 'GET', `/v0/webhooks/${mine.body.webhook_id}`)).body.inbox_ids, [MINE]);

  const ownerHook = await as<{ webhook_id: string }>(svc.ownerToken, 'POST', '/v0/webhooks', { url: PUBLIC_URL, event_types: ['message.received'] });
  const otherKey = (await createApiKey(svc, { permissions: WEBHOOK_ALL, inboxIds: [MINE] })).secret;
  const otherHook = await as<{ webhook_id: string }>(otherKey, 'POST', '/v0/webhooks', { url: PUBLIC_URL, event_types: ['message.received'] });
  for (const id of [ownerHook.body.webhook_id, otherHook.body.webhook_id]) {
    for (const [method, path, body] of [
      ['GET', `/v0/webhooks/${id}`, undefined],
      ['PATCH', `/v0/webhooks/${id}`, { enabled: false }],
      ['GET', `/v0/webhooks/${id}/headers`, undefined],
      ['DELETE', `/v0/webhooks/${id}`, undefined],
    ] as const) {
      t.equal((await as(key, method, path, body)).status, 404, `${method} ${path} of another creator's webhook: 404`);
    }
  }
  const listed = await as<{ webhooks: { webhook_id: string }[] }>(key, 'GET', '/v0/webhooks');
  t.same(listed.body.webhooks.map((w) => w.webhook_id), [mine.body.webhook_id], 'the list holds its own webhook only');
});

t.test('every inbox webhook route: inbox out of scope is 404 before the permission (403); another inbox\'s path never reaches a webhook', async (t) => {
  const both = (await createApiKey(svc, { permissions: WEBHOOK_ALL, inboxIds: [MINE, THEIRS] })).secret;
  const hook = await as<{ webhook_id: string }>(both, 'POST', `/v0/inboxes/${encodeURIComponent(MINE)}/webhooks`, { url: PUBLIC_URL, event_types: ['message.received'] });
  t.equal(hook.status, 200);
  const routes = (inbox: string) => {
    const base = `/v0/inboxes/${encodeURIComponent(inbox)}/webhooks`;
    const one = `${base}/${hook.body.webhook_id}`;
    return [
      ['GET', base, undefined, 'webhook_read'],
      ['POST', base, { url: PUBLIC_URL, event_types: ['message.received'] }, 'webhook_create'],
      ['GET', one, undefined, 'webhook_read'],
      ['PATCH', one, { enabled: false }, 'webhook_update'],
      ['GET', `${one}/headers`, undefined, 'webhook_read'],
      ['PATCH', `${one}/headers`, { headers: { 'X-A': '1' } }, 'webhook_update'],
      ['DELETE', one, undefined, 'webhook_delete'],
    ] as const;
  };
  const noWebhookPermission = (await createApiKey(svc, { permissions: ['message_read'], inboxIds: [MINE] })).secret;
  for (const [method, path, body] of routes(THEIRS)) {
    const res = await as<{ code: string }>(noWebhookPermission, method, path, body);
    t.equal(res.status, 404, `${method} ${path} out of scope: 404 before the permission`);
    t.equal(res.body.code, 'not_found');
  }
  for (const [method, path, body, permission] of routes(MINE)) {
    const res = await as<{ code: string; message: string }>(noWebhookPermission, method, path, body);
    t.equal(res.status, 403, `${method} ${path} in scope without ${permission}: 403`);
    t.equal(res.body.code, 'missing_permission');
    t.match(res.body.message, permission);
  }
  // THEIRS is in this key's scope, but the webhook is MINE's: the other inbox's path does not reach it.
  for (const [method, path, body] of routes(THEIRS).slice(2)) {
    t.equal((await as(both, method, path, body)).status, 404, `${method} ${path}: not that inbox's webhook`);
  }
  t.equal((await as<{ enabled: boolean }>(both, 'GET', `/v0/webhooks/${hook.body.webhook_id}`)).body.enabled, true, 'nothing above changed it');
});

t.test('an inbox webhook whose inbox leaves the key\'s scope disappears from the instance-wide routes', async (t) => {
  const created = await createApiKey(svc, { permissions: WEBHOOK_ALL, inboxIds: [MINE, THEIRS] });
  const hook = await as<{ webhook_id: string }>(created.secret, 'POST', `/v0/inboxes/${encodeURIComponent(THEIRS)}/webhooks`, { url: PUBLIC_URL, event_types: ['message.received'] });
  t.equal(hook.status, 200);
  narrowApiKeyScope(db, created.id, [MINE]);
  t.equal((await as(created.secret, 'GET', `/v0/webhooks/${hook.body.webhook_id}`)).status, 404);
  const listed = await as<{ webhooks: { webhook_id: string }[] }>(created.secret, 'GET', '/v0/webhooks');
  t.notOk(listed.body.webhooks.some((w) => w.webhook_id === hook.body.webhook_id));
});

t.test('a client_id is per creator: reusing another credential\'s value never returns its webhook or secret', async (t) => {
  const one = (await createApiKey(svc, { permissions: WEBHOOK_ALL, inboxIds: [MINE] })).secret;
  const two = (await createApiKey(svc, { permissions: WEBHOOK_ALL })).secret;
  const body = { url: PUBLIC_URL, event_types: ['message.received'], client_id: 'well-known' };
  const first = await as<{ webhook_id: string; secret: string }>(one, 'POST', '/v0/webhooks', body);
  const second = await as<{ webhook_id: string; secret: string }>(two, 'POST', '/v0/webhooks', body);
  const owners = await as<{ webhook_id: string; secret: string }>(svc.ownerToken, 'POST', '/v0/webhooks', body);
  t.equal(new Set([first.body.webhook_id, second.body.webhook_id, owners.body.webhook_id]).size, 3, 'three creators, three webhooks');
  t.equal(new Set([first.body.secret, second.body.secret, owners.body.secret]).size, 3, 'and three secrets');
});

t.test('delivery of a restricted key\'s instance-wide webhook without inbox_ids carries only events of its scope', async (t) => {
  const key = (await createApiKey(svc, { permissions: WEBHOOK_ALL, inboxIds: [MINE] })).secret;
  const hook = await as<{ webhook_id: string }>(key, 'POST', '/v0/webhooks', { url: PUBLIC_URL, event_types: ['message.received'] });
  t.equal(hook.status, 200, 'no inbox_ids: every inbox the key can see');
  db.prepare('UPDATE webhooks SET url = ? WHERE webhook_id = ?').run(receiverUrl, hook.body.webhook_id);
  // The earlier tests' webhooks point at a public address: switched off, so nothing leaves loopback.
  db.prepare('UPDATE webhooks SET enabled = 0, epoch = epoch + 1 WHERE webhook_id != ?').run(hook.body.webhook_id);

  // Delivery is in log order: once the later in-scope event arrives, the earlier outside one was filtered, not delayed.
  await seedMail(db, simpleMail({ to: THEIRS, subject: 'outside-scope', messageId: '<outside@sender.example>' }), { inboxId: THEIRS });
  await seedMail(db, simpleMail({ to: MINE, subject: 'inside-scope', messageId: '<inside@sender.example>' }), { inboxId: MINE });
  const deadline = Date.now() + DELIVERY_WAIT_MS;
  while (!received.some((b) => b.includes('inside-scope')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.ok(received.some((b) => b.includes('inside-scope')), 'the in-scope event is delivered');
  t.notOk(received.some((b) => b.includes('outside-scope') || b.includes(THEIRS)), 'nothing of the inbox outside the scope');
});

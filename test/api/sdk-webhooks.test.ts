/**
 * AgentMail SDK calls that used to fail (issue 17 §2), through the official `agentmail` client
 * against a real service: webhook `clientId`, instance-wide webhooks from an inbox-scoped key,
 * `inboxes.create()` without a domain, `apiKeys.create` without a send policy, and the raw
 * download's `message_id` and `size`.
 */
import t from 'tap';
import { AgentMailClient, AgentMailError } from 'agentmail';
import type { Db } from '../../src/db/open.js';
import { startSvc, type RunningSvc } from '../helpers/svc.js';
import { openHomeDb } from '../helpers/db.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { seedMail, simpleMail } from '../helpers/mail.js';

let svc: RunningSvc;
let db: Db;
const INBOX_A = 'hooks-a@example.com';
const INBOX_B = 'hooks-b@example.com';
const URL_A = 'https://hooks.example.org/a';
const WEBHOOK_ALL = ['webhook_read', 'webhook_create', 'webhook_update', 'webhook_delete'];

t.before(async () => {
  // The local edge is the transport, so a send reaches the send-policy check.
  svc = await startSvc({ args: ['--local-edge'] });
  db = openHomeDb(svc.home);
  await createInbox(svc, INBOX_A);
  await createInbox(svc, INBOX_B);
});
t.teardown(async () => {
  db.close();
  await svc.stop();
});

const client = (apiKey: string) => new AgentMailClient({ apiKey, baseUrl: svc.url, maxRetries: 0, timeoutInSeconds: 10 });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as AgentMailError,
  );

t.test('webhooks.create with clientId: the same body returns the same webhook and secret; another body is 409 already_exists', async (t) => {
  const sdk = client((await createApiKey(svc, { permissions: WEBHOOK_ALL })).secret);
  const first = await sdk.webhooks.create({ url: URL_A, eventTypes: ['message.received'], clientId: 'hook-1' });
  t.match(first.secret, /^whsec_/);
  t.equal(first.clientId, 'hook-1');
  const again = await sdk.webhooks.create({ url: URL_A, eventTypes: ['message.received'], clientId: 'hook-1' });
  t.equal(again.webhookId, first.webhookId, 'a repeat is the same webhook');
  t.equal(again.secret, first.secret, 'and gives its creator the secret again, so a lost answer can be retried');
  const list = await sdk.webhooks.list();
  t.equal(list.webhooks.filter((w) => w.webhookId === first.webhookId).length, 1, 'one webhook, not two');

  const conflict = await failure(sdk.webhooks.create({ url: 'https://hooks.example.org/other', eventTypes: ['message.received'], clientId: 'hook-1' }));
  t.ok(conflict instanceof AgentMailError);
  t.equal(conflict!.statusCode, 409);
  t.match(conflict!.body, { code: 'already_exists', fix: /same body|new client_id/ });

  const perInbox = await sdk.inboxes.webhooks.create(INBOX_A, { url: URL_A, eventTypes: ['message.received'], clientId: 'hook-inbox' });
  t.equal((await sdk.inboxes.webhooks.create(INBOX_A, { url: URL_A, eventTypes: ['message.received'], clientId: 'hook-inbox' })).webhookId, perInbox.webhookId, 'the inbox form too');
  t.equal((await failure(sdk.inboxes.webhooks.create(INBOX_B, { url: URL_A, eventTypes: ['message.received'], clientId: 'hook-inbox' })))!.statusCode, 409, 'the same client_id on another inbox is another body');
});

t.test('a client_id is private to its creator: another key reusing it gets a new webhook, never the first one or its secret', async (t) => {
  const one = client((await createApiKey(svc, { permissions: WEBHOOK_ALL })).secret);
  const two = client((await createApiKey(svc, { permissions: WEBHOOK_ALL })).secret);
  const mine = await one.webhooks.create({ url: URL_A, eventTypes: ['message.received'], clientId: 'shared-name' });
  const theirs = await two.webhooks.create({ url: URL_A, eventTypes: ['message.received'], clientId: 'shared-name' });
  t.not(theirs.webhookId, mine.webhookId);
  t.not(theirs.secret, mine.secret);
});

t.test('reads never show the secret: an empty string where the SDK type requires the field', async (t) => {
  const sdk = client((await createApiKey(svc, { permissions: WEBHOOK_ALL })).secret);
  const created = await sdk.webhooks.create({ url: URL_A, eventTypes: ['message.received'] });
  t.equal((await sdk.webhooks.get(created.webhookId)).secret, '');
  t.ok((await sdk.webhooks.list()).webhooks.every((w) => w.secret === ''));
});

t.test('an inbox-scoped key uses instance-wide webhooks.create within its scope; an inbox outside it is 404', async (t) => {
  const scoped = client((await createApiKey(svc, { permissions: WEBHOOK_ALL, inboxIds: [INBOX_A] })).secret);
  const hook = await scoped.webhooks.create({ url: URL_A, eventTypes: ['message.received'], inboxIds: [INBOX_A] });
  t.same(hook.inboxIds, [INBOX_A]);
  t.equal((await scoped.webhooks.get(hook.webhookId)).webhookId, hook.webhookId, 'and reads it back on the instance-wide route');

  const outside = await failure(scoped.webhooks.create({ url: URL_A, eventTypes: ['message.received'], inboxIds: [INBOX_A, INBOX_B] }));
  t.equal(outside!.statusCode, 404, 'an out-of-scope inbox is not found (scope before permission)');
  t.match(outside!.body, { code: 'not_found' });
  const widen = await failure(scoped.webhooks.update(hook.webhookId, { addInboxIds: [INBOX_B] }));
  t.equal(widen!.statusCode, 404, 'nor can a patch add one');

  const ownerHook = await client(svc.ownerToken).webhooks.create({ url: URL_A, eventTypes: ['message.received'] });
  t.notOk((await scoped.webhooks.list()).webhooks.some((w) => w.webhookId === ownerHook.webhookId), 'it lists only its own webhooks');
  t.equal((await failure(scoped.webhooks.get(ownerHook.webhookId)))!.statusCode, 404);
});

t.test('inboxes.create() with no domain: the local default example.test, then the first verified domain', async (t) => {
  const owner = client(svc.ownerToken);
  const quick = await owner.inboxes.create({});
  t.match(quick.inboxId, /^[0-9a-f]{16}@example\.test$/, 'a random username on example.test while no domain is verified');
  t.equal(quick.podId, 'default', 'every inbox carries the single pod id');

  // SQL: a domain becomes verified only when its DNS records check out; these stand for two that did.
  const now = new Date().toISOString();
  db.prepare("INSERT INTO domains (domain_id, domain, status, verified_at, created_at, updated_at) VALUES ('d-2', 'second.example.net', 'verified', ?, ?, ?)").run('2026-02-01T00:00:00.000Z', now, now);
  db.prepare("INSERT INTO domains (domain_id, domain, status, verified_at, created_at, updated_at) VALUES ('d-1', 'first.example.net', 'verified', ?, ?, ?)").run('2026-01-01T00:00:00.000Z', now, now);
  db.prepare("INSERT INTO domains (domain_id, domain, status, created_at, updated_at) VALUES ('d-0', 'pending.example.net', 'pending', ?, ?)").run(now, now);
  const named = await owner.inboxes.create({ username: 'quickstart' });
  t.equal(named.inboxId, 'quickstart@first.example.net', 'the domain verified first');
});

t.test('apiKeys.create without send_policy or permissions: approval and every permission', async (t) => {
  const created = (await client(svc.ownerToken).apiKeys.create({ name: 'sdk-default' })) as { apiKeyId: string; apiKey: string };
  const stored = db.prepare('SELECT send_policy, permissions FROM api_keys WHERE api_key_id = ?').get(created.apiKeyId) as { send_policy: string; permissions: string };
  t.equal(stored.send_policy, 'approval', 'nothing is sent without the owner');
  t.ok((JSON.parse(stored.permissions) as string[]).includes('message_send'));
  const agent = client(created.apiKey);
  const inbox = await agent.inboxes.create({ username: 'defaults', domain: 'example.com' });
  const refused = await failure(agent.inboxes.messages.send(inbox.inboxId, { to: ['someone@example.org'], subject: 'Hi', text: 'Hello' }));
  t.equal(refused!.statusCode, 403);
  t.match(refused!.body, { code: 'approval_required' });
});

t.test('messages.getRaw answers the SDK fields message_id and size', async (t) => {
  const seeded = await seedMail(db, simpleMail({ to: INBOX_A, messageId: '<raw-1@example.org>', subject: 'Raw', body: 'Raw body' }), { inboxId: INBOX_A });
  const raw = await client(svc.ownerToken).inboxes.messages.getRaw(INBOX_A, '<raw-1@example.org>');
  t.equal(raw.messageId, '<raw-1@example.org>');
  const size = db.prepare('SELECT size FROM messages WHERE message_id = ?').pluck().get('<raw-1@example.org>') as number;
  t.equal(raw.size, size);
  const res = await fetch(raw.downloadUrl);
  t.equal(res.status, 200);
  t.equal((await res.arrayBuffer()).byteLength, raw.size, 'size is the byte length of the download');
  t.ok(seeded.threadId);
});

t.test('webhooks.create({ podIds }) and update({ addPodIds, removePodIds }): a home webhook filtered by pods', async (t) => {
  const sdk = client(svc.ownerToken);
  const pod = await sdk.pods.create({ name: 'hooked' });
  const hook = await sdk.webhooks.create({ url: URL_A, eventTypes: ['message.received'], podIds: [pod.podId, pod.podId] });
  t.same(hook.podIds, [pod.podId], 'the filter, deduplicated, parsed by the SDK');
  t.same((await sdk.webhooks.get(hook.webhookId)).podIds, [pod.podId], 'kept');
  const widened = await sdk.webhooks.update(hook.webhookId, { addPodIds: ['default'], removePodIds: [pod.podId] });
  t.same(widened.podIds, ['default'], 'add and remove in one update');
  const emptied = await sdk.webhooks.update(hook.webhookId, { removePodIds: ['default'] });
  t.same(emptied.podIds, [], 'an empty filter stays empty (it hears nothing), it does not fall back to every pod');
  const unknown = await failure(sdk.webhooks.create({ url: URL_A, eventTypes: ['message.received'], podIds: ['no-such-pod'] }));
  t.equal(unknown?.statusCode, 404, 'a pod that does not exist: 404');
  t.match(unknown?.body, { code: 'not_found' });
  const plain = await sdk.webhooks.create({ url: URL_A, eventTypes: ['message.received'] });
  t.equal(plain.podIds, undefined, 'no filter: every pod, and no podIds');
  const onInbox = await sdk.inboxes.webhooks.create(INBOX_A, { url: URL_A, eventTypes: ['message.received'] });
  const refused = await failure(sdk.webhooks.update(onInbox.webhookId, { addPodIds: ['default'] }));
  t.equal(refused?.statusCode, 400, 'an inbox webhook has no pod filter');
  t.match(refused?.body, { code: 'validation_error', message: /pod_ids/ });
});

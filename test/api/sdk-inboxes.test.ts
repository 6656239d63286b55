/** The official AgentMail SDK as a real client of the inbox and API key routes (ARCHITECTURE §1 compatibility goal). */
import t from 'tap';
import { AgentMailClient, AgentMailError } from 'agentmail';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';

let svc: RunningSvc;
t.before(async () => {
  svc = await startSvc();
});
t.teardown(() => svc.stop());

/** The SDK joins its own `/v0/...` paths onto baseUrl, so the base is the service origin. */
const client = (apiKey: string) => new AgentMailClient({ apiKey, baseUrl: svc.url, maxRetries: 0, timeoutInSeconds: 10 });

async function agentKey(permissions: Record<string, boolean>): Promise<string> {
  const res = await api<{ api_key: string }>(svc.url, 'POST', '/v0/api-keys', { token: svc.ownerToken, body: { name: 'sdk', permissions, send_policy: 'direct' } });
  if (res.status !== 200) throw new Error(`create key: ${res.status} ${res.text}`);
  return res.body.api_key;
}

t.test('an agent key drives create, list, get, search, update and delete through the SDK', async (t) => {
  const sdk = client(await agentKey({ inbox_read: true, inbox_create: true, inbox_update: true, inbox_delete: true }));

  const created = await sdk.inboxes.create({ username: 'sdk-agent', domain: 'sdk.example.com', displayName: 'SDK Agent', clientId: 'sdk-1', metadata: { team: 'ops', level: 3 } });
  t.equal(created.inboxId, 'sdk-agent@sdk.example.com');
  t.equal(created.email, 'sdk-agent@sdk.example.com');
  t.equal(created.displayName, 'SDK Agent');
  t.equal(created.clientId, 'sdk-1');
  t.same(created.metadata, { team: 'ops', level: 3 });
  t.ok(created.createdAt instanceof Date && !Number.isNaN(created.createdAt.getTime()), 'created_at parses as a date');
  t.ok(created.updatedAt instanceof Date && !Number.isNaN(created.updatedAt.getTime()));

  const repeated = await sdk.inboxes.create({ username: 'sdk-agent', domain: 'sdk.example.com', clientId: 'sdk-1' });
  t.equal(repeated.inboxId, created.inboxId, 'client_id makes the create idempotent for SDK callers too');

  const random = await sdk.inboxes.create({ domain: 'sdk.example.com' });
  t.match(random.inboxId, /^[0-9a-f]{16}@sdk\.example\.com$/);

  const list = await sdk.inboxes.list({ limit: 1 });
  t.equal(list.count, 1);
  t.equal(list.limit, 1);
  t.ok(list.nextPageToken, 'a next page token when more exist');
  const rest = await sdk.inboxes.list({ limit: 10, pageToken: list.nextPageToken });
  t.same([...list.inboxes, ...rest.inboxes].map((i) => i.inboxId).sort(), [created.inboxId, random.inboxId].sort(), 'the SDK pages through every inbox');

  const fetched = await sdk.inboxes.get(created.inboxId);
  t.equal(fetched.inboxId, created.inboxId, 'get with the address as the path id');

  const found = await sdk.inboxes.search({ q: 'SDK Agent' });
  t.same(found.inboxes.map((i) => i.inboxId), [created.inboxId]);

  const updated = await sdk.inboxes.update(created.inboxId, { displayName: 'Renamed', metadata: { level: null, region: 'eu' } });
  t.equal(updated.displayName, 'Renamed');
  t.same(updated.metadata, { team: 'ops', region: 'eu' }, 'metadata merges and null removes, as in AgentMail');

  await sdk.inboxes.delete(random.inboxId);
  const error = await sdk.inboxes.get(random.inboxId).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(error instanceof AgentMailError, 'a deleted inbox raises the SDK error type');
  t.equal((error as AgentMailError).statusCode, 404);
  t.match((error as AgentMailError).body, { code: 'not_found' });
});

t.test('SDK errors carry the service error body: missing permission and validation', async (t) => {
  const readOnly = client(await agentKey({ inbox_read: true }));
  const denied = await readOnly.inboxes.create({ username: 'nope', domain: 'sdk.example.com' }).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(denied instanceof AgentMailError);
  t.equal((denied as AgentMailError).statusCode, 403);
  t.match((denied as AgentMailError).body, { code: 'missing_permission' });

  const writer = client(await agentKey({ inbox_create: true }));
  const invalid = await writer.inboxes.create({ username: 'svc-selftest', domain: 'sdk.example.com' }).then(
    () => null,
    (e: unknown) => e,
  );
  t.equal((invalid as AgentMailError).statusCode, 400);
  t.match((invalid as AgentMailError).body, { code: 'validation_error' });
});

t.test('the owner token lists and reads API keys through the SDK', async (t) => {
  await agentKey({ inbox_read: true });
  const owner = client(svc.ownerToken);
  const keys = await owner.apiKeys.list();
  t.ok(keys.count >= 1);
  const first = keys.apiKeys[0] as { apiKeyId: string; prefix: string; permissions?: Record<string, boolean> };
  t.match(first.prefix, /^svc_key_/);
  t.ok(first.permissions, 'permissions come back in the AgentMail object form');
  const one = (await owner.apiKeys.get(first.apiKeyId)) as { apiKeyId: string };
  t.equal(one.apiKeyId, first.apiKeyId);
});

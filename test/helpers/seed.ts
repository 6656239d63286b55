/**
 * Seeding a running service through its own API, the way an owner would: inboxes and API keys,
 * and the changes the owner can make to a key afterwards. Tests against a running service seed
 * here rather than with SQL (test/helpers/db.ts), so the seeded state is exactly what the routes
 * store and passes the same checks (a key's scope names existing inboxes, `expires_at` lies ahead).
 */
import { api, type RunningSvc } from './svc.js';

/** Creates the inbox for `address` as the owner; returns its id (the lower-cased address). */
export async function createInbox(svc: RunningSvc, address: string): Promise<string> {
  const [username, domain] = address.split('@');
  const res = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain } });
  if (res.status !== 200) throw new Error(`create inbox ${address}: ${res.status} ${res.text}`);
  return res.body.inbox_id;
}

export interface ApiKeyOptions {
  permissions: string[];
  /** null or omitted: every inbox. Each must exist (the API refuses a scope naming an unknown inbox). */
  inboxIds?: string[] | null;
  sendPolicy?: 'direct' | 'approval' | 'guarded' | 'read_only';
  name?: string;
  /** RFC 3339, in the future (the API refuses a past one); omitted: the key does not expire. */
  expiresAt?: string;
}

/** Creates an API key as the owner; returns its id and the secret (shown once). */
export async function createApiKey(svc: RunningSvc, opts: ApiKeyOptions): Promise<{ id: string; secret: string }> {
  const res = await api<{ api_key_id: string; api_key: string }>(svc.url, 'POST', '/v0/api-keys', {
    token: svc.ownerToken,
    body: {
      name: opts.name ?? 'test key',
      permissions: opts.permissions,
      send_policy: opts.sendPolicy ?? 'direct',
      ...(opts.inboxIds ? { inbox_ids: opts.inboxIds } : {}),
      ...(opts.expiresAt ? { expires_at: opts.expiresAt } : {}),
    },
  });
  if (res.status !== 200) throw new Error(`create API key: ${res.status} ${res.text}`);
  return { id: res.body.api_key_id, secret: res.body.api_key };
}

/** What the owner may change on a key (spec §2.9): permissions are replaced, not merged. */
export interface ApiKeyPatch {
  permissions?: string[];
  sendPolicy?: 'direct' | 'approval' | 'guarded' | 'read_only';
  name?: string | null;
}

/** Changes a key as the owner with PATCH /v0/api-keys/{id}; applies to the key's next request. */
export async function updateApiKey(svc: RunningSvc, apiKeyId: string, patch: ApiKeyPatch): Promise<void> {
  const body = {
    ...(patch.permissions ? { permissions: patch.permissions } : {}),
    ...(patch.sendPolicy ? { send_policy: patch.sendPolicy } : {}),
    ...(patch.name !== undefined ? { name: patch.name } : {}),
  };
  const res = await api(svc.url, 'PATCH', `/v0/api-keys/${encodeURIComponent(apiKeyId)}`, { token: svc.ownerToken, body });
  if (res.status !== 200) throw new Error(`update API key ${apiKeyId}: ${res.status} ${res.text}`);
}

/** Revokes a key as the owner with DELETE /v0/api-keys/{id}. */
export async function deleteApiKey(svc: RunningSvc, apiKeyId: string): Promise<void> {
  const res = await api(svc.url, 'DELETE', `/v0/api-keys/${encodeURIComponent(apiKeyId)}`, { token: svc.ownerToken });
  if (res.status >= 300) throw new Error(`delete API key ${apiKeyId}: ${res.status} ${res.text}`);
}

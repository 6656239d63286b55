/**
 * Seeding a running service through its own API, the way an owner would: inboxes and API keys.
 * Tests seed here rather than with SQL (test/helpers/db.ts), so the seeded state is exactly what
 * the routes store and every change is in the event log like any other.
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
  /** null or omitted: every inbox. */
  inboxIds?: string[] | null;
  sendPolicy?: 'direct' | 'approval' | 'read_only';
  name?: string;
}

/** Creates an API key as the owner; returns its id and the secret (shown once). */
export async function createApiKey(svc: RunningSvc, opts: ApiKeyOptions): Promise<{ id: string; secret: string }> {
  const res = await api<{ api_key_id: string; api_key: string }>(svc.url, 'POST', '/v0/api-keys', {
    token: svc.ownerToken,
    body: { name: opts.name ?? 'test key', permissions: opts.permissions, send_policy: opts.sendPolicy ?? 'direct', ...(opts.inboxIds ? { inbox_ids: opts.inboxIds } : {}) },
  });
  if (res.status !== 200) throw new Error(`create API key: ${res.status} ${res.text}`);
  return { id: res.body.api_key_id, secret: res.body.api_key };
}

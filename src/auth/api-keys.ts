/**
 * The API key store (spec §2.9, §4.11), the one module that touches the `api_keys` table: the
 * secret is shown once and kept only as its SHA-256; scope, permissions and send policy are read
 * by `resolveBearer` on every request, so changes and revocation take effect at once.
 *
 * Every operation takes `inboxId`: null for `/api-keys...`, or the path's inbox for
 * `/inboxes/{inbox_id}/api-keys...`, which must exist (404 `inbox` first) and is the key's scope;
 * and `podId`: null, or the pod of `/pods/{pod_id}/...` (docs/pods.md), which is the key's pod on
 * create and a filter on every other operation: another pod's key or inbox is not found.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { uuidv7 } from '../db/ids.js';
import { ApiError, notFound } from '../core/errors.js';
import type { Principal, SendPolicy } from './principal.js';
import { newSecret, sha256Hex } from './secrets.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor, type PageBinding } from '../core/pagination.js';
import { normalizeInboxId } from './access.js';
import { inboxExists, podExists } from './inbox-lookup.js';
import { PERMISSIONS, permissionObject, permissionSet, storedPermissions } from './permissions.js';
import type { ApiKeyResponse, CreateApiKeyBody, CreateInboxApiKeyBody, CreatedApiKeyResponse, UpdateApiKeyBody } from './api-key-schemas.js';

export type { ApiKeyResponse, CreateApiKeyBody, CreateInboxApiKeyBody, CreatedApiKeyResponse, UpdateApiKeyBody } from './api-key-schemas.js';

/** What every API key secret starts with, so `resolveBearer` knows which store to ask. */
export const API_KEY_PREFIX = 'svc_key_';

/** Characters of the secret kept for display: `svc_key_` plus four. */
export const PREFIX_LENGTH = 12;

/**
 * The send policy of a key created without one (the AgentMail SDK's `apiKeys.create` has no such
 * field). `approval` is the cautious choice: the key can draft and ask, but nothing leaves the
 * home until the owner approves it; `direct` has to be asked for by name.
 */
export const DEFAULT_SEND_POLICY: SendPolicy = 'approval';
interface ApiKeyRow {
  api_key_id: string;
  name: string | null;
  prefix: string;
  permissions: string;
  send_policy: SendPolicy;
  inbox_ids: string | null;
  expires_at: string | null;
  created_at: string;
  updated_at: string;
  used_at: string | null;
  pod_id: string | null;
}

/** Everything but the hash: no query here ever reads `key_hash` back. */
const COLUMNS = 'api_key_id, name, prefix, permissions, send_policy, inbox_ids, expires_at, created_at, updated_at, used_at, pod_id';

function apiKeyResponse(row: ApiKeyRow): ApiKeyResponse {
  const inboxIds = row.inbox_ids === null ? null : (JSON.parse(row.inbox_ids) as string[]);
  return {
    type: 'bearer',
    api_key_id: row.api_key_id,
    ...(row.pod_id === null ? {} : { pod_id: row.pod_id }),
    name: row.name,
    prefix: row.prefix,
    permissions: permissionObject(JSON.parse(row.permissions) as string[]),
    send_policy: row.send_policy,
    inbox_id: inboxIds?.length === 1 ? inboxIds[0] : null,
    inbox_ids: inboxIds,
    expires_at: row.expires_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    used_at: row.used_at,
  };
}

/** Which keys a route reaches: the path's inbox (inbox form) and the path's pod (pod form), each null when absent. */
export interface KeyPlace {
  inboxId: string | null;
  podId: string | null;
}

/** The path's inbox on the inbox form of a route, normalized; it must exist, in the path's pod if any (404 otherwise). */
function existingInbox(db: Db, place: KeyPlace): string | null {
  if (place.inboxId === null) return null;
  const id = normalizeInboxId(place.inboxId);
  if (!inboxExists(db, id, place.podId)) throw notFound('inbox');
  return id;
}

/** Restricts key lookups to keys whose scope names `inboxId` (the inbox form of the routes). */
const SCOPED = 'inbox_ids IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(api_keys.inbox_ids) WHERE value = ?)';

/** Restricts key lookups to the keys of one pod (the pod form of the routes). */
const IN_POD = 'pod_id IS NOT NULL AND pod_id = ?';

function keyRow(db: Db, apiKeyId: string, inboxId: string | null, podId: string | null): ApiKeyRow {
  const where = ['api_key_id = ?'];
  const params = [apiKeyId];
  if (inboxId !== null) {
    where.push(SCOPED);
    params.push(inboxId);
  }
  if (podId !== null) {
    where.push(IN_POD);
    params.push(podId);
  }
  const row = db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE ${where.join(' AND ')}`).get(...params) as ApiKeyRow | undefined;
  if (!row) throw notFound('API key');
  return row;
}

/** The scope as stored: null for every inbox, else the distinct existing inbox ids. */
function resolveScope(db: Db, body: CreateApiKeyBody, podId: string | null): string[] | null {
  if (body.inbox_id != null && body.inbox_ids != null) {
    throw new ApiError('validation_error', 'Send either `inbox_id` or `inbox_ids`, not both.', { fix: 'Put every inbox in `inbox_ids`.' });
  }
  const requested = body.inbox_ids ?? (body.inbox_id != null ? [body.inbox_id] : null);
  if (requested === null) return null;
  const ids = [...new Set(requested.map(normalizeInboxId))];
  for (const id of ids) {
    if (!inboxExists(db, id, podId)) {
      throw new ApiError('validation_error', `The inbox \`${id}\` does not exist.`, { fix: `Create \`${id}\` with POST /v0/inboxes first, or remove it from the key's scope.` });
    }
  }
  return ids;
}

function futureExpiry(expiresAt: string | null | undefined): string | null {
  if (expiresAt == null) return null;
  const time = Date.parse(expiresAt);
  if (!Number.isFinite(time) || time <= Date.now()) {
    throw new ApiError('validation_error', '`expires_at` must be in the future.', { fix: 'Send an RFC 3339 timestamp after now, or omit it for a key that does not expire.' });
  }
  return new Date(time).toISOString();
}

/**
 * Creates a key; on the inbox form the path's inbox is the whole scope. Returns the response
 * with the secret, the only time it is ever shown.
 */
export function createApiKey(db: Db, body: CreateApiKeyBody | CreateInboxApiKeyBody, place: KeyPlace): CreatedApiKeyResponse {
  const fixedInbox = existingInbox(db, place);
  // Omitted permissions grant every one, as AgentMail documents; the approval default still holds every send.
  const permissions = body.permissions === undefined ? new Set(PERMISSIONS) : permissionSet(body.permissions);
  const expiresAt = futureExpiry(body.expires_at);
  const scope = fixedInbox !== null ? [fixedInbox] : resolveScope(db, body as CreateApiKeyBody, place.podId);
  // A key made under a pod is that pod's: checked inside the caller's transaction, so never a deleted pod's.
  if (place.podId !== null && !podExists(db, place.podId)) throw notFound('pod');
  const secret = newSecret(API_KEY_PREFIX);
  const id = uuidv7();
  const now = new Date().toISOString();
  db.prepare(
    'INSERT INTO api_keys (api_key_id, name, prefix, key_hash, permissions, send_policy, inbox_ids, expires_at, created_at, updated_at, pod_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(id, body.name ?? null, secret.slice(0, PREFIX_LENGTH), sha256Hex(secret), storedPermissions(permissions), body.send_policy ?? DEFAULT_SEND_POLICY, scope === null ? null : JSON.stringify(scope), expiresAt, now, now, place.podId);
  return { ...apiKeyResponse(keyRow(db, id, null, null)), api_key: secret };
}

export function getApiKey(db: Db, apiKeyId: string, place: KeyPlace): ApiKeyResponse {
  return apiKeyResponse(keyRow(db, apiKeyId, existingInbox(db, place), place.podId));
}

/** Only `name`, `permissions` and `send_policy` change (spec §2.9); the schema rejects the rest. */
export function updateApiKey(db: Db, apiKeyId: string, place: KeyPlace, patch: UpdateApiKeyBody): ApiKeyResponse {
  const row = keyRow(db, apiKeyId, existingInbox(db, place), place.podId);
  const name = patch.name === undefined ? row.name : patch.name;
  const permissions = patch.permissions === undefined ? row.permissions : storedPermissions(permissionSet(patch.permissions));
  const sendPolicy = patch.send_policy ?? row.send_policy;
  db.prepare('UPDATE api_keys SET name = ?, permissions = ?, send_policy = ?, updated_at = ? WHERE api_key_id = ?').run(name, permissions, sendPolicy, new Date().toISOString(), row.api_key_id);
  return apiKeyResponse(keyRow(db, row.api_key_id, null, null));
}

/** Revokes at once: the next request with the key finds no row and gets 401. */
export function deleteApiKey(db: Db, apiKeyId: string, place: KeyPlace): void {
  const row = keyRow(db, apiKeyId, existingInbox(db, place), place.podId);
  db.prepare('DELETE FROM api_keys WHERE api_key_id = ?').run(row.api_key_id);
}

export interface ApiKeyPageQuery {
  limit?: number;
  page_token?: string;
  ascending?: boolean;
}

/** One page of keys, newest first unless `ascending`; on the inbox form, only keys scoped to that inbox. */
export function listApiKeys(db: Db, p: Principal, query: ApiKeyPageQuery, place: KeyPlace): Record<string, unknown> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const ascending = query.ascending ?? false;
  const inbox = existingInbox(db, place);
  const binding: PageBinding = { route: 'api_keys.list', filters: { ascending, inbox_id: inbox, pod_id: place.podId }, principal: p };
  const where: string[] = ['1 = 1'];
  const params: (string | number)[] = [];
  if (inbox !== null) {
    where.push(SCOPED);
    params.push(inbox);
  }
  if (place.podId !== null) {
    where.push(IN_POD);
    params.push(place.podId);
  }
  if (query.page_token !== undefined) {
    const cursor = readCursor(db, query.page_token, binding, 2);
    where.push(`(created_at, api_key_id) ${ascending ? '>' : '<'} (?, ?)`);
    params.push(...cursor);
  }
  const order = ascending ? 'ASC' : 'DESC';
  const rows = db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE ${where.join(' AND ')} ORDER BY created_at ${order}, api_key_id ${order} LIMIT ?`).all(...params, limit + 1) as ApiKeyRow[];
  return pageFromRows(db, binding, 'api_keys', rows, limit, (r) => [r.created_at, r.api_key_id], apiKeyResponse);
}

/** What authentication needs of a key: its identity, grants and expiry (never the hash). */
export interface ApiKeyCredential {
  api_key_id: string;
  permissions: string;
  send_policy: SendPolicy;
  inbox_ids: string | null;
  expires_at: string | null;
  /** The pod the key was created under; NULL for every pod. */
  pod_id: string | null;
}

const CREDENTIAL_COLUMNS = 'api_key_id, permissions, send_policy, inbox_ids, expires_at, pod_id';

/** The key whose secret hashes to `keyHash`, if any (expiry is the caller's to judge). */
export function apiKeyCredentialByHash(db: Db, keyHash: string): ApiKeyCredential | undefined {
  return prepared(db, `SELECT ${CREDENTIAL_COLUMNS} FROM api_keys WHERE key_hash = ?`).get(keyHash) as ApiKeyCredential | undefined;
}

/** The key as it stands now, by id: how a principal is re-checked later (streams, download URLs). */
export function apiKeyCredentialById(db: Db, apiKeyId: string): ApiKeyCredential | undefined {
  return prepared(db, `SELECT ${CREDENTIAL_COLUMNS} FROM api_keys WHERE api_key_id = ?`).get(apiKeyId) as ApiKeyCredential | undefined;
}

/** Used-at is written at most this often per key, so authenticated reads stay cheap. */
export const USED_AT_RESOLUTION_MS = 60 * 1000;

/**
 * Records that a key was used. For the authentication path (`resolveBearer`) to call; writes
 * only when the stored time is older than USED_AT_RESOLUTION_MS.
 */
/** When this process last wrote used_at per key, so most requests skip the statement entirely. */
const lastUseWrite = new Map<string, number>();

export function markApiKeyUsed(db: Db, apiKeyId: string, now = new Date()): void {
  const last = lastUseWrite.get(apiKeyId);
  if (last !== undefined && now.getTime() - last < USED_AT_RESOLUTION_MS) return;
  lastUseWrite.set(apiKeyId, now.getTime());
  const threshold = new Date(now.getTime() - USED_AT_RESOLUTION_MS).toISOString();
  prepared(db, 'UPDATE api_keys SET used_at = ? WHERE api_key_id = ? AND (used_at IS NULL OR used_at < ?)').run(now.toISOString(), apiKeyId, threshold);
}

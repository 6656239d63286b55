/**
 * The inbox store (spec §2.1, §4.3): address rules, create with `client_id` idempotency, paged
 * list and search within the caller's scope, patch with metadata merge, and permanent delete of
 * an inbox with everything in it. Access checks and transactions are the caller's
 * (src/requests/inboxes.ts): the writes here run inside its transaction. The request and
 * response schemas are in ./inbox-schemas.ts, the field limits in ./inbox-limits.ts.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/open.js';
import { unindexMessages } from './search-index.js';
import { ApiError } from '../core/errors.js';
import { scopeFilter, type InboxRow } from '../auth/access.js';
import type { Principal } from '../auth/principal.js';
import { bumpSearchGeneration, DEFAULT_LIMIT, pageFromRows, readCursor, type PageBinding } from '../core/pagination.js';
import { redactMessageEvents } from '../events/log.js';
import { DOMAIN_MAX, METADATA_MAX_BYTES, METADATA_MAX_KEYS, USERNAME_MAX } from './inbox-limits.js';
import type { CreateInboxBody, InboxResponse, MetadataObject, UpdateInboxBody } from './inbox-schemas.js';

export { CLIENT_ID_MAX, DISPLAY_NAME_MAX, DOMAIN_MAX, METADATA_KEY_MAX, METADATA_MAX_BYTES, METADATA_MAX_KEYS, METADATA_STRING_MAX, USERNAME_MAX } from './inbox-limits.js';
export type { CreateInboxBody, InboxResponse, UpdateInboxBody } from './inbox-schemas.js';

/** Reserved on every domain for the domain self-test (spec §2.1). */
export const RESERVED_USERNAME = 'svc-selftest';
/**
 * The domain of an inbox created without one when no registered domain is verified yet: the
 * README's walkthrough domain. `.test` is reserved (RFC 6761), so it can never be someone
 * else's real domain, and the local edge routes it like any inbox domain.
 */
export const LOCAL_DEFAULT_DOMAIN = 'example.test';
/** The home is one AgentMail "organization" (the SDK's list entries require `organization_id`). */
export const SINGLE_ORGANIZATION_ID = 'default';

export function inboxResponse(row: InboxRow): InboxResponse {
  return {
    pod_id: row.pod_id,
    inbox_id: row.inbox_id,
    email: row.inbox_id,
    username: row.username,
    domain: row.domain,
    display_name: row.display_name,
    status: row.status,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as MetadataObject),
    client_id: row.client_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** A lower-cased DNS host name with at least two labels; IDNs in their xn-- form. */
function normalizeDomain(raw: string): string {
  const domain = raw.toLowerCase();
  const labels = domain.split('.');
  if (domain.length > DOMAIN_MAX || labels.length < 2 || !labels.every((l) => DNS_LABEL.test(l)) || /^[0-9]+$/.test(labels[labels.length - 1])) {
    throw invalid(`\`${raw}\` is not a valid domain name.`, 'Use a registered host name such as `agents.example.com`: letters, digits and hyphens in dot-separated labels; internationalized names in their xn-- form.');
  }
  return domain;
}

/** Dot-atom local part: letters, digits, `.`, `_`, `-`, `+`; no leading, trailing or doubled dot. */
const USERNAME = /^[a-z0-9_+-]+(?:\.[a-z0-9_+-]+)*$/;

function normalizeUsername(raw: string): string {
  const username = raw.toLowerCase();
  if (username.length > USERNAME_MAX || !USERNAME.test(username)) {
    throw invalid(`\`${raw}\` is not a valid username.`, `Use up to ${USERNAME_MAX} letters, digits, \`.\`, \`_\`, \`-\` or \`+\`, not starting or ending with a dot and without two dots in a row.`);
  }
  if (username === RESERVED_USERNAME) {
    throw invalid(`The address \`${RESERVED_USERNAME}\` is reserved on every domain for domain verification.`, 'Choose another username.');
  }
  return username;
}

function checkMetadataSize(metadata: MetadataObject): void {
  if (Object.keys(metadata).length > METADATA_MAX_KEYS || Buffer.byteLength(JSON.stringify(metadata)) > METADATA_MAX_BYTES) {
    throw invalid(`Inbox metadata is limited to ${METADATA_MAX_KEYS} keys and ${METADATA_MAX_BYTES} bytes of JSON.`, 'Remove keys (set them to null in a patch) or shorten values.');
  }
}

const storedMetadata = (m: MetadataObject | null | undefined) => (m && Object.keys(m).length > 0 ? JSON.stringify(m) : null);

/** The first verified domain (by when it was verified), else LOCAL_DEFAULT_DOMAIN: AgentMail's `inboxes.create()` names none. */
export function defaultInboxDomain(db: Db): string {
  const verified = db.prepare("SELECT domain FROM domains WHERE status = 'verified' ORDER BY verified_at, domain LIMIT 1").pluck().get() as string | undefined;
  return verified ?? LOCAL_DEFAULT_DOMAIN;
}

const getInbox = (db: Db, inboxId: string) => db.prepare('SELECT * FROM inboxes WHERE inbox_id = ?').get(inboxId) as InboxRow | undefined;

/** Who may create at `address` is the caller's scope: outside it, the address is not found. */
export const addressOutOfScope = (address: string) =>
  new ApiError('not_found', `The address \`${address}\` is not inside this credential's inbox scope.`, {
    fix: 'Create the inbox with the owner credential, or ask the owner to add the address to this key\'s inbox scope.',
  });

/**
 * What a create asks for, read before any access check or transaction: the inbox already created
 * with the same `client_id`, or the new address (normalized; a bad domain or username is 400).
 */
export type InboxCreate = { earlier: InboxRow; address: string } | { earlier: null; address: string; username: string; domain: string };

export function planInboxCreate(db: Db, body: CreateInboxBody): InboxCreate {
  const clientId = body.client_id ?? null;
  const earlier = clientId === null ? undefined : (db.prepare('SELECT * FROM inboxes WHERE client_id = ?').get(clientId) as InboxRow | undefined);
  if (earlier) return { earlier, address: earlier.inbox_id };
  const domain = body.domain == null ? defaultInboxDomain(db) : normalizeDomain(body.domain);
  const username = body.username == null ? randomBytes(8).toString('hex') : normalizeUsername(body.username);
  return { earlier: null, address: `${username}@${domain}`, username, domain };
}

/**
 * Creates the planned inbox; runs inside the caller's transaction, after its scope (the address)
 * and `inbox_create` checks. An address already taken is `409 already_exists`.
 */
export function createInbox(db: Db, plan: Extract<InboxCreate, { earlier: null }>, body: CreateInboxBody, podId: string): InboxRow {
  if (body.metadata) checkMetadataSize(body.metadata);
  const inboxId = plan.address;
  if (getInbox(db, inboxId)) {
    throw new ApiError('already_exists', `The inbox \`${inboxId}\` already exists.`, { fix: 'Choose another username, or use the existing inbox.' });
  }
  const now = new Date().toISOString();
  db.prepare('INSERT INTO inboxes (inbox_id, username, domain, display_name, status, metadata, client_id, pod_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run(
    inboxId,
    plan.username,
    plan.domain,
    body.display_name ?? null,
    body.status ?? 'active',
    storedMetadata(body.metadata),
    body.client_id ?? null,
    podId,
    now,
    now,
  );
  return getInbox(db, inboxId)!;
}

/** Applies a patch: `display_name: null` clears it; metadata merges, null values remove keys, `metadata: null` clears all. */
export function updateInbox(db: Db, row: InboxRow, patch: UpdateInboxBody): InboxRow {
  let metadata = row.metadata;
  if (patch.metadata === null) metadata = null;
  else if (patch.metadata !== undefined) {
    const merged: MetadataObject = row.metadata === null ? {} : (JSON.parse(row.metadata) as MetadataObject);
    for (const [key, value] of Object.entries(patch.metadata)) {
      if (value === null) delete merged[key];
      else merged[key] = value;
    }
    checkMetadataSize(merged);
    metadata = storedMetadata(merged);
  }
  const displayName = patch.display_name === undefined ? row.display_name : patch.display_name;
  const status = patch.status ?? row.status;
  db.prepare('UPDATE inboxes SET display_name = ?, status = ?, metadata = ?, updated_at = ? WHERE inbox_id = ?').run(displayName, status, metadata, new Date().toISOString(), row.inbox_id);
  return getInbox(db, row.inbox_id)!;
}

/**
 * Deletes the inbox and everything in it (spec §1.9, §8 retention); runs inside the caller's
 * transaction, so all of it commits or none does: search rows, redacted events, list entries, then the inbox row, whose foreign keys cascade to threads,
 * messages, labels, attachments and raw MIME. Keys scoped to it lose it from their scope, so a
 * later inbox with the same address is not silently shared with them; a key left with no inbox
 * is revoked, since it could reach nothing.
 */
export function deleteInbox(db: Db, inboxId: string): void {
  const messageRows = db.prepare('SELECT id FROM messages WHERE inbox_id = ?').pluck().all(inboxId) as number[];
  for (const rowid of messageRows) redactMessageEvents(db, rowid);
  unindexMessages(db, messageRows);
  db.prepare('DELETE FROM list_entries WHERE inbox_id = ?').run(inboxId);
  const scoped = db
    .prepare('SELECT api_key_id, inbox_ids FROM api_keys WHERE inbox_ids IS NOT NULL AND EXISTS (SELECT 1 FROM json_each(api_keys.inbox_ids) WHERE value = ?)')
    .all(inboxId) as { api_key_id: string; inbox_ids: string }[];
  const now = new Date().toISOString();
  for (const key of scoped) {
    const remaining = (JSON.parse(key.inbox_ids) as string[]).filter((id) => id !== inboxId);
    if (remaining.length === 0) db.prepare('DELETE FROM api_keys WHERE api_key_id = ?').run(key.api_key_id);
    else db.prepare('UPDATE api_keys SET inbox_ids = ?, updated_at = ? WHERE api_key_id = ?').run(JSON.stringify(remaining), now, key.api_key_id);
  }
  db.prepare('DELETE FROM inboxes WHERE inbox_id = ?').run(inboxId);
  bumpSearchGeneration(db);
}

export interface InboxPageQuery {
  limit?: number;
  page_token?: string;
  ascending?: boolean;
}

/**
 * One page of the caller's inboxes, newest first unless `ascending`, optionally filtered by a
 * case-insensitive substring of the address or display name (`q`, the search route).
 */
export function listInboxes(db: Db, p: Principal, query: InboxPageQuery, q?: string): Record<string, unknown> {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const ascending = query.ascending ?? false;
  const needle = q?.toLowerCase();
  const binding: PageBinding = { route: needle === undefined ? 'inboxes.list' : 'inboxes.search', filters: { ascending, q: needle }, principal: p };

  const scope = scopeFilter(p, 'inbox_id');
  const where = [scope.sql];
  const params: (string | number)[] = [...scope.params];
  if (needle !== undefined) {
    where.push("(instr(inbox_id, ?) > 0 OR instr(lower(coalesce(display_name, '')), ?) > 0)");
    params.push(needle, needle);
  }
  if (query.page_token !== undefined) {
    const cursor = readCursor(db, query.page_token, binding, 2);
    where.push(`(created_at, inbox_id) ${ascending ? '>' : '<'} (?, ?)`);
    params.push(...cursor);
  }
  const order = ascending ? 'ASC' : 'DESC';
  const rows = db.prepare(`SELECT * FROM inboxes WHERE ${where.join(' AND ')} ORDER BY created_at ${order}, inbox_id ${order} LIMIT ?`).all(...params, limit + 1) as InboxRow[];
  return pageFromRows(db, binding, 'inboxes', rows, limit, (r) => [r.created_at, r.inbox_id], inboxResponse);
}

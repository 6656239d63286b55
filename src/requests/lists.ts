/**
 * A caller's requests on allow and block lists (spec §4.8), checked and answered in one place
 * so REST (src/routes/lists.ts) and MCP behave the same.
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission, requireUnrestricted } from '../auth/access.js';
import type { Permission } from '../auth/permissions.js';
import { ApiError } from '../core/errors.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor } from '../core/pagination.js';
import type { Principal } from '../auth/principal.js';
import {
  createListEntry,
  deleteListEntry,
  getListEntry,
  listListEntries,
  normalizeListEntry,
  REASON_MAX,
  type ListDirection,
  type ListEntry,
  type ListKey,
  type ListType,
} from '../mail/lists.js';

/** Longest raw entry accepted before normalization; addresses are at most 254 octets. */
export const ENTRY_INPUT_MAX = 320;

export const CreateListEntryBody = Type.Object(
  {
    entry: Type.String({ minLength: 1, maxLength: ENTRY_INPUT_MAX }),
    reason: Type.Optional(Type.Union([Type.String({ maxLength: REASON_MAX }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreateListEntryBody = Static<typeof CreateListEntryBody>;

/**
 * The list named, after the access checks in house order: without an inbox, a pod-narrowed
 * caller names its pod's list (docs/pods.md) and needs no inbox restriction within the pod, any
 * other a global list and no inbox restriction at all; an inbox list needs the inbox in scope
 * (404) before the permission (403).
 */
export function listKeyFor(db: Db, p: Principal, inboxId: string | undefined, direction: ListDirection, type: ListType, permission: Permission): ListKey {
  if (inboxId === undefined) {
    if (p.pod !== undefined) {
      if (p.pod.keyScope !== 'all') requireUnrestricted(p);
      requirePermission(p, permission);
      return { inboxId: null, podId: p.pod.podId, direction, type };
    }
    requireUnrestricted(p);
    requirePermission(p, permission);
    return { inboxId: null, podId: null, direction, type };
  }
  const inbox = inboxFor(db, p, inboxId, permission);
  return { inboxId: inbox.inbox_id, podId: inbox.pod_id, direction, type };
}

export const entryNotFound = (entry: string, key: ListKey) =>
  new ApiError('not_found', `${entry} is not on this ${key.direction} ${key.type} list.`, { fix: 'List the entries with GET on the list itself.' });

/** One page of a list, sorted by entry (ascending only, spec §4.1); the body of `GET .../lists/{direction}/{type}`. */
export function listEntriesPage(db: Db, p: Principal, inboxId: string | undefined, direction: ListDirection, type: ListType, q: { limit?: number; page_token?: string; ascending?: boolean }) {
  // The lists have one order: asking for the other is an error, not ignored.
  if (q.ascending === false) {
    throw new ApiError('validation_error', 'Allow and block lists are sorted by entry, ascending only.', { fix: 'Omit `ascending` or pass `ascending=true`.' });
  }
  const key = listKeyFor(db, p, inboxId, direction, type, 'list_entry_read');
  const limit = q.limit ?? DEFAULT_LIMIT;
  const binding = { route: 'lists', filters: { inbox_id: key.inboxId, pod_id: key.podId, direction, type }, principal: p };
  const after = q.page_token ? String(readCursor(db, q.page_token, binding, 1)[0]) : null;
  const rows = listListEntries(db, key, after, limit + 1);
  return pageFromRows(db, binding, 'entries', rows, limit, (r) => [r.entry]);
}

/** One entry of a list, by address or domain. */
export function readListEntry(db: Db, p: Principal, inboxId: string | undefined, direction: ListDirection, type: ListType, rawEntry: string): ListEntry {
  const key = listKeyFor(db, p, inboxId, direction, type, 'list_entry_read');
  const entry = normalizeListEntry(rawEntry);
  const found = getListEntry(db, key, entry);
  if (!found) throw entryNotFound(entry, key);
  return found;
}

/** Adds an entry (or returns the one already there); a blank reason is no reason. */
export function addListEntry(db: Db, p: Principal, inboxId: string | undefined, direction: ListDirection, type: ListType, body: CreateListEntryBody): ListEntry {
  const key = listKeyFor(db, p, inboxId, direction, type, 'list_entry_create');
  const reason = body.reason?.trim() || null;
  return createListEntry(db, key, normalizeListEntry(body.entry), reason);
}

export function removeListEntry(db: Db, p: Principal, inboxId: string | undefined, direction: ListDirection, type: ListType, rawEntry: string): void {
  const key = listKeyFor(db, p, inboxId, direction, type, 'list_entry_delete');
  const entry = normalizeListEntry(rawEntry);
  if (!deleteListEntry(db, key, entry)) throw entryNotFound(entry, key);
}

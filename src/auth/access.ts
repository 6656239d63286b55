/**
 * The one order of checks for agent routes (ARCHITECTURE §7): resource in scope (else 404) →
 * permission (else 403), with permissions typed as `Permission` so a misspelt name does not compile.
 * Authentication and owner-only checks happen earlier, in the gate (src/auth/gate.ts).
 */
import type { Db } from '../db/open.js';
import { inboxById, type InboxRow } from './inbox-lookup.js';
import { ApiError, missingPermission, notFound } from '../core/errors.js';
import { hasPermission, inScope, type Principal } from './principal.js';
import type { Permission } from './permissions.js';

export function requirePermission(p: Principal, ...permissions: Permission[]): void {
  for (const permission of permissions) if (!hasPermission(p, permission)) throw missingPermission(permission);
}

export const normalizeInboxId = (inboxId: string) => inboxId.trim().toLowerCase();

export type { InboxRow };

/** The inbox if it exists and is in the caller's scope (else 404), then the permission check (403). */
export function inboxFor(db: Db, p: Principal, inboxId: string, ...permissions: Permission[]): InboxRow {
  const id = normalizeInboxId(inboxId);
  const row = inScope(p, id) ? inboxById(db, id) : undefined;
  if (!row) throw notFound('inbox');
  requirePermission(p, ...permissions);
  return row;
}

/** Global (instance-wide) lists and keys need a credential without an inbox restriction. */
export function requireUnrestricted(p: Principal): void {
  if (p.inboxScope !== 'all') {
    throw new ApiError('missing_permission', 'This credential is restricted to some inboxes and cannot use instance-wide lists.', {
      fix: 'Use the inbox form of the route: /v0/inboxes/{inbox_id}/lists/...',
    });
  }
}

/** SQL fragment and parameters limiting `column` to the caller's inboxes. */
export function scopeFilter(p: Principal, column: string): { sql: string; params: string[] } {
  if (p.inboxScope === 'all') return { sql: '1 = 1', params: [] };
  // A pod may hold more inboxes than SQLite takes parameters: ask the table, within the key's own restriction.
  if (p.pod !== undefined) {
    const inPod = `${column} IN (SELECT inbox_id FROM inboxes WHERE pod_id = ?)`;
    if (p.pod.keyScope === 'all') return { sql: inPod, params: [p.pod.podId] };
    const ids = [...p.pod.keyScope];
    if (ids.length === 0) return { sql: '0 = 1', params: [] };
    return { sql: `${inPod} AND ${column} IN (${ids.map(() => '?').join(', ')})`, params: [p.pod.podId, ...ids] };
  }
  const ids = [...p.inboxScope];
  if (ids.length === 0) return { sql: '0 = 1', params: [] };
  return { sql: `${column} IN (${ids.map(() => '?').join(', ')})`, params: ids };
}

/**
 * Agent permission names (spec §2.9) and the two shapes they travel in: the AgentMail object of
 * booleans (`{inbox_read: true, ...}`, the response form) and a plain array of names (also
 * accepted on input). Stored as a JSON array of the granted names.
 */
import { ApiError } from '../core/errors.js';

export const PERMISSIONS = [
  'inbox_read',
  'inbox_create',
  'inbox_update',
  'inbox_delete',
  'message_read',
  'message_update',
  'message_delete',
  'message_send',
  'message_reply',
  'draft_read',
  'draft_create',
  'draft_update',
  'draft_delete',
  'draft_send',
  'list_entry_read',
  'list_entry_create',
  'list_entry_delete',
  'webhook_read',
  'webhook_create',
  'webhook_update',
  'webhook_delete',
  'label_spam_read',
  'label_blocked_read',
  'label_unauthenticated_read',
  'label_trash_read',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

const KNOWN: ReadonlySet<string> = new Set(PERMISSIONS);

export type { PermissionsInput } from './permission-schemas.js';
import type { PermissionsInput } from './permission-schemas.js';

function unknownPermission(name: string): ApiError {
  return new ApiError('validation_error', `Unknown permission \`${name}\`.`, {
    fix: `Use only these names: ${PERMISSIONS.join(', ')}.`,
  });
}

/**
 * The granted names. The object form is AgentMail's (docs/inboxes-and-keys.md): a `true` svc
 * name grants it; `false` and `null` grant nothing; any other name is ignored whatever its value —
 * AgentMail's own permissions (`domain_*`, `api_key_*`, `metrics_read`, `pod_*`, `provider_*`)
 * and whatever a newer SDK adds — since only the names listed here ever grant anything, so
 * ignoring a name can never widen a key. The array form is svc's own: an unknown name there is
 * a mistake and a `400`.
 */
export function permissionSet(input: PermissionsInput): Set<Permission> {
  if (!Array.isArray(input)) return new Set(PERMISSIONS.filter((name) => Object.hasOwn(input, name) && input[name] === true));
  const granted = new Set<Permission>();
  for (const name of input) {
    if (!KNOWN.has(name)) throw unknownPermission(name);
    granted.add(name as Permission);
  }
  return granted;
}

/** Every known name with whether it is granted: the form API key responses use. */
export function permissionObject(granted: Iterable<string>): Record<Permission, boolean> {
  const set = new Set(granted);
  return Object.fromEntries(PERMISSIONS.map((name) => [name, set.has(name)])) as Record<Permission, boolean>;
}

/** The stored JSON array read back; only `storedPermissions` writes it, so every name is known. */
export function grantedPermissions(stored: string): Set<Permission> {
  return new Set(JSON.parse(stored) as Permission[]);
}

/** Stored form: a JSON array in the canonical order, so equal sets store equal text. */
export function storedPermissions(granted: ReadonlySet<string>): string {
  return JSON.stringify(PERMISSIONS.filter((name) => granted.has(name)));
}

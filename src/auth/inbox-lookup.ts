/**
 * The reads of the `inboxes` (and `pods`) tables the access rules need: the inbox behind a path (scope check)
 * and whether an inbox named in a credential's scope exists. A leaf module (no imports from the
 * mail layer), so src/auth stays below everything that asks it for access.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

export interface InboxRow {
  inbox_id: string;
  username: string;
  domain: string;
  display_name: string | null;
  status: 'active' | 'paused';
  metadata: string | null;
  client_id: string | null;
  /** The pod that owns the inbox (docs/pods.md). */
  pod_id: string;
  created_at: string;
  updated_at: string;
}

/** The inbox with this (normalized) id, if any. */
export function inboxById(db: Db, inboxId: string): InboxRow | undefined {
  return prepared(db, 'SELECT * FROM inboxes WHERE inbox_id = ?').get(inboxId) as InboxRow | undefined;
}

/** Whether an inbox with this (normalized) id exists, in `podId` when one is named. */
export function inboxExists(db: Db, inboxId: string, podId: string | null = null): boolean {
  if (podId !== null) return prepared(db, 'SELECT 1 FROM inboxes WHERE inbox_id = ? AND pod_id = ?').get(inboxId, podId) !== undefined;
  return prepared(db, 'SELECT 1 FROM inboxes WHERE inbox_id = ?').get(inboxId) !== undefined;
}

/** Whether the pod exists (docs/pods.md); read inside the write that puts something in it. */
export function podExists(db: Db, podId: string): boolean {
  return prepared(db, 'SELECT 1 FROM pods WHERE pod_id = ?').get(podId) !== undefined;
}

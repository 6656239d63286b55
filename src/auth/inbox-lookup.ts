/**
 * The reads of the `inboxes` table the access rules need: the inbox behind a path (scope check)
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
  created_at: string;
  updated_at: string;
}

/** The inbox with this (normalized) id, if any. */
export function inboxById(db: Db, inboxId: string): InboxRow | undefined {
  return prepared(db, 'SELECT * FROM inboxes WHERE inbox_id = ?').get(inboxId) as InboxRow | undefined;
}

/** Whether an inbox with this (normalized) id exists. */
export function inboxExists(db: Db, inboxId: string): boolean {
  return prepared(db, 'SELECT 1 FROM inboxes WHERE inbox_id = ?').get(inboxId) !== undefined;
}

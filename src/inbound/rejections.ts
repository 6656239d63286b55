/**
 * Inbound rejections (spec §2.7): mail a receive block list refused. Metadata only, no event
 * (§6.2 rule 6); idempotent on the edge object key like commits.
 */
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { prepared } from '../db/statements.js';

export interface RejectionRow {
  rejection_id: string;
  inbox_id: string;
  sender: string | null;
  reason: string;
  received_at: string;
  created_at: string;
}

/** Records a refused delivery, once per edge object key. Runs inside the caller's transaction (the inbound page commit). */
export function recordRejection(db: Db, r: { sourceKey: string; inboxId: string; sender: string | null; reason: string; receivedAt: string }): void {
  db.prepare(
    'INSERT OR IGNORE INTO inbound_rejections (rejection_id, source_key, inbox_id, sender, subject, reason, received_at, created_at) VALUES (?, ?, ?, ?, NULL, ?, ?, ?)',
  ).run(uuidv7(), r.sourceKey, r.inboxId, r.sender, r.reason, r.receivedAt, new Date().toISOString());
}

export function isRejected(db: Db, sourceKey: string): boolean {
  return Boolean(prepared(db, 'SELECT 1 FROM inbound_rejections WHERE source_key = ?').get(sourceKey));
}

/** Newest first, keyset-paged by (created_at, id), optionally for one inbox. */
export function listRejections(db: Db, inboxId: string | null, before: [string, string] | null, limit: number): RejectionRow[] {
  return db
    .prepare(
      `SELECT rejection_id, inbox_id, sender, reason, received_at, created_at FROM inbound_rejections
       WHERE (? IS NULL OR inbox_id = ?) AND (? IS NULL OR (created_at, rejection_id) < (?, ?))
       ORDER BY created_at DESC, rejection_id DESC LIMIT ?`,
    )
    .all(inboxId, inboxId, before?.[0] ?? null, before?.[0] ?? null, before?.[1] ?? null, limit) as RejectionRow[];
}

/** Deletes one record; false when there was none. Runs inside the caller's transaction (src/requests/quarantine.ts). */
export function deleteRejection(db: Db, id: string): boolean {
  return db.prepare('DELETE FROM inbound_rejections WHERE rejection_id = ?').run(id).changes > 0;
}

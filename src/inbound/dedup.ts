/**
 * Inbound deduplication across edges (docs/inbound.md "The same mail through two edges"). A
 * sending server that falls back to a second MX, or an owner migrating between edges, can leave
 * the same message at two edges; each seals it anew, so the sealed objects differ, but the opened
 * raw message is the same bytes. A recipient's copy is committed once per content hash within
 * INBOUND_DEDUP_WINDOW_MS; a repeat is acknowledged at its edge and not stored again. The
 * Message-ID + recipient check is the mail store's own (one Message-ID per inbox,
 * src/mail/store.ts), which also holds across edges. Keyed on the recipient too: the same bytes
 * delivered to another recipient set are that recipient's mail, never dropped.
 */
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

/** How long a received message's content hash is kept per recipient: far longer than any sender's retry schedule (RFC 5321 suggests 4-5 days). */
export const INBOUND_DEDUP_WINDOW_MS = 7 * 24 * 60 * 60_000;
/** Expired rows removed per sweep (the reconcile loop sweeps every 15 minutes). */
const SWEEP_ROWS = 5_000;

/** The content hash of an opened raw message (linear in its size; computed outside any transaction). */
export const contentHash = (raw: Uint8Array): string => createHash('sha256').update(raw).digest('hex');

const cutoff = (now: number) => new Date(now - INBOUND_DEDUP_WINDOW_MS).toISOString();

/** Read outside the write transaction: whether this recipient's copy of these bytes was committed within the window. */
export function seenRecently(db: Db, hash: string, inboxId: string, now = Date.now()): boolean {
  return Boolean(prepared(db, 'SELECT 1 FROM inbound_seen WHERE content_hash = ? AND inbox_id = ? AND seen_at >= ?').get(hash, inboxId, cutoff(now)));
}

/**
 * Inside the commit's transaction: claims this recipient's copy. False when a commit within the
 * window claimed it already (the other edge's copy won the race); an expired row is claimed anew.
 */
export function claimSeen(db: Db, hash: string, inboxId: string, now = Date.now()): boolean {
  const at = new Date(now).toISOString();
  const claimed = prepared(
    db,
    `INSERT INTO inbound_seen (content_hash, inbox_id, seen_at) VALUES (?, ?, ?)
     ON CONFLICT (content_hash, inbox_id) DO UPDATE SET seen_at = excluded.seen_at WHERE inbound_seen.seen_at < ?`,
  ).run(hash, inboxId, at, cutoff(now));
  return claimed.changes === 1;
}

/** Drops rows older than the window (a bounded number per call). Runs inside the caller's transaction. */
export function forgetExpiredSeen(db: Db, now = Date.now()): number {
  return prepared(db, 'DELETE FROM inbound_seen WHERE (content_hash, inbox_id) IN (SELECT content_hash, inbox_id FROM inbound_seen WHERE seen_at < ? LIMIT ?)').run(cutoff(now), SWEEP_ROWS).changes;
}

/**
 * Quarantine (spec §2.11, §3.2): edge objects that cannot be opened, parsed or committed. Items
 * hold metadata only; listing never decrypts mail. State changes and their owner-only events
 * commit together, in the caller's transaction (src/requests/quarantine.ts for the owner's
 * actions, the pull loop's auto-retry), except `quarantine`, the pipeline's own record.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { uuidv7 } from '../db/ids.js';
import { appendEvent } from '../events/log.js';
import { QUARANTINE_RETRY_BACKOFF_MS } from '../supervisor/loop-table.js';

/**
 * Reasons that can pass on a later try, so the pull loop retries them on its own: `parse_failed`
 * also covers a parse worker that died for a reason other than the message, and `commit_failed` a
 * write that failed for a reason other than a busy database. `open_failed` (the object does not
 * decrypt with the home key), `object_missing` (no ciphertext left) and `parse_limit_exceeded`
 * (the parse ran out of its time or memory, or the address headers passed their bounds: a retry
 * would only spend that again, issue 32) cannot change by waiting.
 */
export const TRANSIENT_REASONS: ReadonlySet<string> = new Set(['parse_failed', 'commit_failed']);

/** Wait before automatic retry n+1 after attempt n; the schedule lives with the loop timings. */
export const AUTO_RETRY_BACKOFF_MS = QUARANTINE_RETRY_BACKOFF_MS;

/**
 * When the background loop should next try this item, or null when it never will (a permanent
 * reason, a queue-message item, the schedule used up, or an owner action in progress).
 */
export function nextAutoRetryAt(r: Pick<QuarantineRow, 'source_kind' | 'reason_code' | 'attempts' | 'last_attempt_at' | 'first_seen' | 'status'>): number | null {
  if (r.status !== 'quarantined' || r.source_kind !== 'buffer_object' || !TRANSIENT_REASONS.has(r.reason_code)) return null;
  const attempts = r.attempts ?? 1;
  if (attempts < 1 || attempts > AUTO_RETRY_BACKOFF_MS.length) return null;
  const wait = AUTO_RETRY_BACKOFF_MS[attempts - 1];
  return Date.parse(r.last_attempt_at ?? r.first_seen) + wait;
}

/** nextAutoRetryAt as stored in `auto_retry_at` (migration 10): the same rule, for an item that is not in an owner action. */
function autoRetryAt(r: Pick<QuarantineRow, 'source_kind' | 'reason_code' | 'attempts' | 'last_attempt_at' | 'first_seen'>): string | null {
  const at = nextAutoRetryAt({ ...r, status: 'quarantined' });
  return at === null ? null : new Date(at).toISOString();
}

/** Items the background loop may retry now, oldest first (a handful per pass; the rest wait for the next), found by the index on (status, auto_retry_at). */
export function dueForAutoRetry(db: Db, now: number, limit: number): QuarantineRow[] {
  return prepared(db, "SELECT * FROM inbound_quarantine WHERE status = 'quarantined' AND auto_retry_at <= ? ORDER BY first_seen, quarantine_id LIMIT ?").all(
    new Date(now).toISOString(),
    limit,
  ) as QuarantineRow[];
}

/** Visible items (what the owner still has to look at), for the navigation badge and `svc status`. */
export function countQuarantine(db: Db): number {
  return (db.prepare("SELECT count(*) AS n FROM inbound_quarantine WHERE status IN ('quarantined', 'release_pending', 'delete_pending')").get() as { n: number }).n;
}

export type QuarantineStatus = 'quarantined' | 'release_pending' | 'delete_pending' | 'released' | 'deleted';

export interface QuarantineRow {
  quarantine_id: string;
  source_kind: 'buffer_object' | 'queue_message';
  source_key: string;
  reason_code: string;
  first_seen: string;
  size: number | null;
  inbox_id: string | null;
  attempts: number | null;
  last_attempt_at: string | null;
  status: QuarantineStatus;
  /** When the background loop next retries it (nextAutoRetryAt); null: never. */
  auto_retry_at: string | null;
  /** When it was released or deleted (a tombstone); the retention pass forgets it 30 days later. */
  resolved_at: string | null;
}

/** The item as the owner API shows it (§2.11). */
export function quarantineView(r: QuarantineRow) {
  return {
    quarantine_id: r.quarantine_id,
    source_kind: r.source_kind,
    reason_code: r.reason_code,
    first_seen: r.first_seen,
    size: r.size,
    inbox_id: r.inbox_id,
    attempts: r.attempts,
    last_attempt_at: r.last_attempt_at,
    status: r.status,
  };
}

function event(db: Db, type: 'inbound.quarantined' | 'inbound.released' | 'inbound.deleted', row: Pick<QuarantineRow, 'quarantine_id' | 'reason_code'>): number {
  return appendEvent(db, {
    eventType: type,
    inboxId: null,
    payloadKey: 'quarantine',
    payload: { quarantine_id: row.quarantine_id, reason_code: row.reason_code, timestamp: new Date().toISOString() },
  }).seq;
}

export function quarantineByKey(db: Db, sourceKey: string): QuarantineRow | undefined {
  return prepared(db, 'SELECT * FROM inbound_quarantine WHERE source_key = ?').get(sourceKey) as QuarantineRow | undefined;
}

export function quarantineById(db: Db, id: string): QuarantineRow | undefined {
  return db.prepare('SELECT * FROM inbound_quarantine WHERE quarantine_id = ?').get(id) as QuarantineRow | undefined;
}

/**
 * Records a failure; returns the event seq to publish (null when the item already existed). Opens
 * its own transaction (a savepoint when the caller has one): it is the inbound pipeline's
 * failure record, called by src/inbound/ingest.ts and the reconcile loop outside any other.
 */
export function quarantine(
  db: Db,
  item: { sourceKind: QuarantineRow['source_kind']; sourceKey: string; reasonCode: string; size: number | null; inboxId: string | null; attempts: number | null },
): number | null {
  return db.transaction(() => {
    const now = new Date().toISOString();
    const existing = quarantineByKey(db, item.sourceKey);
    if (existing && existing.status !== 'released' && existing.status !== 'deleted') return null;
    if (existing) db.prepare('DELETE FROM inbound_quarantine WHERE quarantine_id = ?').run(existing.quarantine_id);
    const row = { quarantine_id: uuidv7(), reason_code: item.reasonCode };
    const lastAttemptAt = item.attempts === null ? null : now;
    const retryAt = autoRetryAt({ source_kind: item.sourceKind, reason_code: item.reasonCode, attempts: item.attempts, last_attempt_at: lastAttemptAt, first_seen: now });
    db.prepare(
      'INSERT INTO inbound_quarantine (quarantine_id, source_kind, source_key, reason_code, first_seen, size, inbox_id, attempts, last_attempt_at, auto_retry_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(row.quarantine_id, item.sourceKind, item.sourceKey, item.reasonCode, now, item.size, item.inboxId, item.attempts, lastAttemptAt, retryAt);
    return event(db, 'inbound.quarantined', row);
  })();
}

/**
 * A retry failed again: count it, keep the item quarantined with the newest reason, and set when
 * the loop tries it next. Runs inside the caller's transaction.
 */
export function recordFailedRetry(db: Db, id: string, reasonCode: string): QuarantineRow {
  const item = quarantineById(db, id)!;
  const attempts = (item.attempts ?? 0) + 1;
  const at = new Date().toISOString();
  const retryAt = autoRetryAt({ source_kind: item.source_kind, reason_code: reasonCode, attempts, last_attempt_at: at, first_seen: item.first_seen });
  db.prepare("UPDATE inbound_quarantine SET status = 'quarantined', reason_code = ?, attempts = ?, last_attempt_at = ?, auto_retry_at = ? WHERE quarantine_id = ?").run(reasonCode, attempts, at, retryAt, id);
  return quarantineById(db, id)!;
}

/** Marks an owner action or a retry in progress (or over); no event. One statement, so it needs no transaction of its own. */
export function setStatus(db: Db, id: string, status: QuarantineStatus): void {
  db.prepare('UPDATE inbound_quarantine SET status = ? WHERE quarantine_id = ?').run(status, id);
}

/** After the edge cleanup was observed: tombstone the item and emit released/deleted. Runs inside the caller's transaction, so the status and its event commit together. */
export function finishQuarantine(db: Db, id: string, outcome: 'released' | 'deleted'): number {
  const row = quarantineById(db, id)!;
  db.prepare('UPDATE inbound_quarantine SET status = ?, resolved_at = ? WHERE quarantine_id = ?').run(outcome, new Date().toISOString(), id);
  return event(db, outcome === 'released' ? 'inbound.released' : 'inbound.deleted', row);
}

/** Visible items (not tombstones), oldest first, keyset-paged by (first_seen, id). */
export function listQuarantine(db: Db, after: [string, string] | null, limit: number): QuarantineRow[] {
  return db
    .prepare(
      `SELECT * FROM inbound_quarantine WHERE status IN ('quarantined', 'release_pending', 'delete_pending')
       AND (? IS NULL OR (first_seen, quarantine_id) > (?, ?)) ORDER BY first_seen, quarantine_id LIMIT ?`,
    )
    .all(after?.[0] ?? null, after?.[0] ?? null, after?.[1] ?? null, limit) as QuarantineRow[];
}

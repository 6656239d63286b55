/**
 * The retention pass (issue 37): nothing in the home database grows without bound. Each rule
 * deletes rows past their retention period, a bounded batch per write transaction, so the pass
 * never holds the write lock long and a request waits for at most one batch. The webhooks loop
 * runs it at service start and hourly (docs/mail-store.md, "Retention", lists every table and why).
 *
 * Nothing still referenced is deleted: events an enabled webhook still has to deliver stay,
 * quarantine items still waiting for the owner stay, and OAuth codes and tokens go with their
 * grant (foreign-key cascade) or once they have run out.
 */
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { deleteEventBatch } from '../events/retention.js';
import { REUSABLE_AFTER_MS } from '../mail/idempotency.js';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** How often the pass runs; every period below is counted in hours or days. */
export const RETENTION_PASS_INTERVAL_MS = HOUR_MS;
/** Rows deleted per write transaction. */
export const RETENTION_BATCH_ROWS = 1_000;

/** Released or deleted quarantine items (tombstones that keep repeated owner calls answering 200). */
export const RESOLVED_QUARANTINE_KEEP_MS = 30 * DAY_MS;
/** Inbound rejections (the owner's log of mail refused by a receive block list). */
export const REJECTION_KEEP_MS = 30 * DAY_MS;
/** A used authorization code past its five minutes (an unused one goes at expiry; it can no longer be exchanged). */
export const USED_OAUTH_CODE_KEEP_MS = HOUR_MS;
/** An ended or revoked OAuth grant stays in the owner's client list this long, then goes with its codes and tokens. */
export const ENDED_GRANT_KEEP_MS = 30 * DAY_MS;

const iso = (ms: number) => new Date(ms).toISOString();

export interface RetentionRule {
  /** The table, as the pass reports it. */
  table: string;
  /** Deletes at most `limit` rows past retention at `now`; returns how many. */
  deleteBatch: (db: Db, now: number, limit: number) => number;
}

/** A rule deleting by primary key: `select` picks at most `limit` keys of rows past retention. */
const byKey = (table: string, key: string, where: string, cutoffs: (now: number) => string[]): RetentionRule => ({
  table,
  deleteBatch: (db, now, limit) =>
    prepared(db, `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${where} LIMIT ?)`).run(...cutoffs(now), limit).changes,
});

/** In order: grants before clients, so a client whose last grant just went is seen without grants. */
export const RETENTION_RULES: readonly RetentionRule[] = [
  { table: 'events', deleteBatch: (db, now, limit) => deleteEventBatch(db, limit, { now }) },
  // Send keys are reusable 24 h after the send is final, so the row answers nothing any more.
  // Approval, draft-send and approve keys never expire (the interface says so); they go with their inbox.
  byKey('idempotency_keys', 'rowid', "kind = 'send' AND final_at IS NOT NULL AND final_at <= ?", (now) => [iso(now - REUSABLE_AFTER_MS)]),
  byKey('inbound_quarantine', 'quarantine_id', "status IN ('released', 'deleted') AND resolved_at <= ?", (now) => [iso(now - RESOLVED_QUARANTINE_KEEP_MS)]),
  byKey('inbound_rejections', 'rejection_id', 'created_at <= ?', (now) => [iso(now - REJECTION_KEEP_MS)]),
  byKey('owner_sessions', 'session_id', 'expires_at <= ?', (now) => [iso(now)]),
  byKey('oauth_requests', 'request_id', 'expires_at <= ?', (now) => [iso(now)]),
  byKey('oauth_codes', 'code_hash', '(used_at IS NULL AND expires_at <= ?) OR expires_at <= ?', (now) => [iso(now), iso(now - USED_OAUTH_CODE_KEEP_MS)]),
  byKey('oauth_tokens', 'token_id', "kind = 'access' AND expires_at <= ?", (now) => [iso(now)]),
  // Codes and tokens of the grant go by ON DELETE CASCADE in the same statement.
  byKey('oauth_grants', 'grant_id', 'COALESCE(MIN(revoked_at, expires_at), expires_at) <= ?', (now) => [iso(now - ENDED_GRANT_KEEP_MS)]),
  // A registration whose grants have all gone: the client registers again, as after `svc oauth purge`.
  byKey('oauth_clients', 'client_id', 'granted = 1 AND created_at <= ? AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)', (now) => [iso(now - ENDED_GRANT_KEEP_MS)]),
];

/** Runs one rule to the end, one batch per write transaction; returns how many rows went. */
export function pruneTable(db: Db, rule: RetentionRule, now: number, batchRows = RETENTION_BATCH_ROWS): number {
  const batch = db.transaction(() => rule.deleteBatch(db, now, batchRows));
  let deleted = 0;
  for (;;) {
    const changes = batch();
    deleted += changes;
    if (changes < batchRows) return deleted;
  }
}

/** One retention pass over every rule; returns the rows deleted per table. */
export function pruneExpired(db: Db, now = Date.now(), batchRows = RETENTION_BATCH_ROWS): Record<string, number> {
  const deleted: Record<string, number> = {};
  for (const rule of RETENTION_RULES) deleted[rule.table] = pruneTable(db, rule, now, batchRows);
  return deleted;
}

/** Runs `pruneExpired` at most once per interval; the first call runs at once (service start). */
export class RetentionSchedule {
  #lastRunAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly intervalMs = RETENTION_PASS_INTERVAL_MS) {}

  /**
   * `clockAheadMs` judges ages as if it were that much later (tests only, SVC_TEST_RETENTION_CLOCK_MS);
   * the schedule itself runs on the real clock. Returns the rows deleted, or null when not yet due.
   */
  runIfDue(db: Db, clockAheadMs = 0, realNow = Date.now()): Record<string, number> | null {
    if (realNow - this.#lastRunAt < this.intervalMs) return null;
    this.#lastRunAt = realNow;
    return pruneExpired(db, realNow + clockAheadMs);
  }
}

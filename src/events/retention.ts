/**
 * Event log retention (spec §6.3, §8): events are kept 30 days, and longer only while a webhook
 * still has to deliver them. Pruning is what makes an old `last_event_id` "expired" for the
 * WebSocket resume.
 */
import type { Db } from '../db/open.js';
import { EVENT_RETENTION_MS } from './log.js';
import { lowestEnabledCursor } from '../webhooks/repository.js';
import { prepared } from '../db/statements.js';

/** How often the webhooks loop prunes; retention is counted in days, so hourly is plenty. */
export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** Rows deleted per statement, so one prune never holds the write lock for long. */
const PRUNE_CHUNK = 5_000;

export interface PruneOptions {
  now?: number;
  /**
   * The oldest event seq some webhook has not delivered yet (or null when none is pending):
   * it and everything after it stay past 30 days until the delivery ends.
   */
  oldestUndeliveredSeq?: number | null;
}

/**
 * The oldest event an enabled webhook has not yet delivered, dropped or filtered out (the
 * smallest cursor + 1), or null when no enabled webhook exists. Disabled webhooks hold nothing:
 * re-enabling one starts with new events (docs/webhooks.md).
 */
export function oldestUndeliveredSeq(db: Db): number | null {
  const cursor = lowestEnabledCursor(db);
  return cursor === null ? null : cursor + 1;
}

/**
 * Deletes at most `limit` events older than the retention period that no delivery still needs,
 * oldest first; returns how many. One statement: the caller chooses the transaction around it
 * (src/db/retention.ts runs each batch in its own, so the write lock is never held for long).
 * Without `oldestUndeliveredSeq`, the webhooks table says what is still needed.
 */
export function deleteEventBatch(db: Db, limit: number, opts: PruneOptions = {}): number {
  const cutoff = new Date((opts.now ?? Date.now()) - EVENT_RETENTION_MS).toISOString();
  const keepFrom = (opts.oldestUndeliveredSeq === undefined ? oldestUndeliveredSeq(db) : opts.oldestUndeliveredSeq) ?? Number.MAX_SAFE_INTEGER;
  // The created_at index, oldest first, read no further than the batch: in rowid order SQLite read
  // every kept event's row (payload included) to find the expired ones, holding the write lock,
  // for minutes in a home of a million messages (writers then failed as busy).
  return prepared(db, 'DELETE FROM events WHERE seq IN (SELECT seq FROM events INDEXED BY events_created WHERE created_at < ? AND seq < ? ORDER BY created_at LIMIT ?)').run(cutoff, keepFrom, limit).changes;
}

/** Deletes every event past retention that no delivery still needs, in batches; returns how many. */
export function pruneEvents(db: Db, opts: PruneOptions = {}): number {
  let deleted = 0;
  for (;;) {
    const changes = deleteEventBatch(db, PRUNE_CHUNK, opts);
    deleted += changes;
    if (changes < PRUNE_CHUNK) return deleted;
  }
}

/** Runs `pruneEvents` at most once per interval; the first call prunes at once (service start). */
export class EventPruneSchedule {
  #lastPrunedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly intervalMs = PRUNE_INTERVAL_MS) {}

  /** Returns the number of events deleted, or null when it was not yet time. */
  pruneIfDue(db: Db, opts: PruneOptions = {}): number | null {
    const now = opts.now ?? Date.now();
    if (now - this.#lastPrunedAt < this.intervalMs) return null;
    this.#lastPrunedAt = now;
    return pruneEvents(db, { ...opts, now });
  }
}

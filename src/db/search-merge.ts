/**
 * Merging a full search shard's segments (migration 36; docs/mail-store.md, "Search").
 *
 * FTS5 writes each transaction's words as a new segment and merges segments only in groups
 * (automerge), so a shard filled by many small commits keeps several segments, and every query
 * word is looked up in each of them: on the 200,000-message scale home a two-word search of one
 * shard took 0.38 ms and 3.5 page reads, and 0.11 ms and 1.8 reads once its segments were merged
 * into one. A shard is written to only while it is the newest (message row ids only grow; a
 * deletion leaves a tombstone), so once the home has moved on to a newer shard, its segments are
 * merged into one, once, in the background.
 *
 * The work is FTS5's incremental merge (`'merge'` with a negative page count: every segment may be
 * merged, as `'optimize'` does), MERGE_PAGES leaf pages per write transaction, so the write lock
 * is held for a bounded time whatever a shard holds; a merge left unfinished by a stop goes on from
 * where it was. FTS5 reports whether a merge command did any work by `total_changes()` growing by
 * 2 or more; a shard whose command did none is marked `merged`.
 */
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { shardTable } from '../mail/search-index.js';

/** Leaf pages merged per write transaction (about 10–40 ms of work). */
export const MERGE_PAGES = 256;
/** How often the webhooks loop looks for a shard to merge, and how long it works each time at most. */
export const MERGE_INTERVAL_MS = 60_000;
export const MERGE_BUDGET_MS = 250;

/** The shards written to no more and not merged yet: every shard below the newest, oldest last. */
function unmergedShards(db: Db): number[] {
  return prepared(db, 'SELECT k FROM search_shards WHERE merged = 0 AND k < (SELECT max(k) FROM search_shards) ORDER BY k DESC').pluck().all() as number[];
}

/** One merge step of shard `k` in its own write transaction; false once the shard needed none (and is marked merged). */
function mergeStep(db: Db, k: number): boolean {
  return db.transaction((): boolean => {
    const table = shardTable(k);
    const before = prepared(db, 'SELECT total_changes()').pluck().get() as number;
    prepared(db, `INSERT INTO ${table} (${table}, rank) VALUES ('merge', ?)`).run(-MERGE_PAGES);
    const worked = (prepared(db, 'SELECT total_changes()').pluck().get() as number) - before >= 2;
    if (!worked) prepared(db, 'UPDATE search_shards SET merged = 1 WHERE k = ?').run(k);
    return worked;
  })();
}

/**
 * Merges full shards, newest first, until every one is merged or `budgetMs` has passed (checked
 * between transactions); returns the shards finished. `budgetMs` Infinity runs to the end.
 */
export function mergeFullShards(db: Db, budgetMs: number, now: () => number = () => performance.now()): number[] {
  const until = now() + budgetMs;
  const finished: number[] = [];
  for (const k of unmergedShards(db)) {
    for (;;) {
      if (now() >= until) return finished;
      if (!mergeStep(db, k)) break;
    }
    finished.push(k);
  }
  return finished;
}

/** Runs `mergeFullShards` with MERGE_BUDGET_MS at most once per MERGE_INTERVAL_MS; the first call runs at once. */
export class ShardMergeSchedule {
  #lastRunAt = Number.NEGATIVE_INFINITY;

  runIfDue(db: Db, realNow = Date.now()): number[] | null {
    if (realNow - this.#lastRunAt < MERGE_INTERVAL_MS) return null;
    this.#lastRunAt = realNow;
    return mergeFullShards(db, MERGE_BUDGET_MS);
  }
}

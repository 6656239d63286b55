/**
 * Merging a full search shard's segments (migration 36; docs/mail-store.md, "Search").
 *
 * FTS5 writes each transaction's words as a new segment and merges segments only in groups
 * (automerge), so a shard filled by many small commits keeps several segments, and every query
 * word is looked up in each of them: on the 200,000-message scale home a two-word search of one
 * shard took 0.38 ms and 3.5 page reads, and 0.11 ms and 1.8 reads once its segments were merged
 * into one. New mail goes to the newest shard (message row ids only grow), so once the home has
 * moved on to a newer shard, a full shard's segments are merged into one, in the background. A
 * later write to a merged shard (an attachment's text indexed when first read, src/mail/
 * attachment-text.ts) marks it unmerged again (src/mail/search-index.ts indexMessage).
 *
 * The work is FTS5's incremental merge (`'merge'` with a negative page count: every segment may be
 * merged, as `'optimize'` does), MERGE_PAGES leaf pages per write transaction, one transaction per
 * MERGE_STEP_MS at most, so other writers wait for at most one step; a merge left unfinished by a
 * stop goes on from where it was. The legacy index (mail stored before migration 31) is merged
 * too, last. FTS5 reports whether a merge command did any work by `total_changes()` growing by 2
 * or more; a shard whose command did none is marked `merged`.
 */
import type { Db } from './open.js';
import { prepared } from './statements.js';
import { shardTable } from '../mail/search-index.js';

/** Leaf pages merged per write transaction (about 10–40 ms of work). */
export const MERGE_PAGES = 256;
/** While shards wait to be merged, one step at most this often; when none does, a look this often. */
export const MERGE_STEP_MS = 1_000;
export const MERGE_IDLE_MS = 60_000;
/** After a step failed in SQLite (a full disk, a damaged shard), the next try. */
export const MERGE_RETRY_MS = 60 * 60_000;

/** The first shard written to no more and not merged yet: below the newest, newest first, the legacy index last. */
function nextUnmerged(db: Db): number | null {
  return (prepared(db, 'SELECT k FROM search_shards WHERE merged = 0 AND k < (SELECT max(k) FROM search_shards) ORDER BY k DESC LIMIT 1').pluck().get() as number | undefined) ?? null;
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
 * between transactions); returns the shards finished. `budgetMs` Infinity runs to the end (the
 * scale benchmark after seeding, tests).
 */
export function mergeFullShards(db: Db, budgetMs: number, now: () => number = () => performance.now()): number[] {
  const until = now() + budgetMs;
  const finished: number[] = [];
  for (let k = nextUnmerged(db); k !== null; k = nextUnmerged(db)) {
    for (;;) {
      if (now() >= until) return finished;
      if (!mergeStep(db, k)) break;
    }
    finished.push(k);
  }
  return finished;
}

const isSqliteError = (err: unknown) => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('SQLITE_');

/** One merge step when due (the webhooks loop calls it every pass); a step that fails in SQLite is tried again after MERGE_RETRY_MS, never stopping the loop. */
export class ShardMergeSchedule {
  #nextAt = Number.NEGATIVE_INFINITY;

  /** The shard a step finished, [] for a step that did not finish one, null when not due or nothing to merge. */
  runIfDue(db: Db, realNow = Date.now()): number[] | null {
    if (realNow < this.#nextAt) return null;
    try {
      const k = nextUnmerged(db);
      if (k === null) {
        this.#nextAt = realNow + MERGE_IDLE_MS;
        return null;
      }
      this.#nextAt = realNow + MERGE_STEP_MS;
      return mergeStep(db, k) ? [] : [k];
    } catch (err) {
      if (!isSqliteError(err)) throw err;
      this.#nextAt = realNow + MERGE_RETRY_MS;
      return null;
    }
  }
}

/**
 * A token that changes whenever the database may have changed, for in-memory caches derived from
 * it (the read cache, API key lookups).
 *
 * Asking SQLite costs a read transaction on the encrypted database — about as much as the cached
 * work itself — so the answer is reused for a few milliseconds, unless this process noted a change
 * in between: every non-GET request (before and after its handler) and every event a loop commits
 * calls `noteChange()`. Only writes by other processes wait for the next SQLite check.
 */
import type { Db } from './open.js';
import { prepared } from '../mail/statements.js';

const REUSE_MS = 5;

let generation = 0;
const last = new WeakMap<Db, { at: number; generation: number; stamp: string }>();

export function noteChange(): void {
  generation++;
}

export function dbStamp(db: Db): string {
  const now = performance.now();
  const seen = last.get(db);
  if (seen && seen.generation === generation && now - seen.at < REUSE_MS) return seen.stamp;
  const row = prepared(db, 'SELECT total_changes() AS c, (SELECT data_version FROM pragma_data_version()) AS v').get() as { c: number; v: number };
  const stamp = `${row.c}:${row.v}:${generation}`;
  last.set(db, { at: now, generation, stamp });
  return stamp;
}

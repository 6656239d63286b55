/**
 * Prepared statements cached per connection. Preparing costs more than running an indexed
 * lookup, and the read routes run a handful of fixed query shapes at high rates.
 */
import type Database from 'better-sqlite3-multiple-ciphers';
import type { Db } from './open.js';

const caches = new WeakMap<Db, Map<string, Database.Statement>>();
/**
 * Query shapes are built from a small set of optional filters, and search has a few per shard of
 * its index (src/mail/search-index.ts); the least recently used statement goes first beyond this.
 */
const MAX_CACHED = 1024;

export function prepared(db: Db, sql: string): Database.Statement {
  let cache = caches.get(db);
  if (!cache) {
    cache = new Map();
    caches.set(db, cache);
    // Unicode case folding for substring filters; SQLite's lower() folds ASCII only.
    db.function('svc_fold', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? s.toLowerCase() : null));
  }
  let statement = cache.get(sql);
  if (statement) {
    // Map keeps insertion order: moved to the end, the first key is the least recently used.
    cache.delete(sql);
  } else {
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    statement = db.prepare(sql);
  }
  cache.set(sql, statement);
  return statement;
}

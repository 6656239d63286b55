/**
 * A cache of serialized read responses, valid only while the database is unchanged. Agents poll
 * the same lists and messages over and over; between two changes the answer is the same bytes.
 *
 * Validity is the pair (PRAGMA data_version, total_changes()): data_version moves when any other
 * connection commits (loop workers, other processes), total_changes when this connection writes.
 * Any change anywhere drops every entry, so a cached answer is never older than the data. The key
 * is the caller's identity, scope and permissions plus the exact request URL; authentication
 * still runs on every request before the cache is consulted.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/open.js';
import type { Principal } from '../auth/principal.js';
import { dbStamp } from '../db/stamp.js';

export const MAX_CACHE_BYTES = 16 * 1024 * 1024;
/** Bigger answers are served but not kept, so one large thread cannot evict everything. */
export const MAX_CACHED_RESPONSE = 256 * 1024;

export class ReadCache {
  readonly #db: Db;
  readonly #entries = new Map<string, string>();
  #stamp = '';
  #bytes = 0;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The database state now; entries stored under another state are invalid. */
  stamp(): string {
    return dbStamp(this.#db);
  }

  /** The cached body for `key`, if still valid, and the state to store a fresh one under. */
  lookup(key: string): { body: string | undefined; stamp: string } {
    const stamp = this.stamp();
    if (stamp !== this.#stamp) {
      this.#clear(stamp);
      return { body: undefined, stamp };
    }
    const body = this.#entries.get(key);
    if (body !== undefined) {
      // Refresh its place in the eviction order.
      this.#entries.delete(key);
      this.#entries.set(key, body);
    }
    return { body, stamp };
  }

  /** Stores a body computed from the state `stamp` (taken before computing it). */
  set(key: string, stamp: string, body: string): void {
    if (stamp !== this.#stamp || body.length > MAX_CACHED_RESPONSE) return;
    this.#entries.set(key, body);
    this.#bytes += key.length + body.length;
    for (const [oldest, value] of this.#entries) {
      if (this.#bytes <= MAX_CACHE_BYTES) break;
      this.#entries.delete(oldest);
      this.#bytes -= oldest.length + value.length;
    }
  }

  #clear(stamp: string): void {
    this.#entries.clear();
    this.#bytes = 0;
    this.#stamp = stamp;
  }
}

const caches = new WeakMap<Db, ReadCache>();

export function readCache(db: Db): ReadCache {
  let cache = caches.get(db);
  if (!cache) {
    cache = new ReadCache(db);
    caches.set(db, cache);
  }
  return cache;
}

/** Everything about the caller that can change an answer: identity, scope and permissions. */
export function principalKey(p: Principal): string {
  const scope = p.inboxScope === 'all' ? '*' : [...p.inboxScope].sort().join(',');
  const permissions = p.permissions === 'all' ? '*' : [...p.permissions].sort().join(',');
  return `${p.kind}\u0000${p.id}\u0000${scope}\u0000${permissions}`;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Answers a read route from the cache, or computes the answer (access checks included; in a
 * reader thread, src/supervisor/readers.ts),
 * serializes it with the route's response schema and keeps it. Errors are never cached.
 */
export async function cachedRead(db: Db, request: FastifyRequest, reply: FastifyReply, compute: () => Promise<unknown>): Promise<FastifyReply> {
  const cache = readCache(db);
  const key = `${principalKey(request.principal!)}\u0000${request.url}`;
  const { body, stamp } = cache.lookup(key);
  if (body !== undefined) return reply.type(JSON_TYPE).send(body);
  // The stamp was taken before the reader began: an answer computed while the data changed is
  // stored under the older stamp, which the next lookup finds stale.
  const fresh = reply.serialize(await compute()) as string;
  cache.set(key, stamp, fresh);
  return reply.type(JSON_TYPE).send(fresh);
}

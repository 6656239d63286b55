/**
 * Direct access to a service home's encrypted database from a test, through the same unlock path
 * svc uses (the test runs in the same keyring session). Against a running service this is for
 * asserting stored state and for the states no route can make (`expireApiKey`, `narrowApiKeyScope`),
 * each caller saying which; everything a route can do is seeded through test/helpers/seed.ts.
 * `insertInbox` and `insertApiKey` write rows with SQL and are for tests without a running
 * service (test/unit), which have no routes to call.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { unlockHome } from '../../src/keys/unlock.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { sha256Hex } from '../../src/auth/secrets.js';
import { API_KEY_PREFIX } from '../../src/auth/api-keys.js';
import { uuidv7 } from '../../src/db/ids.js';
import { shardTable } from '../../src/mail/search-index.js';
import { deliveredPayload, type StoredEventRow } from '../../src/events/log.js';
import Database from 'better-sqlite3-multiple-ciphers';
import { MIGRATIONS } from '../../src/db/migrations.js';

export function openHomeDb(home: string): Db {
  const { dbKey } = unlockHome(home, false);
  try {
    return openDatabase(path.join(home, 'svc.db'), dbKey, { migrate: false });
  } finally {
    dbKey.fill(0);
  }
}

/**
 * For upgrade tests: a database file as an svc of schema `version` left it, written through a
 * connection of its own (no write gate, no commit hook), the migrations up to `version` applied.
 * The caller fills it, closes it, and opens it with openDatabase to upgrade it.
 */
export function databaseAtSchema(file: string, key: Buffer, version: number): Database.Database {
  const old = new Database(file);
  old.pragma(`cipher='sqlcipher'`);
  old.pragma('legacy=4');
  old.pragma(`key="x'${key.toString('hex')}'"`);
  old.pragma('foreign_keys = ON');
  for (const sql of MIGRATIONS.slice(0, version)) old.exec(sql);
  old.pragma(`user_version = ${version}`);
  return old;
}

/**
 * Stored events (`where` over the events table, oldest first) as they are delivered: a received
 * message's event reads the message's bodies from its row (src/events/log.ts deliveredPayload).
 */
export function deliveredEvents(db: Db, where: string, ...params: unknown[]): string[] {
  const rows = db.prepare(`SELECT seq, payload, bodies_from_message FROM events WHERE ${where} ORDER BY seq`).all(...params) as StoredEventRow[];
  return rows.map((row) => deliveredPayload(db, row));
}

/** For tests without a running service: inserts an active inbox row; returns its id. */
export function insertInbox(db: Db, address: string): string {
  const id = address.toLowerCase();
  const [username, domain] = id.split('@');
  const now = new Date().toISOString();
  db.prepare('INSERT INTO inboxes (inbox_id, username, domain, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, username, domain, 'active', now, now);
  return id;
}

/** For tests without a running service: inserts an API key row the way the api-keys route stores it; returns the secret. */
export function insertApiKey(db: Db, opts: { permissions: string[]; inboxIds?: string[] | null; sendPolicy?: 'direct' | 'approval' | 'guarded' | 'read_only'; expiresAt?: string | null }): { id: string; secret: string } {
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  const id = uuidv7();
  const now = new Date().toISOString();
  db.prepare(
    'INSERT INTO api_keys (api_key_id, name, prefix, key_hash, permissions, send_policy, inbox_ids, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(id, 'test key', secret.slice(0, 12), sha256Hex(secret), JSON.stringify(opts.permissions), opts.sendPolicy ?? 'direct', opts.inboxIds ? JSON.stringify(opts.inboxIds) : null, opts.expiresAt ?? null, now, now);
  return { id, secret };
}

/**
 * Moves a key's expiry into the past. No route can: `expires_at` is set only at creation and must
 * lie ahead, and waiting for a key to expire would make the test depend on the clock.
 */
export function expireApiKey(db: Db, apiKeyId: string): void {
  db.prepare('UPDATE api_keys SET expires_at = ? WHERE api_key_id = ?').run(new Date(Date.now() - 1000).toISOString(), apiKeyId);
}

/**
 * Replaces a key's inbox scope. No route can: the scope is fixed at creation (PATCH changes only
 * name, permissions and send policy), so a scope that narrows later, or names an inbox that does
 * not exist, is written here.
 */
export function narrowApiKeyScope(db: Db, apiKeyId: string, inboxIds: string[]): void {
  db.prepare('UPDATE api_keys SET inbox_ids = ? WHERE api_key_id = ?').run(JSON.stringify(inboxIds), apiKeyId);
}

/**
 * Rows of the search index (every shard, src/mail/search-index.ts) for a rowid and/or an FTS5
 * match, summed over the shards: for asserting what is indexed without knowing its shard.
 */
export function indexedRows(db: Db, where: { rowid?: number; match?: string }): number {
  let n = 0;
  for (const k of db.prepare('SELECT k FROM search_shards').pluck().all() as number[]) {
    const table = shardTable(k);
    const conditions = [...(where.rowid === undefined ? [] : ['rowid = @rowid']), ...(where.match === undefined ? [] : [`${table} MATCH @match`])];
    n += db.prepare(`SELECT count(*) FROM ${table}${conditions.length ? ` WHERE ${conditions.join(' AND ')}` : ''}`).pluck().get(where) as number;
  }
  return n;
}

/**
 * Records the SQL of every statement prepared on `db` from now on (the code under test prepares
 * through `db.prepare`, cached or not), and gives SQLite's plan of one of them, its parameters
 * all `fill` (a plan does not depend on their values).
 */
export function recordStatements(db: Db): { statements: string[]; plan: (sql: string, fill: unknown) => string[] } {
  const statements: string[] = [];
  const prepare = db.prepare.bind(db);
  (db as { prepare: typeof db.prepare }).prepare = ((sql: string) => (statements.push(sql), prepare(sql))) as typeof db.prepare;
  const plan = (sql: string, fill: unknown) =>
    (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array<unknown>((sql.match(/\?/g) ?? []).length).fill(fill)) as { detail: string }[]).map((r) => r.detail);
  return { statements, plan };
}

/**
 * Counts the runs of every statement prepared on `db` from now on, by `kindOf` its SQL: the
 * statement cache prepares each SQL text once per connection, so counting preparations
 * (recordStatements) does not tell how often a query ran.
 */
export function countStatementRuns(db: Db, kindOf: (sql: string) => string): Map<string, number> {
  const counts = new Map<string, number>();
  const prepare = db.prepare.bind(db);
  (db as { prepare: typeof db.prepare }).prepare = ((sql: string) => {
    const statement = prepare(sql);
    const kind = kindOf(sql);
    for (const method of ['get', 'all', 'iterate'] as const) {
      const run = (statement[method] as (...args: unknown[]) => unknown).bind(statement);
      (statement as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        counts.set(kind, (counts.get(kind) ?? 0) + 1);
        return run(...args);
      };
    }
    return statement;
  }) as typeof db.prepare;
  return counts;
}

/**
 * Threads whose row in `thread_pages` (migration 38) is missing, left behind, or differs from the
 * thread's own row in what a page shows; none when the triggers keep it.
 */
export function threadPagesDrift(db: Db): string[] {
  const differs = ['inbox_id', 'updated_at', 'shown', 'subject', 'created_at', 'summary'].map((c) => `p.${c} IS NOT t.${c}`).join(' OR ');
  return db
    .prepare(
      `SELECT t.thread_id FROM threads t LEFT JOIN thread_pages p ON p.thread_id = t.thread_id WHERE p.thread_id IS NULL OR ${differs}
       UNION ALL SELECT p.thread_id FROM thread_pages p WHERE NOT EXISTS (SELECT 1 FROM threads t WHERE t.thread_id = p.thread_id)`,
    )
    .pluck()
    .all() as string[];
}

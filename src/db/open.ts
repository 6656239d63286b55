/** Opens svc.db with SQLCipher encryption, WAL and migrations. */
import fs from 'node:fs';
import Database from 'better-sqlite3-multiple-ciphers';
import { StartupError } from '../keys/startup-error.js';
import { FOREIGN_KEYS_OFF, MIGRATIONS } from './migrations.js';
import { WRITER_CACHE_KIB } from '../core/heap-limits.js';
import type { WriteGate } from './write-gate.js';
import { snapshotFor, takeSnapshot } from '../backup/snapshots.js';

export type Db = Database.Database;

/**
 * How long SQLite itself waits for another connection's write lock (its busy handler backs off
 * between tries). Loops and the request path share svc.db, and the longest write (a page of
 * inbound mail) takes well under this.
 */
const BUSY_TIMEOUT_MS = 5_000;
/**
 * Further attempts at BEGIN IMMEDIATE after SQLite gave up with SQLITE_BUSY, and the pause before
 * each: busy_timeout does not cover every busy case (WAL recovery, SQLITE_BUSY_SNAPSHOT), and a
 * busy database is a reason to wait, never to fail a write or quarantine mail.
 */
const WRITE_LOCK_RETRIES = 3;
const WRITE_LOCK_BACKOFF_MS = [50, 200, 800] as const;

/** SQLITE_BUSY and SQLITE_LOCKED with their extended codes: another connection holds the lock. */
export function isBusyError(err: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(err));
}

const sleepSignal = new Int32Array(new SharedArrayBuffer(4));
/** Transactions are synchronous, so the pause between attempts is too (as SQLite's own busy handler is). */
const pauseSync = (ms: number) => Atomics.wait(sleepSignal, 0, 0, ms);

const failed = (cause: string, message: string) =>
  new StartupError('database_failed', cause, message, 'Check disk space and that svc.db in the home is intact; restore the whole home from a backup if it is damaged.');

function sqliteCode(err: unknown): string {
  return typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
}

/**
 * Opens (or creates) the database. `migrate` runs pending migrations; loop workers open
 * without it because the supervisor already migrated. `onUpgrade` is called before an existing
 * database is upgraded (its pre-upgrade snapshot, then the migrations), with the schema versions:
 * a large home's upgrade can take minutes.
 */
export function openDatabase(file: string, dbKey: Buffer, opts: { migrate: boolean; gate?: WriteGate; onUpgrade?: (from: number, to: number) => void }): Db {
  let db: Db;
  try {
    db = new Database(file);
  } catch (err) {
    throw failed('DatabaseOpenFailed', 'The database file could not be opened.');
  }
  try {
    db.pragma(`cipher='sqlcipher'`);
    db.pragma(`legacy=4`);
    db.pragma(`key="x'${dbKey.toString('hex')}'"`);
    try {
      db.prepare('SELECT count(*) FROM sqlite_master').get();
    } catch (err) {
      if (sqliteCode(err) === 'SQLITE_NOTADB') {
        throw new StartupError(
          'database_key_invalid',
          'DatabaseKeyInvalid',
          'svc.db does not open with this home\'s key (svc.db and keys.json do not belong together).',
          'Restore keys.json and svc.db together from the same home backup.',
        );
      }
      throw err;
    }
    db.pragma('journal_mode = WAL');
    // Every commit is made durable by syncWal before it returns (or before a group commit's
    // callers hear of it), outside the write lock; NORMAL keeps SQLite's own fsync out of the lock.
    db.pragma('synchronous = NORMAL');
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('foreign_keys = ON');
    db.pragma(`cache_size = -${WRITER_CACHE_KIB}`);
    writeLockUpFront(db, opts.gate ?? null);
    if (opts.migrate) migrate(db, opts.onUpgrade);
    else checkSchema(db);
    return db;
  } catch (err) {
    try {
      db.close();
    } catch {
      /* already failing */
    }
    if (err instanceof StartupError) throw err;
    throw failed('DatabaseAccessFailed', 'The database could not be read or migrated.');
  }
}

const commitHooks: ((db: Db) => void)[] = [];

/**
 * Runs `hook` at the end of every outermost write transaction on any connection of this thread,
 * inside it, just before it commits: derived data (stored thread summaries, src/mail/threads.ts)
 * is remade in the same transaction as the change it derives from. A hook that throws rolls the
 * transaction back, so a hook must not throw for reasons of its own.
 */
export function onCommit(hook: (db: Db) => void): void {
  commitHooks.push(hook);
}

/**
 * Connections running migrations: their transactions run no commit hook, which is written for the
 * newest schema (a thread summary written before migration 30 added `threads.unread` would fail the
 * upgrade). What a migration leaves dirty is remade by the next write transaction after it.
 */
const migrating = new WeakSet<Db>();

/** Per connection: the gate shared with the service's other threads, the WAL's descriptor, and syncs in flight. */
interface Writer {
  gate: WriteGate | null;
  walFd: number | null;
  /** Set while a group commit runs a transaction whose sync it awaits itself (`commitWithoutSync`). */
  deferSync: boolean;
  /** The sync running now, and whether another must follow it (commits made while it ran). */
  syncing: Promise<void> | null;
  again: Promise<void> | null;
}

const writers = new WeakMap<Db, Writer>();

function writerOf(db: Db): Writer {
  const w = writers.get(db);
  if (!w) throw new Error('not a connection opened by openDatabase');
  return w;
}

/** The WAL's descriptor, opened on first use and closed with the connection. */
function walFd(db: Db, w: Writer): number {
  if (w.walFd === null) {
    w.walFd = fs.openSync(`${db.name}-wal`, 'r');
    const close = db.close.bind(db);
    db.close = () => {
      if (w.walFd !== null) fs.closeSync(w.walFd);
      w.walFd = null;
      return close();
    };
  }
  return w.walFd;
}

/**
 * Durability, as synchronous=FULL gives it, without SQLite's fsync inside the write lock: the
 * connection runs with synchronous=NORMAL (in WAL mode: consistent after a power loss, never
 * corrupt) and every commit is followed by an fdatasync of the WAL before its caller goes on.
 * The sync runs after the lock is released, so other writers need not wait for the disk; a
 * group commit (src/db/group-commit.ts) awaits it on the libuv pool, off the request thread.
 */
function syncWalNow(db: Db, w: Writer): void {
  fs.fdatasyncSync(walFd(db, w));
}

/** Resolves once every commit this connection made before the call is on disk. Syncs in flight are shared. */
export function syncWal(db: Db): Promise<void> {
  const w = writerOf(db);
  if (w.again) return w.again;
  const run = (): Promise<void> =>
    new Promise<void>((resolve, reject) => fs.fdatasync(walFd(db, w), (err) => (err ? reject(err) : resolve()))).finally(() => {
      w.syncing = w.again ?? null;
      w.again = null;
    });
  if (!w.syncing) {
    w.syncing = run();
    return w.syncing;
  }
  // A sync is running, but it may have started before this commit: one more follows it.
  w.again = w.syncing.then(run, run);
  return w.again;
}

/** The connection's write gate, if it has one: a group commit takes it (asynchronously) before its transaction. */
export function gateOf(db: Db): WriteGate | null {
  return writerOf(db).gate;
}

/** Runs `fn` as one write transaction whose durability the caller awaits with syncWal (group commits). */
export function commitWithoutSync<T>(db: Db, fn: () => T): T {
  const w = writerOf(db);
  w.deferSync = true;
  try {
    return db.transaction(fn).immediate();
  } finally {
    w.deferSync = false;
  }
}

/**
 * The one write-transaction rule (issue 17 §1): `db.transaction(fn)()` takes the write lock up
 * front (BEGIN IMMEDIATE), whatever variant is called, so a transaction never reads and then
 * fails to upgrade (SQLITE_BUSY_SNAPSHOT, which busy_timeout does not cover). Within the service
 * the gate (src/db/write-gate.ts) is taken first, so writers wake the moment the lock is free.
 * When the lock cannot be had, BEGIN is tried again with backoff; `fn` has not run yet then, so
 * retrying it is safe. Nested calls are savepoints inside the outer transaction, as before. After
 * the outermost commit the WAL is synced (above) once the gate is released.
 */
function writeLockUpFront(db: Db, gate: WriteGate | null): void {
  const w: Writer = { gate, walFd: null, deferSync: false, syncing: null, again: null };
  writers.set(db, w);
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    let started = false;
    let outermost = false;
    const tx = transaction(function (this: unknown, ...args: unknown[]) {
      started = true;
      const result = fn.apply(this, args);
      if (outermost && !migrating.has(db)) for (const hook of commitHooks) hook(db);
      return result;
    });
    const attempt = (variant: 'immediate' | 'exclusive', args: unknown[]) => {
      for (let attempt = 0; ; attempt++) {
        started = false;
        try {
          return tx[variant](...args);
        } catch (err) {
          if (started || !isBusyError(err) || attempt >= WRITE_LOCK_RETRIES) throw err;
          pauseSync(WRITE_LOCK_BACKOFF_MS[attempt]);
        }
      }
    };
    const run = (variant: 'immediate' | 'exclusive', args: unknown[]) => {
      outermost = !db.inTransaction;
      if (!outermost) return tx[variant](...args);
      // A group commit has waited for the gate already (and, when that wait timed out, must not
      // block the request thread waiting again).
      const gated = gate !== null && !w.deferSync && !gate.held() && gate.acquireSync();
      let result: unknown;
      try {
        result = attempt(variant, args);
      } finally {
        if (gated) gate.release();
      }
      if (!w.deferSync) syncWalNow(db, w);
      return result;
    };
    const immediate = (...args: unknown[]) => run('immediate', args);
    return Object.assign(immediate, { default: immediate, deferred: immediate, immediate, exclusive: (...args: unknown[]) => run('exclusive', args) });
  }) as unknown as Db['transaction'];
  singleWritesAsTransactions(db);
}

/**
 * A statement that writes, run outside a transaction (SQLite's autocommit), runs as a transaction
 * of its own: it takes the gate, and its commit is synced like any other (with
 * synchronous=NORMAL an autocommit write would otherwise not be durable until some later sync).
 */
function singleWritesAsTransactions(db: Db): void {
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source);
    if (statement.readonly) return statement;
    for (const method of ['run', 'get', 'all'] as const) {
      const direct = (statement[method] as (...args: unknown[]) => unknown).bind(statement);
      const wrapped = (...args: unknown[]) => (db.inTransaction ? direct(...args) : db.transaction(() => direct(...args))());
      (statement as unknown as Record<string, unknown>)[method] = wrapped;
    }
    return statement;
  }) as Db['prepare'];
}

/**
 * A read-only connection for a reader thread (src/supervisor/readers.ts): the same cipher and
 * key, no migrations (the supervisor ran them), and `query_only` so that no code path reached
 * from a reader can write. In WAL mode it reads the last committed state without blocking the
 * writer or being blocked by it.
 */
export function openReader(file: string, dbKey: Buffer): Db {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma(`cipher='sqlcipher'`);
    db.pragma(`legacy=4`);
    db.pragma(`key="x'${dbKey.toString('hex')}'"`);
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('query_only = ON');
    checkSchema(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

function checkSchema(db: Db): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version !== MIGRATIONS.length) throw failed('SchemaMismatch', `The database schema is at version ${version}, expected ${MIGRATIONS.length}.`);
}

/** A database a newer svc migrated: name the snapshot taken before that, which this svc can open. */
function schemaTooNew(db: Db, version: number): StartupError {
  const message = `The database schema (version ${version}) is newer than this svc understands (${MIGRATIONS.length}): a newer svc release has upgraded this home.`;
  const snapshot = db.memory ? null : snapshotFor(db.name, MIGRATIONS.length);
  const fix = snapshot
    ? `Run the newer svc release again, or go back to the database as it was before the upgrade (mail and changes made since are not in it): stop svc, move svc.db, svc.db-wal and svc.db-shm out of the home, copy ${snapshot.file} to ${db.name}, and start this svc again.`
    : 'Run the newer svc release again; no snapshot of an older schema is kept in the home\'s snapshots directory, so restore a backup made with this release (`svc restore`) to go back.';
  return new StartupError('database_failed', 'SchemaTooNew', message, fix);
}

export function migrate(db: Db, onUpgrade?: (from: number, to: number) => void): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > MIGRATIONS.length) throw schemaTooNew(db, version);
  const upgrading = version > 0 && version < MIGRATIONS.length;
  if (upgrading) onUpgrade?.(version, MIGRATIONS.length);
  // The way back to the svc that made this database: a copy as its schema had it (docs/backup.md).
  if (upgrading && !db.memory) {
    try {
      takeSnapshot(db, version);
    } catch {
      throw new StartupError('database_failed', 'SnapshotFailed', `svc could not keep a snapshot of the database (schema ${version}) before upgrading it, so it did not upgrade it.`, 'Free disk space in the home (a snapshot needs about the size of svc.db), then start svc again.');
    }
  }
  migrating.add(db);
  try {
    migrateFrom(db, version);
  } finally {
    migrating.delete(db);
  }
}

function migrateFrom(db: Db, version: number): void {
  for (let v = version; v < MIGRATIONS.length; v++) {
    // A table rebuild (SQLite's twelve steps) needs foreign keys off, which only changes outside a transaction.
    const keysOff = FOREIGN_KEYS_OFF.has(v + 1);
    if (keysOff) db.pragma('foreign_keys = OFF');
    try {
      db.transaction(() => {
        db.exec(MIGRATIONS[v]);
        if (keysOff && (db.pragma('foreign_key_check') as unknown[]).length > 0) throw failed('MigrationFailed', `Schema migration ${v + 1} would break a reference between tables.`);
        db.pragma(`user_version = ${v + 1}`);
      })();
    } finally {
      if (keysOff) db.pragma('foreign_keys = ON');
    }
  }
}

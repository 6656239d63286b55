/** Opens svc.db with SQLCipher encryption, WAL and migrations. */
import Database from 'better-sqlite3-multiple-ciphers';
import { StartupError } from '../keys/startup-error.js';
import { MIGRATIONS } from './migrations.js';

export type Db = Database.Database;

const failed = (cause: string, message: string) =>
  new StartupError('database_failed', cause, message, 'Check disk space and that svc.db in the home is intact; restore the whole home from a backup if it is damaged.');

function sqliteCode(err: unknown): string {
  return typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
}

/**
 * Opens (or creates) the database. `migrate` runs pending migrations; loop workers open
 * without it because the supervisor already migrated.
 */
export function openDatabase(file: string, dbKey: Buffer, opts: { migrate: boolean }): Db {
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
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    if (opts.migrate) migrate(db);
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

function checkSchema(db: Db): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version !== MIGRATIONS.length) throw failed('SchemaMismatch', `The database schema is at version ${version}, expected ${MIGRATIONS.length}.`);
}

function migrate(db: Db): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > MIGRATIONS.length) {
    throw failed('SchemaTooNew', `The database schema (version ${version}) is newer than this svc understands (${MIGRATIONS.length}).`);
  }
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

/**
 * A consistent, encrypted copy of svc.db, made in a thread of its own with `VACUUM INTO`:
 * SQLite's online copy, which reads one snapshot in a single read transaction. In WAL mode a
 * reader never blocks the writers, so mail keeps arriving while the copy is made, and the copy
 * is exactly the database as of one commit. SQLite3MultipleCiphers writes the copy with the
 * main database's cipher and key (checked by test/e2e/backup-restore.test.ts: no plaintext).
 * (The backup API proper cannot write into an encrypted target through better-sqlite3.)
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3-multiple-ciphers';

interface ThreadData {
  vacuumInto: { dbFile: string; dbKey: Uint8Array; target: string };
}

/** What the copy holds: its schema version. */
export interface VacuumResult {
  schemaVersion: number;
}

/** How long the copy's connection waits for a lock (a checkpoint's, briefly) before giving up. */
const BUSY_TIMEOUT_MS = 30_000;

function copy(job: ThreadData['vacuumInto']): VacuumResult {
  const hex = Buffer.from(job.dbKey).toString('hex');
  const db = new Database(job.dbFile, { readonly: true, fileMustExist: true });
  try {
    db.pragma(`cipher='sqlcipher'`);
    db.pragma('legacy=4');
    db.pragma(`key="x'${hex}'"`);
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.prepare('VACUUM INTO ?').run(job.target);
  } finally {
    db.close();
  }
  // Read back from the copy: it opens with the same key and says what schema it holds.
  const check = new Database(job.target, { readonly: true, fileMustExist: true });
  try {
    check.pragma(`cipher='sqlcipher'`);
    check.pragma('legacy=4');
    check.pragma(`key="x'${hex}'"`);
    const ok = check.pragma('quick_check', { simple: true });
    if (ok !== 'ok') throw new Error('the copy failed its integrity check');
    return { schemaVersion: check.pragma('user_version', { simple: true }) as number };
  } finally {
    check.close();
  }
}

/** Copies `dbFile` to `target` (which must not exist) off the calling thread. */
export function vacuumInto(dbFile: string, dbKey: Buffer, target: string): Promise<VacuumResult> {
  return new Promise((resolve, reject) => {
    const key = new Uint8Array(dbKey);
    const worker = new Worker(new URL(import.meta.url), { workerData: { vacuumInto: { dbFile, dbKey: key, target } } satisfies ThreadData, name: 'backup' });
    // The thread got its own copy; this one is not needed any more.
    key.fill(0);
    let answered = false;
    worker.once('message', (result: VacuumResult) => {
      answered = true;
      resolve(result);
    });
    worker.once('error', (err) => {
      answered = true;
      reject(err);
    });
    worker.once('exit', () => {
      if (!answered) reject(new Error('the backup thread stopped without an answer'));
    });
  });
}

const data = workerData as ThreadData | undefined;
if (!isMainThread && parentPort && data?.vacuumInto) {
  const result = copy(data.vacuumInto);
  data.vacuumInto.dbKey.fill(0);
  parentPort.postMessage(result);
}

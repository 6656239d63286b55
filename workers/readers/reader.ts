/**
 * Reader thread (Piscina task file, src/supervisor/readers.ts): answers read requests on its own
 * read-only connection, so queries and search never run on the request thread and N cores serve
 * N reads at once. The connection is opened on the first task and kept for the thread's life.
 *
 * An ApiError (404, 403, a stale page token) is an answer, not a failure: it comes back as data
 * and the main thread throws it again, so the caller sees the same error as before.
 */
import { workerData } from 'piscina';
import { openReader, type Db } from '../../src/db/open.js';
import { ApiError } from '../../src/core/errors.js';
import { prepared } from '../../src/db/statements.js';
import { READ_OPS, type ReadOp } from '../../src/requests/read-ops.js';

export interface ReaderWorkerData {
  dbFile: string;
  dbKey: Uint8Array;
}

export interface ReadTask {
  op: ReadOp;
  args: unknown[];
}

export type ReadAnswer = { ok: true; value: unknown } | { ok: false; error: { code: ApiError['code']; message: string; fix?: string; extra?: Record<string, unknown>; headers?: Record<string, string> } };

let db: Db | null = null;

function connection(): Db {
  if (db) return db;
  const data = workerData as ReaderWorkerData;
  const key = Buffer.from(data.dbKey);
  try {
    db = openReader(data.dbFile, key);
  } finally {
    key.fill(0);
    data.dbKey.fill(0);
  }
  return db;
}

/**
 * One read request inside one read transaction, so every query of it (a page and its next
 * token, a thread and its messages) sees the same committed state.
 */
export default function read({ op, args }: ReadTask): ReadAnswer {
  if (!Object.hasOwn(READ_OPS, op)) throw new Error('unknown read operation');
  const run = READ_OPS[op] as (db: Db, ...rest: unknown[]) => unknown;
  const conn = connection();
  prepared(conn, 'BEGIN').run();
  try {
    return { ok: true, value: run(conn, ...args) };
  } catch (err) {
    if (err instanceof ApiError) return { ok: false, error: { code: err.code, message: err.message, fix: err.fix, extra: err.extra, headers: err.headers } };
    throw err;
  } finally {
    prepared(conn, 'COMMIT').run();
  }
}

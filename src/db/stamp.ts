/**
 * A token that changes whenever the database may have changed, for in-memory caches derived from
 * it (the read cache, API key lookups).
 *
 * In WAL mode every commit, by any connection or process, appends to `svc.db-wal`, so the WAL
 * file's size and modification time (nanoseconds) change with it: one stat call instead of a read
 * transaction on the encrypted database. The stat is shared by all requests handled in the same
 * event-loop turn (a write that finished before a request was sent is always seen by it), and
 * `noteChange()` marks this process's own writes at once.
 */
import fs from 'node:fs';
import type { Db } from './open.js';

let generation = 0;
const walThisTurn = new Map<string, string>();

export function noteChange(): void {
  generation++;
}

function walState(file: string): string {
  let state = walThisTurn.get(file);
  if (state === undefined) {
    const wal = fs.statSync(`${file}-wal`, { bigint: true, throwIfNoEntry: false });
    state = wal ? `${wal.size}:${wal.mtimeNs}:${wal.ino}` : 'none';
    if (walThisTurn.size === 0) setImmediate(() => walThisTurn.clear());
    walThisTurn.set(file, state);
  }
  return state;
}

export function dbStamp(db: Db): string {
  return `${walState(db.name)}:${generation}`;
}

/**
 * Migration snapshots: before svc migrates a database to a newer schema, it keeps a copy of the
 * database as the previous schema had it, in `<home>/snapshots/schema-<N>-<time>.db`, encrypted
 * with the same key. Migrations run forward only; a snapshot is the way back to the older svc.
 * An older svc refused by a newer database names the snapshot to put back (docs/backup.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3-multiple-ciphers';

/** How many snapshots are kept; the oldest go first. Each is about the size of svc.db. */
export const SNAPSHOTS_KEPT = 3;
const NAME = /^schema-(\d+)-(\d{8}T\d{6}Z)\.db$/;

export const snapshotDir = (dbFile: string) => path.join(path.dirname(dbFile), 'snapshots');

export interface Snapshot {
  file: string;
  schemaVersion: number;
  takenAt: string;
}

export function listSnapshots(dbFile: string): Snapshot[] {
  let names: string[];
  try {
    names = fs.readdirSync(snapshotDir(dbFile));
  } catch {
    return [];
  }
  const found: Snapshot[] = [];
  for (const name of names) {
    const m = NAME.exec(name);
    if (m) found.push({ file: path.join(snapshotDir(dbFile), name), schemaVersion: Number(m[1]), takenAt: m[2] });
  }
  // Oldest first: the stamp sorts as text.
  return found.sort((a, b) => a.takenAt.localeCompare(b.takenAt) || a.schemaVersion - b.schemaVersion);
}

const stamp = (d: Date) => d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');

/**
 * Copies the open database (schema `version`) into the snapshot directory with `VACUUM INTO`
 * (a consistent copy, written with the same cipher and key), synced and renamed into place, then
 * drops the oldest beyond SNAPSHOTS_KEPT. Runs at start, before the migrations and before any
 * other connection exists.
 */
export function takeSnapshot(db: Database.Database, version: number, now = new Date()): string {
  const dir = snapshotDir(db.name);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `schema-${version}-${stamp(now)}.db`);
  const tmp = `${file}.partial-${process.pid}`;
  fs.rmSync(tmp, { force: true });
  // exec, not prepare: VACUUM cannot run inside the transaction a prepared write is wrapped in (src/db/open.ts).
  db.exec(`VACUUM INTO '${tmp.replace(/'/g, "''")}'`);
  const fd = fs.openSync(tmp, 'r+');
  try {
    fs.fchmodSync(fd, 0o600);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  const all = listSnapshots(db.name);
  for (const old of all.slice(0, Math.max(0, all.length - SNAPSHOTS_KEPT))) fs.rmSync(old.file, { force: true });
  return file;
}

/** The newest snapshot an svc that knows `known` migrations can open, if any. */
export function snapshotFor(dbFile: string, known: number): Snapshot | null {
  const usable = listSnapshots(dbFile).filter((s) => s.schemaVersion <= known);
  return usable.length ? usable[usable.length - 1] : null;
}

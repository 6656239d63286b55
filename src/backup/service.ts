/**
 * Backups of a home: a consistent encrypted copy of svc.db (src/backup/vacuum-thread.ts) put
 * into a backup file (src/backup/format.ts) with keys.json's recovery block. The running service
 * makes them for `svc backup` (the CLI may not be able to unlock the home itself, e.g. when the
 * key-encryption key is a systemd credential of the service), and the CLI makes them itself
 * when svc is stopped. The time of the last backup is kept in the settings table.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../db/open.js';
import { homeFiles } from '../keys/home.js';
import { packageRoot } from '../cli/package-root.js';
import { addRecoveryCode, readKeys, recoveryBlockOf } from './recovery-file.js';
import { writeBackupFile, type BackupManifest } from './format.js';
import { vacuumInto } from './vacuum-thread.js';

/** Backups being made live here until they are handed over; emptied when svc starts. */
export const backupWorkDir = (home: string) => path.join(home, 'backup-work');
const LAST_BACKUP_KEY = 'backup.last';

export class NoRecoveryCode extends Error {}
export class BackupBusy extends Error {}

export interface LastBackup {
  at: string;
  size: number;
}

export function readLastBackup(db: Db): LastBackup | null {
  const row = db.prepare('SELECT value FROM settings WHERE key = ?').get(LAST_BACKUP_KEY) as { value: string } | undefined;
  if (!row) return null;
  try {
    const v = JSON.parse(row.value) as Partial<LastBackup>;
    return typeof v.at === 'string' && typeof v.size === 'number' ? { at: v.at, size: v.size } : null;
  } catch {
    return null;
  }
}

export function recordBackup(db: Db, last: LastBackup): void {
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(LAST_BACKUP_KEY, JSON.stringify(last));
}

function svcVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export interface MadeBackup {
  file: string;
  manifest: BackupManifest;
  size: number;
}

export class BackupService {
  #busy = false;

  constructor(
    readonly home: string,
    readonly homeId: string,
    /** The supervisor's database key: zeroed by it on shutdown. */
    private readonly dbKey: Buffer,
  ) {}

  /** Removes what a backup cut short (svc killed while making one) left in the home. */
  clearLeftovers(): void {
    fs.rmSync(backupWorkDir(this.home), { recursive: true, force: true });
  }

  hasRecoveryCode(): boolean {
    try {
      return recoveryBlockOf(readKeys(this.home)) !== null;
    } catch {
      return false;
    }
  }

  addRecoveryCode(rotate: boolean): string {
    return addRecoveryCode(this.home, this.dbKey, rotate);
  }

  /**
   * Makes a backup file at `file` (or in the home's work directory when null) and returns it.
   * One at a time: a second request while one runs gets BackupBusy.
   */
  async make(file: string | null): Promise<MadeBackup> {
    if (this.#busy) throw new BackupBusy();
    const recovery = recoveryBlockOf(readKeys(this.home));
    if (!recovery) throw new NoRecoveryCode();
    this.#busy = true;
    const work = backupWorkDir(this.home);
    const id = `${Date.now()}-${randomBytes(4).toString('hex')}`;
    const copy = path.join(work, `copy-${id}.db`);
    try {
      fs.mkdirSync(work, { recursive: true, mode: 0o700 });
      const { schemaVersion } = await vacuumInto(homeFiles(this.home).db, this.dbKey, copy);
      await fs.promises.chmod(copy, 0o600);
      const target = file ?? path.join(work, `backup-${id}.svcbackup`);
      const manifest = await writeBackupFile(target, copy, { home_id: this.homeId, schema_version: schemaVersion, svc_version: svcVersion(), created_at: new Date().toISOString(), recovery }, this.dbKey);
      return { file: target, manifest, size: (await fs.promises.stat(target)).size };
    } finally {
      await fs.promises.rm(copy, { force: true }).catch(() => undefined);
      this.#busy = false;
    }
  }
}

/**
 * `svc backup --to FILE`, `svc restore FILE --home DIR --recovery-code-file PATH` and
 * `svc key recovery` (docs/backup.md). Backup and key recovery ask the running service, which
 * holds the unlocked key (the CLI may not be able to read it, e.g. a systemd credential); when
 * svc is stopped they unlock the home themselves. Restore needs no service and no credential
 * store entry: the recovery code opens the backup, and the new home gets a key of its own.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Database from 'better-sqlite3-multiple-ciphers';
import { CliError } from './exit-codes.js';
import { opt, type Ctx, type Group } from './commands.js';
import { ownerHome, readOwnerConnection, rejectAgentEnvironment } from './owner-client.js';
import { fields, out, printJson } from './output.js';
import { homeFiles, prepareHome, writeFileAtomic } from '../keys/home.js';
import { unlockHome, wrap, type KeysFile, type Unlocked } from '../keys/unlock.js';
import { deleteKek, storeKek } from '../keys/credential-store.js';
import { StartupError } from '../keys/startup-error.js';
import { openDatabase } from '../db/open.js';
import { MIGRATIONS } from '../db/migrations.js';
import { BackupFileError, checkBackupFile, extractDatabase, partialName } from '../backup/format.js';
import { RecoveryError, normalizeRecoveryCode, unwrapWithRecoveryCode } from '../backup/recovery.js';
import { RecoveryExists, addRecoveryCode, recoveryCodeLine } from '../backup/recovery-file.js';
import { BackupService, NoRecoveryCode, recordBackup } from '../backup/service.js';

/** Making a backup copies the whole database; on a small server that can take minutes. */
const BACKUP_TIMEOUT_MS = 60 * 60 * 1000;

/** A home problem found while unlocking it directly, as the CLI reports it (exit 6). */
function asCliError(err: unknown): never {
  if (err instanceof CliError) throw err;
  if (err instanceof StartupError) throw new CliError('action_required', err.message, err.fix);
  throw err;
}

/** A stopped home unlocked here, its failures as the CLI reports them. */
function unlockStoppedHome(home: string): Unlocked {
  try {
    return unlockHome(home, false);
  } catch (err) {
    asCliError(err);
  }
}

/** The running service for this home, or null when it is not running (the home itself is intact). */
function runningService(home: string): { url: string; token: string } | null {
  try {
    const conn = readOwnerConnection(home);
    return { url: conn.url.replace(/\/+$/, ''), token: conn.ownerToken };
  } catch (err) {
    if (err instanceof CliError && err.code === 'service_unavailable') return null;
    throw err;
  }
}

async function ownerFetch(service: { url: string; token: string }, method: string, route: string, body: unknown, timeoutMs: number): Promise<Response | null> {
  try {
    return await fetch(service.url + route, {
      method,
      headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
  } catch (err) {
    // Nothing listens (a stale connection.json): the service is stopped.
    if ((err as Error).name === 'TimeoutError') throw new CliError('service_unavailable', 'The service did not finish the backup in time.', 'Check that svc is still running (`svc status`) and try again.');
    return null;
  }
}

async function apiFailure(res: Response): Promise<CliError> {
  const parsed = (await res.json().catch(() => ({}))) as { code?: string; message?: string; fix?: string };
  if (res.status === 401) return new CliError('service_unavailable', 'The owner token in connection.json was not accepted (is another svc on that port?).', 'Start svc for this home, then try again.');
  return new CliError((parsed.code ?? 'internal_error') as CliError['code'], parsed.message ?? `The service answered ${res.status}.`, parsed.fix);
}

function target(ctx: Ctx): string {
  const to = ctx.str('to');
  if (!to) throw new CliError('validation_error', 'Missing --to FILE.', 'Name the backup file, e.g. `svc backup --to ~/svc-$(date +%F).svcbackup`.');
  const file = path.resolve(to);
  const st = fs.statSync(file, { throwIfNoEntry: false });
  if (st?.isDirectory()) throw new CliError('validation_error', `--to ${to} is a directory.`, 'Name a file in it.');
  if (st && !ctx.bool('force')) throw new CliError('already_exists', `${file} exists already.`, 'Choose a new name, or add --force to replace it (it is replaced only once the new backup is complete).');
  if (!fs.statSync(path.dirname(file), { throwIfNoEntry: false })?.isDirectory()) throw new CliError('validation_error', `The directory of ${file} does not exist.`, 'Create it first.');
  return file;
}

/** Asks the running service for a backup and writes it to `file` (temporary name, checked, synced, renamed). */
async function backupThroughService(service: { url: string; token: string }, file: string): Promise<{ created_at: string; size: number } | null> {
  const res = await ownerFetch(service, 'POST', '/v0/owner/backup', {}, BACKUP_TIMEOUT_MS);
  if (!res) return null;
  if (!res.ok || !res.body) throw await apiFailure(res);
  const tmp = partialName(file);
  try {
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), fs.createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
    // What arrived is checked (length, end marker, checksum) before it takes the backup's name.
    const { manifest } = await checkBackupFile(tmp);
    const fd = fs.openSync(tmp, 'r+');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
    return { created_at: manifest.created_at, size: fs.statSync(file).size };
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    if (err instanceof BackupFileError) throw new CliError('service_unavailable', `The backup did not arrive whole: ${err.message}`, 'Try again.');
    throw new CliError('service_unavailable', 'The backup could not be received or written.', `Check the free space where ${file} goes, then try again.`);
  }
}

/** svc is stopped: unlock the home here and make the backup directly. */
async function backupDirectly(home: string, file: string): Promise<{ created_at: string; size: number }> {
  const unlocked = unlockStoppedHome(home);
  try {
    const made = await new BackupService(home, unlocked.homeId, unlocked.dbKey).make(file);
    try {
      const db = openDatabase(homeFiles(home).db, unlocked.dbKey, { migrate: false });
      try {
        recordBackup(db, { at: made.manifest.created_at, size: made.size });
      } finally {
        db.close();
      }
    } catch {
      // A database that this svc would first migrate still backs up; only the record is skipped.
    }
    return { created_at: made.manifest.created_at, size: made.size };
  } catch (err) {
    if (err instanceof NoRecoveryCode) throw noRecoveryCode();
    throw err;
  } finally {
    unlocked.dbKey.fill(0);
  }
}

const noRecoveryCode = () => new CliError('action_required', 'This home has no recovery code yet, and a backup without one could not be restored on another machine.', 'Run `svc key recovery` once, keep the code it prints, then run `svc backup` again.');

function readRecoveryCode(ctx: Ctx): string {
  const from = ctx.str('recovery-code-file');
  if (!from) throw new CliError('validation_error', 'Missing --recovery-code-file PATH.', 'Put the recovery code in a file (or pass - and type or pipe it on stdin).');
  const text = ctx.file('recovery-code-file')!.toString('utf8').trim();
  try {
    return normalizeRecoveryCode(text);
  } catch (err) {
    throw new CliError('validation_error', (err as Error).message, 'Use the code svc printed when the home was made (`home.recovery_code`), or by `svc key recovery`.');
  }
}

/** A home directory restore may use: one that does not exist, or an empty one. */
function freshHome(dir: string): { existed: boolean } {
  const st = fs.statSync(dir, { throwIfNoEntry: false });
  if (!st) return { existed: false };
  if (!st.isDirectory() || fs.readdirSync(dir).length > 0) {
    throw new CliError('already_exists', `${dir} exists and is not empty; restore never overwrites a home.`, 'Restore into a new directory with --home, or move the old home away first.');
  }
  return { existed: true };
}

async function restore(ctx: Ctx): Promise<void> {
  rejectAgentEnvironment('svc restore');
  const [source] = ctx.args;
  const homeFlag = ctx.str('home');
  if (!homeFlag) throw new CliError('validation_error', 'Missing --home DIR: the new home to restore into.', 'Name a directory that does not exist yet, e.g. --home ~/.local/share/svc.');
  const home = path.resolve(homeFlag);
  const { existed } = freshHome(home);
  const code = readRecoveryCode(ctx);
  let checked;
  try {
    checked = await checkBackupFile(path.resolve(source));
  } catch (err) {
    if (err instanceof BackupFileError) throw new CliError('validation_error', err.message, 'Use a backup file `svc backup` finished (an interrupted one never has the name you gave it).');
    throw err;
  }
  const { manifest } = checked;
  if (manifest.schema_version > MIGRATIONS.length) {
    throw new CliError('not_supported', `The backup was made by a newer svc (schema ${manifest.schema_version}; this svc knows ${MIGRATIONS.length}).`, `Install svc ${manifest.svc_version} or newer and restore with it.`);
  }
  let dbKey: Buffer;
  try {
    dbKey = unwrapWithRecoveryCode(code, manifest.recovery, manifest.home_id);
  } catch (err) {
    if (err instanceof RecoveryError) throw new CliError('action_required', err.message, 'Use the recovery code of the home this backup was made from (a rotated code opens only backups made after the rotation).');
    throw err;
  }
  process.umask(0o077);
  let keyStored = false;
  try {
    try {
      prepareHome(home, true);
    } catch (err) {
      asCliError(err);
    }
    const files = homeFiles(home);
    try {
      await extractDatabase(path.resolve(source), checked, dbKey, files.db);
    } catch (err) {
      if (err instanceof BackupFileError) throw new CliError('validation_error', err.message, 'Use an unaltered copy of the backup.');
      throw err;
    }
    checkOpens(files.db, dbKey, manifest.schema_version);
    // A new machine, a new credential store: this home gets a key-encryption key of its own; the
    // recovery block (and so the recovery code) stays the one the backup was made with.
    const kek = randomBytes(32);
    try {
      storeKek(home, kek);
      keyStored = true;
      const keys: KeysFile = { ...wrap(kek, dbKey, manifest.home_id), recovery: manifest.recovery };
      writeFileAtomic(files.keys, JSON.stringify(keys, null, 2) + '\n');
    } catch (err) {
      asCliError(err);
    } finally {
      kek.fill(0);
    }
  } catch (err) {
    // Nothing half-restored stays behind: the home is removed (it was new or empty), and its key.
    if (keyStored) {
      try {
        deleteKek(home);
      } catch {
        /* reported below */
      }
    }
    if (existed) for (const entry of fs.readdirSync(home)) fs.rmSync(path.join(home, entry), { recursive: true, force: true });
    else fs.rmSync(home, { recursive: true, force: true });
    throw err;
  } finally {
    dbKey.fill(0);
  }
  const report = { home, home_id: manifest.home_id, schema_version: manifest.schema_version, backup_created_at: manifest.created_at, svc_version: manifest.svc_version };
  if (ctx.json) return printJson(report);
  out(
    fields([
      ['restored', home],
      ['backup made', `${manifest.created_at} (svc ${manifest.svc_version})`],
      ['next', `svc serve --home "${home}"${manifest.schema_version < MIGRATIONS.length ? ' (upgrades the schema; a snapshot of the restored database is kept first)' : ''}`],
    ]),
  );
}

/** The extracted database opens with the key and holds the schema the manifest names. */
function checkOpens(dbFile: string, dbKey: Buffer, schemaVersion: number): void {
  const db = new Database(dbFile, { fileMustExist: true });
  try {
    db.pragma(`cipher='sqlcipher'`);
    db.pragma('legacy=4');
    db.pragma(`key="x'${dbKey.toString('hex')}'"`);
    if (db.pragma('quick_check', { simple: true }) !== 'ok') throw new Error('integrity');
    if (db.pragma('user_version', { simple: true }) !== schemaVersion) throw new Error('schema');
  } catch {
    throw new CliError('validation_error', 'The database in the backup does not open with its key or is damaged.', 'Use another backup of this home.');
  } finally {
    db.close();
  }
}

export const backup: Group = {
  name: 'backup',
  summary: 'make a backup file of the home (encrypted; svc running or stopped)',
  actions: {
    '': {
      summary: 'Make a consistent, encrypted backup of the home into FILE while svc runs (mail keeps arriving), or directly when svc is stopped. Restore it with `svc restore` and the recovery code.',
      options: [opt('to FILE', 'The backup file to write (written under a temporary name, renamed when complete).'), opt('force', 'Replace FILE if it exists.')],
      examples: ['svc backup --to ~/backups/svc-$(date +%F).svcbackup', 'svc backup --to /mnt/usb/svc.svcbackup --force --json'],
      async run(ctx) {
        rejectAgentEnvironment('svc backup');
        const file = target(ctx);
        const home = ownerHome({ home: ctx.str('home'), flavor: ctx.str('flavor') });
        const service = runningService(home);
        const viaService = service && (await backupThroughService(service, file));
        const made = viaService || (await backupDirectly(home, file));
        const report = { file, home, created_at: made.created_at, size: made.size, via: viaService ? 'service' : 'home' };
        if (ctx.json) return printJson(report);
        out(fields([['backup', file], ['made', made.created_at], ['size', `${made.size} bytes`], ['restore', `svc restore "${file}" --home NEW_DIR --recovery-code-file -`]]));
      },
    },
  },
};

export const restoreGroup: Group = {
  name: 'restore',
  summary: 'restore a backup file into a new home with the recovery code',
  actions: {
    '': {
      summary: 'Restore a backup made by `svc backup` into a new home (never over an existing one), on this machine or another: the recovery code opens it, and the new home gets its own key in this machine\'s credential store.',
      usage: '<FILE>',
      args: [1, 1],
      options: [opt('recovery-code-file PATH', 'The file holding the recovery code; - reads it from stdin.')],
      examples: ['svc restore svc.svcbackup --home ~/.local/share/svc --recovery-code-file -', 'svc restore /mnt/usb/svc.svcbackup --home /srv/svc --recovery-code-file ~/recovery.txt'],
      run: restore,
    },
  },
};

export const key: Group = {
  name: 'key',
  summary: 'the home\'s recovery code (owner)',
  actions: {
    recovery: {
      summary: 'Make the recovery code of a home created before svc printed one (prints it once, as a home.recovery_code JSON line). With --rotate, replace the existing code: backups made before keep needing the old one.',
      options: [opt('rotate', 'Replace the existing recovery code.')],
      examples: ['svc key recovery', 'svc key recovery --rotate'],
      async run(ctx) {
        rejectAgentEnvironment('svc key recovery');
        const rotate = ctx.bool('rotate');
        const home = ownerHome({ home: ctx.str('home'), flavor: ctx.str('flavor') });
        const service = runningService(home);
        let code: string | null = null;
        if (service) {
          const res = await ownerFetch(service, 'POST', '/v0/owner/recovery-code', rotate ? { rotate } : {}, 30_000);
          if (res) {
            if (!res.ok) throw await apiFailure(res);
            code = ((await res.json()) as { recovery_code: string }).recovery_code;
          }
        }
        if (code === null) {
          const unlocked = unlockStoppedHome(home);
          try {
            code = addRecoveryCode(home, unlocked.dbKey, rotate);
          } catch (err) {
            if (err instanceof RecoveryExists) throw new CliError('already_exists', 'This home has a recovery code already.', 'Use the code shown when the home was made. To replace it, run `svc key recovery --rotate`: backups made before then keep needing the old code.');
            throw err;
          } finally {
            unlocked.dbKey.fill(0);
          }
        }
        out(JSON.stringify(recoveryCodeLine(code)) + '\n');
      },
    },
  },
};

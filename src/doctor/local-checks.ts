/**
 * The checks that need only the home on disk, not the running service (docs/doctor.md): how the
 * home unlocks and that its key can be read now (and opens keys.json), whether a recovery code is
 * set, and the free space of the home's file system. `svc doctor` runs them itself when svc is
 * not running. Nothing here prints or keeps a key: each is zeroed after the check.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readKek } from '../keys/credential-store.js';
import { homeFiles } from '../keys/home.js';
import { KEK_BYTES, KEK_CREDENTIAL_NAME, kekCredentialFile } from '../keys/systemd-creds.js';
import { opensKeys, parseKeysFile, type KeysFile } from '../keys/unlock.js';
import { recoveryBlockOf } from '../backup/recovery-file.js';
import { DISK_FAIL_BYTES, DISK_WARN_BYTES } from './limits.js';
import type { DoctorCheck } from './schemas.js';

const TITLE = 'Credential store';

/** A size the way an operator reads it. */
export function sizeText(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  if (bytes >= 1024 ** 2) return `${Math.round(bytes / 1024 ** 2)} MiB`;
  return `${Math.round(bytes / 1024)} KiB`;
}

/** The key that unlocks the home, as the unit that runs svc reads it; null when it is not there. */
function readUnlockKey(home: string, keys: KeysFile, env: NodeJS.ProcessEnv): { kek: Buffer | null; where: string } {
  if (keys.unlock !== 'systemd-creds') return { kek: readKek(home), where: 'the OS credential store (keyring)' };
  const dir = env.CREDENTIALS_DIRECTORY;
  if (!dir) return { kek: null, where: `the sealed systemd credential ${kekCredentialFile(home)}` };
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(path.join(dir, KEK_CREDENTIAL_NAME));
  } catch {
    return { kek: null, where: `$CREDENTIALS_DIRECTORY/${KEK_CREDENTIAL_NAME}` };
  }
  if (bytes.length !== KEK_BYTES) {
    bytes.fill(0);
    return { kek: null, where: `$CREDENTIALS_DIRECTORY/${KEK_CREDENTIAL_NAME}` };
  }
  return { kek: bytes, where: `the systemd credential $CREDENTIALS_DIRECTORY/${KEK_CREDENTIAL_NAME}` };
}

/**
 * How this home unlocks and whether that works now: the keyring item (or the systemd credential
 * the unit passes) is read and must open keys.json. A systemd-creds home checked outside its unit
 * (no $CREDENTIALS_DIRECTORY) is judged by its sealed file: decrypting it needs root and a TPM or
 * the host key, which the doctor does not ask for. No recovery code warns: a backup of such a home
 * cannot be restored elsewhere.
 */
export function credentialStoreCheck(home: string, env: NodeJS.ProcessEnv = process.env): DoctorCheck {
  const check = (status: DoctorCheck['status'], detail: string, fix: string | null): DoctorCheck => ({ id: 'credential_store', title: TITLE, status, detail, fix });
  let keys: KeysFile;
  try {
    keys = parseKeysFile(fs.readFileSync(homeFiles(home).keys, 'utf8'));
  } catch {
    return check('fail', `keys.json in ${home} is missing, unreadable or damaged, so the home cannot be unlocked.`, 'Restore keys.json together with svc.db from the same home backup (`svc restore`).');
  }
  let found: { kek: Buffer | null; where: string };
  try {
    found = readUnlockKey(home, keys, env);
  } catch (err) {
    const fix = (err as { fix?: unknown }).fix;
    return check('fail', 'The OS credential store is locked or unavailable, so this home cannot be unlocked.', typeof fix === 'string' ? fix : 'Unlock the credential store for this user and try again.');
  }
  let unlocks: string;
  if (keys.unlock === 'systemd-creds' && !env.CREDENTIALS_DIRECTORY) {
    if (!fs.existsSync(kekCredentialFile(home))) {
      return check('fail', `The sealed credential ${kekCredentialFile(home)} that unlocks this home is missing.`, 'Restore it from a backup of this machine; a credential sealed on another machine does not open here.');
    }
    unlocks = `Unlocks with ${found.where} (present; its unit decrypts it at start).`;
  } else {
    if (!found.kek) {
      return check(
        'fail',
        `The key that unlocks this home is not in ${found.where}.`,
        keys.unlock === 'systemd-creds'
          ? `Check that the unit loads it (LoadCredentialEncrypted=${KEK_CREDENTIAL_NAME}:${kekCredentialFile(home)}); \`svc service install --system\` writes that line.`
          : "Restore the item from this user's keychain backup, or use the home on the machine that holds it.",
      );
    }
    if (!opensKeys(found.kek, keys)) {
      return check('fail', `The key in ${found.where} does not open this home's keys.json (it belongs to another home).`, 'Restore keys.json and svc.db together from the same home backup, on the machine whose credential store holds its key.');
    }
    unlocks = `Unlocks with ${found.where}; the key is readable now and opens keys.json.`;
  }
  let recovery = false;
  try {
    recovery = recoveryBlockOf(keys) !== null;
  } catch {
    recovery = false;
  }
  if (!recovery) return check('warn', `${unlocks} No recovery code is set, so a backup of this home cannot be restored on another machine.`, 'Run `svc key recovery` once and keep the code it prints apart from this machine.');
  return check('pass', `${unlocks} A recovery code is set.`, null);
}

/** Bytes of svc.db and its WAL: a backup needs about twice that free (docs/backup.md). */
function databaseBytes(home: string): number {
  const files = homeFiles(home);
  let total = 0;
  for (const file of [files.db, `${files.db}-wal`]) total += fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  return total;
}

/** Free space on the home's file system: fail under DISK_FAIL_BYTES, warn under DISK_WARN_BYTES or twice svc.db. */
export async function diskSpaceCheck(home: string): Promise<DoctorCheck> {
  const check = (status: DoctorCheck['status'], detail: string, fix: string | null): DoctorCheck => ({ id: 'disk', title: 'Disk space', status, detail, fix });
  let free: number;
  let total: number;
  try {
    const stats = await fs.promises.statfs(home);
    free = stats.bavail * stats.bsize;
    total = stats.blocks * stats.bsize;
  } catch {
    return check('fail', `The free space of ${home} could not be read.`, 'Check that the home directory exists and belongs to the user svc runs as.');
  }
  const db = databaseBytes(home);
  const warnBelow = Math.max(DISK_WARN_BYTES, 2 * db);
  const detail = `${sizeText(free)} free of ${sizeText(total)} on the file system of ${home} (svc.db is ${sizeText(db)}).`;
  const fix = `Free space on that file system or move the home to a larger one; svc needs at least ${sizeText(DISK_FAIL_BYTES)} to write safely and about twice svc.db to make a backup.`;
  if (free < DISK_FAIL_BYTES) return check('fail', `${detail} Writes may fail at any moment.`, fix);
  if (free < warnBelow) return check('warn', `${detail} Less than ${sizeText(warnBelow)} is left.`, fix);
  return check('pass', detail, null);
}

/**
 * The backup file: one file holding a manifest, the home's recovery block and its database,
 * still encrypted with the database key (the backup never holds plaintext):
 *
 *   "SVCBKP01" | manifest length (u32 BE) | manifest JSON | database bytes | MAC (32) | "SVCEND01"
 *
 * The manifest names the database's size and SHA-256, so a copy can be checked without any key;
 * the MAC (HMAC-SHA256 under a key derived from the database key) covers everything before it,
 * so a restore that has unwrapped the key also knows nothing was changed or swapped. Files are
 * written under a temporary name, synced and renamed last: a write cut short (kill -9, a full
 * disk) never leaves a file under the backup's name.
 */
import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual, type Hash, type Hmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseRecoveryBlock, type RecoveryBlock } from './recovery.js';

const MAGIC = Buffer.from('SVCBKP01');
const END = Buffer.from('SVCEND01');
const MAC_BYTES = 32;
const HEADER_BYTES = MAGIC.length + 4;
const TRAILER_BYTES = MAC_BYTES + END.length;
/** A manifest is a few hundred bytes; anything far larger is not one of ours. */
const MAX_MANIFEST_BYTES = 64 * 1024;
/** Copy buffer: bounded memory however large the database is. */
const CHUNK_BYTES = 1024 * 1024;
export const BACKUP_FORMAT = 1;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  home_id: string;
  /** The database's PRAGMA user_version: how many schema migrations it has. */
  schema_version: number;
  svc_version: string;
  created_at: string;
  database: { size: number; sha256: string };
  recovery: RecoveryBlock;
}

export class BackupFileError extends Error {}

const damaged = (why: string) => new BackupFileError(`The file is not a complete svc backup: ${why}.`);

function macKey(dbKey: Buffer, homeId: string): Buffer {
  return Buffer.from(hkdfSync('sha256', dbKey, Buffer.alloc(0), `svc backup mac v1 ${homeId}`, 32));
}

/** Removes a temporary file left behind; it may not exist. */
async function discard(file: string): Promise<void> {
  await fs.promises.rm(file, { force: true }).catch(() => undefined);
}

/** The temporary name a file is written under before it is renamed to `file`; same directory, so rename is atomic. */
export function partialName(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.partial-${process.pid}-${randomBytes(4).toString('hex')}`);
}

async function syncDirectory(dir: string): Promise<void> {
  // Makes the rename itself durable; not every platform can open a directory.
  const handle = await fs.promises.open(dir, 'r').catch(() => null);
  if (!handle) return;
  await handle.sync().catch(() => undefined);
  await handle.close();
}

/** Copies `length` bytes of `from` starting at `offset` into `to`, feeding each chunk to `sinks`. */
async function copyRange(from: fs.promises.FileHandle, offset: number, length: number, to: fs.promises.FileHandle | null, sinks: (Hash | Hmac)[]): Promise<void> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await from.read(buffer, 0, Math.min(CHUNK_BYTES, length - done), offset + done);
    if (bytesRead === 0) throw damaged('it ends early');
    const chunk = buffer.subarray(0, bytesRead);
    for (const s of sinks) s.update(chunk);
    if (to) await to.write(chunk);
    done += bytesRead;
  }
}

/**
 * Writes a backup of the encrypted database file `dbFile` (a consistent copy made for this
 * backup) to `file`, mode 0600, renamed into place only once complete and synced.
 */
export async function writeBackupFile(file: string, dbFile: string, manifest: Omit<BackupManifest, 'database' | 'format'>, dbKey: Buffer): Promise<BackupManifest> {
  const size = (await fs.promises.stat(dbFile)).size;
  const sha = createHash('sha256');
  const db = await fs.promises.open(dbFile, 'r');
  try {
    await copyRange(db, 0, size, null, [sha]);
  } finally {
    await db.close();
  }
  const full: BackupManifest = { format: BACKUP_FORMAT, ...manifest, database: { size, sha256: sha.digest('hex') } };
  const json = Buffer.from(JSON.stringify(full));
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header);
  header.writeUInt32BE(json.length, MAGIC.length);
  const key = macKey(dbKey, full.home_id);
  const mac = createHmac('sha256', key);
  key.fill(0);
  const tmp = partialName(file);
  const out = await fs.promises.open(tmp, 'wx', 0o600);
  try {
    const head = Buffer.concat([header, json]);
    mac.update(head);
    await out.write(head);
    const src = await fs.promises.open(dbFile, 'r');
    const check = createHash('sha256');
    try {
      await copyRange(src, 0, size, out, [mac, check]);
    } finally {
      await src.close();
    }
    // The copy is checked against the hash taken above: the source must not have changed between.
    if (check.digest('hex') !== full.database.sha256) throw new BackupFileError('The database copy changed while the backup was written.');
    await out.write(Buffer.concat([mac.digest(), END]));
    await out.sync();
  } catch (err) {
    await out.close().catch(() => undefined);
    await discard(tmp);
    throw err;
  }
  await out.close();
  await fs.promises.rename(tmp, file);
  await syncDirectory(path.dirname(file));
  return full;
}

function parseManifest(json: Buffer): BackupManifest {
  let data: unknown;
  try {
    data = JSON.parse(json.toString('utf8'));
  } catch {
    throw damaged('its manifest is not JSON');
  }
  const m = data as Partial<BackupManifest> | null;
  if (!m || typeof m !== 'object') throw damaged('its manifest is not an object');
  if (m.format !== BACKUP_FORMAT) throw new BackupFileError(`The backup has format ${String(m.format)}; this svc reads format ${BACKUP_FORMAT}. Restore it with the svc release that made it, or a newer one.`);
  if (typeof m.home_id !== 'string' || !Number.isInteger(m.schema_version) || typeof m.created_at !== 'string' || typeof m.svc_version !== 'string') throw damaged('its manifest lacks fields');
  const d = m.database;
  if (!d || typeof d !== 'object' || !Number.isSafeInteger(d.size) || d.size < 0 || typeof d.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(d.sha256)) throw damaged('its manifest does not describe the database');
  const recovery = parseRecoveryBlock(m.recovery);
  if (!recovery) throw damaged('its recovery block is missing or malformed');
  return { ...(m as BackupManifest), recovery };
}

export interface CheckedBackup {
  manifest: BackupManifest;
  /** Where the database bytes start in the file. */
  dbOffset: number;
  /** The MAC stored in the file, checked by `verifyBackupMac` once the database key is known. */
  mac: Buffer;
}

/**
 * Checks a backup file without any key: the magic, the manifest, the length, the end marker and
 * the database's SHA-256. A file cut short or changed in transit fails here.
 */
export async function checkBackupFile(file: string): Promise<CheckedBackup> {
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file, 'r');
  } catch {
    throw new BackupFileError(`The backup file ${file} cannot be read.`);
  }
  try {
    const total = (await handle.stat()).size;
    if (total < HEADER_BYTES + TRAILER_BYTES) throw damaged('it is too short');
    const header = Buffer.alloc(HEADER_BYTES);
    await handle.read(header, 0, HEADER_BYTES, 0);
    if (!header.subarray(0, MAGIC.length).equals(MAGIC)) throw damaged('it does not start as one');
    const length = header.readUInt32BE(MAGIC.length);
    if (length > MAX_MANIFEST_BYTES || HEADER_BYTES + length + TRAILER_BYTES > total) throw damaged('its manifest length is wrong');
    const json = Buffer.alloc(length);
    await handle.read(json, 0, length, HEADER_BYTES);
    const manifest = parseManifest(json);
    const dbOffset = HEADER_BYTES + length;
    if (dbOffset + manifest.database.size + TRAILER_BYTES !== total) throw damaged('its length does not match its manifest (cut short?)');
    const trailer = Buffer.alloc(TRAILER_BYTES);
    await handle.read(trailer, 0, TRAILER_BYTES, total - TRAILER_BYTES);
    if (!trailer.subarray(MAC_BYTES).equals(END)) throw damaged('its end marker is missing');
    const sha = createHash('sha256');
    await copyRange(handle, dbOffset, manifest.database.size, null, [sha]);
    if (sha.digest('hex') !== manifest.database.sha256) throw damaged('the database does not match its checksum');
    return { manifest, dbOffset, mac: trailer.subarray(0, MAC_BYTES) };
  } finally {
    await handle.close();
  }
}

/** Checks the MAC with the unwrapped database key and copies the database out to `dbFile` (0600). */
export async function extractDatabase(file: string, checked: CheckedBackup, dbKey: Buffer, dbFile: string): Promise<void> {
  const key = macKey(dbKey, checked.manifest.home_id);
  const mac = createHmac('sha256', key);
  key.fill(0);
  const src = await fs.promises.open(file, 'r');
  const tmp = partialName(dbFile);
  const out = await fs.promises.open(tmp, 'wx', 0o600);
  try {
    const head = Buffer.alloc(checked.dbOffset);
    await src.read(head, 0, head.length, 0);
    mac.update(head);
    await copyRange(src, checked.dbOffset, checked.manifest.database.size, out, [mac]);
    const expected = mac.digest();
    if (expected.length !== checked.mac.length || !timingSafeEqual(expected, checked.mac)) throw new BackupFileError('The backup was changed after it was made (its MAC does not match); it is not restored.');
    await out.sync();
  } catch (err) {
    await out.close().catch(() => undefined);
    await discard(tmp);
    throw err;
  } finally {
    await src.close();
  }
  await out.close();
  await fs.promises.rename(tmp, dbFile);
}

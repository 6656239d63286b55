/** Small file primitives the edge needs for "on disk before 250": private modes and fsync of files and directories. */
import fs from 'node:fs';
import fsp from 'node:fs/promises';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** A rename or unlink is durable only once its directory is flushed too. */
export function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export async function fsyncDirectoryAsync(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Creates `file` (which must not exist), writes `data`, fsyncs and closes it. */
export async function writeNewFileSynced(file: string, data: string | Buffer | readonly Buffer[]): Promise<void> {
  const handle = await fsp.open(file, 'wx', PRIVATE_FILE_MODE);
  try {
    // Each writeFile continues at the handle's position, so parts are written whole, in order.
    for (const part of typeof data === 'string' || Buffer.isBuffer(data) ? [data] : data) await handle.writeFile(part);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** mkdir -p with mode 0700 for every directory the edge creates; existing ones are tightened to 0700. */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  fs.chmodSync(dir, PRIVATE_DIR_MODE);
}

/** Removes a file; a missing file is not an error (deletes are idempotent). */
export async function removeIfPresent(file: string): Promise<boolean> {
  try {
    await fsp.unlink(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Small file primitives the edge needs for "on disk before 250": private modes and fsync of files and directories. */
import fs from 'node:fs';
import fsp from 'node:fs/promises';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** Parts handed to one writev (below every system's IOV_MAX, 1024 on Linux). */
const WRITEV_MAX_PARTS = 512;

/** A rename or unlink is durable only once its directory is flushed too. */
export function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export function fsyncDirectoryAsync(dir: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    fs.open(dir, 'r', (openErr, fd) => {
      if (openErr) return reject(openErr);
      fs.fsync(fd, (syncErr) => fs.close(fd, (closeErr) => (syncErr ?? closeErr ? reject(syncErr ?? closeErr) : resolve())));
    });
  });
}

/**
 * Creates `file` (which must not exist), writes `data`, fsyncs and closes it. Plain descriptors
 * and callbacks, one promise per file: the edge writes two files per accepted message, and a
 * FileHandle with a promise per step cost it more CPU than the writes (issue 37 §2).
 */
export function writeNewFileSynced(file: string, data: string | Buffer | readonly Buffer[]): Promise<void> {
  const parts = typeof data === 'string' ? [Buffer.from(data)] : Buffer.isBuffer(data) ? [data] : data;
  return new Promise<void>((resolve, reject) => {
    fs.open(file, 'wx', PRIVATE_FILE_MODE, (openErr, fd) => {
      if (openErr) return reject(openErr);
      const finish = (err: Error | null) => fs.close(fd, (closeErr) => (err ?? closeErr ? reject(err ?? closeErr) : resolve()));
      // writev may write less than asked: continue from where it stopped until every byte is out.
      const write = (rest: readonly Buffer[]) => {
        if (rest.length === 0) return fs.fsync(fd, finish);
        const batch = rest.slice(0, WRITEV_MAX_PARTS);
        fs.writev(fd, batch, (err, written) => {
          if (err) return finish(err);
          const left: Buffer[] = [];
          let skip = written;
          for (const part of batch) {
            if (skip >= part.length) skip -= part.length;
            else {
              left.push(skip > 0 ? part.subarray(skip) : part);
              skip = 0;
            }
          }
          write([...left, ...rest.slice(batch.length)]);
        });
      };
      write(parts.filter((p) => p.length > 0));
    });
  });
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

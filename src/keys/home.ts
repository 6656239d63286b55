/** Where a home lives and how it is prepared: directory 0700, files 0600. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StartupError } from './startup-error.js';

export type Flavor = 'production' | 'development';

export function defaultHome(flavor: Flavor, env: NodeJS.ProcessEnv = process.env): string {
  const name = flavor === 'production' ? 'svc' : 'svc-dev';
  if (process.platform === 'darwin') return path.join(os.homedir(), 'Library', 'Application Support', name);
  if (process.platform === 'win32') return path.join(env.LOCALAPPDATA ?? path.join(os.homedir(), 'AppData', 'Local'), name);
  return path.join(env.XDG_DATA_HOME || path.join(os.homedir(), '.local', 'share'), name);
}

/** `--home`, else `SVC_HOME`, else the flavor default; always absolute. */
export function resolveHome(opts: { home?: string; flavor: Flavor }, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(opts.home ?? env.SVC_HOME ?? defaultHome(opts.flavor, env));
}

/** First 16 hex characters of sha256(absolute home path): names the keyring item and non-default units. */
export function homeSuffix(home: string): string {
  return createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16);
}

export const homeFiles = (home: string) => ({
  keys: path.join(home, 'keys.json'),
  db: path.join(home, 'svc.db'),
  connection: path.join(home, 'connection.json'),
  logs: path.join(home, 'logs'),
});

const unavailable = (home: string) =>
  new StartupError(
    'home_unavailable',
    'HomeNotWritable',
    `The home directory ${home} cannot be created or written.`,
    'Choose a writable location with --home, or fix the directory permissions and free disk space.',
  );

/** Creates the home when `create` is set; checks that it is a writable directory either way. */
export function prepareHome(home: string, create: boolean): { existed: boolean } {
  let existed = true;
  try {
    const st = fs.statSync(home);
    if (!st.isDirectory()) throw unavailable(home);
  } catch (err) {
    if (err instanceof StartupError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw unavailable(home);
    existed = false;
    if (create) {
      makeDirs(home, unavailable);
    }
  }
  if (!existed && !create) return { existed };
  try {
    fs.chmodSync(home, 0o700);
    const probe = path.join(home, `.write-probe-${process.pid}`);
    fs.writeFileSync(probe, '', { mode: 0o600 });
    fs.rmSync(probe);
  } catch {
    throw unavailable(home);
  }
  return { existed };
}

/**
 * mkdir -p without `recursive: true`, which spins forever on some pseudo file systems
 * (e.g. a path under /proc) instead of failing.
 */
function makeDirs(dir: string, onError: (dir: string) => Error): void {
  const missing: string[] = [];
  let current = dir;
  while (!fs.existsSync(current)) {
    missing.unshift(current);
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  for (const d of missing) {
    try {
      fs.mkdirSync(d, { mode: 0o700 });
    } catch {
      throw onError(dir);
    }
  }
}

/** Writes a file atomically with mode 0600 (temp file, fsync, rename). */
export function writeFileAtomic(file: string, data: string | Buffer): void {
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

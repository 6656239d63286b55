/**
 * Disk-full and read-only homes (issue 10 item 2; spec §7.2 startup codes, §4.5 / §7.2
 * `service_unavailable` for storage failures). The home lives on a small tmpfs mounted for the
 * test, filled with a filler file or remounted read-only:
 * - start-up answers one `server.failed` line with the documented code (`key_storage_unavailable`,
 *   `home_unavailable`, `database_failed`, or `service_unavailable`/`ConnectionError`), no raw details;
 * - at runtime, writes answer `503 service_unavailable` with the error body (never a 500), reads
 *   keep working, and writes work again once space is back.
 * Mounting needs root (CI runs as root); where the kernel refuses, the tests say so and skip.
 * A home turned read-only while svc runs cannot be staged here: the kernel refuses to remount a
 * file system read-only while files on it are open for writing (SQLite's are), and root ignores
 * permission bits; start-up on a read-only home is covered, runtime storage failure by the full disk.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { api, failingStart, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { errorContractViolation } from '../helpers/fuzz.js';

const STARTUP_STORAGE_CODES = ['home_unavailable', 'key_storage_unavailable', 'database_failed'];

/**
 * Mounts a tmpfs of `bytes` at a new directory. These paths need root (CI runs as root); without
 * it the test fails with the reason rather than passing without having proved anything.
 */
function smallFilesystem(t: Tap, bytes: number): string {
  const dir = tempDir('svc-small-fs-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    throw new Error(`cannot mount a tmpfs (${String((err as { stderr?: Buffer }).stderr ?? err).trim()}): the storage tests need root`);
  }
  t.teardown(() => {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
    } catch {
      /* already gone */
    }
  });
  return dir;
}

const remount = (dir: string, mode: 'ro' | 'rw'): Buffer => execFileSync('mount', ['-o', `remount,${mode}`, dir], { stdio: 'pipe' });

/** Writes zeros until the file system is full. */
function fill(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  }
  // The last partial block too.
  try {
    for (;;) fs.writeSync(fd, Buffer.alloc(512));
  } catch {
    /* full */
  }
  fs.closeSync(fd);
  return filler;
}

type Tap = Parameters<Parameters<typeof t.test>[1]>[0];

function assertStartupLine(t: Tap, failure: Record<string, unknown>, stderr: string, codes: string[]): void {
  t.equal(failure.event, 'server.failed', stderr.slice(0, 300));
  t.ok(codes.includes(String(failure.code)), `code ${String(failure.code)} (${String(failure.cause)}) is one of ${codes.join(', ')}`);
  t.match(failure, { message: String, fix: String });
  t.notMatch(stderr, /ENOSPC|EROFS|SQLITE_|at .*\.js:\d+/, 'no raw error details');
}

t.test('a full disk at first start: --init fails with key_storage_unavailable', async (t) => {
  const fsDir = smallFilesystem(t, 256 * 1024);
  const home = path.join(fsDir, 'home');
  fs.mkdirSync(home, { mode: 0o700 });
  fill(fsDir);
  const run = await failingStart({ home, init: true });
  t.equal(run.code, 1);
  assertStartupLine(t, run.failure, run.stderr, ['key_storage_unavailable', 'home_unavailable']);
});

t.test('a read-only home at start: home_unavailable', async (t) => {
  const fsDir = smallFilesystem(t, 16 * 1024 * 1024);
  const home = path.join(fsDir, 'home');
  const first = await startSvc({ home });
  t.equal(await first.stop(), 0);
  remount(fsDir, 'ro');
  const run = await failingStart({ home });
  t.equal(run.code, 1);
  assertStartupLine(t, run.failure, run.stderr, ['home_unavailable']);
  remount(fsDir, 'rw');
  const again = await startSvc({ home, init: false });
  t.ok(again.url, 'starts again once the home is writable');
  await again.stop();
});

t.test('a full disk at a later start: a documented storage code, never a crash with details', async (t) => {
  const fsDir = smallFilesystem(t, 16 * 1024 * 1024);
  const home = path.join(fsDir, 'home');
  const first = await startSvc({ home });
  t.equal(await first.stop(), 0);
  fill(fsDir);
  const run = await failingStart({ home });
  t.equal(run.code, 1);
  const connectionError = run.failure.code === 'service_unavailable' && run.failure.cause === 'ConnectionError';
  assertStartupLine(t, run.failure, run.stderr, connectionError ? ['service_unavailable'] : STARTUP_STORAGE_CODES);
});

/** Writes a running service must refuse with 503 while storage fails, and the read that must still work. */
async function probeWrites(svc: RunningSvc, n: number) {
  return [
    await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: `full${n}`, domain: 'disk.test' } }),
    await api(svc.url, 'POST', '/v0/inboxes/keep%40disk.test/drafts', { token: svc.ownerToken, body: { to: ['a@b.test'], subject: 'big', text: 'x'.repeat(2 * 1024 * 1024) } }),
    await api(svc.url, 'PATCH', '/v0/inboxes/keep%40disk.test', { token: svc.ownerToken, body: { metadata: { note: 'y'.repeat(1_000) } } }),
  ];
}

t.test('disk full while serving: writes answer 503 service_unavailable, reads work, and writes recover', async (t) => {
  const fsDir = smallFilesystem(t, 24 * 1024 * 1024);
  const svc = await startSvc({ home: path.join(fsDir, 'home') });
  t.teardown(() => svc.stop());
  t.equal((await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'keep', domain: 'disk.test' } })).status, 200);
  const filler = fill(fsDir);
  const answers = await probeWrites(svc, 1);
  for (const res of answers) {
    t.equal(res.status, 503, res.text.slice(0, 200));
    t.equal(errorContractViolation(res.status, res.body), null);
    t.match(res.body, { code: 'service_unavailable', message: String, fix: String });
    t.notMatch(res.text, /SQLITE|ENOSPC|database or disk is full/i, 'no raw details');
  }
  const read = await api(svc.url, 'GET', '/v0/inboxes/keep%40disk.test', { token: svc.ownerToken });
  t.equal(read.status, 200, 'reads still work');
  t.equal(svc.proc.exitCode, null, 'the service is still running');
  fs.rmSync(filler);
  const recovered = await api(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'after', domain: 'disk.test' } });
  t.equal(recovered.status, 200, 'writes work again once there is space');
});

/** Shared by the startup tests: a home initialized by a real start, and the shape of a startup failure. */
import type { Test } from 'tap';
import { failingStart, setupOwner, startSvc } from './svc.js';

export async function initHome(t: Test): Promise<string> {
  const svc = await startSvc();
  await setupOwner(svc);
  t.equal(await svc.stop(), 0);
  return svc.home;
}

export function assertFailure(t: Test, result: Awaited<ReturnType<typeof failingStart>>, code: string) {
  t.equal(result.code, 1, 'exits 1');
  t.equal(result.failure.event, 'server.failed');
  t.equal(result.failure.code, code);
  t.type(result.failure.cause, 'string');
  t.type(result.failure.message, 'string');
  t.type(result.failure.fix, 'string');
  t.equal(result.stderr.trim().split('\n').length, 1, 'exactly one line on stderr');
  t.notMatch(result.stderr, /\n\s+at |Error:|SQLITE_|ENOENT|EACCES/, 'no raw error details');
  t.notMatch(result.stdout, /server\.ready/, 'never reports ready');
}

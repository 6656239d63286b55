/**
 * A home made before svc printed recovery codes (keys.json without a `recovery` block) keeps
 * opening; `svc backup` refuses until `svc key recovery` has made a code (through the running
 * service, or on the home directly when svc is stopped); `svc backup` also works on a stopped home;
 * `--rotate` replaces the code, and old backups keep needing the old one (docs/backup.md).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { api, startSvc, tempDir } from '../helpers/svc.js';
import { createInbox } from '../helpers/seed.js';
import { svcCli } from './cli-run.js';

const codeOf = (stdout: string) => {
  const line = JSON.parse(stdout.trim()) as { event: string; recovery_code: string };
  if (line.event !== 'home.recovery_code') throw new Error(stdout);
  return line.recovery_code;
};

t.test('an old home gets a recovery code, backs up running and stopped, and rotates', async (t) => {
  const home = path.join(tempDir(), 'home');
  const first = await startSvc({ home });
  await createInbox(first, 'kept@old.test');
  await first.stop();
  const keysFile = path.join(home, 'keys.json');
  const keys = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as Record<string, unknown>;
  delete keys.recovery;
  fs.writeFileSync(keysFile, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });

  const svc = await startSvc({ home, init: false });
  t.teardown(() => svc.stop());
  t.notOk(svc.stdoutLines.some((l) => l.event === 'home.recovery_code'), 'an existing home is never given a code at start');
  const dir = tempDir();
  const refused = await svcCli(['backup', '--to', path.join(dir, 'no.svcbackup'), '--home', home]);
  t.equal(refused.code, 6, 'no backup without a recovery code');
  t.match(refused.stderr, /svc key recovery/);
  t.notOk(fs.existsSync(path.join(dir, 'no.svcbackup')));
  t.match((await svcCli(['status', '--home', home])).stdout, /^recovery:\s+no recovery code: run `svc key recovery`/m);

  const made = await svcCli(['key', 'recovery', '--home', home]);
  t.equal(made.code, 0, made.stderr);
  const code = codeOf(made.stdout);
  t.match(JSON.parse(fs.readFileSync(keysFile, 'utf8')), { recovery: { kdf: 'scrypt' }, home_id: keys.home_id, wrapped_key: keys.wrapped_key }, 'keys.json gained the block and kept the rest');
  const twice = await svcCli(['key', 'recovery', '--home', home]);
  t.equal(twice.code, 1, 'a second code only with --rotate');
  t.match(twice.stderr, /already_exists/);

  const running = path.join(dir, 'running.svcbackup');
  const viaService = await svcCli(['backup', '--to', running, '--home', home, '--json']);
  t.match(viaService.json(), { via: 'service' });

  await svc.stop();
  const stopped = path.join(dir, 'stopped.svcbackup');
  const direct = await svcCli(['backup', '--to', stopped, '--home', home, '--json']);
  t.equal(direct.code, 0, direct.stderr);
  t.match(direct.json(), { via: 'home' }, 'a stopped home is backed up directly');

  const rotated = await svcCli(['key', 'recovery', '--rotate', '--home', home]);
  t.equal(rotated.code, 0, rotated.stderr);
  const newCode = codeOf(rotated.stdout);
  t.not(newCode, code);

  const restoreWith = async (file: string, c: string) => {
    const target = path.join(tempDir(), 'restored');
    return { run: await svcCli(['restore', file, '--home', target, '--recovery-code-file', '-', '--json'], { input: c }), target };
  };
  t.equal((await restoreWith(stopped, newCode)).run.code, 6, 'a backup from before the rotation does not open with the new code');
  const old = await restoreWith(stopped, code);
  t.equal(old.run.code, 0, 'it opens with the old one');
  const restarted = await startSvc({ home: old.target, init: false });
  t.teardown(() => restarted.stop());
  const inboxes = await api<{ inboxes: { inbox_id: string }[] }>(restarted.url, 'GET', '/v0/inboxes', { token: restarted.ownerToken });
  t.same(inboxes.body.inboxes.map((i) => i.inbox_id), ['kept@old.test'], 'the restored home serves its data');
  const status = await api<{ last_backup_at: string | null }>(restarted.url, 'GET', '/v0/owner/backup', { token: restarted.ownerToken });
  t.type(status.body.last_backup_at, 'string', 'and knows a backup was made before it (the one made while running)');
});

/**
 * Backups from an attacker's side (docs/backup.md, docs/security.md): a backup changed anywhere
 * is refused (checksum, MAC or the recovery wrap's auth tag), a backup of another home does not
 * open with this home's code, not even with the other home's recovery block spliced in; the
 * recovery block's cost parameters are bounded both ways; only the owner's bearer can make a
 * backup or a recovery code; backup, snapshot and restored files are private (0600, home 0700).
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { api, setupOwner, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { createApiKey, createInbox } from '../helpers/seed.js';
import { svcCli } from '../e2e/cli-run.js';
import { recoveryCodeOf } from '../helpers/backup.js';
import { RECOVERY_CODE_CHARS, RECOVERY_SCRYPT, newRecoveryCode, parseRecoveryBlock } from '../../src/backup/recovery.js';

const MAGIC_BYTES = 8;

interface Parts {
  manifest: Record<string, unknown> & { database: { size: number; sha256: string }; recovery: Record<string, unknown>; home_id: string };
  db: Buffer;
  trailer: Buffer;
}

function split(file: string): Parts {
  const bytes = fs.readFileSync(file);
  const length = bytes.readUInt32BE(MAGIC_BYTES);
  const start = MAGIC_BYTES + 4;
  const manifest = JSON.parse(bytes.subarray(start, start + length).toString('utf8')) as Parts['manifest'];
  const db = bytes.subarray(start + length, start + length + manifest.database.size);
  return { manifest, db: Buffer.from(db), trailer: Buffer.from(bytes.subarray(start + length + manifest.database.size)) };
}

/** Writes the parts back, with the database checksum made to match (what an attacker would do). */
function join(file: string, parts: Parts): void {
  const manifest = { ...parts.manifest, database: { size: parts.db.length, sha256: createHash('sha256').update(parts.db).digest('hex') } };
  const json = Buffer.from(JSON.stringify(manifest));
  const header = Buffer.alloc(MAGIC_BYTES + 4);
  header.write('SVCBKP01');
  header.writeUInt32BE(json.length, MAGIC_BYTES);
  fs.writeFileSync(file, Buffer.concat([header, json, parts.db, parts.trailer]));
}

let a: RunningSvc;
let b: RunningSvc;
let backupA: string;
let backupB: string;
let codeFileA: string;

async function restore(file: string, codeFile: string) {
  const home = path.join(tempDir(), 'restored');
  const run = await svcCli(['restore', file, '--home', home, '--recovery-code-file', codeFile, '--json']);
  return { run, home };
}

t.before(async () => {
  a = await startSvc();
  b = await startSvc();
  await createInbox(a, 'secret@a.test');
  const dir = tempDir();
  backupA = path.join(dir, 'a.svcbackup');
  backupB = path.join(dir, 'b.svcbackup');
  for (const [svc, file] of [[a, backupA], [b, backupB]] as const) {
    const made = await svcCli(['backup', '--to', file, '--home', svc.home]);
    if (made.code !== 0) throw new Error(made.stderr);
  }
  codeFileA = path.join(dir, 'code-a');
  fs.writeFileSync(codeFileA, recoveryCodeOf(a), { mode: 0o600 });
});
t.teardown(async () => {
  await a?.stop();
  await b?.stop();
});

t.test('the untouched backup restores (the baseline the refusals below differ from)', async (t) => {
  const { run, home } = await restore(backupA, codeFileA);
  t.equal(run.code, 0, run.stderr);
  t.equal(fs.statSync(home).mode & 0o777, 0o700, 'the restored home is 0700');
  for (const f of ['keys.json', 'svc.db']) t.equal(fs.statSync(path.join(home, f)).mode & 0o777, 0o600, `${f} is 0600`);
  t.equal(fs.statSync(backupA).mode & 0o777, 0o600, 'the backup file is 0600');
});

t.test('a flipped database byte is refused by the checksum', async (t) => {
  const file = path.join(tempDir(), 'flip.svcbackup');
  const bytes = fs.readFileSync(backupA);
  bytes[bytes.length - 100] ^= 0x01;
  fs.writeFileSync(file, bytes);
  const { run, home } = await restore(file, codeFileA);
  t.equal(run.code, 1);
  t.match(run.error().error.message, /does not match its checksum/);
  t.notOk(fs.existsSync(home));
});

t.test('a changed database with a recomputed checksum is refused by the MAC', async (t) => {
  const file = path.join(tempDir(), 'resum.svcbackup');
  const parts = split(backupA);
  parts.db[parts.db.length - 10] ^= 0x01;
  join(file, parts);
  const { run, home } = await restore(file, codeFileA);
  t.equal(run.code, 1);
  t.match(run.error().error.message, /changed after it was made/);
  t.notOk(fs.existsSync(home), 'nothing is left behind');
});

t.test('a changed manifest field (svc version, time) is refused by the MAC', async (t) => {
  const file = path.join(tempDir(), 'manifest.svcbackup');
  const parts = split(backupA);
  parts.manifest.created_at = '2020-01-01T00:00:00.000Z';
  join(file, parts);
  const { run } = await restore(file, codeFileA);
  t.equal(run.code, 1);
  t.match(run.error().error.message, /changed after it was made/);
});

t.test('a changed recovery block or home_id is refused by the wrap\'s auth tag', async (t) => {
  const file = path.join(tempDir(), 'wrap.svcbackup');
  const parts = split(backupA);
  const wrapped = Buffer.from(String(parts.manifest.recovery.wrapped_key), 'base64');
  wrapped[0] ^= 0x01;
  join(file, { ...parts, manifest: { ...parts.manifest, recovery: { ...parts.manifest.recovery, wrapped_key: wrapped.toString('base64') } } });
  const tampered = await restore(file, codeFileA);
  t.equal(tampered.run.code, 6);
  t.match(tampered.run.error().error.message, /does not open this backup/);

  join(file, { ...split(backupA), manifest: { ...split(backupA).manifest, home_id: split(backupB).manifest.home_id } });
  const moved = await restore(file, codeFileA);
  t.equal(moved.run.code, 6, 'the block is bound to its home_id');
});

t.test('another home\'s backup does not open with this code, not even with this home\'s block spliced in', async (t) => {
  const plain = await restore(backupB, codeFileA);
  t.equal(plain.run.code, 6);
  t.match(plain.run.error().error.message, /does not open this backup/);
  t.notOk(fs.existsSync(plain.home));

  // B's database under A's home_id and recovery block: A's code unwraps A's key, which neither
  // opens B's database nor makes B's MAC.
  const file = path.join(tempDir(), 'splice.svcbackup');
  const pa = split(backupA);
  const pb = split(backupB);
  join(file, { ...pb, manifest: { ...pb.manifest, home_id: pa.manifest.home_id, recovery: pa.manifest.recovery } });
  const spliced = await restore(file, codeFileA);
  t.equal(spliced.run.code, 1);
  t.match(spliced.run.error().error.message, /changed after it was made/);
  t.notOk(fs.existsSync(spliced.home));
});

t.test('the recovery block\'s cost is bounded both ways; codes carry enough entropy', async (t) => {
  const block = split(backupA).manifest.recovery;
  t.ok(parseRecoveryBlock(block), 'the stored block parses');
  t.ok(Number(block.n) >= RECOVERY_SCRYPT.N && Number(block.r) >= RECOVERY_SCRYPT.r, 'stored with the named scrypt cost');
  t.equal(parseRecoveryBlock({ ...block, n: 2 ** 30 }), null, 'a block asking for gigabytes of memory is refused before scrypt runs');
  t.equal(parseRecoveryBlock({ ...block, n: 3 }), null, 'N must be a power of two');
  t.equal(parseRecoveryBlock({ ...block, r: 1000 }), null);

  const file = path.join(tempDir(), 'cost.svcbackup');
  const parts = split(backupA);
  join(file, { ...parts, manifest: { ...parts.manifest, recovery: { ...parts.manifest.recovery, n: 2 ** 30 } } });
  const { run } = await restore(file, codeFileA);
  t.equal(run.code, 1);
  t.match(run.error().error.message, /recovery block is missing or malformed/);

  t.ok(RECOVERY_CODE_CHARS * 5 >= 128, 'at least 128 bits of entropy');
  const codes = new Set(Array.from({ length: 50 }, () => newRecoveryCode()));
  t.equal(codes.size, 50, 'codes do not repeat');
  t.not(recoveryCodeOf(a), recoveryCodeOf(b), 'each home has its own');
});

t.test('only the owner\'s bearer makes a backup or a recovery code', async (t) => {
  const key = await createApiKey(a, { permissions: ['inbox_read', 'message_read'] });
  for (const [method, route] of [['POST', '/v0/owner/backup'], ['POST', '/v0/owner/recovery-code'], ['GET', '/v0/owner/backup']] as const) {
    const res = await api(a.url, method, route, { token: key.secret, ...(method === 'POST' ? { body: {} } : {}) });
    t.ok(res.status === 401 || res.status === 403, `${method} ${route} with an API key: ${res.status}`);
    t.notOk(res.headers.get('content-type')?.includes('octet-stream'));
  }
  const { cookie, csrf } = await setupOwner(a);
  const viaBrowser = await api(a.url, 'POST', '/v0/owner/backup', { headers: { cookie, 'x-svc-csrf': csrf, origin: a.url }, body: {} });
  t.equal(viaBrowser.status, 403, 'a browser session cannot pull a backup file');
  const status = await api<{ recovery_code_set: boolean }>(a.url, 'GET', '/v0/owner/backup', { headers: { cookie, 'x-svc-csrf': csrf } });
  t.equal(status.status, 200, 'but it can read the last backup\'s time');
  t.equal(status.body.recovery_code_set, true);
  const again = await api(a.url, 'POST', '/v0/owner/recovery-code', { token: a.ownerToken, body: {} });
  t.equal(again.status, 409, 'an existing recovery code is not replaced without rotate');

  const agent = await svcCli(['backup', '--to', path.join(tempDir(), 'x.svcbackup'), '--home', a.home], { env: { SVC_URL: a.url, SVC_API_KEY: key.secret } });
  t.equal(agent.code, 4, 'svc backup refuses agent credentials');
});

t.test('a backup cut short by a killed svc leaves nothing the next start keeps', async (t) => {
  const home = b.home;
  await b.stop();
  const work = path.join(home, 'backup-work');
  fs.mkdirSync(work, { recursive: true });
  fs.writeFileSync(path.join(work, 'copy-1.db'), 'half a copy');
  b = await startSvc({ home, init: false });
  t.notOk(fs.existsSync(work), 'the work directory is emptied at start');
});

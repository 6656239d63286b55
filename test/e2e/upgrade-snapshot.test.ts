/**
 * Issue 33 §3: before migrations run, svc keeps a snapshot of the previous schema's database;
 * an svc refused by a newer database names the snapshot to restore, and following that fix works.
 * The "previous release" is a database made with every migration but the last (what the release
 * before the newest migration wrote), with mail-store rows in it.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3-multiple-ciphers';
import { api, failingStart, startSvc, tempDir } from '../helpers/svc.js';
import { unlockHome } from '../../src/keys/unlock.js';
import { MIGRATIONS } from '../../src/db/migrations.js';
import { SNAPSHOTS_KEPT, listSnapshots, takeSnapshot } from '../../src/backup/snapshots.js';

const PREVIOUS = MIGRATIONS.length - 1;
const INBOX = 'old@previous.test';

function openRaw(file: string, dbKey: Buffer): Database.Database {
  const db = new Database(file);
  db.pragma(`cipher='sqlcipher'`);
  db.pragma('legacy=4');
  db.pragma(`key="x'${dbKey.toString('hex')}'"`);
  return db;
}

/** Replaces the home's database with one at schema PREVIOUS holding one inbox. */
function previousReleaseDatabase(home: string): void {
  const { dbKey } = unlockHome(home, false);
  const file = path.join(home, 'svc.db');
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
  const db = openRaw(file, dbKey);
  try {
    db.pragma('journal_mode = WAL');
    for (let v = 0; v < PREVIOUS; v++) db.exec(MIGRATIONS[v]);
    db.pragma(`user_version = ${PREVIOUS}`);
    const now = new Date().toISOString();
    db.prepare("INSERT INTO inboxes (inbox_id, username, domain, status, created_at, updated_at) VALUES (?, 'old', 'previous.test', 'active', ?, ?)").run(INBOX, now, now);
  } finally {
    db.close();
    dbKey.fill(0);
  }
}

function schemaOf(home: string, file: string): { version: number; inboxes: number } {
  const { dbKey } = unlockHome(home, false);
  const db = openRaw(file, dbKey);
  try {
    return { version: db.pragma('user_version', { simple: true }) as number, inboxes: (db.prepare('SELECT count(*) AS n FROM inboxes').get() as { n: number }).n };
  } finally {
    db.close();
    dbKey.fill(0);
  }
}

t.test('an upgrade from the previous schema keeps a snapshot; a newer database names it, and restoring it works', async (t) => {
  const home = path.join(tempDir(), 'home');
  const first = await startSvc({ home });
  await first.stop();
  previousReleaseDatabase(home);

  const upgraded = await startSvc({ home, init: false });
  const events = upgraded.stdoutLines.map((l) => l.event);
  const notice = upgraded.stdoutLines.find((l) => l.event === 'database.upgrading');
  t.match(notice, { from_schema: PREVIOUS, to_schema: MIGRATIONS.length, message: /several minutes/ }, 'the upgrade is announced on stdout, with both schema versions');
  t.ok(events.indexOf('database.upgrading') < events.indexOf('server.ready'), 'before the service is ready');
  const snapshots = listSnapshots(path.join(home, 'svc.db'));
  t.equal(snapshots.length, 1, 'one snapshot was taken before the migration');
  t.equal(snapshots[0].schemaVersion, PREVIOUS, `named for schema ${PREVIOUS}`);
  t.match(path.basename(snapshots[0].file), new RegExp(`^schema-${PREVIOUS}-\\d{8}T\\d{6}Z\\.db$`));
  t.equal(fs.statSync(snapshots[0].file).mode & 0o777, 0o600, 'the snapshot is private');
  t.notOk(fs.readFileSync(snapshots[0].file).includes(Buffer.from(INBOX)), 'and encrypted (no address in clear)');
  t.same(schemaOf(home, snapshots[0].file), { version: PREVIOUS, inboxes: 1 }, 'it holds the previous schema and its data');
  const listed = await api<{ inboxes: { inbox_id: string }[] }>(upgraded.url, 'GET', '/v0/inboxes', { token: upgraded.ownerToken });
  t.same(listed.body.inboxes.map((i) => i.inbox_id), [INBOX], 'the migrated home serves the old data');
  await upgraded.stop();
  t.same(schemaOf(home, path.join(home, 'svc.db')), { version: MIGRATIONS.length, inboxes: 1 }, 'the live database is migrated');

  const restart = await startSvc({ home, init: false });
  t.notOk(restart.stdoutLines.some((l) => l.event === 'database.upgrading'), 'nothing to upgrade: no notice');
  await restart.stop();
  t.equal(listSnapshots(path.join(home, 'svc.db')).length, 1, 'no snapshot when nothing is migrated');

  // A newer svc migrated it further: this svc refuses, and says which snapshot to put back.
  const { dbKey } = unlockHome(home, false);
  const live = openRaw(path.join(home, 'svc.db'), dbKey);
  live.pragma(`user_version = ${MIGRATIONS.length + 1}`);
  live.close();
  dbKey.fill(0);
  const refused = await failingStart({ home, init: false });
  t.equal(refused.code, 1);
  t.match(refused.failure, { event: 'server.failed', code: 'database_failed', cause: 'SchemaTooNew' });
  t.match(String(refused.failure.message), /newer than this svc understands/);
  t.ok(String(refused.failure.fix).includes(snapshots[0].file), 'the fix names the snapshot file');

  // Following the fix: move the database aside, copy the snapshot in, start.
  const aside = path.join(tempDir(), 'aside');
  fs.mkdirSync(aside);
  for (const suffix of ['', '-wal', '-shm']) if (fs.existsSync(path.join(home, `svc.db${suffix}`))) fs.renameSync(path.join(home, `svc.db${suffix}`), path.join(aside, `svc.db${suffix}`));
  fs.copyFileSync(snapshots[0].file, path.join(home, 'svc.db'));
  const back = await startSvc({ home, init: false });
  t.teardown(() => back.stop());
  const again = await api<{ inboxes: { inbox_id: string }[] }>(back.url, 'GET', '/v0/inboxes', { token: back.ownerToken });
  t.same(again.body.inboxes.map((i) => i.inbox_id), [INBOX], 'the snapshot serves again (migrated once more)');
});

t.test(`only the last ${SNAPSHOTS_KEPT} snapshots are kept`, async (t) => {
  const dir = tempDir();
  const db = new Database(path.join(dir, 'svc.db'));
  t.teardown(() => db.close());
  db.exec('CREATE TABLE t (x)');
  const taken = [];
  for (let day = 1; day <= SNAPSHOTS_KEPT + 2; day++) taken.push(takeSnapshot(db, 7, new Date(Date.UTC(2026, 0, day))));
  const kept = listSnapshots(path.join(dir, 'svc.db')).map((s) => s.file);
  t.same(kept, taken.slice(-SNAPSHOTS_KEPT), 'the newest stay, the oldest go');
  t.same(fs.readdirSync(path.join(dir, 'snapshots')).filter((n) => n.includes('partial')), [], 'no temporary file is left');
});

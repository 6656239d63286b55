/** svc serve: home creation, keys, encrypted database and the startup lines (failures: startup-failures.test.ts). */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3-multiple-ciphers';
import { api, setupOwner, startSvc } from '../helpers/svc.js';
import { initHome } from '../helpers/startup.js';

const mode = (p: string) => fs.statSync(p).mode & 0o777;
t.test('--init creates the home, keys and encrypted database and prints the recovery code and the two startup lines', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  t.same(svc.stdoutLines.map((l) => l.event), ['home.recovery_code', 'owner.setup_required', 'server.ready']);
  t.match(svc.stdoutLines[0], { recovery_code: /^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$/, message: /only now/ }, 'the recovery code, shown once (docs/backup.md)');
  t.match(svc.setupCode, /^[A-Z0-9]{5}-[A-Z0-9]{5}$/);
  t.match(svc.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(mode(svc.home), 0o700, 'home is 0700');
  for (const f of ['keys.json', 'svc.db', 'connection.json']) t.equal(mode(path.join(svc.home, f)), 0o600, `${f} is 0600`);
  const keys = JSON.parse(fs.readFileSync(path.join(svc.home, 'keys.json'), 'utf8'));
  t.match(keys, { version: 1, alg: 'A256GCM', home_id: String, wrapped_key: String, nonce: String, created_at: String, recovery: { kdf: 'scrypt', wrapped_key: String } });
  t.notOk(JSON.stringify(keys).includes(String(svc.stdoutLines[0].recovery_code).replace(/-/g, '')), 'keys.json does not hold the code itself');
  const conn = JSON.parse(fs.readFileSync(path.join(svc.home, 'connection.json'), 'utf8'));
  t.match(conn, { url: svc.url, owner_token: /^svc_owner_/, pid: svc.proc.pid, started_at: String });
  const status = await api(svc.url, 'GET', '/v0/owner/status');
  t.same(status.body, { setup_required: true, authenticated: false, locked: false });
});

t.test('a later start unlocks automatically; the setup code changes until setup is done', async (t) => {
  const first = await startSvc();
  const home = first.home;
  const code1 = first.setupCode;
  const token1 = first.ownerToken;
  t.equal(await first.stop(), 0);
  const second = await startSvc({ home, init: false });
  t.ok(second.setupCode, 'still requires setup');
  t.not(second.setupCode, code1, 'new code on restart');
  t.not(second.ownerToken, token1, 'fresh owner token on every start');
  await setupOwner(second);
  t.equal(await second.stop(), 0);
  const third = await startSvc({ home, init: false });
  t.teardown(() => third.stop());
  t.same(third.stdoutLines.map((l) => l.event), ['server.ready'], 'no setup line once a password exists');
  t.equal(third.setupCode, null);
  const old = await api(third.url, 'GET', '/v0/owner/sessions', { token: token1 });
  t.equal(old.status, 401, 'the previous start\'s owner token no longer works');
});

t.test('--init on an existing home overwrites nothing', async (t) => {
  const home = await initHome(t);
  const keysBefore = fs.readFileSync(path.join(home, 'keys.json'));
  const svc = await startSvc({ home, init: true });
  t.teardown(() => svc.stop());
  t.same(fs.readFileSync(path.join(home, 'keys.json')), keysBefore, 'keys.json unchanged');
  t.equal(svc.setupCode, null, 'the owner created before is still there');
  const login = await api(svc.url, 'POST', '/v0/owner/login', { body: { password: 'correct horse battery staple' } });
  t.equal(login.status, 200);
});

t.test('the database file cannot be read without the key', async (t) => {
  const home = await initHome(t);
  const db = path.join(home, 'svc.db');
  const bytes = fs.readFileSync(db);
  t.not(bytes.subarray(0, 15).toString('latin1'), 'SQLite format 3', 'no plaintext SQLite header');
  for (const marker of ['CREATE TABLE', 'owner_sessions', 'scrypt$']) {
    t.equal(bytes.indexOf(marker), -1, `"${marker}" does not appear in the file`);
    for (const side of ['svc.db-wal']) {
      const f = path.join(home, side);
      if (fs.existsSync(f)) t.equal(fs.readFileSync(f).indexOf(marker), -1, `"${marker}" not in ${side}`);
    }
  }
  const plain = new Database(db, { readonly: true });
  t.throws(() => plain.prepare('SELECT * FROM sqlite_master').all(), { code: 'SQLITE_NOTADB' }, 'unreadable without the key');
  plain.close();
});

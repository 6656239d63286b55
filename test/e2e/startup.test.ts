/** svc serve: home creation, keys, encrypted database, startup lines and every startup failure code. */
import t, { type Test } from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3-multiple-ciphers';
import { Entry } from '@napi-rs/keyring';
import { api, failingStart, setupOwner, startSvc, tempDir } from '../helpers/svc.js';

const keyringAccount = (home: string) => `home-${createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16)}`;
const mode = (p: string) => fs.statSync(p).mode & 0o777;

async function initHome(): Promise<string> {
  const svc = await startSvc();
  await setupOwner(svc);
  t.equal(await svc.stop(), 0);
  return svc.home;
}

function assertFailure(t: Test, result: Awaited<ReturnType<typeof failingStart>>, code: string) {
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

t.test('--init creates the home, keys and encrypted database and prints the two startup lines', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  t.same(svc.stdoutLines.map((l) => l.event), ['owner.setup_required', 'server.ready']);
  t.match(svc.setupCode, /^[A-Z0-9]{5}-[A-Z0-9]{5}$/);
  t.match(svc.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.equal(mode(svc.home), 0o700, 'home is 0700');
  for (const f of ['keys.json', 'svc.db', 'connection.json']) t.equal(mode(path.join(svc.home, f)), 0o600, `${f} is 0600`);
  const keys = JSON.parse(fs.readFileSync(path.join(svc.home, 'keys.json'), 'utf8'));
  t.match(keys, { version: 1, alg: 'A256GCM', home_id: String, wrapped_key: String, nonce: String, created_at: String });
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
  const home = await initHome();
  const keysBefore = fs.readFileSync(path.join(home, 'keys.json'));
  const svc = await startSvc({ home, init: true });
  t.teardown(() => svc.stop());
  t.same(fs.readFileSync(path.join(home, 'keys.json')), keysBefore, 'keys.json unchanged');
  t.equal(svc.setupCode, null, 'the owner created before is still there');
  const login = await api(svc.url, 'POST', '/v0/owner/login', { body: { password: 'correct horse battery staple' } });
  t.equal(login.status, 200);
});

t.test('the database file cannot be read without the key', async (t) => {
  const home = await initHome();
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

t.test('startup failures print one server.failed line and exit 1', async (t) => {
  t.test('not_initialized: a new home without --init', async (t) => {
    const r = await failingStart({ home: path.join(tempDir(), 'fresh') });
    assertFailure(t, r, 'not_initialized');
  });

  t.test('keychain_unavailable: no Secret Service reachable', async (t) => {
    const env = { DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' };
    const fresh = await failingStart({ home: path.join(tempDir(), 'fresh'), init: true, env });
    assertFailure(t, fresh, 'keychain_unavailable');
    const home = await initHome();
    const existing = await failingStart({ home, env });
    assertFailure(t, existing, 'keychain_unavailable');
  });

  t.test('keychain_entry_missing: the credential store item was deleted', async (t) => {
    const home = await initHome();
    t.ok(new Entry('svc', keyringAccount(home), { linux: { store: 'secret-service' } }).deleteCredential(), 'deleted the item');
    assertFailure(t, await failingStart({ home }), 'keychain_entry_missing');
    assertFailure(t, await failingStart({ home, init: true }), 'keychain_entry_missing');
  });

  t.test('keys_file_corrupt: keys.json damaged or missing beside a database', async (t) => {
    const home = await initHome();
    const keys = path.join(home, 'keys.json');
    const original = fs.readFileSync(keys, 'utf8');
    fs.writeFileSync(keys, original.slice(0, 40));
    assertFailure(t, await failingStart({ home }), 'keys_file_corrupt');
    fs.writeFileSync(keys, JSON.stringify({ ...JSON.parse(original), wrapped_key: 'AAAA' }));
    assertFailure(t, await failingStart({ home }), 'keys_file_corrupt');
    fs.rmSync(keys);
    assertFailure(t, await failingStart({ home, init: true }), 'keys_file_corrupt');
  });

  t.test('database_key_invalid: keys.json or svc.db from another home', async (t) => {
    const a = await initHome();
    const b = await initHome();
    const aKeys = fs.readFileSync(path.join(a, 'keys.json'));
    fs.copyFileSync(path.join(b, 'keys.json'), path.join(a, 'keys.json'));
    assertFailure(t, await failingStart({ home: a }), 'database_key_invalid');
    fs.writeFileSync(path.join(a, 'keys.json'), aKeys);
    for (const f of ['svc.db-wal', 'svc.db-shm']) fs.rmSync(path.join(a, f), { force: true });
    fs.copyFileSync(path.join(b, 'svc.db'), path.join(a, 'svc.db'));
    assertFailure(t, await failingStart({ home: a }), 'database_key_invalid');
  });

  t.test('home_unavailable: the home cannot be created or is not a directory', async (t) => {
    const dir = tempDir();
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, 'x');
    assertFailure(t, await failingStart({ home: path.join(file, 'home'), init: true }), 'home_unavailable');
    assertFailure(t, await failingStart({ home: file, init: true }), 'home_unavailable');
    assertFailure(t, await failingStart({ home: '/proc/svc-home', init: true }), 'home_unavailable');
  });

  t.test('database_failed: the database file cannot be opened', async (t) => {
    const home = await initHome();
    for (const f of ['svc.db', 'svc.db-wal', 'svc.db-shm']) fs.rmSync(path.join(home, f), { force: true });
    fs.mkdirSync(path.join(home, 'svc.db'));
    assertFailure(t, await failingStart({ home }), 'database_failed');
  });

  t.test('service_unavailable (ConnectionError): connection.json cannot be written', async (t) => {
    const home = await initHome();
    fs.rmSync(path.join(home, 'connection.json'));
    fs.mkdirSync(path.join(home, 'connection.json'));
    const r = await failingStart({ home });
    assertFailure(t, r, 'service_unavailable');
    t.equal(r.failure.cause, 'ConnectionError');
  });

  t.test('service_unavailable: the port is taken', async (t) => {
    const home = await initHome();
    const blocker = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    t.teardown(() => blocker.close());
    const port = (blocker.address() as net.AddressInfo).port;
    const r = await failingStart({ home, args: ['--port', String(port)] });
    assertFailure(t, r, 'service_unavailable');
  });
});

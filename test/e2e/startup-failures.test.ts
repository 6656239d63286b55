/** svc serve: every startup failure code, each produced by a real cause. */
import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { Entry } from '@napi-rs/keyring';
import { failingStart, tempDir } from '../helpers/svc.js';
import { assertFailure, initHome } from '../helpers/startup.js';

const keyringAccount = (home: string) => `home-${createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16)}`;

t.test('startup failures print one server.failed line and exit 1', async (t) => {
  // Each cause has homes (and credential store items) of its own, so three run at a time.
  t.jobs = 3;
  t.test('not_initialized: a new home without --init', async (t) => {
    const r = await failingStart({ home: path.join(tempDir(), 'fresh') });
    assertFailure(t, r, 'not_initialized');
  });

  t.test('keychain_unavailable: no Secret Service reachable', async (t) => {
    const env = { DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' };
    const fresh = await failingStart({ home: path.join(tempDir(), 'fresh'), init: true, env });
    assertFailure(t, fresh, 'keychain_unavailable');
    const home = await initHome(t);
    const existing = await failingStart({ home, env });
    assertFailure(t, existing, 'keychain_unavailable');
  });

  t.test('keychain_entry_missing: the credential store item was deleted', async (t) => {
    const home = await initHome(t);
    t.ok(new Entry('svc', keyringAccount(home), { linux: { store: 'secret-service' } }).deleteCredential(), 'deleted the item');
    assertFailure(t, await failingStart({ home }), 'keychain_entry_missing');
    assertFailure(t, await failingStart({ home, init: true }), 'keychain_entry_missing');
  });

  t.test('keys_file_corrupt: keys.json damaged or missing beside a database', async (t) => {
    const home = await initHome(t);
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
    const a = await initHome(t);
    const b = await initHome(t);
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
    const home = await initHome(t);
    for (const f of ['svc.db', 'svc.db-wal', 'svc.db-shm']) fs.rmSync(path.join(home, f), { force: true });
    fs.mkdirSync(path.join(home, 'svc.db'));
    assertFailure(t, await failingStart({ home }), 'database_failed');
  });

  t.test('service_unavailable (ConnectionError): connection.json cannot be written', async (t) => {
    const home = await initHome(t);
    fs.rmSync(path.join(home, 'connection.json'));
    fs.mkdirSync(path.join(home, 'connection.json'));
    const r = await failingStart({ home });
    assertFailure(t, r, 'service_unavailable');
    t.equal(r.failure.cause, 'ConnectionError');
  });

  t.test('service_unavailable: the port is taken', async (t) => {
    const home = await initHome(t);
    const blocker = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    t.teardown(() => blocker.close());
    const port = (blocker.address() as net.AddressInfo).port;
    const r = await failingStart({ home, args: ['--port', String(port)] });
    assertFailure(t, r, 'service_unavailable');
  });
});

/**
 * The systemd credential that unlocks a headless home (issue 33 §2), attacked: the sealed file is
 * private and holds no key in clear, keys.json never holds the KEK, a plaintext "credential"
 * (`--with-key=null`) cannot be asked for, a credential of another name or size is refused, a
 * tampered unlock method opens nothing, and the printed units hold no secret and write only their
 * own directory.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { failingStart, svcBin, tempDir } from '../helpers/svc.js';

const tmp = tempDir('svc-cred-sec-');
const hostSecret = path.join(tmp, 'host-credential.secret');
// Never under a credentials directory of whoever runs the tests.
const env: NodeJS.ProcessEnv = { ...process.env, SYSTEMD_CREDENTIAL_SECRET: hostSecret };
delete env.CREDENTIALS_DIRECTORY;

function svc(args: string[], extraEnv: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [svcBin, ...args], { env: { ...env, ...extraEnv }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function sealedHome(name: string): string {
  const home = path.join(tmp, name);
  const r = svc(['init', '--home', home, '--unlock', 'systemd-creds']);
  if (r.code !== 0) throw new Error(r.stderr);
  return home;
}

const decryptKek = (home: string) => spawnSync('systemd-creds', ['decrypt', '--name=svc-kek', path.join(home, 'svc-kek.cred'), '-'], { env }).stdout;
const encodings = (key: Buffer) => [key.toString('hex'), key.toString('base64'), key.toString('base64url'), key.toString('latin1')];

t.test('the home and its sealed credential are private; neither the credential nor keys.json holds the KEK', async (t) => {
  const home = sealedHome('private');
  t.equal(fs.statSync(home).mode & 0o777, 0o700);
  t.equal(fs.statSync(path.join(home, 'svc-kek.cred')).mode & 0o777, 0o600);
  t.equal(fs.statSync(path.join(home, 'keys.json')).mode & 0o777, 0o600);
  t.same(fs.readdirSync(home).sort(), ['keys.json', 'svc-kek.cred'], 'no temp file or clear key left behind');
  const kek = decryptKek(home);
  t.equal(kek.length, 32);
  for (const file of ['keys.json', 'svc-kek.cred']) {
    const text = fs.readFileSync(path.join(home, file)).toString('latin1');
    for (const form of encodings(kek)) t.notOk(text.includes(form), `${file} does not hold the KEK (${form.length} chars)`);
  }
});

t.test('only sealing keys are accepted: no plaintext credential (--with-key null or auto)', async (t) => {
  for (const key of ['null', 'auto', 'host+null', '']) {
    const home = path.join(tmp, `with-key-${key || 'empty'}`);
    const r = svc(['init', '--home', home, '--unlock', 'systemd-creds', '--with-key', key]);
    t.equal(r.code, 1, `--with-key ${JSON.stringify(key)} is refused`);
    t.match(r.stderr, /validation_error/);
    t.notOk(fs.existsSync(home), 'nothing was created');
  }
  t.equal(svc(['init', '--home', path.join(tmp, 'x'), '--with-key', 'host']).code, 1, '--with-key without --unlock systemd-creds is refused');
  t.equal(svc(['init', '--home', path.join(tmp, 'y'), '--unlock', 'gpg']).code, 1, 'an unknown unlock method is refused');
});

t.test('a credential that is not this home\'s svc-kek is refused, and the refusal never echoes it', async (t) => {
  const home = sealedHome('swapped');
  // A credential sealed by the same machine for another name, renamed into place.
  const other = path.join(tmp, 'other.cred');
  spawnSync('systemd-creds', ['encrypt', '--name=other', '-', other], { input: Buffer.alloc(32, 1), env });
  fs.copyFileSync(other, path.join(home, 'svc-kek.cred'));
  const renamed = await failingStart({ home, env });
  t.match(renamed.failure, { event: 'server.failed', code: 'keychain_unavailable', cause: 'SystemdCredentialUnavailable' });

  const home2 = sealedHome('sizes');
  const dir = tempDir('svc-creds-');
  for (const bytes of [Buffer.alloc(0), Buffer.from('A'.repeat(31)), Buffer.from('B'.repeat(33)), Buffer.from('C'.repeat(4096))]) {
    fs.writeFileSync(path.join(dir, 'svc-kek'), bytes);
    const r = await failingStart({ home: home2, env: { CREDENTIALS_DIRECTORY: dir } });
    t.match(r.failure, { code: 'keychain_unavailable', cause: 'SystemdCredentialUnavailable' }, `${bytes.length} bytes refused`);
    t.notMatch(r.stderr, /AAAA|BBBB|CCCC/, 'the bytes are not echoed');
  }
  fs.rmSync(path.join(dir, 'svc-kek'));
  fs.mkdirSync(path.join(dir, 'svc-kek'));
  const directory = await failingStart({ home: home2, env: { CREDENTIALS_DIRECTORY: dir } });
  t.match(directory.failure, { code: 'keychain_entry_missing', cause: 'SystemdCredentialMissing' }, 'a directory in its place is refused');

  fs.rmSync(path.join(home2, 'svc-kek.cred'));
  const gone = await failingStart({ home: home2, env: {} });
  t.match(gone.failure, { code: 'keychain_entry_missing', cause: 'SystemdCredentialMissing' }, 'a deleted sealed file is named');
});

t.test('a tampered unlock method in keys.json opens nothing', async (t) => {
  const home = sealedHome('tampered');
  const keysFile = path.join(home, 'keys.json');
  const keys = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as Record<string, unknown>;
  for (const unlock of ['SYSTEMD-CREDS', 'none', 'plain', 1, null]) {
    fs.writeFileSync(keysFile, JSON.stringify({ ...keys, unlock }));
    const r = await failingStart({ home, env: {} });
    t.match(r.failure, { code: 'keys_file_corrupt' }, `unlock ${JSON.stringify(unlock)} is refused as damage`);
  }
  // Flipped to the keyring: the keyring has no item for this home, so it stays locked.
  const { unlock: _unlock, ...keyring } = keys;
  void _unlock;
  fs.writeFileSync(keysFile, JSON.stringify(keyring));
  const flipped = await failingStart({ home, env: {} });
  t.match(flipped.failure, { event: 'server.failed' });
  t.not(flipped.code, 0, 'the flipped home does not start');
});

t.test('printed system units hold no secret and write only their own directory', async (t) => {
  const home = sealedHome('units');
  const edgeData = path.join(tmp, 'units-edge');
  const r = svc(['service', 'install', '--system', '--home', home, '--print', '--json', '--edge', '--edge-hostname', 'mx.example.com', '--edge-data', edgeData]);
  t.equal(r.code, 0, r.stderr);
  const units = (JSON.parse(r.stdout) as { units: { name: string; text: string }[] }).units;
  const kek = decryptKek(home);
  const sealed = fs.readFileSync(path.join(home, 'svc-kek.cred'), 'latin1').trim();
  const keys = JSON.parse(fs.readFileSync(path.join(home, 'keys.json'), 'utf8')) as { wrapped_key: string };
  for (const unit of units) {
    for (const form of encodings(kek)) t.notOk(unit.text.includes(form), `${unit.name} does not hold the KEK`);
    t.notOk(unit.text.includes(sealed.slice(0, 40)), `${unit.name} does not embed the sealed credential (SetCredentialEncrypted=)`);
    t.notOk(unit.text.includes(keys.wrapped_key), `${unit.name} does not hold the wrapped key`);
    t.notMatch(unit.text, /^SetCredential|^Environment=.*(KEY|SECRET|TOKEN|PASSWORD)/m, `${unit.name} passes no secret in the environment or inline`);
    const writable = unit.text.split('\n').filter((l) => /^(ReadWritePaths|BindPaths|StateDirectory|LogsDirectory|CacheDirectory)=/.test(l));
    t.same(writable, [`ReadWritePaths=${unit.name === 'svc.service' ? home : edgeData}`], `${unit.name} writes only its own directory`);
    t.match(unit.text, /^ProtectSystem=strict$/m);
    t.match(unit.text, /^NoNewPrivileges=yes$/m);
  }
});

t.test('system install refuses what would run unsafely or not at all', async (t) => {
  const sealed = sealedHome('refusals');
  const cases: { args: string[]; code: number; why: string }[] = [
    { args: ['--home', sealed, '--user', 'root'], code: 1, why: 'running as root' },
    { args: ['--home', sealed, '--user', 'svc;rm'], code: 1, why: 'a user name that is not one' },
    { args: ['--home', '/home/ann/svc'], code: 1, why: 'a home that ProtectHome= hides' },
    { args: ['--home', sealed, '--edge'], code: 1, why: 'an edge without its public host name' },
    { args: ['--home', sealed, '--edge-hostname', 'mx.example.com'], code: 1, why: 'edge options without --edge' },
    { args: ['--home', sealed, '--edge', '--edge-hostname', 'mx.example.com', '--edge-data', sealed], code: 1, why: 'the edge writing into the home' },
    { args: ['--home', path.join(tmp, 'missing')], code: 6, why: 'a home that does not exist' },
  ];
  for (const c of cases) {
    const r = svc(['service', 'install', '--system', '--print', ...c.args]);
    t.equal(r.code, c.code, c.why);
    t.equal(r.stdout, '', `${c.why}: no unit printed`);
  }
  // A keyring home cannot be unlocked by a system service: refused with the way to make a server home.
  const keyringHome = path.join(tmp, 'keyring-home');
  fs.mkdirSync(keyringHome, { mode: 0o700 });
  fs.writeFileSync(path.join(keyringHome, 'keys.json'), JSON.stringify({ version: 1, home_id: 'x', wrapped_key: 'x', nonce: 'x', alg: 'A256GCM', created_at: 'x' }));
  const keyring = svc(['service', 'install', '--system', '--print', '--home', keyringHome]);
  t.equal(keyring.code, 6);
  t.match(keyring.stderr, /--unlock systemd-creds/);
});

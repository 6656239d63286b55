/**
 * Issue 32 item 5: without a terminal, scripts/with-keyring.sh kept the keyring's password in
 * SVC_KEYRING_DIR/.unlock, beside the keyring it opens, so a copy of that directory opened svc's
 * database. Now, run detached (setsid: no controlling terminal, stdin from /dev/null) with a kept
 * keyring: with no passphrase it refuses (exit 6, saying how to give one) and writes nothing; a
 * passphrase file (the user's own, mode 600, outside the directory) or a systemd credential
 * creates the keyring and unlocks it again on the next run, with the passphrase in no file of the
 * directory; a looser, empty or misplaced file is refused; an older version's .unlock is refused
 * with the way to move it, and the move works. The script's stderr reaches a log file line by
 * line while the command still runs.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot, tempDir } from '../helpers/svc.js';

const SCRIPT = path.join(repoRoot, 'scripts', 'with-keyring.sh');
const EXIT_NEEDS_PASSPHRASE = 6;
const CREDENTIAL = 'svc-keyring-passphrase';
/** Stores `process.argv[1]` in the keyring (set), or prints what is stored (get), with svc's own keyring library. */
const KEYRING_PROBE = `
const { Entry } = require('@napi-rs/keyring');
const entry = new Entry('svc-keyring-test', 'probe');
if (process.argv[1] === 'get') console.log('stored:' + entry.getPassword());
else entry.setPassword(process.argv[1]);
`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the script detached from any terminal, with the caller's keyring variables removed first. */
function withKeyring(env: Record<string, string>, command: string[]): Promise<Run> {
  const base = { ...process.env };
  for (const name of ['SVC_KEYRING_DIR', 'SVC_KEYRING_PASSPHRASE', 'SVC_KEYRING_PASSPHRASE_FILE', 'CREDENTIALS_DIRECTORY', 'SVC_KEYRING_INSIDE']) delete base[name];
  return new Promise((resolve) => {
    const child = spawn(SCRIPT, command, { env: { ...base, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'], cwd: repoRoot });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const probe = (what: string) => [process.execPath, '-e', KEYRING_PROBE, what];

/** Every regular file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

function passphraseFile(dir: string, content: string, mode = 0o600): string {
  const file = path.join(dir, 'keyring-passphrase');
  fs.writeFileSync(file, content, { mode });
  fs.chmodSync(file, mode);
  return file;
}

t.test('no terminal and no passphrase: refused, nothing stored, the command does not run', async (t) => {
  const keyringDir = path.join(tempDir(), 'keyring');
  const marker = path.join(tempDir(), 'ran');
  const run = await withKeyring({ SVC_KEYRING_DIR: keyringDir }, ['touch', marker]);
  t.equal(run.code, EXIT_NEEDS_PASSPHRASE, run.stderr);
  t.match(run.stderr, /no passphrase for the keyring/);
  t.match(run.stderr, /SVC_KEYRING_PASSPHRASE_FILE/, 'names the passphrase file');
  t.match(run.stderr, new RegExp(`LoadCredentialEncrypted=${CREDENTIAL}`), 'names the systemd credential');
  t.notOk(fs.existsSync(marker), 'the command did not run');
  t.notOk(fs.existsSync(path.join(keyringDir, '.unlock')), 'no password beside the keyring');
  t.same(filesUnder(keyringDir), [], 'no file at all in the keyring directory');

  const blank = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE: '' }, ['touch', marker]);
  t.equal(blank.code, EXIT_NEEDS_PASSPHRASE, 'an empty SVC_KEYRING_PASSPHRASE is no passphrase');
  const noCredential = await withKeyring({ SVC_KEYRING_DIR: keyringDir, CREDENTIALS_DIRECTORY: tempDir() }, ['touch', marker]);
  t.equal(noCredential.code, EXIT_NEEDS_PASSPHRASE, 'a credentials directory without the credential is no passphrase');
  t.notOk(fs.existsSync(marker));
  t.same(filesUnder(keyringDir), []);
});

t.test('a passphrase file creates the keyring and unlocks it again; the passphrase is in no file of the directory', async (t) => {
  const keyringDir = path.join(tempDir(), 'keyring');
  const secretsDir = tempDir();
  const passphrase = 'horse-battery-staple-passphrase-7361';
  const file = passphraseFile(secretsDir, passphrase);

  const created = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: file }, probe('kept-across-runs'));
  t.equal(created.code, 0, created.stderr);
  t.ok(fs.existsSync(path.join(keyringDir, 'data', 'keyrings', 'login.keyring')), 'the keyring is kept');
  const files = filesUnder(keyringDir);
  t.ok(files.length > 0);
  for (const f of files) t.notOk(fs.readFileSync(f).includes(passphrase), `${path.relative(keyringDir, f)} does not hold the passphrase`);
  t.notOk(fs.existsSync(path.join(keyringDir, '.unlock')));

  const again = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: file }, probe('get'));
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /stored:kept-across-runs/, 'the second run unlocks the keyring and reads what the first stored');

  const wrong = passphraseFile(tempDir(), 'not-the-passphrase-at-all');
  const refused = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: wrong }, probe('get'));
  t.equal(refused.code, 1);
  t.match(refused.stderr, /does not unlock the keyring/);
  t.notMatch(refused.stdout, /stored:/, 'the command did not run');

  t.test('a file others can read, an empty one, or one inside the keyring directory is refused', async (t) => {
    const loose = passphraseFile(tempDir(), passphrase, 0o644);
    const looseRun = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: loose }, probe('get'));
    t.equal(looseRun.code, EXIT_NEEDS_PASSPHRASE);
    t.match(looseRun.stderr, /can be read by other users[\s\S]*chmod 600/);
    t.notMatch(looseRun.stdout, /stored:/);

    const groupReadable = passphraseFile(tempDir(), passphrase, 0o640);
    t.equal((await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: groupReadable }, probe('get'))).code, EXIT_NEEDS_PASSPHRASE, 'group-readable too');

    const empty = passphraseFile(tempDir(), '');
    const emptyRun = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: empty }, probe('get'));
    t.equal(emptyRun.code, EXIT_NEEDS_PASSPHRASE);
    t.match(emptyRun.stderr, /is empty/);

    const missing = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: path.join(tempDir(), 'nope') }, probe('get'));
    t.equal(missing.code, EXIT_NEEDS_PASSPHRASE, 'a missing file');

    const inside = passphraseFile(keyringDir, passphrase);
    const insideRun = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: inside }, probe('get'));
    t.equal(insideRun.code, EXIT_NEEDS_PASSPHRASE);
    t.match(insideRun.stderr, /inside the keyring directory/);
    const viaLink = path.join(tempDir(), 'link');
    fs.symlinkSync(inside, viaLink);
    t.equal((await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: viaLink }, probe('get'))).code, EXIT_NEEDS_PASSPHRASE, 'also through a symlink');
    fs.rmSync(inside);
  });
});

t.test('a systemd credential creates the keyring and unlocks it again', async (t) => {
  const keyringDir = path.join(tempDir(), 'keyring');
  const credentials = tempDir();
  fs.writeFileSync(path.join(credentials, CREDENTIAL), 'credential-passphrase-0042\n', { mode: 0o400 });
  const env = { SVC_KEYRING_DIR: keyringDir, CREDENTIALS_DIRECTORY: credentials };
  const created = await withKeyring(env, probe('from-a-credential'));
  t.equal(created.code, 0, created.stderr);
  const again = await withKeyring(env, probe('get'));
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, /stored:from-a-credential/);
  for (const f of filesUnder(keyringDir)) t.notOk(fs.readFileSync(f).includes('credential-passphrase-0042'), `${path.relative(keyringDir, f)} does not hold the passphrase`);
});

t.test("an older version's .unlock is refused with the way to move it, and the move works", async (t) => {
  const keyringDir = path.join(tempDir(), 'keyring');
  // What an older version wrote: a random base64 password and its newline, the keyring made with exactly those bytes.
  const legacyPassword = `${Buffer.from('an-older-random-password').toString('base64')}\n`;
  const setup = passphraseFile(tempDir(), legacyPassword);
  t.equal((await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: setup }, probe('from-an-older-version'))).code, 0);
  const legacy = path.join(keyringDir, '.unlock');
  fs.copyFileSync(setup, legacy);
  fs.chmodSync(legacy, 0o600);

  const refused = await withKeyring({ SVC_KEYRING_DIR: keyringDir }, probe('get'));
  t.equal(refused.code, EXIT_NEEDS_PASSPHRASE, refused.stderr);
  t.match(refused.stderr, /\.unlock holds the keyring's password beside the keyring/);
  t.match(refused.stderr, /fix: move it out of/);
  t.notMatch(refused.stdout, /stored:/, 'the command did not run');
  const withSource = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: setup }, probe('get'));
  t.equal(withSource.code, EXIT_NEEDS_PASSPHRASE, 'refused while .unlock is there, even with another source');

  // The fix as printed: move the file out, mode 600, and name it.
  const moved = path.join(tempDir(), 'keyring-passphrase');
  fs.renameSync(legacy, moved);
  fs.chmodSync(moved, 0o600);
  const after = await withKeyring({ SVC_KEYRING_DIR: keyringDir, SVC_KEYRING_PASSPHRASE_FILE: moved }, probe('get'));
  t.equal(after.code, 0, after.stderr);
  t.match(after.stdout, /stored:from-an-older-version/, 'the moved password unlocks the same keyring');
});

t.test("the script's stderr reaches a log file while the command runs", async (t) => {
  const work = tempDir();
  const log = path.join(work, 'stderr.log');
  const release = path.join(work, 'release');
  const out = fs.openSync(log, 'w');
  // The command says one line on stderr, then waits (bounded) to be released.
  const child = spawn(SCRIPT, ['sh', '-c', `echo 'svc line on stderr' >&2; i=0; while [ ! -e '${release}' ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`], {
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SVC_KEYRING'))),
    detached: true,
    stdio: ['ignore', 'ignore', out],
    cwd: repoRoot,
  });
  fs.closeSync(out);
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  let running = true;
  void exited.then(() => (running = false));
  let seen = false;
  for (let i = 0; i < 400 && running && !seen; i++) {
    seen = fs.readFileSync(log, 'utf8').includes('svc line on stderr');
    if (!seen) await new Promise((r) => setTimeout(r, 50));
  }
  t.ok(seen, 'the line is in the log file');
  t.ok(running, 'while the command is still running');
  fs.writeFileSync(release, '');
  t.equal(await exited, 0);
});

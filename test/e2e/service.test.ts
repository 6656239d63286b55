/**
 * `svc service install | status | uninstall` from a real release package (npm pack → npm install -g
 * into a temp prefix). In this container the systemd user manager is unreachable, so the unit is
 * written but not started and the manager's view is `unknown`.
 */
import t from 'tap';
import { execFile, spawnSync } from 'node:child_process';
import { createCipheriv, createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Entry } from '@napi-rs/keyring';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const KEYRING_SERVICE = 'svc';
const COMMAND_TIMEOUT_MS = 60_000;
const INSTALL_TIMEOUT_MS = 120_000;

const suffix = (home: string) => createHash('sha256').update(path.resolve(home)).digest('hex').slice(0, 16);
const keyringEntry = (home: string) => new Entry(KEYRING_SERVICE, `home-${suffix(home)}`, { linux: { store: 'secret-service' } });
const mode = (p: string) => fs.statSync(p).mode & 0o777;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-service-'));
const prefix = path.join(tmp, 'prefix');
const configHome = path.join(tmp, 'config');
// An empty runtime dir keeps systemctl away from any real user manager of the person running the tests.
const runtimeDir = path.join(tmp, 'runtime');
fs.mkdirSync(runtimeDir, { mode: 0o700 });
const keyringHomes: string[] = [];

t.teardown(() => {
  for (const home of keyringHomes) {
    try {
      keyringEntry(home).deleteCredential();
    } catch {
      // already gone
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: configHome, XDG_RUNTIME_DIR: runtimeDir };
delete baseEnv.SVC_URL;
delete baseEnv.SVC_API_KEY;
delete baseEnv.SVC_HOME;

/**
 * On a desktop the session bus may still lead to a real user manager. The tests must never
 * register units there, so in that case a `systemctl` that fails like an unreachable manager
 * (as in containers and CI) goes first on PATH.
 */
if (process.platform === 'linux' && spawnSync('systemctl', ['--user', 'show', '--property=Version'], { env: baseEnv, encoding: 'utf8' }).status === 0) {
  const dir = path.join(tmp, 'no-manager-bin');
  fs.mkdirSync(dir);
  const script = '#!/bin/sh\n[ "$1" = --version ] && { echo "systemd"; exit 0; }\necho "Failed to connect to bus: No medium found" >&2\nexit 1\n';
  fs.writeFileSync(path.join(dir, 'systemctl'), script, { mode: 0o755 });
  baseEnv.PATH = `${dir}${path.delimiter}${baseEnv.PATH ?? ''}`;
  t.comment('a real systemd user manager is reachable here; the tests use an unreachable stand-in instead');
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: Record<string, unknown>;
  error: { code?: string; message?: string; fix?: string };
}

/** Asynchronous, so a server in this test process can answer the command's health probe. */
async function run(svc: string, args: string[], env: NodeJS.ProcessEnv = baseEnv, cwd = tmp): Promise<Run> {
  const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(process.execPath, [svc, ...args], { env, cwd, encoding: 'utf8', timeout: COMMAND_TIMEOUT_MS }, (_err, stdout, stderr) =>
      resolve({ status: child.exitCode, stdout, stderr }),
    );
  });
  const parse = (text: string): Record<string, unknown> => {
    try {
      return JSON.parse(text.trim().split('\n').pop() ?? '') as Record<string, unknown>;
    } catch {
      return {};
    }
  };
  const err = parse(r.stderr).error as Run['error'] | undefined;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: parse(r.stdout), error: err ?? {} };
}

/** A home as `svc serve --init` leaves it: keys.json wrapping a database key with a key in the credential store. */
function initializedHome(name: string): { home: string; kek: string } {
  const home = path.join(tmp, name);
  fs.mkdirSync(home, { mode: 0o700 });
  const kek = randomBytes(32);
  const homeId = randomUUID();
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', kek, nonce);
  cipher.setAAD(Buffer.from(`svc keys.json v1 ${homeId}`));
  const wrapped = Buffer.concat([cipher.update(randomBytes(32)), cipher.final(), cipher.getAuthTag()]);
  const keys = { version: 1, home_id: homeId, wrapped_key: wrapped.toString('base64'), nonce: nonce.toString('base64'), alg: 'A256GCM', created_at: new Date().toISOString() };
  fs.writeFileSync(path.join(home, 'keys.json'), JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
  keyringHomes.push(home);
  keyringEntry(home).setSecret(kek);
  return { home, kek: kek.toString('base64') };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Packs the repository and installs the tarball like a user would, without native builds. */
function installReleasePackage(): { svc: string } | { failure: string } {
  const packDir = path.join(tmp, 'pack');
  fs.mkdirSync(packDir);
  // --ignore-scripts: prepack would rebuild dist/ under the other tests; `npm test` built it already.
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packDir, '--silent'], { cwd: repoRoot, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS });
  const tarball = fs.readdirSync(packDir).find((f) => f.endsWith('.tgz'));
  if (pack.status !== 0 || !tarball) return { failure: `npm pack failed: ${pack.stderr}` };
  const install = spawnSync(
    'npm',
    ['install', '-g', '--prefix', prefix, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', path.join(packDir, tarball)],
    { cwd: tmp, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS },
  );
  if (install.status !== 0) return { failure: `npm install -g of the packed tarball failed:\n${install.stderr.split('\n').filter((l) => !/Unknown user config/.test(l)).slice(0, 8).join('\n')}` };
  return { svc: path.join(prefix, 'bin', 'svc') };
}

const installed = process.platform === 'linux' ? installReleasePackage() : null;
if (!installed) {
  t.plan(0, 'the real service path runs on Linux (systemd); the other platforms are covered by the unit tests');
} else if ('failure' in installed) {
  t.fail(`the release package installs with npm install -g — ${installed.failure}`, { diagnostic: true });
} else {
  const svc = installed.svc;
  const packageName = (JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { name: string }).name;
  const packageDir = fs.realpathSync(path.join(prefix, 'lib', 'node_modules', packageName));
  const unitDir = path.join(configHome, 'systemd', 'user');
  const { home, kek } = initializedHome('home-a');
  const port = await freePort();
  const unitName = `svc-${suffix(home)}.service`;
  const unitPath = path.join(unitDir, unitName);
  const logs = { stdout: path.join(home, 'logs', 'service.log'), stderr: path.join(home, 'logs', 'service.err.log') };

  await t.test('install writes a user unit with absolute paths, without a reachable manager', async (t) => {
    const r = await run(svc, ['service', 'install', '--home', home, '--port', String(port), '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.json, { installed: true, registered: null, running: null, state: 'unknown', port, home, unit_name: unitName, unit_path: unitPath, logs });
    t.match(r.json.note, /systemctl --user enable --now svc-[0-9a-f]{16}\.service/, 'the note says how to start it');
    t.match(r.json.note, /loginctl enable-linger/);
    const unit = fs.readFileSync(unitPath, 'utf8');
    const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '';
    t.equal(execStart, `${process.execPath} ${packageDir}/bin/svc serve --home ${home} --port ${port} --flavor production`);
    t.ok(execStart.split(' ').filter((w) => w.includes('/')).every((w) => path.isAbsolute(w)), 'every path in ExecStart is absolute');
    t.match(unit, /^Restart=on-failure$/m);
    t.match(unit, new RegExp(`^StandardOutput=append:${logs.stdout.replace(/[.]/g, '\\.')}$`, 'm'));
    t.match(unit, new RegExp(`^StandardError=append:${logs.stderr.replace(/[.]/g, '\\.')}$`, 'm'));
    t.match(unit, /^WantedBy=default\.target$/m);
    const keysJson = fs.readFileSync(path.join(home, 'keys.json'), 'utf8');
    const wrappedKey = (JSON.parse(keysJson) as { wrapped_key: string }).wrapped_key;
    t.notOk(unit.includes(kek) || unit.includes(wrappedKey), 'no key material in the unit');
    t.notMatch(unit, /SVC_API_KEY|SVC_URL|password|token/i, 'no credentials in the unit');
    t.equal(mode(path.join(home, 'logs')), 0o700, 'log directory 0700');
    t.equal(mode(logs.stdout), 0o600, 'service.log 0600');
    t.equal(mode(logs.stderr), 0o600, 'service.err.log 0600');
  });

  await t.test('status reads the installed unit back; the manager is not observable here', async (t) => {
    const r = await run(svc, ['service', 'status', '--home', home, '--json']);
    t.equal(r.code, 0, r.stderr);
    t.same(r.json, { installed: true, registered: null, running: null, state: 'unknown', port, home, unit_name: unitName, unit_path: unitPath, logs, http_healthy: false });
    const plain = await run(svc, ['service', 'status', '--home', home]);
    t.equal(plain.code, 0);
    t.match(plain.stdout, unitName, 'plain output names the unit');
    t.match(plain.stdout, 'installed');
  });

  await t.test('http_healthy is true when something answers the status route on the port', async (t) => {
    const server = http.createServer((req, res) => {
      res.writeHead(req.url === '/v0/owner/status' ? 200 : 404, { 'content-type': 'application/json' });
      res.end('{"setup_required":false,"authenticated":false,"locked":false}');
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const r = await run(svc, ['service', 'status', '--home', home, '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.json, { http_healthy: true, running: null, state: 'unknown' });
  });

  await t.test('installing again (after an upgrade) rewrites the same unit', async (t) => {
    const r = await run(svc, ['service', 'install', '--home', home, '--port', String(port), '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.json, { installed: true, unit_path: unitPath, port });
    t.same(fs.readdirSync(unitDir), [unitName]);
  });

  await t.test('each home needs its own port', async (t) => {
    const other = initializedHome('home-b');
    const clash = await run(svc, ['service', 'install', '--home', other.home, '--port', String(port), '--json']);
    t.equal(clash.code, 1, 'the same port as another installed home is refused');
    t.equal(clash.error.code, 'validation_error');
    const otherPort = await freePort();
    const ok = await run(svc, ['service', 'install', '--home', other.home, '--port', String(otherPort), '--json']);
    t.equal(ok.code, 0, ok.stderr);
    t.equal(ok.json.unit_name, `svc-${suffix(other.home)}.service`);
    t.not(ok.json.unit_name, unitName, 'a second home gets its own unit');
    t.equal((await run(svc, ['service', 'uninstall', '--home', other.home, '--json'])).code, 0);
  });

  await t.test('uninstall removes only the unit and is idempotent', async (t) => {
    const r = await run(svc, ['service', 'uninstall', '--home', home, '--json']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.json, { installed: false, removed: true, registered: null, running: null, state: 'unknown', unit_path: unitPath });
    t.notOk(fs.existsSync(unitPath), 'the unit file is gone');
    t.ok(fs.existsSync(path.join(home, 'keys.json')), 'keys.json stays');
    t.ok(fs.existsSync(logs.stdout) && fs.existsSync(logs.stderr), 'logs stay');
    t.same(Buffer.from(keyringEntry(home).getSecret() ?? []).toString('base64'), kek, 'the credential store item stays');
    const again = await run(svc, ['service', 'uninstall', '--home', home, '--json']);
    t.equal(again.code, 0, again.stderr);
    t.match(again.json, { installed: false, removed: false });
    const status = await run(svc, ['service', 'status', '--home', home, '--json']);
    t.match(status.json, { installed: false, port: null, http_healthy: false });
  });

  /**
   * A stand-in `systemctl` first on PATH plays a reachable user manager: it answers like systemd,
   * records each call, and refuses `enable` when asked to.
   */
  function fakeSystemctl(): { env: NodeJS.ProcessEnv; calls: () => string[] } {
    const dir = fs.mkdtempSync(path.join(tmp, 'fake-bin-'));
    const callLog = path.join(dir, 'calls.log');
    const script = [
      '#!/bin/sh',
      'echo "$*" >> "$FAKE_SYSTEMCTL_LOG"',
      'case "$*" in',
      '  --version) echo "systemd 252" ;;',
      '  *"show --property=Version") echo "Version=252" ;;',
      '  *"show --property=LoadState"*) printf "LoadState=loaded\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\n" ;;',
      '  *" enable "*) if [ -n "$FAKE_SYSTEMCTL_REFUSE" ]; then echo "Failed to enable unit: Access denied" >&2; exit 1; fi ;;',
      'esac',
      'exit 0',
      '',
    ].join('\n');
    fs.writeFileSync(path.join(dir, 'systemctl'), script, { mode: 0o755 });
    return {
      env: { ...baseEnv, PATH: `${dir}${path.delimiter}${baseEnv.PATH ?? ''}`, FAKE_SYSTEMCTL_LOG: callLog },
      calls: () => (fs.existsSync(callLog) ? fs.readFileSync(callLog, 'utf8').trim().split('\n') : []).filter((c) => !c.startsWith('--user --no-pager show')),
    };
  }

  await t.test('with a reachable user manager, install enables and starts the unit and uninstall stops it', async (t) => {
    const fake = fakeSystemctl();
    const r = await run(svc, ['service', 'install', '--home', home, '--port', String(port), '--json'], fake.env);
    t.equal(r.code, 0, r.stderr);
    t.match(r.json, { installed: true, registered: true, running: true, state: 'running' });
    t.notOk('note' in r.json, 'no note when the manager took the unit');
    t.same(fake.calls(), ['--version', '--user --no-pager daemon-reload', `--user --no-pager enable ${unitName}`, `--user --no-pager restart ${unitName}`]);
    const status = await run(svc, ['service', 'status', '--home', home, '--json'], fake.env);
    t.match(status.json, { installed: true, registered: true, running: true, state: 'running', port });
    const un = await run(svc, ['service', 'uninstall', '--home', home, '--json'], fake.env);
    t.equal(un.code, 0, un.stderr);
    t.ok(fake.calls().includes(`--user --no-pager disable --now ${unitName}`), 'uninstall stops and disables through the manager');
    t.notOk(fs.existsSync(unitPath));
  });

  await t.test('a reachable manager that refuses: service_unavailable, exit 10', async (t) => {
    const fake = fakeSystemctl();
    const r = await run(svc, ['service', 'install', '--home', home, '--port', String(port), '--json'], { ...fake.env, FAKE_SYSTEMCTL_REFUSE: '1' });
    t.equal(r.code, 10);
    t.match(r.error, { code: 'service_unavailable', message: /refused to enable .*Access denied/ });
    t.equal((await run(svc, ['service', 'uninstall', '--home', home, '--json'])).code, 0, 'the written unit can be removed');
  });

  await t.test('SVC_URL or SVC_API_KEY set: missing_permission, exit 4', async (t) => {
    for (const variable of ['SVC_URL', 'SVC_API_KEY']) {
      for (const action of ['install', 'status', 'uninstall']) {
        const r = await run(svc, ['service', action, '--home', home, '--json'], { ...baseEnv, [variable]: 'http://127.0.0.1:1' });
        t.equal(r.code, 4, `${action} with ${variable}`);
        t.equal(r.error.code, 'missing_permission');
      }
    }
    t.notOk(fs.existsSync(unitPath), 'nothing was installed');
  });

  await t.test('a home that is missing, uninitialized or without its credential store item: action_required, exit 6', async (t) => {
    const missing = await run(svc, ['service', 'install', '--home', path.join(tmp, 'nope'), '--json']);
    t.equal(missing.code, 6);
    t.match(missing.error, { code: 'action_required', message: /does not exist/, fix: /svc serve --init/ });

    const empty = path.join(tmp, 'empty-home');
    fs.mkdirSync(empty, { mode: 0o700 });
    const uninitialized = await run(svc, ['service', 'install', '--home', empty, '--json']);
    t.equal(uninitialized.code, 6);
    t.match(uninitialized.error, { code: 'action_required', message: /not initialized/ });
    t.same(fs.readdirSync(empty), [], 'install never initializes a home');

    const orphan = initializedHome('home-orphan');
    keyringEntry(orphan.home).deleteCredential();
    const noItem = await run(svc, ['service', 'install', '--home', orphan.home, '--json']);
    t.equal(noItem.code, 6);
    t.match(noItem.error, { code: 'action_required', message: /credential store item/ });
    t.equal(fs.existsSync(unitDir) ? fs.readdirSync(unitDir).filter((f) => f.endsWith('.service')).length : 0, 0, 'no unit was written');
  });

  await t.test('invalid options fail before anything is written', async (t) => {
    t.equal((await run(svc, ['service', 'install', '--home', home, '--port', '0', '--json'])).code, 1);
    t.equal((await run(svc, ['service', 'install', '--home', home, '--port', '65536', '--json'])).code, 1);
    t.equal((await run(svc, ['service', 'status', '--home', home, '--port', '8025', '--json'])).code, 1, '--port is install only');
    t.equal((await run(svc, ['service', 'restart', '--json'])).error.code, 'validation_error');
  });

  await t.test('from the source checkout, install is not_supported (exit 9); status works', async (t) => {
    const bin = path.join(repoRoot, 'bin', 'svc');
    const r = await run(bin, ['service', 'install', '--home', home, '--port', String(port), '--json'], baseEnv, repoRoot);
    t.equal(r.code, 9, r.stderr);
    t.match(r.error, { code: 'not_supported', message: /release package/, fix: /npm pack/ });
    t.notOk(fs.existsSync(unitPath));
    const status = await run(bin, ['service', 'status', '--home', home, '--json'], baseEnv, repoRoot);
    t.equal(status.code, 0, status.stderr);
    t.match(status.json, { installed: false, unit_name: unitName });
  });
}

/**
 * A headless server (issue 33 §2): `svc init --unlock systemd-creds` seals the home's key to this
 * machine, `svc service install --system --print` prints hardened units that `systemd-analyze
 * verify` accepts, and the unit's ExecStart, run as systemd runs it (env -i plus the unit's
 * Environment=, a credentials directory filled by `systemd-creds decrypt`, stdin closed, no D-Bus,
 * no TTY), reaches server.ready, receives mail, survives kill -9 and keeps every message.
 *
 * SYSTEMD_CREDENTIAL_SECRET points systemd-creds at a host key made for this test instead of
 * /var/lib/systemd/credential.secret: a second such file stands in for another machine.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { Edge } from '../../src/edge/edge.js';
import { api, svcBin, tempDir } from '../helpers/svc.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { freePort } from '../helpers/ports.js';
import { until } from '../helpers/until.js';
import { credentialsDirectory, startUnit, unitCommand, unitValues, type UnitProcess } from '../helpers/system-unit.js';

const DOMAIN = 'system.test';
const EDGE_TOKEN = 'edge-test-token-system-unit-0123456789';
const MESSAGES = 5;
const enc = encodeURIComponent;

const tmp = tempDir('svc-system-');
const hostSecret = path.join(tmp, 'host-credential.secret');
const otherMachineSecret = path.join(tmp, 'other-host-credential.secret');
const credsEnv = (secret: string): NodeJS.ProcessEnv => ({ ...process.env, SYSTEMD_CREDENTIAL_SECRET: secret });

function svc(args: string[], env: NodeJS.ProcessEnv = credsEnv(hostSecret)) {
  const r = spawnSync(process.execPath, [svcBin, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface PrintedUnit {
  name: string;
  path: string;
  text: string;
}

function printUnits(home: string, extra: string[]): PrintedUnit[] {
  const r = svc(['service', 'install', '--system', '--home', home, '--print', '--json', ...extra]);
  if (r.code !== 0) throw new Error(`print failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { units: PrintedUnit[] }).units;
}

const home = path.join(tmp, 'var-lib-svc');
const edgeData = path.join(tmp, 'var-lib-svc-edge');
const running: UnitProcess[] = [];
t.teardown(() => {
  for (const p of running) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
});

let units: PrintedUnit[] = [];
let homePort = 0;

let initReport: Record<string, unknown> = {};

t.before(async () => {
  const init = svc(['init', '--home', home, '--unlock', 'systemd-creds', '--json']);
  if (init.code !== 0) throw new Error(`svc init failed: ${init.stderr}`);
  initReport = JSON.parse(init.stdout) as Record<string, unknown>;
  homePort = await freePort();
  units = printUnits(home, ['--port', String(homePort), '--edge', '--edge-hostname', 'mx.system.test', '--edge-data', edgeData, '--edge-host', '127.0.0.1', '--edge-smtp-port', String(await freePort()), '--edge-api-port', String(await freePort())]);
});

t.test('svc init --unlock systemd-creds: keys.json names the method, the credential is sealed 0600 and is not the key', async (t) => {
  const keys = JSON.parse(fs.readFileSync(path.join(home, 'keys.json'), 'utf8')) as Record<string, unknown>;
  t.equal(keys.unlock, 'systemd-creds');
  t.equal(keys.version, 1, 'still a version 1 file: older readers of the other fields are unaffected');
  const cred = path.join(home, 'svc-kek.cred');
  t.equal(fs.statSync(cred).mode & 0o777, 0o600);
  const kek = spawnSync('systemd-creds', ['decrypt', '--name=svc-kek', cred, '-'], { env: credsEnv(hostSecret) }).stdout;
  t.equal(kek.length, 32, 'it decrypts to a 32-byte key on this machine');
  const sealed = fs.readFileSync(cred);
  t.equal(sealed.indexOf(kek), -1, 'the key is not in the file in clear');
  t.equal(Buffer.from(sealed.toString('latin1'), 'base64').indexOf(kek), -1, 'nor in its base64 body');
  t.notOk(/svc-kek/.test(fs.readFileSync(path.join(home, 'keys.json'), 'utf8')), 'keys.json does not carry the credential');

  t.match(initReport.recovery_code, /^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$/, 'svc init shows the recovery code once (docs/backup.md)');
  t.ok(keys.recovery, 'and keys.json holds the database key wrapped by it');
  const again = svc(['init', '--home', home, '--unlock', 'systemd-creds', '--json']);
  t.equal(again.code, 0);
  t.match(JSON.parse(again.stdout), { created: false, unlock: 'systemd-creds', recovery_code: null }, 'a second init changes nothing and shows no code');
  t.equal(fs.readFileSync(cred).toString(), sealed.toString(), 'the sealed credential is kept');
  const otherMethod = svc(['init', '--home', home, '--json']);
  t.equal(otherMethod.code, 6, 'asking for the keyring on a systemd-creds home is refused, not silently ignored');
});

t.test('systemd-analyze verify accepts both printed units, without a single warning', async (t) => {
  t.same(units.map((u) => u.name), ['svc.service', 'svc-edge.service']);
  t.same(units.map((u) => u.path), ['/etc/systemd/system/svc.service', '/etc/systemd/system/svc-edge.service']);
  const dir = tempDir('svc-units-');
  const files = units.map((u) => {
    const file = path.join(dir, u.name);
    fs.writeFileSync(file, u.text);
    return file;
  });
  fs.mkdirSync(edgeData, { recursive: true, mode: 0o700 });
  const verify = spawnSync('systemd-analyze', ['verify', ...files], { encoding: 'utf8' });
  t.equal(verify.status, 0, verify.stderr);
  t.equal(verify.stdout + verify.stderr, '', 'verify prints nothing: every line is understood');

  // The same check sees a bad line: it is not a check that cannot fail.
  const broken = path.join(dir, 'svc-broken.service');
  fs.writeFileSync(broken, units[0].text.replace('ProtectSystem=strict', 'ProtectSystem=stricter'));
  const bad = spawnSync('systemd-analyze', ['verify', broken], { encoding: 'utf8' });
  t.match(bad.stdout + bad.stderr, /ProtectSystem|protect system/i, 'a value systemd does not know is reported');
});

t.test('the printed units carry the hardening and only what each needs', async (t) => {
  const [home_, edge] = units.map((u) => u.text);
  for (const unit of [home_, edge]) {
    for (const line of ['ProtectSystem=strict', 'ProtectHome=yes', 'NoNewPrivileges=yes', 'PrivateTmp=yes', 'PrivateDevices=yes', 'Restart=on-failure', 'User=svc', 'MemoryDenyWriteExecute=no']) {
      t.ok(unit.split('\n').includes(line), `${line}`);
    }
  }
  t.same(unitValues(home_, 'ReadWritePaths'), [home], 'the home unit writes to the home only');
  t.same(unitValues(edge, 'ReadWritePaths'), [edgeData], 'the edge unit writes to its data directory only');
  t.same(unitValues(home_, 'CapabilityBoundingSet'), [''], 'the home unit has no capabilities');
  t.same(unitValues(edge, 'CapabilityBoundingSet'), ['CAP_NET_BIND_SERVICE']);
  t.same(unitValues(edge, 'AmbientCapabilities'), ['CAP_NET_BIND_SERVICE'], 'the edge may bind 25/80/443 without root');
  t.same(unitValues(home_, 'LoadCredentialEncrypted'), [`svc-kek:${path.join(home, 'svc-kek.cred')}`]);
  t.same(unitValues(edge, 'LoadCredentialEncrypted'), [], 'the edge never receives the home key');
});

async function sendSmtp(port: number, to: string, subject: string, messageId: string): Promise<void> {
  await until(`SMTP accepts ${messageId}`, async () => {
    try {
      await nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true }).sendMail({ from: 'peer@sender.test', to, subject, text: `body of ${subject}`, messageId });
      return true;
    } catch (err) {
      // 451 until the home pushed its routing to the edge.
      if ((err as { responseCode?: number }).responseCode === 451) return false;
      throw err;
    }
  });
}

interface Listed {
  message_id: string;
  subject: string;
}

async function startHome(): Promise<{ unit: UnitProcess; url: string; token: string }> {
  const command = unitCommand(units[0].text);
  const unit = startUnit(command, credentialsDirectory(command, credsEnv(hostSecret)), 'server.ready');
  running.push(unit);
  const ready = await unit.ready;
  const connection = JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string };
  return { unit, url: ready.url as string, token: connection.owner_token };
}

t.test('the home unit runs headless from its credential, receives mail, and keeps every message across kill -9', async (t) => {
  const command = unitCommand(units[0].text);
  t.notOk('DBUS_SESSION_BUS_ADDRESS' in command.environment, 'the unit gives no D-Bus session');
  t.same(Object.keys(command.environment).sort(), ['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']);

  const dns = await startLoopbackDns({});
  const edge = new Edge({ dataDir: path.join(tempDir('svc-edge-'), 'edge'), smtp: { host: '127.0.0.1', port: 0 }, api: { host: '127.0.0.1', port: 0 }, apiToken: EDGE_TOKEN, hostname: 'mx.system.test', resolver: dns.resolver });
  const bound = await edge.start();
  t.teardown(async () => {
    await edge.stop();
    await dns.close();
  });

  const first = await startHome();
  t.equal(first.url, `http://127.0.0.1:${homePort}`, 'it serves on the unit\'s fixed port');
  const paired = await api(first.url, 'PUT', '/v0/owner/transport', { token: first.token, body: { edge: { url: bound.api.url, token: EDGE_TOKEN } } });
  t.equal(paired.status, 200, paired.text);
  const created = await api<{ inbox_id: string }>(first.url, 'POST', '/v0/inboxes', { token: first.token, body: { username: 'ops', domain: DOMAIN } });
  t.equal(created.status, 200, created.text);
  const inbox = created.body.inbox_id;
  const expected = Array.from({ length: MESSAGES }, (_, i) => ({ message_id: `<system-${i}@sender.test>`, subject: `headless ${i}` }));
  for (const m of expected) await sendSmtp(bound.smtp.port, inbox, m.subject, m.message_id);

  const list = async (url: string, token: string) => {
    const res = await api<{ messages: Listed[] }>(url, 'GET', `/v0/inboxes/${enc(inbox)}/messages?limit=100`, { token });
    return res.status === 200 ? res.body.messages.map((m) => ({ message_id: m.message_id, subject: m.subject })) : [];
  };
  const byId = (a: Listed, b: Listed) => a.message_id.localeCompare(b.message_id);
  await until('all messages stored', async () => (await list(first.url, first.token)).length === MESSAGES);

  first.unit.proc.kill('SIGKILL');
  await first.unit.exited;
  t.equal(first.unit.proc.signalCode, 'SIGKILL');

  const second = await startHome();
  t.same((await list(second.url, second.token)).sort(byId), expected.sort(byId), 'every message is there after kill -9 and a headless restart');
  for (const m of expected) {
    const full = await api<{ text: string | null }>(second.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(m.message_id)}`, { token: second.token });
    t.match(full.body.text ?? '', `body of ${m.subject}`, `${m.message_id} is intact`);
  }
  t.notMatch(first.unit.stderr() + second.unit.stderr(), /keychain|dbus|secret service/i, 'no keyring was consulted');
  second.unit.proc.kill('SIGTERM');
  t.equal(await second.unit.exited, 0, 'it stops cleanly on SIGTERM, as systemctl stop sends');
});

t.test('the edge unit runs headless as printed (on loopback ports here)', async (t) => {
  const command = unitCommand(units[1].text);
  t.same(command.credentials, []);
  const unit = startUnit(command, credentialsDirectory(command, {}), 'edge.ready');
  running.push(unit);
  const ready = await unit.ready;
  t.equal(ready.data, edgeData);
  t.ok(fs.existsSync(ready.token_file as string), 'its API token lives in its own data directory');
  unit.proc.kill('SIGTERM');
  const code = await unit.exited;
  // svc edge prints edge.ready a moment before it handles SIGTERM itself; a SIGTERM in that moment
  // ends it by the signal, which systemd also counts as a clean stop (SuccessExitStatus).
  t.ok(code === 0 || unit.proc.signalCode === 'SIGTERM', `stopped cleanly (exit ${code}, signal ${unit.proc.signalCode})`);
});

t.test('without the unit\'s credential the home refuses to start with the documented error', async (t) => {
  const command = unitCommand(units[0].text);
  const runBare = (extraEnv: Record<string, string>) => {
    const r = spawnSync('env', ['-i', ...Object.entries({ ...command.environment, ...extraEnv }).map(([k, v]) => `${k}=${v}`), ...command.argv], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { code: r.status, failure: JSON.parse(r.stderr.trim().split('\n').pop() ?? '{}') as Record<string, string> };
  };

  // Another machine: systemd-creds there has a different host key, so the sealed file does not open.
  spawnSync('systemd-creds', ['encrypt', '--name=probe', '-', path.join(tmp, 'probe.cred')], { input: 'x', env: credsEnv(otherMachineSecret) });
  const elsewhere = spawnSync('systemd-creds', ['decrypt', '--name=svc-kek', path.join(home, 'svc-kek.cred'), '-'], { env: credsEnv(otherMachineSecret), encoding: 'utf8' });
  t.not(elsewhere.status, 0, 'systemd-creds on another machine cannot decrypt the credential');
  t.equal(elsewhere.stdout, '');

  // Not under systemd: svc tries to decrypt itself, with the other machine's host key it cannot.
  const byHand = runBare({ SYSTEMD_CREDENTIAL_SECRET: otherMachineSecret, PATH: process.env.PATH ?? '/usr/bin:/bin' });
  t.equal(byHand.code, 1);
  t.match(byHand.failure, { event: 'server.failed', code: 'keychain_unavailable', cause: 'SystemdCredentialUnavailable' });
  t.match(byHand.failure.fix, /LoadCredentialEncrypted=svc-kek:/);

  // Under systemd, but the unit lost its LoadCredentialEncrypted= line.
  const empty = tempDir('svc-creds-empty-');
  const noCredential = runBare({ CREDENTIALS_DIRECTORY: empty });
  t.match(noCredential.failure, { event: 'server.failed', code: 'keychain_entry_missing', cause: 'SystemdCredentialMissing' });

  // A credential of the wrong size is refused, not used.
  fs.writeFileSync(path.join(empty, 'svc-kek'), Buffer.alloc(31));
  const short = runBare({ CREDENTIALS_DIRECTORY: empty });
  t.match(short.failure, { code: 'keychain_unavailable', cause: 'SystemdCredentialUnavailable' });

  // A 32-byte key that is not this home's opens nothing.
  fs.writeFileSync(path.join(empty, 'svc-kek'), Buffer.alloc(32, 7));
  const wrong = runBare({ CREDENTIALS_DIRECTORY: empty });
  t.match(wrong.failure, { code: 'database_key_invalid' });

  // As root by hand on this machine, svc decrypts the sealed file itself (for an administrator's shell).
  const byRoot = startUnit({ ...command, environment: { ...command.environment, SYSTEMD_CREDENTIAL_SECRET: hostSecret, PATH: process.env.PATH ?? '/usr/bin:/bin' } }, null, 'server.ready');
  running.push(byRoot);
  t.match(await byRoot.ready, { event: 'server.ready' });
  byRoot.proc.kill('SIGTERM');
  t.equal(await byRoot.exited, 0);
});

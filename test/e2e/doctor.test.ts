/**
 * `svc doctor` and `GET /v0/owner/doctor` end to end (docs/doctor.md), against a real service with
 * the built-in edge and a loopback DNS server: a fresh home warns only about its backup (ok false,
 * exit 1) until a backup is made; a domain whose records are missing fails naming each record,
 * and passes once its records are published and the self-test came back; a quarantined item warns;
 * a smart host that refuses the login fails the outbound check; a dead edge fails the edge check.
 * Neither the SMTP password nor the edge token ever appears in an answer.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { SMTPServer } from 'smtp-server';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns, type Zone } from '../helpers/dns.js';
import { openHomeDb } from '../helpers/db.js';
import { until } from '../helpers/until.js';
import { uuidv7 } from '../../src/db/ids.js';
import { svcCli } from './cli-run.js';
import type { DoctorCheck, DoctorReport } from '../../src/doctor/schemas.js';

const SMTP_PASSWORD = 'smart-host-password-never-shown-7f3a';
const EDGE_TOKEN = 'edge-token-never-shown-0123456789abcdef';

let dns: LoopbackDns;
let svc: RunningSvc;

t.before(async () => {
  dns = await startLoopbackDns({});
  svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server] });
});
t.teardown(async () => {
  await svc.stop();
  await dns.close();
});

const owner = <T = Record<string, unknown>>(method: string, urlPath: string, body?: unknown) => api<T>(svc.url, method, urlPath, { token: svc.ownerToken, body });
const ownerCli = () => ['--home', svc.home];

async function doctor(): Promise<DoctorReport> {
  const res = await owner<DoctorReport>('GET', '/v0/owner/doctor');
  if (res.status !== 200) throw new Error(`doctor: ${res.status} ${res.text}`);
  return res.body;
}
const byId = (report: DoctorReport, id: string): DoctorCheck => {
  const check = report.checks.find((c) => c.id === id);
  if (!check) throw new Error(`no check ${id} in ${report.checks.map((c) => c.id).join(', ')}`);
  return check;
};
const statuses = (report: DoctorReport) => Object.fromEntries(report.checks.map((c) => [c.id, c.status]));

t.test('a fresh home: every check passes but the backup, which has never been made; ok is false and svc doctor exits 1', async (t) => {
  // The loops report their first passes within moments of the ready line.
  const report = await until('loops running', async () => {
    const r = await doctor();
    return byId(r, 'loops').status === 'pass' ? r : undefined;
  });
  t.same(statuses(report), { credential_store: 'pass', edge: 'pass', outbound: 'pass', domains: 'skip', disk: statuses(report).disk, backup: 'warn', loops: 'pass', quarantine: 'pass' });
  t.not(byId(report, 'disk').status, 'skip', 'the disk is checked');
  t.equal(report.ok, false);
  t.match(byId(report, 'backup'), { detail: /never been backed up/, fix: /svc backup --to FILE/ });
  t.match(byId(report, 'credential_store').detail, /keyring.*opens keys\.json.*recovery code is set/s);
  t.match(byId(report, 'edge'), { title: 'Edge (built-in)', fix: null });
  t.match(byId(report, 'domains').detail, /No domains yet/);
  t.ok(Date.parse(report.checked_at) > 0, 'checked_at is a time');

  const cli = await svcCli(['doctor', ...ownerCli()]);
  t.equal(cli.code, 1, 'svc doctor exits 1 when a check warns');
  t.match(cli.stdout, /^! Last backup\s+This home has never been backed up\.$/m);
  t.match(cli.stdout, /fix: Run `svc backup --to FILE`/);
  t.match(cli.stdout, /^✓ Credential store\s/m);
  t.match(cli.stdout, /^– Domains\s/m);
  t.match(cli.stdout, /1 check needs attention\.\n$/);

  const json = await svcCli(['doctor', '--json', ...ownerCli()]);
  t.equal(json.code, 1);
  const body = json.json<DoctorReport>();
  t.equal(body.ok, false);
  t.same(body.checks.map((c) => c.id), report.checks.map((c) => c.id), '--json prints the route body');
});

t.test('after a backup the backup check passes', async (t) => {
  const file = path.join(tempDir('svc-doctor-backup-'), 'home.svcbackup');
  const made = await svcCli(['backup', '--to', file, ...ownerCli()]);
  t.equal(made.code, 0, made.stderr);
  const report = await until('backup recorded', async () => {
    const r = await doctor();
    return byId(r, 'backup').status === 'pass' ? r : undefined;
  });
  t.match(byId(report, 'backup'), { status: 'pass', detail: /last backup was made .* ago/, fix: null });
  t.equal(report.ok, true, 'nothing else needs attention');
  const cli = await svcCli(['doctor', ...ownerCli()]);
  t.equal(cli.code, 0, 'svc doctor exits 0 when all pass');
  t.match(cli.stdout, /All checks pass\.\n$/);
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
});

/** Publishes plan records in the loopback zone. */
function publish(records: { type: string; name: string; value: string; priority?: number }[]): void {
  const zone: Zone = dns.zone;
  for (const r of records) delete zone[r.name];
  for (const r of records) {
    const entry = (zone[r.name] ??= {});
    if (r.type === 'MX') (entry.MX ??= []).push({ exchange: r.value, priority: r.priority ?? 10 });
    if (r.type === 'A') (entry.A ??= []).push(r.value);
    if (r.type === 'TXT') (entry.TXT ??= []).push(r.value);
  }
}

t.test('a domain whose records are missing fails naming each record; published and verified, it passes', async (t) => {
  const created = await owner<{ domain_id: string }>('POST', '/v0/domains', { domain: 'doctor.example.com' });
  t.equal(created.status, 200, created.text);
  const missing = await doctor();
  const dnsCheck = byId(missing, 'domain:doctor.example.com');
  t.equal(dnsCheck.status, 'fail');
  const failing = (dnsCheck.failing_records ?? []).map((r) => `${r.type} ${r.name}`);
  t.ok(failing.includes('MX doctor.example.com'), 'MX named');
  t.ok(failing.includes('TXT _dmarc.doctor.example.com'), 'DMARC named');
  t.ok(failing.some((n) => /^TXT [^ ]+\._domainkey\.doctor\.example\.com$/.test(n)), 'DKIM named');
  t.equal(failing.filter((n) => n === 'TXT doctor.example.com').length, 1, 'SPF named');
  t.match(dnsCheck.fix, /svc domains (plan|zone-file) doctor\.example\.com/);
  t.match(byId(missing, 'selftest:doctor.example.com'), { status: 'warn', fix: /svc domains apply doctor\.example\.com/ });
  t.notOk(missing.checks.some((c) => c.id === 'domains'), 'no "no domains" entry once there is one');
  const cli = await svcCli(['doctor', ...ownerCli()]);
  t.equal(cli.code, 1);
  t.match(cli.stdout, /^✗ DNS of doctor\.example\.com\s+\d+ of \d+ planned records are not published as planned/m);
  t.match(cli.stdout, /MX doctor\.example\.com: MX at doctor\.example\.com is missing/);

  const plan = await owner<{ records: { type: string; name: string; value: string; priority?: number }[] }>('GET', `/v0/domains/${created.body.domain_id}/plan`);
  publish(plan.body.records);
  const published = await doctor();
  t.match(byId(published, 'domain:doctor.example.com'), { status: 'warn', detail: /not applied yet/, fix: 'Run `svc domains apply doctor.example.com`.' });

  t.equal((await owner('POST', `/v0/domains/${created.body.domain_id}/apply`)).status, 202);
  await until('verified', async () => ((await owner<{ state: string }>('GET', `/v0/domains/${created.body.domain_id}`)).body.state === 'verified' ? true : undefined));
  const verified = await doctor();
  t.match(byId(verified, 'domain:doctor.example.com'), { status: 'pass', fix: null });
  t.match(byId(verified, 'selftest:doctor.example.com'), { status: 'pass', detail: /came back through the edge/ });
});

t.test('a quarantined item warns with the command that lists it', async (t) => {
  // SQL: quarantine items come only from inbound failures; no route makes one (as in cli-admin.test.ts).
  const db = openHomeDb(svc.home);
  const id = uuidv7();
  db.prepare('INSERT INTO inbound_quarantine (quarantine_id, source_kind, source_key, reason_code, first_seen, size, inbox_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(id, 'queue_message', `q-${id}`, 'object_missing', new Date().toISOString(), 100, 'ops@doctor.example.com', 'quarantined');
  db.close();
  const report = await doctor();
  t.match(byId(report, 'quarantine'), { status: 'warn', detail: /^1 inbound message waits in quarantine/, fix: /svc quarantine list/ });
  t.equal(report.ok, false);
  // SQL again: deleting a queue_message item asks the edge for its entry, and this one never reached an edge.
  const again = openHomeDb(svc.home);
  again.prepare("UPDATE inbound_quarantine SET status = 'deleted' WHERE quarantine_id = ?").run(id);
  again.close();
  t.equal(byId(await doctor(), 'quarantine').status, 'pass', 'once it is gone, nothing waits');
});

t.test('a smart host that refuses the login fails the outbound check, and the password is never shown', async (t) => {
  const smtp = new SMTPServer({
    authOptional: false,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    onAuth: (_auth, _session, callback) => callback(new Error('Authentication credentials invalid')),
    logger: false,
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => smtp.close(() => resolve())));
  const port = (smtp.server.address() as net.AddressInfo).port;
  const set = await owner('PUT', '/v0/owner/transport', { smtp: { host: '127.0.0.1', port, username: 'owner@doctor.example.com', password: SMTP_PASSWORD } });
  t.equal(set.status, 200, set.text);

  const res = await owner<DoctorReport>('GET', '/v0/owner/doctor');
  const outbound = byId(res.body, 'outbound');
  t.equal(outbound.status, 'fail');
  t.match(outbound.detail, new RegExp(`The smart host 127\\.0\\.0\\.1:${port} refused the login of owner@doctor\\.example\\.com`));
  t.match(outbound.fix, /svc transport set --smtp-host/);
  t.notMatch(res.text, SMTP_PASSWORD, 'the password is not in the answer');
  const cli = await svcCli(['doctor', ...ownerCli()]);
  t.equal(cli.code, 1);
  t.match(cli.stdout, /^✗ Outbound transport\s+The smart host/m);
  t.notMatch(cli.stdout + cli.stderr, SMTP_PASSWORD, 'the password is not in the CLI output');

  t.equal((await owner('PUT', '/v0/owner/transport', { smtp: null })).status, 200);
  t.equal(byId(await doctor(), 'outbound').status, 'pass', 'back on the edge relay');
});

t.test('a dead edge fails the edge and outbound checks, and the token is never shown', async (t) => {
  // A port that was just free: nothing listens there.
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const url = `http://127.0.0.1:${port}`;
  t.equal((await owner('PUT', '/v0/owner/transport', { edge: { url, token: EDGE_TOKEN } })).status, 200);

  const res = await owner<DoctorReport>('GET', '/v0/owner/doctor');
  t.equal(res.status, 200);
  t.match(byId(res.body, 'edge'), { status: 'fail', title: `Edge 127.0.0.1:${port}`, detail: `Nothing answered at ${url} within 3 s.`, fix: /svc transport set --edge-url/ });
  t.match(byId(res.body, 'outbound'), { status: 'fail', detail: /edge relay/ });
  t.notMatch(res.text, EDGE_TOKEN, 'the token is not in the answer');
  const cli = await svcCli(['doctor', '--json', ...ownerCli()]);
  t.equal(cli.code, 1);
  t.notMatch(cli.stdout + cli.stderr, EDGE_TOKEN, 'the token is not in the CLI output');

  // No transport at all: nothing comes in and nothing goes out.
  t.equal((await owner('DELETE', '/v0/owner/transport')).status, 200);
  const none = await doctor();
  t.match(byId(none, 'edge'), { status: 'fail', detail: 'No edge is paired, so no mail comes in.', fix: /svc transport set --edge-url/ });
  t.match(byId(none, 'outbound'), { status: 'fail', detail: /No transport is configured/, fix: /svc transport set/ });
});

t.test('svc doctor with the service stopped: the local checks still run, and the exit code says svc is not running', async (t) => {
  await svc.stop();
  const cli = await svcCli(['doctor', ...ownerCli()]);
  t.equal(cli.code, 10);
  t.match(cli.stdout, /^✗ Service\s+svc is not running for the home/m);
  t.match(cli.stdout, /fix: Start it with `svc serve --home/);
  t.match(cli.stdout, /^✓ Credential store\s/m);
  t.match(cli.stdout, /^[✓!✗] Disk space\s/m);
  const json = await svcCli(['doctor', '--json', ...ownerCli()]);
  t.equal(json.code, 10);
  t.same(json.json<DoctorReport>().checks.map((c) => c.id), ['service', 'credential_store', 'disk']);
  svc = await startSvc({ home: svc.home, init: false, args: ['--local-edge', '--edge-dns', dns.server] });
});

/**
 * The doctor's judgements, row by row (docs/doctor.md): a certificate's standing by days and by
 * the part of its lifetime left, the loops' heartbeats, the backup's age; and one edge checked
 * against real loopback servers — an API that refuses the token, and an HTTPS API whose
 * certificate (made with openssl, 2 days) is read for its days left.
 */
import t from 'tap';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { certificateStanding, edgeCheck, readCertificate } from '../../src/doctor/edge-check.js';
import { backupCheck, loopsCheck } from '../../src/doctor/service-checks.js';
import { LOOP_NAMES, LOOPS, type LoopHealth } from '../../src/supervisor/loop-table.js';
import { LOOP_LATE_MS, LOOP_PASS_STUCK_MS } from '../../src/doctor/limits.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-28T12:00:00.000Z');

t.test('certificate standing: expired fails; under 7 days or under a third of its lifetime warns', async (t) => {
  const cert = (issuedDaysAgo: number, lifetimeDays: number) => ({ notBefore: new Date(NOW - issuedDaysAgo * DAY), notAfter: new Date(NOW + (lifetimeDays - issuedDaysAgo) * DAY) });
  const rows: [string, ReturnType<typeof cert>, 'pass' | 'warn' | 'fail', number][] = [
    ['fresh 90-day', cert(1, 90), 'pass', 89],
    ['90-day at 31 days left', cert(59, 90), 'pass', 31],
    ['90-day at 29 days left (past renewal at a third)', cert(61, 90), 'warn', 29],
    ['1-year at 20 days left (under a third of its lifetime)', cert(345, 365), 'warn', 20],
    ['6-day at 5 days left (under 7 days)', cert(1, 6), 'warn', 5],
    ['expired yesterday', cert(91, 90), 'fail', -1],
  ];
  for (const [name, dates, status, daysLeft] of rows) t.same(certificateStanding(dates, NOW), { status, daysLeft }, name);
});

const healthy = (overrides: Partial<Record<string, Partial<LoopHealth>>> = {}): LoopHealth[] =>
  LOOP_NAMES.map((loop) => ({ loop, thread: 'running', passStartedAt: NOW - 1000, passEndedAt: NOW - 900, ...overrides[loop] }));

t.test('loops: running passes; stopped fails; starting warns; a pass over the stuck limit fails; no pass past the idle wait warns', async (t) => {
  t.match(loopsCheck(healthy(), NOW), { status: 'pass', detail: /All 8 loops are running/ });
  t.match(loopsCheck(healthy({ outbox: { thread: 'stopped' } }), NOW), { status: 'fail', detail: 'Not running: outbox.', fix: /Restart svc/ });
  t.match(loopsCheck(healthy({ 'inbound-pull': { thread: 'starting', passStartedAt: null, passEndedAt: null } }), NOW), { status: 'warn', detail: 'Still starting: inbound-pull.' });
  t.match(loopsCheck(healthy({ webhooks: { passStartedAt: NOW - LOOP_PASS_STUCK_MS - 1000, passEndedAt: NOW - LOOP_PASS_STUCK_MS - 2000 } }), NOW), { status: 'fail', detail: /^Stuck: webhooks \(in one pass for 15 min\)/ });
  t.match(loopsCheck(healthy({ webhooks: { passStartedAt: NOW - LOOP_PASS_STUCK_MS + 60_000, passEndedAt: NOW - LOOP_PASS_STUCK_MS } }), NOW), { status: 'pass' }, 'a long pass under the limit is not stuck');
  const late = NOW - LOOPS['inbound-reconcile'].idleMs - LOOP_LATE_MS - 1000;
  t.match(loopsCheck(healthy({ 'inbound-reconcile': { passStartedAt: late - 100, passEndedAt: late } }), NOW), { status: 'warn', detail: /^Late: inbound-reconcile/ });
  t.match(loopsCheck(healthy({ 'inbound-reconcile': { passStartedAt: late + 2000, passEndedAt: late + 2100 } }), NOW), { status: 'pass' }, 'within its 15-minute idle wait plus the grace');
  t.match(loopsCheck(healthy({ outbox: { passStartedAt: null, passEndedAt: null } }), NOW), { status: 'pass' }, 'a running thread before its first pass');
});

t.test('backup: never or older than 7 days warns with the command; recent passes', async (t) => {
  t.match(backupCheck(null, NOW), { status: 'warn', fix: /svc backup --to FILE/ });
  t.match(backupCheck(new Date(NOW - 8 * DAY).toISOString(), NOW), { status: 'warn', detail: /8 days ago.*more than 7 days/ });
  t.match(backupCheck(new Date(NOW - 6 * DAY).toISOString(), NOW), { status: 'pass', fix: null, detail: /6 days ago/ });
});

const TOKEN = 'right-token-0123456789abcdef';
const answerObjects = (req: http.IncomingMessage, res: http.ServerResponse) => {
  const ok = req.headers.authorization === `Bearer ${TOKEN}` && req.url === '/objects?limit=1';
  res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
  res.end(ok ? '{"objects":[],"has_more":false}' : '{"error":"unauthorized"}');
};

t.test('an edge that refuses the token fails, and the token is not shown', async (t) => {
  const server = http.createServer(answerObjects);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const wrong = await edgeCheck({ url, token: 'wrong-token-0123456789abcdef', builtIn: false });
  t.match(wrong, { id: 'edge', status: 'fail', detail: /refuses this home's API token \(401\)/, fix: /svc transport set --edge-url URL --edge-token-file FILE/ });
  t.notMatch(JSON.stringify(wrong), /wrong-token/);
  t.match(await edgeCheck({ url, token: TOKEN, builtIn: false }), { status: 'pass', detail: /plain HTTP on loopback/ });
  t.match(await edgeCheck({ url, token: TOKEN, builtIn: true }, 'edge:x'), { id: 'edge:x', title: 'Edge (built-in)', status: 'pass' });
});

t.test('an HTTPS edge: its certificate is read for the days left', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-doctor-cert-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'edge.key', '-out', 'edge.pem', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { cwd: dir, stdio: 'ignore' });
  const server = https.createServer({ key: fs.readFileSync(path.join(dir, 'edge.key')), cert: fs.readFileSync(path.join(dir, 'edge.pem')) }, answerObjects);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `https://localhost:${(server.address() as AddressInfo).port}`;

  const dates = await readCertificate(new URL(url));
  t.ok(dates, 'the certificate is read');
  t.equal(Math.round((dates!.notAfter.getTime() - dates!.notBefore.getTime()) / DAY), 2, 'its two-day lifetime');

  // Self-signed: this process does not trust it, so the API cannot be asked; the days left are still shown.
  t.match(await edgeCheck({ url, token: TOKEN, builtIn: false }), { status: 'fail', days_left: 1, detail: /presents a TLS certificate \(1 day left\), but its API did not answer over a verified connection/, fix: /svc edge --acme/ });

  // Trusted (as NODE_EXTRA_CA_CERTS would make it), the API answers and the short lifetime warns.
  const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  t.teardown(() => {
    if (before === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    else process.env.NODE_TLS_REJECT_UNAUTHORIZED = before;
  });
  t.match(await edgeCheck({ url, token: TOKEN, builtIn: false }), { status: 'warn', days_left: 1, detail: /accepts this home's token\. Its TLS certificate expires .* \(1 day left\)/, fix: /Renew it/ });
});

/**
 * `GET /v0/owner/doctor` attacked (docs/doctor.md, docs/security.md): it is an owner route, so an
 * agent key (in scope or not), a bad bearer, a cookie without its CSRF token and no credential get
 * what the other owner routes answer them, under every hostile spelling of the path too. The answer
 * never carries a secret: not the SMTP password, the edge token, the owner token, the recovery code
 * or the wrapped key. And hostile peers — an edge and a smart host that accept the connection and
 * never say a word, name servers that swallow every question — cannot hold the route: it answers,
 * with those checks failed.
 */
import t from 'tap';
import fs from 'node:fs';
import dgram from 'node:dgram';
import net from 'node:net';
import path from 'node:path';
import { api, startSvc, type RunningSvc } from '../helpers/svc.js';
import { seedPrincipals, type CredentialKind, type Principals } from '../helpers/principals.js';
import { CANONICAL, HOSTILE_SPELLINGS, segmentsOf } from '../helpers/spellings.js';
import { wireRequest } from '../helpers/wire.js';
import type { DoctorReport } from '../../src/doctor/schemas.js';

const SMTP_PASSWORD = 'hostile-smart-host-password-3c9e1b';
const EDGE_TOKEN = 'hostile-edge-token-0123456789abcdef';

/** A TCP peer that accepts every connection and never writes a byte (nor closes). */
async function silentTcp(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A UDP "name server" that reads every question and answers none. */
async function silentDns(): Promise<{ server: string; close(): Promise<void> }> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', () => {});
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { server: `127.0.0.1:${socket.address().port}`, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}

let svc: RunningSvc;
let principals: Principals;
let edgePeer: Awaited<ReturnType<typeof silentTcp>>;
let smtpPeer: Awaited<ReturnType<typeof silentTcp>>;
let dnsPeer: Awaited<ReturnType<typeof silentDns>>;

t.before(async () => {
  edgePeer = await silentTcp();
  smtpPeer = await silentTcp();
  dnsPeer = await silentDns();
  svc = await startSvc({ args: ['--dns', dnsPeer.server] });
  principals = await seedPrincipals(svc, 'doctor.test');
  const transport = await api(svc.url, 'PUT', '/v0/owner/transport', {
    token: svc.ownerToken,
    body: { edge: { url: `http://127.0.0.1:${edgePeer.port}`, token: EDGE_TOKEN }, smtp: { host: '127.0.0.1', port: smtpPeer.port, username: 'owner', password: SMTP_PASSWORD } },
  });
  if (transport.status !== 200) throw new Error(transport.text);
  const domain = await api(svc.url, 'POST', '/v0/domains', { token: svc.ownerToken, body: { domain: 'silent.example.com' } });
  if (domain.status !== 200) throw new Error(domain.text);
});
t.teardown(async () => {
  await svc.stop();
  await edgePeer.close();
  await smtpPeer.close();
  await dnsPeer.close();
});

const port = () => Number(new URL(svc.url).port);
const REFUSED_KINDS: CredentialKind[] = ['none', 'bad_bearer', 'cookie_only', 'key_in_scope', 'key_other_inbox'];

t.test('every credential but the owner\'s is refused exactly as on another owner route', async (t) => {
  for (const kind of REFUSED_KINDS) {
    const headers = principals.headers(kind);
    const doctor = await wireRequest({ port: port(), method: 'GET', target: '/v0/owner/doctor', headers });
    const transport = await wireRequest({ port: port(), method: 'GET', target: '/v0/owner/transport', headers });
    t.equal(doctor.status, transport.status, `${kind}: same status as GET /v0/owner/transport`);
    t.same((doctor.body as { code?: string }).code, (transport.body as { code?: string }).code, `${kind}: same error code`);
    t.ok(doctor.status === 401 || doctor.status === 403, `${kind}: refused (${doctor.status})`);
    t.notMatch(doctor.text, /"checks"/, `${kind}: no report`);
  }
  for (const kind of ['owner_bearer', 'session'] as const) {
    const answer = await wireRequest({ port: port(), method: 'GET', target: '/v0/owner/doctor', headers: principals.headers(kind) });
    t.equal(answer.status, 200, `${kind}: the owner gets the report`);
  }
});

t.test("hostile spellings of the path never give a non-owner the report (a 4xx, or the web app's HTML shell)", async (t) => {
  const segments = segmentsOf('/v0/owner/doctor', () => '');
  for (const spelling of [CANONICAL, ...HOSTILE_SPELLINGS]) {
    for (const kind of REFUSED_KINDS) {
      const answer = await wireRequest({ port: port(), method: 'GET', target: spelling.target(segments, `127.0.0.1:${port()}`), headers: principals.headers(kind) });
      // As in route-gate.test.ts: a 4xx, or on loopback the web app's HTML shell (the owner app draws its own "not found").
      const shell = answer.status === 200 && /^text\/html/.test(answer.headers['content-type'] ?? '');
      t.ok((answer.status >= 400 && answer.status < 500) || shell, `${spelling.name}, ${kind}: refused or the app shell (${answer.status})`);
      t.notMatch(answer.text, /"checks"|credential_store/, `${spelling.name}, ${kind}: no report`);
    }
  }
});

t.test('silent peers cannot hold the route: it answers, with the edge, outbound and DNS checks failed', async (t) => {
  // Several at once share one run; each completes.
  const answers = await Promise.all([1, 2, 3].map(() => api<DoctorReport>(svc.url, 'GET', '/v0/owner/doctor', { token: svc.ownerToken })));
  for (const res of answers) {
    t.equal(res.status, 200);
    const check = (id: string) => res.body.checks.find((c) => c.id === id);
    t.match(check('edge'), { status: 'fail', detail: /Nothing answered/ });
    t.match(check('outbound'), { status: 'fail', detail: /could not be reached or did not answer in time/ });
    t.match(check('domain:silent.example.com'), { status: 'fail' });
    t.equal(res.body.ok, false);
  }
});

t.test('no secret is ever in the report', async (t) => {
  const res = await api<DoctorReport>(svc.url, 'GET', '/v0/owner/doctor', { token: svc.ownerToken });
  t.equal(res.status, 200);
  const recovery = svc.stdoutLines.find((l) => l.event === 'home.recovery_code')?.recovery_code as string;
  const keys = JSON.parse(fs.readFileSync(path.join(svc.home, 'keys.json'), 'utf8')) as { wrapped_key: string };
  for (const [name, secret] of [
    ['SMTP password', SMTP_PASSWORD],
    ['edge token', EDGE_TOKEN],
    ['owner token', svc.ownerToken],
    ['recovery code', recovery],
    ['wrapped key', keys.wrapped_key],
    ['agent key', principals.keyInScope],
  ] as const) {
    t.ok(secret, `${name} is known to the test`);
    t.notOk(res.text.includes(secret), `the ${name} is not in the report`);
  }
  t.same(Object.keys(res.body).sort(), ['checked_at', 'checks', 'ok'], 'only the declared fields');
  t.notOk(svc.stderr().includes(SMTP_PASSWORD) || svc.stderr().includes(EDGE_TOKEN), 'nor in the service log');
});

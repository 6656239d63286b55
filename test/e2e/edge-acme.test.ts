/**
 * The edge gets its own certificate (issue 21 §1, docs/acme.md) from a real ACME CA: Debian's
 * `pebble` on loopback (installed by scripts/ensure-pebble.sh), which resolves the edge's name
 * through a loopback DNS server and validates the HTTP-01 answer the edge serves. Proven: issuance,
 * STARTTLS offering the issued chain to a client that trusts only pebble's root, the key stored
 * 0600, renewal without a restart while an SMTP session stays open, a clear `edge.failed` line
 * when issuance fails, and `edge.warning` when a renewal fails.
 */
import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import https from 'node:https';
import { X509Certificate } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { repoRoot, tempDir } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { freePort } from '../helpers/ports.js';
import { startEdgeProcess, type EdgeProcess } from '../helpers/edge.js';
import { until } from '../helpers/until.js';

const HOST = 'mx.acme.test';

execFileSync(path.join(repoRoot, 'scripts', 'ensure-pebble.sh'), { stdio: ['ignore', 'inherit', 'inherit'] });

interface Pebble {
  directory: string;
  management: number;
  httpPort: number;
  ca: string;
  /** The key of pebble's own HTTPS listener (for the renewal-information front below). */
  key: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** A certificate for pebble's own HTTPS listener (127.0.0.1), made with openssl; the edge trusts it with --acme-ca. */
function listenerCertificate(dir: string): { key: string; cert: string } {
  const key = path.join(dir, 'pebble-key.pem');
  const cert = path.join(dir, 'pebble-cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=pebble', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
  return { key, cert };
}

/** `validitySeconds`: pebble issues certificates this short-lived (its `certificateValidityPeriod`). */
async function startPebble(dns: LoopbackDns, validitySeconds?: number): Promise<Pebble> {
  const dir = tempDir('svc-pebble-');
  const { key, cert } = listenerCertificate(dir);
  const [listen, management, httpPort, tlsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const config = path.join(dir, 'pebble.json');
  fs.writeFileSync(
    config,
    JSON.stringify({ pebble: { listenAddress: `127.0.0.1:${listen}`, managementListenAddress: `127.0.0.1:${management}`, certificate: cert, privateKey: key, httpPort, tlsPort, ocspResponderURL: '', externalAccountBindingRequired: false, ...(validitySeconds ? { certificateValidityPeriod: validitySeconds } : {}) } }),
  );
  const proc = spawn('pebble', ['-config', config, '-dnsserver', dns.server], { env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout!.on('data', (d) => (output += d));
  proc.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  await until(`pebble listening (${output.slice(-200)})`, () => output.includes('Listening on'), 20_000);
  return {
    directory: `https://127.0.0.1:${listen}/dir`,
    management,
    httpPort,
    ca: cert,
    key,
    proc,
    stop: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** Pebble's root for the certificates it issues (it makes a new one at each start). */
function pebbleRoot(p: Pebble): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port: p.management, path: '/roots/0', ca: fs.readFileSync(p.ca) }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** Opens SMTP, says EHLO, upgrades with STARTTLS verifying against `ca` for HOST; resolves the TLS socket and the lines read. */
async function startTls(port: number, ca: string): Promise<{ socket: tls.TLSSocket; peer: X509Certificate; command(line: string): Promise<string> }> {
  const plain = net.connect(port, '127.0.0.1');
  let buffer = '';
  const next = (sock: NodeJS.ReadableStream) =>
    new Promise<string>((resolve, reject) => {
      const onData = (d: Buffer) => {
        buffer += d.toString('latin1');
        const lines = buffer.split('\r\n');
        const last = lines[lines.length - 2];
        if (last !== undefined && /^\d{3} /.test(last)) {
          const reply = buffer;
          buffer = '';
          sock.off('data', onData);
          resolve(reply);
        }
      };
      sock.on('data', onData);
      sock.once('error', reject);
    });
  await next(plain);
  plain.write('EHLO client.test\r\n');
  const ehlo = await next(plain);
  if (!/STARTTLS/.test(ehlo)) throw new Error(`no STARTTLS offered: ${ehlo}`);
  plain.write('STARTTLS\r\n');
  await next(plain);
  const socket = tls.connect({ socket: plain, servername: HOST, ca });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve());
    socket.once('error', reject);
  });
  const peer = new X509Certificate(socket.getPeerCertificate(true).raw);
  const command = async (line: string) => {
    socket.write(`${line}\r\n`);
    return next(socket);
  };
  await command('EHLO client.test');
  return { socket, peer, command };
}

let dns: LoopbackDns;
let pebble: Pebble;
let edge: EdgeProcess | null = null;

t.before(async () => {
  dns = await startLoopbackDns({ [HOST]: { A: ['127.0.0.1'] }, 'mta-sts.agents.acme.test': { A: ['127.0.0.1'] } });
  pebble = await startPebble(dns);
});
t.teardown(async () => {
  if (edge && edge.proc.exitCode === null) edge.proc.kill('SIGTERM');
  await edge?.exited;
  await pebble.stop();
  await dns.close();
});

const edgeArgs = (data: string, extra: string[] = []) => [
  '--data', data, '--smtp-port', '0', '--api-port', '0', '--hostname', HOST, '--dns', dns.server,
  '--acme', '--acme-directory', pebble.directory, '--acme-ca', pebble.ca, '--acme-http-port', String(pebble.httpPort), '--acme-email', 'postmaster@acme.test', ...extra,
];

/**
 * The tests in this group share the CA started in t.before and the `edge` variable (the renewal
 * test stops and restarts that CA), so they run one after another; the short-lived and ARI tests
 * below have CAs and edges of their own and run beside the group, so their waits (a 75 s
 * certificate's renewal) overlap its work.
 */
t.jobs = 3;

t.test('one edge at a time against the shared CA', async (t) => {
  t.test('issuance: the edge obtains a certificate for its name and offers it for STARTTLS', async (t) => {
    const data = path.join(tempDir('svc-edge-acme-'), 'edge');
    edge = await startEdgeProcess(edgeArgs(data), { SVC_TEST_ACME_CHECK_MS: '500' });
    t.match(edge.stderr(), /"event":"edge.certificate","names":\["mx.acme.test"\]/);
    t.match(edge.ready.api.url, /^https:\/\//, 'the API is HTTPS with the same certificate');
    const root = await pebbleRoot(pebble);
    const session = await startTls(edge.ready.smtp.port, root);
    t.ok(session.socket.authorized, 'a client that trusts only pebble\u2019s root verifies the chain');
    t.match(session.peer.subjectAltName, /DNS:mx\.acme\.test/);
    t.match(await session.command('NOOP'), /^250/);
    session.socket.destroy();
    for (const file of ['key.pem', 'cert.pem', 'account.key']) {
      t.equal(fs.statSync(path.join(data, 'acme', file)).mode & 0o777, 0o600, `${file} is 0600`);
    }
    t.notMatch(edge.stderr(), /BEGIN (EC |)PRIVATE KEY/, 'no key material in the log');

    // A restart uses the stored certificate (no new order) while it is fresh.
    const before = fs.readFileSync(path.join(data, 'acme', 'cert.pem'), 'utf8');
    edge.proc.kill('SIGTERM');
    await edge.exited;
    edge = await startEdgeProcess(edgeArgs(data));
    t.equal(fs.readFileSync(path.join(data, 'acme', 'cert.pem'), 'utf8'), before, 'the stored certificate is reused');
    const again = await startTls(edge.ready.smtp.port, root);
    t.ok(again.socket.authorized);
    again.socket.destroy();
    edge.proc.kill('SIGTERM');
    await edge.exited;
    edge = null;
  });

  t.test('renewal: a certificate inside the margin is renewed without a restart; an open session carries on', async (t) => {
    const data = path.join(tempDir('svc-edge-acme-'), 'edge');
    // Every certificate is "due" at once: the first check renews it.
    edge = await startEdgeProcess(edgeArgs(data), { SVC_TEST_ACME_RENEW_BEFORE_MS: String(100 * 365 * 24 * 3600 * 1000), SVC_TEST_ACME_CHECK_MS: '1500', SVC_TEST_ACME_RETRIES: '0' });
    const root = await pebbleRoot(pebble);
    const open = await startTls(edge.ready.smtp.port, root);
    const first = open.peer.serialNumber;
    const running = edge;
    await until('a renewal', () => /"event":"edge.certificate_renewed"/.test(running.stderr()), 30_000);
    const fresh = await startTls(edge.ready.smtp.port, root);
    t.ok(fresh.socket.authorized);
    t.not(fresh.peer.serialNumber, first, 'a new connection gets the renewed certificate');
    t.match(await open.command('NOOP'), /^250/, 'the session opened before the renewal still works');
    open.socket.destroy();
    fresh.socket.destroy();
    t.equal(edge.proc.exitCode, null, 'no restart');

    // The CA goes away: the next renewals fail with edge.warning while the current certificate serves.
    await pebble.stop();
    await until(() => `an edge.warning; the edge said: ${running.stderr().slice(-600)}`, () => /"event":"edge.warning","message":"The certificate for mx.acme.test could not be renewed/.test(running.stderr()), 30_000);
    const still = await startTls(edge.ready.smtp.port, root);
    t.ok(still.socket.authorized, 'the current certificate is still offered');
    still.socket.destroy();
    edge.proc.kill('SIGTERM');
    await edge.exited;
    edge = null;
    pebble = await startPebble(dns);
  });

  t.test('issuance fails: edge.failed says why (the name does not resolve), and the edge does not start', async (t) => {
    const data = path.join(tempDir('svc-edge-acme-'), 'edge');
    const args = edgeArgs(data).map((a) => (a === HOST ? 'nowhere.acme.test' : a));
    const failed = await startEdgeProcess(args).then(
      () => null,
      (err: Error) => err.message,
    );
    t.ok(failed, 'the edge exits before ready');
    t.match(failed, /"event":"edge.failed","code":"service_unavailable","message":"No certificate for nowhere\.acme\.test from https:\/\/127\.0\.0\.1:\d+\/dir: [^"]+"/);
    t.match(failed, /"fix":"Check that nowhere\.acme\.test resolves to this host/);
  });

  /** GET over HTTPS from 127.0.0.1:port with this SNI and Host, trusting only `ca`. */
  function fetchPolicy(port: number, host: string, ca: string, pathname = '/.well-known/mta-sts.txt'): Promise<{ status: number; body: string; peer: X509Certificate }> {
    return new Promise((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port, path: pathname, servername: host, headers: { host }, ca, agent: false }, (res) => {
        const peer = new X509Certificate((res.socket as tls.TLSSocket).getPeerCertificate(true).raw);
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, peer }));
      });
      req.on('error', reject);
    });
  }

  t.test('MTA-STS: the certificate also names mta-sts.<domain>, whose policy the edge serves over verified HTTPS', async (t) => {
    const data = path.join(tempDir('svc-edge-acme-'), 'edge');
    const stsPort = await freePort();
    edge = await startEdgeProcess(edgeArgs(data, ['--mta-sts', 'agents.acme.test', '--mta-sts-port', String(stsPort)]));
    t.match(edge.stderr(), /"event":"edge.mta_sts","port":\d+,"urls":\["https:\/\/mta-sts.agents.acme.test\/.well-known\/mta-sts.txt"\],"mode":"enforce"/);
    const root = await pebbleRoot(pebble);
    const policy = await fetchPolicy(stsPort, 'mta-sts.agents.acme.test', root);
    t.equal(policy.status, 200);
    t.equal(policy.body, 'version: STSv1\r\nmode: enforce\r\nmx: mx.acme.test\r\nmax_age: 604800\r\n');
    t.match(policy.peer.subjectAltName, /DNS:mta-sts\.agents\.acme\.test/, 'served with the ACME certificate, verified against pebble\u2019s root');
    t.equal((await fetchPolicy(stsPort, 'mta-sts.agents.acme.test', root, '/other')).status, 404, 'nothing else is served');
    const smtp = await startTls(edge.ready.smtp.port, root);
    t.ok(smtp.socket.authorized, 'STARTTLS uses the same certificate');
    smtp.socket.destroy();
    edge.proc.kill('SIGTERM');
    await edge.exited;
    edge = null;
  });

  t.test('bad ACME options are refused before anything starts', async (t) => {
    const data = path.join(tempDir('svc-edge-acme-'), 'edge');
    const cases = [
      [['--acme'], /--acme needs --hostname/],
      [['--acme', '--hostname', HOST, '--acme-directory', 'http://insecure.example/dir'], /--acme-directory must be the https:\/\/ URL/],
      [['--acme', '--hostname', HOST, '--tls-key', 'k', '--tls-cert', 'c'], /--acme or --tls-key\/--tls-cert, not both/],
      [['--acme-email', 'a@b.example'], /--acme-email goes with --acme/],
      [['--acme', '--hostname', HOST, '--acme-email', 'not-an-address'], /--acme-email must be an email address/],
      [['--mta-sts', 'example.test'], /--mta-sts needs --acme/],
      [['--acme', '--hostname', HOST, '--mta-sts', 'example.test', '--mta-sts-mode', 'strict'], /--mta-sts-mode must be enforce or testing/],
      [['--acme', '--hostname', HOST, '--mta-sts', 'not a domain'], /is not a domain name/],
    ] as const;
    // Each is refused while reading its options, so the starts run side by side.
    const errors = await Promise.all(cases.map(([args]) => startEdgeProcess(['--data', data, '--smtp-port', '0', '--api-port', '0', ...args]).then(
      () => 'started',
      (e: Error) => e.message,
    )));
    cases.forEach(([args, message], i) => t.match(errors[i], message, args.join(' ')));
  });
});

t.test('short-lived certificates (75 s, like Let\u2019s Encrypt\u2019s 6-day profile scaled down) renew with a third left, with no test override, while a session stays open', async (t) => {
  const short = await startPebble(dns, 75);
  t.teardown(() => short.stop());
  const data = path.join(tempDir('svc-edge-acme-'), 'edge');
  const args = edgeArgs(data).map((a) => (a === pebble.directory ? short.directory : a === String(pebble.httpPort) ? String(short.httpPort) : a === pebble.ca ? short.ca : a));
  const running = await startEdgeProcess(args);
  t.teardown(async () => {
    if (running.proc.exitCode === null) running.proc.kill('SIGTERM');
    await running.exited;
  });
  const root = await pebbleRoot(short);
  const open = await startTls(running.ready.smtp.port, root);
  const first = open.peer;
  const lifetime = Date.parse(first.validTo) - Date.parse(first.validFrom);
  t.ok(lifetime <= 80_000, `pebble issued a short-lived certificate (${lifetime} ms)`);
  await until('a renewal before expiry', () => /"event":"edge.certificate_renewed"/.test(running.stderr()), 70_000);
  const renewedAt = Date.now();
  t.ok(renewedAt < Date.parse(first.validTo), 'renewed before the first certificate expired');
  t.ok(renewedAt >= Date.parse(first.validTo) - lifetime / 3 - 2_000, 'not before a third of its lifetime was left');
  const fresh = await startTls(running.ready.smtp.port, root);
  t.ok(fresh.socket.authorized, 'a new connection verifies the renewed chain');
  t.not(fresh.peer.serialNumber, first.serialNumber, 'a new connection gets the renewed certificate');
  t.match(await open.command('NOOP'), /^250/, 'the session opened before the renewal still works');
  open.socket.destroy();
  fresh.socket.destroy();
  t.equal(running.proc.exitCode, null, 'no restart');
});

/**
 * ACME Renewal Information (RFC 9773). Debian's pebble (2.4) has no `renewalInfo`, so a minimal
 * stand-in for that one CA endpoint runs in front of it: it serves pebble's directory with
 * `renewalInfo` added and answers the renewal-information GETs; every other ACME request goes to
 * pebble itself (the directory's other URLs point there).
 */
async function renewalInfoFront(p: Pebble, window: () => { start: string; end: string }): Promise<{ directory: string; asked: string[]; close(): Promise<void> }> {
  const asked: string[] = [];
  // pebble's own listener certificate (127.0.0.1), so the edge trusts both with one --acme-ca.
  const server = https.createServer({ key: fs.readFileSync(p.key), cert: fs.readFileSync(p.ca) }, (req, res) => {
    if (req.url === '/dir') {
      https.get(p.directory, { ca: fs.readFileSync(p.ca) }, (up) => {
        let body = '';
        up.on('data', (d) => (body += d));
        up.on('end', () => {
          const directory = { ...(JSON.parse(body) as Record<string, unknown>), renewalInfo: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}/renewal-info` };
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(directory));
        });
      });
      return;
    }
    const m = /^\/renewal-info\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && m) {
      asked.push(m[1]);
      res.writeHead(200, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ suggestedWindow: window() }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    directory: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}/dir`,
    asked,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The RFC 9773 certID of a PEM certificate, computed with openssl: base64url(AKI keyIdentifier) "." base64url(serial DER bytes). */
function expectedCertId(pem: string): string {
  const dir = tempDir('svc-certid-');
  const file = path.join(dir, 'leaf.pem');
  fs.writeFileSync(file, pem);
  const text = execFileSync('openssl', ['x509', '-in', file, '-noout', '-ext', 'authorityKeyIdentifier', '-serial'], { encoding: 'utf8' });
  const aki = /([0-9A-F]{2}(?::[0-9A-F]{2})+)/.exec(text.split('serial=')[0])![1].replace(/:/g, '');
  let serial = /serial=([0-9A-F]+)/.exec(text)![1];
  if (serial.length % 2) serial = `0${serial}`;
  if (parseInt(serial.slice(0, 2), 16) >= 0x80) serial = `00${serial}`;
  return `${Buffer.from(aki, 'hex').toString('base64url')}.${Buffer.from(serial, 'hex').toString('base64url')}`;
}

t.test('ARI: when the CA offers renewalInfo, its suggested window decides the renewal (a long-lived certificate renews now because the CA says so)', async (t) => {
  const ca = await startPebble(dns);
  t.teardown(() => ca.stop());
  let suggest = { start: new Date(Date.now() + 30 * 24 * 3600_000).toISOString(), end: new Date(Date.now() + 31 * 24 * 3600_000).toISOString() };
  const front = await renewalInfoFront(ca, () => suggest);
  t.teardown(() => front.close());
  const data = path.join(tempDir('svc-edge-acme-'), 'edge');
  const args = edgeArgs(data).map((a) => (a === pebble.directory ? front.directory : a === String(pebble.httpPort) ? String(ca.httpPort) : a === pebble.ca ? ca.ca : a));
  const running = await startEdgeProcess(args);
  t.teardown(async () => {
    if (running.proc.exitCode === null) running.proc.kill('SIGTERM');
    await running.exited;
  });
  await until('the edge asks for renewal information', () => front.asked.length > 0, 30_000);
  const stored = fs.readFileSync(path.join(data, 'acme', 'cert.pem'), 'utf8');
  t.equal(front.asked[0], expectedCertId(stored), 'the certID is base64url(AKI keyIdentifier).base64url(serial)');
  t.notMatch(running.stderr(), /certificate_renewed/, 'a window a month away: no renewal yet');
  // The CA moves the window to now (e.g. a revocation is coming): the edge renews within it.
  suggest = { start: new Date(Date.now() - 1_000).toISOString(), end: new Date(Date.now() + 2_000).toISOString() };
  await until('a renewal inside the CA\u2019s window', () => /"event":"edge.certificate_renewed"/.test(running.stderr()), 30_000);
  t.not(fs.readFileSync(path.join(data, 'acme', 'cert.pem'), 'utf8'), stored, 'a new certificate is stored');
});

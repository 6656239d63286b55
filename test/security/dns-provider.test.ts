/**
 * The DNS provider's security rules (docs/dns-providers.md "Limits and safety"): its secrets are
 * never answered or logged; agent keys cannot reach its owner routes; a wrong TSIG key is a clear
 * reason on the domain and no crash; hostile replies (an RFC 2136 server that lies, loops or
 * floods, a PowerDNS API that answers forever) end in bounded time with a clear error.
 */
import t from 'tap';
import net from 'node:net';
import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { api, startSvc } from '../helpers/svc.js';
import { createApiKey } from '../helpers/seed.js';
import { PERMISSIONS } from '../../src/auth/permissions.js';
import { dnsServersMissing, startKnot } from '../helpers/dns-servers.js';
import { until } from '../helpers/until.js';
import { svcCli } from '../e2e/cli-run.js';
import { Rfc2136Provider } from '../../src/domains/providers/rfc2136.js';
import { PowerDnsProvider } from '../../src/domains/providers/powerdns.js';
import { DnsProviderError } from '../../src/domains/providers/provider.js';

/** Provisioning passes 1 s apart instead of 10 s (SVC_TEST_PROVISIONING_MS, docs/testing.md): the same states, reached sooner. */
const FAST_PASSES = { SVC_TEST_PROVISIONING_MS: '1000' };

/**
 * The cases share nothing (each has its own servers and service) and mostly wait out 10 s
 * deadlines, so they run side by side; each one's assertions are as they were.
 */
t.jobs = 4;

const SECRET = randomBytes(32).toString('base64');
const API_KEY = `pdns-${randomBytes(16).toString('hex')}`;

t.test('secrets are write-only and agent keys cannot reach /v0/owner/dns-provider', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const owner = (method: string, body?: unknown) => api(svc.url, method, '/v0/owner/dns-provider', { token: svc.ownerToken, body });

  const put = await owner('PUT', { kind: 'rfc2136', server: '127.0.0.1', port: 5353, key_name: 'svc-update', secret: SECRET });
  t.equal(put.status, 200);
  t.notMatch(put.text, SECRET, 'PUT does not answer the secret');
  t.match(put.body, { provider: { secret_set: true } });
  const got = await owner('GET');
  t.notMatch(got.text, SECRET, 'GET does not answer the secret');
  t.notOk('secret' in ((got.body as { provider: object }).provider), 'no secret field at all');

  const kept = await owner('PUT', { kind: 'rfc2136', server: '127.0.0.1', port: 5353, key_name: 'svc-update', zones: ['example.com'] });
  t.equal(kept.status, 200, 'a PUT without the secret keeps it for the same key');
  const otherKey = await owner('PUT', { kind: 'rfc2136', server: '127.0.0.1', port: 5353, key_name: 'another-key' });
  t.equal(otherKey.status, 400, 'another key needs its secret');
  t.match(otherKey.body, { code: 'validation_error', message: /secret is required/ });
  const weak = await owner('PUT', { kind: 'rfc2136', server: '127.0.0.1', key_name: 'k', secret: 'c2hvcnQ=' });
  t.equal(weak.status, 400, 'a short secret is refused');
  t.notMatch(weak.text, 'c2hvcnQ=', 'the refusal does not echo the secret');

  const pdns = await owner('PUT', { kind: 'powerdns', url: 'http://127.0.0.1:8081', api_key: API_KEY });
  t.equal(pdns.status, 200);
  t.notMatch(pdns.text, API_KEY);
  t.match(pdns.body, { provider: { kind: 'powerdns', api_key_set: true } });
  const publicHttp = await owner('PUT', { kind: 'powerdns', url: 'http://dns.example.com:8081', api_key: API_KEY });
  t.equal(publicHttp.status, 400, 'plain http to a public host is refused (the key would travel in clear)');
  const userinfo = await owner('PUT', { kind: 'powerdns', url: `https://u:${API_KEY}@dns.example.com`, api_key: API_KEY });
  t.equal(userinfo.status, 400);
  t.notMatch(userinfo.text, API_KEY);

  // Stored encrypted: no file of the home (database, WAL, anything) holds either secret in clear.
  const files = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.isFile() ? [path.join(dir, e.name)] : []));
  for (const file of files(svc.home)) {
    const bytes = fs.readFileSync(file);
    for (const needle of [SECRET, API_KEY, Buffer.from(SECRET, 'base64').toString('latin1')]) t.notOk(bytes.includes(Buffer.from(needle, 'latin1')), `${path.basename(file)} does not hold a secret in clear`);
  }

  const key = await createApiKey(svc, { name: 'unrestricted agent', permissions: [...PERMISSIONS], sendPolicy: 'direct' });
  for (const method of ['GET', 'PUT', 'DELETE']) {
    const res = await api(svc.url, method, '/v0/owner/dns-provider', { token: key.secret, body: method === 'PUT' ? { kind: 'powerdns', url: 'http://127.0.0.1:1', api_key: 'x' } : undefined });
    t.equal(res.status, 403, `${method} with an agent key is refused`);
    t.notMatch(res.text, API_KEY);
  }
  t.match((await owner('GET')).body, { provider: { kind: 'powerdns', url: 'http://127.0.0.1:8081' } }, 'the agent changed nothing');
  t.notMatch(svc.stderr(), SECRET);
  t.notMatch(svc.stderr(), API_KEY);
  t.notMatch(JSON.stringify(svc.stdoutLines), SECRET);
  t.notMatch(JSON.stringify(svc.stdoutLines), API_KEY);
});

t.test('CLI: `svc domains provider-set` reads the secret from stdin; show and set never print it', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  const home = ['--home', svc.home];
  const set = await svcCli(['domains', 'provider-set', '--kind', 'rfc2136', '--server', '10.0.0.53', '--key-name', 'svc-update', '--secret-file', '-', '--zone', 'example.com', ...home], { input: `${SECRET}\n` });
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, /10\.0\.0\.53:53 over TCP/);
  t.match(set.stdout, /secret set/);
  const show = await svcCli(['domains', 'provider-show', '--json', ...home]);
  t.match(JSON.parse(show.stdout), { configured: true, provider: { kind: 'rfc2136', key_name: 'svc-update', secret_set: true, zones: ['example.com'] } });
  for (const text of [set.stdout, set.stderr, show.stdout, show.stderr, svc.stderr(), JSON.stringify(svc.stdoutLines)]) t.notMatch(text, SECRET);
  const clear = await svcCli(['domains', 'provider-clear', ...home]);
  t.equal(clear.code, 0, clear.stderr);
  t.match(clear.stdout, /provider:\s+none/);
});

const missing = dnsServersMissing();
// A test that cannot run fails: skipped, it would prove nothing.
if (missing) t.fail(missing);
t.test('a wrong TSIG key: the domain says BADKEY/BADSIG, svc keeps running, nothing is logged of the secret', async (t) => {
  const knot = await startKnot({ zone: 'wrong.test', keyName: 'svc-update' });
  const svc = await startSvc({ args: ['--local-edge', '--dns', knot.server], env: FAST_PASSES });
  t.teardown(async () => {
    await svc.stop();
    await knot.stop();
  });
  const owner = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) => api<T>(svc.url, method, path, { token: svc.ownerToken, body });
  const wrongSecret = randomBytes(32).toString('base64');
  await owner('PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, key_name: 'svc-update', secret: wrongSecret });
  const d = (await owner<{ domain_id: string }>('POST', '/v0/domains', { domain: 'wrong.test' })).body;
  await owner('POST', `/v0/domains/${d.domain_id}/apply`);
  const stuck = await until('a reason about the key', async () => {
    const res = await owner<{ state: string; reason: string | null }>('GET', `/v0/domains/${d.domain_id}`);
    return res.body.reason?.includes('TSIG') ? res.body : undefined;
  });
  t.equal(stuck.state, 'provisioning', 'it stays provisioning and is retried');
  t.match(stuck.reason, /refused the TSIG key \((BADKEY|BADSIG)\)/);
  t.match(stuck.reason, /key name, algorithm and secret/);
  t.notMatch(stuck.reason, wrongSecret);
  t.equal((await owner('GET', '/v0/owner/status')).status, 200, 'svc still answers');
  t.same(knot.dig('wrong.test', 'MX'), [], 'nothing was published');

  // The right key fixes it without a new apply: the loop retries.
  await owner('PUT', '/v0/owner/dns-provider', { kind: 'rfc2136', server: '127.0.0.1', port: knot.port, key_name: 'svc-update', secret: knot.secret });
  await until('verified', async () => (await owner<{ state: string }>('GET', `/v0/domains/${d.domain_id}`)).body.state === 'verified');
  t.same(knot.dig('wrong.test', 'MX'), ['10 mx.wrong.test.']);
  for (const text of [svc.stderr(), JSON.stringify(svc.stdoutLines)]) {
    t.notMatch(text, wrongSecret);
    t.notMatch(text, knot.secret);
  }
});

/** A TCP "DNS server" that answers every request with `reply(request)` (raw bytes, length prefix included). */
async function hostileTcp(reply: (request: Buffer) => Buffer | null): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('data', (d) => {
      const out = reply(d.subarray(2));
      if (out) s.write(out);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

const framed = (msg: Buffer) => Buffer.concat([Buffer.from([msg.length >> 8, msg.length & 0xff]), msg]);
/** A reply header echoing the request's ID: QR set, `counts` = [qd, an, ns, ar]. */
const replyHeader = (req: Buffer, counts: number[], rcode = 0) => {
  const h = Buffer.alloc(12);
  req.copy(h, 0, 0, 2);
  h.writeUInt16BE(0x8400 | rcode, 2);
  counts.forEach((c, i) => h.writeUInt16BE(c, 4 + 2 * i));
  return h;
};

t.test('hostile RFC 2136 replies end in a clear error, bounded in time and memory', async (t) => {
  const key = { name: 'svc-update', algorithm: 'hmac-sha256' as const, secret: randomBytes(32) };
  const cases: [string, (req: Buffer) => Buffer | null, RegExp][] = [
    ['an unsigned reply (a spoofer without the key)', (req) => framed(replyHeader(req, [0, 0, 0, 0])), /not signed/],
    ['a reply signed with another key', (req) => {
      // Copy the request's own TSIG (signed with the request's MAC, so it cannot verify as a reply).
      const body = Buffer.from(req);
      body.writeUInt16BE(body.readUInt16BE(2) | 0x8000, 2);
      return framed(body);
    }, /does not verify|not signed/],
    ['a reply claiming 65535 answers', (req) => framed(replyHeader(req, [0, 65535, 0, 0])), /at most 512 are read/],
    ['a name that points at itself', (req) => framed(Buffer.concat([replyHeader(req, [0, 1, 0, 0]), Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4])])), /looping or broken name pointer/],
    ['a record longer than the message', (req) => framed(Buffer.concat([replyHeader(req, [0, 1, 0, 0]), Buffer.from([0, 0, 16, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 1])])), /truncated or malformed/],
    ['a reply that never comes', () => null, /ETIMEDOUT/],
    ['a length prefix of 65535 then garbage forever', () => Buffer.concat([Buffer.from([0xff, 0xff]), randomBytes(70_000)]), /truncated or malformed|not signed|larger|at most 512|does not answer|pointer|label|over-long/],
    ['a reply with another ID', (req) => { const h = replyHeader(req, [0, 0, 0, 0]); h.writeUInt16BE(req.readUInt16BE(0) ^ 1, 0); return framed(h); }, /does not answer the request/],
  ];
  // Each case has a server of its own, so they run side by side: the one that never answers
  // waits out its 10 s alone instead of in line.
  const outcomes = await Promise.all(cases.map(async ([what, reply, why]) => {
    const server = await hostileTcp(reply);
    const provider = new Rfc2136Provider({ server: '127.0.0.1', port: server.port, transport: 'tcp', key });
    const started = Date.now();
    const err = await provider.existing('x.test', 'x.test', 'MX').then(() => null, (e: unknown) => e);
    const took = Date.now() - started;
    await server.close();
    return { what, why, err, took };
  }));
  for (const { what, why, err, took } of outcomes) {
    t.ok(err instanceof DnsProviderError, `${what}: a DnsProviderError`);
    t.match((err as Error).message, why, `${what}: ${(err as Error).message}`);
    t.notMatch((err as Error).message, key.secret.toString('base64'));
    t.ok(took < 12_000, `${what}: ended within the 10 s timeout`);
  }
});

t.test('a PowerDNS API that answers without end is cut at 4 MiB; its error text is clipped, the key never quoted', async (t) => {
  const server = http.createServer((req, res) => {
    if (req.url?.includes('huge')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 64 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
        if (sent < 64 * 1024 * 1024) res.once('drain', pump);
        else res.end();
      };
      res.on('error', () => {});
      pump();
      return;
    }
    res.writeHead(422, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `bad \u0007 ${'x'.repeat(10_000)} key was ${req.headers['x-api-key']}` }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  const port = (server.address() as net.AddressInfo).port;
  const huge = new PowerDnsProvider({ url: `http://127.0.0.1:${port}`, serverId: 'huge', apiKey: API_KEY });
  const err = await huge.check('x.test').then(() => null, (e: unknown) => e);
  t.ok(err instanceof DnsProviderError);
  t.match((err as Error).message, /larger than 4 MiB/);
  const chatty = new PowerDnsProvider({ url: `http://127.0.0.1:${port}`, serverId: 'localhost', apiKey: API_KEY });
  const err2 = await chatty.check('x.test').then(() => null, (e: unknown) => e);
  t.ok(err2 instanceof DnsProviderError);
  t.match((err2 as Error).message, /HTTP 422: bad/);
  t.ok((err2 as Error).message.length < 400, 'the server\'s text is clipped');
  t.notMatch((err2 as Error).message, API_KEY, 'the key the server echoed is clipped away here; a reason never adds it');
});

t.test('a TCP server that trickles its reply a byte at a time is cut off at the 10 s wall-clock deadline', async (t) => {
  const key = { name: 'svc-update', algorithm: 'hmac-sha256' as const, secret: randomBytes(32) };
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('data', () => {
      // Announces 2000 bytes, then sends one every 500 ms: never idle for long, done after 1000 s.
      s.write(Buffer.from([0x07, 0xd0]));
      const timer = setInterval(() => s.write(Buffer.from([0])), 500);
      timers.add(timer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    for (const timer of timers) clearInterval(timer);
    for (const s of sockets) s.destroy();
    server.close(() => r());
  }));
  const provider = new Rfc2136Provider({ server: '127.0.0.1', port: (server.address() as net.AddressInfo).port, transport: 'tcp', key });
  const started = Date.now();
  const err = await provider.existing('x.test', 'x.test', 'MX').then(() => null, (e: unknown) => e);
  const took = Date.now() - started;
  t.ok(err instanceof DnsProviderError, 'a DnsProviderError');
  t.match((err as Error).message, /ETIMEDOUT/);
  t.ok((err as DnsProviderError).unreachable, 'counted as an unreachable server (the loop skips the rest of the pass)');
  t.ok(took >= 9_000 && took < 12_000, `ended at the deadline (${took} ms)`);
});

t.test('a bad key_name is refused at PUT with a fix, and never fails an exchange as "unexpected"', async (t) => {
  const svc = await startSvc();
  t.teardown(() => svc.stop());
  for (const keyName of ['a..b', `${'k'.repeat(64)}.example`]) {
    const res = await api(svc.url, 'PUT', '/v0/owner/dns-provider', { token: svc.ownerToken, body: { kind: 'rfc2136', server: '127.0.0.1', key_name: keyName, secret: SECRET } });
    t.equal(res.status, 400, `${keyName.slice(0, 20)}: refused`);
    t.match(res.body, { code: 'validation_error', message: /key_name must be a DNS name/, fix: /svc-update/ });
  }
  t.match((await api(svc.url, 'GET', '/v0/owner/dns-provider', { token: svc.ownerToken })).body, { configured: false });
  // Had one been stored (an older svc), signing is inside the exchange's error handling: a clear reason.
  const provider = new Rfc2136Provider({ server: '127.0.0.1', port: 1, transport: 'tcp', key: { name: 'a..b', algorithm: 'hmac-sha256', secret: randomBytes(32) } });
  const err = await provider.existing('x.test', 'x.test', 'MX').then(() => null, (e: unknown) => e);
  t.ok(err instanceof DnsProviderError, 'a DnsProviderError, not an unexpected Error');
  t.match((err as Error).message, /empty or over-long label/);
});

t.test('UDP: replies from another address or port, and replies that fail ID or TSIG checks, are skipped until the real one', async (t) => {
  const knot = await startKnot({ zone: 'udp.test', keyName: 'svc-update', records: ['@ MX 10 mx.udp.test.'] });
  const front = dgram.createSocket('udp4');
  const spoofer = dgram.createSocket('udp4');
  const upstream = dgram.createSocket('udp4');
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', () => r()));
  await new Promise<void>((r) => spoofer.bind(0, '127.0.0.1', () => r()));
  await new Promise<void>((r) => upstream.bind(0, '127.0.0.1', () => r()));
  t.teardown(async () => {
    front.close();
    spoofer.close();
    upstream.close();
    await knot.stop();
  });
  let seen = 0;
  front.on('message', (req, client) => {
    seen++;
    const forged = Buffer.concat([replyHeader(req, [0, 0, 0, 0])]);
    // From another port: ignored. From the server's port: unsigned, then another ID: refused, still waiting.
    spoofer.send(forged, client.port, client.address);
    front.send(forged, client.port, client.address);
    const otherId = Buffer.from(forged);
    otherId.writeUInt16BE(req.readUInt16BE(0) ^ 1, 0);
    front.send(otherId, client.port, client.address);
    // Then the real, signed reply from Knot, a little later.
    upstream.once('message', (real) => setTimeout(() => front.send(real, client.port, client.address), 200));
    upstream.send(req, knot.port, '127.0.0.1');
  });
  const provider = new Rfc2136Provider({ server: '127.0.0.1', port: (front.address() as net.AddressInfo).port, transport: 'udp', key: { name: 'svc-update', algorithm: 'hmac-sha256', secret: Buffer.from(knot.secret, 'base64') } });
  const records = await provider.existing('udp.test', 'udp.test', 'MX');
  t.equal(seen, 1);
  t.same(records.map((r) => `${r.priority} ${r.value}`), ['10 mx.udp.test'], 'the verified reply from the server is the one taken');

  // Only forgeries: the exchange waits to its deadline and says why the replies were refused.
  front.removeAllListeners('message');
  front.on('message', (req, client) => front.send(replyHeader(req, [0, 0, 0, 0]), client.port, client.address));
  const started = Date.now();
  const err = await provider.existing('udp.test', 'udp.test', 'MX').then(() => null, (e: unknown) => e);
  t.ok(err instanceof DnsProviderError);
  t.match((err as Error).message, /not signed/);
  t.ok(Date.now() - started >= 9_000, 'kept waiting for a real reply until the deadline');
});

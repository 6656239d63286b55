/**
 * The edge's outbound side end to end: a real Edge on loopback, `POST /outbound` over real HTTP,
 * the relay finding the "remote MX" through a loopback DNS server (dns2) and delivering to a real
 * smtp-server sink on 127.0.0.1, delivery reports read back with `GET /events`, local delivery into
 * the edge's own sealed buffer, and DSN/ARF reports sent to the VERP and feedback addresses.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import nodemailer from 'nodemailer';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { EdgeOptions } from '../../src/edge/edge.js';
import { generateHomeKeyPair, openObject, rawMessage, type HomeKeyPair } from '../../src/edge/sealed.js';
import { deriveEdgeKey, taggedReturnPath } from '../../src/edge/verp.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { startTestEdge, type RunningEdge } from '../helpers/edge.js';
import { api, repoRoot, tempDir } from '../helpers/svc.js';

const HOME_DOMAIN = 'home.test';
const BOB = `bob@${HOME_DOMAIN}`;
const REMOTE = 'remote.test';
const EDGE_HOSTNAME = 'mx.home.test';

let dns: LoopbackDns;
t.before(async () => {
  dns = await startLoopbackDns({
    [REMOTE]: { MX: [{ exchange: `mx.${REMOTE}`, priority: 10 }] },
    [`mx.${REMOTE}`]: { A: ['127.0.0.1'] },
    // No MX: RFC 5321 §5.1 falls back to the domain's own address.
    'nomx.test': { A: ['127.0.0.1'] },
  });
});
t.teardown(() => dns.close());

// ---------------------------------------------------------------------------------------------
// The "remote MX": a real smtp-server whose replies a test can script

interface Received {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  helo: string;
  secure: boolean;
}

type Reply = { code: number; message: string } | null;

interface Sink {
  port: number;
  received: Received[];
  /** Reply to RCPT TO for an address (null = accept). */
  rcpt: (address: string) => Reply;
  /** Reply after DATA (null = 250). */
  data: () => Reply;
  close(): Promise<void>;
}

function smtpError(reply: { code: number; message: string }): Error {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}

async function startSink(t: Test): Promise<Sink> {
  const sink: Sink = { port: 0, received: [], rcpt: () => null, data: () => null, close: async () => undefined };
  // STARTTLS stays on with smtp-server's built-in self-signed certificate: opportunistic TLS must not check it.
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    onRcptTo(address, _session, callback) {
      const reply = sink.rcpt(address.address);
      callback(reply ? smtpError(reply) : undefined);
    },
    onData(stream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const reply = sink.data();
        if (reply) return callback(smtpError(reply));
        sink.received.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          helo: session.hostNameAppearsAs,
          secure: session.secure,
        });
        callback();
      });
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink.port = (server.server.address() as { port: number }).port;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  t.teardown(() => sink.close());
  return sink;
}

// ---------------------------------------------------------------------------------------------
// The edge

/** An edge routing HOME_DOMAIN with Bob (unless `route: false`), quick retries, DNS from the loopback server. */
const startEdge = (t: Test, opts: Partial<EdgeOptions> & { home?: HomeKeyPair; route?: boolean } = {}): Promise<RunningEdge> =>
  startTestEdge(t, {
    dataDir: opts.dataDir ?? path.join(tempDir('svc-edge-out-'), 'edge'),
    hostname: EDGE_HOSTNAME,
    resolver: dns.resolver,
    retryScheduleMs: [100, 200],
    ...opts,
    route: opts.route === false ? false : { domains: [HOME_DOMAIN], addresses: [BOB] },
  });

interface OutboundStatus {
  ref: string;
  status: string;
  recipients: { address: string; status: string; code?: number; message?: string }[];
}

interface Report {
  id: string;
  ref: string;
  type: string;
  recipient: string;
  at: string;
  code?: number;
  message?: string;
}

let counter = 0;
function newRef(): string {
  return `msg-${Date.now().toString(36)}-${++counter}`;
}

function signedMail(ref: string, to: string, extraHeaders: string[] = []): string {
  return [
    `From: Bob <${BOB}>`,
    `To: ${to}`,
    `Subject: outbound ${ref}`,
    `Message-ID: <${ref}@${HOME_DOMAIN}>`,
    'Date: Thu, 02 Jan 2025 03:04:05 +0000',
    'DKIM-Signature: v=1; a=rsa-sha256; d=home.test; s=sel; h=from:to:subject; bh=x; b=y',
    ...extraHeaders,
    '',
    'Hello from the home.',
    '..a line that starts with a dot',
    '',
  ].join('\r\n');
}

function outbound(ref: string, recipients: string[], raw = signedMail(ref, recipients.join(', ')), mailFrom = `svc-bounce+${ref}@${HOME_DOMAIN}`) {
  return { ref, mail_from: mailFrom, recipients, raw: Buffer.from(raw).toString('base64') };
}

/** The tagged VERP return path the edge sends a job with (docs/edge.md "Reports that come back"). */
function returnPathOf(edge: RunningEdge, ref: string): string {
  return taggedReturnPath(deriveEdgeKey(edge.token, 'verp-tag'), ref, HOME_DOMAIN);
}

async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function events(edge: RunningEdge, query = ''): Promise<{ events: Report[]; next: string }> {
  const res = await edge.call<{ events: Report[]; next: string }>('GET', `/events${query}`);
  if (res.status !== 200) throw new Error(`GET /events${query}: ${res.status} ${res.text}`);
  return res.body;
}

async function reportsFor(edge: RunningEdge, ref: string): Promise<Report[]> {
  return (await events(edge, '?limit=500')).events.filter((e) => e.ref === ref);
}

/** Waits until the job is done and returns its status. */
async function waitDone(edge: RunningEdge, ref: string, timeoutMs = 10_000): Promise<OutboundStatus> {
  return waitFor(`job ${ref} done`, async () => {
    const res = await edge.call<OutboundStatus>('GET', `/outbound/${ref}`);
    return res.body.status === 'done' ? res.body : undefined;
  }, timeoutMs);
}

async function listKeys(edge: RunningEdge): Promise<string[]> {
  const res = await edge.call<{ objects: { key: string }[] }>('GET', '/objects?limit=1000');
  return res.body.objects.map((o) => o.key);
}

// ---------------------------------------------------------------------------------------------
// Delivery over SMTP

t.test('POST /outbound queues durably (202), then the relay delivers the raw bytes to the MX and reports delivered', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = newRef();
  const raw = signedMail(ref, `carol@${REMOTE}`);
  const res = await edge.call<OutboundStatus>('POST', '/outbound', outbound(ref, [`carol@${REMOTE}`], raw));
  t.equal(res.status, 202);
  t.same(res.body, { ref, status: 'queued', recipients: [{ address: `carol@${REMOTE}`, status: 'queued' }] });

  const status = await waitDone(edge, ref);
  t.same(status.recipients.map((r) => [r.address, r.status, r.code]), [[`carol@${REMOTE}`, 'delivered', 250]]);
  t.equal(sink.received.length, 1);
  const got = sink.received[0];
  t.equal(got.raw.toString(), raw, 'the raw bytes arrive unchanged (dot-stuffing undone by the receiver)');
  t.equal(got.mailFrom, returnPathOf(edge, ref), 'MAIL FROM is the job mail_from with its VERP tag');
  t.same(got.rcptTo, [`carol@${REMOTE}`]);
  t.equal(got.helo, EDGE_HOSTNAME, 'EHLO with the edge host name');
  t.equal(got.secure, true, 'opportunistic STARTTLS with a self-signed certificate');
  t.ok(dns.queries.includes(`MX ${REMOTE}`), 'the MX was looked up with the edge resolver');

  const reports = await reportsFor(edge, ref);
  t.equal(reports.length, 1);
  t.match(reports[0], { ref, type: 'delivered', recipient: `carol@${REMOTE}`, code: 250 });
  t.match(reports[0].at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const mimeDir = path.join(edge.dataDir, 'outbound', 'mime');
  t.ok(await waitFor('the MIME deleted', () => (fs.readdirSync(mimeDir).length === 0 ? true : undefined)), 'the MIME is deleted once the job is done');
});

t.test('a domain without MX is delivered to its own address (A fallback), one session per domain', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = newRef();
  const recipients = ['a@nomx.test', 'b@nomx.test', `c@${REMOTE}`];
  t.equal((await edge.call('POST', '/outbound', outbound(ref, recipients))).status, 202);
  const status = await waitDone(edge, ref);
  t.same(status.recipients.map((r) => r.status), ['delivered', 'delivered', 'delivered']);
  t.same(sink.received.map((r) => r.rcptTo.join(',')).sort(), ['a@nomx.test,b@nomx.test', `c@${REMOTE}`]);
});

t.test('a 4xx is deferred with a report and retried per the schedule, then delivered', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  let tries = 0;
  sink.rcpt = () => (++tries === 1 ? { code: 451, message: '4.7.1 Greylisted, try again' } : null);
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`dave@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.equal(status.recipients[0].status, 'delivered');
  const reports = await reportsFor(edge, ref);
  t.same(reports.map((r) => r.type), ['deferred', 'delivered']);
  t.equal(reports[0].code, 451);
  t.match(reports[0].message, /Greylisted/);
  t.equal(sink.received.length, 1);
});

t.test('a 5xx bounces the recipient with the remote code and reply; others in the same session are delivered', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  sink.rcpt = (address) => (address.startsWith('nobody@') ? { code: 550, message: '5.1.1 No such user here' } : null);
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`nobody@${REMOTE}`, `erin@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.match(status.recipients[0], { address: `nobody@${REMOTE}`, status: 'bounced', code: 550, message: /No such user/ });
  t.match(status.recipients[1], { address: `erin@${REMOTE}`, status: 'delivered', code: 250 });
  const reports = await reportsFor(edge, ref);
  t.same(reports.map((r) => `${r.type}:${r.recipient}`).sort(), [`bounced:nobody@${REMOTE}`, `delivered:erin@${REMOTE}`]);
  t.same(sink.received.map((r) => r.rcptTo), [[`erin@${REMOTE}`]]);
});

t.test('a 5xx after DATA bounces every recipient of that session', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  sink.data = () => ({ code: 554, message: '5.7.1 Message rejected as spam' });
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`f@${REMOTE}`, `g@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.same(status.recipients.map((r) => [r.status, r.code]), [['bounced', 554], ['bounced', 554]]);
});

t.test('when the retries are used up the recipient bounces (deferred, deferred, bounced)', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port, retryScheduleMs: [50, 50] });
  sink.rcpt = () => ({ code: 452, message: '4.2.2 Mailbox full' });
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`h@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.match(status.recipients[0], { status: 'bounced', code: 452, message: /Gave up after 3 attempts.*Mailbox full/ });
  t.same((await reportsFor(edge, ref)).map((r) => r.type), ['deferred', 'deferred', 'bounced']);
});

t.test('an unreachable MX is deferred (connection failure) and bounces when retries run out', async (t) => {
  const closed = await startSink(t);
  const port = closed.port;
  await closed.close();
  const edge = await startEdge(t, { deliveryPort: port, retryScheduleMs: [50] });
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`i@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.equal(status.recipients[0].status, 'bounced');
  t.match(status.recipients[0].message, /Gave up after 2 attempts/);
  t.same((await reportsFor(edge, ref)).map((r) => r.type), ['deferred', 'bounced']);
});

t.test('a domain that does not exist bounces at once', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, ['x@no-such-domain.test']));
  const status = await waitDone(edge, ref);
  t.match(status.recipients[0], { status: 'bounced', code: 550 });
  t.equal(sink.received.length, 0);
});

t.test('with a smart host, all non-local mail goes there instead of the MX', async (t) => {
  const smart = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: 1, smartHost: { host: '127.0.0.1', port: smart.port } });
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, ['j@unresolvable.test', `k@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.same(status.recipients.map((r) => r.status), ['delivered', 'delivered']);
  t.same(smart.received.map((r) => r.rcptTo), [['j@unresolvable.test', `k@${REMOTE}`]], 'one session for every recipient');
});

// ---------------------------------------------------------------------------------------------
// Idempotency and status

t.test('POST /outbound is idempotent on ref: a repeat answers 200 with the status and never sends again', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = newRef();
  const body = outbound(ref, [`l@${REMOTE}`]);
  const [first, concurrent] = await Promise.all([edge.call('POST', '/outbound', body), edge.call('POST', '/outbound', body)]);
  t.same([first.status, concurrent.status].sort(), [200, 202], 'two concurrent posts: one queues, the other gets the status');
  await waitDone(edge, ref);
  const again = await edge.call<OutboundStatus>('POST', '/outbound', body);
  t.equal(again.status, 200);
  t.same(again.body, (await edge.call('GET', `/outbound/${ref}`)).body, 'the same shape as GET /outbound/{ref}');
  t.equal(again.body.status, 'done');
  const different = await edge.call<OutboundStatus>('POST', '/outbound', outbound(ref, [`other@${REMOTE}`]));
  t.equal(different.status, 200, 'a different body with the same ref still gets the existing status');
  t.same(different.body.recipients.map((r) => r.address), [`l@${REMOTE}`]);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(sink.received.length, 1, 'the remote got exactly one copy');
  t.equal((await reportsFor(edge, ref)).length, 1);
});

t.test('GET /outbound/{ref}: the status of a known job, 404 for an unknown ref, 400 for a malformed one', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const unknown = await edge.call('GET', '/outbound/never-posted');
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error, 'not_found');
  const bad = await edge.call('GET', `/outbound/${'x'.repeat(129)}`);
  t.equal(bad.status, 400);
  t.equal(bad.body.error, 'validation_error');
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`m@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.same(Object.keys(status).sort(), ['recipients', 'ref', 'status']);
  t.equal(status.ref, ref);
});

t.test('bad POST bodies are refused with 400 validation_error and a message naming the field', async (t) => {
  const edge = await startEdge(t);
  const good = outbound('ok-ref', [`n@${REMOTE}`]);
  const cases: [string, unknown, RegExp][] = [
    ['not an object', [1, 2], /JSON object/],
    ['ref missing', { ...good, ref: undefined }, /ref/],
    ['ref with a slash', { ...good, ref: 'a/b' }, /ref/],
    ['ref too long', { ...good, ref: 'r'.repeat(129) }, /ref/],
    ['mail_from with a display name', { ...good, mail_from: 'Bob <bob@home.test>' }, /mail_from/],
    ['mail_from missing', { ...good, mail_from: undefined }, /mail_from/],
    ['no recipients', { ...good, recipients: [] }, /recipients/],
    ['101 recipients', { ...good, recipients: Array.from({ length: 101 }, (_, i) => `u${i}@${REMOTE}`) }, /recipients/],
    ['a recipient in brackets', { ...good, recipients: [`<n@${REMOTE}>`] }, /recipients\[0\]/],
    ['a recipient without @', { ...good, recipients: ['nobody'] }, /recipients\[0\]/],
    ['raw missing', { ...good, raw: undefined }, /raw/],
    ['raw not base64', { ...good, raw: 'not base64!' }, /base64/],
    ['raw not a message', { ...good, raw: Buffer.from('\r\njust a body').toString('base64') }, /RFC 5322/],
  ];
  for (const [name, body, message] of cases) {
    const res = await edge.call('POST', '/outbound', body);
    t.equal(res.status, 400, name);
    t.equal(res.body.error, 'validation_error', name);
    t.match(res.body.message, message, name);
  }
  const notJson = await api(edge.apiUrl, 'POST', '/outbound', { token: edge.token, rawBody: 'ref=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(notJson.status, 415);
  t.equal((await edge.call('GET', '/outbound/ok-ref')).status, 404, 'nothing was queued');
});

t.test('a message over the size limit is refused with 413', async (t) => {
  const edge = await startEdge(t, { maxMessageBytes: 2048 });
  const res = await edge.call('POST', '/outbound', outbound(newRef(), [`o@${REMOTE}`], signedMail('big', `o@${REMOTE}`) + 'z'.repeat(4096)));
  t.equal(res.status, 413);
  t.equal(res.body.error, 'payload_too_large');
});

t.test('the outbound routes need the bearer token (401)', async (t) => {
  const edge = await startEdge(t);
  for (const [method, route] of [['POST', '/outbound'], ['GET', '/outbound/x'], ['GET', '/events']] as const) {
    const res = await api(edge.apiUrl, method, route, { token: 'edge_wrong-token-wrong-token-wrong-token', body: method === 'POST' ? outbound('x', [`p@${REMOTE}`]) : undefined });
    t.equal(res.status, 401, `${method} ${route}`);
    t.equal(res.body.error, 'unauthorized');
  }
});

// ---------------------------------------------------------------------------------------------
// GET /events

t.test('GET /events pages with after and limit; next equals after when there is nothing new', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  t.same(await events(edge), { events: [], next: '' }, 'empty from the beginning');
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`q1@${REMOTE}`, `q2@${REMOTE}`, `q3@${REMOTE}`]));
  await waitDone(edge, ref);
  const all = await events(edge);
  t.equal(all.events.length, 3);
  t.same([...all.events.map((e) => e.id)].sort(), all.events.map((e) => e.id), 'ids increase');
  const first = await events(edge, '?limit=2');
  t.same(first.events.map((e) => e.id), all.events.slice(0, 2).map((e) => e.id));
  t.equal(first.next, first.events[1].id);
  const rest = await events(edge, `?after=${first.next}&limit=2`);
  t.same(rest.events.map((e) => e.id), [all.events[2].id]);
  const none = await events(edge, `?after=${rest.next}`);
  t.same(none, { events: [], next: rest.next });
  t.same((await events(edge, '?after=')).events.length, 3, 'an empty after is the beginning');
  for (const query of ['?limit=0', '?limit=501', '?limit=x', '?after=abc', '?after=1', '?cursor=1']) {
    const res = await edge.call('GET', `/events${query}`);
    t.equal(res.status, 400, query);
    t.equal(res.body.error, 'validation_error', query);
  }
});

// ---------------------------------------------------------------------------------------------
// Local delivery

t.test('a recipient this edge routes is delivered into its own buffer, sealed, and a repeat POST adds nothing', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = newRef();
  const raw = signedMail(ref, BOB);
  const waiting = edge.call<{ available: boolean }>('GET', '/wait?timeout_ms=10000');
  await edge.call('POST', '/outbound', outbound(ref, ['Bob@Home.test'], raw));
  t.equal((await waiting).body.available, true, 'a pending long-poll is woken');
  const status = await waitDone(edge, ref);
  t.match(status.recipients[0], { address: 'Bob@Home.test', status: 'delivered' });
  const keys = await listKeys(edge);
  t.equal(keys.length, 1);
  const entry = await edge.call<{ recipients: string[] }>('GET', `/queue/${keys[0]}`);
  t.same(entry.body.recipients, [BOB], 'a queue entry like any received message');
  const jwe = await edge.call('GET', `/objects/${keys[0]}`);
  const payload = await openObject(jwe.text, edge.home.privateJwk);
  t.equal(rawMessage(payload).toString(), raw, 'the raw message unchanged');
  t.same(payload.envelope.rcpt_to, [BOB]);
  t.equal(payload.envelope.mail_from, returnPathOf(edge, ref), 'the tagged return path, as a remote MX would see it');
  t.equal(payload.auth.spf.result, 'pass', 'local mail passes as internal');
  t.equal(payload.auth.dmarc.result, 'pass');
  t.equal(sink.received.length, 0, 'nothing went over SMTP');
  t.match(await reportsFor(edge, ref), [{ type: 'delivered', recipient: 'Bob@Home.test' }]);

  t.equal((await edge.call('POST', '/outbound', outbound(ref, ['Bob@Home.test'], raw))).status, 200);
  await new Promise((r) => setTimeout(r, 200));
  t.same(await listKeys(edge), keys, 'no second object');
});

t.test('svc-selftest@ a routed domain is delivered locally too, next to a remote recipient', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`svc-selftest@${HOME_DOMAIN}`, `r@${REMOTE}`]));
  const status = await waitDone(edge, ref);
  t.same(status.recipients.map((r) => r.status), ['delivered', 'delivered']);
  t.equal((await listKeys(edge)).length, 1);
  t.equal(sink.received.length, 1);
});

// ---------------------------------------------------------------------------------------------
// Reports coming back

function dsnFor(ref: string, recipient: string, action: 'failed' | 'delayed'): string {
  return [
    'From: MAILER-DAEMON@remote.test',
    `To: svc-bounce+x@${HOME_DOMAIN}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="dsn-b"',
    '',
    '--dsn-b',
    'Content-Type: text/plain',
    '',
    'Delivery failed.',
    '--dsn-b',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.remote.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    `Action: ${action}`,
    action === 'failed' ? 'Status: 5.1.1' : 'Status: 4.4.7',
    action === 'failed' ? 'Diagnostic-Code: smtp; 550 5.1.1 User unknown' : 'Diagnostic-Code: smtp; 451 4.4.7 Still trying',
    '',
    '--dsn-b',
    'Content-Type: text/rfc822-headers',
    '',
    `Message-ID: <${ref}@${HOME_DOMAIN}>`,
    '--dsn-b--',
    '',
  ].join('\r\n');
}

async function sendToEdge(edge: RunningEdge, to: string, raw: string) {
  return nodemailer.createTransport({ host: '127.0.0.1', port: edge.smtpPort, secure: false, ignoreTLS: true }).sendMail({ envelope: { from: '', to: [to] }, raw });
}

t.test('a DSN to the tagged return path becomes a bounced report for that ref and is not stored as mail', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = `Ref_${newRef()}`;
  await edge.call('POST', '/outbound', outbound(ref, [`Sam@${REMOTE}`]));
  await waitDone(edge, ref);
  const returnPath = sink.received[0].mailFrom;
  const info = await sendToEdge(edge, returnPath.toLowerCase(), dsnFor(ref, `sam@${REMOTE}`, 'failed'));
  t.match(info.response, /^250 /);
  const bounced = await waitFor('bounced report', async () => (await reportsFor(edge, ref)).find((r) => r.type === 'bounced'));
  t.match(bounced, { ref, recipient: `Sam@${REMOTE}`, code: 550, message: '550 5.1.1 User unknown' }, 'the ref keeps its case and the recipient its spelling');
  t.same(await listKeys(edge), [], 'the DSN is not stored in the buffer');
  const status = (await edge.call<OutboundStatus>('GET', `/outbound/${ref}`)).body;
  t.match(status.recipients[0], { status: 'bounced', code: 550 });

  await sendToEdge(edge, returnPath, dsnFor(ref, `sam@${REMOTE}`, 'delayed'));
  const deferred = await waitFor('deferred report', async () => (await reportsFor(edge, ref)).find((r) => r.type === 'deferred'));
  t.match(deferred, { code: 451 });

  // The ref itself, or the Message-ID, is no proof: every recipient knows both.
  const before = (await reportsFor(edge, ref)).length;
  await sendToEdge(edge, `svc-bounce+${ref}@${HOME_DOMAIN}`, dsnFor(ref, `sam@${REMOTE}`, 'failed'));
  await sendToEdge(edge, returnPath, dsnFor(ref, `someone-else@${REMOTE}`, 'failed'));
  t.equal((await reportsFor(edge, ref)).length, before, 'an untagged address and a stranger recipient add nothing');
  const dropped = await edge.call<{ dropped: Record<string, number> }>('GET', '/reports/dropped');
  t.match(dropped.body.dropped, { no_valid_tag: 1, recipient_not_on_job: 1 }, 'each is counted');
});

t.test('an ARF report to svc-feedback@ becomes a complained report, tied by the tag in the original Return-Path', async (t) => {
  const sink = await startSink(t);
  const edge = await startEdge(t, { deliveryPort: sink.port });
  const ref = newRef();
  await edge.call('POST', '/outbound', outbound(ref, [`tom@${REMOTE}`]));
  await waitDone(edge, ref);
  const arf = [
    'From: fbl@remote.test',
    `To: svc-feedback@${HOME_DOMAIN}`,
    'Subject: FW: complaint',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=feedback-report; boundary="arf-b"',
    '',
    '--arf-b',
    'Content-Type: text/plain',
    '',
    'A user marked this message as spam.',
    '--arf-b',
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'Version: 1',
    '',
    '--arf-b',
    'Content-Type: message/rfc822',
    '',
    `Return-Path: <${sink.received[0].mailFrom}>`,
    `From: ${BOB}`,
    'To: redacted@remote.test',
    `Message-ID: <${ref}@${HOME_DOMAIN}>`,
    '',
    'body',
    '--arf-b--',
    '',
  ].join('\r\n');
  await sendToEdge(edge, `svc-feedback@${HOME_DOMAIN}`, arf);
  const complained = await waitFor('complained report', async () => (await reportsFor(edge, ref)).find((r) => r.type === 'complained'));
  t.match(complained, { ref, recipient: `tom@${REMOTE}` }, 'a redacted To names nobody on the job; the tie makes it the job\'s recipients');
  t.same(await listKeys(edge), []);
});

t.test('anything unreadable sent to a report address is accepted (250) and dropped', async (t) => {
  const edge = await startEdge(t);
  const before = (await events(edge)).events.length;
  const info = await sendToEdge(edge, `svc-bounce+whatever@${HOME_DOMAIN}`, 'From: x@y.test\r\nSubject: hi\r\n\r\nnot a report\r\n');
  t.match(info.response, /^250 /);
  t.same(await listKeys(edge), []);
  t.equal((await events(edge)).events.length, before);
  const err = await sendToEdge(edge, 'svc-bounce+x@not-routed.test', 'Subject: x\r\n\r\ny\r\n').catch((e: { responseCode?: number; rejectedErrors?: { responseCode?: number }[] }) => e);
  t.equal((err as { rejectedErrors?: { responseCode?: number }[] }).rejectedErrors?.[0]?.responseCode ?? (err as { responseCode?: number }).responseCode, 550, 'only on routed domains');
});

// ---------------------------------------------------------------------------------------------
// Restart

t.test('a queued job survives an edge restart and is delivered by the new process', async (t) => {
  const closed = await startSink(t);
  const deadPort = closed.port;
  await closed.close();
  const home = await generateHomeKeyPair();
  const first = await startEdge(t, { deliveryPort: deadPort, retryScheduleMs: [300, 300, 300], home });
  const ref = newRef();
  t.equal((await first.call('POST', '/outbound', outbound(ref, [`u@${REMOTE}`]))).status, 202);
  await waitFor('a deferral', async () => (await reportsFor(first, ref)).length > 0 || undefined);
  await first.stop();

  const sink = await startSink(t);
  const second = await startEdge(t, { dataDir: first.dataDir, apiToken: first.token, deliveryPort: sink.port, retryScheduleMs: [300, 300, 300], home, route: false });
  const status = await waitDone(second, ref);
  t.equal(status.recipients[0].status, 'delivered');
  t.equal(sink.received.length, 1);
  t.same((await reportsFor(second, ref)).map((r) => r.type), ['deferred', 'delivered'], 'reports from before the restart are kept, ids go on');
});

// ---------------------------------------------------------------------------------------------
// svc edge flags

function runEdgeCli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const entry = path.join(repoRoot, 'dist', 'src', 'cli', 'edge.js');
  const script = `import(${JSON.stringify(entry)}).then((m) => m.runEdgeCommand(process.argv.slice(1))).then((code) => process.exit(code));`;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script, '--', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { proc, exited, stderr: () => stderr };
}

t.test('svc edge --smart-host sends outbound mail there; bad relay flags are refused', async (t) => {
  const sink = await startSink(t);
  const dataDir = path.join(tempDir('svc-edge-cli-'), 'edge');
  const cli = runEdgeCli(['--data', dataDir, '--smtp-port', '0', '--api-port', '0', '--hostname', EDGE_HOSTNAME, '--dns', dns.server, '--smart-host', `127.0.0.1:${sink.port}`, '--relay-port', '2500']);
  t.teardown(() => {
    if (cli.proc.exitCode === null) cli.proc.kill('SIGKILL');
  });
  const ready = await new Promise<{ api: { url: string }; token_file: string }>((resolve, reject) => {
    readline.createInterface({ input: cli.proc.stdout! }).on('line', (l) => resolve(JSON.parse(l) as { api: { url: string }; token_file: string }));
    void cli.exited.then((code) => reject(new Error(`exited ${code}: ${cli.stderr()}`)));
  });
  const token = fs.readFileSync(ready.token_file, 'utf8').trim();
  const ref = newRef();
  t.equal((await api(ready.api.url, 'POST', '/outbound', { token, body: outbound(ref, ['v@elsewhere.test']) })).status, 202);
  await waitFor('delivery through the smart host', () => (sink.received.length > 0 ? true : undefined));
  t.same(sink.received[0].rcptTo, ['v@elsewhere.test']);
  cli.proc.kill('SIGTERM');
  t.equal(await cli.exited, 0);

  const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [['--smart-host', 'no-port.example'], {}, /--smart-host must be HOST:PORT/],
    [['--smart-host', 'smtp.example:0'], {}, /smart-host port must be an integer from 1/],
    [['--smart-host-user', 'me'], {}, /--smart-host-user needs --smart-host/],
    [['--smart-host', 'smtp.example:587', '--smart-host-user', 'me'], { SVC_EDGE_SMART_HOST_PASSWORD: '' }, /SVC_EDGE_SMART_HOST_PASSWORD/],
    [['--relay-port', '0'], {}, /--relay-port must be an integer from 1/],
  ];
  for (const [args, env, message] of cases) {
    const bad = runEdgeCli(['--data', path.join(tempDir('svc-edge-cli-'), 'edge'), ...args], env);
    t.equal(await bad.exited, 1, args.join(' '));
    t.match(bad.stderr(), message, args.join(' '));
  }
});

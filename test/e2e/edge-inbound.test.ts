/**
 * The edge's inbound side end to end: a real nodemailer SMTP client talks to the edge's
 * smtp-server on 127.0.0.1, SPF/DKIM/DMARC are evaluated against a loopback DNS server, the edge
 * API is called over real HTTP, and sealed objects are opened with the home's private key.
 */
import t, { type Test } from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import https from 'node:https';
import path from 'node:path';
import readline from 'node:readline';
import nodemailer from 'nodemailer';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { EdgeOptions } from '../../src/edge/edge.js';
import { openObject, publicKeyId, rawMessage, type HomeKeyPair, type InboundObject } from '../../src/edge/sealed.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { startTestEdge, type RunningEdge } from '../helpers/edge.js';
import { api, repoRoot, tempDir } from '../helpers/svc.js';

// ---------------------------------------------------------------------------------------------
// Fixtures: DNS zone with SPF/DKIM/DMARC for a sending domain and a spoofed one.

const dkim = generateKeyPairSync('rsa', { modulusLength: 2048 });
const DKIM_PRIVATE = dkim.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const DKIM_PUBLIC = dkim.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');

let dns: LoopbackDns;
t.before(async () => {
  dns = await startLoopbackDns({
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'], A: ['127.0.0.1'] },
    'sel._domainkey.sender.test': { TXT: [`v=DKIM1; k=rsa; p=${DKIM_PUBLIC}`] },
    '_dmarc.sender.test': { TXT: ['v=DMARC1; p=reject'] },
    'bank.test': { TXT: ['v=spf1 ip4:192.0.2.1 -all'] },
    '_dmarc.bank.test': { TXT: ['v=DMARC1; p=reject'] },
    'evil.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
  });
});
t.teardown(() => dns.close());

const HOME_DOMAIN = 'home.test';
const BOB = `bob@${HOME_DOMAIN}`;
const CAROL = `carol@${HOME_DOMAIN}`;
const HELO = 'client.sender.test';

// ---------------------------------------------------------------------------------------------
// Helpers

/** An edge routing HOME_DOMAIN with Bob and Carol (unless `route: false`), checking mail against the loopback DNS. */
const startEdge = (t: Test, opts: Partial<EdgeOptions> & { route?: boolean; home?: HomeKeyPair } = {}): Promise<RunningEdge> =>
  startTestEdge(t, { resolver: dns.resolver, ...opts, route: opts.route === false ? false : { domains: [HOME_DOMAIN], addresses: [BOB, CAROL] } });

function transport(port: number, extra: Record<string, unknown> = {}) {
  return nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, name: HELO, ...extra });
}

function rawMail(subject: string, body: string, from = 'alice@sender.test', to = BOB): string {
  return [`From: Alice <${from}>`, `To: ${to}`, `Subject: ${subject}`, `Message-ID: <${randomBytes(8).toString('hex')}@sender.test>`, 'Date: Thu, 02 Jan 2025 03:04:05 +0000', '', body, ''].join('\r\n');
}

interface SmtpFailure {
  responseCode?: number;
  response?: string;
  rejectedErrors?: { responseCode?: number; response?: string }[];
}

async function sendRaw(port: number, raw: string, envelope: { from: string; to: string[] }, extra: Record<string, unknown> = {}) {
  return transport(port, extra).sendMail({ envelope, raw });
}

async function sendFails(port: number, raw: string, envelope: { from: string; to: string[] }): Promise<SmtpFailure> {
  return sendRaw(port, raw, envelope).then(
    () => {
      throw new Error('the message was accepted');
    },
    (err: SmtpFailure) => err,
  );
}

/** One SMTP session with nodemailer's SMTPConnection, for control over the SIZE parameter. */
function sendWithConnection(port: number, envelope: { from: string; to: string[]; size?: number }, message: string | Buffer): Promise<{ ok: boolean; code?: number; response?: string }> {
  return new Promise((resolve, reject) => {
    const conn = new SMTPConnection({ host: '127.0.0.1', port, ignoreTLS: true, name: HELO });
    conn.on('error', reject);
    conn.connect((err) => {
      if (err) return reject(err);
      conn.send(envelope, message, (sendErr, info) => {
        conn.quit();
        if (sendErr) resolve({ ok: false, code: sendErr.responseCode, response: sendErr.response });
        else resolve({ ok: true, response: info.response });
      });
    });
  });
}

/** Sends each command after the previous reply; returns every reply (the greeting first). */
function smtpDialog(port: number, commands: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const replies: string[] = [];
    let buffered = '';
    let next = 0;
    socket.setEncoding('utf8');
    socket.on('error', reject);
    socket.on('close', () => resolve(replies));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      // A reply is complete at a line whose code is followed by a space.
      while (/^\d{3} .*\r\n/m.test(buffered)) {
        const end = buffered.search(/^\d{3} .*\r\n/m);
        const lineEnd = buffered.indexOf('\r\n', end) + 2;
        replies.push(buffered.slice(0, lineEnd).replace(/\r\n$/, '').replace(/\r\n/g, '\n'));
        buffered = buffered.slice(lineEnd);
        if (next < commands.length) socket.write(commands[next++] + '\r\n');
      }
    });
  });
}

async function listKeys(edge: RunningEdge): Promise<string[]> {
  const res = await edge.call<{ objects: { key: string }[] }>('GET', '/objects?limit=1000');
  return res.body.objects.map((o) => o.key);
}

async function openLatest(edge: RunningEdge): Promise<{ key: string; payload: InboundObject; jwe: string }> {
  const keys = await listKeys(edge);
  const key = keys.at(-1)!;
  const res = await edge.call('GET', `/objects/${key}`);
  return { key, jwe: res.text, payload: await openObject(res.text, edge.home.privateJwk) };
}

/** Every file under a directory (relative paths). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(full).map((f) => path.join(entry.name, f)));
    else out.push(entry.name);
  }
  return out.sort();
}

/** GET with a path sent exactly as written (fetch would normalise `..` and `%2F`). */
function rawGet(apiUrl: string, rawPath: string, token: string): Promise<{ status: number; body: string }> {
  const url = new URL(apiUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: rawPath, method: 'GET', headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------
// Routing and RCPT

t.test('before any routing is pushed, RCPT is answered 451 4.3.0 so the sender retries', async (t) => {
  const edge = await startEdge(t, { route: false });
  const err = await sendFails(edge.smtpPort, rawMail('hello', 'early'), { from: 'alice@sender.test', to: [BOB] });
  t.equal(err.responseCode, 451);
  t.match(err.response, /^451 4\.3\.0 .*no routing/);
  t.same(await listKeys(edge), [], 'nothing stored');
  t.equal((await edge.call('GET', '/routing')).status, 404, 'GET /routing says there is none');
});

t.test('an unrouted recipient is refused with 550 5.1.1 while routed ones in the same message are accepted', async (t) => {
  const edge = await startEdge(t);
  const info = await sendRaw(edge.smtpPort, rawMail('mixed', 'to two'), { from: 'alice@sender.test', to: [BOB, `nobody@${HOME_DOMAIN}`, 'someone@elsewhere.test'] });
  t.same(info.accepted, [BOB]);
  t.same((info.rejected as string[]).sort(), ['nobody@home.test', 'someone@elsewhere.test']);
  for (const e of info.rejectedErrors as SmtpFailure[]) {
    t.equal(e.responseCode, 550);
    t.match(e.response, /^550 5\.1\.1 Mailbox unavailable: .* is not hosted here/);
  }
  const { payload } = await openLatest(edge);
  t.same(payload.envelope.rcpt_to, [BOB], 'only the routed recipient is in the sealed envelope');
});

t.test('a message to only unrouted recipients is refused and nothing is stored', async (t) => {
  const edge = await startEdge(t);
  const err = await sendFails(edge.smtpPort, rawMail('nobody', 'x'), { from: 'alice@sender.test', to: [`nobody@${HOME_DOMAIN}`] });
  t.equal(err.rejectedErrors?.[0]?.responseCode ?? err.responseCode, 550);
  t.same(await listKeys(edge), []);
});

t.test('recipient matching is case-insensitive and the envelope keeps the lower-cased address', async (t) => {
  const edge = await startEdge(t);
  const info = await sendRaw(edge.smtpPort, rawMail('case', 'x'), { from: 'alice@sender.test', to: ['Bob@HOME.test'] });
  t.equal(info.accepted.length, 1);
  const { payload } = await openLatest(edge);
  t.same(payload.envelope.rcpt_to, [BOB]);
});

t.test('svc-selftest@ is accepted on a routed domain and refused on a domain that is not listed', async (t) => {
  const edge = await startEdge(t);
  const info = await sendRaw(edge.smtpPort, rawMail('selftest', 'x'), { from: 'alice@sender.test', to: [`svc-selftest@${HOME_DOMAIN}`] });
  t.same(info.accepted, [`svc-selftest@${HOME_DOMAIN}`]);
  const err = await sendFails(edge.smtpPort, rawMail('selftest', 'x'), { from: 'alice@sender.test', to: ['svc-selftest@other.test'] });
  t.equal(err.rejectedErrors?.[0]?.responseCode ?? err.responseCode, 550);
});

t.test('more than 100 recipients in one message: the extra ones get 452 and the first 100 are accepted', async (t) => {
  const edge = await startEdge(t, { route: false });
  const many = Array.from({ length: 101 }, (_, i) => `user${i}@${HOME_DOMAIN}`);
  t.equal((await edge.call('PUT', '/routing', { recipient_public_key: edge.home.publicJwk, domains: [HOME_DOMAIN], addresses: many })).status, 200);
  const info = await sendRaw(edge.smtpPort, rawMail('many', 'x'), { from: 'alice@sender.test', to: many });
  t.equal(info.accepted.length, 100);
  t.same(info.rejected, [many[100]]);
  t.equal((info.rejectedErrors as SmtpFailure[])[0].responseCode, 452);
  const { payload } = await openLatest(edge);
  t.equal(payload.envelope.rcpt_to.length, 100);
});

t.test('a routing update takes effect at once: an address removed from routing gets 550', async (t) => {
  const edge = await startEdge(t);
  t.equal((await sendRaw(edge.smtpPort, rawMail('before', 'x'), { from: 'alice@sender.test', to: [CAROL] })).accepted.length, 1);
  const res = await edge.call('PUT', '/routing', { recipient_public_key: edge.home.publicJwk, domains: [HOME_DOMAIN], addresses: [BOB] });
  t.equal(res.status, 200);
  t.same(res.body.addresses, [BOB]);
  const err = await sendFails(edge.smtpPort, rawMail('after', 'x'), { from: 'alice@sender.test', to: [CAROL] });
  t.equal(err.rejectedErrors?.[0]?.responseCode ?? err.responseCode, 550);
});

t.test('the report-address hook lets a routed domain accept extra local parts (issue 5 plugs VERP and feedback in here)', async (t) => {
  const edge = await startEdge(t, { reportAddress: (local, domain) => local.startsWith('bounce+') && domain === HOME_DOMAIN });
  const info = await sendRaw(edge.smtpPort, rawMail('dsn', 'x'), { from: '', to: [`bounce+abc@${HOME_DOMAIN}`] });
  t.same(info.accepted, [`bounce+abc@${HOME_DOMAIN}`]);
  const { payload } = await openLatest(edge);
  t.equal(payload.envelope.mail_from, '', 'the null sender is kept as an empty string');
});

// ---------------------------------------------------------------------------------------------
// Size limit

t.test('the size limit is advertised with SIZE and a larger declared SIZE is refused at MAIL FROM with 552', async (t) => {
  const edge = await startEdge(t, { maxMessageBytes: 4096 });
  // A hand-driven session: nodemailer refuses on its own side before sending an oversized SIZE.
  const replies = await smtpDialog(edge.smtpPort, [`EHLO ${HELO}`, 'MAIL FROM:<alice@sender.test> SIZE=10000', 'QUIT']);
  t.match(replies[1], /^250[- ]SIZE 4096$/m, 'EHLO advertises the limit');
  t.match(replies[2], /^552 5\.3\.4 /, 'MAIL FROM with SIZE over the limit is refused');
  t.same(await listKeys(edge), []);
});

t.test('a message over the size limit sent without SIZE is refused after DATA with 552 and nothing is stored', async (t) => {
  const edge = await startEdge(t, { maxMessageBytes: 4096 });
  const result = await sendWithConnection(edge.smtpPort, { from: 'alice@sender.test', to: [BOB] }, rawMail('big', 'y'.repeat(10_000)));
  t.equal(result.ok, false);
  t.equal(result.code, 552);
  t.match(result.response, /^552 5\.3\.4 /);
  t.same(await listKeys(edge), []);
  const small = await sendWithConnection(edge.smtpPort, { from: 'alice@sender.test', to: [BOB] }, rawMail('small', 'fits'));
  t.equal(small.ok, true, 'a message under the limit on the same edge is accepted');
});

// ---------------------------------------------------------------------------------------------
// The sealed buffer

t.test('the stored object is sealed: no subject, body or address appears in any file the edge wrote', async (t) => {
  const edge = await startEdge(t);
  const subject = `Confidential merger ${randomBytes(4).toString('hex')}`;
  const body = `The password is ${randomBytes(6).toString('hex')}.`;
  await sendRaw(edge.smtpPort, rawMail(subject, body), { from: 'alice@sender.test', to: [BOB] });
  const objects = filesUnder(path.join(edge.dataDir, 'objects'));
  t.equal(objects.length, 1, 'one object file');
  const bytes = fs.readFileSync(path.join(edge.dataDir, 'objects', objects[0]));
  for (const needle of [subject, body, 'alice@sender.test', Buffer.from(body).toString('base64').slice(0, 16)]) {
    t.equal(bytes.indexOf(needle), -1, `object file has no "${needle}"`);
  }
  for (const file of filesUnder(edge.dataDir)) {
    const content = fs.readFileSync(path.join(edge.dataDir, file));
    t.equal(content.indexOf(subject), -1, `${file} has no subject`);
    t.equal(content.indexOf(body), -1, `${file} has no body`);
  }
  t.equal(fs.statSync(path.join(edge.dataDir, 'objects', objects[0])).mode & 0o777, 0o600, 'object file is 0600');
  t.equal(fs.statSync(path.join(edge.dataDir, 'objects')).mode & 0o777, 0o700, 'objects directory is 0700');
});

t.test('the object opens with the home private key to the exact raw bytes and the real session envelope', async (t) => {
  const edge = await startEdge(t);
  const raw = rawMail('exact bytes', 'Line one\r\n.leading dot\r\n\r\nLast line');
  const before = Date.now();
  const info = await sendRaw(edge.smtpPort, raw, { from: 'alice@sender.test', to: [BOB, CAROL] });
  const { key, payload, jwe } = await openLatest(edge);
  t.match(info.response, new RegExp(`^250 2\\.6\\.0 OK: queued as ${key}$`), '250 names the object key');
  t.ok(rawMessage(payload).equals(Buffer.from(raw)), 'raw bytes identical (dot-unstuffed)');
  t.same(payload.envelope.rcpt_to, [BOB, CAROL], 'one object for both recipients');
  t.equal(payload.envelope.mail_from, 'alice@sender.test');
  t.equal(payload.envelope.client_ip, '127.0.0.1');
  t.equal(payload.envelope.helo, HELO);
  const at = Date.parse(payload.envelope.received_at);
  t.ok(at >= before - 5 && at <= Date.now(), 'received_at is the time of receipt');
  t.equal(payload.spam, null, 'no spam checker configured');
  t.equal(JSON.parse(Buffer.from(jwe.split('.')[0], 'base64url').toString()).kid, await publicKeyId(edge.home.publicJwk));
  t.equal((await listKeys(edge)).length, 1, 'exactly one object');
});

t.test('each accepted message has a queue entry with key, size, received_at, recipients and key_id', async (t) => {
  const edge = await startEdge(t);
  await sendRaw(edge.smtpPort, rawMail('queued', 'x'), { from: 'alice@sender.test', to: [CAROL, BOB] });
  const [key] = await listKeys(edge);
  const file = path.join(edge.dataDir, 'queue', `${key}.json`);
  t.ok(fs.existsSync(file), 'queue entry file exists');
  const onDisk = JSON.parse(fs.readFileSync(file, 'utf8'));
  const objectSize = fs.statSync(path.join(edge.dataDir, 'objects', `${key}.jwe`)).size;
  t.same(onDisk, { key, size: objectSize, received_at: onDisk.received_at, recipients: [CAROL, BOB], key_id: await publicKeyId(edge.home.publicJwk) });
  t.match(onDisk.received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const res = await edge.call('GET', `/queue/${key}`);
  t.equal(res.status, 200);
  t.same(res.body, onDisk, 'GET /queue/{key} answers the same entry');
});

t.test('a storage failure answers 451 and leaves no partial files; after repair the retry is accepted', async (t) => {
  const edge = await startEdge(t);
  const objects = path.join(edge.dataDir, 'objects');
  // A file where the objects directory should be: every write fails (works for root too, unlike chmod).
  fs.renameSync(objects, objects + '.away');
  fs.writeFileSync(objects, 'not a directory');
  const err = await sendFails(edge.smtpPort, rawMail('storage', 'fails'), { from: 'alice@sender.test', to: [BOB] });
  t.equal(err.responseCode, 451);
  t.match(err.response, /^451 4\.3\.0 /);
  t.same(filesUnder(path.join(edge.dataDir, 'queue')), [], 'no queue entry or temp file left behind');
  t.same(filesUnder(objects + '.away'), [], 'no object left behind');
  t.same(await listKeys(edge), [], 'nothing listed');
  fs.rmSync(objects);
  fs.renameSync(objects + '.away', objects);
  const info = await sendRaw(edge.smtpPort, rawMail('storage', 'works again'), { from: 'alice@sender.test', to: [BOB] });
  t.equal(info.accepted.length, 1);
  const [key] = await listKeys(edge);
  t.ok(fs.existsSync(path.join(objects, `${key}.jwe`)) && fs.existsSync(path.join(edge.dataDir, 'queue', `${key}.json`)), 'both files exist once 250 was given');
});

t.test('concurrent messages each get their own object, listed in key order', async (t) => {
  const edge = await startEdge(t);
  const subjects = Array.from({ length: 12 }, (_, i) => `parallel ${i}`);
  await Promise.all(subjects.map((s) => sendRaw(edge.smtpPort, rawMail(s, s), { from: 'alice@sender.test', to: [BOB] })));
  const keys = await listKeys(edge);
  t.equal(keys.length, subjects.length);
  t.same([...keys].sort(), keys, 'listing is in key order');
  const opened = await Promise.all(keys.map(async (k) => openObject((await edge.call('GET', `/objects/${k}`)).text, edge.home.privateJwk)));
  const seen = opened.map((p) => /Subject: (.*)\r\n/.exec(rawMessage(p).toString())![1]).sort();
  t.same(seen, [...subjects].sort(), 'every message stored once');
});

// ---------------------------------------------------------------------------------------------
// SPF / DKIM / DMARC through the loopback DNS server

t.test('DKIM-signed mail from a domain whose SPF allows 127.0.0.1 passes SPF, DKIM and DMARC', async (t) => {
  const edge = await startEdge(t);
  const queriesBefore = dns.queries.length;
  await sendRaw(edge.smtpPort, rawMail('signed', 'authentic mail'), { from: 'alice@sender.test', to: [BOB] }, { dkim: { domainName: 'sender.test', keySelector: 'sel', privateKey: DKIM_PRIVATE } });
  const { payload } = await openLatest(edge);
  t.same(payload.auth.spf, { result: 'pass', domain: 'sender.test' });
  t.equal(payload.auth.dkim.result, 'pass');
  t.match(payload.auth.dkim.signatures, [{ domain: 'sender.test', selector: 'sel', result: 'pass', aligned: true }]);
  t.match(payload.auth.dmarc, { result: 'pass', policy: 'reject', domain: 'sender.test' });
  t.equal(payload.auth.arc.result, 'none');
  const asked = dns.queries.slice(queriesBefore);
  t.ok(asked.includes('TXT sel._domainkey.sender.test'), 'the DKIM key came from the loopback DNS server');
  t.ok(asked.includes('TXT _dmarc.sender.test'), 'the DMARC record came from the loopback DNS server');
  t.ok(asked.includes('TXT sender.test'), 'the SPF record came from the loopback DNS server');
});

t.test('a spoofed From on a p=reject domain without a valid signature fails DMARC', async (t) => {
  const edge = await startEdge(t);
  // Envelope from evil.test (its SPF allows 127.0.0.1), header From bank.test: SPF passes but is not aligned.
  await sendRaw(edge.smtpPort, rawMail('urgent wire transfer', 'pay now', 'ceo@bank.test'), { from: 'mallory@evil.test', to: [BOB] });
  const { payload } = await openLatest(edge);
  t.same(payload.auth.spf, { result: 'pass', domain: 'evil.test' });
  t.same(payload.auth.dkim, { result: 'none', signatures: [] });
  t.match(payload.auth.dmarc, { result: 'fail', policy: 'reject', domain: 'bank.test' });
});

t.test('a signature that does not verify is reported as a DKIM failure', async (t) => {
  const edge = await startEdge(t);
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  await sendRaw(edge.smtpPort, rawMail('forged signature', 'x'), { from: 'alice@sender.test', to: [BOB] }, { dkim: { domainName: 'sender.test', keySelector: 'sel', privateKey: other } });
  const { payload } = await openLatest(edge);
  t.equal(payload.auth.dkim.result, 'fail');
  t.match(payload.auth.dkim.signatures, [{ domain: 'sender.test', result: 'fail' }]);
});

// ---------------------------------------------------------------------------------------------
// Optional spam verdict (rspamd's HTTP protocol on a loopback stand-in)

t.test('with a spam checker configured, its verdict is sealed with the message', async (t) => {
  const seen: { ip?: string; helo?: string; from?: string; rcpt?: string; bytes: number }[] = [];
  const rspamd = http.createServer((req, res) => {
    let bytes = 0;
    req.on('data', (d: Buffer) => (bytes += d.length));
    req.on('end', () => {
      seen.push({ ip: req.headers.ip as string, helo: req.headers.helo as string, from: req.headers.from as string, rcpt: req.headers.rcpt as string, bytes });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ action: req.url === '/checkv2' ? 'add header' : 'no action', score: 9.5, required_score: 6 }));
    });
  });
  await new Promise<void>((r) => rspamd.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => rspamd.close(() => r())));
  const edge = await startEdge(t, { spam: `http://127.0.0.1:${(rspamd.address() as { port: number }).port}` });
  const raw = rawMail('cheap pills', 'buy now');
  await sendRaw(edge.smtpPort, raw, { from: 'alice@sender.test', to: [BOB] });
  const { payload } = await openLatest(edge);
  t.same(payload.spam, { verdict: 'spam', score: 9.5, action: 'add header' });
  t.same(seen, [{ ip: '127.0.0.1', helo: HELO, from: 'alice@sender.test', rcpt: BOB, bytes: Buffer.byteLength(raw) }], 'the checker saw the real session facts and the whole message');
});

t.test('an unreachable spam checker gives the verdict unknown and the message is still accepted', async (t) => {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const edge = await startEdge(t, { spam: `http://127.0.0.1:${port}` });
  const info = await sendRaw(edge.smtpPort, rawMail('hello', 'x'), { from: 'alice@sender.test', to: [BOB] });
  t.equal(info.accepted.length, 1);
  const { payload } = await openLatest(edge);
  t.same(payload.spam, { verdict: 'unknown', score: null, action: null });
});

// ---------------------------------------------------------------------------------------------
// Edge API

t.test('every edge API route needs the bearer token: none or a wrong one gets 401 with {error, message}', async (t) => {
  const edge = await startEdge(t);
  for (const [method, urlPath] of [
    ['GET', '/objects'],
    ['GET', '/queue'],
    ['GET', '/routing'],
    ['PUT', '/routing'],
    ['GET', '/wait?timeout_ms=0'],
    ['DELETE', '/objects/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b'],
    ['GET', '/no-such-route'],
  ]) {
    const none = await api(edge.apiUrl, method, urlPath);
    t.equal(none.status, 401, `${method} ${urlPath} without a token`);
    t.same(Object.keys(none.body).sort(), ['error', 'message']);
    t.equal(none.body.error, 'unauthorized');
    t.match(none.headers.get('www-authenticate'), /^Bearer/);
    const wrong = await api(edge.apiUrl, method, urlPath, { token: edge.token.slice(0, -1) + (edge.token.endsWith('A') ? 'B' : 'A') });
    t.equal(wrong.status, 401, `${method} ${urlPath} with a wrong token`);
    const basic = await api(edge.apiUrl, method, urlPath, { headers: { authorization: `Basic ${Buffer.from(`x:${edge.token}`).toString('base64')}` } });
    t.equal(basic.status, 401, `${method} ${urlPath} with Basic auth`);
  }
  t.equal((await edge.call('GET', '/objects')).status, 200, 'the right token works');
});

t.test('objects are listed oldest first with their sizes, paged with after and limit', async (t) => {
  const edge = await startEdge(t);
  for (const i of [1, 2, 3]) await sendRaw(edge.smtpPort, rawMail(`msg ${i}`, 'x'.repeat(i * 100)), { from: 'alice@sender.test', to: [BOB] });
  const all = await edge.call<{ objects: { key: string; size: number }[]; count: number; has_more: boolean }>('GET', '/objects');
  t.equal(all.status, 200);
  t.equal(all.body.count, 3);
  t.equal(all.body.has_more, false);
  const keys = all.body.objects.map((o) => o.key);
  t.same([...keys].sort(), keys);
  for (const o of all.body.objects) t.equal(o.size, fs.statSync(path.join(edge.dataDir, 'objects', `${o.key}.jwe`)).size, 'size is the sealed object size');
  const subjects = await Promise.all(keys.map(async (k) => /Subject: (.*)\r\n/.exec(rawMessage(await openObject((await edge.call('GET', `/objects/${k}`)).text, edge.home.privateJwk)).toString())![1]));
  t.same(subjects, ['msg 1', 'msg 2', 'msg 3'], 'oldest first');
  const first = await edge.call<{ objects: { key: string }[]; has_more: boolean }>('GET', '/objects?limit=2');
  t.same(first.body.objects.map((o) => o.key), keys.slice(0, 2));
  t.equal(first.body.has_more, true);
  const rest = await edge.call<{ objects: { key: string }[]; has_more: boolean }>('GET', `/objects?after=${keys[1]}&limit=2`);
  t.same(rest.body.objects.map((o) => o.key), [keys[2]]);
  t.equal(rest.body.has_more, false);
  t.equal((await edge.call('GET', '/objects?limit=0')).status, 400, 'limit below 1');
  t.equal((await edge.call('GET', '/objects?limit=1001')).status, 400, 'limit above 1000');
});

t.test('GET /objects/{key} returns the compact JWE as application/jose; an unknown key is 404', async (t) => {
  const edge = await startEdge(t);
  await sendRaw(edge.smtpPort, rawMail('fetch me', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const [key] = await listKeys(edge);
  const res = await edge.call('GET', `/objects/${key}`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/jose/);
  t.equal(res.text, fs.readFileSync(path.join(edge.dataDir, 'objects', `${key}.jwe`), 'utf8'), 'exactly the stored object');
  t.equal(res.text.split('.').length, 5);
  const missing = await edge.call('GET', '/objects/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b');
  t.equal(missing.status, 404);
  t.equal(missing.body.error, 'not_found');
});

t.test('DELETE /objects/{key} removes the object and its queue entry, and repeating it is harmless', async (t) => {
  const edge = await startEdge(t);
  await sendRaw(edge.smtpPort, rawMail('delete me', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const [key] = await listKeys(edge);
  t.equal((await edge.call('DELETE', `/objects/${key}`)).status, 204);
  t.equal((await edge.call('GET', `/objects/${key}`)).status, 404);
  t.equal((await edge.call('GET', `/queue/${key}`)).status, 404);
  t.same(await listKeys(edge), []);
  t.same(filesUnder(path.join(edge.dataDir, 'objects')), []);
  t.same(filesUnder(path.join(edge.dataDir, 'queue')), []);
  t.equal((await edge.call('DELETE', `/objects/${key}`)).status, 204, 'deleting again still answers 204');
  t.equal((await edge.call('DELETE', '/objects/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b')).status, 204, 'deleting a key that never existed answers 204');
});

t.test('POST /objects/fetch answers several objects in request order and reports keys without an object', async (t) => {
  const edge = await startEdge(t);
  for (const i of [1, 2, 3]) await sendRaw(edge.smtpPort, rawMail(`batch ${i}`, 'x'), { from: 'alice@sender.test', to: [BOB] });
  const keys = await listKeys(edge);
  const unknown = '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b';
  const res = await edge.call<{ objects: { key: string; jwe: string }[]; missing: string[]; deferred: string[] }>('POST', '/objects/fetch', { keys: [keys[2], unknown, keys[0]] });
  t.equal(res.status, 200);
  t.same(res.body.objects.map((o) => o.key), [keys[2], keys[0]], 'in the order asked for');
  for (const o of res.body.objects) t.equal(o.jwe, fs.readFileSync(path.join(edge.dataDir, 'objects', `${o.key}.jwe`), 'utf8'), 'exactly the stored object');
  t.same(res.body.missing, [unknown]);
  t.same(res.body.deferred, []);
  const opened = await openObject(res.body.objects[0].jwe, edge.home.privateJwk);
  t.match(rawMessage(opened).toString(), /Subject: batch 3/);
  t.same(await listKeys(edge), keys, 'fetching deletes nothing');
});

t.test('POST /objects/delete removes several objects with their queue entries; absent keys are reported and repeating is harmless', async (t) => {
  const edge = await startEdge(t);
  for (const i of [1, 2, 3]) await sendRaw(edge.smtpPort, rawMail(`gone ${i}`, 'x'), { from: 'alice@sender.test', to: [BOB] });
  const keys = await listKeys(edge);
  const unknown = '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b';
  const res = await edge.call<{ deleted: string[]; absent: string[] }>('POST', '/objects/delete', { keys: [keys[0], keys[2], unknown] });
  t.equal(res.status, 200);
  t.same(res.body, { deleted: [keys[0], keys[2]], absent: [unknown] });
  t.same(await listKeys(edge), [keys[1]], 'the other object stays');
  t.same(filesUnder(path.join(edge.dataDir, 'objects')), [`${keys[1]}.jwe`]);
  t.same(filesUnder(path.join(edge.dataDir, 'queue')), [`${keys[1]}.json`], 'queue entries go with their objects');
  const again = await edge.call<{ deleted: string[]; absent: string[] }>('POST', '/objects/delete', { keys: [keys[0], keys[2]] });
  t.equal(again.status, 200, 'repeating answers 200');
  t.same(again.body, { deleted: [], absent: [keys[0], keys[2]] });
});

t.test('the batch routes need the token and refuse bad input with 400 before touching the disk', async (t) => {
  const edge = await startEdge(t);
  await sendRaw(edge.smtpPort, rawMail('keep', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const keys = await listKeys(edge);
  const key = (i: number) => `0190a1b2-c3d4-7e5f-8a6b-${i.toString(16).padStart(12, '0')}`;
  for (const route of ['/objects/fetch', '/objects/delete']) {
    const none = await api(edge.apiUrl, 'POST', route, { body: { keys } });
    t.equal(none.status, 401, `${route} without a token`);
    const wrong = await api(edge.apiUrl, 'POST', route, { token: edge.token.slice(0, -1) + (edge.token.endsWith('A') ? 'B' : 'A'), body: { keys } });
    t.equal(wrong.status, 401, `${route} with a wrong token`);
    t.equal(wrong.body.error, 'unauthorized');
    for (const [what, body] of [
      ['more than 1000 keys', { keys: Array.from({ length: 1001 }, (_, i) => key(i)) }],
      ['no keys', { keys: [] }],
      ['a key that is not an object key', { keys: ['../routing.json'] }],
      ['an upper-case key', { keys: [keys[0].toUpperCase()] }],
      ['the same key twice', { keys: [keys[0], keys[0]] }],
      ['keys that are not a list', { keys: keys[0] }],
      ['an unknown field', { keys, all: true }],
      ['no body fields', {}],
    ] as const) {
      const res = await edge.call('POST', route, body);
      t.equal(res.status, 400, `${route}: ${what}`);
      t.equal(res.body.error, 'validation_error');
    }
    const text = await api(edge.apiUrl, 'POST', route, { token: edge.token, rawBody: keys[0], headers: { 'content-type': 'application/octet-stream' } });
    t.equal(text.status, 415, `${route}: a body that is not JSON`);
    const exactly = await edge.call('POST', route, { keys: Array.from({ length: 1000 }, (_, i) => key(i)) });
    t.equal(exactly.status, 200, `${route}: 1000 keys are accepted`);
  }
  t.same(await listKeys(edge), keys, 'nothing was deleted by a refused request');
  t.ok(fs.existsSync(path.join(edge.dataDir, 'routing.json')), 'routing.json is untouched');
});

t.test('queue entries are listed and deleted on their own; deleting one leaves the object', async (t) => {
  const edge = await startEdge(t);
  for (const i of [1, 2]) await sendRaw(edge.smtpPort, rawMail(`q ${i}`, 'x'), { from: 'alice@sender.test', to: [BOB] });
  const keys = await listKeys(edge);
  const list = await edge.call<{ entries: { key: string; recipients: string[] }[]; count: number; has_more: boolean }>('GET', '/queue');
  t.equal(list.status, 200);
  t.same(list.body.entries.map((e) => e.key), keys);
  t.same(list.body.entries.map((e) => e.recipients), [[BOB], [BOB]]);
  const paged = await edge.call<{ entries: { key: string }[] }>('GET', `/queue?after=${keys[0]}`);
  t.same(paged.body.entries.map((e) => e.key), [keys[1]]);
  t.equal((await edge.call('DELETE', `/queue/${keys[0]}`)).status, 204);
  t.equal((await edge.call('DELETE', `/queue/${keys[0]}`)).status, 204, 'idempotent');
  t.equal((await edge.call('GET', `/queue/${keys[0]}`)).status, 404);
  t.same(await listKeys(edge), keys, 'both objects are still listed');
  t.equal((await edge.call('GET', `/objects/${keys[0]}`)).status, 200);
});

t.test('keys that are not object keys are refused before touching the disk (no path traversal)', async (t) => {
  const edge = await startEdge(t);
  await sendRaw(edge.smtpPort, rawMail('x', 'x'), { from: 'alice@sender.test', to: [BOB] });
  for (const p of [
    '/objects/..%2Frouting.json',
    '/objects/..%2F..%2F..%2Fetc%2Fpasswd',
    '/objects/%2e%2e',
    '/objects/..',
    '/objects/../routing',
    '/queue/..%2Frouting',
    '/objects/0190A1B2-C3D4-7E5F-8A6B-7C8D9E0F1A2B',
    '/objects?after=..%2F..%2Fx',
    '/wait?after=..%2Fx&timeout_ms=0',
  ]) {
    const res = await rawGet(edge.apiUrl, p, edge.token);
    t.ok(res.status === 400 || res.status === 404, `${p} → ${res.status}`);
    t.notMatch(res.body, /recipient_public_key|root:|"key_id"/, `${p} reveals no file content`);
    t.match(JSON.parse(res.body), { error: String, message: String });
  }
  const del = await edge.call('DELETE', '/objects/..%2Frouting.json');
  t.equal(del.status, 400);
  t.ok(fs.existsSync(path.join(edge.dataDir, 'routing.json')), 'routing.json is untouched');
});

t.test('GET /wait answers at once when an object newer than after exists', async (t) => {
  const edge = await startEdge(t);
  await sendRaw(edge.smtpPort, rawMail('waiting', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const [key] = await listKeys(edge);
  const started = Date.now();
  const res = await edge.call('GET', '/wait?timeout_ms=20000');
  t.same(res.body, { available: true, latest: key });
  t.ok(Date.now() - started < 1000, 'immediate');
  const older = await edge.call('GET', '/wait?after=0000aaaa-0000-7000-8000-000000000000&timeout_ms=20000');
  t.same(older.body, { available: true, latest: key });
});

t.test('GET /wait returns as soon as a message lands', async (t) => {
  const edge = await startEdge(t);
  await sendRaw(edge.smtpPort, rawMail('first', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const [first] = await listKeys(edge);
  const started = Date.now();
  const waiting = edge.call<{ available: boolean; latest: string }>('GET', `/wait?after=${first}&timeout_ms=20000`);
  await new Promise((r) => setTimeout(r, 300));
  await sendRaw(edge.smtpPort, rawMail('second', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const res = await waiting;
  const elapsed = Date.now() - started;
  const keys = await listKeys(edge);
  t.same(res.body, { available: true, latest: keys[1] });
  t.ok(elapsed >= 300 && elapsed < 5000, `answered when the mail landed (${elapsed} ms), not at the 20 s timeout`);
});

t.test('GET /wait answers available:false when its timeout passes without mail', async (t) => {
  const edge = await startEdge(t);
  const started = Date.now();
  const res = await edge.call('GET', '/wait?timeout_ms=400');
  const elapsed = Date.now() - started;
  t.same(res.body, { available: false, latest: null });
  t.ok(elapsed >= 390 && elapsed < 3000, `held until the timeout (${elapsed} ms)`);
  t.equal((await edge.call('GET', '/wait?timeout_ms=30001')).status, 400, 'timeouts above 30 s are refused');
});

t.test('PUT /routing refuses a private key, unknown fields, malformed keys and bad JSON with 400', async (t) => {
  const edge = await startEdge(t, { route: false });
  const good = { recipient_public_key: edge.home.publicJwk, domains: [HOME_DOMAIN], addresses: [BOB] };
  const withPrivate = await edge.call('PUT', '/routing', { ...good, recipient_public_key: edge.home.privateJwk });
  t.equal(withPrivate.status, 400);
  t.match(withPrivate.body, { error: 'validation_error', message: /private key never leaves the home/ });
  t.equal((await edge.call('PUT', '/routing', { ...good, extra: true })).status, 400, 'unknown field');
  t.equal((await edge.call('PUT', '/routing', { ...good, recipient_public_key: { kty: 'EC', crv: 'P-256', x: 'a', y: 'b' } })).status, 400, 'not X25519');
  t.equal((await edge.call('PUT', '/routing', { ...good, addresses: ['not an address'] })).status, 400, 'bad address');
  const bad = await api(edge.apiUrl, 'PUT', '/routing', { token: edge.token, rawBody: '{"recipient_public_key":', headers: { 'content-type': 'application/json' } });
  t.equal(bad.status, 400);
  t.same(Object.keys(bad.body).sort(), ['error', 'message']);
  t.equal((await edge.call('GET', '/routing')).status, 404, 'nothing was stored');
  t.notOk(fs.existsSync(path.join(edge.dataDir, 'routing.json')));
  const ok = await edge.call('PUT', '/routing', good);
  t.equal(ok.status, 200);
  t.match(ok.body, { recipient_public_key: edge.home.publicJwk, key_id: await publicKeyId(edge.home.publicJwk), domains: [HOME_DOMAIN], addresses: [BOB], updated_at: String });
});

t.test('routing, objects and queue entries survive an edge restart; mail is accepted before the home pushes again', async (t) => {
  const first = await startEdge(t);
  await sendRaw(first.smtpPort, rawMail('before restart', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const routing = (await first.call('GET', '/routing')).body;
  const keysBefore = await listKeys(first);
  await first.stop();
  const stored = JSON.parse(fs.readFileSync(path.join(first.dataDir, 'routing.json'), 'utf8'));
  t.equal(stored.version, 1, 'routing.json is versioned');
  t.equal(fs.statSync(path.join(first.dataDir, 'routing.json')).mode & 0o777, 0o600);

  const second = await startEdge(t, { dataDir: first.dataDir, apiToken: first.token, home: first.home, route: false });
  t.same((await second.call('GET', '/routing')).body, routing, 'routing is back unchanged');
  t.same(await listKeys(second), keysBefore, 'the object from before the restart is still listed');
  t.equal((await second.call('GET', `/queue/${keysBefore[0]}`)).status, 200);
  const info = await sendRaw(second.smtpPort, rawMail('after restart', 'x'), { from: 'alice@sender.test', to: [BOB] });
  t.equal(info.accepted.length, 1, 'accepted without a new routing push');
  const keys = await listKeys(second);
  t.equal(keys.length, 2);
  t.ok(keys[1] > keys[0], 'new keys sort after the old ones');
  const { payload } = await openLatest(second);
  t.match(rawMessage(payload).toString(), /Subject: after restart/, 'sealed to the same home key');
});

t.test('start-up clears what an interrupted commit or delete left: temp files and queue entries without an object', async (t) => {
  const first = await startEdge(t);
  await sendRaw(first.smtpPort, rawMail('kept', 'x'), { from: 'alice@sender.test', to: [BOB] });
  const [kept] = await listKeys(first);
  await first.stop();
  const orphanKey = '0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b';
  const strayTemp = path.join(first.dataDir, 'objects', `${orphanKey}.jwe.tmp`);
  const orphanEntry = path.join(first.dataDir, 'queue', `${orphanKey}.json`);
  fs.writeFileSync(strayTemp, 'half');
  fs.writeFileSync(orphanEntry, JSON.stringify({ key: orphanKey, size: 4, received_at: new Date().toISOString(), recipients: [BOB], key_id: 'x' }));
  const second = await startEdge(t, { dataDir: first.dataDir, apiToken: first.token, home: first.home, route: false });
  t.notOk(fs.existsSync(strayTemp), 'temp file removed');
  t.notOk(fs.existsSync(orphanEntry), 'queue entry without object removed');
  t.same(await listKeys(second), [kept], 'the committed object is kept');
  t.equal((await second.call('GET', `/queue/${orphanKey}`)).status, 404);
});

// ---------------------------------------------------------------------------------------------
// STARTTLS (production option)

t.test('with a certificate the receiver offers STARTTLS and the API speaks HTTPS; without one neither', async (t) => {
  const dir = tempDir('svc-edge-tls-');
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-subj', '/CN=mx.home.test', '-days', '1'], { stdio: 'ignore' });
  const tls = { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile) };

  const plain = await startEdge(t);
  const refused = await transport(plain.smtpPort, { ignoreTLS: false, requireTLS: true })
    .sendMail({ envelope: { from: 'alice@sender.test', to: [BOB] }, raw: rawMail('tls', 'x') })
    .then(() => null, (e: Error) => e);
  t.ok(refused, 'a client that requires TLS cannot deliver to the cleartext receiver');

  // The routing push goes over HTTPS to a self-signed certificate, so it uses node:https directly.
  const edge = await startEdge(t, { tls, route: false });
  t.match(edge.apiUrl, /^https:\/\//);
  const body = JSON.stringify({ recipient_public_key: edge.home.publicJwk, domains: [HOME_DOMAIN], addresses: [BOB] });
  const status = await new Promise<number>((resolve, reject) => {
    const url = new URL(edge.apiUrl + '/routing');
    const req = https.request(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'PUT', rejectUnauthorized: false, headers: { authorization: `Bearer ${edge.token}`, 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  t.equal(status, 200, 'PUT /routing over HTTPS');
  const info = await transport(edge.smtpPort, { ignoreTLS: false, requireTLS: true, tls: { rejectUnauthorized: false } }).sendMail({
    envelope: { from: 'alice@sender.test', to: [BOB] },
    raw: rawMail('over tls', 'x'),
  });
  t.equal(info.accepted.length, 1, 'delivered after STARTTLS');
});

// ---------------------------------------------------------------------------------------------
// svc edge (the standalone command)

t.test('svc edge makes a 0600 token, prints edge.ready and how to pair, serves with that token and stops on SIGTERM', async (t) => {
  const entry = path.join(repoRoot, 'dist', 'src', 'cli', 'edge.js');
  t.ok(fs.existsSync(entry), 'built (npm test runs tsc first)');
  const dataDir = path.join(tempDir('svc-edge-cli-'), 'edge');
  const script = `import(${JSON.stringify(entry)}).then((m) => m.runEdgeCommand(process.argv.slice(1))).then((code) => process.exit(code));`;
  const args = ['--data', dataDir, '--smtp-port', '0', '--api-port', '0', '--hostname', 'mx.home.test', '--dns', dns.server];
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script, '--', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  });
  // Parsed JSON, checked field by field with t.match right below.
  const ready = await new Promise<{ api: { url: string }; token_file: string }>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout }).on('line', (l) => resolve(JSON.parse(l) as { api: { url: string }; token_file: string }));
    void exited.then((code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  t.match(ready, { event: 'edge.ready', smtp: { host: '127.0.0.1', port: Number }, api: { host: '127.0.0.1', port: Number, url: /^http:\/\/127\.0\.0\.1:\d+$/ }, token_file: path.join(dataDir, 'api-token') });
  t.equal(fs.statSync(ready.token_file).mode & 0o777, 0o600, 'token file is 0600');
  t.equal(fs.statSync(dataDir).mode & 0o777, 0o700, 'data directory is 0700');
  const token = fs.readFileSync(ready.token_file, 'utf8').trim();
  for (let i = 0; i < 40 && !stderr.includes('transport'); i++) await new Promise((r) => setTimeout(r, 50));
  t.notOk(stderr.includes(token), 'the token itself is never printed');
  // The next step names the svc command (issue 33 §7), with the token file, never the token.
  t.match(stderr, new RegExp(`svc transport set --edge-url http://127\\.0\\.0\\.1:${ready.api.port} --edge-token-file ${ready.token_file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  t.equal((await api(ready.api.url, 'GET', '/objects', { token })).status, 200, 'the API accepts the token from the file');
  t.equal((await api(ready.api.url, 'GET', '/objects', { token: 'edge_wrong' })).status, 401);
  proc.kill('SIGTERM');
  t.equal(await exited, 0, 'exit 0 on SIGTERM');
});

t.test('svc edge refuses a --host that is not an IP address and reports bad flags', async (t) => {
  const entry = path.join(repoRoot, 'dist', 'src', 'cli', 'edge.js');
  const script = `import(${JSON.stringify(entry)}).then((m) => m.runEdgeCommand(process.argv.slice(1))).then((code) => process.exit(code));`;
  const run = (args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const proc = spawn(process.execPath, ['--input-type=module', '-e', script, '--', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      proc.stderr.on('data', (d) => (stderr += d));
      proc.on('exit', (code) => resolve({ code, stderr }));
    });
  const dataDir = path.join(tempDir('svc-edge-cli-'), 'edge');
  const badHost = await run(['--data', dataDir, '--host', 'example.com']);
  t.equal(badHost.code, 1);
  t.match(badHost.stderr, /--host must be an IP address/);
  const unknown = await run(['--data', dataDir, '--bogus']);
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /Unknown option --bogus/);
  t.notOk(fs.existsSync(dataDir), 'nothing was created for a refused command');
});

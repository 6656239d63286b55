/**
 * Issue 16 finding 10 (a): plaintext at rest. A real `svc serve --local-edge` sends a message to a
 * "remote MX" (an SMTP sink found through loopback DNS) that answers every message with 451, so
 * the edge keeps it queued for a retry. While it is queued, every file under the home (the
 * database, the edge's data directory with its outbound queue, logs, everything) is searched for
 * the subject and body text: neither may be found. The queue still holds the job (it is retried
 * and delivered once the sink accepts), so the message was on disk, only sealed.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { api, startSvc } from '../helpers/svc.js';
import { startLoopbackDns, type LoopbackDns } from '../helpers/dns.js';
import { startSink, type Sink } from '../helpers/sink.js';
import { subscribe } from '../helpers/events.js';
import { until } from '../helpers/until.js';

const enc = encodeURIComponent;
let dns: LoopbackDns;
let sink: Sink;

t.before(async () => {
  sink = await startSink('defer');
  dns = await startLoopbackDns({ 'remote.example': { MX: [{ exchange: 'mx.remote.example', priority: 10 }] }, 'mx.remote.example': { A: ['127.0.0.1'] } });
});
t.teardown(async () => {
  await sink.close();
  await dns.close();
});

/** Every regular file under `dir`, recursively (symlinks are not followed). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(full));
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

/** Files under `dir` whose bytes contain `needle` (as UTF-8, and as UTF-16LE for good measure). */
function filesContaining(dir: string, needle: string): string[] {
  const forms = [Buffer.from(needle, 'utf8'), Buffer.from(needle, 'utf16le')];
  return filesUnder(dir).filter((file) => {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      return false; // removed while we looked (a temp file)
    }
    return forms.some((form) => bytes.includes(form));
  });
}

t.test('a deferred outbound message is not on disk in plaintext anywhere in the home', async (t) => {
  const svc = await startSvc({ args: ['--local-edge', '--edge-dns', dns.server, '--relay-port', String(sink.port)] });
  t.teardown(() => svc.stop());
  const events = await subscribe(svc.url, svc.ownerToken);
  t.teardown(() => events.close());
  const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username: 'quiet', domain: 'home.example' } });
  const inbox = created.body.inbox_id;

  const marker = randomBytes(9).toString('hex');
  const subject = `Acquisition terms ${marker}`;
  const body = `The price we agreed is confidential-${marker}.`;
  const sent = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { token: svc.ownerToken, body: { to: 'counsel@remote.example', subject, text: body } });
  t.equal(sent.status, 200);

  // The sink answered 451: the edge holds the message for its next attempt.
  await events.next('message.sent', (e) => (e.send as { message_id: string }).message_id === sent.body.message_id);
  // The relay's first attempt and the delivery-events pass that reports it: seconds alone, and
  // more than 20 s was seen with the whole suite loading both cores (only a failing wait takes the bound).
  await until(
    'the deferred label',
    async () => (await api<{ labels: string[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.body.message_id)}`, { token: svc.ownerToken })).body.labels.includes('deferred'),
    90_000,
  ).catch(() => undefined); // the assertion below says what was missing
  const message = await api<{ labels: string[] }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(sent.body.message_id)}`, { token: svc.ownerToken });
  t.ok(message.body.labels.includes('deferred'), 'the message is deferred (queued on the edge for a retry)');
  const queued = filesUnder(path.join(svc.home, 'edge', 'outbound', 'mime'));
  t.equal(queued.length, 1, 'the queued message is on disk, waiting for its retry');

  t.same(filesContaining(svc.home, subject), [], 'the subject is in no file under the home');
  t.same(filesContaining(svc.home, `confidential-${marker}`), [], 'the body is in no file under the home');
  t.same(filesContaining(svc.home, marker), [], 'nor any part of them');
});

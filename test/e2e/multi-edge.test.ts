/**
 * Several edges per home (docs/edge.md "Several edges"): two standalone `svc edge` processes and
 * one home paired with both through PUT /v0/owner/transport. A 500-message SMTP burst is split
 * across the two while one is killed with SIGKILL and restarted: senders fall back to the other
 * MX as real MTAs do, so some messages reach both edges. The home ends with every message exactly
 * once and both edge buffers empty. The same message delivered to both edges is committed once
 * and acknowledged at both; a send with the first edge stopped leaves through the second, once;
 * the single `edge` form still works and reads back in `edges`.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { api, startSvc, tempDir, type RunningSvc } from '../helpers/svc.js';
import { startEdgeProcess, type EdgeProcess } from '../helpers/edge.js';
import { freePort } from '../helpers/ports.js';
import { startLoopbackDns } from '../helpers/dns.js';
import { startSink } from '../helpers/sink.js';

const BURST = 500;
const DOMAIN = 'edge.test';
const enc = encodeURIComponent;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface EdgeHealth {
  healthy: boolean;
  last_success_at: string | null;
  last_error: string | null;
  consecutive_failures: number;
  backoff_until: string | null;
}
interface TransportView {
  configured: boolean;
  edge: { url: string; token_set: boolean } | null;
  edges: { url: string; token_set: boolean; health: EdgeHealth }[];
}

/** One `svc edge` on fixed ports, so the home keeps its URL across a restart. */
class EdgeUnderTest {
  proc!: EdgeProcess;
  token = '';
  readonly dataDir = path.join(tempDir('svc-multi-edge-'), 'edge');
  constructor(
    readonly name: string,
    readonly smtpPort: number,
    readonly apiPort: number,
    private readonly extra: string[],
  ) {}
  get url() {
    return `http://127.0.0.1:${this.apiPort}`;
  }
  async start() {
    this.proc = await startEdgeProcess(['--data', this.dataDir, '--smtp-port', String(this.smtpPort), '--api-port', String(this.apiPort), '--hostname', `${this.name}.edge.test`, ...this.extra]);
    this.token = fs.readFileSync(this.proc.ready.token_file, 'utf8').trim();
  }
  async kill() {
    this.proc.proc.kill('SIGKILL');
    await this.proc.exited;
  }
  buffered(): string[] {
    const dir = path.join(this.dataDir, 'objects');
    return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.jwe')) : [];
  }
}

/** Every stored Message-ID of the inbox (all pages). */
async function storedIds(svc: RunningSvc, inbox: string): Promise<string[]> {
  const ids: string[] = [];
  let token: string | undefined;
  do {
    const res = await api<{ messages: { message_id: string }[]; next_page_token?: string }>(
      svc.url,
      'GET',
      `/v0/inboxes/${enc(inbox)}/messages?limit=100&include_unauthenticated=true&include_spam=true${token ? `&page_token=${enc(token)}` : ''}`,
      { token: svc.ownerToken },
    );
    if (res.status !== 200) throw new Error(res.text);
    ids.push(...res.body.messages.map((m) => m.message_id));
    token = res.body.next_page_token;
  } while (token);
  return ids;
}

/** Polls `check` every 200 ms until it holds or `ms` passed; answers the last value. */
async function until<T>(ms: number, read: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  let value = await read();
  for (const deadline = Date.now() + ms; !check(value) && Date.now() < deadline; value = await read()) await sleep(200);
  return value;
}

const smtp = (port: number) => nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, connectionTimeout: 2_000, socketTimeout: 5_000 });

t.test('two edges: a burst across both with one killed mid-way, MX fallback, failover on send', async (t) => {
  const sink = await startSink();
  t.teardown(() => sink.close());
  const dns = await startLoopbackDns({ 'remote.test': { MX: [{ exchange: 'mx.remote.test', priority: 10 }] }, 'mx.remote.test': { A: ['127.0.0.1'] } });
  t.teardown(() => dns.close());
  const extra = ['--dns', dns.server, '--relay-port', String(sink.port)];
  const a = new EdgeUnderTest('a', await freePort(), await freePort(), extra);
  const b = new EdgeUnderTest('b', await freePort(), await freePort(), extra);
  await Promise.all([a.start(), b.start()]);
  t.teardown(() => {
    a.proc.proc.kill('SIGKILL');
    b.proc.proc.kill('SIGKILL');
  });

  const svc = await startSvc({ env: { SVC_TEST_OUTBOX_RETRY_MS: '300' } });
  t.teardown(() => svc.stop());
  const owner = { token: svc.ownerToken };
  const put = await api<TransportView>(svc.url, 'PUT', '/v0/owner/transport', { ...owner, body: { edges: [{ url: a.url, token: a.token }, { url: b.url, token: b.token }] } });
  t.equal(put.status, 200, put.text);
  t.same(
    put.body.edges.map((e) => [e.url, e.token_set]),
    [
      [a.url, true],
      [b.url, true],
    ],
    'both edges listed in order',
  );
  t.equal(put.body.edge?.url, a.url, 'the single-edge field is the first edge');
  const inbox = (await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { ...owner, body: { username: 'burst', domain: DOMAIN } })).body.inbox_id;

  /** A sending MTA with two MX hosts: the preferred one first, the other when it fails; retries (bounded) until accepted. */
  async function deliver(id: string, first: EdgeUnderTest, second: EdgeUnderTest): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; ; attempt++) {
      for (const edge of [first, second]) {
        try {
          await smtp(edge.smtpPort).sendMail({ from: 'peer@sender.test', to: inbox, subject: `burst ${id}`, text: 'x', messageId: `<${id}@sender.test>` });
          return;
        } catch (err) {
          if (Date.now() > deadline) throw err;
        }
      }
      await sleep(100 + attempt * 50);
    }
  }
  // Routing is pushed to both edges: each accepts mail for the inbox.
  await Promise.all([deliver('warm-a', a, a), deliver('warm-b', b, b)]);

  await t.test('500 messages split across both edges, one killed and restarted mid-burst: all 500 exactly once', async (t) => {
    let sent = 0;
    const killed = (async () => {
      while (sent < BURST / 2) await sleep(20);
      await a.kill();
      t.comment(`edge a killed after ${sent} accepted`);
      await sleep(1_500);
      await a.start();
      t.comment(`edge a restarted after ${sent} accepted`);
    })();
    const ids = Array.from({ length: BURST }, (_, i) => `burst-${i}`);
    // Eight senders at once, half preferring each edge.
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = next++; i < BURST; i = next++) {
          await (i % 2 === 0 ? deliver(ids[i], a, b) : deliver(ids[i], b, a));
          sent++;
        }
      }),
    );
    await killed;
    const wanted = ['warm-a', 'warm-b', ...ids].map((id) => `<${id}@sender.test>`).sort();
    const stored = await until(
      90_000,
      async () => (await storedIds(svc, inbox)).sort(),
      (v) => v.length >= wanted.length,
    );
    t.equal(stored.length, wanted.length, `${stored.length} messages stored`);
    t.equal(new Set(stored).size, stored.length, 'no Message-ID twice');
    t.same(stored, wanted, 'every message of the burst stored exactly once');
    const left = await until(
      30_000,
      async () => [...a.buffered(), ...b.buffered()],
      (v) => v.length === 0,
    );
    t.same(left, [], 'both edge buffers are empty: every object acknowledged at its own edge');
  });

  await t.test('the same message at both edges (MX fallback redelivery): committed once, acknowledged at both', async (t) => {
    const raw = ['From: Peer <peer@sender.test>', `To: ${inbox}`, 'Subject: twice', 'Message-ID: <twice@sender.test>', 'Date: Thu, 02 Jan 2025 03:04:05 +0000', '', 'the same bytes through both MX hosts', ''].join('\r\n');
    await smtp(a.smtpPort).sendMail({ envelope: { from: 'peer@sender.test', to: [inbox] }, raw });
    await smtp(b.smtpPort).sendMail({ envelope: { from: 'peer@sender.test', to: [inbox] }, raw });
    const left = await until(
      30_000,
      async () => [...a.buffered(), ...b.buffered()],
      (v) => v.length === 0,
    );
    t.same(left, [], 'both copies acknowledged (deleted) at their edges');
    const twice = (await storedIds(svc, inbox)).filter((id) => id === '<twice@sender.test>');
    t.equal(twice.length, 1, 'stored once');
  });

  await t.test('a send with the first edge stopped leaves through the second, once', async (t) => {
    await a.kill();
    const res = await api<{ message_id: string }>(svc.url, 'POST', `/v0/inboxes/${enc(inbox)}/messages/send`, { ...owner, body: { to: 'r@remote.test', subject: 'failover', text: 'x' } });
    t.equal(res.status, 200, res.text);
    const copies = () => sink.messages.filter((m) => m.raw.toString().includes(res.body.message_id));
    await until(
      30_000,
      async () => copies().length,
      (n) => n >= 1,
    );
    t.equal(copies().length, 1, 'delivered through edge b');
    const view = await until(
      10_000,
      async () => (await api<TransportView>(svc.url, 'GET', '/v0/owner/transport', owner)).body,
      (v) => v.edges[0].health.consecutive_failures > 0,
    );
    t.equal(view.edges[0].health.healthy, false, 'edge a shows as unhealthy');
    t.ok(view.edges[0].health.last_error, `with its last error (${view.edges[0].health.last_error})`);
    t.equal(view.edges[1].health.healthy, true, 'edge b shows as healthy');
    t.ok(view.edges[1].health.last_success_at, 'with its last success');
    // Edge a comes back: the message is not sent again through it.
    await a.start();
    await until(
      15_000,
      async () => (await api<TransportView>(svc.url, 'GET', '/v0/owner/transport', owner)).body.edges[0].health.healthy,
      (healthy) => healthy,
    );
    const state = await api<{ send_status: string }>(svc.url, 'GET', `/v0/inboxes/${enc(inbox)}/messages/${enc(res.body.message_id)}`, owner);
    t.ok(['sent', 'delivered'].includes(state.body.send_status), `send_status ${state.body.send_status}`);
    await sleep(1_000);
    t.equal(copies().length, 1, 'still exactly one copy at the recipient');
  });

  await t.test('the single edge form still works and reads back as a list of one', async (t) => {
    const put = await api<TransportView>(svc.url, 'PUT', '/v0/owner/transport', { ...owner, body: { edge: { url: b.url, token: b.token } } });
    t.equal(put.status, 200, put.text);
    t.same(
      put.body.edges.map((e) => e.url),
      [b.url],
    );
    t.equal(put.body.edge?.url, b.url);
    const get = await api<TransportView>(svc.url, 'GET', '/v0/owner/transport', owner);
    t.same(
      get.body.edges.map((e) => e.url),
      [b.url],
      'GET shows it in edges',
    );
    await smtp(b.smtpPort).sendMail({ from: 'peer@sender.test', to: inbox, subject: 'single', text: 'x', messageId: '<single@sender.test>' });
    const stored = await until(
      30_000,
      () => storedIds(svc, inbox),
      (v) => v.includes('<single@sender.test>'),
    );
    t.ok(stored.includes('<single@sender.test>'), 'mail through the one edge arrives');
  });
});

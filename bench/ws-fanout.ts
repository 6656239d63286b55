/**
 * WebSocket fan-out benchmark: CLIENTS (default 1,000) clients subscribed through `GET /v0/ws`
 * with one API key (draft_read, scoped to the inbox), and events injected through the REST API:
 * `POST /v0/inboxes/{inbox}/drafts` commits a draft and its `draft.created` event in one
 * transaction (label edits emit no event, spec §6.2 rule 6). Latency runs from the event's commit —
 * the millisecond inside its `evt_<uuidv7>` id, stamped in the committing transaction — to each
 * client's receipt of the frame.
 *
 * Two phases on each side:
 * - paced: EVENTS events at RATE per second (latency p50/p99 at a steady load);
 * - burst: BURST events posted by BURST_CONCURRENCY callers as fast as they are answered
 *   (frames delivered per second, all clients together).
 * Baseline: a plain `ws` server in its own process broadcasting the same-sized frame to every
 * client from an HTTP POST handler, driven by the same injector and measured by the same clients.
 * Clients live in this process for both sides. Knobs: BENCH_WS_CLIENTS, BENCH_WS_EVENTS,
 * BENCH_WS_RATE, BENCH_WS_BURST.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { callJson, ownerToken, percentile, round, rssMiB, spawnUntil, startSvc, root, type Child, type Metric } from './util.js';

export const CLIENTS = Number(process.env.BENCH_WS_CLIENTS ?? 1000);
export const EVENTS = Number(process.env.BENCH_WS_EVENTS ?? 200);
export const RATE = Number(process.env.BENCH_WS_RATE ?? 20);
export const BURST = Number(process.env.BENCH_WS_BURST ?? 200);
export const BURST_CONCURRENCY = 8;
/** Clients connect this many at a time, so the listen backlog never overflows. */
const CONNECT_BATCH = 100;
const PHASE_TIMEOUT_MS = 60_000;

/** The millisecond a uuidv7 (inside `evt_…`) was made: its first 48 bits. */
export function eventMs(eventId: string): number {
  return parseInt(eventId.slice(4, 17).replace('-', ''), 16);
}

interface Fleet {
  sockets: WebSocket[];
  /** Latencies (ms) of the current phase, and how many frames arrived. */
  latencies: number[];
  received: number;
  lastAt: number;
  closedEarly: number;
  close(): Promise<void>;
}

/** Opens `count` clients, subscribes each to draft.created, resolves when all are subscribed. */
async function connectFleet(url: string, headers: Record<string, string>): Promise<Fleet> {
  const fleet: Fleet = { sockets: [], latencies: [], received: 0, lastAt: 0, closedEarly: 0, close: async () => {} };
  let closing = false;
  const open = (): Promise<WebSocket> =>
    new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers, perMessageDeflate: false });
      ws.on('error', reject);
      ws.on('open', () => ws.send(JSON.stringify({ type: 'subscribe', event_types: ['draft.created'] })));
      ws.on('close', () => !closing && fleet.closedEarly++);
      ws.on('message', (data) => {
        const now = Date.now();
        const frame = JSON.parse(String(data)) as { type: string; event_id?: string };
        if (frame.type === 'event' && frame.event_id) {
          fleet.latencies.push(now - eventMs(frame.event_id));
          fleet.received++;
          fleet.lastAt = now;
        } else if (frame.type === 'ping') ws.send('{"type":"pong"}');
        else if (frame.type === 'subscribed') resolve(ws);
      });
    });
  for (let i = 0; i < CLIENTS; i += CONNECT_BATCH) {
    fleet.sockets.push(...(await Promise.all(Array.from({ length: Math.min(CONNECT_BATCH, CLIENTS - i) }, open))));
  }
  fleet.close = async () => {
    closing = true;
    await Promise.all(fleet.sockets.map((ws) => new Promise<void>((r) => (ws.readyState === WebSocket.CLOSED ? r() : (ws.once('close', () => r()), ws.terminate())))));
  };
  return fleet;
}

/** Runs one phase: `inject` is called `count` times; resolves when every client has every frame. */
async function phase(fleet: Fleet, count: number, schedule: 'paced' | 'burst', inject: (i: number) => Promise<void>) {
  fleet.latencies = [];
  fleet.received = 0;
  const expected = count * fleet.sockets.length;
  const t0 = Date.now();
  if (schedule === 'paced') {
    const calls: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      calls.push(inject(i));
    }
    await Promise.all(calls);
  } else {
    let next = 0;
    await Promise.all(Array.from({ length: BURST_CONCURRENCY }, async () => {
      while (next < count) await inject(next++);
    }));
  }
  const until = Date.now() + PHASE_TIMEOUT_MS;
  while (fleet.received < expected && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  return {
    deliveries_per_s: round(fleet.received / (Math.max(fleet.lastAt, t0 + 1) - t0) * 1000, 0),
    p50_ms: round(percentile(fleet.latencies, 50), 1),
    p99_ms: round(percentile(fleet.latencies, 99), 1),
    missing: expected - fleet.received,
  };
}

/** The baseline server: `ws` on a plain node:http server, broadcasting each POSTed frame. */
async function startBaseline(): Promise<Child> {
  const file = path.join(os.tmpdir(), `svc-bench-ws-${process.pid}-${Date.now()}.mjs`);
  fs.writeFileSync(
    file,
    `import http from 'node:http';
import { randomBytes } from 'node:crypto';
import WebSocket from '${path.join(root, 'node_modules', 'ws', 'index.js')}';
// The same id form as svc's events: evt_ + a uuidv7 whose first 48 bits are the millisecond.
const id = () => { const b = randomBytes(16); b.writeUIntBE(Date.now(), 0, 6); const h = b.toString('hex'); return 'evt_' + h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20); };
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const frame = JSON.stringify({ type: 'event', event_type: 'draft.created', event_id: id(), ...JSON.parse(Buffer.concat(chunks).toString()) });
    for (const client of wss.clients) client.send(frame);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
const wss = new WebSocket.Server({ server, path: '/v0/ws', perMessageDeflate: false });
wss.on('connection', (ws) => ws.on('message', (m) => {
  const f = JSON.parse(String(m));
  if (f.type === 'subscribe') ws.send(JSON.stringify({ type: 'subscribed', event_types: f.event_types }));
}));
server.listen(0, '127.0.0.1', () => console.log('ready http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => { for (const c of wss.clients) c.terminate(); server.close(() => process.exit(0)); });`,
  );
  const child = await spawnUntil([file], (l) => (l.startsWith('ready ') ? l.slice(6) : null));
  return { ...child, stop: async () => { await child.stop(); fs.rmSync(file, { force: true }); } };
}

interface Side {
  paced: Awaited<ReturnType<typeof phase>>;
  burst: Awaited<ReturnType<typeof phase>>;
  connect_ms: number;
  rss_connected_mib: number | null;
  closed_early: number;
}

async function measureSide(child: Child, wsHeaders: Record<string, string>, inject: (i: number) => Promise<void>): Promise<Side> {
  const c0 = Date.now();
  const fleet = await connectFleet(child.url.replace(/^http/, 'ws') + '/v0/ws', wsHeaders);
  const connect_ms = Date.now() - c0;
  const rss = rssMiB(child.proc.pid);
  const paced = await phase(fleet, EVENTS, 'paced', inject);
  const burst = await phase(fleet, BURST, 'burst', (i) => inject(EVENTS + i));
  const closed_early = fleet.closedEarly;
  await fleet.close();
  return { paced, burst, connect_ms, rss_connected_mib: rss === null ? null : round(rss, 1), closed_early };
}

export async function benchWsFanout(): Promise<Metric[]> {
  // The baseline's frame carries the same payload shape as svc's draft.created event.
  const baseline = await startBaseline();
  const draftPayload = (i: number) => ({ draft: { inbox_id: 'bench@fanout.test', draft_id: `0190a0b0-0000-7000-8000-${String(i).padStart(12, '0')}`, timestamp: new Date().toISOString() } });
  const base = await measureSide(baseline, {}, async (i) => {
    const res = await fetch(`${baseline.url}/emit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(draftPayload(i)) });
    await res.arrayBuffer();
  });
  await baseline.stop();

  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-ws-')), 'home');
  const svc = await startSvc(home, true);
  const token = ownerToken(home);
  const inbox = (await callJson(svc.url, token, 'POST', '/v0/inboxes', { username: 'bench', domain: 'fanout.test' })).inbox_id as string;
  const key = (await callJson(svc.url, token, 'POST', '/v0/api-keys', { name: 'ws-bench', permissions: ['draft_read'], send_policy: 'read_only', inbox_id: inbox })).api_key as string;
  const drafts = `/v0/inboxes/${encodeURIComponent(inbox)}/drafts`;
  const ours = await measureSide(svc, { authorization: `Bearer ${key}` }, async (i) => {
    await callJson(svc.url, token, 'POST', drafts, { to: ['someone@example.test'], subject: `Fan-out ${i}`, text: 'Hello from the fan-out benchmark.' });
  });
  await svc.stop();
  fs.rmSync(path.dirname(home), { recursive: true, force: true });

  console.log(JSON.stringify({ bench: 'ws-fanout', clients: CLIENTS, events: EVENTS, rate: RATE, burst: BURST, svc: ours, baseline_plain_ws: base }));
  return [
    { key: 'paced_p50_ms', label: `WS fan-out p50, commit → each of ${CLIENTS} clients, ${RATE} events/s`, unit: 'ms', better: 'lower', svc: ours.paced.p50_ms, baseline: base.paced.p50_ms },
    { key: 'paced_p99_ms', label: `WS fan-out p99, ${RATE} events/s`, unit: 'ms', better: 'lower', svc: ours.paced.p99_ms, baseline: base.paced.p99_ms, chart: 'latency' },
    { key: 'burst_deliveries_per_s', label: `WS fan-out burst: frames delivered (${BURST} events × ${CLIENTS} clients)`, unit: 'frames/s', better: 'higher', svc: ours.burst.deliveries_per_s, baseline: base.burst.deliveries_per_s, chart: 'throughput' },
    { key: 'burst_p99_ms', label: 'WS fan-out burst p99', unit: 'ms', better: 'lower', svc: ours.burst.p99_ms, baseline: base.burst.p99_ms },
    { key: 'connect_ms', label: `Connect and subscribe ${CLIENTS} clients`, unit: 'ms', better: 'lower', svc: ours.connect_ms, baseline: base.connect_ms },
    { key: 'rss_connected_mib', label: `RSS with ${CLIENTS} clients connected`, unit: 'MiB', better: 'lower', svc: ours.rss_connected_mib, baseline: base.rss_connected_mib },
    { key: 'missing', label: 'Frames missing (all phases) or clients closed early', unit: '', better: 'lower', svc: ours.paced.missing + ours.burst.missing + ours.closed_early, baseline: base.paced.missing + base.burst.missing + base.closed_early },
  ];
}

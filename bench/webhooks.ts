/**
 * Webhook fan-out benchmark (issue 6): 10,000 events to 5 owner-created webhooks on 5 loopback
 * HTTP receivers, as delivered events/s (per webhook and total POSTs/s) and p50/p99 latency from
 * the event's created_at to the receiver; beside the same 10,000 × 5 POSTs sent straight to the
 * same receivers by a plain node:http loop with the same concurrency (one in-order sender per
 * receiver) in the same run. Events are appended to the log from this process in batches, so
 * the service only learns of them at its one-second poll (spec §8), which is part of the latency.
 * Knobs: BENCH_WEBHOOK_EVENTS (default 10000), BENCH_WEBHOOK_RECEIVERS (default 5).
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { unlockHome } from '../src/keys/unlock.js';
import { openDatabase } from '../src/db/open.js';
import { appendEvent } from '../src/events/log.js';
import { percentile, round, startSvc, type Metric } from './util.js';

const EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 10_000);
const RECEIVERS = Number(process.env.BENCH_WEBHOOK_RECEIVERS ?? 5);
const SEED_BATCH = 1_000;
const TEXT = 'Hello from the webhook benchmark.\n'.repeat(16);

interface Receiver {
  url: string;
  /** Arrival time (epoch ms) per event id. */
  arrived: Map<string, number>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const arrived = new Map<string, number>();
  const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      if (typeof id === 'string') arrived.set(id, Date.now());
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function waitAll(receivers: Receiver[], count: number, ms = 600_000): Promise<void> {
  const until = Date.now() + ms;
  while (receivers.some((r) => r.arrived.size < count)) {
    if (Date.now() > until) throw new Error(`webhook bench: ${receivers.map((r) => r.arrived.size).join('/')} of ${count} arrived`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function figures(receivers: Receiver[], readyAt: Map<string, number>, t0: number) {
  const latencies: number[] = [];
  let last = 0;
  for (const r of receivers) {
    for (const [id, at] of r.arrived) {
      const ready = readyAt.get(id);
      if (ready === undefined) continue;
      latencies.push(at - ready);
      last = Math.max(last, at);
    }
  }
  const seconds = (last - t0) / 1000;
  return {
    events_per_s: round(readyAt.size / seconds, 1),
    posts_per_s: round(latencies.length / seconds, 1),
    p50_ms: round(percentile(latencies, 50), 1),
    p99_ms: round(percentile(latencies, 99), 1),
  };
}

function eventBody(i: number, id: string): string {
  return JSON.stringify({ type: 'event', event_type: 'message.received', event_id: id, message: { inbox_id: 'bench@hooks.example', message_id: `<b${i}@bench.example>`, subject: `Event ${i}`, text: TEXT } });
}

/** The same POSTs straight from a plain node:http keep-alive loop: one in-order sender per receiver. */
async function baseline(receivers: Receiver[]) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: RECEIVERS });
  const ids = Array.from({ length: EVENTS }, (_, i) => `evt_baseline_${i}`);
  const bodies = ids.map((id, i) => eventBody(i, id));
  const t0 = Date.now();
  const readyAt = new Map(ids.map((id) => [id, t0]));
  await Promise.all(
    receivers.map(async (r) => {
      for (let i = 0; i < EVENTS; i++) {
        await new Promise<void>((resolve, reject) => {
          const req = http.request(r.url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'webhook-id': ids[i] } }, (res) => {
            res.resume();
            res.on('end', () => resolve());
          });
          req.on('error', reject);
          req.end(bodies[i]);
        });
      }
    }),
  );
  await waitAll(receivers, EVENTS);
  agent.destroy();
  return figures(receivers, readyAt, t0);
}

async function viaSvc(receivers: Receiver[]) {
  const home = path.join(fs.mkdtempSync('/tmp/svc-bench-webhooks-'), 'home');
  const svc = await startSvc(home, true);
  const token = (JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string }).owner_token;
  const call = async (method: string, p: string, body: unknown) => {
    const res = await fetch(svc.url + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Record<string, unknown>;
  };
  const inbox = (await call('POST', '/v0/inboxes', { username: 'bench', domain: 'hooks.example' })).inbox_id as string;
  for (const r of receivers) await call('POST', '/v0/webhooks', { url: r.url, event_types: ['message.received'] });

  const { dbKey } = unlockHome(home, false);
  const db = openDatabase(path.join(home, 'svc.db'), dbKey, { migrate: false });
  dbKey.fill(0);
  const readyAt = new Map<string, number>();
  const t0 = Date.now();
  for (let start = 0; start < EVENTS; start += SEED_BATCH) {
    db.transaction(() => {
      for (let i = start; i < Math.min(EVENTS, start + SEED_BATCH); i++) {
        const { eventId } = appendEvent(db, {
          eventType: 'message.received',
          inboxId: inbox,
          payloadKey: 'message',
          payload: { inbox_id: inbox, message_id: `<b${i}@bench.example>`, subject: `Event ${i}`, text: TEXT },
        });
        readyAt.set(eventId, 0);
      }
    })();
  }
  for (const row of db.prepare('SELECT event_id, created_at FROM events').iterate() as Iterable<{ event_id: string; created_at: string }>) {
    if (readyAt.has(row.event_id)) readyAt.set(row.event_id, Date.parse(row.created_at));
  }
  const seedMs = Date.now() - t0;
  db.close();
  await waitAll(receivers, EVENTS);
  const result = { ...figures(receivers, readyAt, t0), seed_ms: seedMs };
  await svc.stop();
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
  return result;
}

export async function benchWebhooks(): Promise<Metric[]> {
  const baseReceivers = await Promise.all(Array.from({ length: RECEIVERS }, startReceiver));
  const base = await baseline(baseReceivers);
  await Promise.all(baseReceivers.map((r) => r.close()));
  const svcReceivers = await Promise.all(Array.from({ length: RECEIVERS }, startReceiver));
  const svc = await viaSvc(svcReceivers);
  await Promise.all(svcReceivers.map((r) => r.close()));
  console.log(
    JSON.stringify({
      bench: 'webhooks',
      events: EVENTS,
      receivers: RECEIVERS,
      svc,
      baseline_plain_http_loop: base,
      ratio_events_per_s: round(svc.events_per_s / base.events_per_s, 3),
    }),
  );
  return [
    { key: 'events_per_s', label: `Webhook fan-out: events delivered to all ${RECEIVERS} receivers`, unit: 'events/s', better: 'higher', svc: svc.events_per_s, baseline: base.events_per_s, chart: 'throughput' },
    { key: 'posts_per_s', label: 'Webhook POSTs', unit: 'POST/s', better: 'higher', svc: svc.posts_per_s, baseline: base.posts_per_s },
    { key: 'p50_ms', label: 'Webhook latency p50 (event created → received)', unit: 'ms', better: 'lower', svc: svc.p50_ms, baseline: base.p50_ms },
    { key: 'p99_ms', label: 'Webhook latency p99', unit: 'ms', better: 'lower', svc: svc.p99_ms, baseline: base.p99_ms, chart: 'latency' },
  ];
}

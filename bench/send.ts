/**
 * Send benchmark (issue 5): `POST /messages/send` → accepted by an SMTP sink (the configured smart
 * host), as msg/s and p50/p99 latency from request start to the sink's 250, beside nodemailer
 * sending the same messages straight to the same sink with the same concurrency in the same run.
 * Knobs: BENCH_SEND_MESSAGES (default 1000), BENCH_SEND_CONCURRENCY (default 16).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { cpuSnapshot, percentile, round, startSvc, type Metric } from './util.js';

const MESSAGES = Number(process.env.BENCH_SEND_MESSAGES ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_SEND_CONCURRENCY ?? 16);
const BODY = 'Hello from the send benchmark.\n'.repeat(64);

interface Sink {
  port: number;
  accepted: Map<string, number>;
  close(): Promise<void>;
}

async function startSink(): Promise<Sink> {
  const accepted = new Map<string, number>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const id = /^Message-ID:\s*(<[^>]+>)/im.exec(Buffer.concat(chunks).toString('latin1'))?.[1];
        if (id) accepted.set(id, performance.now());
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { port: (server.server.address() as AddressInfo).port, accepted, close: () => new Promise((r) => server.close(() => r())) };
}

async function pool<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

async function waitAll(sink: Sink, ids: string[], ms = 120_000): Promise<void> {
  const until = Date.now() + ms;
  while (ids.some((id) => !sink.accepted.has(id))) {
    if (Date.now() > until) throw new Error(`send bench: ${ids.filter((id) => sink.accepted.has(id)).length}/${ids.length} arrived`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function figures(started: Map<string, number>, sink: Sink, t0: number) {
  const latencies = [...started].map(([id, at]) => sink.accepted.get(id)! - at);
  const last = Math.max(...[...started.keys()].map((id) => sink.accepted.get(id)!));
  return { msgs_per_s: round((started.size / (last - t0)) * 1000, 1), p50_ms: round(percentile(latencies, 50), 1), p99_ms: round(percentile(latencies, 99), 1) };
}

async function baseline(sink: Sink) {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: sink.port, pool: true, maxConnections: CONCURRENCY, maxMessages: Infinity });
  const started = new Map<string, number>();
  const t0 = performance.now();
  await pool(MESSAGES, CONCURRENCY, async (i) => {
    const messageId = `<baseline-${i}-${Date.now()}@bench.example>`;
    started.set(messageId, performance.now());
    await transport.sendMail({ from: 'bench@bench.example', to: 'sink@remote.example', subject: `Baseline ${i}`, text: BODY, messageId });
  });
  await waitAll(sink, [...started.keys()]);
  transport.close();
  return figures(started, sink, t0);
}

async function viaSvc(sink: Sink) {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-send-')), 'home');
  const svc = await startSvc(home, true);
  const { owner_token: token } = JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string };
  const call = async (method: string, p: string, body: unknown) => {
    const res = await fetch(svc.url + p, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, string>;
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  await call('PUT', '/v0/owner/transport', { smtp: { host: '127.0.0.1', port: sink.port } });
  const inbox = (await call('POST', '/v0/inboxes', { username: 'bench', domain: 'bench.example' })).inbox_id;
  // Warm-up: the first send creates the domain's DKIM key and starts the pool threads.
  const warm = await call('POST', `/v0/inboxes/${encodeURIComponent(inbox)}/messages/send`, { to: 'sink@remote.example', subject: 'warm-up', text: BODY });
  await waitAll(sink, [warm.message_id]);

  const started = new Map<string, number>();
  const cpuBefore = cpuSnapshot(svc.proc.pid);
  const t0 = performance.now();
  await pool(MESSAGES, CONCURRENCY, async (i) => {
    const at = performance.now();
    const { message_id } = await call('POST', `/v0/inboxes/${encodeURIComponent(inbox)}/messages/send`, { to: 'sink@remote.example', subject: `Send ${i}`, text: BODY });
    started.set(message_id, at);
  });
  const queuedMs = performance.now() - t0;
  await waitAll(sink, [...started.keys()]);
  const cpu = cpuSnapshot(svc.proc.pid).since(cpuBefore);
  const result = {
    ...figures(started, sink, t0),
    api_queued_msgs_per_s: round((MESSAGES / queuedMs) * 1000, 1),
    svc_cpu_ms_per_msg: cpu.processMs === null ? null : round(cpu.processMs / MESSAGES, 2),
    host_cpu_busy_pct: round(cpu.hostBusyPct, 0),
  };
  await svc.stop();
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
  return result;
}

export async function benchSend(): Promise<Metric[]> {
  const sink = await startSink();
  const base = await baseline(sink);
  const svc = await viaSvc(sink);
  await sink.close();
  console.log(
    JSON.stringify({
      bench: 'send',
      messages: MESSAGES,
      concurrency: CONCURRENCY,
      svc,
      baseline_nodemailer_direct: base,
      ratio_msgs_per_s: round(svc.msgs_per_s / base.msgs_per_s, 3),
      target: { msgs_per_s: 400 },
    }),
  );
  return [
    { key: 'msgs_per_s', label: 'Send: API → accepted by the sink', unit: 'msg/s', better: 'higher', svc: svc.msgs_per_s, baseline: base.msgs_per_s, chart: 'throughput', target: [{ op: '>=', value: 200, issue: 5 }, { op: '>=', value: 400, issue: 19 }] },
    { key: 'api_queued_msgs_per_s', label: 'Send: API answers (queued)', unit: 'msg/s', better: 'higher', svc: svc.api_queued_msgs_per_s },
    { key: 'p50_ms', label: 'Send latency p50 (request → sink 250)', unit: 'ms', better: 'lower', svc: svc.p50_ms, baseline: base.p50_ms, chart: 'latency' },
    { key: 'p99_ms', label: 'Send latency p99', unit: 'ms', better: 'lower', svc: svc.p99_ms, baseline: base.p99_ms, target: { op: '<=', value: 200, issue: 19 } },
    { key: 'cpu_ms_per_msg', label: 'CPU per message (svc process, all threads)', unit: 'ms', better: 'lower', svc: svc.svc_cpu_ms_per_msg },
    { key: 'host_cpu_busy_pct', label: 'Host CPU busy during the svc sends', unit: '%', better: 'lower', svc: svc.host_cpu_busy_pct },
  ];
}

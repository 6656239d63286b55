/**
 * Waiting for the next message (issue 20 §1, docs/waiting.md): WAITERS requests (default 1,000)
 * wait on one inbox of `svc serve --local-edge` with one API key, each with the round's subject;
 * then one message with that subject arrives over SMTP. Latency runs from the message's commit (the
 * millisecond in the uuidv7 `event_id` of its `message.received` event, stamped in the committing
 * transaction) to each waiter's answer. Baseline: a plain node:http server in its own process
 * holding the same number of long-polls and answering them all with one same-sized JSON body when
 * POSTed, measured from the POST (the same clients and agent). Also measured: the service's CPU while the
 * waiters wait with nothing arriving (a wait should cost nothing), and its RSS with them waiting.
 * Knobs: BENCH_WAITERS, BENCH_WAIT_ROUNDS.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import WebSocket from 'ws';
import { emptyDns, serveLocalEdge } from './ingest.js';
import { eventMs } from './ws-fanout.js';
import { callJson, cpuSnapshot, percentile, round, rssMiB, spawnUntil, type Metric } from './util.js';

export const WAITERS = Number(process.env.BENCH_WAITERS ?? 1000);
export const ROUNDS = Number(process.env.BENCH_WAIT_ROUNDS ?? 5);
const INBOX = 'bench@waits.test';
/** Requests are started this many at a time, so the listen backlog never overflows. */
const START_BATCH = 100;
const IDLE_MS = 5_000;

function waitOnce(agent: http.Agent, url: URL, token: string): Promise<{ status: number; at: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, at: Date.now(), body }));
    });
    req.on('error', reject);
  });
}

/** The plain long-poll server: GET /wait holds the request; POST /emit answers every held one with its body. */
async function startBaseline() {
  const file = path.join(os.tmpdir(), `svc-bench-waits-${process.pid}-${Date.now()}.mjs`);
  fs.writeFileSync(
    file,
    `import http from 'node:http';
const held = new Set();
const server = http.createServer((req, res) => {
  if (req.method === 'GET') { held.add(res); res.on('close', () => held.delete(res)); req.resume(); return; }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    for (const r of held) r.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }).end(body);
    held.clear();
    res.writeHead(200).end('{}');
  });
});
server.keepAliveTimeout = 120000;
server.listen(0, '127.0.0.1', () => console.log('ready http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => { server.closeAllConnections(); server.close(() => process.exit(0)); });`,
  );
  const child = await spawnUntil([file], (l) => (l.startsWith('ready ') ? l.slice(6) : null));
  return { ...child, stop: async () => { await child.stop(); fs.rmSync(file, { force: true }); } };
}

/** The baseline's latencies: WAITERS long-polls answered by one POST carrying `body`, ROUNDS times, from the POST. */
async function measureBaseline(body: string): Promise<number[]> {
  const server = await startBaseline();
  const agent = new http.Agent({ keepAlive: true, maxSockets: WAITERS + 10 });
  const latencies: number[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const url = new URL(`${server.url}/wait`);
      const waits: Promise<{ status: number; at: number; body: string }>[] = [];
      for (let i = 0; i < WAITERS; i += START_BATCH) {
        for (let j = i; j < Math.min(WAITERS, i + START_BATCH); j++) waits.push(waitOnce(agent, url, 'none'));
        await new Promise((res) => setTimeout(res, 50));
      }
      await new Promise((res) => setTimeout(res, 1_000));
      const sent = Date.now();
      await fetch(`${server.url}/emit`, { method: 'POST', body });
      for (const w of await Promise.all(waits)) latencies.push(w.at - sent);
    }
  } finally {
    agent.destroy();
    await server.stop();
  }
  return latencies;
}

export async function benchWaits(): Promise<Metric[]> {
  const dns = await emptyDns();
  const { svc, home, smtpPort, token: owner } = await serveLocalEdge('svc-bench-waits-', dns.server);
  const agent = new http.Agent({ keepAlive: true, maxSockets: WAITERS + 10 });
  try {
    await callJson(svc.url, owner, 'POST', '/v0/inboxes', { username: 'bench', domain: 'waits.test' });
    const key = (await callJson(svc.url, owner, 'POST', '/v0/api-keys', { name: 'waiter', inbox_ids: [INBOX], permissions: ['message_read'] })).api_key as string;
    const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
    for (let i = 0; i < 100; i++) {
      try {
        await smtp.sendMail({ from: 'load@sender.test', to: INBOX, subject: 'warm-up', text: 'hi' });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const committedAt = new Map<string, number>();
      const ws = new WebSocket(svc.url.replace('http', 'ws') + '/v0/ws', { headers: { authorization: `Bearer ${owner}` } });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] }));
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { event_id?: string; message?: { subject?: string } };
      const subject = frame.message?.subject;
      if (!subject || !frame.event_id) return;
      committedAt.set(subject, eventMs(frame.event_id));
    });

    const latencies: number[] = [];
    let sample = '';
    let answered = 0;
    let idleCpuMsPerS: number | null = null;
    let rssBefore: number | null = null;
    let rssWaiting: number | null = null;
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      const subject = `round ${round_}`;
      const url = new URL(`${svc.url}/v0/inboxes/${encodeURIComponent(INBOX)}/messages/wait?subject=${encodeURIComponent(subject)}&timeout=60`);
      if (round_ === 0) rssBefore = rssMiB(svc.proc.pid);
      const waits: Promise<{ status: number; at: number; body: string }>[] = [];
      for (let i = 0; i < WAITERS; i += START_BATCH) {
        for (let j = i; j < Math.min(WAITERS, i + START_BATCH); j++) waits.push(waitOnce(agent, url, key));
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 1_000));
      if (round_ === 0) {
        // Nothing arrives for a while: what do 1,000 waiting requests cost?
        const before = cpuSnapshot(svc.proc.pid);
        await new Promise((r) => setTimeout(r, IDLE_MS));
        const spent = cpuSnapshot(svc.proc.pid).since(before).processMs;
        idleCpuMsPerS = spent === null ? null : round(spent / (IDLE_MS / 1000), 1);
        rssWaiting = rssMiB(svc.proc.pid);
      }
      await smtp.sendMail({ from: 'noreply@service.test', to: INBOX, subject, text: 'Your code is 482913' });
      const results = await Promise.all(waits);
      for (let i = 0; i < 50 && !committedAt.has(subject); i++) await new Promise((r) => setTimeout(r, 100));
      const commit = committedAt.get(subject);
      if (commit === undefined) continue;
      for (const r of results) {
        if (r.status !== 200) continue;
        sample ||= r.body;
        answered++;
        latencies.push(r.at - commit);
      }
    }
    ws.close();
    smtp.close();
    await svc.stop();
    const baseline = await measureBaseline(sample || '{}');
    return [
      { key: 'answer_p50_ms', label: `Commit → answer, ${WAITERS.toLocaleString('en-US')} waiting requests (baseline: a plain long-poll server answering as many with the same body), p50`, unit: 'ms', better: 'lower', svc: round(percentile(latencies, 50), 1), baseline: round(percentile(baseline, 50), 1), chart: 'latency' },
      { key: 'answer_p99_ms', label: 'Commit → answer, p99', unit: 'ms', better: 'lower', svc: round(percentile(latencies, 99), 1), baseline: round(percentile(baseline, 99), 1) },
      { key: 'answered', label: `Waits answered with the message, of ${(WAITERS * ROUNDS).toLocaleString('en-US')}`, unit: '', better: 'higher', svc: answered },
      { key: 'idle_cpu_ms_per_s', label: `svc CPU while ${WAITERS.toLocaleString('en-US')} requests wait and no mail comes`, unit: 'ms/s', better: 'lower', svc: idleCpuMsPerS },
      { key: 'rss_waiting_mib', label: `RSS rise with ${WAITERS.toLocaleString('en-US')} requests waiting`, unit: 'MiB', better: 'lower', svc: rssBefore !== null && rssWaiting !== null ? round(rssWaiting - rssBefore, 1) : null },
    ];
  } finally {
    agent.destroy();
    await svc.stop();
    await dns.close();
    fs.rmSync(path.dirname(home), { recursive: true, force: true });
  }
}

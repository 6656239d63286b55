/**
 * Waiting for the next message (issue 20 §1, docs/waiting.md): WAITERS requests (default 1,000)
 * wait on one inbox of `svc serve --local-edge` with one API key, each with the round's subject;
 * then one message with that subject arrives over SMTP. Latency runs from the message's commit (the
 * millisecond in the uuidv7 `event_id` of its `message.received` event, stamped in the committing
 * transaction) to each waiter's answer. Baseline: the same event's delivery to one WebSocket client
 * subscribed to `message.received`, from the same commit. Also measured: the service's CPU while the
 * waiters wait with nothing arriving (a wait should cost nothing), and its RSS with them waiting.
 * Knobs: BENCH_WAITERS, BENCH_WAIT_ROUNDS.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import nodemailer from 'nodemailer';
import WebSocket from 'ws';
import { emptyDns, serveLocalEdge } from './ingest.js';
import { eventMs } from './ws-fanout.js';
import { callJson, cpuSnapshot, percentile, round, rssMiB, type Metric } from './util.js';

export const WAITERS = Number(process.env.BENCH_WAITERS ?? 1000);
export const ROUNDS = Number(process.env.BENCH_WAIT_ROUNDS ?? 5);
const INBOX = 'bench@waits.test';
/** Requests are started this many at a time, so the listen backlog never overflows. */
const START_BATCH = 100;
const IDLE_MS = 5_000;

function waitOnce(agent: http.Agent, url: URL, token: string): Promise<{ status: number; at: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, at: Date.now() }));
    });
    req.on('error', reject);
  });
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
    const streamedAt = new Map<string, number>();
    const ws = new WebSocket(svc.url.replace('http', 'ws') + '/v0/ws', { headers: { authorization: `Bearer ${owner}` } });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'] }));
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { event_id?: string; message?: { subject?: string } };
      const subject = frame.message?.subject;
      if (!subject || !frame.event_id) return;
      committedAt.set(subject, eventMs(frame.event_id));
      streamedAt.set(subject, Date.now());
    });

    const latencies: number[] = [];
    const baseline: number[] = [];
    let answered = 0;
    let idleCpuMsPerS: number | null = null;
    let rssBefore: number | null = null;
    let rssWaiting: number | null = null;
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      const subject = `round ${round_}`;
      const url = new URL(`${svc.url}/v0/inboxes/${encodeURIComponent(INBOX)}/messages/wait?subject=${encodeURIComponent(subject)}&timeout=60`);
      if (round_ === 0) rssBefore = rssMiB(svc.proc.pid);
      const waits: Promise<{ status: number; at: number }>[] = [];
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
      baseline.push(streamedAt.get(subject)! - commit);
      for (const r of results) {
        if (r.status !== 200) continue;
        answered++;
        latencies.push(r.at - commit);
      }
    }
    ws.close();
    smtp.close();
    return [
      { key: 'answer_p50_ms', label: `Commit → answer, ${WAITERS.toLocaleString('en-US')} waiting requests (baseline: the same event to one WebSocket client), p50`, unit: 'ms', better: 'lower', svc: round(percentile(latencies, 50), 1), baseline: round(percentile(baseline, 50), 1), chart: 'latency' },
      { key: 'answer_p99_ms', label: 'Commit → answer, p99 (baseline: WebSocket, p99 over the rounds)', unit: 'ms', better: 'lower', svc: round(percentile(latencies, 99), 1), baseline: round(percentile(baseline, 99), 1) },
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

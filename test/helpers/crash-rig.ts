/**
 * The rig of the kill -9 tests (reliability-crash, reliability-approval): an edge running in the
 * test process (as on a VPS, it survives the home), relaying to a real SMTP sink through loopback
 * DNS, and homes paired with it that the tests kill like a power cut.
 */
import type { Test } from 'tap';
import path from 'node:path';
import { Edge } from '../../src/edge/edge.js';
import { api, startSvc, tempDir, type RunningSvc } from './svc.js';
import { startLoopbackDns, type LoopbackDns } from './dns.js';
import { startSink, type Sink } from './sink.js';

export const CRASH_DOMAIN = 'crash.test';
const TOKEN = 'edge-test-token-reliability-0123456789';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface CrashRig {
  sink: Sink;
  edgeDir: string;
  smtpPort: number;
  /** A home paired with the edge, with one inbox on CRASH_DOMAIN; killed at the test's end. */
  pairedHome(t: Test, username: string): Promise<{ svc: RunningSvc; inbox: string }>;
  /** Copies at the sink per Message-ID (with brackets, as the API names messages). */
  sinkCopies(): Map<string, number>;
}

/** Starts the sink, DNS and edge for the file; they stop at its teardown. */
export async function startCrashRig(t: Test): Promise<CrashRig> {
  const sink = await startSink();
  const dns: LoopbackDns = await startLoopbackDns({ 'remote.test': { MX: [{ exchange: 'mx.remote.test', priority: 10 }] }, 'mx.remote.test': { A: ['127.0.0.1'] } });
  const edgeDir = path.join(tempDir('svc-edge-'), 'edge');
  const edge = new Edge({ dataDir: edgeDir, smtp: { host: '127.0.0.1', port: 0 }, api: { host: '127.0.0.1', port: 0 }, apiToken: TOKEN, hostname: 'mx.crash.test', resolver: dns.resolver, deliveryPort: sink.port });
  const bound = await edge.start();
  t.teardown(async () => {
    await edge.stop();
    await sink.close();
    await dns.close();
  });
  return {
    sink,
    edgeDir,
    smtpPort: bound.smtp.port,
    async pairedHome(t, username) {
      const svc = await startSvc();
      t.teardown(() => svc.stop('SIGKILL')); // a failed assertion must not leave it running
      const paired = await api(svc.url, 'PUT', '/v0/owner/transport', { token: svc.ownerToken, body: { edge: { url: bound.api.url, token: TOKEN } } });
      if (paired.status !== 200) throw new Error(paired.text);
      const created = await api<{ inbox_id: string }>(svc.url, 'POST', '/v0/inboxes', { token: svc.ownerToken, body: { username, domain: CRASH_DOMAIN } });
      if (created.status !== 200) throw new Error(created.text);
      return { svc, inbox: created.body.inbox_id };
    },
    sinkCopies() {
      const out = new Map<string, number>();
      for (const m of sink.messages) {
        const id = /^Message-ID:\s*(<[^>]+>)/im.exec(m.raw.toString())?.[1];
        if (id) out.set(id, (out.get(id) ?? 0) + 1);
      }
      return out;
    },
  };
}

/** SIGKILL after `ms`, like the power going out; resolves once the process is gone. */
export async function killAfter(svc: RunningSvc, ms: number): Promise<void> {
  await sleep(ms);
  svc.proc.kill('SIGKILL');
  await svc.exited;
}

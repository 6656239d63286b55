/**
 * Ingest benchmark (issue 4): sustained 10 KB messages over SMTP into `svc serve --local-edge`,
 * measured to the committed message's WebSocket event, beside an smtp-server that accepts and
 * discards, driven by the same client in the same run. Targets: ≥ 250 msg/s, p50 ≤ 250 ms.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import WebSocket from 'ws';
import { cpuSnapshot, ownerToken, percentile, profileFlags, round, spawnUntil, root } from './util.js';

const MESSAGES = Number(process.env.BENCH_INGEST_MESSAGES ?? 2000);
const CONNECTIONS = Number(process.env.BENCH_INGEST_CONNECTIONS ?? 8);
const BODY = 'x'.repeat(76).concat('\r\n').repeat(128); // ~10 KB
const INBOX = 'bench@ingest.test';

/**
 * A DNS server that answers every question with an empty NOERROR, so mail checks never wait on
 * the network. It runs in its own process: answered from this busy load-generating process, DNS
 * replies would queue behind the client's own work and be measured as edge latency.
 */
export async function emptyDns(): Promise<{ server: string; pid: number | undefined; close(): Promise<void> }> {
  const script = `import dns2 from '${path.join(root, 'node_modules', 'dns2', 'index.js')}';
const server = dns2.createServer({ udp: true, handle: (request, send) => send(dns2.Packet.createResponseFromRequest(request)) });
const a = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
console.log('ready 127.0.0.1:' + a.udp.port);`;
  const file = path.join(os.tmpdir(), `svc-bench-dns-${process.pid}.mjs`);
  fs.writeFileSync(file, script);
  const child = await spawnUntil([file], (l) => (l.startsWith('ready ') ? l.slice(6) : null));
  return { server: child.url, pid: child.proc.pid, close: async () => { await child.stop(); fs.rmSync(file, { force: true }); } };
}

/**
 * `svc serve --init --local-edge` in a fresh temp home, its mail checks answered by `dnsServer`:
 * the running service, its home, the built-in edge's SMTP port and the owner bearer.
 */
export async function serveLocalEdge(tmpPrefix: string, dnsServer: string, nodeFlags: string[] = [], env: NodeJS.ProcessEnv = process.env) {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix)), 'home');
  let smtpPort = 0;
  const svc = await spawnUntil([...nodeFlags, path.join(root, 'bin', 'svc'), 'serve', '--init', '--home', home, '--port', '0', '--local-edge', '--smtp-port', '0', '--edge-dns', dnsServer], (line) => {
    try {
      const data = JSON.parse(line) as { event?: string; url?: string; smtp?: string };
      if (data.event !== 'server.ready') return null;
      smtpPort = Number(data.smtp?.split(':')[1]);
      return data.url ?? null;
    } catch {
      return null;
    }
  }, env);
  return { svc, home, smtpPort, token: ownerToken(home) };
}

/** Sends MESSAGES mails with CONNECTIONS pooled connections; returns per-subject accept times. */
export async function blast(port: number): Promise<{ accepted: Map<string, number>; seconds: number }> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true, pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity });
  const accepted = new Map<string, number>();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS * 2 }, async () => {
      while (next < MESSAGES) {
        const subject = `bench ${next++}`;
        await transport.sendMail({ from: 'load@sender.test', to: INBOX, subject, text: BODY });
        accepted.set(subject, performance.now());
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  transport.close();
  return { accepted, seconds };
}

async function baseline(): Promise<number> {
  const server = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], logger: false, onData: (stream, _s, done) => { stream.resume(); stream.on('end', () => done()); } });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as { port: number }).port;
  const { seconds } = await blast(port);
  await new Promise<void>((r) => server.close(() => r()));
  return MESSAGES / seconds;
}

export async function benchIngest(): Promise<Record<string, number | string | null>> {
  const baselineRate = await baseline();
  const dns = await emptyDns();
  const { svc, home, smtpPort, token } = await serveLocalEdge('svc-bench-ingest-', dns.server, profileFlags());
  await fetch(`${svc.url}/v0/inboxes`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ username: 'bench', domain: 'ingest.test' }) });
  // Wait for the routing push: the edge answers 451 until it knows the address.
  for (let i = 0; i < 100; i++) {
    const probe = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
    try {
      await probe.sendMail({ from: 'load@sender.test', to: INBOX, subject: 'warm-up', text: 'hi' });
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  const committed = new Map<string, number>();
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  // The service closes a client that lets more than 1 MiB of events wait (docs/websocket.md); on a
  // loaded machine this process can fall that far behind, so it resumes after the last event it
  // read, as any client would, and counts each message's first event.
  let lastEventId: string | undefined;
  let finished = false;
  let ws!: WebSocket;
  const connect = async (): Promise<void> => {
    ws = new WebSocket(svc.url.replace('http', 'ws') + '/v0/ws', { headers: { authorization: `Bearer ${token}` } });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'subscribe', event_types: ['message.received'], ...(lastEventId ? { last_event_id: lastEventId } : {}) }));
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { event_type?: string; event_id?: string; message?: { subject?: string } };
      if (frame.event_id) lastEventId = frame.event_id;
      const subject = frame.message?.subject;
      if (frame.event_type === 'message.received' && subject?.startsWith('bench ') && !committed.has(subject)) {
        committed.set(subject, performance.now());
        if (committed.size === MESSAGES) resolveAll();
      }
    });
    ws.once('close', () => {
      if (!finished) void connect();
    });
  };
  await connect();
  await new Promise((r) => setTimeout(r, 300));
  const cpuBefore = cpuSnapshot(svc.proc.pid);
  const dnsBefore = cpuSnapshot(dns.pid);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const { accepted, seconds: acceptSeconds } = await blast(smtpPort);
  await Promise.race([all, new Promise((r) => setTimeout(r, 120_000))]);
  const cpu = cpuSnapshot(svc.proc.pid).since(cpuBefore);
  const dnsCpu = cpuSnapshot(dns.pid).since(dnsBefore);
  const client = process.cpuUsage(clientBefore);
  const elapsed = (Math.max(...committed.values()) - started) / 1000;
  const latencies = [...committed].map(([subject, at]) => at - (accepted.get(subject) ?? at));
  // In send order: a p50 that grows from the first quarter to the last means a backlog is building.
  const bySend = [...accepted].sort((a, b) => a[1] - b[1]).map(([subject, at]) => (committed.get(subject) ?? at) - at);
  const quarter = Math.max(1, Math.floor(bySend.length / 4));
  finished = true;
  ws.close();
  await svc.stop();
  await dns.close();
  fs.rmSync(path.dirname(home), { recursive: true, force: true }); // the bench's temporary home
  const figures = {
    bench: 'ingest',
    messages: MESSAGES,
    message_bytes: BODY.length,
    smtp_connections: CONNECTIONS,
    committed: committed.size,
    edge_accept_msgs_per_s: round(MESSAGES / acceptSeconds, 0),
    svc_msgs_per_s: round(committed.size / elapsed, 0),
    baseline_accept_discard_msgs_per_s: round(baselineRate, 0),
    ratio: round(committed.size / elapsed / baselineRate),
    accept_to_event_p50_ms: round(percentile(latencies, 50)),
    accept_to_event_p99_ms: round(percentile(latencies, 99)),
    accept_to_event_p50_first_quarter_ms: round(percentile(bySend.slice(0, quarter), 50)),
    accept_to_event_p50_last_quarter_ms: round(percentile(bySend.slice(-quarter), 50)),
    // Where the CPU went while the messages flowed: the machine has few cores, shared with the load generator.
    host_cpu_busy_pct: round(cpu.hostBusyPct, 0),
    svc_cpu_ms_per_msg: cpu.processMs === null ? null : round(cpu.processMs / Math.max(1, committed.size)),
    load_cpu_ms_per_msg: round((client.user + client.system) / 1000 / MESSAGES),
    dns_cpu_ms_per_msg: dnsCpu.processMs === null ? null : round(dnsCpu.processMs / MESSAGES),
  };
  console.log(JSON.stringify(figures));
  return figures;
}

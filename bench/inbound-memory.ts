/**
 * Memory for large inbound mail (issue 16, finding 9): `svc serve --local-edge` receives COUNT
 * messages of about MB megabytes each at once over SMTP (half text, half a binary attachment).
 * Reported are the RSS before, the peak (the kernel's high-water mark, reset just before the
 * send, so no sample is missed; the edge thread, the home's loops and the opener all share the
 * process RSS), the peak during the SMTP part alone (sampled every 50 ms), and the RSS 15 s after
 * the last message was stored. The service runs with the environment its installed unit sets
 * (src/service/service-spec.ts SERVE_ENVIRONMENT) unless `bare`.
 *
 * Baseline, same run: a process that only receives the same message with smtp-server (the
 * library the edge uses) and keeps it until the end of DATA, measured the same way — what any
 * receiver pays to hold one message.
 *
 * Part of `npm run bench` (inbound-memory); alone:
 *   npm run build && scripts/with-keyring.sh node dist/bench/inbound-memory.js [COUNT] [MB] [--bare]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import nodemailer from 'nodemailer';
import { callJson, root, spawnUntil } from './util.js';
import { emptyDns, serveLocalEdge } from './ingest.js';
import { SERVE_ENVIRONMENT } from '../src/service/service-spec.js';

const INBOX = 'mem@local.test';
const SETTLE_MS = Number(process.env.BENCH_SETTLE_MS ?? 15_000);
const DEADLINE_MS = 600_000;
const MIB = 1024 * 1024;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function memory(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

/** The message: half text lines, half a binary attachment, about `mb` MiB once encoded. */
function bigMail(mb: number, subject: string) {
  const part = Math.floor((mb * MIB) / 2.4);
  const text = ('word '.repeat(15) + '\n').repeat(Math.ceil(part / 76)).slice(0, part);
  return { from: 'a@elsewhere.test', to: INBOX, subject, text, attachments: [{ filename: 'a.bin', content: Buffer.alloc(part, 7) }] };
}

export interface InboundMemoryFigures {
  messages: number;
  message_mb: number;
  rss_before_mib: number;
  peak_rise_mib: number;
  peak_rise_during_smtp_mib: number;
  rss_after_mib: number;
  rise_after_mib: number;
  stored_ms: number;
}

/** One scenario against a fresh `svc serve --local-edge`. */
export async function measureInbound(count: number, mb: number, opts: { bare?: boolean } = {}): Promise<InboundMemoryFigures> {
  const dns = await emptyDns();
  const env = opts.bare ? process.env : { ...process.env, ...SERVE_ENVIRONMENT };
  const { svc, home, smtpPort, token } = await serveLocalEdge('svc-bench-memory-', dns.server, [], env);
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
  try {
    const pid = svc.proc.pid!;
    await callJson(svc.url, token, 'POST', '/v0/inboxes', { username: 'mem', domain: 'local.test' });
    const stored = async () => ((await callJson(svc.url, token, 'GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages?limit=100`)).messages as unknown[]).length;
    const deadline = Date.now() + DEADLINE_MS;
    // A small message first (451 until routing reaches the edge), so every code path has run once.
    for (;;) {
      try {
        await smtp.sendMail({ from: 'a@elsewhere.test', to: INBOX, subject: 'warm up', text: 'hello' });
        break;
      } catch (err) {
        if ((err as { responseCode?: number }).responseCode !== 451 || Date.now() > deadline) throw err;
        await sleep(200);
      }
    }
    while ((await stored()) < 1 && Date.now() < deadline) await sleep(200);
    await sleep(3_000);

    const mails = Array.from({ length: count }, (_, i) => bigMail(mb, `big ${i}`));
    const before = memory(pid);
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    let smtpPeak = before.rss;
    const sampler = setInterval(() => (smtpPeak = Math.max(smtpPeak, memory(pid).rss)), 50);
    const started = Date.now();
    await Promise.all(mails.map((mail) => smtp.sendMail(mail)));
    clearInterval(sampler);
    while ((await stored()) < 1 + count && Date.now() < deadline) await sleep(200);
    const storedMs = Date.now() - started;
    const peak = memory(pid).peak;
    await sleep(SETTLE_MS);
    const after = memory(pid);
    return {
      messages: count,
      message_mb: mb,
      rss_before_mib: Math.round(before.rss / MIB),
      peak_rise_mib: Math.round((peak - before.rss) / MIB),
      peak_rise_during_smtp_mib: Math.round((smtpPeak - before.rss) / MIB),
      rss_after_mib: Math.round(after.rss / MIB),
      rise_after_mib: Math.round((after.rss - before.rss) / MIB),
      stored_ms: storedMs,
    };
  } finally {
    smtp.close();
    await svc.stop();
    await dns.close();
    fs.rmSync(path.dirname(home), { recursive: true, force: true });
  }
}

/** The baseline: smtp-server in its own process keeping each message whole until the end of DATA. */
export async function measureBaseline(count: number, mb: number): Promise<{ peak_rise_mib: number }> {
  const file = path.join(os.tmpdir(), `svc-bench-receiver-${process.pid}-${Date.now()}.mjs`);
  fs.writeFileSync(
    file,
    `import smtp from '${path.join(root, 'node_modules', 'smtp-server', 'dist', 'cjs', 'smtp-server.js')}';
const server = new smtp.SMTPServer({ authOptional: true, disabledCommands: ['AUTH', 'STARTTLS'], size: 30 * 1024 * 1024, logger: false,
  onData(stream, session, callback) { const chunks = []; stream.on('data', (c) => chunks.push(c)); stream.on('end', () => { const raw = Buffer.concat(chunks); callback(null, 'kept ' + raw.length); }); } });
server.listen(0, '127.0.0.1', () => console.log('ready 127.0.0.1:' + server.server.address().port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));`,
  );
  const child = await spawnUntil([file], (l) => (l.startsWith('ready ') ? l.slice(6) : null));
  const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: Number(child.url.split(':')[1]), secure: false, ignoreTLS: true });
  try {
    const pid = child.proc.pid!;
    await smtp.sendMail({ from: 'a@elsewhere.test', to: INBOX, subject: 'warm up', text: 'hello' });
    await sleep(1_000);
    const mails = Array.from({ length: count }, (_, i) => bigMail(mb, `big ${i}`));
    const before = memory(pid);
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    await Promise.all(mails.map((mail) => smtp.sendMail(mail)));
    return { peak_rise_mib: Math.round((memory(pid).peak - before.rss) / MIB) };
  } finally {
    smtp.close();
    await child.stop();
    fs.rmSync(file, { force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [count, mb] = [Number(process.argv[2] ?? 1), Number(process.argv[3] ?? 20)];
  const figures = await measureInbound(count, mb, { bare: process.argv.includes('--bare') });
  const baseline = await measureBaseline(count, mb);
  console.log(JSON.stringify({ bench: 'inbound-memory', ...figures, bare: process.argv.includes('--bare'), baseline_peak_rise_mib: baseline.peak_rise_mib }));
}

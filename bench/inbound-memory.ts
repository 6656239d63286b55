/**
 * Memory for large inbound mail (issue 16, finding 9): `svc serve --local-edge` receives COUNT
 * messages of about MB megabytes each at once over SMTP (half text, half a binary attachment);
 * reported are the RSS before, the peak (the kernel's high-water mark, reset just before the
 * send, so no sample is missed; the edge thread, the home's loops and the opener all share the
 * process RSS), the peak during the SMTP part alone (sampled every 50 ms), and the RSS 15 s after
 * the last message was stored. Standalone, not part of `npm run bench`:
 *
 *   npm run build && scripts/with-keyring.sh node dist/bench/inbound-memory.js [COUNT] [MB]
 */
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { callJson } from './util.js';
import { emptyDns, serveLocalEdge } from './ingest.js';

const COUNT = Number(process.argv[2] ?? 1);
const MB = Number(process.argv[3] ?? 20);
const INBOX = 'mem@local.test';
const SETTLE_MS = 15_000;
const DEADLINE_MS = 600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MIB = 1024 * 1024;

function memory(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

const dns = await emptyDns();
const { svc, home, smtpPort, token } = await serveLocalEdge('svc-bench-memory-', dns.server);
const pid = svc.proc.pid!;
await callJson(svc.url, token, 'POST', '/v0/inboxes', { username: 'mem', domain: 'local.test' });
const stored = async () => ((await callJson(svc.url, token, 'GET', `/v0/inboxes/${encodeURIComponent(INBOX)}/messages?limit=100`)).messages as unknown[]).length;
const smtp = nodemailer.createTransport({ host: '127.0.0.1', port: smtpPort, secure: false, ignoreTLS: true });
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

const part = Math.floor((MB * MIB) / 2.4);
const text = ('word '.repeat(15) + '\n').repeat(Math.ceil(part / 76)).slice(0, part);
const attachment = Buffer.alloc(part, 7);
const before = memory(pid);
fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
let smtpPeak = before.rss;
const sampler = setInterval(() => (smtpPeak = Math.max(smtpPeak, memory(pid).rss)), 50);
const started = Date.now();
await Promise.all(Array.from({ length: COUNT }, (_, i) => smtp.sendMail({ from: 'a@elsewhere.test', to: INBOX, subject: `big ${i}`, text, attachments: [{ filename: 'a.bin', content: attachment }] })));
clearInterval(sampler);
while ((await stored()) < 1 + COUNT && Date.now() < deadline) await sleep(200);
const storedMs = Date.now() - started;
const peak = memory(pid).peak;
await sleep(SETTLE_MS);
const after = memory(pid);
console.log(
  JSON.stringify({
    bench: 'inbound-memory',
    messages: COUNT,
    message_mb: MB,
    rss_before_mib: Math.round(before.rss / MIB),
    peak_rise_mib: Math.round((peak - before.rss) / MIB),
    peak_rise_during_smtp_mib: Math.round((smtpPeak - before.rss) / MIB),
    rss_after_mib: Math.round(after.rss / MIB),
    rise_after_mib: Math.round((after.rss - before.rss) / MIB),
    stored_ms: storedMs,
  }),
);
smtp.close();
await svc.stop();
await dns.close();
fs.rmSync(path.dirname(home), { recursive: true, force: true });

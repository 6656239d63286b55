/**
 * Read-API benchmark (issue 3): a store of 100,000 messages, then under 50 concurrent connections
 * GET threads (limit 20) and GET one message, beside a fastify hello-world in the same run; and
 * the p95 latency of thread search. Targets: list throughput ≥ 0.25 × hello-world, p99 ≤ 15 ms,
 * search p95 ≤ 50 ms.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { unlockHome } from '../src/keys/unlock.js';
import { openDatabase } from '../src/db/open.js';
import { commitInbound } from '../src/mail/store.js';
import { parseMime, type ParsedMail } from '../workers/pool/tasks.js';
import { percentile, round, startHelloWorld, startSvc } from './util.js';
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../src/http/secrets.js';
import { API_KEY_PREFIX } from '../src/http/credentials.js';
import { uuidv7 } from '../src/db/ids.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);
const PER_THREAD = 4;
const CONNECTIONS = 50;
const DURATION_S = 10;
const SEARCH_QUERIES = 200;
const INBOX = 'bench@agents.test';
const WORDS = ['invoice', 'meeting', 'contract', 'shipment', 'renewal', 'quarterly', 'roadmap', 'budget', 'feedback', 'migration', 'latency', 'incident', 'payroll', 'onboarding', 'proposal', 'release'];

function sample(parsed: ParsedMail, i: number): ParsedMail {
  const thread = Math.floor(i / PER_THREAD);
  const first = i % PER_THREAD === 0;
  const w = (k: number) => WORDS[(i * 7 + k * 13) % WORDS.length];
  return {
    ...parsed,
    messageId: `<m${i}@bench.test>`,
    inReplyTo: first ? null : `<m${i - 1}@bench.test>`,
    references: first ? [] : [`<m${thread * PER_THREAD}@bench.test>`],
    subject: `${first ? '' : 'Re: '}${w(0)} ${w(1)} thread ${thread}`,
    from: [{ address: `sender${i % 500}@example.test`, name: `Sender ${i % 500}` }],
    text: `Hello, about the ${w(2)} and the ${w(3)}. Message number ${i}. ${w(4)} ${w(5)} follow-up.`,
    date: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
  };
}

async function seed(home: string): Promise<{ apiKey: string; messageId: string }> {
  const { dbKey } = unlockHome(home, false);
  const db = openDatabase(path.join(home, 'svc.db'), dbKey, { migrate: false });
  dbKey.fill(0);
  const raw = new TextEncoder().encode(`From: a@example.test\r\nTo: ${INBOX}\r\nSubject: x\r\nMessage-ID: <t@bench.test>\r\n\r\nbody\r\n`);
  const template = await parseMime(raw);
  const now = new Date().toISOString();
  db.prepare('INSERT INTO inboxes (inbox_id, username, domain, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(INBOX, 'bench', 'agents.test', 'active', now, now);
  const started = Date.now();
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) commitInbound(db, { inboxId: INBOX, parsed: sample(template, i), raw, sourceKey: `bench-${i}`, receivedAt: sample(template, i).date! });
  });
  for (let i = 0; i < MESSAGES; i += 1000) batch(i, Math.min(MESSAGES, i + 1000));
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  db.prepare(
    'INSERT INTO api_keys (api_key_id, name, prefix, key_hash, permissions, send_policy, inbox_ids, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)',
  ).run(uuidv7(), 'bench', secret.slice(0, 12), sha256Hex(secret), JSON.stringify(['inbox_read', 'message_read']), 'read_only', now, now);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  console.error(`seeded ${MESSAGES} messages in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { apiKey: secret, messageId: `<m${Math.floor(MESSAGES / 2)}@bench.test>` };
}

function load(url: string, headers: Record<string, string> = {}): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, headers }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

export async function benchReadApi(): Promise<void> {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-read-')), 'home');
  const first = await startSvc(home, true);
  await first.stop();
  const { apiKey, messageId } = await seed(home);

  const hello = await startHelloWorld();
  const baseline = await load(hello.url);
  await hello.stop();

  const svc = await startSvc(home);
  const auth = { authorization: `Bearer ${apiKey}` };
  const inbox = encodeURIComponent(INBOX);
  const threads = await load(`${svc.url}/v0/inboxes/${inbox}/threads?limit=20`, auth);
  const message = await load(`${svc.url}/v0/inboxes/${inbox}/messages/${encodeURIComponent(messageId)}`, auth);
  const latencies: number[] = [];
  for (let i = 0; i < SEARCH_QUERIES; i++) {
    const q = `${WORDS[i % WORDS.length]} ${WORDS[(i * 5 + 3) % WORDS.length]}`;
    const t0 = performance.now();
    const res = await fetch(`${svc.url}/v0/inboxes/${inbox}/threads/search?q=${encodeURIComponent(q)}&limit=20`, { headers: auth });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`search answered ${res.status}`);
    latencies.push(performance.now() - t0);
  }
  await svc.stop();
  const errors = threads.non2xx + threads.errors + message.non2xx + message.errors;
  console.log(JSON.stringify({
    bench: 'read-api',
    messages: MESSAGES,
    connections: CONNECTIONS,
    baseline_hello_rps: round(baseline.requests.average, 0),
    threads_list_rps: round(threads.requests.average, 0),
    threads_list_ratio: round(threads.requests.average / baseline.requests.average),
    threads_list_p99_ms: threads.latency.p99,
    message_get_rps: round(message.requests.average, 0),
    message_get_ratio: round(message.requests.average / baseline.requests.average),
    message_get_p99_ms: message.latency.p99,
    search_p50_ms: round(percentile(latencies, 50)),
    search_p95_ms: round(percentile(latencies, 95)),
    non_2xx_or_errors: errors,
  }));
}

/**
 * Read-API benchmark (issue 3): a store of 100,000 messages, then under 50 concurrent connections
 * GET threads (limit 20) and GET one message, beside a fastify hello-world in the same run — each
 * twice: the same URL every time (answered from the read cache after the first request) and a
 * distinct URL every time (issue 19: threads pages ending at another minute of the store, another
 * message each time), which measures the query and serialization; and
 * thread search, one client at a time (p50/p95) and under the same 50-connection load, every
 * search distinct so none is a cache hit (req/s, p50/p99); the service's peak RSS during the load. Targets: list throughput
 * ≥ 0.25 × hello-world, p99 ≤ 15 ms, search p95 ≤ 50 ms. The store is seeded once; each run restarts
 * the service on it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { unlockHome } from '../src/keys/unlock.js';
import { openDatabase } from '../src/db/open.js';
import { commitInbound } from '../src/mail/store.js';
import { parseMime, type ParsedMail } from '../workers/pool/parse.js';
import { percentile, round, rssMiB, sampleMemory, startHelloWorld, startSvc, type Metric } from './util.js';
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../src/auth/secrets.js';
import { API_KEY_PREFIX } from '../src/auth/api-keys.js';
import { uuidv7 } from '../src/db/ids.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);
const PER_THREAD = 4;
const CONNECTIONS = 50;
const DURATION_S = 10;
const SEARCH_QUERIES = 200;
const INBOX = 'bench@agents.test';
/** The seeded messages are one minute apart from here on. */
const SEED_START_MS = Date.UTC(2026, 0, 1);
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
    date: new Date(SEED_START_MS + i * 60_000).toISOString(),
  };
}

export async function seed(home: string): Promise<{ apiKey: string; messageId: string }> {
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

/** Loads one URL, or with `nextPath` a new path for every request (across all connections). */
function load(url: string, headers: Record<string, string> = {}, nextPath?: () => string): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const requests = nextPath ? [{ method: 'GET' as const, setupRequest: (req: autocannon.Request) => ({ ...req, path: nextPath() }) }] : undefined;
    autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, headers, ...(requests ? { requests } : {}) }, (err, result) => (err ? reject(err) : resolve(result)));
  });
}

/** Runs `task` while sampling the RSS of `pid`; returns the task's result and the peak RSS. */
async function withRss<T>(pid: number | undefined, task: () => Promise<T>): Promise<[T, number | null]> {
  const sampler = sampleMemory(() => rssMiB(pid));
  const result = await task();
  return [result, sampler.stop().peak];
}

/**
 * The i-th distinct search: two different words (240 ordered pairs) and a limit of 10–40 (20 for
 * the first 240), 7,440 URLs in all. Answers are cached by exact URL until the data changes (an LRU
 * of 16 MiB, src/mail/read-cache.ts), so repeating a few queries would measure the cache; cycling
 * through thousands in order measures the search itself.
 */
const PAIRS = WORDS.length * (WORDS.length - 1);
const SEARCH_URLS = PAIRS * 31;
function searchPath(inbox: string, i: number): string {
  const n = i % SEARCH_URLS;
  const p = n % PAIRS;
  const a = p % WORDS.length;
  const b = (a + 1 + Math.floor(p / WORDS.length)) % WORDS.length;
  const limit = 10 + ((Math.floor(n / PAIRS) + 10) % 31);
  return `/v0/inboxes/${inbox}/threads/search?q=${encodeURIComponent(`${WORDS[a]} ${WORDS[b]}`)}&limit=${limit}`;
}

/**
 * The i-th distinct threads page: the 20 threads before another minute of the seeded range (one
 * message a minute), so no URL repeats within a load and none is a read-cache hit.
 */
function threadsPagePath(inbox: string, i: number): string {
  const minute = PER_THREAD * 20 + (i % (MESSAGES - PER_THREAD * 20));
  return `/v0/inboxes/${inbox}/threads?limit=20&before=${encodeURIComponent(new Date(SEED_START_MS + minute * 60_000).toISOString())}`;
}

/** The i-th distinct message read: another seeded message each time. */
const messagePath = (inbox: string, i: number) => `/v0/inboxes/${inbox}/messages/${encodeURIComponent(`<m${i % MESSAGES}@bench.test>`)}`;

/** SEARCH_QUERIES requests one after another (one client): their latencies in ms. */
async function sequential(url: (i: number) => string, headers: Record<string, string> = {}): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < SEARCH_QUERIES; i++) {
    const t0 = performance.now();
    const res = await fetch(url(i), { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url(i)} answered ${res.status}`);
    latencies.push(performance.now() - t0);
  }
  return latencies;
}

/** One round on an already seeded home: baseline, list, get, search (sequential and under load). */
async function round1(home: string, apiKey: string, messageId: string): Promise<Metric[]> {
  const hello = await startHelloWorld();
  const [baseline, helloRss] = await withRss(hello.proc.pid, () => load(hello.url));
  const helloLatencies = await sequential(() => hello.url);
  await hello.stop();

  const svc = await startSvc(home);
  const pid = svc.proc.pid;
  const auth = { authorization: `Bearer ${apiKey}` };
  const inbox = encodeURIComponent(INBOX);
  const [threads, rssThreads] = await withRss(pid, () => load(`${svc.url}/v0/inboxes/${inbox}/threads?limit=20`, auth));
  const [message, rssMessage] = await withRss(pid, () => load(`${svc.url}/v0/inboxes/${inbox}/messages/${encodeURIComponent(messageId)}`, auth));
  // The same two reads with a distinct URL for every request: no read-cache hits (issue 19).
  let page = 0;
  const [threadsUncached, rssThreadsUncached] = await withRss(pid, () => load(svc.url, auth, () => threadsPagePath(inbox, page++)));
  let nth = 0;
  const [messageUncached, rssMessageUncached] = await withRss(pid, () => load(svc.url, auth, () => messagePath(inbox, nth++)));
  // One client, SEARCH_QUERIES distinct searches (none answered from the cache).
  const latencies = await sequential((i) => svc.url + searchPath(inbox, i), auth);
  // A cheap read (GET the inbox) from one client, alone and then while 50 connections search:
  // a slow query must delay only itself (issue 19: within 5x of its p99 alone).
  const cheapAlone = await sequential(() => `${svc.url}/v0/inboxes/${inbox}`, auth);
  // The same 50-connection load, every request a search not among the last few thousand.
  let next = PAIRS;
  let cheapLoaded: number[] = [];
  const [search, rssSearch] = await withRss(pid, async () => {
    const searching = load(svc.url, auth, () => searchPath(inbox, next++));
    await new Promise((r) => setTimeout(r, 1_000)); // the search load is under way
    cheapLoaded = await sequential(() => `${svc.url}/v0/inboxes/${inbox}`, auth);
    return searching;
  });
  await svc.stop();
  const errors = [threads, message, threadsUncached, messageUncached, search].reduce((n, r) => n + r.non2xx + r.errors, 0);
  const loadedRss = Math.max(rssThreads ?? 0, rssMessage ?? 0, rssThreadsUncached ?? 0, rssMessageUncached ?? 0, rssSearch ?? 0) || null;
  const figures = {
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
    threads_uncached_rps: round(threadsUncached.requests.average, 0),
    threads_uncached_ratio: round(threadsUncached.requests.average / baseline.requests.average),
    threads_uncached_p99_ms: threadsUncached.latency.p99,
    message_uncached_rps: round(messageUncached.requests.average, 0),
    message_uncached_ratio: round(messageUncached.requests.average / baseline.requests.average),
    message_uncached_p99_ms: messageUncached.latency.p99,
    search_p50_ms: round(percentile(latencies, 50)),
    search_p95_ms: round(percentile(latencies, 95)),
    search_loaded_rps: round(search.requests.average, 0),
    search_loaded_p50_ms: search.latency.p50,
    search_loaded_p99_ms: search.latency.p99,
    cheap_read_p99_alone_ms: round(percentile(cheapAlone, 99)),
    cheap_read_p99_under_search_ms: round(percentile(cheapLoaded, 99)),
    svc_loaded_rss_mib: loadedRss === null ? null : round(loadedRss, 1),
    baseline_loaded_rss_mib: helloRss,
    non_2xx_or_errors: errors,
  };
  console.log(JSON.stringify(figures));
  return [
    { key: 'threads_rps', label: `GET threads (limit 20), ${CONNECTIONS} connections`, unit: 'req/s', better: 'higher', svc: figures.threads_list_rps, baseline: figures.baseline_hello_rps, chart: 'throughput', target: { op: '>=', value: 0.25, of: 'ratio', issue: 3 } },
    { key: 'threads_p99_ms', label: 'GET threads p99', unit: 'ms', better: 'lower', svc: figures.threads_list_p99_ms, baseline: baseline.latency.p99, chart: 'latency', target: { op: '<=', value: 15, issue: 3 } },
    { key: 'message_rps', label: `GET one message, ${CONNECTIONS} connections`, unit: 'req/s', better: 'higher', svc: figures.message_get_rps, baseline: figures.baseline_hello_rps, chart: 'throughput' },
    { key: 'message_p99_ms', label: 'GET one message p99', unit: 'ms', better: 'lower', svc: figures.message_get_p99_ms, baseline: baseline.latency.p99, chart: 'latency' },
    { key: 'threads_uncached_rps', label: `GET threads, a distinct page each request (uncached), ${CONNECTIONS} connections`, unit: 'req/s', better: 'higher', svc: figures.threads_uncached_rps, baseline: figures.baseline_hello_rps, chart: 'throughput', target: { op: '>=', value: 0.25, of: 'ratio', issue: 19 } },
    { key: 'threads_uncached_p99_ms', label: 'GET threads (uncached) p99', unit: 'ms', better: 'lower', svc: figures.threads_uncached_p99_ms, baseline: baseline.latency.p99, chart: 'latency', target: { op: '<=', value: 20, issue: 19 } },
    { key: 'message_uncached_rps', label: `GET one message, a distinct message each request (uncached), ${CONNECTIONS} connections`, unit: 'req/s', better: 'higher', svc: figures.message_uncached_rps, baseline: figures.baseline_hello_rps, chart: 'throughput' },
    { key: 'message_uncached_p99_ms', label: 'GET one message (uncached) p99', unit: 'ms', better: 'lower', svc: figures.message_uncached_p99_ms, baseline: baseline.latency.p99, chart: 'latency' },
    { key: 'search_p50_ms', label: 'Thread search p50, one client', unit: 'ms', better: 'lower', svc: figures.search_p50_ms, baseline: round(percentile(helloLatencies, 50)), target: { op: '<=', value: 3, issue: 19 } },
    { key: 'search_p95_ms', label: 'Thread search p95, one client', unit: 'ms', better: 'lower', svc: figures.search_p95_ms, baseline: round(percentile(helloLatencies, 95)), chart: 'latency', target: { op: '<=', value: 50, issue: 3 } },
    { key: 'search_rps', label: `Thread search, ${CONNECTIONS} connections`, unit: 'req/s', better: 'higher', svc: figures.search_loaded_rps, baseline: figures.baseline_hello_rps, chart: 'throughput', target: { op: '>=', value: 600, issue: 19 } },
    { key: 'search_loaded_p50_ms', label: `Thread search p50, ${CONNECTIONS} connections`, unit: 'ms', better: 'lower', svc: figures.search_loaded_p50_ms },
    { key: 'search_loaded_p99_ms', label: `Thread search p99, ${CONNECTIONS} connections`, unit: 'ms', better: 'lower', svc: figures.search_loaded_p99_ms, baseline: baseline.latency.p99, target: { op: '<=', value: 200, issue: 19 } },
    // The baseline of this figure is the same read with no search running: the ratio is the slowdown.
    { key: 'cheap_read_under_search_p99_ms', label: `GET the inbox p99, one client, while ${CONNECTIONS} connections search (baseline: alone)`, unit: 'ms', better: 'lower', svc: figures.cheap_read_p99_under_search_ms, baseline: figures.cheap_read_p99_alone_ms, target: { op: '<=', value: 5, of: 'ratio', issue: 19 } },
    { key: 'loaded_rss_mib', label: 'Loaded RSS (peak during the read load)', unit: 'MiB', better: 'lower', svc: figures.svc_loaded_rss_mib, baseline: figures.baseline_loaded_rss_mib },
    { key: 'errors', label: 'Non-2xx answers or socket errors', unit: '', better: 'lower', svc: errors },
  ];
}

/** Seeds one store of MESSAGES messages, then measures `runs` rounds on it (seeding is the slow part). */
export async function benchReadApi(runs = 1): Promise<Metric[][]> {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-read-')), 'home');
  const first = await startSvc(home, true);
  await first.stop();
  const { apiKey, messageId } = await seed(home);
  const results: Metric[][] = [];
  for (let r = 0; r < runs; r++) results.push(await round1(home, apiKey, messageId));
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
  return results;
}

/**
 * Scale benchmark (issue 37 §1, "cost grows with the work, not with the mail already stored"):
 * homes of 10,000 and 1,000,000 messages (`--sizes 10000,100000` or BENCH_SCALE_SIZES to choose),
 * 4 messages per thread across 50 inboxes, seeded through the inbound commit path in-process
 * (`commitInbound`, the function the inbound loop calls, in transactions of SEED_BATCH messages;
 * labels edited with `updateMessageLabels`; inboxes, the API key and the owner made over the API),
 * one in five messages with an attachment, some read, flagged or spam like real mail. For each size,
 * in the same run: start-up to `server.ready`, idle RSS, GET threads and GET message (distinct
 * URLs, so uncached), thread search (distinct queries), the first answer of a message wait, the
 * owner's usage and event metrics over 1 and 90 days and the live counts, the read system calls
 * of the service per request of each read figure (pages SQLite's cache missed), the owner web app's
 * first paint of the mail list in Chromium, `svc backup` time and size, and once at the end the
 * time of a migration adding a column to messages and of the metric counters' backfill. The
 * baseline of every figure is the same figure at the smallest size of the same run, so the ratio
 * is how the cost grew with the stored mail.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';
import { unlockHome } from '../src/keys/unlock.js';
import { openDatabase, type Db } from '../src/db/open.js';
import { takeSnapshot } from '../src/backup/snapshots.js';
import { DAY_GRAIN, counterTables, counterTriggers } from '../src/db/migrations-metric-days.js';
import { counterRollups, METRIC_DAY_ROLLUPS_MIGRATION, METRIC_HOURS_MIGRATION } from '../src/db/migrations-metric-rollups.js';
import { commitInbound } from '../src/mail/store.js';
import { mergeFullShards } from '../src/db/search-merge.js';
import { updateMessageLabels } from '../src/mail/messages.js';
import { parseMime, type ParsedMail } from '../workers/pool/parse.js';
import { callJson, ensureChromium, percentile, readSyscalls, root, round, rssMiB, running, spawnUntil, type Child, type Metric } from './util.js';

export const DEFAULT_SIZES = [10_000, 1_000_000];
const INBOXES = 50;
const PER_THREAD = 4;
/** The seeded mail spans this many days, ending an hour before the seeding. */
const SPAN_DAYS = 400;
const SEED_BATCH = 500;
/** Distinct requests per latency figure, one client. */
const REQUESTS = 200;
/**
 * Metric requests per figure, after METRIC_WARMUP more: a series' first few dozen answers take
 * about twice as long as later ones while V8 optimizes the counting and serializing code (measured:
 * about 5 ms for the first 25 of a 90-day event series, 2–3 ms after), at every size alike.
 */
const METRIC_REQUESTS = 30;
const METRIC_WARMUP = 30;
const DOMAIN = 'scale.test';
const PASSWORD = 'scale-bench-owner-password';
const WORDS = ['invoice', 'meeting', 'contract', 'shipment', 'renewal', 'quarterly', 'roadmap', 'budget', 'feedback', 'migration', 'latency', 'incident', 'payroll', 'onboarding', 'proposal', 'release', 'travel', 'hiring', 'audit', 'launch'];
const DAY_MS = 86_400_000;

/** `--sizes 10000,100000` after the benchmark's name, else BENCH_SCALE_SIZES, else 10k and 1M. */
export function scaleSizes(argv = process.argv): number[] {
  const at = argv.indexOf('--sizes');
  const given = at >= 0 ? argv[at + 1] : process.env.BENCH_SCALE_SIZES;
  const sizes = given ? given.split(',').map((s) => Number(s.trim())) : DEFAULT_SIZES;
  if (sizes.some((n) => !Number.isInteger(n) || n < PER_THREAD * INBOXES)) throw new Error(`--sizes: whole numbers of messages, at least ${PER_THREAD * INBOXES} each`);
  return [...new Set(sizes)].sort((a, b) => a - b);
}

interface Home {
  size: number;
  home: string;
  /** The time of message i: spread over SPAN_DAYS, oldest first. */
  startMs: number;
  stepMs: number;
  apiKey: string;
  seedSeconds: number;
  /** The merge of the full search shards' segments after seeding, as the service does them in the background (src/db/search-merge.ts). */
  mergeSeconds?: number;
  rawBytes: number;
}

const inboxOf = (k: number) => `agent${k}@${DOMAIN}`;
/** Message i belongs to thread floor(i / PER_THREAD), and a thread to one inbox. */
const inboxOfMessage = (i: number) => inboxOf(Math.floor(i / PER_THREAD) % INBOXES);
const messageIdOf = (i: number) => `<s${i}@mail.example>`;
/** One message in 50 arrives as spam. */
const isSpam = (i: number) => i % 50 === 7;
const word = (i: number, k: number) => WORDS[(i * 7 + k * 13 + Math.floor(i / 97)) % WORDS.length];

/** svc serve on a home, with its stdout lines (the setup code of a new home among them). */
async function serve(home: string, init = false): Promise<Child & { lines: Record<string, unknown>[]; readyMs: number }> {
  const lines: Record<string, unknown>[] = [];
  const t0 = performance.now();
  const child = await spawnUntil([path.join(root, 'bin', 'svc'), 'serve', '--home', home, '--port', '0', ...(init ? ['--init'] : [])], (l) => {
    try {
      const data = JSON.parse(l) as { event?: string; url?: string };
      lines.push(data);
      return data.event === 'server.ready' ? (data.url ?? null) : null;
    } catch {
      return null;
    }
  });
  return { ...child, lines, readyMs: performance.now() - t0 };
}

const ownerToken = (home: string) => (JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string }).owner_token;

function openHome(home: string): Db {
  const { dbKey } = unlockHome(home, false);
  try {
    return openDatabase(path.join(home, 'svc.db'), dbKey, { migrate: false });
  } finally {
    dbKey.fill(0);
  }
}

/** The raw MIME of message i: about 2 KB of text, and for one in five a 6 KB attachment. */
function rawOf(i: number, subject: string, date: string, attachment: string | null): string {
  const body = Array.from({ length: 24 }, (_, k) => `${word(i, k)} ${word(i, k + 1)} and the ${word(i, k + 2)} for line ${k} of message ${i}.`).join('\r\n');
  const head = [
    `From: Sender ${i % 700} <sender${i % 700}@mail.example>`,
    `To: ${inboxOfMessage(i)}`,
    `Subject: ${subject}`,
    `Date: ${new Date(date).toUTCString()}`,
    `Message-ID: ${messageIdOf(i)}`,
    'MIME-Version: 1.0',
  ];
  if (!attachment) return [...head, 'Content-Type: text/plain; charset=utf-8', '', body, ''].join('\r\n');
  return [...head, 'Content-Type: multipart/mixed; boundary=b', '', '--b', 'Content-Type: text/plain; charset=utf-8', '', body, '--b', `Content-Type: application/pdf; name=report-${i}.pdf`, `Content-Disposition: attachment; filename=report-${i}.pdf`, 'Content-Transfer-Encoding: base64', '', attachment, '--b--', ''].join('\r\n');
}

/**
 * A new home of `size` messages: the owner, 50 inboxes and a read key over the API, then the mail
 * through `commitInbound` with the service stopped (the home's database opened in-process, as the
 * service opens it).
 */
async function seedHome(size: number): Promise<Home> {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `svc-bench-scale-${size}-`)), 'home');
  const svc = await serve(home, true);
  const owner = ownerToken(home);
  const code = svc.lines.find((l) => l.event === 'owner.setup_required')?.code as string | undefined;
  const setup = await fetch(`${svc.url}/v0/owner/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: PASSWORD, code }) });
  if (!setup.ok) throw new Error(`owner setup: ${setup.status} ${await setup.text()}`);
  for (let k = 0; k < INBOXES; k++) await callJson(svc.url, owner, 'POST', '/v0/inboxes', { username: `agent${k}`, domain: DOMAIN });
  const key = await callJson(svc.url, owner, 'POST', '/v0/api-keys', { name: 'scale-reader', permissions: ['inbox_read', 'message_read'] });
  await svc.stop();

  const db = openHome(home);
  const attachment = Buffer.from(Array.from({ length: 4500 }, (_, k) => (k * 31) % 251)).toString('base64').replace(/.{76}/g, '$&\r\n');
  const templates = {
    plain: await parseMime(new TextEncoder().encode(rawOf(0, 'x', new Date().toISOString(), null))),
    attached: await parseMime(new TextEncoder().encode(rawOf(0, 'x', new Date().toISOString(), attachment))),
  };
  const stepMs = (SPAN_DAYS * DAY_MS) / size;
  const startMs = Date.now() - 3_600_000 - SPAN_DAYS * DAY_MS;
  let rawBytes = 0;
  const batch = db.transaction((from: number, to: number) => {
    const read = new Map<string, string[]>();
    const flagged = new Map<string, string[]>();
    for (let i = from; i < to; i++) {
      const thread = Math.floor(i / PER_THREAD);
      const first = i % PER_THREAD === 0;
      const date = new Date(startMs + i * stepMs).toISOString();
      const subject = `${first ? '' : 'Re: '}${word(thread, 0)} ${word(thread, 1)} thread ${thread}`;
      const withAttachment = i % 5 === 2;
      const raw = new TextEncoder().encode(rawOf(i, subject, date, withAttachment ? attachment : null));
      rawBytes += raw.length;
      const template = withAttachment ? templates.attached : templates.plain;
      const parsed: ParsedMail = {
        ...template,
        messageId: messageIdOf(i),
        inReplyTo: first ? null : messageIdOf(i - 1),
        references: first ? [] : [messageIdOf(thread * PER_THREAD)],
        subject,
        from: [{ address: `sender${i % 700}@mail.example`, name: `Sender ${i % 700}` }],
        text: `About the ${word(i, 2)} and the ${word(i, 3)}: message ${i}. ${word(i, 4)} ${word(i, 5)} follow-up.`,
        date,
      };
      const inbox = inboxOfMessage(i);
      commitInbound(db, { inboxId: inbox, parsed, raw, sourceKey: `scale-${i}`, receivedAt: date, hiddenLabels: isSpam(i) ? ['spam'] : [] });
      // Most older mail has been read; a few messages are flagged.
      if (i < size * 0.9 && i % 10 < 7) read.set(inbox, [...(read.get(inbox) ?? []), messageIdOf(i)]);
      if (i % 20 === 3) flagged.set(inbox, [...(flagged.get(inbox) ?? []), messageIdOf(i)]);
    }
    for (const [inbox, ids] of read) updateMessageLabels(db, inbox, ids, { excluded: [] }, { add: [], remove: ['unread'] });
    for (const [inbox, ids] of flagged) updateMessageLabels(db, inbox, ids, { excluded: [] }, { add: ['important'], remove: [] });
  });
  const t0 = performance.now();
  for (let i = 0; i < size; i += SEED_BATCH) {
    batch(i, Math.min(size, i + SEED_BATCH));
    if (i % 100_000 === 0 && i > 0) console.error(`scale: seeded ${i.toLocaleString('en-US')} of ${size.toLocaleString('en-US')} (${Math.round(i / ((performance.now() - t0) / 1000))} msg/s)`);
  }
  const seedSeconds = (performance.now() - t0) / 1000;
  // What the service's webhooks loop does in the background within minutes of a shard filling.
  const t1 = performance.now();
  mergeFullShards(db, Number.POSITIVE_INFINITY);
  const mergeSeconds = (performance.now() - t1) / 1000;
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  console.error(`scale: seeded ${size.toLocaleString('en-US')} messages in ${seedSeconds.toFixed(1)} s (search shards merged in ${mergeSeconds.toFixed(1)} s)`);
  const seeded: Home = { size, home, startMs, stepMs, apiKey: key.api_key as string, seedSeconds, mergeSeconds, rawBytes };
  // What BENCH_SCALE_HOMES needs to measure this home again without seeding it (a throwaway bench key).
  fs.writeFileSync(path.join(path.dirname(home), SEEDED_FILE), JSON.stringify(seeded), { mode: 0o600 });
  return seeded;
}

const SEEDED_FILE = 'seeded.json';

/**
 * BENCH_SCALE_HOMES (comma-separated directories): homes an earlier run seeded and kept
 * (BENCH_KEEP_HOMES=1, with the same keyring), measured again instead of seeding; each directory
 * holds the `seeded.json` its seeding wrote. Their figures still report that seeding's time.
 */
function keptHomes(): Home[] {
  const dirs = (process.env.BENCH_SCALE_HOMES ?? '').split(',').filter((d) => d !== '');
  return dirs.map((dir) => JSON.parse(fs.readFileSync(path.join(dir, SEEDED_FILE), 'utf8')) as Home);
}

/** Requests before each figure's, not counted: the first of a kind after start-up pays for compiling its code. */
const WARMUP = 3;

/**
 * `count` GETs one after another, each a distinct URL (after `warmup` more); their latencies in ms.
 * `answer` is shown each counted answer's body, after its latency is taken.
 */
async function timed(base: string, token: string, count: number, url: (i: number) => string, ok = [200], answer?: (body: string) => void, warmup = WARMUP): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = -warmup; i < count; i++) {
    const path = url(i < 0 ? count - i : i); // the warm-up's URLs come after the counted ones
    const t0 = performance.now();
    const res = await fetch(base + path, { headers: { authorization: `Bearer ${token}` } });
    const body = await res.text();
    if (!ok.includes(res.status)) throw new Error(`${path} answered ${res.status}: ${body.slice(0, 300)}`);
    if (i >= 0) {
      latencies.push(performance.now() - t0);
      answer?.(body);
    }
  }
  return latencies;
}

/** Counts the threads of the answers it is shown: `mean()` per answer. */
function threadsPerAnswer(): { answer: (body: string) => void; mean: () => number } {
  let [answers, threads] = [0, 0];
  return {
    answer: (body) => {
      answers++;
      threads += (JSON.parse(body) as { threads: unknown[] }).threads.length;
    },
    mean: () => threads / answers,
  };
}

/** A pseudo-random spread over [0, n) that differs per run and per figure, so no URL repeats. */
const spread = (i: number, n: number, salt: number) => Math.floor(((i * 7919 + salt * 104_729) % 1_000_003) / 1_000_003 * n);

/** The owner web app's mail list: from navigation to the first thread row painted, in a fresh page per inbox. */
async function firstPaint(url: string, session: { cookie: string; csrf: string }, inboxes: string[]): Promise<number[]> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'] });
  try {
    await context.addCookies([{ name: 'svc_session', value: session.cookie.split('=')[1]!, url }]);
    // Where the app keeps the CSRF token after a login (test/helpers/browser.ts `signIn`).
    await context.addInitScript(({ csrf }) => (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem('svc.csrf', csrf), { csrf: session.csrf });
    const times: number[] = [];
    for (const inbox of inboxes) {
      const page = await context.newPage();
      const t0 = performance.now();
      await page.goto(`${url}/inboxes/${encodeURIComponent(inbox)}`);
      await page
        .locator('[data-testid="threads"] .mail-row')
        .first()
        .waitFor({ timeout: 60_000 })
        .catch(async (err: unknown) => {
          throw new Error(`no thread row at ${page.url()}: ${((await page.textContent('body').catch(() => '')) ?? '').slice(0, 300)}`, { cause: err });
        });
      times.push(performance.now() - t0);
      await page.close();
    }
    return times;
  } finally {
    await context.close().catch(() => undefined);
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

/** The read figures whose page reads are counted too. */
const READ_KINDS = ['threads', 'message', 'search', 'wait_stored', 'wait_all_id', 'wait_all_time'] as const;
type ReadKind = (typeof READ_KINDS)[number];
const READ_LABELS: Record<ReadKind, string> = {
  threads: 'GET threads',
  message: 'GET message',
  search: 'thread search',
  wait_stored: 'message wait (stored answer)',
  wait_all_id: 'wait over every inbox after a Message-ID',
  wait_all_time: 'wait over every inbox after a time',
};

interface Round {
  ready_ms: number;
  idle_rss_mib: number | null;
  /** The service's read system calls per request of each read figure (its warm-up included); null where /proc says nothing. */
  reads: Record<ReadKind, number | null>;
  threads: number[];
  message: number[];
  search: number[];
  /** Threads per answer of the search figure: as many as match, up to each request's limit. */
  search_threads: number;
  /** One word, limit 10: the same ten threads' worth of answer at every size. */
  search_ten: number[];
  search_ten_threads: number;
  wait_stored: number[];
  wait_none: number[];
  wait_all_id: number[];
  wait_all_time: number[];
  usage_1d: number[];
  usage_90d: number[];
  usage_90d_key: number[];
  events_1d: number[];
  events_1d_hourly: number[];
  events_90d: number[];
  counts: number[];
  paint: number[];
  backup_ms: number;
  backup_mib: number;
}

/** One round on a seeded home: the service started, measured, backed up and stopped. */
async function measure(h: Home, salt: number): Promise<Round> {
  const svc = await serve(h.home);
  try {
    await new Promise((r) => setTimeout(r, 5_000));
    const idle = rssMiB(svc.proc.pid);
    const owner = ownerToken(h.home);
    const enc = encodeURIComponent;
    const at = (i: number) => new Date(h.startMs + i * h.stepMs).toISOString();
    const reads = {} as Round['reads'];
    /** A read figure's requests, with the service's read system calls per request. */
    const counted = async (kind: ReadKind, requests: () => Promise<number[]>): Promise<number[]> => {
      const before = readSyscalls(svc.proc.pid);
      const latencies = await requests();
      const after = readSyscalls(svc.proc.pid);
      reads[kind] = before === null || after === null ? null : (after - before) / (latencies.length + WARMUP);
      return latencies;
    };
    const threads = await counted('threads', () => timed(svc.url, h.apiKey, REQUESTS, (i) => {
      const m = spread(i, h.size, salt);
      return `/v0/inboxes/${enc(inboxOfMessage(m))}/threads?limit=20&before=${enc(at(m))}`;
    }));
    const message = await counted('message', () => timed(svc.url, h.apiKey, REQUESTS, (i) => {
      const picked = spread(i, h.size, salt + 1);
      const m = isSpam(picked) ? picked + 1 : picked; // spam is hidden from the read key (404)
      return `/v0/inboxes/${enc(inboxOfMessage(m))}/messages/${enc(messageIdOf(m))}`;
    }));
    // Two words and a limit of 10 to 40: a page holds as many threads as match, up to the limit.
    const searchAnswers = threadsPerAnswer();
    const search = await counted('search', () => timed(svc.url, h.apiKey, REQUESTS, (i) => `/v0/inboxes/${enc(inboxOf(i % INBOXES))}/threads/search?q=${enc(`${WORDS[(i + salt) % WORDS.length]} ${WORDS[(i * 3 + salt + 1) % WORDS.length]}`)}&limit=${10 + ((i + salt) % 31)}`, [200], searchAnswers.answer));
    // The same answer at every size: one word and a limit of 10, where every inbox has at least 16
    // threads with any one word at 10,000 messages. An inbox's four requests ask four different words.
    const searchTenAnswers = threadsPerAnswer();
    const searchTen = await timed(svc.url, h.apiKey, REQUESTS, (i) => `/v0/inboxes/${enc(inboxOf(i % INBOXES))}/threads/search?q=${WORDS[(i + 7 * Math.floor(i / INBOXES) + salt) % WORDS.length]}&limit=10`, [200], searchTenAnswers.answer);
    // The first answer of a wait whose mail is stored already (`after` somewhere in the history), and of one with nothing after it.
    const waitStored = await counted('wait_stored', () => timed(svc.url, h.apiKey, REQUESTS / 4, (i) => {
      const m = spread(i, h.size - PER_THREAD * INBOXES, salt + 2);
      return `/v0/inboxes/${enc(inboxOfMessage(m))}/messages/wait?timeout=0&after=${enc(at(m))}`;
    }));
    // Over every inbox (`GET /v0/messages/wait`), after a Message-ID as a wait loop passes it, and after a time.
    const waitAllId = await counted('wait_all_id', () => timed(svc.url, h.apiKey, REQUESTS / 4, (i) => {
      const picked = spread(i, h.size - PER_THREAD * INBOXES, salt + 3);
      return `/v0/messages/wait?timeout=0&after=${enc(messageIdOf(isSpam(picked) ? picked + 1 : picked))}`;
    }));
    const waitAllTime = await counted('wait_all_time', () => timed(svc.url, h.apiKey, REQUESTS / 4, (i) => `/v0/messages/wait?timeout=0&after=${enc(at(spread(i, h.size - PER_THREAD * INBOXES, salt + 4)))}`));
    const waitNone = await timed(svc.url, h.apiKey, REQUESTS / 4, (i) => `/v0/inboxes/${enc(inboxOf(i % INBOXES))}/messages/wait?timeout=0&after=${enc(new Date(Date.now() - i).toISOString())}`, [204]);
    // Metrics: a distinct `end` per request (a millisecond apart), so none is a read-cache hit.
    const ends = (i: number) => Date.now() - 60_000 - i * 1000 - salt * 100_000;
    const metric = (token: string, url: (i: number) => string) => timed(svc.url, token, METRIC_REQUESTS, url, [200], undefined, METRIC_WARMUP);
    const usage1d = await metric(owner, (i) => `/v0/metrics/usage?end=${enc(new Date(ends(i)).toISOString())}`);
    const usage90d = await metric(owner, (i) => `/v0/metrics/usage?start=${enc(new Date(ends(i) - 89 * DAY_MS).toISOString())}&end=${enc(new Date(ends(i)).toISOString())}`);
    const usage90dKey = await metric(h.apiKey, (i) => `/v0/metrics/usage?start=${enc(new Date(ends(i) - 89 * DAY_MS).toISOString())}&end=${enc(new Date(ends(i)).toISOString())}`);
    const events1d = await metric(owner, (i) => `/v0/metrics/events?end=${enc(new Date(ends(i)).toISOString())}`);
    // The Dashboard's form: a day in hourly buckets (the answer has at most 24 points a type, whatever the day holds).
    const events1dHourly = await metric(owner, (i) => `/v0/metrics/events?period=3600&end=${enc(new Date(ends(i)).toISOString())}`);
    const events90d = await metric(owner, (i) => `/v0/metrics/events?period=86400&start=${enc(new Date(ends(i) - 89 * DAY_MS).toISOString())}&end=${enc(new Date(ends(i)).toISOString())}`);
    // Counts take no window, so only the first request is uncached: it is the figure (no warm-up).
    const t0Counts = performance.now();
    await callJson(svc.url, owner, 'GET', '/v0/metrics/counts');
    const counts = [performance.now() - t0Counts];
    // A session's CSRF token is bound to the process start, so the owner signs in again each round.
    const login = await fetch(`${svc.url}/v0/owner/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: PASSWORD }) });
    if (!login.ok) throw new Error(`owner login: ${login.status}`);
    const session = { cookie: (login.headers.get('set-cookie') ?? '').split(';')[0]!, csrf: ((await login.json()) as { csrf_token: string }).csrf_token };
    const paint = await firstPaint(svc.url, session, [0, 1, 2].map((k) => inboxOf((k + salt * 3) % INBOXES)));
    const file = path.join(path.dirname(h.home), `scale-${salt}.svcbackup`);
    const t0 = performance.now();
    await new Promise<void>((resolve, reject) => {
      const p = spawn(process.execPath, [path.join(root, 'bin', 'svc'), 'backup', '--home', h.home, '--to', file], { stdio: ['ignore', 'ignore', 'inherit'] });
      p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`svc backup exited ${code}`))));
    });
    const backupMs = performance.now() - t0;
    const backupMib = fs.statSync(file).size / 2 ** 20;
    fs.rmSync(file, { force: true });
    return {
      ready_ms: svc.readyMs,
      idle_rss_mib: idle,
      reads,
      threads,
      message,
      search,
      search_threads: searchAnswers.mean(),
      search_ten: searchTen,
      search_ten_threads: searchTenAnswers.mean(),
      wait_stored: waitStored,
      wait_none: waitNone,
      wait_all_id: waitAllId,
      wait_all_time: waitAllTime,
      usage_1d: usage1d,
      usage_90d: usage90d,
      usage_90d_key: usage90dKey,
      events_1d: events1d,
      events_1d_hourly: events1dHourly,
      events_90d: events90d,
      counts,
      paint,
      backup_ms: backupMs,
      backup_mib: backupMib,
    };
  } finally {
    await svc.stop();
  }
}

/**
 * Back to schema 33's day counters, empty (migration 34 refills from the mail, not from them), in
 * one transaction: the hour counters, their roll-ups and migration 39's day roll-ups dropped (their
 * triggers go with their tables, the inbox's by name).
 */
function backToDayCounters(db: Db): void {
  db.transaction(() => {
    for (const { name } of db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '%_metric_%'").all() as { name: string }[]) db.exec(`DROP TRIGGER ${name}`);
    db.exec('DROP TABLE metric_hours; DROP TABLE thread_hours; DROP TABLE metric_totals; DROP TABLE metric_home_hours; DROP TABLE thread_totals; DROP TABLE thread_home_hours;');
    db.exec('DROP TABLE metric_days; DROP TABLE thread_days; DROP TABLE metric_home_days; DROP TABLE thread_home_days;');
    db.exec(`${counterTables(DAY_GRAIN)}${counterTriggers(DAY_GRAIN)}${counterRollups(DAY_GRAIN, { metric: 'metric_home_days', thread: 'thread_home_days' })}`);
  })();
}

/**
 * Once per home, with the service stopped, the home's database changed for good (so last): the
 * time of a migration that adds a column to messages, as the migration runner makes it (the
 * pre-upgrade snapshot of the database, then the change in one transaction), and of migration
 * 34's refill of the per-hour counters and their roll-ups from the stored mail, with migration
 * 39's day roll-ups of them (what upgrading a home stored before them costs); and the database's size.
 */
function finalFigures(h: Home): { db_mib: number; migration_ms: number; snapshot_ms: number; backfill_ms: number } {
  const dbFile = path.join(h.home, 'svc.db');
  const dbBytes = fs.statSync(dbFile).size + (fs.existsSync(`${dbFile}-wal`) ? fs.statSync(`${dbFile}-wal`).size : 0);
  const db = openHome(h.home);
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    const t0 = performance.now();
    takeSnapshot(db, version);
    const t1 = performance.now();
    db.transaction(() => db.exec(`ALTER TABLE messages ADD COLUMN scale_probe_${Date.now()} TEXT`))();
    const t2 = performance.now();
    backToDayCounters(db);
    const t3 = performance.now();
    db.transaction(() => db.exec(`${METRIC_HOURS_MIGRATION}${METRIC_DAY_ROLLUPS_MIGRATION}`))();
    const t4 = performance.now();
    return { db_mib: dbBytes / 2 ** 20, snapshot_ms: t1 - t0, migration_ms: t2 - t0, backfill_ms: t4 - t3 };
  } finally {
    db.close();
  }
}

const p50 = (xs: number[]) => round(percentile(xs, 50), 1);
const p99 = (xs: number[]) => round(percentile(xs, 99), 1);
const n = (size: number) => size.toLocaleString('en-US');

/** The figures of one size; `base` (the smallest size's, same run) is each one's baseline. */
function figures(h: Home, r: Round, final: ReturnType<typeof finalFigures> | null, smallest: boolean): Metric[] {
  const k = (key: string) => `${key}_${h.size}`;
  const at = ` — ${n(h.size)} messages`;
  /** `ratioTarget` false: the answer itself grows with the stored mail, so only the 50 ms target applies. */
  const latency = (key: string, label: string, value: number, metricsTarget = false, ratioTarget = true): Metric => ({
    key: k(key),
    label: label + at,
    unit: 'ms',
    better: 'lower',
    svc: value,
    target: [...(smallest || !ratioTarget ? [] : [{ op: '<=' as const, value: 1.5, of: 'ratio' as const, issue: 37 }]), ...(metricsTarget ? [{ op: '<=' as const, value: 50, issue: 37 }] : [])],
  });
  const out: Metric[] = [
    { key: k('seed_msgs_per_s'), label: `Seeding rate through commitInbound${at}`, unit: 'msg/s', better: 'higher', svc: round(h.size / h.seedSeconds, 0) },
    { key: k('seed_s'), label: `Seeding time${at}`, unit: 's', better: 'lower', svc: round(h.seedSeconds, 1) },
    ...(h.mergeSeconds === undefined ? [] : [{ key: k('shard_merge_s'), label: `Merge of the full search shards' segments after seeding (the service's background step)${at}`, unit: 's', better: 'lower' as const, svc: round(h.mergeSeconds, 1) }]),
    latency('ready_ms', 'Start-up to server.ready', round(r.ready_ms, 0)),
    { key: k('idle_rss_mib'), label: `Idle RSS 5 s after ready${at}`, unit: 'MiB', better: 'lower', svc: r.idle_rss_mib === null ? null : round(r.idle_rss_mib, 1) },
    latency('threads_p50_ms', 'GET threads (limit 20, distinct page) p50', p50(r.threads)),
    latency('threads_p99_ms', 'GET threads p99', p99(r.threads)),
    latency('message_p50_ms', 'GET message (distinct) p50', p50(r.message)),
    latency('message_p99_ms', 'GET message p99', p99(r.message)),
    latency('search_p50_ms', 'Thread search (distinct queries) p50', p50(r.search)),
    latency('search_p99_ms', 'Thread search p99', p99(r.search)),
    { key: k('search_threads'), label: `Thread search: threads per answer (as many as match, up to the limit of 10–40)${at}`, unit: 'threads', better: 'higher', svc: round(r.search_threads, 1) },
    latency('search_ten_p50_ms', 'Thread search, one word, limit 10 (ten threads per answer at every size) p50', p50(r.search_ten)),
    latency('search_ten_p99_ms', 'Thread search, one word, limit 10, p99', p99(r.search_ten)),
    { key: k('search_ten_threads'), label: `Thread search, one word, limit 10: threads per answer${at}`, unit: 'threads', better: 'higher', svc: round(r.search_ten_threads, 1) },
    latency('wait_stored_p50_ms', 'Message wait, first answer (mail stored after `after`) p50', p50(r.wait_stored)),
    latency('wait_stored_p99_ms', 'Message wait, first answer p99', p99(r.wait_stored)),
    latency('wait_all_id_p50_ms', 'Message wait over every inbox, after a Message-ID (stored answer) p50', p50(r.wait_all_id)),
    latency('wait_all_id_p99_ms', 'Message wait over every inbox, after a Message-ID p99', p99(r.wait_all_id)),
    latency('wait_all_time_p50_ms', 'Message wait over every inbox, after a time (stored answer) p50', p50(r.wait_all_time)),
    latency('wait_none_p50_ms', 'Message wait, timeout=0 with nothing new (204) p50', p50(r.wait_none)),
    latency('usage_1d_p50_ms', 'Owner usage metrics, 1 day (hourly) p50', p50(r.usage_1d), true),
    latency('usage_1d_max_ms', `Owner usage metrics, 1 day, slowest of ${METRIC_REQUESTS}`, round(Math.max(...r.usage_1d), 1), true),
    latency('usage_90d_p50_ms', 'Owner usage metrics, 90 days (daily) p50', p50(r.usage_90d), true),
    latency('usage_90d_max_ms', `Owner usage metrics, 90 days, slowest of ${METRIC_REQUESTS}`, round(Math.max(...r.usage_90d), 1), true),
    latency('usage_90d_key_p50_ms', 'Usage metrics of a message_read key (hidden mail left out), 90 days p50', p50(r.usage_90d_key), true),
    latency('events_1d_hourly_p50_ms', 'Owner event metrics, 1 day (hourly, as the Dashboard asks) p50', p50(r.events_1d_hourly), true),
    // One point per distinct event time, up to 1,000 a type: the day holds 100 times the events at
    // 1,000,000 messages (the seeded history spreads them evenly), so the answer does too.
    latency('events_1d_p50_ms', 'Owner event metrics, 1 day (one point per event time: the answer grows with the day\'s mail) p50', p50(r.events_1d), true, false),
    latency('events_90d_p50_ms', 'Owner event metrics, 90 days (daily) p50', p50(r.events_90d), true),
    latency('events_90d_max_ms', `Owner event metrics, 90 days, slowest of ${METRIC_REQUESTS}`, round(Math.max(...r.events_90d), 1), true),
    latency('counts_ms', 'Live counts (unread, awaiting approval), first request', round(r.counts[0]!, 1), true),
    latency('paint_ms', 'Owner web app: navigation → first thread row painted (Chromium, median of 3 inboxes)', round(percentile(r.paint, 50), 0)),
    // Pages read from the file per request (SQLite's cache missed them): what grows with the store
    // when a latency does, whatever the host's speed. No target; the latencies above carry it.
    ...READ_KINDS.map((kind): Metric => {
      const calls = r.reads[kind];
      return { key: k(`reads_${kind}`), label: `Read system calls of the service per request: ${READ_LABELS[kind]}${at}`, unit: 'calls', better: 'lower', svc: calls === null ? null : round(calls, 1) };
    }),
    { key: k('backup_ms'), label: `svc backup (service running)${at}`, unit: 'ms', better: 'lower', svc: round(r.backup_ms, 0) },
    { key: k('backup_mib'), label: `Backup file size${at}`, unit: 'MiB', better: 'lower', svc: round(r.backup_mib, 1) },
    { key: k('backup_us_per_msg'), label: `Backup time per message${at}`, unit: 'µs', better: 'lower', svc: round((r.backup_ms * 1000) / h.size, 1) },
  ];
  if (final) {
    out.push(
      { key: k('db_mib'), label: `Database size (svc.db + WAL)${at}`, unit: 'MiB', better: 'lower', svc: round(final.db_mib, 1) },
      { key: k('db_bytes_per_msg'), label: `Database bytes per message (baseline: raw MIME bytes per message)${at}`, unit: 'B', better: 'lower', svc: round((final.db_mib * 2 ** 20) / h.size, 0), baseline: round(h.rawBytes / h.size, 0) },
      { key: k('migration_ms'), label: `Migration adding a column to messages (pre-upgrade snapshot + ALTER)${at}`, unit: 'ms', better: 'lower', svc: round(final.migration_ms, 0) },
      { key: k('snapshot_ms'), label: `… of which the pre-upgrade snapshot of the database${at}`, unit: 'ms', better: 'lower', svc: round(final.snapshot_ms, 0) },
      { key: k('backfill_ms'), label: `Refill of the per-hour metric counters and roll-ups, and their day roll-ups (migrations 34 and 39)${at}`, unit: 'ms', better: 'lower', svc: round(final.backfill_ms, 0) },
    );
  }
  return out;
}

/** Seeds every size once, measures `runs` rounds on each, then the once-only figures; each figure's baseline is the smallest size's. */
export async function benchScale(runs: number): Promise<{ runs: Metric[][]; notes: string[] }> {
  const sizes = scaleSizes();
  ensureChromium(); // the first paint of each size needs it; seeding a large home takes half an hour
  const homes: Home[] = [];
  const kept = keptHomes();
  try {
    for (const size of sizes) homes.push(kept.find((h) => h.size === size) ?? (await seedHome(size)));
    const all: Metric[][] = [];
    for (let run = 0; run < runs; run++) {
      const last = run === runs - 1;
      const perSize: Metric[][] = [];
      for (const h of homes) {
        const round1 = await measure(h, run);
        perSize.push(figures(h, round1, last ? finalFigures(h) : null, h === homes[0]));
      }
      // The baseline of a figure is the same figure at the smallest size (same run).
      const base = new Map(perSize[0]!.map((m) => [m.key.replace(/_\d+$/, ''), m.svc]));
      for (const metrics of perSize.slice(1)) for (const m of metrics) if (m.baseline === undefined) m.baseline = base.get(m.key.replace(/_\d+$/, '')) ?? null;
      const flat = perSize.flat();
      console.log(JSON.stringify({ bench: 'scale', run, ...Object.fromEntries(flat.map((m) => [m.key, m.svc])) }));
      all.push(flat);
    }
    const notes = [
      `Sizes: ${sizes.map(n).join(', ')} messages (\`npm run bench -- scale --sizes ${sizes.join(',')}\`); ${INBOXES} inboxes, ${PER_THREAD} messages per thread, spread over ${SPAN_DAYS} days; ` +
        `each figure's baseline is the same figure at ${n(sizes[0]!)} messages in the same run, so "svc ÷ baseline" is how much it grew with the stored mail.`,
      ...homes.map((h) => `Raw MIME seeded at ${n(h.size)}: ${round(h.rawBytes / 2 ** 20, 1)} MiB (${round(h.rawBytes / h.size, 0)} bytes per message).`),
    ];
    return { runs: all, notes };
  } finally {
    for (const child of running) child.kill('SIGTERM');
    // BENCH_KEEP_HOMES=1 keeps the seeded homes for a look after a failure (they are large).
    if (process.env.BENCH_KEEP_HOMES !== '1') for (const h of homes) if (!kept.includes(h)) fs.rmSync(path.dirname(h.home), { recursive: true, force: true });
  }
}

/**
 * `npm run bench [name]`: runs every benchmark (or one) BENCH_RUNS times (default 3), prints one
 * JSON line per run, and writes bench/results.json, bench/REPORT.md and bench/charts/*.svg with the
 * median of each figure and its ratio to the same-run baseline. Running one benchmark replaces only
 * its section of the existing results. Figures never gate anything.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchStartup, STARTS } from './startup.js';
import { benchReadApi } from './read-api.js';
import { benchIngest } from './ingest.js';
import { measureBaseline, measureInbound } from './inbound-memory.js';
import { benchPostfix, PEER_CONFIG } from './peer-postfix.js';
import { benchSend } from './send.js';
import { benchWebhooks } from './webhooks.js';
import { benchWsFanout, BURST, BURST_CONCURRENCY, CLIENTS, EVENTS as WS_EVENTS, RATE } from './ws-fanout.js';
import { benchWaits, ROUNDS as WAIT_ROUNDS, WAITERS } from './waits.js';
import { benchScale, scaleSizes } from './scale.js';
import { benchDir, summarize, writeReport, type BenchResult, type Results } from './report.js';
import { cpuSnapshot, round, rssMiB, running, sampleMemory, type Metric } from './util.js';
import { profiled, type StageBreakdown } from './stages.js';

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

interface Outcome {
  runs: Metric[][];
  skipped?: string[];
  notes?: string[];
  stages?: StageBreakdown;
}

/**
 * The extra profiled run that breaks a benchmark's time down by stage (bench/stages.ts); skipped
 * with BENCH_STAGES=0. Its failure costs only the breakdown, never the benchmark's figures.
 */
async function stagesOf(messages: number, title: string, once: () => Promise<unknown>): Promise<StageBreakdown | undefined> {
  if (process.env.BENCH_STAGES === '0') return undefined;
  return profiled(messages, title, once).catch((err: unknown) => {
    console.error('profiled run failed:', err);
    for (const child of running) child.kill('SIGTERM');
    return undefined;
  });
}

interface BenchDef {
  title: string;
  what: string;
  baseline: string;
  peer?: string;
  peerConfig?: string[];
  config: () => string[];
  run(runs: number): Promise<Outcome>;
  /** Runs only when named (`npm run bench -- <name>`), not in a run of every benchmark: it takes long. */
  optIn?: boolean;
  /**
   * Notes from the run's own figures; one starting with "Gap" explains a missed target and is
   * repeated under the report's targets.
   */
  notes?: (s: Figures, hostBusyPct: number) => string[];
}

type Figures = Record<string, { svc: number | null; baseline: number | null; ratio: number | null; peer: number | null } | undefined>;

/** Calls a one-run benchmark `runs` times. */
const repeat = (once: () => Promise<Metric[]>) => async (runs: number): Promise<Outcome> => {
  const all: Metric[][] = [];
  for (let r = 0; r < runs; r++) all.push(await once());
  return { runs: all };
};

/** One ingest run: svc (with its RSS sampled from outside ingest.ts) and then the Postfix peer. */
async function ingestRun(skipped: Set<string>): Promise<Metric[]> {
  let home: string | null = null;
  const memory = sampleMemory(() => {
    const svc = [...running].find((p) => p.spawnargs.includes('serve'));
    if (svc && !home) home = svc.spawnargs[svc.spawnargs.indexOf('--home') + 1] ?? null;
    return svc ? rssMiB(svc.pid) : null;
  });
  const f = await benchIngest();
  const rss = memory.stop();
  // ingest.ts leaves its temporary home (~130 MB after 2,000 messages); remove it here.
  if (home && path.basename(path.dirname(home)).startsWith('svc-bench-ingest-')) fs.rmSync(path.dirname(home), { recursive: true, force: true });
  const peer = await benchPostfix();
  const p = 'skipped' in peer ? null : peer;
  if ('skipped' in peer) skipped.add(`the Postfix peer: ${peer.skipped}`);
  else console.log(JSON.stringify({ bench: 'ingest-peer-postfix', ...peer }));
  const n = (v: unknown) => (typeof v === 'number' ? v : null);
  return [
    { key: 'committed_msgs_per_s', label: 'Ingest: SMTP → committed + WS event (peer: → Maildir file)', unit: 'msg/s', better: 'higher', svc: n(f.svc_msgs_per_s), baseline: n(f.baseline_accept_discard_msgs_per_s), peer: p?.stored_msgs_per_s ?? null, chart: 'throughput', target: [{ op: '>=', value: 250, issue: 4 }, { op: '>=', value: 0.75, of: 'peer', issue: 19 }] },
    { key: 'accept_msgs_per_s', label: 'Ingest: SMTP accepted (250 after DATA)', unit: 'msg/s', better: 'higher', svc: n(f.edge_accept_msgs_per_s), baseline: n(f.baseline_accept_discard_msgs_per_s), peer: p?.accept_msgs_per_s ?? null },
    { key: 'p50_ms', label: 'Ingest latency p50: SMTP 250 → WS event (peer: → Maildir)', unit: 'ms', better: 'lower', svc: n(f.accept_to_event_p50_ms), peer: p?.accept_to_stored_p50_ms ?? null, chart: 'latency', target: [{ op: '<=', value: 250, issue: 4 }, { op: '<=', value: 60, issue: 19 }] },
    { key: 'p99_ms', label: 'Ingest latency p99', unit: 'ms', better: 'lower', svc: n(f.accept_to_event_p99_ms), peer: p?.accept_to_stored_p99_ms ?? null },
    { key: 'p50_first_quarter_ms', label: 'Ingest p50, first quarter of the messages sent', unit: 'ms', better: 'lower', svc: n(f.accept_to_event_p50_first_quarter_ms) },
    { key: 'p50_last_quarter_ms', label: 'Ingest p50, last quarter (growing = backlog)', unit: 'ms', better: 'lower', svc: n(f.accept_to_event_p50_last_quarter_ms) },
    { key: 'cpu_ms_per_msg', label: 'CPU per message (svc process, all threads; peer: all Postfix processes)', unit: 'ms', better: 'lower', svc: n(f.svc_cpu_ms_per_msg), peer: p?.cpu_ms_per_msg ?? null, target: { op: '<=', value: 2, issue: 19 } },
    { key: 'load_cpu_ms_per_msg', label: 'CPU per message of the SMTP load generator', unit: 'ms', better: 'lower', svc: n(f.load_cpu_ms_per_msg) },
    { key: 'host_cpu_busy_pct', label: 'Host CPU busy during the svc ingest', unit: '%', better: 'lower', svc: n(f.host_cpu_busy_pct) },
    { key: 'loaded_rss_mib', label: 'Loaded RSS: svc peak during ingest (peer: peak PSS summed over its processes)', unit: 'MiB', better: 'lower', svc: rss.peak, peer: p?.peak_pss_mib ?? null, target: { op: '<=', value: 300, issue: 19 } },
    { key: 'committed', label: `Messages committed (peer: stored) of ${n(f.messages)}`, unit: '', better: 'higher', svc: n(f.committed), peer: p?.stored ?? null },
  ];
}

const MEMORY_MB = env('BENCH_MEMORY_MB', 20);

/** One inbound-memory run: one message and four at once as installed, one without the allocator settings, and the baselines. */
async function inboundMemoryRun(): Promise<Metric[]> {
  const one = await measureInbound(1, MEMORY_MB);
  const four = await measureInbound(4, MEMORY_MB);
  const bare = await measureInbound(1, MEMORY_MB, { bare: true });
  const baseOne = await measureBaseline(1, MEMORY_MB);
  const baseFour = await measureBaseline(4, MEMORY_MB);
  for (const f of [one, four, bare]) console.log(JSON.stringify({ bench: 'inbound-memory', ...f }));
  return [
    { key: 'one_peak_rise_mib', label: `Peak RSS rise, one ${MEMORY_MB} MiB message (SMTP → stored)`, unit: 'MiB', better: 'lower', svc: one.peak_rise_mib, baseline: baseOne.peak_rise_mib, target: { op: '<=', value: 5 * MEMORY_MB, issue: 19 } },
    { key: 'one_smtp_peak_rise_mib', label: 'Peak RSS rise while the edge receives it (until 250)', unit: 'MiB', better: 'lower', svc: one.peak_rise_during_smtp_mib, baseline: baseOne.peak_rise_mib },
    { key: 'one_rise_after_mib', label: 'RSS rise 15 s after it was stored', unit: 'MiB', better: 'lower', svc: one.rise_after_mib },
    { key: 'four_peak_rise_mib', label: `Peak RSS rise, four ${MEMORY_MB} MiB messages at once`, unit: 'MiB', better: 'lower', svc: four.peak_rise_mib, baseline: baseFour.peak_rise_mib },
    { key: 'four_rise_after_mib', label: 'RSS rise 15 s after the four were stored', unit: 'MiB', better: 'lower', svc: four.rise_after_mib },
    { key: 'bare_one_peak_rise_mib', label: 'One message, without the service\'s allocator settings: peak rise', unit: 'MiB', better: 'lower', svc: bare.peak_rise_mib, baseline: baseOne.peak_rise_mib },
    { key: 'bare_one_rise_after_mib', label: 'One message, without the allocator settings: rise 15 s after', unit: 'MiB', better: 'lower', svc: bare.rise_after_mib },
    { key: 'idle_rss_mib', label: 'RSS before the large mail (idle after one small message)', unit: 'MiB', better: 'lower', svc: one.rss_before_mib },
    { key: 'one_stored_ms', label: 'One large message: first byte sent → listed by the API', unit: 'ms', better: 'lower', svc: one.stored_ms },
  ];
}

const BENCHES: Record<string, BenchDef> = {
  startup: {
    title: 'Start-up time and idle memory',
    what: 'Time from spawning `svc serve` on an existing home to its `server.ready` line, and its RSS 5 s after ready.',
    baseline: 'a fastify hello-world process started and measured the same way, alternating with svc',
    config: () => [`${STARTS} starts per run (BENCH_STARTUP_STARTS), median per run`, 'idle RSS sampled once per run, 5 s after ready'],
    run: repeat(benchStartup),
  },
  'read-api': {
    title: 'REST reads and search at 100,000 messages',
    what: 'A home seeded once with `BENCH_MESSAGES` messages (4 per thread); each run restarts svc on it and loads `GET /v0/inboxes/{inbox}/threads?limit=20` and `GET …/messages/{id}` with autocannon (the same URL over and over, as polling agents do: mostly answered from the service\'s read cache, which is valid until the data changes), then runs 200 thread searches one at a time and thread search under the same load, every search a distinct URL (two-word query, limit 10–40) so that none is a cache hit. The service\'s RSS is sampled every 250 ms during the load.',
    baseline: 'fastify hello-world (`GET /` → `{"hello":"world"}`) in its own process under the same autocannon load, and 200 sequential requests for the one-client latencies',
    config: () => [`${env('BENCH_MESSAGES', 100_000).toLocaleString('en-US')} messages`, '50 connections, 10 s per load', 'API key with inbox_read + message_read', 'search: `GET …/threads/search?q=<two words>&limit=<10–40>`, 7,440 distinct URLs cycled in order'],
    run: async (runs) => ({ runs: await benchReadApi(runs) }),
    notes: (s, busy) => {
      const notes: string[] = [];
      const one = s.search_p50_ms?.svc;
      const rps = s.search_rps?.svc;
      if (one != null && rps != null) {
        notes.push(
          `Search: a repeated search is answered from the read cache like the list above; a new one costs about ${round(one, 1)} ms at one client (p50). ` +
            `Under 50 connections of distinct searches the service answers about ${Math.round(rps)} per second and the rest queue (p50 ${s.search_loaded_p50_ms?.svc ?? '?'} ms): ` +
            'each search runs in the search lane\'s reader threads (workers/readers/, one per core), where bm25 scores the newest 500 passing matches (docs/mail-store.md, "Search"): a two-word query here matches about 18,750 of the 100,000 messages, and bm25\'s IDF (FTS5 counts each word\'s documents, a third of the store, on every query) is about half of its cost, the band\'s join and scoring most of the rest (docs/benchmarks.md, "Issue 19").',
        );
      }
      const p99 = s.threads_p99_ms;
      if (p99?.svc == null || p99.svc <= 15) return notes;
      return [...notes,
        `Gap (read API): GET threads p99 ${p99.svc} ms against ≤ 15 ms, with 50 connections from autocannon running on the same ${os.cpus().length} cores ` +
          `(host ${busy}% busy during the benchmark). The hello-world baseline's p99 in the same run was ${p99.baseline ?? '?'} ms: part of the tail is ` +
          'time spent waiting for a core, which any server on this machine sees; the rest is the service\'s own per-request work (authentication, the read, JSON serialization).',
      ];
    },
  },
  ingest: {
    title: 'Ingest: SMTP → committed → WebSocket event',
    what: '10 KB messages over SMTP into `svc serve --local-edge` (the edge buffers, the home pulls, parses, commits and emits `message.received`), measured from each message\'s SMTP 250 to its event on a WebSocket. The peer gets the same load from the same client code.',
    baseline: 'smtp-server (the library the edge uses) accepting and discarding, driven by the same nodemailer client',
    peer: 'Postfix (Debian package) delivering to a Maildir, same client, same message size and connection count, measured to the file appearing in `new/`',
    peerConfig: PEER_CONFIG,
    config: () => [`${env('BENCH_INGEST_MESSAGES', 2000)} messages (BENCH_INGEST_MESSAGES)`, `${env('BENCH_INGEST_CONNECTIONS', 8)} pooled SMTP connections (BENCH_INGEST_CONNECTIONS)`, 'mail checks answered by an empty DNS server on loopback in its own process'],
    run: async (runs) => {
      const skipped = new Set<string>();
      const all: Metric[][] = [];
      for (let r = 0; r < runs; r++) all.push(await ingestRun(skipped));
      const messages = env('BENCH_INGEST_MESSAGES', 2000);
      const stages = await stagesOf(messages, `one more run of ${messages} messages with every thread of the service profiled`, benchIngest);
      return { runs: all, skipped: [...skipped], stages };
    },
    notes: (s, busy) => {
      const rate = s.committed_msgs_per_s?.svc;
      const p50 = s.p50_ms?.svc;
      const cpu = s.cpu_ms_per_msg?.svc;
      if (rate == null || p50 == null || cpu == null || (rate >= 250 && p50 <= 250)) return [];
      const missed = [rate < 250 ? `${Math.round(rate)} msg/s against ≥ 250 msg/s` : null, p50 > 250 ? `p50 ${Math.round(p50)} ms against ≤ 250 ms` : null].filter(Boolean).join(' and ');
      const first = s.p50_first_quarter_ms?.svc;
      const last = s.p50_last_quarter_ms?.svc;
      const accept = s.accept_msgs_per_s?.svc;
      const backlog =
        first != null && last != null && last > first * 1.5
          ? `A backlog built during the run (p50 ${Math.round(first)} ms in the first quarter of the messages, ${Math.round(last)} ms in the last): the home commits more slowly than the edge accepts.`
          : `No backlog built (p50 ${first == null ? '?' : Math.round(first)} ms in the first quarter, ${last == null ? '?' : Math.round(last)} ms in the last)${accept != null ? `, and the edge accepted at ${Math.round(accept)} msg/s, the rate the home committed` : ''}: the whole pipeline runs at the speed the cores allow.`;
      return [
        `Gap (ingest): measured ${missed}. The service spent ${cpu} ms of CPU per message (edge + home, all threads), so 250 msg/s needs ${round((cpu * 250) / 1000, 2)} cores for the service alone, ` +
          `plus ${s.load_cpu_ms_per_msg?.svc ?? '?'} ms per message for the SMTP load generator, on a ${os.cpus().length}-core machine shared with other work (host ${busy}% busy during the benchmark). ` +
          `${backlog} The peer stores the same load with ${s.cpu_ms_per_msg?.peer ?? '?'} ms of CPU per message. The per-message CPU of the ingest path is being reduced in parallel with this report.`,
      ];
    },
  },
  'inbound-memory': {
    title: 'Memory for large inbound mail',
    what: `\`svc serve --local-edge\` receives ${MEMORY_MB} MiB messages (half text, half a binary attachment) over SMTP, one alone and four at once; the edge seals each, the home fetches, opens, parses and stores it. Peak RSS is the kernel's high-water mark of the whole process (edge thread, home loops, opener), reset just before the send; "after" is 15 s after the last message was listed. The service runs with the allocator settings of its installed unit (MALLOC_ARENA_MAX=2, MALLOC_MMAP_THRESHOLD_=131072) except in the "without" rows.`,
    baseline: 'smtp-server (the library the edge uses) in its own process receiving the same messages and keeping each whole until the end of DATA: the memory of merely holding the message',
    config: () => [`${MEMORY_MB} MiB per message (BENCH_MEMORY_MB)`, 'one message, then four sent at once on four connections', 'mail checks answered by an empty DNS server on loopback'],
    run: repeat(inboundMemoryRun),
  },
  send: {
    title: 'Send: API → SMTP sink',
    what: '`POST /v0/inboxes/{inbox}/messages/send` with 16 concurrent API callers, measured from the request to the SMTP sink (the configured smart host) accepting the message: compose, DKIM signing, durable outbox commit and handover.',
    baseline: 'nodemailer sending the same messages straight to the same sink with the same concurrency',
    config: () => [`${env('BENCH_SEND_MESSAGES', 1000)} messages (BENCH_SEND_MESSAGES)`, `${env('BENCH_SEND_CONCURRENCY', 16)} concurrent callers (BENCH_SEND_CONCURRENCY)`, '~2 KB text body', 'smart host: a loopback smtp-server'],
    run: async (runs) => {
      const { runs: all } = await repeat(benchSend)(runs);
      const messages = env('BENCH_SEND_MESSAGES', 1000);
      const stages = await stagesOf(messages, `one more run of ${messages} sends with every thread of the service profiled`, benchSend);
      return { runs: all, stages };
    },
    notes: (s) => {
      const rate = s.msgs_per_s?.svc;
      const cpu = s.cpu_ms_per_msg?.svc;
      if (rate == null || cpu == null || rate >= 200) return [];
      return [
        `Gap (send): measured ${Math.round(rate)} msg/s against ≥ 200 msg/s. The service spent ${cpu} ms of CPU per message ` +
          `(compose, DKIM RSA-2048 signature, durable outbox commit, SMTP handover), so 200 msg/s needs ${round((cpu * 200) / 1000, 2)} cores for the service alone, ` +
          `on a ${os.cpus().length}-core machine that also runs the 16 API callers and the SMTP sink (host ${s.host_cpu_busy_pct?.svc ?? '?'}% busy during the sends).`,
      ];
    },
  },
  webhooks: {
    title: 'Webhook fan-out',
    what: 'Events appended to the log in batches of 1,000 from outside the service, delivered as signed POSTs to every owner-created webhook on loopback receivers; latency from the event\'s `created_at` to its arrival (includes the service\'s 1 s poll of the log for writes from other processes).',
    baseline: 'the same POSTs sent straight to the same receivers by a plain node:http keep-alive loop, one in-order sender per receiver (its latency counts from the moment the whole batch was ready)',
    config: () => [`${env('BENCH_WEBHOOK_EVENTS', 10_000).toLocaleString('en-US')} events (BENCH_WEBHOOK_EVENTS)`, `${env('BENCH_WEBHOOK_RECEIVERS', 5)} webhooks / receivers (BENCH_WEBHOOK_RECEIVERS)`, 'event type message.received with a ~550-byte text'],
    run: repeat(benchWebhooks),
  },
  'ws-fanout': {
    title: 'WebSocket fan-out to 1,000 clients',
    what: `${CLIENTS.toLocaleString('en-US')} clients connected to \`/v0/ws\` with one API key (draft_read, scoped to the inbox), subscribed to \`draft.created\`; events injected by \`POST /v0/inboxes/{inbox}/drafts\` (each commits a draft and its event). Latency from the event's commit (the millisecond in its uuidv7 \`event_id\`) to each client's receipt. Paced phase: ${WS_EVENTS} events at ${RATE}/s; burst phase: ${BURST} events from ${BURST_CONCURRENCY} concurrent callers as fast as answered.`,
    baseline: 'a plain `ws` server on node:http in its own process that broadcasts a same-shaped frame to every client when POSTed, driven by the same injector and measured by the same clients',
    config: () => [`${CLIENTS} clients (BENCH_WS_CLIENTS)`, `paced: ${WS_EVENTS} events (BENCH_WS_EVENTS) at ${RATE}/s (BENCH_WS_RATE)`, `burst: ${BURST} events (BENCH_WS_BURST), ${BURST_CONCURRENCY} callers`, 'clients in the benchmark process, no compression'],
    run: repeat(benchWsFanout),
  },
  waits: {
    title: 'Waiting for the next message',
    what: `${WAITERS.toLocaleString('en-US')} requests wait on \`GET /v0/inboxes/{inbox}/messages/wait\` (one API key, the round's subject) on \`svc serve --local-edge\`; one matching message then arrives over SMTP. Latency from the message's commit (the millisecond in the uuidv7 \`event_id\` of its \`message.received\` event) to each waiter's answer; also the service's CPU while the requests wait with no mail arriving, and its RSS rise with them waiting (issue 20 §1).`,
    baseline: 'a plain node:http server in its own process holding as many long-polls and answering them all with the same JSON body when POSTed, measured from the POST by the same clients',
    config: () => [`${WAITERS} waiting requests (BENCH_WAITERS)`, `${WAIT_ROUNDS} rounds, one message each (BENCH_WAIT_ROUNDS)`, 'clients in the benchmark process, keep-alive connections'],
    run: repeat(benchWaits),
  },
  scale: {
    title: 'Scale: cost at 10,000 and 1,000,000 stored messages',
    what:
      'Homes of each size (50 inboxes, 4 messages per thread, one in five with a 6 KB attachment, most older mail read, some flagged and some spam, spread over 400 days) seeded in-process through `commitInbound` — the function the inbound loop calls — in transactions of 500, with label edits through `updateMessageLabels`; inboxes, the owner and the read key made over the API. ' +
      'For each size in the same run: start-up to `server.ready`, idle RSS, one client making distinct (uncached) GET threads, GET message, thread search, message-wait, metrics and counts requests, the owner web app\'s first paint of the mail list in Chromium, and `svc backup` with the service running; once at the end, with the service stopped, a migration adding a column to messages (the runner\'s pre-upgrade snapshot and the ALTER) and migration 25\'s counter backfill. Issue 37 §1: every latency at the largest size within 1.5× of the smallest, metrics under 50 ms for any window.',
    baseline: 'the same figure at the smallest size, in the same run (for database bytes per message: the raw MIME bytes per message)',
    config: () => [`sizes ${scaleSizes().map((s) => s.toLocaleString('en-US')).join(', ')} (\`--sizes\` or BENCH_SCALE_SIZES)`, '200 distinct requests per read figure, 15 per metrics figure, one client', 'run only when named: `npm run bench -- scale`'],
    optIn: true,
    run: benchScale,
  },
};

async function machineFacts(): Promise<Results['machine']> {
  const before = cpuSnapshot(undefined);
  await new Promise((r) => setTimeout(r, 3_000));
  const background = cpuSnapshot(undefined).since(before).hostBusyPct;
  return {
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model.trim() ?? 'unknown',
    memory_gib: round(os.totalmem() / 2 ** 30, 1),
    node: process.version,
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    load_average_at_start: os.loadavg().map((x) => round(x, 2)),
    background_cpu_busy_pct: round(background, 0),
  };
}

// `all`: every benchmark, the opt-in ones too, so that one run regenerates the whole report.
const everything = process.argv[2] === 'all';
const only = everything ? undefined : process.argv[2];
if (only && !BENCHES[only]) {
  console.error(`unknown benchmark ${only}; one of: ${Object.keys(BENCHES).join(', ')}, or all`);
  process.exit(2);
}
const resultsFile = path.join(benchDir, 'results.json');
// Kept for the benchmarks this run leaves out (all but the one named, or the opt-in ones).
const previous: Results | null = fs.existsSync(resultsFile) ? (JSON.parse(fs.readFileSync(resultsFile, 'utf8')) as Results) : null;
const results: Results = { generated_at: new Date().toISOString(), bench_runs: RUNS, machine: await machineFacts(), benches: {} };
for (const [name, def] of Object.entries(BENCHES)) {
  if ((only && name !== only) || (!only && !everything && def.optIn)) {
    if (previous?.benches[name]) results.benches[name] = previous.benches[name];
    continue;
  }
  console.error(`bench ${name}: ${RUNS} run(s)`);
  const started = new Date();
  const cpu = cpuSnapshot(undefined);
  // A benchmark that fails is reported as not measured; the others still run.
  const outcome: Outcome = await def.run(RUNS).catch((err: unknown) => {
    console.error(`bench ${name} failed:`, err);
    for (const child of running) child.kill('SIGTERM'); // what the failed benchmark left running
    return { runs: [], skipped: [`the benchmark failed: ${err instanceof Error ? err.message : String(err)}`] };
  });
  const entry: BenchResult = {
    title: def.title,
    started_at: started.toISOString(),
    duration_s: round((Date.now() - started.getTime()) / 1000, 0),
    host_cpu_busy_pct: round(cpuSnapshot(undefined).since(cpu).hostBusyPct, 0),
    runs: outcome.runs,
    what: def.what,
    baseline: def.baseline,
    config: def.config(),
    ...(def.peer ? { peer: def.peer, peer_config: def.peerConfig } : {}),
    ...(outcome.skipped?.length ? { skipped: outcome.skipped } : {}),
    ...(outcome.stages ? { stages: outcome.stages } : {}),
  };
  const figures: Figures = Object.fromEntries(summarize(outcome.runs).map((x) => [x.metric.key, x]));
  const notes = [...(outcome.notes ?? []), ...(def.notes?.(figures, entry.host_cpu_busy_pct) ?? [])];
  if (notes.length) entry.notes = notes;
  results.benches[name] = entry;
  // Saved after each benchmark, so an interrupted run keeps what it measured.
  fs.writeFileSync(resultsFile, JSON.stringify(results, null, 2) + '\n');
  writeReport(results);
}
fs.writeFileSync(resultsFile, JSON.stringify(results, null, 2) + '\n');
writeReport(results);
console.error(`wrote ${path.relative(process.cwd(), path.join(benchDir, 'REPORT.md'))}`);

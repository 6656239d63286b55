/**
 * The report writer: medians of each figure over the runs, the ratio to its same-run baseline
 * (and to the peer), targets from earlier issues, machine facts, and the two SVG charts.
 * Input is bench/results.json (the raw figures of every run), so the report can be regenerated
 * without measuring again: `node dist/bench/report.js`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { barChart, type ChartGroup } from './charts.js';
import { median, round, type Metric } from './util.js';
import type { StageBreakdown } from './stages.js';

/** Where the time goes: busy ms per message by stage and by thread (bench/stages.ts). */
function stageTable(b: StageBreakdown): string[] {
  const total = round(b.rows.reduce((sum, r) => sum + r.ms_per_msg, 0), 2);
  return [
    `Where the service's time goes, by stage (${b.title}; busy time per message from V8 CPU profiles of every thread, start-up and blocked waits left out; bench/stages.ts):`,
    '',
    '| stage | busy ms per message | share |',
    '|---|---:|---:|',
    ...b.rows.filter((r) => r.share_pct >= 0.5).map((r) => `| ${r.stage} | ${r.ms_per_msg} | ${r.share_pct}% |`),
    `| all stages | ${total} | 100% |`,
    '',
    `By thread: ${b.threads.map((t) => `${t.thread} ${t.ms_per_msg} ms`).join(', ')}.`,
  ];
}

export interface MachineFacts {
  cpus: number;
  cpu_model: string;
  memory_gib: number;
  node: string;
  os: string;
  load_average_at_start: number[];
  /** Host CPU busy % over a few seconds before the first benchmark: other work on the machine. */
  background_cpu_busy_pct: number;
}

export interface BenchResult {
  title: string;
  started_at: string;
  duration_s: number;
  /** Host CPU busy % while this benchmark ran (its own load included). */
  host_cpu_busy_pct: number;
  runs: Metric[][];
  what: string;
  baseline: string;
  config: string[];
  peer?: string;
  peer_config?: string[];
  /** Why the peer (or anything else) was not measured, if so. */
  skipped?: string[];
  notes?: string[];
  /** Busy time per message by stage, from one extra profiled run (bench/stages.ts). */
  stages?: StageBreakdown;
}

export interface Results {
  generated_at: string;
  bench_runs: number;
  machine: MachineFacts;
  benches: Record<string, BenchResult>;
}

export const benchDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench');

interface Summary {
  metric: Metric;
  svc: number | null;
  svcRuns: number[];
  baseline: number | null;
  ratio: number | null;
  peer: number | null;
  peerRatio: number | null;
}

const nums = (xs: (number | null | undefined)[]) => xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
const med = (xs: (number | null | undefined)[]) => (nums(xs).length ? median(nums(xs)) : null);

/** Medians per figure key, in the order of the first run. Ratios are medians of per-run ratios. */
export function summarize(runs: Metric[][]): Summary[] {
  const keys = [...new Set(runs.flat().map((m) => m.key))];
  return keys.map((key) => {
    const ms = runs.map((r) => r.find((m) => m.key === key)).filter((m): m is Metric => m !== undefined);
    return {
      metric: ms[ms.length - 1],
      svc: med(ms.map((m) => m.svc)),
      svcRuns: nums(ms.map((m) => m.svc)),
      baseline: med(ms.map((m) => m.baseline)),
      ratio: med(ms.map((m) => (m.svc != null && m.baseline ? m.svc / m.baseline : null))),
      peer: med(ms.map((m) => m.peer)),
      peerRatio: med(ms.map((m) => (m.svc != null && m.peer ? m.svc / m.peer : null))),
    };
  });
}

function fmt(v: number | null, unit = ''): string {
  if (v === null) return '—';
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  const s = v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
  return unit ? `${s} ${unit}` : s;
}

const fmtRatio = (r: number | null) => (r === null ? '—' : `${r >= 10 ? round(r, 1) : r >= 0.1 ? round(r, 2) : Number(r.toPrecision(2))}×`);

interface TargetCheck {
  text: string;
  met: boolean;
  measured: string;
}

/** Each target of a figure, checked; a target whose figure was not measured is left out. */
function targetsOf(s: Summary): TargetCheck[] {
  const ts = s.metric.target === undefined ? [] : Array.isArray(s.metric.target) ? s.metric.target : [s.metric.target];
  return ts.flatMap((t) => {
    const value = t.of === 'ratio' ? s.ratio : t.of === 'peer' ? s.peerRatio : s.svc;
    if (value === null) return [];
    const met = t.op === '>=' ? value >= t.value : value <= t.value;
    const op = t.op === '>=' ? '≥' : '≤';
    const what = t.of === 'ratio' ? `${op} ${t.value}× baseline` : t.of === 'peer' ? `${op} ${t.value}× peer` : `${op} ${t.value} ${s.metric.unit}`;
    return [{ text: `${what} (issue ${t.issue}): ${met ? 'met' : 'NOT met'}`, met, measured: t.of === 'value' || t.of === undefined ? fmt(s.svc, s.metric.unit) : fmtRatio(value) }];
  });
}

function table(summaries: Summary[], hasPeer: boolean, peerName: string): string[] {
  const head = ['Figure', 'svc (median)', 'baseline (median)', 'svc ÷ baseline'];
  if (hasPeer) head.push(`${peerName} (median)`, `svc ÷ ${peerName}`);
  head.push('svc, every run', 'target');
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const s of summaries) {
    const ts = targetsOf(s);
    const row = [s.metric.label, fmt(s.svc, s.metric.unit), fmt(s.baseline, s.baseline === null ? '' : s.metric.unit), fmtRatio(s.ratio)];
    if (hasPeer) row.push(fmt(s.peer, s.peer === null ? '' : s.metric.unit), fmtRatio(s.peerRatio));
    row.push(s.svcRuns.map((v) => fmt(v)).join(', ') || '—', ts.map((t) => t.text).join('; '));
    lines.push(`| ${row.join(' | ')} |`);
  }
  return lines;
}

function chartGroups(results: Results, kind: 'throughput' | 'latency'): ChartGroup[] {
  const groups: ChartGroup[] = [];
  for (const bench of Object.values(results.benches)) {
    for (const s of summarize(bench.runs)) {
      if (s.metric.chart !== kind || s.svc === null) continue;
      const bars = [{ name: 'svc', value: s.svc }];
      if (s.baseline !== null) bars.push({ name: 'baseline', value: s.baseline });
      if (s.peer !== null) bars.push({ name: 'peer', value: s.peer });
      groups.push({ label: s.metric.label, unit: s.metric.unit, bars });
    }
  }
  return groups;
}

/**
 * Issue 19's figures when it was filed (one run of each benchmark on a quieter hour of the same
 * 2-core machine, quoted from the issue), beside this run's medians. Absolute figures move with
 * the machine's load; the same-run ratios are the comparable part, so both are shown.
 */
const BEFORE_ISSUE_19: { bench: string; key: string; before: string; of?: 'value' | 'ratio' | 'peer' }[] = [
  { bench: 'startup', key: 'ready_ms', before: '1,574 ms (fastify hello 146 ms)' },
  { bench: 'startup', key: 'idle_rss_mib', before: '311 MiB' },
  { bench: 'read-api', key: 'threads_rps', before: '0.29× hello', of: 'ratio' },
  { bench: 'read-api', key: 'threads_uncached_rps', before: '~1,500 req/s, 0.025× hello' },
  { bench: 'read-api', key: 'threads_uncached_p99_ms', before: '62–116 ms' },
  { bench: 'read-api', key: 'search_p50_ms', before: '10.7 ms' },
  { bench: 'read-api', key: 'search_rps', before: '107 req/s' },
  { bench: 'read-api', key: 'search_loaded_p99_ms', before: '899 ms' },
  { bench: 'read-api', key: 'cheap_read_under_search_p99_ms', before: '1.0–1.8 s, ~380× its p99 alone', of: 'ratio' },
  { bench: 'ingest', key: 'committed_msgs_per_s', before: '308 msg/s, 0.32× Postfix (970)', of: 'peer' },
  { bench: 'ingest', key: 'p50_ms', before: '143 ms' },
  { bench: 'ingest', key: 'cpu_ms_per_msg', before: '4.74 ms' },
  { bench: 'ingest', key: 'loaded_rss_mib', before: '528 MiB' },
  { bench: 'inbound-memory', key: 'one_peak_rise_mib', before: '+0.9 GB, not returned' },
  { bench: 'send', key: 'msgs_per_s', before: '~210 msg/s, 0.11× nodemailer (1,891)', of: 'ratio' },
  { bench: 'send', key: 'p99_ms', before: '350 ms' },
  { bench: 'send', key: 'cpu_ms_per_msg', before: '6.45 ms' },
];

function beforeAfter(results: Results): string[] {
  const rows: string[] = [];
  for (const b of BEFORE_ISSUE_19) {
    const bench = results.benches[b.bench];
    const s = bench ? summarize(bench.runs).find((x) => x.metric.key === b.key) : undefined;
    if (!s) continue;
    const ratio = b.of === 'ratio' ? ` (${fmtRatio(s.ratio)} baseline)` : b.of === 'peer' ? ` (${fmtRatio(s.peerRatio)} peer)` : '';
    rows.push(`| ${bench!.title}: ${s.metric.label} | ${b.before} | ${fmt(s.svc, s.metric.unit)}${ratio} |`);
  }
  if (rows.length === 0) return [];
  return ['## Issue 19: before and after', '', "Before: the figures issue 19 was filed with (one run, a quieter hour). After: this run's medians.", '', '| Figure | before (issue 19) | now |', '|---|---|---|', ...rows, ''];
}

/** Writes bench/REPORT.md and bench/charts/{throughput,latency}.svg from the results. */
export function writeReport(results: Results, dir = benchDir): void {
  const m = results.machine;
  fs.mkdirSync(path.join(dir, 'charts'), { recursive: true });
  const sub = `medians of ${results.bench_runs} run(s), ${m.cpus} × ${m.cpu_model}, ${results.generated_at.slice(0, 10)}; each row scaled to its own largest bar`;
  fs.writeFileSync(path.join(dir, 'charts', 'throughput.svg'), barChart('svc benchmarks: throughput (higher is better)', sub, chartGroups(results, 'throughput')));
  fs.writeFileSync(path.join(dir, 'charts', 'latency.svg'), barChart('svc benchmarks: latency (lower is better)', sub, chartGroups(results, 'latency')));

  const out: string[] = [
    '# Benchmark report',
    '',
    `Generated by \`npm run bench\` on ${results.generated_at} (regenerated on every run; raw figures of every run in [results.json](results.json)). ` +
      `How each benchmark works, its baseline and its knobs: [docs/benchmarks.md](../docs/benchmarks.md).`,
    '',
    `Every figure is the **median of ${results.bench_runs} run(s)** (\`BENCH_RUNS\`). "svc ÷ baseline" is the median of the per-run ratios ` +
      'of svc to the baseline measured in the same run: above 1 means a larger number than the baseline (better for a throughput, worse for a latency or memory figure).',
    '',
    '## Machine and conditions',
    '',
    '| | |',
    '|---|---|',
    `| CPU | ${m.cpus} × ${m.cpu_model} |`,
    `| Memory | ${m.memory_gib} GiB |`,
    `| Node.js | ${m.node} |`,
    `| OS | ${m.os} |`,
    `| Load average at start (1, 5, 15 min) | ${m.load_average_at_start.map((x) => x.toFixed(2)).join(', ')} |`,
    `| Host CPU busy before the first benchmark (other work on the machine) | ${m.background_cpu_busy_pct}% |`,
    '',
    'The machine is shared: other engineers run test suites on the same two cores, and every benchmark runs its load generator, ' +
      'its baseline and the service on those same cores. Absolute numbers are therefore depressed and noisy; the same-run ratios are the comparable part.',
    '',
    '## Charts',
    '',
    '![Throughput](charts/throughput.svg)',
    '',
    '![Latency](charts/latency.svg)',
    '',
    'Files: [charts/throughput.svg](charts/throughput.svg), [charts/latency.svg](charts/latency.svg).',
    '',
  ];

  const gaps: string[] = [];
  const met: string[] = [];
  for (const [name, b] of Object.entries(results.benches)) {
    const summaries = summarize(b.runs);
    const hasPeer = summaries.some((s) => s.peer !== null);
    out.push(`## ${b.title} (\`${name}\`)`, '', b.what, '');
    out.push(`- Baseline: ${b.baseline}`);
    if (b.peer) out.push(`- Peer: ${b.peer}`);
    out.push(`- Configuration: ${b.config.join('; ')}`);
    out.push(`- Runs: ${b.runs.length}, started ${b.started_at}, took ${Math.round(b.duration_s)} s; host CPU busy while it ran: ${b.host_cpu_busy_pct}%`);
    for (const s of b.skipped ?? []) out.push(`- Not measured: ${s}`);
    out.push('', ...table(summaries, hasPeer, 'peer'), '');
    if (b.peer_config?.length) out.push('Peer configuration:', '', ...b.peer_config.map((l) => `- ${l}`), '');
    for (const note of b.notes ?? []) out.push(note, '');
    if (b.stages) out.push(...stageTable(b.stages), '');
    for (const s of summaries) {
      for (const t of targetsOf(s)) {
        const line = `${b.title}: ${s.metric.label} — ${t.text.replace(/: (met|NOT met)$/, '')}, measured ${t.measured}`;
        (t.met ? met : gaps).push(line);
      }
    }
  }

  out.push(...beforeAfter(results));
  out.push('## Targets from earlier issues', '');
  out.push(...(met.length ? met.map((l) => `- Met: ${l}`) : ['- None met in this run.']));
  out.push(...gaps.map((l) => `- **Not met**: ${l}`));
  const causes = Object.values(results.benches).flatMap((b) => b.notes?.filter((n) => n.startsWith('Gap')) ?? []);
  if (gaps.length) out.push('', 'Measured causes of the gaps (also in each section above):', '', ...causes.map((c) => `- ${c}`));
  out.push('');
  fs.writeFileSync(path.join(dir, 'REPORT.md'), out.join('\n'));
}

// `node dist/bench/report.js` regenerates the report from bench/results.json.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  writeReport(JSON.parse(fs.readFileSync(path.join(benchDir, 'results.json'), 'utf8')) as Results);
}

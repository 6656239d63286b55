/** Shared pieces of the benchmarks: child processes, the fastify hello-world baseline, statistics. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Chromium at /usr/bin/chromium, installed by scripts/ensure-chromium.sh when missing (as the
 * browser tests get it); throws when it cannot be had, so a benchmark that paints fails before its
 * seeding rather than after it.
 */
export function ensureChromium(): void {
  const ensure = spawnSync(path.join(root, 'scripts', 'ensure-chromium.sh'), { stdio: ['ignore', 'inherit', 'inherit'], timeout: 600_000 });
  if (ensure.status !== 0) throw new Error('scripts/ensure-chromium.sh could not provide Chromium at /usr/bin/chromium (see its message above)');
}

/**
 * Every process spawnUntil started that has not exited yet, so the runner can sample the memory of
 * a benchmark's service (e.g. during ingest) without reaching into that benchmark's code.
 */
export const running = new Set<ChildProcess>();

export interface Child {
  proc: ChildProcess;
  url: string;
  stop(): Promise<void>;
}

/** Spawns node with args and resolves once a stdout line yields a URL. */
export async function spawnUntil(args: string[], urlOf: (line: string) => string | null, env: NodeJS.ProcessEnv = process.env): Promise<Child> {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: root, env });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  const url = await new Promise<string>((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout! });
    rl.on('line', (line) => {
      const u = urlOf(line);
      if (u) resolve(u);
    });
    proc.on('exit', (code) => reject(new Error(`exited ${code} before ready`)));
  });
  return {
    proc,
    url,
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/** A fastify hello-world server in its own process: the HTTP baseline. */
export async function startHelloWorld(): Promise<Child> {
  const file = path.join(os.tmpdir(), `svc-bench-hello-${process.pid}-${Date.now()}.mjs`);
  fs.writeFileSync(
    file,
    `import Fastify from '${path.join(root, 'node_modules', 'fastify', 'fastify.js')}';
const app = Fastify(); app.get('/', async () => ({ hello: 'world' }));
await app.listen({ host: '127.0.0.1', port: 0 }); console.log('ready ' + 'http://127.0.0.1:' + app.server.address().port);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));`,
  );
  const child = await spawnUntil([file], (l) => (l.startsWith('ready ') ? l.slice(6) : null));
  return { ...child, stop: async () => { await child.stop(); fs.rmSync(file, { force: true }); } };
}

/** svc serve on an existing home. */
/** BENCH_CPU_PROF=<dir> writes V8 CPU profiles of the service (every thread) into <dir>. */
export const profileFlags = () => (process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []);

export function startSvc(home: string, init = false): Promise<Child> {
  return spawnUntil([...profileFlags(), path.join(root, 'bin', 'svc'), 'serve', '--home', home, '--port', '0', ...(init ? ['--init'] : [])], (l) => {
    try {
      const data = JSON.parse(l) as { event?: string; url?: string };
      return data.event === 'server.ready' ? (data.url ?? null) : null;
    } catch {
      return null;
    }
  });
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const round = (n: number, digits = 2) => +n.toFixed(digits);

export interface CpuSnapshot {
  /** CPU use between an earlier snapshot and this one. */
  since(earlier: CpuSnapshot): { hostBusyPct: number; processMs: number | null };
  readonly host: { busy: number; total: number };
  readonly processMs: number | null;
}

/** CPU time of the whole host (all cores) and of one process (all its threads; Linux only, else null). */
export function cpuSnapshot(pid: number | undefined): CpuSnapshot {
  let busy = 0;
  let total = 0;
  for (const { times } of os.cpus()) {
    const sum = times.user + times.nice + times.sys + times.irq + times.idle;
    total += sum;
    busy += sum - times.idle;
  }
  let processMs: number | null = null;
  try {
    // Fields 14 and 15 of /proc/<pid>/stat (after the parenthesised name) are utime and stime in clock ticks.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    processMs = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    processMs = null;
  }
  return {
    host: { busy, total },
    processMs,
    since(earlier) {
      const dTotal = this.host.total - earlier.host.total;
      return {
        hostBusyPct: dTotal > 0 ? (100 * (this.host.busy - earlier.host.busy)) / dTotal : 0,
        processMs: this.processMs !== null && earlier.processMs !== null ? this.processMs - earlier.processMs : null,
      };
    },
  };
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * One figure of one run, as the report writer reads it: the service's value, its same-run
 * baseline and, where one was measured, the peer's. `ratio` in the report is always svc ÷ baseline
 * (so below 1 is slower for a throughput, faster for a latency); `better` says which way is good.
 */
export interface Target {
  op: '>=' | '<=';
  value: number;
  of?: 'value' | 'ratio' | 'peer';
  issue: number;
}

export interface Metric {
  key: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower';
  svc: number | null;
  baseline?: number | null;
  peer?: number | null;
  /** Which chart the figure belongs in, if any. */
  chart?: 'throughput' | 'latency';
  /** Targets named in earlier issues, each checked on the median of the value (or of the ratio to the baseline or to the peer). */
  target?: Target | Target[];
}

/** Resident set size of a process in MiB (Linux /proc; null when gone or unreadable). */
export function rssMiB(pid: number | undefined): number | null {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    return Number.isFinite(kb) ? kb / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * The read system calls the process has made (all its threads), from /proc/<pid>/io; null where
 * that is not readable. The database reads a page per call, so the difference over some requests
 * counts the pages they read that SQLite did not have in its cache, plus the reads of their
 * sockets (about 2 per HTTP request).
 */
export function readSyscalls(pid: number | undefined): number | null {
  try {
    const count = Number(/^syscr:\s+(\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1]);
    return Number.isFinite(count) ? count : null;
  } catch {
    return null;
  }
}

/** Proportional set size in MiB: shared pages divided among their users, so it adds up across processes. */
export function pssMiB(pid: number): number | null {
  try {
    const kb = Number(/^Pss:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1]);
    return Number.isFinite(kb) ? kb / 1024 : null;
  } catch {
    return null;
  }
}

/** Samples a memory figure every `everyMs` until stopped; reports the peak and the median. */
export function sampleMemory(read: () => number | null, everyMs = 250): { stop(): { peak: number | null; median: number | null } } {
  const samples: number[] = [];
  const take = () => {
    const v = read();
    if (v !== null && v > 0) samples.push(v);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return samples.length === 0 ? { peak: null, median: null } : { peak: round(Math.max(...samples), 1), median: round(median(samples), 1) };
    },
  };
}

/** The owner token of a home that `svc serve --init` created. */
export const ownerToken = (home: string): string =>
  (JSON.parse(fs.readFileSync(path.join(home, 'connection.json'), 'utf8')) as { owner_token: string }).owner_token;

/** A JSON call to a running service that throws on any non-2xx answer. */
export async function callJson(base: string, token: string, method: string, p: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

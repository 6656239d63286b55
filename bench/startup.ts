/**
 * Startup benchmark: time from spawn to `server.ready` (median of BENCH_STARTUP_STARTS starts of
 * an existing home, default 3) and idle RSS 5 s after ready, beside a fastify hello-world started
 * the same way in the same run; and the CPU an idle `svc serve --local-edge` (its loops with an
 * edge paired) uses over 10 s from 5 s after ready, beside the hello-world's.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { cpuSnapshot, median, round, root, type Metric } from './util.js';
export const STARTS = Number(process.env.BENCH_STARTUP_STARTS ?? 3);
const IDLE_MS = 5_000;
/** Idle CPU is the CPU time used over this long, after IDLE_MS. */
const IDLE_CPU_MS = 10_000;

interface Sample {
  readyMs: number;
  rssMiB: number;
  /** CPU time over IDLE_CPU_MS as a percentage of one core; 0 when not sampled. */
  idleCpuPct: number;
}

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** Spawns a process, waits for a stdout line matching `ready`, samples RSS after idling, stops it. */
async function measure(args: string[], ready: (line: string) => boolean, sampleRss: boolean, sampleCpu = false): Promise<Sample> {
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: root });
  await new Promise<void>((resolve, reject) => {
    const rl = readline.createInterface({ input: child.stdout! });
    rl.on('line', (line) => ready(line) && resolve());
    child.on('exit', (code) => reject(new Error(`exited ${code} before ready`)));
  });
  const readyMs = Number(process.hrtime.bigint() - started) / 1e6;
  let rssMiB = 0;
  let idleCpuPct = 0;
  if (sampleRss || sampleCpu) {
    await new Promise((r) => setTimeout(r, IDLE_MS));
    rssMiB = rssOf(child.pid!);
  }
  if (sampleCpu) {
    const before = cpuSnapshot(child.pid);
    await new Promise((r) => setTimeout(r, IDLE_CPU_MS));
    idleCpuPct = ((cpuSnapshot(child.pid).since(before).processMs ?? 0) / IDLE_CPU_MS) * 100;
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return { readyMs, rssMiB, idleCpuPct };
}

export async function benchStartup(): Promise<Metric[]> {
  const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-')), 'home');
  const svcArgs = [path.join(root, 'bin', 'svc'), 'serve', '--home', home, '--port', '0'];
  await measure([...svcArgs, '--init'], (l) => l.includes('server.ready'), false);

  const helloFile = path.join(os.tmpdir(), `svc-bench-hello-${process.pid}.mjs`);
  fs.writeFileSync(
    helloFile,
    `import Fastify from '${path.join(root, 'node_modules', 'fastify', 'fastify.js')}';
const app = Fastify(); app.get('/', async () => ({ hello: 'world' }));
await app.listen({ host: '127.0.0.1', port: 0 }); console.log('ready');
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));`,
  );

  const svc: Sample[] = [];
  const hello: Sample[] = [];
  for (let i = 0; i < STARTS; i++) {
    hello.push(await measure([helloFile], (l) => l === 'ready', i === 0));
    svc.push(await measure(svcArgs, (l) => l.includes('server.ready'), i === 0));
  }
  // Idle CPU with the built-in edge paired, so every loop that works for an edge is running.
  const helloIdle = await measure([helloFile], (l) => l === 'ready', false, true);
  const svcIdle = await measure([...svcArgs, '--local-edge', '--smtp-port', '0'], (l) => l.includes('server.ready'), false, true);
  fs.rmSync(helloFile);
  fs.rmSync(path.dirname(home), { recursive: true, force: true });
  const svcReady = median(svc.map((s) => s.readyMs));
  const helloReady = median(hello.map((s) => s.readyMs));
  const figures = {
    bench: 'startup',
    starts: STARTS,
    svc_ready_ms_median: Math.round(svcReady),
    baseline_fastify_hello_ready_ms_median: Math.round(helloReady),
    ready_ratio: round(svcReady / helloReady),
    svc_idle_rss_mib: round(svc[0].rssMiB, 1),
    baseline_idle_rss_mib: round(hello[0].rssMiB, 1),
    rss_ratio: round(svc[0].rssMiB / hello[0].rssMiB),
    svc_local_edge_idle_cpu_pct: round(svcIdle.idleCpuPct, 1),
    baseline_idle_cpu_pct: round(helloIdle.idleCpuPct, 1),
  };
  console.log(JSON.stringify(figures));
  return [
    { key: 'ready_ms', label: 'Start-up: spawn → server.ready', unit: 'ms', better: 'lower', svc: figures.svc_ready_ms_median, baseline: figures.baseline_fastify_hello_ready_ms_median, chart: 'latency', target: { op: '<=', value: 700, issue: 19 } },
    { key: 'idle_rss_mib', label: 'Idle RSS, 5 s after ready', unit: 'MiB', better: 'lower', svc: figures.svc_idle_rss_mib, baseline: figures.baseline_idle_rss_mib, target: { op: '<=', value: 150, issue: 19 } },
    { key: 'idle_cpu_pct', label: 'Idle CPU of `svc serve --local-edge`, 10 s from 5 s after ready (% of one core)', unit: '%', better: 'lower', svc: figures.svc_local_edge_idle_cpu_pct, baseline: figures.baseline_idle_cpu_pct },
  ];
}

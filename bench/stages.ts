/**
 * Where the service's time goes, by stage (issue 19): one extra run of a benchmark with V8 CPU
 * profiles of every thread of the service (`--cpu-prof`), each sample charged to the deepest
 * frame of its stack that belongs to a stage (SQLite under the inbound commit counts as SQLite,
 * the commit's own JavaScript as storing). The figures are busy time per message: a sample is
 * taken while a thread runs, so on a saturated machine a thread waiting for a core still counts;
 * compare the shares, and the run's measured CPU per message for the total. V8's helper threads
 * (parallel scavenges, concurrent marking, compilation) and libuv's thread pool (file writes and
 * fsyncs) are not profiled; GC on the threads themselves is. Measured from /proc per thread, the
 * helpers took about 2 ms and the pool about 1.2 ms (system time) per message (docs/benchmarks.md).
 * Module loading and start-up are left out (they happen once, not per message), and so is time
 * blocked in Atomics.wait (piscina threads waiting for a task, a writer for the write gate).
 */
import fs from 'node:fs';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Stage of a frame, by its function's file (first match); undefined when it has none of its own. */
const STAGES: [RegExp, string][] = [
  [/node_modules\/smtp-server\/|src\/edge\/smtp\./, 'SMTP server (edge)'],
  [/node_modules\/mailauth\/|src\/edge\/auth\./, 'Mail authentication: SPF, DKIM, DMARC (edge)'],
  [/src\/edge\/sealed\./, 'Sealing and opening (X25519, AES-GCM)'],
  [/src\/edge\//, 'Edge spool, routing and its HTTP API'],
  [/node_modules\/(mailparser|libmime|libqp|libbase64|iconv-lite|encoding-japanese|html-to-text|htmlparser2|he|linkify-it|tlds|punycode\.js|@zone-eu\/mailsplit)\/|workers\/pool\/parse|src\/mail\/extract\./, 'MIME parse and text extraction'],
  [/node_modules\/nodemailer\/(?:lib|dist\/esm|dist\/cjs)\/(mail-composer|mime-node|mime-funcs|dkim|base64|qp|addressparser|punycode|fetch)\/|workers\/pool\/compose|src\/mail\/compose\./, 'Compose and DKIM signing'],
  [/node_modules\/nodemailer\/|src\/mail\/transport\./, 'SMTP client (handover to the next hop)'],
  [/node_modules\/better-sqlite3[^/]*\/|src\/db\//, 'SQLite: statements and commits'],
  [/src\/mail\/(send-flow|outbound|outbox|idempotency|drafts)|src\/requests\/send|workers\/loops\/outbox/, 'Send checks and the outbox (JavaScript)'],
  [/src\/mail\/|src\/events\/log|src\/inbound\//, 'Storing and threading (JavaScript)'],
  [/node_modules\/ws\/|src\/events\/hub|src\/routes\/ws/, 'WebSocket events'],
  [/node_modules\/(fastify|find-my-way|avvio|light-my-request|fast-json-stringify|ajv|ajv-formats|@fastify\/[^/]+|fast-querystring|secure-json-parse|pino|fast-uri|content-type|proxy-addr)\/|src\/(routes|http|auth|requests|core)\/|node:_http|node:internal\/http/, 'HTTP API: parsing, authentication, validation, serialization'],
  [/node_modules\/piscina\/|node:internal\/worker|workers\/loops\/(run-loop|loop-thread)|src\/supervisor\//, 'Thread hand-offs (piscina, loop threads)'],
  [/node:internal\/modules\/|^node:internal\/bootstrap/, 'Module loading'],
];

/** Samples of a waiting thread: not counted. */
const IDLE = 'idle';

const SPECIAL: Record<string, string | undefined> = {
  '(garbage collector)': 'Garbage collection (on the thread)',
  '(program)': 'V8 and native, not attributed to a function',
  '(idle)': IDLE,
  '(root)': undefined,
};

const LEFT_OUT = new Set(['Module loading']);

function stageOf(frame: ProfileNode['callFrame']): string | undefined {
  if (frame.functionName in SPECIAL && frame.url === '') return SPECIAL[frame.functionName];
  // Blocked in Atomics.wait: a pool or reader thread waiting for its next task, a writer for the gate.
  if ((frame.functionName === 'atomicsWaitLoop' && /piscina/.test(frame.url)) || (frame.functionName === 'acquireSync' && /write-gate/.test(frame.url))) return IDLE;
  if (frame.functionName === 'wait' && frame.url === '') return IDLE;
  if (frame.functionName === 'fdatasync' && frame.url === '') return 'WAL fdatasync (the thread waits for the disk)';
  if (frame.functionName === 'compileSourceTextModule' || frame.functionName === 'compileForInternalLoader') return 'Module loading';
  for (const [pattern, stage] of STAGES) if (pattern.test(frame.url)) return stage;
  return undefined; // no stage of its own: the caller's
}

/** Which thread a profile is, from the code it ran. */
function threadOf(profile: CpuProfile): string {
  const urls = profile.nodes.map((n) => n.callFrame.url);
  if (urls.some((u) => u.includes('workers/loops/'))) return urls.some((u) => u.includes('inbound-pull')) && !urls.some((u) => u.includes('loops/outbox')) ? 'inbound loop thread' : 'loop threads';
  if (urls.some((u) => u.includes('workers/pool/'))) return 'pool threads';
  if (urls.some((u) => u.includes('workers/readers/'))) return 'reader threads';
  if (urls.some((u) => u.includes('node_modules/smtp-server/'))) return 'edge thread';
  return 'request thread';
}

export interface StageBreakdown {
  /** What was profiled, for the report. */
  title: string;
  rows: { stage: string; ms_per_msg: number; share_pct: number }[];
  threads: { thread: string; ms_per_msg: number }[];
}

/** Busy time per message by stage and by thread, from every *.cpuprofile in `dir`. */
export function stageBreakdown(dir: string, messages: number, title: string): StageBreakdown {
  const byStage = new Map<string, number>();
  const byThread = new Map<string, number>();
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const stage = new Map<number, string | undefined>();
    // Every node takes its own stage, or else its caller's; the root has none.
    const visit = (id: number, inherited: string | undefined) => {
      const node = nodes.get(id)!;
      const s = stageOf(node.callFrame) ?? inherited;
      stage.set(id, s);
      for (const child of node.children ?? []) visit(child, s);
    };
    visit(profile.nodes[0].id, undefined);
    const thread = threadOf(profile);
    profile.samples.forEach((id, i) => {
      const s = stage.get(id) ?? 'Other JavaScript';
      const us = profile.timeDeltas[i + 1] ?? 0;
      if (s === IDLE || LEFT_OUT.has(s)) return;
      byStage.set(s, (byStage.get(s) ?? 0) + us);
      byThread.set(thread, (byThread.get(thread) ?? 0) + us);
    });
  }
  const total = [...byStage.values()].reduce((a, b) => a + b, 0) || 1;
  const perMsg = (us: number) => Math.round((us / 1000 / messages) * 100) / 100;
  return {
    title,
    rows: [...byStage].sort((a, b) => b[1] - a[1]).map(([stage, us]) => ({ stage, ms_per_msg: perMsg(us), share_pct: Math.round((us / total) * 1000) / 10 })),
    threads: [...byThread].sort((a, b) => b[1] - a[1]).map(([thread, us]) => ({ thread, ms_per_msg: perMsg(us) })),
  };
}

/** Runs `once` with CPU profiling of the service into a fresh directory, then breaks it down. */
export async function profiled(messages: number, title: string, once: () => Promise<unknown>): Promise<StageBreakdown> {
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'svc-bench-prof-'));
  const saved = process.env.BENCH_CPU_PROF;
  process.env.BENCH_CPU_PROF = dir;
  try {
    await once();
    // Worker threads write their profile as they exit, just after the process's exit is seen.
    await new Promise((r) => setTimeout(r, 500));
    return stageBreakdown(dir, messages, title);
  } finally {
    if (saved === undefined) delete process.env.BENCH_CPU_PROF;
    else process.env.BENCH_CPU_PROF = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

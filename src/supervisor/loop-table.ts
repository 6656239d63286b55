/**
 * Background loop names and timings (spec §8), in one table, and below it every loop's retry
 * schedule, each with its reason. Loops read their waits from here; nothing else sets them.
 */
import type { MessagePort } from 'node:worker_threads';
import { BUSY_THREAD_YOUNG_MB } from '../core/thread-limits.js';

export interface LoopTiming {
  /** Sleep after a pass that did work. */
  busyMs: number;
  /** Sleep after a pass that found nothing to do. */
  idleMs: number;
  /** What the spec says about this loop, for readers. */
  schedule: string;
}

export const LOOPS = {
  outbox: { busyMs: 2_000, idleMs: 30_000, schedule: 'wakes on enqueue or approval; recovery 2 s after work, 30 s idle or unconfigured; failed handovers retried on OUTBOX_RETRY_DELAYS_MS' },
  'inbound-pull': { busyMs: 2_000, idleMs: 30_000, schedule: 'every 2 s while busy, 30 s idle; due transient quarantine items (QUARANTINE_RETRY_BACKOFF_MS) are retried, looked for at most every 2 s' },
  'inbound-reconcile': { busyMs: 15 * 60_000, idleMs: 15 * 60_000, schedule: 'at startup, then every 15 minutes; a minute after an unreachable edge (RECONCILE_EDGE_RETRY_MS)' },
  'delivery-events': { busyMs: 2_000, idleMs: 30_000, schedule: 'every 2 s while busy, 30 s idle' },
  'scheduled-drafts': { busyMs: 2_000, idleMs: 30_000, schedule: 'wakes on create, edit or approval; waits until the next due time, capped at 30 s idle and 2 s after work' },
  provisioning: { busyMs: 10_000, idleMs: 10_000, schedule: 'every 10 s; full routing reconcile every 5 minutes' },
  webhooks: { busyMs: 1_000, idleMs: 1_000, schedule: 'every second; failed deliveries retried on WEBHOOK_RETRY_SCHEDULE_MS' },
  'remote-access': { busyMs: 1_000, idleMs: 1_000, schedule: 'supervised every second; restart backoff up to 60 s' },
} as const satisfies Record<string, LoopTiming>;

// ---- retry schedules: how long a loop waits before trying failed work again ----

/**
 * Automatic retries of a transient quarantine reason (src/inbound/quarantine.ts), run by the
 * inbound-pull loop: the wait after attempt 1, 2, 3, 4 (1 min, 5 min, 30 min, 2 h). Short enough
 * to recover from a load spike within minutes, long enough that a truly bad message costs only a
 * few opens; after the last step the item waits for the owner.
 */
export const QUARANTINE_RETRY_BACKOFF_MS: readonly number[] = [60_000, 5 * 60_000, 30 * 60_000, 2 * 60 * 60_000];

/**
 * The outbox loop's waits after handover attempt 1, 2, … (5 s to 30 min, about 43 min in all):
 * a restarting edge or smart host is back within seconds, an outage within the hour; after the
 * last attempt the send fails (`transport_failed`), or is `send_unknown` when the edge cannot say.
 */
export const OUTBOX_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000, 600_000, 1_800_000];

/**
 * The webhooks loop's waits before each retry of a failed delivery (5 s to 10 h, about 28 h in
 * all, the Standard Webhooks / Svix schedule receivers expect); after the last the event is
 * dropped (`dropped_count`) and delivery moves on.
 */
export const WEBHOOK_RETRY_SCHEDULE_MS: readonly number[] = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000, 5 * 3600_000, 10 * 3600_000, 10 * 3600_000];
/** Unbroken webhook failure this long (5 days) disables the webhook: its receiver is gone, not down. */
export const WEBHOOK_DISABLE_AFTER_MS = 5 * 24 * 3600_000;

/** The inbound-pull loop tries a commit the database could not take (busy past its retries, disk trouble) again this soon, not on the idle schedule. */
export const INBOUND_COMMIT_RETRY_MS = 1_000;
/** The inbound-reconcile loop looks again this soon when the edge was unreachable, instead of in 15 minutes. */
export const RECONCILE_EDGE_RETRY_MS = 60_000;

export type LoopName = keyof typeof LOOPS;
export const LOOP_NAMES = Object.keys(LOOPS) as LoopName[];

/**
 * Which loops share a worker thread. Every thread costs about 7 MiB before it loads anything
 * (a V8 isolate, Node's bootstrap, the SQLite binding and a connection), so eight threads cost
 * ~56 MiB at idle whatever the loops load (issue 19, docs/benchmarks.md). The loops are mostly
 * waiting (on timers, the edge, SMTP, HTTP) and hand CPU work to the pool, so they share one
 * thread, one event loop and one connection; the inbound-pull loop keeps a thread of its own
 * because it opens and parses small messages in it, which would delay the others' timers under
 * an ingest burst. A pass that throws still stops the whole service, naming its loop.
 */
export const LOOP_THREADS = {
  inbound: { loops: ['inbound-pull'], youngGenerationMb: BUSY_THREAD_YOUNG_MB },
  background: { loops: ['outbox', 'inbound-reconcile', 'delivery-events', 'scheduled-drafts', 'provisioning', 'webhooks', 'remote-access'], youngGenerationMb: 4 },
} as const satisfies Record<string, LoopThread>;

/**
 * A loop thread: its loops, and the most its young generation may grow to, in MiB (null: V8's
 * default). V8 grows it up to 16 MiB per semi-space while a thread compiles its modules and keeps
 * it until a memory-reducing collection long after start-up. The background loops' objects live
 * for one pass, so a small young generation costs them only more frequent (cheap) scavenges. The
 * inbound thread opens and parses pages of messages: with V8's default its heap reached 95 MiB
 * under an ingest burst; with BUSY_THREAD_YOUNG_MB and the heap growth limit about 45 MiB, at the
 * same CPU per message (src/core/heap-limits.ts).
 */
export interface LoopThread {
  loops: readonly LoopName[];
  youngGenerationMb: number | null;
}

export type LoopThreadName = keyof typeof LOOP_THREADS;

/**
 * Each loop's heartbeat, for `svc doctor`: when its current or last pass began and ended (ms since
 * the epoch, 0 for never), written by the loop thread and read by the supervisor through shared
 * memory, so a pass costs two atomic stores and no message.
 */
export const HEARTBEAT_SLOTS = 2;
export const heartbeatBytes = () => LOOP_NAMES.length * HEARTBEAT_SLOTS * BigInt64Array.BYTES_PER_ELEMENT;
export const heartbeatIndex = (loop: LoopName) => LOOP_NAMES.indexOf(loop) * HEARTBEAT_SLOTS;

/** One loop as the supervisor sees it: its thread's state and its heartbeat (null: no pass yet). */
export interface LoopHealth {
  loop: LoopName;
  thread: 'starting' | 'running' | 'stopped';
  passStartedAt: number | null;
  passEndedAt: number | null;
}

/** Messages between the supervisor and a loop thread. */
export type ToLoop =
  /** The supervisor's go-ahead after `ready`: no pass begins before it, so a stop that arrives
   * while the thread is still starting ends it before any pass. */
  | { kind: 'start' }
  | { kind: 'wake'; loop: LoopName }
  /** Every loop of the thread finishes its pass; the thread exits when all have. */
  | { kind: 'stop' }
  | { kind: 'task_result'; id: number; ok: true; value: unknown }
  /** `reason`: a task's own reason code (e.g. `parse_failed`), never an error's details. */
  | { kind: 'task_result'; id: number; ok: false; reason: string | null };
export type FromLoop =
  | { kind: 'ready' }
  | { kind: 'stopped' }
  /** Sent just before the thread dies of a pass that threw, so the failure names the loop. */
  | { kind: 'crashed'; loop: LoopName }
  | { kind: 'bus'; message: import('./bus.js').BusMessage }
  /** CPU work for the shared Piscina pool, run by the supervisor on the loop's behalf. */
  | { kind: 'task'; id: number; task: import('./pool.js').PoolTaskName; input: unknown };

/** What every loop thread receives as workerData. */
/** The built-in edge as the inbound thread reaches it without HTTP (src/edge/local-handover.ts): its API URL and the home's end of the port. */
export interface LocalEdgeHandover {
  url: string;
  port: MessagePort;
}

export interface LoopWorkerData {
  loops: readonly LoopName[];
  /** Given to the thread of the inbound-pull loop only, with `--local-edge`. */
  localEdge: LocalEdgeHandover | null;
  dbFile: string;
  dbKey: Uint8Array;
  /** The write gate's shared memory (src/db/write-gate.ts). */
  writeGate: SharedArrayBuffer;
  /** Test-only fault injection (docs/testing.md); null in normal runs. */
  fault: string | null;
  /** The loops' heartbeats (HEARTBEAT_SLOTS per loop, BigInt64). */
  heartbeat: SharedArrayBuffer;
}

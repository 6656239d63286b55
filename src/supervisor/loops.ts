/** Starts the background loops' worker threads (LOOP_THREADS) and stops the service if any of them dies. */
import { Worker } from 'node:worker_threads';
import { workerFile } from '../core/worker-file.js';
import { LOOP_NAMES, LOOP_THREADS, heartbeatBytes, heartbeatIndex, type LocalEdgeHandover, type FromLoop, type LoopHealth, type LoopName, type LoopThreadName, type LoopWorkerData, type ToLoop } from './loop-table.js';
import type { Bus } from './bus.js';
import type { CpuPool } from './pool.js';
import type { WriteGate } from '../db/write-gate.js';

const THREAD_FILE = workerFile('../../workers/loops/loop-thread.js', import.meta.url);
const THREAD_NAMES = Object.keys(LOOP_THREADS) as LoopThreadName[];
const threadOf = new Map<LoopName, LoopThreadName>(THREAD_NAMES.flatMap((thread) => LOOP_THREADS[thread].loops.map((loop) => [loop, thread] as const)));

const STOP_GRACE_MS = 10_000;

/** Tasks signal expected failures with a reason code as the message (`open_failed`); anything else stays opaque. */
function taskReason(err: unknown): string | null {
  const message = err instanceof Error ? err.message : null;
  return message !== null && /^[a-z_]{1,40}$/.test(message) ? message : null;
}

export class LoopSupervisor {
  readonly #workers = new Map<LoopThreadName, Worker>();
  /** Threads told to start; the others have begun no pass. */
  readonly #started = new Set<LoopThreadName>();
  #stopping = false;
  readonly #heartbeat = new SharedArrayBuffer(heartbeatBytes());

  constructor(
    private readonly bus: Bus,
    private readonly pool: CpuPool,
    /** Called once when a loop dies unexpectedly, with its name (or its thread's, when the thread died otherwise). */
    private readonly onCrash: (name: string) => void,
  ) {
    bus.subscribe('wake', (m) => this.#wake(m.loop as LoopName));
    // Webhooks deliver new events at once rather than at the next one-second tick.
    bus.subscribe('event', () => this.#wake('webhooks'));
  }

  /** Starts every loop thread and resolves when all have loaded their loops and opened the database. */
  /**
   * Starts every loop thread and resolves when all have loaded their loops and opened the
   * database. `localEdge` (with `--local-edge`) goes to the inbound-pull loop's thread.
   */
  async start(dbFile: string, dbKey: Buffer, gate: WriteGate, fault: string | null, localEdge: LocalEdgeHandover | null = null): Promise<void> {
    await Promise.all(THREAD_NAMES.map((thread) => this.#spawn(thread, dbFile, dbKey, gate, fault, (LOOP_THREADS[thread].loops as readonly LoopName[]).includes('inbound-pull') ? localEdge : null)));
  }

  #spawn(thread: LoopThreadName, dbFile: string, dbKey: Buffer, gate: WriteGate, fault: string | null, localEdge: LocalEdgeHandover | null): Promise<void> {
    const key = new Uint8Array(dbKey);
    const { loops, youngGenerationMb } = LOOP_THREADS[thread];
    const data: LoopWorkerData = { loops, localEdge, dbFile, dbKey: key, writeGate: gate.buffer, fault, heartbeat: this.#heartbeat };
    const resourceLimits = youngGenerationMb === null ? undefined : { maxYoungGenerationSizeMb: youngGenerationMb };
    const worker = new Worker(THREAD_FILE, { workerData: data, transferList: localEdge ? [localEdge.port] : [], name: `loops:${thread}`, resourceLimits });
    key.fill(0);
    this.#workers.set(thread, worker);
    let crashed: string = thread;
    return new Promise((resolve, reject) => {
      worker.on('message', (m: FromLoop) => {
        if (m.kind === 'ready') {
          // Stopping already: stop() terminates a thread it has not told to start.
          if (this.#stopping) return;
          this.#started.add(thread);
          worker.postMessage({ kind: 'start' } satisfies ToLoop);
          resolve();
        } else if (m.kind === 'bus') this.bus.publish(m.message);
        else if (m.kind === 'crashed') {
          // The service stops now; the thread stays known until it exits, so the stop waits for
          // its other loops to finish their passes.
          crashed = m.loop;
          if (!this.#stopping) this.onCrash(crashed);
          reported = true;
        }
        else if (m.kind === 'task') {
          // Task errors are data for the loop to judge (e.g. quarantine), never a crash here.
          this.pool.run(m.task, m.input).then(
            (value) => worker.postMessage({ kind: 'task_result', id: m.id, ok: true, value } satisfies ToLoop),
            (err: unknown) => worker.postMessage({ kind: 'task_result', id: m.id, ok: false, reason: taskReason(err) } satisfies ToLoop),
          );
        }
      });
      let reported = false;
      const died = () => {
        this.#workers.delete(thread);
        if (this.#stopping || reported) return;
        reported = true;
        if (!this.#started.has(thread)) reject(new Error(`loop thread ${thread} failed to start`));
        else this.onCrash(crashed);
      };
      worker.on('error', died);
      const threadId = worker.threadId;
      worker.on('exit', (code) => {
        // A loop that died (or was terminated) inside a transaction must not keep the others out.
        gate.releaseDeadHolder(threadId);
        if (this.#workers.get(thread) === worker) {
          if (code !== 0 || !this.#stopping) died();
        }
      });
    });
  }

  /** Every loop's thread state and heartbeat (`svc doctor`). */
  health(): LoopHealth[] {
    const beats = new BigInt64Array(this.#heartbeat);
    const at = (i: number) => {
      const ms = Number(Atomics.load(beats, i));
      return ms === 0 ? null : ms;
    };
    return LOOP_NAMES.map((loop) => {
      const thread = threadOf.get(loop)!;
      const state = this.#started.has(thread) && this.#workers.has(thread) ? 'running' : this.#workers.has(thread) && !this.#stopping ? 'starting' : 'stopped';
      const i = heartbeatIndex(loop);
      return { loop, thread: state, passStartedAt: at(i), passEndedAt: at(i + 1) };
    });
  }

  #wake(loop: LoopName): void {
    const thread = threadOf.get(loop);
    if (thread) this.#workers.get(thread)?.postMessage({ kind: 'wake', loop } satisfies ToLoop);
  }

  /**
   * Asks every loop to finish its pass and its thread to exit; terminates stragglers after a
   * grace period. A thread not yet told to start (loading its modules, opening the database, or
   * waiting for the go-ahead) has begun no pass and is terminated at once, so a stop right after
   * start is not held up by module loading.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    const waits = [...this.#workers.entries()].map(([thread, worker]) =>
      new Promise<void>((resolve) => {
        if (!this.#started.has(thread)) {
          void worker.terminate().then(() => resolve());
          return;
        }
        const timer = setTimeout(() => void worker.terminate().then(() => resolve()), STOP_GRACE_MS);
        worker.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        worker.postMessage({ kind: 'stop' } satisfies ToLoop);
      }),
    );
    await Promise.all(waits);
    this.#workers.clear();
  }
}

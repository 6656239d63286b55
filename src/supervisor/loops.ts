/** Starts one worker_thread per background loop and stops the service if any of them dies. */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { LOOP_NAMES, LOOP_YOUNG_GENERATION_MB, type FromLoop, type LoopName, type LoopWorkerData, type ToLoop } from './loop-table.js';
import type { Bus } from './bus.js';
import type { CpuPool } from './pool.js';
import type { WriteGate } from '../db/write-gate.js';

const loopFile = (name: LoopName) => fileURLToPath(new URL(`../../workers/loops/${name}.js`, import.meta.url));

const STOP_GRACE_MS = 10_000;

/** Tasks signal expected failures with a reason code as the message (`open_failed`); anything else stays opaque. */
function taskReason(err: unknown): string | null {
  const message = err instanceof Error ? err.message : null;
  return message !== null && /^[a-z_]{1,40}$/.test(message) ? message : null;
}

export class LoopSupervisor {
  readonly #workers = new Map<LoopName, Worker>();
  /** Loops told to start; the others have begun no pass. */
  readonly #started = new Set<LoopName>();
  #stopping = false;

  constructor(
    private readonly bus: Bus,
    private readonly pool: CpuPool,
    /** Called once when a loop dies unexpectedly. */
    private readonly onCrash: (name: LoopName) => void,
  ) {
    bus.subscribe('wake', (m) => this.#post(m.loop as LoopName, { kind: 'wake' }));
    // Webhooks deliver new events at once rather than at the next one-second tick.
    bus.subscribe('event', () => this.#post('webhooks', { kind: 'wake' }));
  }

  /** Starts every loop and resolves when all have opened the database. */
  async start(dbFile: string, dbKey: Buffer, gate: WriteGate, fault: string | null): Promise<void> {
    await Promise.all(LOOP_NAMES.map((name) => this.#spawn(name, dbFile, dbKey, gate, fault)));
  }

  #spawn(name: LoopName, dbFile: string, dbKey: Buffer, gate: WriteGate, fault: string | null): Promise<void> {
    const key = new Uint8Array(dbKey);
    const data: LoopWorkerData = { name, dbFile, dbKey: key, writeGate: gate.buffer, fault };
    const youngMb = LOOP_YOUNG_GENERATION_MB[name];
    const resourceLimits = youngMb === null ? undefined : { maxYoungGenerationSizeMb: youngMb };
    const worker = new Worker(loopFile(name), { workerData: data, name: `loop:${name}`, resourceLimits });
    key.fill(0);
    this.#workers.set(name, worker);
    return new Promise((resolve, reject) => {
      worker.on('message', (m: FromLoop) => {
        if (m.kind === 'ready') {
          // Stopping already: stop() terminates a loop it has not told to start.
          if (this.#stopping) return;
          this.#started.add(name);
          worker.postMessage({ kind: 'start' } satisfies ToLoop);
          resolve();
        } else if (m.kind === 'bus') this.bus.publish(m.message);
        else if (m.kind === 'task') {
          // Task errors are data for the loop to judge (e.g. quarantine), never a crash here.
          this.pool.run(m.task, m.input).then(
            (value) => worker.postMessage({ kind: 'task_result', id: m.id, ok: true, value } satisfies ToLoop),
            (err: unknown) => worker.postMessage({ kind: 'task_result', id: m.id, ok: false, reason: taskReason(err) } satisfies ToLoop),
          );
        }
      });
      const died = () => {
        this.#workers.delete(name);
        if (this.#stopping) return;
        if (!this.#started.has(name)) reject(new Error(`loop ${name} failed to start`));
        else this.onCrash(name);
      };
      worker.on('error', died);
      const threadId = worker.threadId;
      worker.on('exit', (code) => {
        // A loop that died (or was terminated) inside a transaction must not keep the others out.
        gate.releaseDeadHolder(threadId);
        if (this.#workers.get(name) === worker) {
          if (code !== 0 || !this.#stopping) died();
        }
      });
    });
  }

  #post(name: LoopName, message: ToLoop): void {
    this.#workers.get(name)?.postMessage(message);
  }

  /**
   * Asks every loop to finish its pass and exit; terminates stragglers after a grace period. A loop
   * not yet told to start (loading its modules, opening the database, or waiting for the go-ahead)
   * has begun no pass and is terminated at once, so a stop right after start is not held up by
   * module loading.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    const waits = [...this.#workers.entries()].map(([name, worker]) =>
      new Promise<void>((resolve) => {
        if (!this.#started.has(name)) {
          void worker.terminate().then(() => resolve());
          return;
        }
        const timer = setTimeout(() => void worker.terminate().then(() => resolve()), STOP_GRACE_MS);
        worker.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        this.#post(name, { kind: 'stop' });
      }),
    );
    await Promise.all(waits);
    this.#workers.clear();
  }
}

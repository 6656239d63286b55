/**
 * The shape every background loop shares: wake condition → select work → do it → commit →
 * schedule the next wake. A loop file supplies only `pass`; this runner owns sleeping, waking
 * and stopping. Anything thrown escapes to the supervisor, which stops the whole service.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase, type Db } from '../../src/db/open.js';
import { WriteGate } from '../../src/db/write-gate.js';
import { LOOPS, type FromLoop, type LoopName, type LoopWorkerData, type ToLoop } from '../../src/supervisor/loop-table.js';
import type { BusMessage } from '../../src/supervisor/bus.js';
import type { TaskName } from '../pool/tasks.js';

/** Test-only crash injection (docs/testing.md) waits this long after the first pass. */
const FAULT_DELAY_MS = 2_000;

export interface LoopContext {
  db: Db;
  name: LoopName;
  /** Tell the main thread something happened (e.g. an event was appended). */
  publish(message: BusMessage): void;
  /** Runs CPU work in the shared pool; rejects when the task fails. */
  runTask(task: TaskName, input: unknown): Promise<unknown>;
  /** Ends the current sleep early (e.g. a long-poll saw new work). */
  wakeSelf(): void;
  /** Aborted when the service stops: pass it to long-running requests. */
  stopped: AbortSignal;
  /** The test-only fault switch (docs/testing.md), or null. */
  fault: string | null;
}

/** Returns whether the pass did work ('busy') or found none ('idle'), or an explicit next delay. */
export type LoopPass = (ctx: LoopContext) => Promise<'busy' | 'idle' | { delayMs: number }>;

export function runLoop(pass: LoopPass): void {
  const data = workerData as LoopWorkerData;
  const port = parentPort!;
  const send = (m: FromLoop) => port.postMessage(m);
  const key = Buffer.from(data.dbKey);
  const db = openDatabase(data.dbFile, key, { migrate: false, gate: new WriteGate(data.writeGate) });
  key.fill(0);
  data.dbKey.fill(0);

  const timing = LOOPS[data.name];
  let stopping = false;
  let wake: (() => void) | null = null;
  let woken = false;
  let started: () => void;
  const startSignal = new Promise<void>((resolve) => (started = resolve));

  const stopController = new AbortController();
  let nextTaskId = 1;
  const tasks = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  port.on('message', (m: ToLoop) => {
    if (m.kind === 'task_result') {
      const pending = tasks.get(m.id);
      tasks.delete(m.id);
      if (m.ok) pending?.resolve(m.value);
      else pending?.reject(new Error(m.reason ?? 'pool task failed'));
      return;
    }
    if (m.kind === 'start') {
      started();
      return;
    }
    if (m.kind === 'stop') {
      stopping = true;
      stopController.abort();
      // A stop before the go-ahead ends the loop without a pass.
      started();
    }
    woken = true;
    wake?.();
  });

  const ctx: LoopContext = {
    db,
    name: data.name,
    publish: (message) => send({ kind: 'bus', message }),
    runTask: (task, input) =>
      new Promise((resolve, reject) => {
        const id = nextTaskId++;
        tasks.set(id, { resolve, reject });
        send({ kind: 'task', id, task, input });
      }),
    wakeSelf: () => {
      woken = true;
      wake?.();
    },
    stopped: stopController.signal,
    fault: data.fault,
  };
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken || stopping) return resolve();
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  (async () => {
    send({ kind: 'ready' });
    // No pass before the supervisor's go-ahead: until then it may terminate this thread at once.
    await startSignal;
    let passes = 0;
    while (!stopping) {
      woken = false;
      if (data.fault === `loop-crash:${data.name}` && passes > 0) throw new Error(`injected fault in ${data.name}`);
      const result = await pass(ctx);
      passes++;
      const delay = result === 'busy' ? timing.busyMs : result === 'idle' ? timing.idleMs : Math.min(result.delayMs, timing.idleMs);
      // Crash injection fires on the second pass, late enough that startup has completed and been
      // reported even on a loaded machine (the test waits for server.ready first).
      await sleep(data.fault === `loop-crash:${data.name}` ? FAULT_DELAY_MS : delay);
      wake = null;
    }
    db.close();
    send({ kind: 'stopped' });
    port.close();
  })().catch((err) => {
    // Rethrow outside the promise chain so the worker exits with an error the supervisor sees.
    setImmediate(() => {
      throw err;
    });
  });
}

/**
 * A loop thread's entry: it opens one connection and runs the loops LOOP_THREADS
 * (src/supervisor/loop-table.ts) gives it, each loop file's pass with its own schedule
 * (run-loop.ts). It says `ready` once every loop is loaded, begins passes on the supervisor's
 * `start`, and exits after `stop` once every loop has finished its pass. A pass that throws
 * reports its loop (`crashed`) and ends the thread with the error.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../../src/db/open.js';
import { WriteGate } from '../../src/db/write-gate.js';
import type { FromLoop, LoopName, LoopWorkerData, ToLoop } from '../../src/supervisor/loop-table.js';
import { LoopRunner, type LoopContext, type LoopPass } from './run-loop.js';

const loopFile = (name: LoopName) => new URL(`./${name}.js`, import.meta.url).href;

async function hostLoops(): Promise<void> {
  const data = workerData as LoopWorkerData;
  const port = parentPort!;
  const send = (m: FromLoop) => port.postMessage(m);
  const key = Buffer.from(data.dbKey);
  const db = openDatabase(data.dbFile, key, { migrate: false, gate: new WriteGate(data.writeGate) });
  key.fill(0);
  data.dbKey.fill(0);

  let nextTaskId = 1;
  const tasks = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const shared: Omit<LoopContext, 'name' | 'wakeSelf' | 'nextWake' | 'stopped'> = {
    db,
    publish: (message) => send({ kind: 'bus', message }),
    runTask: (task, input) =>
      new Promise((resolve, reject) => {
        const id = nextTaskId++;
        tasks.set(id, { resolve, reject });
        send({ kind: 'task', id, task, input });
      }),
    fault: data.fault,
    localEdge: data.localEdge ?? null,
  };

  let started: () => void;
  const startSignal = new Promise<void>((resolve) => (started = resolve));
  let stopping = false;
  const runners = new Map<LoopName, LoopRunner>();
  port.on('message', (m: ToLoop) => {
    if (m.kind === 'task_result') {
      const pending = tasks.get(m.id);
      tasks.delete(m.id);
      if (m.ok) pending?.resolve(m.value);
      else pending?.reject(new Error(m.reason ?? 'pool task failed'));
    } else if (m.kind === 'start') started();
    else if (m.kind === 'wake') runners.get(m.loop)?.wake();
    else if (m.kind === 'stop') {
      stopping = true;
      for (const runner of runners.values()) runner.stop();
      // A stop before the go-ahead ends the thread without a pass.
      started();
    }
  });

  const heartbeat = new BigInt64Array(data.heartbeat);
  for (const name of data.loops) {
    const { default: pass } = (await import(loopFile(name))) as { default: LoopPass };
    runners.set(name, new LoopRunner(name, pass, shared, heartbeat));
  }
  send({ kind: 'ready' });
  // No pass before the supervisor's go-ahead: until then it may terminate this thread at once.
  await startSignal;
  let crash: LoopCrash | null = null;
  if (!stopping) {
    await Promise.all(
      [...runners.values()].map((runner) =>
        runner.run(data.fault).catch((err: unknown) => {
          if (crash) return;
          // The supervisor stops the service on this message, naming the loop. The other loops
          // of this thread finish the pass they are in (nothing is cut off mid-handover), then
          // the error ends the thread.
          crash = new LoopCrash(err);
          send({ kind: 'crashed', loop: runner.name });
          for (const other of runners.values()) other.stop();
        }),
      ),
    );
  }
  db.close();
  if (crash) throw crash;
  send({ kind: 'stopped' });
  port.close();
}

/** A pass's error, already reported to the supervisor. */
class LoopCrash {
  constructor(readonly error: unknown) {}
}

/** How long a thread whose pass threw lives on, so that its `crashed` message arrives first. */
const CRASH_REPORT_MS = 1_000;

hostLoops().catch((err: unknown) => {
  // Rethrow outside the promise chain so the worker exits with an error the supervisor sees.
  const reported = err instanceof LoopCrash;
  setTimeout(
    () => {
      throw reported ? err.error : err;
    },
    reported ? CRASH_REPORT_MS : 0,
  );
});

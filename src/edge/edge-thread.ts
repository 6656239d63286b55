/**
 * The built-in edge of `svc serve --local-edge`, run in a worker thread of the service process.
 * The edge is busy work (SMTP sessions, SPF/DKIM/DMARC, sealing, fsyncs, its API); on its own
 * thread it no longer queues behind the home's request handlers and WebSocket fan-out on the
 * main thread, and the two use both cores. `LocalEdgeThread` is the main thread's handle.
 */
import { Worker, isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { EdgeAddresses, EdgeOptions } from './edge.js';
import { BUSY_THREAD_YOUNG_MB } from '../core/heap-limits.js';

/** Everything the thread needs to build the edge; `dns` replaces the resolver function, which cannot cross threads. */
export type EdgeThreadOptions = Omit<EdgeOptions, 'resolver' | 'log'> & { dns: string[] | null };

type FromEdgeThread = { kind: 'ready'; addresses: EdgeAddresses } | { kind: 'failed'; message: string | null } | { kind: 'stopped' };
type ToEdgeThread = { kind: 'stop' };
interface ThreadData {
  localEdge: EdgeThreadOptions;
  /** The edge's end of the in-process hand-over to the home's inbound thread (src/edge/local-handover.ts). */
  handover: MessagePort | null;
}

const STOP_GRACE_MS = 10_000;

/** The built-in edge did not start; `reason` is the edge's own message (it names the port), when it gave one. */
export class LocalEdgeStartFailed extends Error {
  constructor(readonly reason: string | null) {
    super(reason ?? 'the built-in edge could not start');
  }
}

export class LocalEdgeThread {
  readonly #worker: Worker;
  #stopped: Promise<void> | null = null;
  #expectedExit = false;

  private constructor(worker: Worker) {
    this.#worker = worker;
  }

  /**
   * Starts the edge thread and resolves with its bound addresses. `onCrash` is called if the
   * thread dies later without being asked to stop.
   */
  static start(options: EdgeThreadOptions, onCrash: () => void, handover: MessagePort | null = null): Promise<{ edge: LocalEdgeThread; addresses: EdgeAddresses }> {
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { localEdge: options, handover } satisfies ThreadData,
      transferList: handover ? [handover] : [],
      name: 'local-edge',
      resourceLimits: { maxYoungGenerationSizeMb: BUSY_THREAD_YOUNG_MB },
    });
    const edge = new LocalEdgeThread(worker);
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (m: FromEdgeThread) => {
        if (m.kind === 'ready') {
          ready = true;
          resolve({ edge, addresses: m.addresses });
        } else if (m.kind === 'failed') reject(new LocalEdgeStartFailed(m.message));
      });
      const died = () => {
        if (!ready) reject(new Error('the built-in edge thread exited before it was ready'));
        else if (!edge.#expectedExit) onCrash();
      };
      worker.on('error', died);
      worker.on('exit', () => {
        if (!edge.#expectedExit) died();
      });
    });
  }

  /** Stops the edge (it settles commits in flight) and the thread; terminates it if it hangs. */
  stop(): Promise<void> {
    this.#stopped ??= new Promise<void>((resolve) => {
      this.#expectedExit = true;
      const timer = setTimeout(() => void this.#worker.terminate(), STOP_GRACE_MS);
      this.#worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      // Once the edge has closed its servers and settled its writes, nothing in the thread matters.
      this.#worker.on('message', (m: FromEdgeThread) => {
        if (m.kind === 'stopped') void this.#worker.terminate();
      });
      this.#worker.postMessage({ kind: 'stop' } satisfies ToEdgeThread);
    });
    return this.#stopped;
  }
}

async function runThread(port: NonNullable<typeof parentPort>, options: EdgeThreadOptions, handover: MessagePort | null): Promise<void> {
  const [{ Edge, EdgeStartError }, { dnsResolver }] = await Promise.all([import('./edge.js'), import('./auth.js')]);
  const { dns, ...rest } = options;
  const edge = new Edge({ ...rest, resolver: dns ? dnsResolver(dns) : undefined, ...(dns ? { dnsServers: dns } : {}) });
  try {
    const addresses = await edge.start();
    if (handover) edge.handOverTo(handover);
    port.postMessage({ kind: 'ready', addresses } satisfies FromEdgeThread);
  } catch (err) {
    await edge.stop().catch(() => undefined);
    // The edge's own start errors name what failed (the port); nothing else is passed on.
    const message = err instanceof EdgeStartError ? err.message : null;
    port.postMessage({ kind: 'failed', message } satisfies FromEdgeThread);
    port.close();
    return;
  }
  port.on('message', (m: ToEdgeThread) => {
    if (m.kind !== 'stop') return;
    void edge
      .stop()
      .catch(() => undefined)
      .then(() => {
        port.postMessage({ kind: 'stopped' } satisfies FromEdgeThread);
        port.close();
      });
  });
}

const data = workerData as ThreadData | undefined;
if (!isMainThread && parentPort && data?.localEdge) void runThread(parentPort, data.localEdge, data.handover ?? null);

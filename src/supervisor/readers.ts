/**
 * Reader threads (issue 19): read requests and searches run on read-only WAL connections in worker
 * threads, so the request thread never waits on a query, N cores answer N reads at once, and a slow
 * query delays only itself. The main thread keeps the key, the listeners and the bus; the key
 * reaches the readers the way it reaches the loops (worker data, zeroed there after opening).
 *
 * Two lanes, each its own set of threads: searches in one, every other read in the other. A cheap
 * read is never queued behind searches first come first served; the two lanes share the cores
 * through the OS scheduler.
 */
import os from 'node:os';
import { workerFile } from '../core/worker-file.js';
import { Piscina } from 'piscina';
import { ApiError } from '../core/errors.js';
import { SEARCH_OPS, type ReadArgs, type ReadOp, type ReadResult } from '../requests/read-ops.js';
import type { ReadAnswer, ReadTask, ReaderWorkerData } from '../../workers/readers/reader.js';

const READER_FILE = workerFile('../../workers/readers/reader.js', import.meta.url);
/** An idle thread of the read lane exits after this long, but for the one it keeps always. */
const IDLE_MS = 30_000;
/**
 * A search thread lives this long after its last search. A new reader thread loads its modules for
 * about 170 ms before it answers (a search after 30 s idle took 176–361 ms at 1,000,000 messages,
 * 10–38 ms right after; docs/benchmarks.md, twelfth round), so an agent searching every few
 * minutes would wait that long every time. A search thread holds about 18 MiB while it lives.
 */
const SEARCH_IDLE_MS = 10 * 60_000;

export type ReadLane = 'read' | 'search';
const LANE_IDLE_MS: Readonly<Record<ReadLane, number>> = { read: IDLE_MS, search: SEARCH_IDLE_MS };

export class Readers {
  readonly #key: Uint8Array;
  readonly #dbFile: string;
  readonly #lanes: Partial<Record<ReadLane, Piscina>> = {};
  /** Reads not yet answered; closing waits for them (see `close`). */
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #idleMs: Readonly<Record<ReadLane, number>>;

  /** `idleMs`: how long an idle thread of each lane lives (tests shorten it). */
  constructor(dbFile: string, dbKey: Buffer, idleMs: Readonly<Record<ReadLane, number>> = LANE_IDLE_MS) {
    this.#dbFile = dbFile;
    this.#key = new Uint8Array(dbKey);
    this.#idleMs = idleMs;
  }

  /** The lane's threads alive now (tests and diagnostics). */
  liveThreads(lane: ReadLane): number {
    return this.#lanes[lane]?.threads.length ?? 0;
  }

  /**
   * Starts the read lane's warm thread and opens its connection; called once the service is
   * serving, so it does not slow start-up. As a read in flight, it is waited for by `close`.
   */
  start(): void {
    this.run('ping').catch(() => undefined);
  }

  #lane(name: ReadLane): Piscina {
    let pool = this.#lanes[name];
    if (!pool) {
      const workerData: ReaderWorkerData = { dbFile: this.#dbFile, dbKey: this.#key };
      const threads = Math.max(2, os.availableParallelism());
      pool = new Piscina({ filename: READER_FILE, minThreads: name === 'read' ? 1 : 0, maxThreads: threads, idleTimeout: this.#idleMs[name], workerData });
      this.#lanes[name] = pool;
    }
    return pool;
  }

  /** Runs one read request in its lane; an ApiError it raised is thrown again here. */
  async run<K extends ReadOp>(op: K, ...args: ReadArgs<K>): Promise<ReadResult<K>> {
    const task: ReadTask = { op, args };
    const running = this.#lane(SEARCH_OPS.has(op) ? 'search' : 'read').run(task);
    this.#inFlight.add(running);
    void running.then(
      () => this.#inFlight.delete(running),
      () => this.#inFlight.delete(running),
    );
    const answer = (await running) as ReadAnswer;
    if (answer.ok) return answer.value as ReadResult<K>;
    const { code, message, fix, extra, headers } = answer.error;
    throw new ApiError(code, message, { fix, extra, headers });
  }

  /**
   * Waits for the reads in flight, then ends the threads. A read in flight may be waiting for its
   * thread to load, and Node 20 aborts the whole process when a worker is terminated during ES
   * module instantiation; reads are short, so waiting costs little.
   */
  async close(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
    await Promise.all(Object.values(this.#lanes).map((pool) => pool.destroy()));
    this.#key.fill(0);
  }
}

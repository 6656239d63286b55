/**
 * The service's threads take svc.db's write lock in turn through this gate, a lock word in shared
 * memory, before SQLite's own BEGIN IMMEDIATE. SQLite's busy handler polls with growing sleeps
 * (1, 2, 5, 10 … ms), so a thread that meets the lock held sleeps on after it is free; measured
 * under the send benchmark, the request thread spent most of its time there. Through the gate a
 * waiter wakes the moment the holder releases, and the request thread waits without blocking
 * (`acquire` resolves on its event loop).
 *
 * The gate only orders the service's own threads; SQLite's lock stays the rule (other processes,
 * such as a CLI command, meet busy_timeout as before). It can never wedge the service: a wait
 * gives up after GATE_WAIT_MS and falls back on SQLite's lock, and the supervisor frees the gate
 * of a thread that died holding it (`releaseDeadHolder`).
 */
import { threadId } from 'node:worker_threads';

/** How long a thread waits for the gate before it falls back on SQLite's own lock handling. */
const GATE_WAIT_MS = 2_000;
/**
 * A thread that finds the gate free while the request thread waits for it (asynchronously, so it
 * can take the gate only on a turn of its event loop) leaves it this long for the request thread
 * first, so that loops committing back to back do not starve the requests.
 */
const REQUEST_HEAD_START_MS = 5;
/** Word 0: the holder (threadId + 1) or FREE. Word 1: how many asynchronous waiters there are. */
const HOLDER = 0;
const ASYNC_WAITERS = 1;
const FREE = 0;
/** The holder is stored as its threadId + 1, so the main thread (0) is not mistaken for free. */
const me = threadId + 1;
/** This thread's own asynchronous waiters (a thread does not leave the gate to itself). */
let localAsyncWaiters = 0;

export class WriteGate {
  readonly #word: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.#word = new Int32Array(buffer);
  }

  /** Whether this thread holds the gate. */
  held(): boolean {
    return Atomics.load(this.#word, HOLDER) === me;
  }

  /** Takes the gate, blocking this thread while another holds it; false when the wait timed out. */
  acquireSync(): boolean {
    const until = performance.now() + GATE_WAIT_MS;
    let yielded = false;
    for (;;) {
      if (!yielded && Atomics.load(this.#word, ASYNC_WAITERS) > localAsyncWaiters && Atomics.load(this.#word, HOLDER) === FREE) {
        yielded = true;
        Atomics.wait(this.#word, HOLDER, FREE, REQUEST_HEAD_START_MS);
      }
      const holder = Atomics.compareExchange(this.#word, HOLDER, FREE, me);
      if (holder === FREE) return true;
      const left = until - performance.now();
      if (left <= 0) return false;
      Atomics.wait(this.#word, HOLDER, holder, left);
    }
  }

  /** Takes the gate without blocking the event loop; resolves false when the wait timed out. */
  async acquire(): Promise<boolean> {
    if (Atomics.compareExchange(this.#word, HOLDER, FREE, me) === FREE) return true;
    const until = performance.now() + GATE_WAIT_MS;
    Atomics.add(this.#word, ASYNC_WAITERS, 1);
    localAsyncWaiters++;
    try {
      for (;;) {
        const holder = Atomics.compareExchange(this.#word, HOLDER, FREE, me);
        if (holder === FREE) return true;
        const left = until - performance.now();
        if (left <= 0) return false;
        const waiting = Atomics.waitAsync(this.#word, HOLDER, holder, left);
        if (waiting.async) await waiting.value;
      }
    } finally {
      localAsyncWaiters--;
      Atomics.sub(this.#word, ASYNC_WAITERS, 1);
    }
  }

  release(): void {
    if (Atomics.compareExchange(this.#word, HOLDER, me, FREE) === me) Atomics.notify(this.#word, HOLDER);
  }

  /** Frees the gate when the thread `deadThreadId` died holding it (called by the supervisor). */
  releaseDeadHolder(deadThreadId: number): void {
    if (Atomics.compareExchange(this.#word, HOLDER, deadThreadId + 1, FREE) === deadThreadId + 1) Atomics.notify(this.#word, HOLDER);
  }
}

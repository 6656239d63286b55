/**
 * Group commit for request handlers: writes that become ready in the same event-loop turn share
 * one transaction, and one WAL sync covers them. Each write runs in its own savepoint: one that
 * throws is rolled back and rejected alone; the others still commit. A write's promise resolves
 * only after the shared commit is durable.
 *
 * The request thread never waits on another thread's write lock or on the disk here: it takes
 * the write gate (src/db/write-gate.ts) asynchronously, runs the transaction, releases the gate,
 * and awaits the WAL sync on the libuv pool. Writes that arrive meanwhile form the next group.
 */
import { commitWithoutSync, gateOf, syncWal, type Db } from './open.js';

interface Job {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

class GroupCommit {
  #queue: Job[] = [];
  #scheduled = false;

  constructor(private readonly db: Db) {}

  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    const gate = gateOf(this.db);
    const gated = gate !== null && (await gate.acquire());
    // Taken after the wait, so writes queued while the gate was busy join this group.
    const batch = this.#queue.splice(0);
    this.#scheduled = false;
    const outcomes: Outcome[] = [];
    try {
      commitWithoutSync(this.db, () => {
        for (const job of batch) {
          try {
            outcomes.push({ ok: true, value: this.db.transaction(job.fn)() });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      for (const job of batch) job.reject(error);
      return;
    } finally {
      if (gated) gate.release();
    }
    try {
      await syncWal(this.db);
    } catch (error) {
      for (const job of batch) job.reject(error);
      return;
    }
    batch.forEach((job, i) => {
      const o = outcomes[i];
      if (o.ok) job.resolve(o.value);
      else job.reject(o.error);
    });
  }
}

const committers = new WeakMap<Db, GroupCommit>();

/** Runs `fn` inside a transaction shared with the other writes of this turn; resolves once durable. */
export function groupCommit<T>(db: Db, fn: () => T): Promise<T> {
  let committer = committers.get(db);
  if (!committer) {
    committer = new GroupCommit(db);
    committers.set(db, committer);
  }
  return committer.run(fn);
}

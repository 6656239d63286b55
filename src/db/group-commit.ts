/**
 * Group commit for request handlers: writes that become ready in the same event-loop turn share
 * one transaction, so one fsync (synchronous=FULL) covers several requests. Each write runs in its
 * own savepoint: one that throws is rolled back and rejected alone; the others still commit.
 * A write's promise resolves only after the shared commit is durable.
 */
import type { Db } from './open.js';

interface Job {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

class GroupCommit {
  #queue: Job[] = [];
  #scheduled = false;

  constructor(private readonly db: Db) {}

  run<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    const batch = this.#queue.splice(0);
    this.#scheduled = false;
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      this.db
        .transaction(() => {
          for (const job of batch) {
            try {
              outcomes.push({ ok: true, value: this.db.transaction(job.fn)() });
            } catch (error) {
              outcomes.push({ ok: false, error });
            }
          }
        })
        .immediate();
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

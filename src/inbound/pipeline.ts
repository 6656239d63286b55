/**
 * The inbound pull pipeline (spec §1.3, §8; ARCHITECTURE §6): one pass of the inbound-pull loop
 * over pages of the edge listing. Two halves run side by side: the lister lists whatever is new
 * after its cursor (paging past objects held in quarantine, so they never hide newer mail) and
 * starts fetching and opening each page at once (src/inbound/ingest.ts prepareBatch); when caught
 * up it long-polls the edge for the next object instead of listing again. The committer takes
 * the pages in key order and commits every page that is ready in one transaction, so it batches
 * more when it falls behind and waits for nothing when it does not. It deletes a page at the edge
 * only after its commit is durable, one delete request in flight at a time. Large objects (over
 * 256 KiB) go to a third part, the large-message lane, which fetches, opens, commits and deletes
 * them one at a time beside the committer (issue 32: in the committer's line, one message that
 * took a minute to parse held up all mail behind it). A pass ends once the lister is caught up
 * and the committer and the lane are idle; while the lane works the lister keeps listing, so
 * small mail is committed meanwhile.
 *
 * Objects can also land behind the cursor: the edge's relay stores local mail under a key it
 * reserved before its first try (docs/edge.md), which sorts before keys issued meanwhile. Under
 * steady arrivals a pass runs until MAX_PER_PASS, so the lister looks behind its cursor every
 * BEHIND_SWEEP_MS and once more before the pass ends, taking what it has not listed yet; such
 * mail waits about that long, not until a pass lists from the start again.
 *
 * Invariant: an object is deleted at the edge only after its commit; objects committed but not
 * deleted (a failure, a crash) are listed again later and skipped as already committed.
 */
import { edgeErrorCode } from './edge-client.js';
import { LIST_MAX_LIMIT } from '../edge/limits.js';
import { CommitDeferred, commitBatch, commitLarge, deleteCommitted, prepareBatch, type IngestDeps, type PreparedBatch } from './ingest.js';

/** Objects asked for in one listing. */
const BATCH = 50;
/** Pages listed and being fetched and opened ahead of the committer, and their sealed bytes. */
const PAGES_AHEAD = 4;
const AHEAD_MAX_BYTES = 64 * 1024 * 1024;
/** Sealed bytes in one page (at least one object), so large mail is held a few at a time. */
const PAGE_MAX_BYTES = 16 * 1024 * 1024;
/** A pass that has caught up waits this long for the next object before it ends. */
const CAUGHT_UP_WAIT_MS = 2_000;
/** Objects listed in one pass: bounds a pass so the loop gets to its other work (quarantine retries) during a backlog. */
export const MAX_PER_PASS = 2_000;
/**
 * While a pass runs, the lister looks behind its cursor this often (and before the pass ends) for
 * objects that landed there (see above). The same as the loop's busy interval: such mail waits no
 * longer than a pass that ended at once would make it wait. Each look lists from the start of the
 * buffer, which holds only what is in flight or held in quarantine, in pages of LIST_MAX_LIMIT.
 */
export const BEHIND_SWEEP_MS = 2_000;

/**
 * How a pass ended: `done` (caught up, or MAX_PER_PASS listed), `edge_failed` (the edge could
 * not be reached or a page failed: try again later) or `commit_deferred` (the database could not
 * take the commit now: try again soon). `listed` counts the objects the lister took on.
 */
export interface PullOutcome {
  ended: 'done' | 'edge_failed' | 'commit_deferred';
  listed: number;
  /** With `edge_failed`: our code for what failed (src/inbound/edge-client.ts edgeErrorCode). */
  error?: string;
}

type ObjectSummary = { key: string; size: number };

/** Marks a promise's rejection as handled now; awaiting it later still throws. */
function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/**
 * The large-message lane of one pass: large objects in the order given, one at a time, each
 * fetched, opened (in a worker of its own, workers/loops/inbound-pull.ts), committed in its own
 * transaction and then deleted at the edge. A failure stops the lane; the pass reports it.
 */
class LargeLane {
  private queue: { key: string; size: number }[] = [];
  private running: Promise<void> | null = null;
  failure: unknown = null;

  constructor(private readonly deps: IngestDeps) {}

  get busy(): boolean {
    return this.running !== null;
  }

  add(objects: { key: string; size: number }[]): void {
    // With nothing queued, run() would finish (and clear `running`) before `running` is set.
    if (objects.length === 0 || this.failure !== null) return; // after a failure the pass is ending; a later pass lists them again
    this.queue.push(...objects);
    this.running ??= this.run();
  }

  /** Resolves when the lane has nothing left to do (never rejects: see `failure`). */
  async idle(): Promise<void> {
    while (this.running !== null) await this.running;
  }

  /** Drops what has not started; the one in progress finishes. */
  stop(): void {
    this.queue.length = 0;
  }

  private async run(): Promise<void> {
    try {
      for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
        if (await commitLarge(this.deps, next)) await deleteCommitted(this.deps, [next.key]);
      }
    } catch (err) {
      this.failure = err;
      this.queue.length = 0;
    } finally {
      this.running = null;
    }
  }
}

/**
 * One pass over one edge: list, fetch and open ahead; commit and delete behind. `deps.edge` is
 * the edge pulled; with several edges the loop runs one pass per edge side by side, each
 * deleting only at its own edge (workers/loops/inbound-pull.ts).
 */
export async function pullObjects(deps: IngestDeps, stopped: AbortSignal): Promise<PullOutcome> {
  const client = deps.edge;
  const large = new LargeLane(deps);
  type Page = { prepared: Promise<PreparedBatch>; ready: boolean; bytes: number };
  const pages: Page[] = [];
  let aheadBytes = 0;
  let listed = 0;
  let listing = true;
  let stop = false;
  let failed = false;
  let error: string | undefined;
  let commitDeferred = false;
  let wakeCommitter = () => {};
  let wakeLister = () => {};
  const lister = (async () => {
    let cursor: string | null = null;
    /** Every key this pass took on (at most what it listed), so a look behind the cursor takes only new ones. */
    const taken = new Set<string>();
    /** Found behind the cursor and not yet taken on, in key order. */
    const behind: ObjectSummary[] = [];
    let sweepAt = Date.now() + BEHIND_SWEEP_MS;
    /** The last caught-up wait answered that something landed. */
    let woken = false;
    /** Lists from the start of the buffer up to the cursor; keeps in `behind` what this pass has not taken on. */
    const sweepBehind = async (): Promise<void> => {
      sweepAt = Date.now() + BEHIND_SWEEP_MS;
      const upTo = cursor;
      if (upTo === null) return;
      for (let after: string | null = null; !stop; ) {
        const page = await client.listObjects(after, LIST_MAX_LIMIT);
        for (const o of page.objects) {
          if (o.key > upTo) return;
          if (!taken.has(o.key)) behind.push(o);
        }
        if (!page.has_more || page.objects.length === 0) return;
        after = page.objects.at(-1)!.key;
      }
    };
    try {
      // While the lane works on a large message, small mail keeps coming in beside it.
      while (!stop && (listed < MAX_PER_PASS || large.busy)) {
        if (pages.length >= PAGES_AHEAD || (pages.length > 0 && aheadBytes >= AHEAD_MAX_BYTES)) {
          await new Promise<void>((resolve) => (wakeLister = resolve));
          continue;
        }
        if (behind.length === 0 && Date.now() >= sweepAt) await sweepBehind();
        if (stop) break;
        let found: ObjectSummary[];
        if (behind.length > 0) found = behind;
        else {
          const page = await client.listObjects(cursor, BATCH);
          if (stop) break;
          found = page.objects;
        }
        if (found.length === 0) {
          // Woken with nothing after the cursor: the edge wakes waits for mail that lands behind it, too.
          if (woken) {
            woken = false;
            await sweepBehind();
            if (behind.length > 0) continue;
          }
          const { available } = await client.wait(cursor, CAUGHT_UP_WAIT_MS, stopped);
          woken = available;
          if (available || large.busy) continue;
          // Quiet for a while: end the pass (the long-poll wakes the next) unless mail landed behind the cursor.
          await sweepBehind();
          if (behind.length === 0) break;
          continue;
        }
        woken = false;
        const objects: ObjectSummary[] = [];
        let bytes = 0;
        for (const o of found) {
          if (objects.length >= BATCH || (objects.length > 0 && bytes + o.size > PAGE_MAX_BYTES)) break;
          objects.push(o);
          bytes += o.size;
        }
        if (found === behind) behind.splice(0, objects.length);
        else cursor = objects.at(-1)!.key;
        for (const o of objects) taken.add(o.key);
        listed += objects.length;
        aheadBytes += bytes;
        const entry: Page = { prepared: quiet(prepareBatch(deps, objects)), ready: false, bytes };
        // Settled either way: a failed page makes the committer end the pass when it reaches it.
        const settle = () => {
          entry.ready = true;
          wakeCommitter();
        };
        entry.prepared.then(settle, settle);
        pages.push(entry);
        wakeCommitter();
      }
    } catch (err) {
      failed = true;
      error ??= edgeErrorCode(err);
    } finally {
      listing = false;
      wakeCommitter();
    }
  })();

  let deleting: Promise<void> = Promise.resolve();
  try {
    for (;;) {
      if (pages.length === 0 || !pages[0].ready) {
        if (pages.length === 0 && !listing) break;
        await new Promise<void>((resolve) => (wakeCommitter = resolve));
        continue;
      }
      if (large.failure !== null) throw large.failure;
      // Every page already prepared, oldest first, goes into this one transaction.
      const ready: PreparedBatch = { ready: [], processed: 0 };
      while (pages.length > 0 && pages[0].ready) {
        const page = pages.shift()!;
        aheadBytes -= page.bytes;
        const batch = await page.prepared;
        ready.ready.push(...batch.ready);
        ready.processed += batch.processed;
      }
      wakeLister();
      large.add(ready.ready.filter((o) => o.mail === null));
      const committed = await commitBatch(deps, ready);
      ready.ready.length = 0; // let go of the messages before waiting on the edge
      await deleting; // one delete request in flight at a time
      deleting = quiet(deleteCommitted(deps, committed));
    }
    await deleting;
    await large.idle();
    if (large.failure !== null) throw large.failure;
  } catch (err) {
    failed = true;
    commitDeferred = err instanceof CommitDeferred;
    error ??= edgeErrorCode(err);
  } finally {
    stop = true;
    large.stop();
    wakeLister();
  }
  await large.idle(); // a large message in progress finishes before the next pass lists it again
  if (commitDeferred) return { ended: 'commit_deferred', listed };
  if (failed) return { ended: 'edge_failed', listed, error };
  await lister;
  return { ended: 'done', listed };
}

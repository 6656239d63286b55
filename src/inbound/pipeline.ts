/**
 * The inbound pull pipeline (spec §1.3, §8; ARCHITECTURE §6): one pass of the inbound-pull loop
 * over pages of the edge listing. Two halves run side by side: the lister lists whatever is new
 * after its cursor (paging past objects held in quarantine, so they never hide newer mail) and
 * starts fetching and opening each page at once (src/inbound/ingest.ts prepareBatch); when caught
 * up it long-polls the edge for the next object instead of listing again. The committer takes
 * the pages in key order and commits every page that is ready in one transaction, so it batches
 * more when it falls behind and waits for nothing when it does not; large objects (over 256 KiB)
 * it fetches, opens and commits itself, one at a time, where they fall in that order. It deletes
 * a page at the edge only after its commit is durable, one delete request in flight at a time.
 *
 * Invariant: an object is deleted at the edge only after its commit; objects committed but not
 * deleted (a failure, a crash) are listed again later and skipped as already committed.
 */
import { CommitDeferred, commitBatch, deleteCommitted, prepareBatch, type IngestDeps, type PreparedBatch } from './ingest.js';

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
 * How a pass ended: `done` (caught up, or MAX_PER_PASS listed), `edge_failed` (the edge could
 * not be reached or a page failed: try again later) or `commit_deferred` (the database could not
 * take the commit now: try again soon). `listed` counts the objects the lister took on.
 */
export interface PullOutcome {
  ended: 'done' | 'edge_failed' | 'commit_deferred';
  listed: number;
}

/** Marks a promise's rejection as handled now; awaiting it later still throws. */
function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

/** One pass: list, fetch and open ahead; commit and delete behind. `deps.edge` is the paired edge. */
export async function pullObjects(deps: IngestDeps, stopped: AbortSignal): Promise<PullOutcome> {
  const client = deps.edge;
  type Page = { prepared: Promise<PreparedBatch>; ready: boolean; bytes: number };
  const pages: Page[] = [];
  let aheadBytes = 0;
  let listed = 0;
  let listing = true;
  let stop = false;
  let failed = false;
  let commitDeferred = false;
  let wakeCommitter = () => {};
  let wakeLister = () => {};
  const lister = (async () => {
    let cursor: string | null = null;
    try {
      while (!stop && listed < MAX_PER_PASS) {
        if (pages.length >= PAGES_AHEAD || (pages.length > 0 && aheadBytes >= AHEAD_MAX_BYTES)) {
          await new Promise<void>((resolve) => (wakeLister = resolve));
          continue;
        }
        const page = await client.listObjects(cursor, BATCH);
        if (stop) break;
        if (page.objects.length === 0) {
          const { available } = await client.wait(cursor, CAUGHT_UP_WAIT_MS, stopped);
          if (!available) break; // quiet for a while: end the pass, the long-poll wakes the next
          continue;
        }
        const objects: typeof page.objects = [];
        let bytes = 0;
        for (const o of page.objects) {
          if (objects.length > 0 && bytes + o.size > PAGE_MAX_BYTES) break;
          objects.push(o);
          bytes += o.size;
        }
        cursor = objects.at(-1)!.key;
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
    } catch {
      failed = true;
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
      const committed = await commitBatch(deps, ready);
      ready.ready.length = 0; // let go of the messages before waiting on the edge
      await deleting; // one delete request in flight at a time
      deleting = quiet(deleteCommitted(deps, committed));
    }
    await deleting;
  } catch (err) {
    failed = true;
    commitDeferred = err instanceof CommitDeferred;
  } finally {
    stop = true;
    wakeLister();
  }
  if (commitDeferred) return { ended: 'commit_deferred', listed };
  if (failed) return { ended: 'edge_failed', listed };
  await lister;
  return { ended: 'done', listed };
}

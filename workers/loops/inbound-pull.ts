/**
 * The inbound pull loop (spec §8: every 2 s while busy, 30 s idle; woken at once by the edge's
 * long-poll): fetch → open and parse in the pool → lists and verdicts → commit → delete at the edge.
 *
 * A pass is a pipeline over pages of the edge listing: while page n is committed (one
 * transaction) and then deleted at the edge (one request, only after the commit is durable),
 * page n+1 is already being listed, fetched (one request) and opened in the pool.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import type { JWK } from 'jose';
import { runLoop, type LoopContext } from './run-loop.js';
import { readTransport } from '../../src/mail/transport.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import { CommitDeferred, commitBatch, deleteCommitted, ingestObject, prepareBatch, type IngestDeps, type PreparedBatch } from '../../src/inbound/ingest.js';
import { dueForAutoRetry, finishQuarantine, recordFailedRetry, setStatus } from '../../src/inbound/quarantine.js';
import { openInbound, type OpenedInbound } from '../pool/tasks.js';
import type { OpenLargeReply, OpenLargeRequest } from '../pool/open-large.js';

const BATCH = 50;
/**
 * Sealed objects up to this size are opened and parsed in this loop's own thread: that skips
 * the copies to and from another thread, which cost more CPU than the parse of a typical message.
 */
const OPEN_IN_LOOP_MAX_CHARS = 256 * 1024;
/**
 * Larger ones are opened one at a time, each in a worker of its own (workers/pool/open-large.ts)
 * that gets the sealed bytes and returns the message bytes by transfer and then exits, so the
 * parser's transient copies (several times the message) never pile up across messages and are
 * released when it ends (issue 16, finding 9: four 20 MB messages at once held 2.3 GB before).
 */
const LARGE_OPENS_AT_ONCE = 1;
/** The opener's heap: many times what a 25 MB message needs; a message that needs more fails alone (`parse_failed`). */
const LARGE_OPEN_HEAP_MB = 1_024;
const OPEN_LARGE_FILE = fileURLToPath(new URL('../pool/open-large.js', import.meta.url));
/** Pages listed and being fetched and opened ahead of the committer, and their sealed bytes. */
const PAGES_AHEAD = 4;
const AHEAD_MAX_BYTES = 64 * 1024 * 1024;
/** Sealed bytes in one page (at least one object), so large mail is held a few at a time. */
const PAGE_MAX_BYTES = 16 * 1024 * 1024;
/** A pass that has caught up waits this long for the next object before it ends. */
const CAUGHT_UP_WAIT_MS = 2_000;
const MAX_PER_PASS = 2_000;
const LONG_POLL_MS = 25_000;
const RETRY_POLL_MS = 2_000;
/** A commit the database could not take now (busy past its retries, disk trouble) is tried again this soon, not on the idle schedule. */
const COMMIT_RETRY_MS = 1_000;

/** Quarantine items retried per pass: bounds the time a pass spends on old failures before new mail. */
const AUTO_RETRIES_PER_PASS = 10;

let polling = false;

/**
 * Retries quarantined objects whose reason is transient once their backoff has passed
 * (src/inbound/quarantine.ts). Success releases the item (`inbound.released`); another failure
 * counts an attempt. An edge or database that is unavailable counts nothing: the item is tried
 * again on the next pass. Returns how many items were tried.
 */
/** Whether any recipient's copy of this edge object is stored (commit keys are `<object key>:<inbox>`). */
function wasCommitted(db: IngestDeps['db'], objectKey: string): boolean {
  return Boolean(db.prepare('SELECT 1 FROM messages WHERE source_key >= ? AND source_key < ? LIMIT 1').get(`${objectKey}:`, `${objectKey};`));
}

async function retryQuarantined(deps: IngestDeps): Promise<number> {
  const { db } = deps;
  const due = dueForAutoRetry(db, Date.now(), AUTO_RETRIES_PER_PASS);
  for (const item of due) {
    setStatus(db, item.quarantine_id, 'release_pending');
    let result;
    try {
      result = await ingestObject(deps, item.source_key, item.size, { retry: true });
    } catch {
      setStatus(db, item.quarantine_id, 'quarantined');
      break; // edge unreachable or storage busy: stop here, the next pass tries again
    }
    // `gone` after the mail was committed (an earlier pass stored it, then deleted it at the edge): it was delivered.
    const delivered = result.outcome === 'committed' || (result.outcome === 'gone' && wasCommitted(db, item.source_key));
    if (delivered) deps.publish(finishQuarantine(db, item.quarantine_id, 'released'));
    else recordFailedRetry(db, item.quarantine_id, result.outcome === 'failed' ? result.reason : item.reason_code);
  }
  return due.length;
}

function openInWorker(sealed: Uint8Array, privateJwk: JWK): Promise<OpenedInbound> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(OPEN_LARGE_FILE, { name: 'inbound-open-large', resourceLimits: { maxOldGenerationSizeMb: LARGE_OPEN_HEAP_MB } });
    // The answer is given only once the worker has exited, so its heap (the parser's transient
    // copies, several times the message) is gone before the commit allocates its own.
    let reply: OpenLargeReply | null = null;
    worker.once('message', (answer: OpenLargeReply) => {
      reply = answer;
      void worker.terminate();
    });
    // Out of memory or any other death before an answer: the message could not be parsed within the bounds.
    worker.once('error', () => void worker.terminate());
    worker.once('exit', () => {
      const answer = reply as OpenLargeReply | null;
      if (answer?.ok) resolve(answer.opened);
      else reject(new Error(answer?.reason ?? 'parse_failed'));
    });
    const bytes = sealed.byteOffset === 0 && sealed.byteLength === sealed.buffer.byteLength ? sealed : sealed.slice();
    worker.postMessage({ sealed: bytes, privateJwk } satisfies OpenLargeRequest, [bytes.buffer as ArrayBuffer]);
  });
}

/** Runs large opens LARGE_OPENS_AT_ONCE at a time, in arrival order. */
const largeOpens: Promise<unknown>[] = [];
async function openLarge(sealed: string | Uint8Array, privateJwk: JWK): Promise<OpenedInbound> {
  const before = largeOpens.length >= LARGE_OPENS_AT_ONCE ? largeOpens[largeOpens.length - LARGE_OPENS_AT_ONCE] : undefined;
  const run = (async () => {
    await before?.catch(() => undefined);
    return openInWorker(typeof sealed === 'string' ? Buffer.from(sealed, 'latin1') : sealed, privateJwk);
  })();
  largeOpens.push(run);
  const forget = () => largeOpens.splice(largeOpens.indexOf(run), 1);
  run.then(forget, forget);
  return run;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Runs beside the passes for the life of the worker: wakes the loop as soon as mail lands. It
 * waits for keys newer than the newest it has announced, so it never spins while a pass catches
 * up; a quiet timeout resets that cursor to the edge's newest key (or none), so keys made after a
 * clock step back on an edge restart still wake the loop.
 */
async function longPoll(ctx: LoopContext): Promise<void> {
  let announced: string | null = null;
  while (!ctx.stopped.aborted) {
    const { edge } = readTransport(ctx.db);
    if (!edge) {
      await pause(RETRY_POLL_MS, ctx.stopped);
      continue;
    }
    try {
      const { available, latest } = await new EdgeClient(edge.url, edge.token).wait(announced, LONG_POLL_MS, ctx.stopped);
      if (available) ctx.wakeSelf();
      announced = latest;
    } catch {
      await pause(RETRY_POLL_MS, ctx.stopped);
    }
  }
}

/** Marks a promise's rejection as handled now; awaiting it later still throws. */
function quiet<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

runLoop(async (ctx) => {
  if (!polling) {
    polling = true;
    void longPoll(ctx);
  }
  const { db } = ctx;
  const { edge } = readTransport(db);
  if (!edge) return 'idle';
  const client = new EdgeClient(edge.url, edge.token);
  const { privateJwk } = await homeKeyPair(db);
  const deps: IngestDeps = {
    db,
    edge: client,
    open: (sealed) =>
      (typeof sealed === 'string' ? sealed.length : sealed.byteLength) <= OPEN_IN_LOOP_MAX_CHARS ? openInbound({ jwe: sealed, privateJwk }) : openLarge(sealed, privateJwk),
    publish: (seq: number) => ctx.publish({ kind: 'event', seq }),
    // Test-only (docs/testing.md): die like `kill -9` after a commit, before the edge delete.
    beforeDelete: ctx.fault === 'inbound-kill-after-commit' ? () => process.kill(process.pid, 'SIGKILL') : undefined,
  };
  const retried = await retryQuarantined(deps);
  // Two halves run side by side. The lister lists whatever is new after its cursor (paging past
  // objects held in quarantine, so they never hide newer mail) and starts fetching and opening it
  // at once; when caught up it long-polls the edge for the next object instead of listing again.
  // The committer takes the pages in key order and commits every page that is ready in one
  // transaction, so it batches more when it falls behind and waits for nothing when it does not.
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
          const { available } = await client.wait(cursor, CAUGHT_UP_WAIT_MS, ctx.stopped);
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
      const committed = commitBatch(deps, ready);
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
  // Edge unreachable: try again on the idle schedule or at the next long-poll. Objects committed
  // but not deleted are fetched again later and skipped as already committed.
  if (commitDeferred) return { delayMs: COMMIT_RETRY_MS };
  if (failed) return 'idle';
  await lister;
  if (listed >= MAX_PER_PASS) return { delayMs: 0 }; // a backlog may remain: continue at once
  return listed > 0 || retried > 0 ? 'busy' : 'idle';
});

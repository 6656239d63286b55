/**
 * The inbound pull loop (spec §8: every 2 s while busy, 30 s idle; woken at once by the edge's
 * long-poll): fetch → open and parse in the pool → lists and verdicts → commit → delete at the edge.
 *
 * A pass is a pipeline over pages of the edge listing: while page n is committed (one
 * transaction) and then deleted at the edge (one request, only after the commit is durable),
 * page n+1 is already being listed, fetched (one request) and opened in the pool.
 */
import { runLoop, type LoopContext } from './run-loop.js';
import { readTransport } from '../../src/mail/transport.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import { commitBatch, deleteCommitted, prepareBatch, type IngestDeps, type PreparedBatch } from '../../src/inbound/ingest.js';
import type { OpenedInbound } from '../pool/tasks.js';

const BATCH = 100;
const MAX_PER_PASS = 2_000;
const LONG_POLL_MS = 25_000;
const RETRY_POLL_MS = 2_000;

let polling = false;

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
    open: (jwe: string) => ctx.runTask('openInbound', { jwe, privateJwk }) as Promise<OpenedInbound>,
    publish: (seq: number) => ctx.publish({ kind: 'event', seq }),
    // Test-only (docs/testing.md): die like `kill -9` after a commit, before the edge delete.
    beforeDelete: ctx.fault === 'inbound-kill-after-commit' ? () => process.kill(process.pid, 'SIGKILL') : undefined,
  };
  // Page past objects held in quarantine so they never hide newer mail. The next page is listed
  // as soon as this one's listing returns, so listing, fetching and opening overlap the commit.
  type Listed = { last: string | null; batch: Promise<PreparedBatch> };
  const listAfter = async (after: string | null): Promise<Listed> => {
    const page = await client.listObjects(after, BATCH);
    return { last: page.objects.at(-1)?.key ?? null, batch: quiet(prepareBatch(deps, page.objects)) };
  };
  let worked = 0;
  let capped = false;
  let listing: Promise<Listed> = quiet(listAfter(null));
  let deleting: Promise<void> = Promise.resolve();
  try {
    for (;;) {
      const { last, batch: preparing }: Listed = await listing;
      if (last === null) break; // nothing after the cursor: the pass is done
      capped = worked >= MAX_PER_PASS;
      if (!capped) listing = quiet(listAfter(last));
      const batch = await preparing;
      worked += batch.processed;
      const committed = commitBatch(deps, batch);
      await deleting; // one delete request in flight at a time
      deleting = quiet(deleteCommitted(deps, committed));
      if (capped) break;
    }
    await deleting;
  } catch {
    // Edge unreachable: try again on the idle schedule or at the next long-poll. Objects committed
    // but not deleted are fetched again later and skipped as already committed.
    return 'idle';
  }
  if (capped) return { delayMs: 0 }; // a backlog remains: continue at once
  return worked > 0 ? 'busy' : 'idle';
});

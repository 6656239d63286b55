/**
 * The inbound pull loop (spec §8: every 2 s while busy, 30 s idle; woken at once by the edge's
 * long-poll): fetch → open and parse in the pool → lists and verdicts → commit → delete at the edge.
 */
import { runLoop, type LoopContext } from './run-loop.js';
import { readTransport } from '../../src/mail/transport.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import { ingestBatch } from '../../src/inbound/ingest.js';
import type { OpenedInbound } from '../pool/tasks.js';

const BATCH = 100;
const MAX_PER_PASS = 500;
const LONG_POLL_MS = 25_000;
const RETRY_POLL_MS = 2_000;

/** The newest object key seen, so the long-poll only wakes us for newer mail. */
let newestSeen: string | null = null;
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

/** Runs beside the passes for the life of the worker: wakes the loop as soon as mail lands. */
async function longPoll(ctx: LoopContext): Promise<void> {
  while (!ctx.stopped.aborted) {
    const { edge } = readTransport(ctx.db);
    if (!edge) {
      await pause(RETRY_POLL_MS, ctx.stopped);
      continue;
    }
    try {
      if (await new EdgeClient(edge.url, edge.token).wait(newestSeen, LONG_POLL_MS, ctx.stopped)) {
        ctx.wakeSelf();
        await pause(100, ctx.stopped); // let the pass list the new object before asking again
      }
    } catch {
      await pause(RETRY_POLL_MS, ctx.stopped);
    }
  }
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
  const deps = {
    db,
    edge: client,
    open: (jwe: string) => ctx.runTask('openInbound', { jwe, privateJwk }) as Promise<OpenedInbound>,
    publish: (seq: number) => ctx.publish({ kind: 'event', seq }),
    // Test-only (docs/testing.md): die like `kill -9` after a commit, before the edge delete.
    beforeDelete: ctx.fault === 'inbound-kill-after-commit' ? () => process.kill(process.pid, 'SIGKILL') : undefined,
  };
  let worked = 0;
  let after: string | null = null;
  let more = true;
  try {
    // Page past objects held in quarantine so they never hide newer mail.
    while (more && worked < MAX_PER_PASS) {
      const page = await client.listObjects(after, BATCH);
      more = page.has_more;
      for (const { key } of page.objects) if (newestSeen === null || key > newestSeen) newestSeen = key;
      after = page.objects.at(-1)?.key ?? after;
      worked += await ingestBatch(deps, page.objects);
    }
  } catch {
    return 'idle'; // edge unreachable: try again on the idle schedule or at the next long-poll
  }
  if (more) return { delayMs: 0 }; // a backlog remains: continue at once
  return worked > 0 ? 'busy' : 'idle';
});

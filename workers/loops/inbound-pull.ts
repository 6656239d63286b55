/**
 * The inbound pull loop (spec §8: every 2 s while busy, 30 s idle; woken at once by the edge's
 * long-poll): fetch → open and parse in the pool → lists and verdicts → commit → delete at the edge.
 *
 *   wake (the long-poll below, or the timer) → retry due transient quarantine items
 *   (src/inbound/quarantine-actions.ts) → pull: list, fetch and open ahead while committing and
 *   deleting behind (src/inbound/pipeline.ts) → schedule the next pass from how it ended.
 *
 * What stays here is what belongs to this worker thread: opening sealed objects (small ones in
 * this thread, large ones in a worker of their own) and the long-poll that wakes the loop.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import type { JWK } from 'jose';
import { runLoop, type LoopContext } from './run-loop.js';
import { INBOUND_COMMIT_RETRY_MS as COMMIT_RETRY_MS } from '../../src/supervisor/loop-table.js';
import { readTransport } from '../../src/mail/transport.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import type { IngestDeps } from '../../src/inbound/ingest.js';
import { MAX_PER_PASS, pullObjects } from '../../src/inbound/pipeline.js';
import { retryDueQuarantine } from '../../src/inbound/quarantine-actions.js';
import { openInbound, type OpenedInbound } from '../pool/tasks.js';
import type { OpenLargeReply, OpenLargeRequest } from '../pool/open-large.js';

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
const LONG_POLL_MS = 25_000;
const RETRY_POLL_MS = 2_000;

let polling = false;

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

runLoop(async (ctx) => {
  if (!polling) {
    polling = true;
    void longPoll(ctx);
  }
  const { db } = ctx;
  const { edge } = readTransport(db);
  if (!edge) return 'idle';
  const { privateJwk } = await homeKeyPair(db);
  const deps: IngestDeps = {
    db,
    edge: new EdgeClient(edge.url, edge.token),
    open: (sealed) =>
      (typeof sealed === 'string' ? sealed.length : sealed.byteLength) <= OPEN_IN_LOOP_MAX_CHARS ? openInbound({ jwe: sealed, privateJwk }) : openLarge(sealed, privateJwk),
    publish: (seq: number) => ctx.publish({ kind: 'event', seq }),
    // Test-only (docs/testing.md): die like `kill -9` after a commit, before the edge delete.
    beforeDelete: ctx.fault === 'inbound-kill-after-commit' ? () => process.kill(process.pid, 'SIGKILL') : undefined,
  };
  const retried = await retryDueQuarantine(deps);
  const pulled = await pullObjects(deps, ctx.stopped);
  // Edge unreachable: try again on the idle schedule or at the next long-poll. Objects committed
  // but not deleted are fetched again later and skipped as already committed.
  if (pulled.ended === 'commit_deferred') return { delayMs: COMMIT_RETRY_MS };
  if (pulled.ended === 'edge_failed') return 'idle';
  if (pulled.listed >= MAX_PER_PASS) return { delayMs: 0 }; // a backlog may remain: continue at once
  return pulled.listed > 0 || retried > 0 ? 'busy' : 'idle';
});

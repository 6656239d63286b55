/**
 * The inbound pull loop (spec §8: every 2 s while busy, 30 s idle; woken at once by the edge's
 * long-poll): fetch → open and parse in the pool → lists and verdicts → commit → delete at the edge.
 *
 *   wake (the long-poll below, or the timer) → retry due transient quarantine items
 *   (src/inbound/quarantine-actions.ts) → pull: list, fetch and open ahead while committing and
 *   deleting behind (src/inbound/pipeline.ts) → schedule the next pass from how it ended.
 *
 * What stays here is what belongs to this worker thread: opening sealed objects (small ones in
 * this thread, large ones parsed in a worker of their own) and the long-poll that wakes the loop.
 */
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import type { JWK } from 'jose';
import { loopPass, type LoopContext } from './run-loop.js';
import { INBOUND_COMMIT_RETRY_MS as COMMIT_RETRY_MS } from '../../src/supervisor/loop-table.js';
import { readTransport } from '../../src/mail/transport.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import type { IngestDeps } from '../../src/inbound/ingest.js';
import { MAX_PER_PASS, pullObjects } from '../../src/inbound/pipeline.js';
import { retryDueQuarantine } from '../../src/inbound/quarantine-actions.js';
import type { OpenedInbound } from '../pool/tasks.js';
import type { ParseLargeReply, ParseLargeRequest } from '../pool/parse-large.js';
import type { ParseFailure, ParsedMail } from '../pool/parse.js';
import type { DerivedText } from '../../src/mail/extract.js';
import { COLLECT_AFTER_BYTES, collectGarbage } from '../../src/core/gc.js';
import type { InboundMeta } from '../../src/edge/sealed.js';
import { checkServers } from '../../src/domains/checks.js';
import { withAttachmentText } from '../../src/attachment-text/on-receive.js';
import { EXTRACT_ATTACHMENT_TEXT, type AttachmentText } from '../../src/attachment-text/schemas.js';

/**
 * Sealed objects up to this size are opened and parsed in this loop's own thread: that skips
 * the copies to and from another thread, which cost more CPU than the parse of a typical message.
 */
const OPEN_IN_LOOP_MAX_CHARS = 256 * 1024;
/**
 * Larger ones are opened here in place (no second copy of the message, src/edge/sealed.ts) and
 * parsed one at a time, each in a worker of its own (workers/pool/parse-large.ts) that gets the
 * message's buffer moved to it, moves it back with the attachment bytes and then exits, so the
 * parser's transient copies (several times the message) never pile up across messages and are
 * released when it ends (issue 16, finding 9: four 20 MB messages at once held 2.3 GB before).
 * The pipeline's large-message lane asks for them, beside the small messages (src/inbound/pipeline.ts).
 * The parser's heap is many times what a 25 MB message needs; a message that needs more fails
 * alone, for good (`parse_limit_exceeded`). Its young generation is small, so its garbage is freed as it goes.
 */
const LARGE_PARSE_HEAP_MB = 1_024;
const LARGE_PARSE_YOUNG_MB = 4;
/**
 * Far longer than the parse of any 25 MB message takes (about 1 s here; every step of it is
 * linear, issue 32); past it the message fails alone, for good (`parse_limit_exceeded`), and only
 * the large messages queued behind it in the lane have waited.
 */
const LARGE_PARSE_TIMEOUT_MS = 30_000;
/**
 * The MIME parser (mailparser) and its task module are loaded on the first message, not at start:
 * an idle home never pays for them (issue 19, memory per loop thread).
 */
let tasks: Promise<typeof import('../pool/tasks.js')> | null = null;
const openInbound = async (input: Parameters<typeof import('../pool/tasks.js').openInbound>[0]): Promise<OpenedInbound> =>
  (await (tasks ??= import('../pool/tasks.js'))).openInbound(input);

const PARSE_LARGE_FILE = fileURLToPath(new URL('../pool/parse-large.js', import.meta.url));
const LONG_POLL_MS = 25_000;
const RETRY_POLL_MS = 2_000;

let polling = false;

/**
 * Parses `raw` in a worker of its own. `raw`'s buffer is moved there and back: `raw` itself reads
 * as empty afterwards, use the `raw` returned (the same bytes, not copied).
 */
function parseInWorker(raw: Buffer, stall: boolean): Promise<{ parsed: ParsedMail; derived: DerivedText; raw: Buffer }> {
  // `raw` is a view into the sealed object's buffer, which nothing else reads (it is far larger
  // than what Node pools), so the whole buffer moves; a SharedArrayBuffer cannot, and is copied.
  const own = raw.buffer instanceof ArrayBuffer ? raw : Buffer.from(raw);
  const request: ParseLargeRequest = { buffer: own.buffer as ArrayBuffer, offset: own.byteOffset, length: own.byteLength, stall };
  return new Promise((resolve, reject) => {
    const worker = new Worker(PARSE_LARGE_FILE, {
      name: 'inbound-parse-large',
      resourceLimits: { maxOldGenerationSizeMb: LARGE_PARSE_HEAP_MB, maxYoungGenerationSizeMb: LARGE_PARSE_YOUNG_MB },
    });
    // The answer is taken only once the worker has exited, so its heap (the parser's transient
    // copies, several times the message) is gone before the commit allocates its own.
    let reply: ParseLargeReply | null = null;
    // Why it ended without an answer: out of time or memory is the message's own doing and final;
    // any other death (e.g. the worker could not start) may pass on a later try.
    let failure: ParseFailure = 'parse_failed';
    worker.once('message', (answer: ParseLargeReply) => {
      reply = answer;
      void worker.terminate();
    });
    worker.once('error', (err: Error & { code?: string }) => {
      if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') failure = 'parse_limit_exceeded';
      void worker.terminate();
    });
    // A parser that never answers must not hold the lane forever.
    const timer = setTimeout(() => {
      failure = 'parse_limit_exceeded';
      void worker.terminate();
    }, LARGE_PARSE_TIMEOUT_MS);
    worker.once('exit', () => {
      clearTimeout(timer);
      const answer = reply as ParseLargeReply | null;
      if (answer?.ok) resolve({ parsed: answer.parsed, derived: answer.derived, raw: Buffer.from(answer.buffer, request.offset, request.length) });
      else reject(new Error(answer?.reason ?? failure));
    });
    try {
      worker.postMessage(request, [request.buffer]);
    } catch {
      void worker.terminate(); // exits without an answer: parse_failed
    }
  });
}

/**
 * Opens a large object in place and parses it in a worker. The pipeline's large-message lane asks
 * for one at a time (src/inbound/pipeline.ts), so no queue is needed here.
 */
async function openLarge(sealed: string | Uint8Array, privateJwk: JWK, stall: boolean, dnsServers: string[] | null): Promise<OpenedInbound> {
  let opened: { meta: InboundMeta; raw: Buffer };
  // Loaded on the first large message, as the pool tasks are on the first small one (outside the
  // try: a module that failed to load is the service's fault, not the message's).
  const { openSealed } = await import('../../src/edge/sealed.js');
  try {
    opened = await openSealed(typeof sealed === 'string' ? Buffer.from(sealed, 'latin1') : sealed, privateJwk, { inPlace: true });
  } catch {
    throw new Error('open_failed');
  }
  const { envelope, spam } = opened.meta;
  // Before the parse moves the buffer to its worker (an edge without the connection: checked here).
  const auth = await (await (tasks ??= import('../pool/tasks.js'))).objectAuth(opened.meta, opened.raw, dnsServers);
  if (opened.raw.byteLength >= COLLECT_AFTER_BYTES) collectGarbage(); // the fetch's dead chunks, before the parser adds its own
  const { parsed, derived, raw } = await parseInWorker(opened.raw, stall);
  return { envelope, auth, spam, raw, parsed, derived };
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

export default loopPass(async (ctx) => {
  if (!polling) {
    polling = true;
    void longPoll(ctx);
  }
  const { db } = ctx;
  const { edge } = readTransport(db);
  if (!edge) return 'idle';
  const { privateJwk } = await homeKeyPair(db);
  // The home's own resolvers (`svc serve --dns`), for mail it authenticates itself (src/inbound/message-auth.ts).
  const dnsServers = checkServers(db);
  // Test-only (docs/testing.md): the large-message parser computes forever, as a parse that never ends would.
  const stall = ctx.fault === 'inbound-parse-stall';
  const deps: IngestDeps = {
    db,
    edge: new EdgeClient(edge.url, edge.token),
    open: async (sealed) =>
      withAttachmentText(
        await ((typeof sealed === 'string' ? sealed.length : sealed.byteLength) <= OPEN_IN_LOOP_MAX_CHARS
          ? openInbound({ jwe: sealed, privateJwk, dnsServers })
          : openLarge(sealed, privateJwk, stall, dnsServers)),
        (file) => ctx.runTask(EXTRACT_ATTACHMENT_TEXT, file) as Promise<AttachmentText>,
      ),
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

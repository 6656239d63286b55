/**
 * The inbound pull loop (spec §8: every 2 s while busy, 30 s idle; woken at once by the edge's
 * long-poll): fetch → open and parse in the pool → lists and verdicts → commit → delete at the edge.
 * With several paired edges each is pulled on its own schedule, side by side (docs/edge.md
 * "Several edges"); the same mail through two edges is committed once (src/inbound/dedup.ts).
 *
 *   wake (the long-poll below, or the timer) → retry due transient quarantine items
 *   (src/inbound/quarantine-actions.ts) → pull: list, fetch and open ahead while committing and
 *   deleting behind (src/inbound/pipeline.ts) → schedule the next pass from how it ended.
 *
 * What stays here is what belongs to this worker thread: opening sealed objects (small ones in
 * this thread, large ones parsed in a worker of their own) and the long-poll that wakes the loop.
 */
import { Worker } from 'node:worker_threads';
import { workerFile } from '../../src/core/worker-file.js';
import type { JWK } from 'jose';
import { loopPass, type LoopContext } from './run-loop.js';
import { INBOUND_COMMIT_RETRY_MS as COMMIT_RETRY_MS } from '../../src/supervisor/loop-table.js';
import { readTransport, type EdgeSettings } from '../../src/mail/transport.js';
import { EdgeClient, edgeErrorCode, type EdgeObjects } from '../../src/inbound/edge-client.js';
import { LocalEdgeClient } from '../../src/inbound/local-edge-client.js';
import { recordEdgeFailure, recordEdgeSuccess } from '../../src/mail/edge-health.js';
import { LOOPS } from '../../src/supervisor/loop-table.js';
import { homeKeyPair } from '../../src/inbound/home-key.js';
import type { IngestDeps } from '../../src/inbound/ingest.js';
import { MAX_PER_PASS, pullObjects, type PullOutcome } from '../../src/inbound/pipeline.js';
import { retryDueQuarantine } from '../../src/inbound/quarantine-actions.js';
import type { OpenedInbound } from '../pool/tasks.js';
import type { ParseLargeReply, ParseLargeRequest } from '../pool/parse-large.js';
import type { ParseFailure, ParsedMail } from '../pool/parse.js';
import type { DerivedText } from '../../src/mail/extract.js';
import { COLLECT_AFTER_BYTES, collectGarbage } from '../../src/core/gc.js';
import type { InboundMeta } from '../../src/edge/sealed.js';
import { checkServers } from '../../src/domains/checks.js';
import { withAttachmentText } from '../../src/attachment-text/on-receive.js';
import { EXTRACT_ATTACHMENT_TEXT } from '../../src/attachment-text/limits.js';
import type { AttachmentText } from '../../src/attachment-text/schemas.js';

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
/** Test-only (docs/testing.md): `SVC_TEST_LARGE_PARSE_TIMEOUT_MS` replaces that timeout; unset, it applies. */
const testParseTimeoutMs = Number(process.env.SVC_TEST_LARGE_PARSE_TIMEOUT_MS);
// At least a second: a shorter one would quarantine every large message as parse_limit_exceeded.
const largeParseTimeoutMs = process.env.SVC_TEST_LARGE_PARSE_TIMEOUT_MS && Number.isFinite(testParseTimeoutMs) && testParseTimeoutMs >= 1_000 ? testParseTimeoutMs : LARGE_PARSE_TIMEOUT_MS;
/**
 * The MIME parser (mailparser) and its task module are loaded on the first message, not at start:
 * an idle home never pays for them (issue 19, memory per loop thread).
 */
let tasks: Promise<typeof import('../pool/tasks.js')> | null = null;
const openInbound = async (input: Parameters<typeof import('../pool/tasks.js').openInbound>[0]): Promise<OpenedInbound> =>
  (await (tasks ??= import('../pool/tasks.js'))).openInbound(input);

const PARSE_LARGE_FILE = workerFile('../pool/parse-large.js', import.meta.url);
const LONG_POLL_MS = 25_000;
const RETRY_POLL_MS = 2_000;

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
    }, largeParseTimeoutMs);
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
    // Already stopped (the stop is what ended the long-poll that led here): its abort event has fired.
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** One paired edge as this thread pulls it: its pass in progress and when the next may start. */
interface EdgePuller {
  edge: EdgeSettings;
  running: Promise<void> | null;
  /** Epoch ms: the next pass starts no earlier (backoff after a failure, the idle wait after a quiet pass). */
  nextAt: number;
  /** Whether its long-poll is running (one per edge for the life of the thread, or until it is unpaired). */
  polling: boolean;
  /**
   * The long-poll saw new mail while a pull ran. The pull's own lister takes it, so the loop is
   * not woken for a pass per message (each pass reads the configuration and the due quarantine
   * retries); if the pull ends without having listed it, the next pull starts at once.
   */
  missed: boolean;
}

/** The built-in edge's client over its in-process channel (one for the thread), once asked for. */
let localClient: LocalEdgeClient | null = null;

/**
 * The client to pull `edge` with: the built-in edge of this process over its channel
 * (src/edge/local-handover.ts), any other over its HTTP API.
 */
function clientFor(ctx: LoopContext, edge: EdgeSettings): EdgeObjects {
  if (ctx.localEdge && edge.url === ctx.localEdge.url) return (localClient ??= new LocalEdgeClient(ctx.localEdge.port));
  return new EdgeClient(edge.url, edge.token);
}

/** Every edge by URL. A pass of one never waits for another: a dead or slow edge stalls only itself. */
const pullers = new Map<string, EdgePuller>();
/** The quarantine retry in progress (it may ask every edge), beside the pulls. */
let retrying: Promise<void> | null = null;
/** A pass waits at most this long for a pull to end or a wake, then looks at the configuration again. */
const RESCAN_MS = 5_000;
/**
 * The due quarantine retries are looked for at most this often (the loop's busy interval). A look
 * that finds nothing ends at once, and it ended the pass's wait: without this bound the passes ran
 * back to back, each reading the configuration and the quarantine, about a fifth of a core on an
 * idle home with a paired edge.
 */
const QUARANTINE_LOOK_MS = LOOPS['inbound-pull'].busyMs;
let quarantineLookedAt = Number.NEGATIVE_INFINITY;
/** Resolves when the loop stops (one listener for the life of the thread, not one per pass). */
let stoppedOnce: Promise<void> | null = null;
/** What a pull or retry running between passes threw (a database failure): the next pass throws it, as a pass's own error would stop the service. */
let backgroundFailure: { error: unknown } | null = null;

function throwBackgroundFailure(): void {
  if (backgroundFailure) throw backgroundFailure.error;
}

/** Runs `work` beside the passes; its error is kept for the next pass to throw. */
function beside<T>(work: Promise<T>, done: () => void): Promise<void> {
  return work.then(
    () => done(),
    (error: unknown) => {
      backgroundFailure ??= { error };
      done();
    },
  );
}

/**
 * Runs beside the passes while the edge is paired: wakes the loop as soon as mail lands there.
 * It waits for keys newer than the newest it has announced, so it never spins while a pass
 * catches up; a quiet timeout resets that cursor to the edge's newest key (or none), so keys made
 * after a clock step back on an edge restart still wake the loop. An answer from an edge in
 * backoff ends its backoff: it is back.
 */
async function longPoll(ctx: LoopContext, puller: EdgePuller): Promise<void> {
  let announced: string | null = null;
  const { url } = puller.edge;
  const client = clientFor(ctx, puller.edge);
  while (!ctx.stopped.aborted && pullers.get(url) === puller) {
    try {
      const { available, latest } = await client.wait(announced, LONG_POLL_MS, ctx.stopped);
      if (available && puller.running) puller.missed = true;
      else if (available || puller.nextAt > Date.now()) {
        puller.nextAt = Math.min(puller.nextAt, Date.now());
        ctx.wakeSelf();
      }
      announced = latest;
    } catch {
      await pause(RETRY_POLL_MS, ctx.stopped);
    }
  }
  puller.polling = false;
}

/** One pull pass of one edge, its health written after it; never throws. */
async function pullEdge(ctx: LoopContext, base: Omit<IngestDeps, 'edge'>, puller: EdgePuller): Promise<void> {
  const { db } = ctx;
  const { url } = puller.edge;
  let pulled: PullOutcome;
  puller.missed = false; // what landed before now, this pull lists
  try {
    pulled = await pullObjects({ ...base, edge: clientFor(ctx, puller.edge) }, ctx.stopped);
  } catch (err) {
    pulled = { ended: 'edge_failed', listed: 0, error: edgeErrorCode(err) };
  }
  const now = Date.now();
  // Edge unreachable: it waits out its backoff (or its long-poll's next answer); the others go on.
  // Objects committed but not deleted are fetched again later and skipped as already committed.
  if (pulled.ended === 'edge_failed') {
    puller.nextAt = now + recordEdgeFailure(db, url, pulled.error ?? 'edge_failed', now);
    return;
  }
  recordEdgeSuccess(db, url, now);
  const timing = LOOPS['inbound-pull'];
  if (pulled.ended === 'commit_deferred') puller.nextAt = now + COMMIT_RETRY_MS;
  else if (pulled.listed >= MAX_PER_PASS || puller.missed) puller.nextAt = now; // a backlog may remain, or mail came after the lister looked: continue at once
  else puller.nextAt = now + (pulled.listed > 0 ? timing.busyMs : timing.idleMs);
}

/**
 * A pass: every paired edge whose time has come starts a pull of its own (each independent,
 * with its own backoff, deleting only at its own edge), and the due quarantine retries run
 * beside them. The pass returns once a pull ends, something wakes the loop, or RESCAN_MS passed,
 * so the next pass starts the edges that are due; pulls still running carry on across passes.
 * At stop it waits for every pull, so nothing is cut off mid-handover.
 */
export default loopPass(async (ctx) => {
  throwBackgroundFailure();
  const { db } = ctx;
  const { edges } = readTransport(db);
  for (const [url, puller] of pullers) if (!edges.some((e) => e.url === url) && !puller.running) pullers.delete(url);
  for (const edge of edges) {
    const known = pullers.get(edge.url);
    if (known && known.edge.token === edge.token) continue;
    if (known?.running) continue; // re-paired with a new token: taken once its pass ends
    const puller: EdgePuller = { edge, running: null, nextAt: 0, polling: false, missed: false };
    pullers.set(edge.url, puller);
  }
  for (const puller of pullers.values()) {
    if (puller.polling || !edges.some((e) => e.url === puller.edge.url)) continue;
    puller.polling = true;
    void longPoll(ctx, puller);
  }
  if (edges.length === 0 && ![...pullers.values()].some((p) => p.running)) return 'idle';
  const { privateJwk } = await homeKeyPair(db);
  // The home's own resolvers (`svc serve --dns`), for mail it authenticates itself (src/inbound/message-auth.ts).
  const dnsServers = checkServers(db);
  // Test-only (docs/testing.md): the large-message parser computes forever, as a parse that never ends would.
  const stall = ctx.fault === 'inbound-parse-stall';
  const base: Omit<IngestDeps, 'edge'> = {
    db,
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
  if (edges.length > 0 && retrying === null && Date.now() - quarantineLookedAt >= QUARANTINE_LOOK_MS) {
    quarantineLookedAt = Date.now();
    retrying = beside(retryDueQuarantine({ ...base, edges }), () => (retrying = null));
  }
  const now = Date.now();
  for (const puller of pullers.values()) {
    if (puller.running || puller.nextAt > now || !edges.some((e) => e.url === puller.edge.url)) continue;
    puller.running = beside(pullEdge(ctx, base, puller), () => {
      puller.running = null;
      ctx.wakeSelf();
    });
  }
  const running = () => [...[...pullers.values()].flatMap((p) => (p.running ? [p.running] : [])), ...(retrying ? [retrying] : [])];
  const waiting = [...pullers.values()].filter((p) => !p.running).map((p) => p.nextAt - Date.now());
  const untilLook = edges.length > 0 ? quarantineLookedAt + QUARANTINE_LOOK_MS - Date.now() : RESCAN_MS;
  const wait = Math.max(0, Math.min(RESCAN_MS, untilLook, ...waiting));
  let timer: NodeJS.Timeout | undefined;
  stoppedOnce ??= new Promise<void>((resolve) => ctx.stopped.addEventListener('abort', () => resolve(), { once: true }));
  const stopped = stoppedOnce;
  await Promise.race([ctx.nextWake(), new Promise<void>((resolve) => (timer = setTimeout(resolve, wait))), stopped, ...running()]);
  clearTimeout(timer);
  if (ctx.stopped.aborted) {
    await Promise.all(running());
    throwBackgroundFailure();
    return 'idle';
  }
  throwBackgroundFailure();
  return { delayMs: 0 };
});

/**
 * The outbox loop (spec §8): wakes on enqueue or approval; recovery checks 2 s after work and
 * 30 s when idle or unconfigured. Each due message: recheck the send lists (refused →
 * `failed`), mark it `handing_over` (committed), hand it to the edge relay (the first healthy
 * paired edge, failing over as docs/outbound.md says) or the SMTP smart host, record the outcome
 * with its event. On its first pass it settles messages a crash left
 * `handing_over`: the edge is asked whether it has the ref; SMTP cannot be asked → `send_unknown`.
 */
import os from 'node:os';
import { loopPass, type LoopContext } from './run-loop.js';
import { readTransport, type Transport as TransportConfig } from '../../src/mail/transport.js';
import { refusedRecipients } from '../../src/mail/outbound.js';
import { dueOutbox, interruptedOutbox, moveOutbox, nextDue, outboxAction, outboxTransition, type OutboxAction, type OutboxFacts, type OutboxRow, type OutboxTransition } from '../../src/mail/outbox.js';
import { rawMime } from '../../src/mail/raw-mime.js';
import { OUTBOX_RETRY_DELAYS_MS as RETRY_DELAYS_MS } from '../../src/supervisor/loop-table.js';
import { EdgeRelay, SmtpSmartHost, type Handover, type Transport } from '../../src/outbound/transports.js';

const BATCH = 64;
/** Messages handed over at once; each commits its own `handing_over` mark before its transport call. */
const CONCURRENCY = 8;
/** Test-only (docs/testing.md): every retry delay becomes this many milliseconds. */
const testRetryMs = process.env.SVC_TEST_OUTBOX_RETRY_MS ? Number(process.env.SVC_TEST_OUTBOX_RETRY_MS) : null;
const retryDelay = (attempt: number) => testRetryMs ?? RETRY_DELAYS_MS[attempt - 1];

let recovered = false;

/** The event to publish after a move commits: a settle's; none for a mark, a requeue, or a message that had moved on. */
const seqOf = (moved: ReturnType<typeof moveOutbox>) => (moved.moved ? moved.seq : null);

let current: { fingerprint: string; transport: Transport | null } = { fingerprint: '', transport: null };

/** The smart host when one is set (the owner chose it for outbound), else the edge relay; kept while the configuration holds (SMTP connections are reused). */
function transportFor(db: LoopContext['db'], config: TransportConfig): Transport | null {
  const fingerprint = JSON.stringify(config);
  if (fingerprint === current.fingerprint) return current.transport;
  if (current.transport instanceof SmtpSmartHost) current.transport.close();
  const transport = config.smtp ? new SmtpSmartHost(config.smtp, os.hostname()) : config.edges.length > 0 ? new EdgeRelay(db, config.edges) : null;
  current = { fingerprint, transport };
  return transport;
}

/** Messages a crash left mid-handover. Returns false when the edge could not be asked yet. */
async function recover(ctx: LoopContext, config: TransportConfig): Promise<boolean> {
  let complete = true;
  for (const row of interruptedOutbox(ctx.db)) {
    // The outbox table decides (src/mail/outbox.ts): ask the edge when it may have the ref; SMTP cannot be asked.
    const facts: OutboxFacts = { canAskEdge: row.transport === 'edge' && config.edges.length > 0 };
    let step = outboxTransition('handing_over', 'interrupted', facts);
    // Every edge it may have reached is asked (src/outbound/edge-handovers.ts).
    if ('askEdge' in step.to) step = outboxTransition('handing_over', 'interrupted', { ...facts, edge: await askEdge(new EdgeRelay(ctx.db, config.edges), row.ref) });
    const action = outboxAction(step, { recipients: JSON.parse(row.recipients) as string[], retryDelayMs: 0, error: '' });
    if (action.kind === 'wait') {
      complete = false; // the edge is unreachable: ask again on the next pass, never guess
      continue;
    }
    const seq = seqOf(ctx.db.transaction(() => moveOutbox(ctx.db, row.message_rowid, step, action)).immediate());
    if (seq !== null) ctx.publish({ kind: 'event', seq });
  }
  return complete;
}

/** Whether the edge has the ref; `unreachable` when it could not be asked. */
const askEdge = (edge: EdgeRelay, ref: string): Promise<NonNullable<OutboxFacts['edge']>> =>
  edge.status(ref).then(
    (known) => (known ? 'known' : 'not_known'),
    () => 'unreachable',
  );

/** What to do with a message after its handover attempt: the outbox table's row (asking the edge before giving up) and what it writes. */
async function decide(transport: Transport, row: OutboxRow, recipients: string[], handover: Handover): Promise<{ step: OutboxTransition; action: OutboxAction }> {
  const attempt = row.attempts + 1;
  const facts: OutboxFacts = { canAskEdge: transport instanceof EdgeRelay, retriesLeft: attempt <= RETRY_DELAYS_MS.length };
  let step = outboxTransition('handing_over', handover.kind, facts);
  // A lost answer from the edge is retried like a temporary failure, so ask before giving up.
  if ('askEdge' in step.to && transport instanceof EdgeRelay) step = outboxTransition('handing_over', handover.kind, { ...facts, edge: await askEdge(transport, row.ref) });
  const error = handover.kind === 'retry' || handover.kind === 'unknown' ? handover.error : '';
  return { step, action: outboxAction(step, { recipients: handover.kind === 'accepted' ? handover.recipients : recipients, retryDelayMs: retryDelay(attempt), error }) };
}

/** The outbox table's rows for a due message: refused by the send lists now, or marked `handing_over`. */
const REFUSED_STEP = outboxTransition('queued', 'refused_by_lists');
const DUE_STEP = outboxTransition('queued', 'due');
const REFUSED_BY_LISTS = (() => {
  const action = outboxAction(REFUSED_STEP, { retryDelayMs: 0, error: '' });
  if (action.kind !== 'settle') throw new Error('A refused message always settles.');
  return action;
})();

/**
 * One group of messages: refused ones fail at once; the rest are marked `handing_over` in ONE
 * transaction, handed over concurrently, and their outcomes recorded in ONE transaction — two
 * commits per group instead of two per message, so request handlers rarely wait for the lock.
 * Only messages the mark moved (still `queued`) are handed over.
 */
async function deliverGroup(ctx: LoopContext, transport: Transport, rows: OutboxRow[]): Promise<void> {
  const { db } = ctx;
  const refused: OutboxRow[] = [];
  const candidates: { row: OutboxRow; recipients: string[]; raw: Buffer }[] = [];
  for (const row of rows) {
    const recipients = JSON.parse(row.recipients) as string[];
    if (refusedRecipients(db, row.inbox_id, row.kind === 'reply' ? 'reply' : 'send', recipients).length > 0) refused.push(row);
    else {
      const raw = rawMime(db, row.message_rowid);
      if (raw) candidates.push({ row, recipients, raw }); // no raw: deleted meanwhile, the cascade removed the outbox row too
    }
  }
  const { jobs, seqs } = db
    .transaction(() => ({
      jobs: candidates.filter((job) => moveOutbox(db, job.row.message_rowid, DUE_STEP, { kind: 'handing_over', transport: transport.name }).moved),
      seqs: refused.map((row) => seqOf(moveOutbox(db, row.message_rowid, REFUSED_STEP, REFUSED_BY_LISTS))),
    }))
    .immediate();
  const handovers = await Promise.all(jobs.map((job) => transport.send({ ref: job.row.ref, mailFrom: job.row.mail_from, recipients: job.recipients, raw: job.raw })));
  if (ctx.fault === 'outbox-kill-after-handover' && jobs.length > 0) process.kill(process.pid, 'SIGKILL');
  const decisions = await Promise.all(jobs.map((job, i) => decide(transport, job.row, job.recipients, handovers[i])));
  seqs.push(
    ...db
      .transaction(() =>
        jobs.map((job, i) => {
          const { step, action } = decisions[i];
          return action.kind === 'wait' ? null : seqOf(moveOutbox(db, job.row.message_rowid, step, action));
        }),
      )
      .immediate(),
  );
  for (const seq of seqs) if (seq !== null) ctx.publish({ kind: 'event', seq });
  // The edge reports delivery soon after a handover: look for it now rather than after an idle wait.
  if (transport instanceof EdgeRelay && jobs.length > 0) ctx.publish({ kind: 'wake', loop: 'delivery-events' });
}

export default loopPass(async (ctx) => {
  const config = readTransport(ctx.db);
  const transport = transportFor(ctx.db, config);
  if (!recovered) recovered = await recover(ctx, config);
  if (!transport) return 'idle';
  const due = dueOutbox(ctx.db, new Date().toISOString(), BATCH);
  for (let i = 0; i < due.length && !ctx.stopped.aborted; i += CONCURRENCY) await deliverGroup(ctx, transport, due.slice(i, i + CONCURRENCY));
  // A full batch means more may be due: go on at once rather than after the busy wait (2 s),
  // which left the tail of a burst waiting once the wake-ups of its sends had been spent.
  if (due.length === BATCH) return { delayMs: 0 };
  if (due.length > 0) return 'busy';
  const next = nextDue(ctx.db);
  return next === null ? 'idle' : { delayMs: Math.max(0, Date.parse(next) - Date.now()) };
});

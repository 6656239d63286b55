/**
 * The outbox loop (spec §8): wakes on enqueue or approval; recovery checks 2 s after work and
 * 30 s when idle or unconfigured. Each due message: recheck the send lists (refused →
 * `failed`), mark it `handing_over` (committed), hand it to the edge relay or the SMTP smart
 * host, record the outcome with its event. On its first pass it settles messages a crash left
 * `handing_over`: the edge is asked whether it has the ref; SMTP cannot be asked → `send_unknown`.
 */
import os from 'node:os';
import { runLoop, type LoopContext } from './run-loop.js';
import { readTransport, type Transport as TransportConfig } from '../../src/mail/transport.js';
import { recordSendOutcome, refusedRecipients } from '../../src/mail/outbound.js';
import { dueOutbox, interruptedOutbox, markHandingOver, nextDue, outboxRaw, requeue, type OutboxRow } from '../../src/mail/outbox.js';
import { OUTBOX_RETRY_DELAYS_MS as RETRY_DELAYS_MS } from '../../src/supervisor/loop-table.js';
import { EdgeRelay, SmtpSmartHost, type Handover, type Transport } from '../../src/outbound/transports.js';

const BATCH = 64;
/** Messages handed over at once; each commits its own `handing_over` mark before its transport call. */
const CONCURRENCY = 8;
/** Test-only (docs/testing.md): every retry delay becomes this many milliseconds. */
const testRetryMs = process.env.SVC_TEST_OUTBOX_RETRY_MS ? Number(process.env.SVC_TEST_OUTBOX_RETRY_MS) : null;
const retryDelay = (attempt: number) => testRetryMs ?? RETRY_DELAYS_MS[attempt - 1];

let recovered = false;

let current: { fingerprint: string; transport: Transport | null } = { fingerprint: '', transport: null };

/** The smart host when one is set (the owner chose it for outbound), else the edge relay; kept while the configuration holds (SMTP connections are reused). */
function transportFor(config: TransportConfig): Transport | null {
  const fingerprint = JSON.stringify(config);
  if (fingerprint === current.fingerprint) return current.transport;
  if (current.transport instanceof SmtpSmartHost) current.transport.close();
  const transport = config.smtp ? new SmtpSmartHost(config.smtp, os.hostname()) : config.edge ? new EdgeRelay(config.edge) : null;
  current = { fingerprint, transport };
  return transport;
}

function settle(ctx: LoopContext, rowid: number, outcome: Parameters<typeof recordSendOutcome>[2]): void {
  const seq = ctx.db.transaction(() => recordSendOutcome(ctx.db, rowid, outcome)).immediate();
  if (seq !== null) ctx.publish({ kind: 'event', seq });
}

/** Messages a crash left mid-handover. Returns false when the edge could not be asked yet. */
async function recover(ctx: LoopContext, config: TransportConfig): Promise<boolean> {
  let complete = true;
  for (const row of interruptedOutbox(ctx.db)) {
    if (row.transport === 'edge' && config.edge) {
      let known;
      try {
        known = await new EdgeRelay(config.edge).status(row.ref);
      } catch {
        complete = false; // the edge is unreachable: ask again on the next pass, never guess
        continue;
      }
      if (known) settle(ctx, row.message_rowid, { status: 'sent', recipients: JSON.parse(row.recipients) as string[] });
      else ctx.db.transaction(() => requeue(ctx.db, row.message_rowid, 0, 'interrupted_before_handover')).immediate();
    } else {
      settle(ctx, row.message_rowid, { status: 'send_unknown', reason: 'interrupted_during_handover' });
    }
  }
  return complete;
}

type Action = { kind: 'settle'; outcome: Parameters<typeof recordSendOutcome>[2] } | { kind: 'requeue'; delayMs: number; error: string };

/** What to do with a message after its handover attempt (may ask the edge before giving up). */
async function decide(transport: Transport, row: OutboxRow, recipients: string[], handover: Handover): Promise<Action> {
  const attempt = row.attempts + 1;
  switch (handover.kind) {
    case 'accepted':
      return { kind: 'settle', outcome: { status: 'sent', recipients: handover.recipients } };
    case 'rejected':
      return { kind: 'settle', outcome: { status: 'rejected', reason: 'provider_rejected' } };
    case 'unknown':
      // The edge is idempotent on the ref: asking again is safe. SMTP cannot be asked.
      if (transport instanceof EdgeRelay) return { kind: 'requeue', delayMs: retryDelay(attempt), error: handover.error };
      return { kind: 'settle', outcome: { status: 'send_unknown', reason: 'answer_lost_after_handover' } };
    case 'retry':
      if (attempt <= RETRY_DELAYS_MS.length) return { kind: 'requeue', delayMs: retryDelay(attempt), error: handover.error };
      if (transport instanceof EdgeRelay) {
        // A lost answer from the edge is retried like this, so ask before giving up.
        const known = await transport.status(row.ref).catch(() => undefined);
        if (known) return { kind: 'settle', outcome: { status: 'sent', recipients } };
        if (known === undefined) return { kind: 'settle', outcome: { status: 'send_unknown', reason: 'edge_unreachable' } };
      }
      return { kind: 'settle', outcome: { status: 'failed', reason: 'transport_failed' } };
  }
}

/**
 * One group of messages: refused ones fail at once; the rest are marked `handing_over` in ONE
 * transaction, handed over concurrently, and their outcomes recorded in ONE transaction — two
 * commits per group instead of two per message, so request handlers rarely wait for the lock.
 */
async function deliverGroup(ctx: LoopContext, transport: Transport, rows: OutboxRow[]): Promise<void> {
  const { db } = ctx;
  const refused: OutboxRow[] = [];
  const jobs: { row: OutboxRow; recipients: string[]; raw: Buffer }[] = [];
  for (const row of rows) {
    const recipients = JSON.parse(row.recipients) as string[];
    if (refusedRecipients(db, row.inbox_id, row.kind === 'reply' ? 'reply' : 'send', recipients).length > 0) refused.push(row);
    else {
      const raw = outboxRaw(db, row.message_rowid);
      if (raw) jobs.push({ row, recipients, raw }); // no raw: deleted meanwhile, the cascade removed the outbox row too
    }
  }
  const seqs = db
    .transaction(() => {
      for (const job of jobs) markHandingOver(db, job.row.message_rowid, transport.name);
      return refused.map((row) => recordSendOutcome(db, row.message_rowid, { status: 'failed', reason: 'recipient_refused_by_lists' }));
    })
    .immediate();
  const handovers = await Promise.all(jobs.map((job) => transport.send({ ref: job.row.ref, mailFrom: job.row.mail_from, recipients: job.recipients, raw: job.raw })));
  if (ctx.fault === 'outbox-kill-after-handover' && jobs.length > 0) process.kill(process.pid, 'SIGKILL');
  const actions = await Promise.all(jobs.map((job, i) => decide(transport, job.row, job.recipients, handovers[i])));
  seqs.push(
    ...db
      .transaction(() =>
        jobs.map((job, i) => {
          const action = actions[i];
          if (action.kind === 'settle') return recordSendOutcome(db, job.row.message_rowid, action.outcome);
          requeue(db, job.row.message_rowid, action.delayMs, action.error);
          return null;
        }),
      )
      .immediate(),
  );
  for (const seq of seqs) if (seq !== null) ctx.publish({ kind: 'event', seq });
  // The edge reports delivery soon after a handover: look for it now rather than after an idle wait.
  if (transport instanceof EdgeRelay && jobs.length > 0) ctx.publish({ kind: 'wake', loop: 'delivery-events' });
}

runLoop(async (ctx) => {
  const config = readTransport(ctx.db);
  const transport = transportFor(config);
  if (!recovered) recovered = await recover(ctx, config);
  if (!transport) return 'idle';
  const due = dueOutbox(ctx.db, new Date().toISOString(), BATCH);
  for (let i = 0; i < due.length && !ctx.stopped.aborted; i += CONCURRENCY) await deliverGroup(ctx, transport, due.slice(i, i + CONCURRENCY));
  if (due.length > 0) return 'busy';
  const next = nextDue(ctx.db);
  return next === null ? 'idle' : { delayMs: Math.max(0, Date.parse(next) - Date.now()) };
});

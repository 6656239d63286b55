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
import { dueOutbox, interruptedOutbox, markHandingOver, nextDue, outboxRaw, requeue, RETRY_DELAYS_MS, type OutboxRow } from '../../src/mail/outbox.js';
import { EdgeRelay, SmtpSmartHost, type Handover, type Transport } from '../../src/outbound/transports.js';

const BATCH = 20;
/** Test-only (docs/testing.md): every retry delay becomes this many milliseconds. */
const testRetryMs = process.env.SVC_TEST_OUTBOX_RETRY_MS ? Number(process.env.SVC_TEST_OUTBOX_RETRY_MS) : null;
const retryDelay = (attempt: number) => testRetryMs ?? RETRY_DELAYS_MS[attempt - 1];

let recovered = false;

/** The smart host when one is set (the owner chose it for outbound), else the edge relay. */
function transportFor(config: TransportConfig): Transport | null {
  if (config.smtp) return new SmtpSmartHost(config.smtp, os.hostname());
  if (config.edge) return new EdgeRelay(config.edge);
  return null;
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

async function deliver(ctx: LoopContext, transport: Transport, row: OutboxRow): Promise<void> {
  const { db } = ctx;
  const recipients = JSON.parse(row.recipients) as string[];
  if (refusedRecipients(db, row.inbox_id, row.kind === 'reply' ? 'reply' : 'send', recipients).length > 0) {
    settle(ctx, row.message_rowid, { status: 'failed', reason: 'recipient_refused_by_lists' });
    return;
  }
  const raw = outboxRaw(db, row.message_rowid);
  if (!raw) return; // deleted meanwhile: the cascade removed the outbox row as well
  db.transaction(() => markHandingOver(db, row.message_rowid, transport.name)).immediate();
  const handover: Handover = await transport.send({ ref: row.ref, mailFrom: row.mail_from, recipients, raw });
  if (ctx.fault === 'outbox-kill-after-handover') process.kill(process.pid, 'SIGKILL');
  const attempt = row.attempts + 1;
  switch (handover.kind) {
    case 'accepted':
      settle(ctx, row.message_rowid, { status: 'sent', recipients: handover.recipients });
      return;
    case 'rejected':
      settle(ctx, row.message_rowid, { status: 'rejected', reason: 'provider_rejected' });
      return;
    case 'unknown':
      if (transport instanceof EdgeRelay) {
        db.transaction(() => requeue(db, row.message_rowid, retryDelay(attempt), handover.error)).immediate();
        return;
      }
      settle(ctx, row.message_rowid, { status: 'send_unknown', reason: 'answer_lost_after_handover' });
      return;
    case 'retry':
      if (attempt > RETRY_DELAYS_MS.length) {
        // With the edge a lost answer is retried like this, so ask before giving up.
        if (transport instanceof EdgeRelay) {
          const known = await transport.status(row.ref).catch(() => undefined);
          if (known) return settle(ctx, row.message_rowid, { status: 'sent', recipients });
          if (known === undefined) return settle(ctx, row.message_rowid, { status: 'send_unknown', reason: 'edge_unreachable' });
        }
        settle(ctx, row.message_rowid, { status: 'failed', reason: 'transport_failed' });
        return;
      }
      db.transaction(() => requeue(db, row.message_rowid, retryDelay(attempt), handover.error)).immediate();
  }
}

runLoop(async (ctx) => {
  const config = readTransport(ctx.db);
  const transport = transportFor(config);
  if (!recovered) recovered = await recover(ctx, config);
  if (!transport) return 'idle';
  const due = dueOutbox(ctx.db, new Date().toISOString(), BATCH);
  for (const row of due) {
    if (ctx.stopped.aborted) break;
    await deliver(ctx, transport, row);
  }
  if (due.length > 0) return 'busy';
  const next = nextDue(ctx.db);
  return next === null ? 'idle' : { delayMs: Math.max(0, Date.parse(next) - Date.now()) };
});

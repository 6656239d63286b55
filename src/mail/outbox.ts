/**
 * The outbox's state (ARCHITECTURE §2, §6): `queued` → `handing_over` (committed BEFORE the
 * transport is called) → `done`. A row still `handing_over` when the outbox starts was cut off
 * mid-send: with the edge, recovery asks the edge; with SMTP it cannot know, so the message goes
 * to `send_unknown` for the owner. Nothing is ever handed over twice without asking first.
 * OUTBOX_TRANSITIONS is that machine as one table (docs/outbound.md "Outbox states"): the outbox
 * loop, its recovery and the owner's resolve look up their row there; outboxAction turns a row
 * into what to write (both pure), and moveOutbox writes it: the only write of `outbox.state`,
 * guarded by the row's from-state, so a message that moved on (or was deleted) is never moved
 * from a state it is no longer in.
 */
import type { Db } from '../db/open.js';
import { recordSendOutcome, type SendOutcome } from './outbound.js';
import { prepared } from '../db/statements.js';

export interface OutboxRow {
  message_rowid: number;
  inbox_id: string;
  ref: string;
  kind: 'send' | 'reply' | 'forward';
  mail_from: string;
  recipients: string;
  state: 'queued' | 'handing_over' | 'done';
  transport: 'edge' | 'smtp' | null;
  attempts: number;
  next_attempt_at: string;
}

/** Retry delays after attempts 1, 2, …; the send fails after the last. The schedule lives with the loop timings. */
export { OUTBOX_RETRY_DELAYS_MS as RETRY_DELAYS_MS } from '../supervisor/loop-table.js';

/**
 * What happened to a message: `refused_by_lists` (the send lists, rechecked when due), a
 * transport's answer to the handover (`accepted`, `rejected`, `retry`, `unknown`), `interrupted`
 * (found `handing_over` at startup), or the owner's resolve of a `send_unknown` message.
 */
export type OutboxEvent = 'refused_by_lists' | 'due' | 'accepted' | 'rejected' | 'retry' | 'unknown' | 'interrupted' | 'owner_confirmed_sent' | 'owner_confirmed_not_sent';

/** What the table's guards read. */
export interface OutboxFacts {
  /** The edge can be asked whether it has the ref (the edge relay took, or may have taken, it). */
  canAskEdge?: boolean;
  /** Attempts remain in RETRY_DELAYS_MS after this one. */
  retriesLeft?: boolean;
  /** The edge's answer when asked: it has the ref, it has not, or it could not be reached; absent: not asked. */
  edge?: 'known' | 'not_known' | 'unreachable';
}

export type OutboxFrom = 'queued' | 'handing_over' | 'send_unknown';

/** Where a message goes: settled (the outbox row `done`, the message's `send_status` and reason), back to the queue, or not yet decided. */
export type OutboxTo =
  | { settle: SendOutcome['status']; reason: string | null }
  | { requeue: 'after_retry_delay' | 'at_once'; error: string | null }
  | { handingOver: true }
  | { askEdge: true }
  | { unchanged: true };

export interface OutboxTransition {
  from: OutboxFrom;
  event: OutboxEvent;
  /** The condition, as docs/outbound.md words it. */
  when: string;
  guard: (f: OutboxFacts) => boolean;
  to: OutboxTo;
}

const always = () => true;

/** The outbox transitions, first matching row wins. docs/outbound.md has the same rows; test/unit/outbox-states.test.ts checks each. */
export const OUTBOX_TRANSITIONS: readonly OutboxTransition[] = [
  { from: 'queued', event: 'refused_by_lists', when: 'a recipient is now on a block list', guard: always, to: { settle: 'failed', reason: 'recipient_refused_by_lists' } },
  { from: 'queued', event: 'due', when: 'due, a transport configured (committed before the transport is called)', guard: always, to: { handingOver: true } },
  { from: 'handing_over', event: 'accepted', when: 'the transport took it', guard: always, to: { settle: 'sent', reason: null } },
  { from: 'handing_over', event: 'rejected', when: 'the provider refused it for good', guard: always, to: { settle: 'rejected', reason: 'provider_rejected' } },
  { from: 'handing_over', event: 'unknown', when: 'the answer was lost; the edge (idempotent on the ref) is simply asked again', guard: (f) => f.canAskEdge === true, to: { requeue: 'after_retry_delay', error: null } },
  { from: 'handing_over', event: 'unknown', when: 'the answer was lost; SMTP cannot be asked', guard: always, to: { settle: 'send_unknown', reason: 'answer_lost_after_handover' } },
  { from: 'handing_over', event: 'retry', when: 'a temporary failure, attempts left', guard: (f) => f.retriesLeft === true, to: { requeue: 'after_retry_delay', error: null } },
  { from: 'handing_over', event: 'retry', when: 'attempts used up, the edge not asked yet', guard: (f) => f.canAskEdge === true && f.edge === undefined, to: { askEdge: true } },
  { from: 'handing_over', event: 'retry', when: 'attempts used up, the edge has it (its answer was lost)', guard: (f) => f.canAskEdge === true && f.edge === 'known', to: { settle: 'sent', reason: null } },
  { from: 'handing_over', event: 'retry', when: 'attempts used up, the edge cannot be reached', guard: (f) => f.canAskEdge === true && f.edge === 'unreachable', to: { settle: 'send_unknown', reason: 'edge_unreachable' } },
  { from: 'handing_over', event: 'retry', when: 'attempts used up (SMTP, or the edge has not got it)', guard: always, to: { settle: 'failed', reason: 'transport_failed' } },
  { from: 'handing_over', event: 'interrupted', when: 'found at startup, handed to the edge, the edge not asked yet', guard: (f) => f.canAskEdge === true && f.edge === undefined, to: { askEdge: true } },
  { from: 'handing_over', event: 'interrupted', when: 'found at startup, the edge has it', guard: (f) => f.canAskEdge === true && f.edge === 'known', to: { settle: 'sent', reason: null } },
  { from: 'handing_over', event: 'interrupted', when: 'found at startup, the edge has not got it', guard: (f) => f.canAskEdge === true && f.edge === 'not_known', to: { requeue: 'at_once', error: 'interrupted_before_handover' } },
  { from: 'handing_over', event: 'interrupted', when: 'found at startup, the edge cannot be reached: ask again on the next pass, never guess', guard: (f) => f.canAskEdge === true, to: { unchanged: true } },
  { from: 'handing_over', event: 'interrupted', when: 'found at startup, handed to SMTP (or the edge is no longer configured)', guard: always, to: { settle: 'send_unknown', reason: 'interrupted_during_handover' } },
  { from: 'send_unknown', event: 'owner_confirmed_sent', when: 'the owner resolves it as sent', guard: always, to: { settle: 'sent', reason: 'owner_confirmed_sent' } },
  { from: 'send_unknown', event: 'owner_confirmed_not_sent', when: 'the owner resolves it as not sent', guard: always, to: { settle: 'failed', reason: 'owner_confirmed_not_sent' } },
];

/** The row for `event` from `from`. No row is a bug in the table. */
export function outboxTransition(from: OutboxFrom, event: OutboxEvent, facts: OutboxFacts = {}): OutboxTransition {
  const row = OUTBOX_TRANSITIONS.find((r) => r.from === from && r.event === event && r.guard(facts));
  if (!row) throw new Error(`No outbox transition for ${event} from ${from}.`);
  return row;
}

export type OutboxAction = { kind: 'settle'; outcome: SendOutcome } | { kind: 'requeue'; delayMs: number; error: string } | { kind: 'wait' };

/**
 * What to write for a row that settles or requeues: the outcome for recordSendOutcome (with the
 * recipients a `sent` reports), or the requeue with its delay and the transport's error.
 */
export function outboxAction(row: OutboxTransition, detail: { recipients?: string[]; retryDelayMs: number; error: string }): OutboxAction {
  const to = row.to;
  if ('settle' in to) {
    // Without recipients given, recordSendOutcome reports the outbox row's.
    if (to.settle === 'sent') return { kind: 'settle', outcome: { status: 'sent', ...(detail.recipients ? { recipients: detail.recipients } : {}), ...(to.reason ? { reason: to.reason } : {}) } };
    if (to.settle === 'rejected') return { kind: 'settle', outcome: { status: 'rejected', reason: 'provider_rejected' } };
    return { kind: 'settle', outcome: { status: to.settle, reason: to.reason! } };
  }
  if ('requeue' in to) return { kind: 'requeue', delayMs: to.requeue === 'at_once' ? 0 : detail.retryDelayMs, error: to.error ?? detail.error };
  if ('unchanged' in to) return { kind: 'wait' };
  throw new Error(`Outbox row "${row.when}" is not an outcome.`);
}

export function dueOutbox(db: Db, now: string, limit: number): OutboxRow[] {
  return prepared(db, "SELECT * FROM outbox WHERE state = 'queued' AND next_attempt_at <= ? ORDER BY next_attempt_at, message_rowid LIMIT ?").all(now, limit) as OutboxRow[];
}

export function nextDue(db: Db): string | null {
  const row = prepared(db, "SELECT min(next_attempt_at) AS t FROM outbox WHERE state = 'queued'").get() as { t: string | null };
  return row.t;
}

export function interruptedOutbox(db: Db): OutboxRow[] {
  return prepared(db, "SELECT * FROM outbox WHERE state = 'handing_over' ORDER BY message_rowid").all() as OutboxRow[];
}

/** Where each from-state of the table is in storage: the owner resolves a `send_unknown` message whose outbox row is already `done`. */
const FROM_SQL: Readonly<Record<OutboxFrom, string>> = {
  queued: "state = 'queued'",
  handing_over: "state = 'handing_over'",
  send_unknown: "state = 'done' AND message_rowid IN (SELECT id FROM messages WHERE send_status = 'send_unknown')",
};

/** What moveOutbox writes: the mark before a handover, or a row's settle or requeue (outboxAction). */
export type OutboxWrite = { kind: 'handing_over'; transport: 'edge' | 'smtp' } | Exclude<OutboxAction, { kind: 'wait' }>;

/** `moved: false`: the message was no longer in the step's from-state (another writer moved it, or it was deleted); nothing was written. */
export type OutboxMoved = { moved: false } | { moved: true; seq: number | null };

const writeFits = (to: OutboxTo, write: OutboxWrite) =>
  write.kind === 'handing_over' ? 'handingOver' in to : write.kind === 'settle' ? 'settle' in to : 'requeue' in to;

/**
 * The one write of an outbox row's state: moves message `rowid` along the table row `step`, as
 * one conditional UPDATE on the step's from-state, so a message that moved on meanwhile is left
 * as it is. A settle then records the message's outcome with its event (recordSendOutcome) and
 * returns the event's seq. Runs inside the caller's transaction. A write the row does not lead
 * to is a bug in the caller and throws.
 */
export function moveOutbox(db: Db, rowid: number, step: OutboxTransition, write: OutboxWrite): OutboxMoved {
  if (!writeFits(step.to, write)) throw new Error(`Outbox row "${step.when}" does not lead to ${write.kind}.`);
  const now = Date.now();
  const at = new Date(now).toISOString();
  const from = FROM_SQL[step.from];
  if (write.kind === 'handing_over') {
    // Committed before the transport call: from here on a crash means "maybe handed over".
    const marked = prepared(db, `UPDATE outbox SET state = 'handing_over', transport = ?, attempts = attempts + 1, updated_at = ? WHERE message_rowid = ? AND ${from}`).run(write.transport, at, rowid);
    return marked.changes === 1 ? { moved: true, seq: null } : { moved: false };
  }
  if (write.kind === 'requeue') {
    // Nothing was handed over: back to the queue after the delay.
    const requeued = prepared(db, `UPDATE outbox SET state = 'queued', next_attempt_at = ?, last_error = ?, updated_at = ? WHERE message_rowid = ? AND ${from}`).run(
      new Date(now + write.delayMs).toISOString(),
      write.error,
      at,
      rowid,
    );
    return requeued.changes === 1 ? { moved: true, seq: null } : { moved: false };
  }
  const done = prepared(db, `UPDATE outbox SET state = 'done', updated_at = ? WHERE message_rowid = ? AND ${from}`).run(at, rowid);
  if (done.changes !== 1) return { moved: false };
  return { moved: true, seq: recordSendOutcome(db, rowid, write.outcome) };
}

/**
 * Owner resolve (spec §3.2): only for `send_unknown`. `sent` → `message.sent` with reason
 * `owner_confirmed_sent`; `failed` → `message.failed` with `owner_confirmed_not_sent`. No provider
 * call. Runs inside the caller's transaction (src/requests/send.ts), so the read of the state and
 * the move under it hold the write lock together.
 */
export function resolveSendUnknown(
  db: Db,
  inboxId: string,
  messageId: string,
  decision: 'sent' | 'failed',
): 'not_found' | 'not_send_unknown' | { seq: number; messageId: string; threadId: string } {
  const row = prepared(db, 'SELECT id, thread_id, direction, send_status FROM messages WHERE inbox_id = ? AND message_id = ?').get(inboxId, messageId) as
    | { id: number; thread_id: string; direction: string; send_status: string | null }
    | undefined;
  if (!row) return 'not_found';
  if (row.direction !== 'outbound' || row.send_status !== 'send_unknown') return 'not_send_unknown';
  const step = outboxTransition('send_unknown', decision === 'sent' ? 'owner_confirmed_sent' : 'owner_confirmed_not_sent');
  const action = outboxAction(step, { retryDelayMs: 0, error: '' });
  if (action.kind !== 'settle') throw new Error('An owner resolve always settles.');
  const moved = moveOutbox(db, row.id, step, action);
  if (!moved.moved) return 'not_send_unknown';
  return { seq: moved.seq!, messageId, threadId: row.thread_id };
}

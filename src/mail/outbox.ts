/**
 * The outbox's state (ARCHITECTURE §2, §6): `queued` → `handing_over` (committed BEFORE the
 * transport is called) → `done`. A row still `handing_over` when the outbox starts was cut off
 * mid-send: with the edge, recovery asks the edge; with SMTP it cannot know, so the message goes
 * to `send_unknown` for the owner. Nothing is ever handed over twice without asking first.
 */
import type { Db } from '../db/open.js';
import { recordSendOutcome } from './outbound.js';
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

export function outboxRaw(db: Db, rowid: number): Buffer | null {
  const row = prepared(db, 'SELECT mime FROM raw_messages WHERE message_rowid = ?').get(rowid) as { mime: Buffer } | undefined;
  return row?.mime ?? null;
}

/** Committed before the transport call: from here on a crash means "maybe handed over". */
export function markHandingOver(db: Db, rowid: number, transport: 'edge' | 'smtp'): void {
  prepared(db, "UPDATE outbox SET state = 'handing_over', transport = ?, attempts = attempts + 1, updated_at = ? WHERE message_rowid = ? AND state = 'queued'").run(
    transport,
    new Date().toISOString(),
    rowid,
  );
}

/** Nothing was handed over: back to the queue after a delay. */
export function requeue(db: Db, rowid: number, delayMs: number, error: string): void {
  const now = Date.now();
  prepared(db, "UPDATE outbox SET state = 'queued', next_attempt_at = ?, last_error = ?, updated_at = ? WHERE message_rowid = ?").run(
    new Date(now + delayMs).toISOString(),
    error,
    new Date(now).toISOString(),
    rowid,
  );
}

/**
 * Owner resolve (spec §3.2): only for `send_unknown`. `sent` → `message.sent` with reason
 * `owner_confirmed_sent`; `failed` → `message.failed` with `owner_confirmed_not_sent`. No provider call.
 */
export function resolveSendUnknown(
  db: Db,
  inboxId: string,
  messageId: string,
  decision: 'sent' | 'failed',
): 'not_found' | 'not_send_unknown' | { seq: number; messageId: string; threadId: string } {
  return db.transaction(() => {
    const row = prepared(db, 'SELECT id, thread_id, direction, send_status FROM messages WHERE inbox_id = ? AND message_id = ?').get(inboxId, messageId) as
      | { id: number; thread_id: string; direction: string; send_status: string | null }
      | undefined;
    if (!row) return 'not_found' as const;
    if (row.direction !== 'outbound' || row.send_status !== 'send_unknown') return 'not_send_unknown' as const;
    const seq =
      decision === 'sent'
        ? recordSendOutcome(db, row.id, { status: 'sent', reason: 'owner_confirmed_sent' })
        : recordSendOutcome(db, row.id, { status: 'failed', reason: 'owner_confirmed_not_sent' });
    return { seq: seq!, messageId, threadId: row.thread_id };
  }).immediate();
}

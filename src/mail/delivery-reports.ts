/**
 * Delivery reports from the edge (`GET /events`, docs/edge.md) applied to sent messages: labels,
 * `send_status`, and the events of spec §6.2 — `message.delivered`, `message.bounced` (type and
 * sub_type `unknown`, rule 4), `message.complained`, and `message.failed` with reason
 * `delivery_failed` when the edge gave up without any answer from the recipient's server.
 * `deferred` only labels (rule 6: deferred delivery produces no event). The cursor advances in
 * the same transaction as the changes, so each report is applied exactly once.
 */
import type { Db } from '../db/open.js';
import { appendEvent } from '../events/log.js';
import { prepared } from '../db/statements.js';

export interface DeliveryReport {
  id: string;
  ref: string;
  type: 'delivered' | 'deferred' | 'bounced' | 'complained';
  recipient: string;
  at: string;
  code?: number;
  message?: string;
}

const CURSOR_KEY = 'delivery_events_cursor';

export function reportCursor(db: Db): string | null {
  const row = prepared(db, 'SELECT value FROM settings WHERE key = ?').get(CURSOR_KEY) as { value: string } | undefined;
  return row?.value ?? null;
}

/** Whether a message handed to the edge since `since` (ISO time) still has no final report: it is sent or deferred, not yet delivered, bounced or failed. */
export function awaitingDeliveryReports(db: Db, since: string): boolean {
  return (
    prepared(
      db,
      "SELECT 1 FROM outbox o JOIN messages m ON m.id = o.message_rowid WHERE o.transport = 'edge' AND o.state = 'done' AND o.updated_at > ? AND m.send_status IN ('sent', 'deferred') LIMIT 1",
    ).get(since) !== undefined
  );
}

function label(db: Db, rowid: number, add: string, remove: string[] = []): void {
  prepared(db, 'INSERT OR IGNORE INTO message_labels (message_rowid, label) VALUES (?, ?)').run(rowid, add);
  const del = prepared(db, 'DELETE FROM message_labels WHERE message_rowid = ? AND label = ?');
  for (const l of remove) del.run(rowid, l);
}

function wasSentTo(recipientsJson: string, address: string): boolean {
  let recipients: unknown;
  try {
    recipients = JSON.parse(recipientsJson);
  } catch {
    return false;
  }
  const wanted = address.toLowerCase();
  return Array.isArray(recipients) && recipients.some((r) => typeof r === 'string' && r.toLowerCase() === wanted);
}

/** Applies a page of reports and stores the next cursor; returns the seqs of the events appended. */
export function applyReports(db: Db, reports: DeliveryReport[], next: string): number[] {
  return db
    .transaction(() => {
      const seqs: number[] = [];
      for (const r of reports) {
        const row = prepared(
          db,
          "SELECT m.id, m.inbox_id, m.thread_id, m.message_id, o.recipients FROM outbox o JOIN messages m ON m.id = o.message_rowid WHERE o.ref = ? AND m.direction = 'outbound'",
        ).get(r.ref) as { id: number; inbox_id: string; thread_id: string; message_id: string; recipients: string } | undefined;
        if (!row) continue; // the message was deleted since
        // The edge checks this too (issue 16 finding 7); a report about someone the message was not sent to is never applied.
        if (!wasSentTo(row.recipients, r.recipient)) continue;
        const ids = { inbox_id: row.inbox_id, thread_id: row.thread_id, message_id: row.message_id, timestamp: r.at };
        const status = (s: string) => prepared(db, 'UPDATE messages SET send_status = ?, send_reason = ?, updated_at = ? WHERE id = ?').run(s, null, new Date().toISOString(), row.id);
        const event = (eventType: string, payloadKey: string, payload: Record<string, unknown>) =>
          seqs.push(appendEvent(db, { eventType, inboxId: row.inbox_id, payloadKey, payload: { ...ids, ...payload }, messageRowid: row.id }).seq);
        switch (r.type) {
          case 'deferred':
            label(db, row.id, 'deferred');
            status('deferred');
            break;
          case 'delivered':
            label(db, row.id, 'delivered', ['deferred']);
            status('delivered');
            event('message.delivered', 'delivery', { recipients: [r.recipient] });
            break;
          case 'bounced':
            if (r.code === undefined) {
              // No server ever answered: the provider failed to deliver, nothing bounced.
              label(db, row.id, 'failed', ['deferred']);
              prepared(db, "UPDATE messages SET send_status = 'failed', send_reason = 'delivery_failed', updated_at = ? WHERE id = ?").run(new Date().toISOString(), row.id);
              event('message.failed', 'failure', { reason: 'delivery_failed' });
            } else {
              label(db, row.id, 'bounced', ['deferred']);
              status('bounced');
              event('message.bounced', 'bounce', { type: 'unknown', sub_type: 'unknown', recipients: [{ address: r.recipient, status: String(r.code) }] });
            }
            break;
          case 'complained':
            label(db, row.id, 'complained');
            status('complained');
            event('message.complained', 'complaint', { type: 'unknown', sub_type: 'unknown', recipients: [r.recipient] });
            break;
        }
      }
      prepared(db, 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(CURSOR_KEY, next);
      return seqs;
    })
    .immediate();
}

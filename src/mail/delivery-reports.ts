/**
 * Delivery reports from the edge (`GET /events`, docs/edge.md) applied to sent messages: labels,
 * `send_status`, and the events of spec §6.2 — `message.delivered`, `message.bounced` (type and
 * sub_type `unknown`, rule 4), `message.complained`, and `message.failed` with reason
 * `delivery_failed` when the edge gave up without any answer from the recipient's server.
 * `deferred` only labels (rule 6: deferred delivery produces no event). reportChange decides
 * what a report changes (pure); applyReports writes it, and advances the cursor in the same
 * transaction (the caller's) as the changes, so each report is applied exactly once.
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

/** Each edge's cursor is kept under `delivery_events_cursor:<edge URL>` (migration 20 moved the single one there). */
const CURSOR_KEY = 'delivery_events_cursor';
const cursorKey = (url: string) => `${CURSOR_KEY}:${url}`;

export function reportCursor(db: Db, url: string): string | null {
  const row = prepared(db, 'SELECT value FROM settings WHERE key = ?').get(cursorKey(url)) as { value: string } | undefined;
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

/** What a report changes on the message it is about: `send_status` (and reason), one label added and others removed, and the event, if any. */
export interface ReportChange {
  status: 'deferred' | 'delivered' | 'bounced' | 'complained' | 'failed';
  reason: string | null;
  addLabel: string;
  removeLabels: readonly string[];
  /** The event of spec §6.2 without the message's ids (the repository adds them); null: none (rule 6). */
  event: { eventType: string; payloadKey: string; payload: Record<string, unknown> } | null;
}

/**
 * The decision (docs/outbound.md "Delivery reports"): what `report` changes on a message sent to
 * `sentTo` (the outbox's recipients), or null when it is about someone the message was not sent
 * to (the edge checks this too, issue 16 finding 7; such a report is never applied). Pure.
 */
export function reportChange(report: Pick<DeliveryReport, 'type' | 'recipient' | 'code'>, sentTo: readonly string[]): ReportChange | null {
  const wanted = report.recipient.toLowerCase();
  if (!sentTo.some((r) => r.toLowerCase() === wanted)) return null;
  switch (report.type) {
    case 'deferred':
      return { status: 'deferred', reason: null, addLabel: 'deferred', removeLabels: [], event: null };
    case 'delivered':
      return { status: 'delivered', reason: null, addLabel: 'delivered', removeLabels: ['deferred'], event: { eventType: 'message.delivered', payloadKey: 'delivery', payload: { recipients: [report.recipient] } } };
    case 'bounced':
      // No server ever answered: the provider failed to deliver, nothing bounced.
      if (report.code === undefined) {
        return { status: 'failed', reason: 'delivery_failed', addLabel: 'failed', removeLabels: ['deferred'], event: { eventType: 'message.failed', payloadKey: 'failure', payload: { reason: 'delivery_failed' } } };
      }
      return {
        status: 'bounced',
        reason: null,
        addLabel: 'bounced',
        removeLabels: ['deferred'],
        event: { eventType: 'message.bounced', payloadKey: 'bounce', payload: { type: 'unknown', sub_type: 'unknown', recipients: [{ address: report.recipient, status: String(report.code) }] } },
      };
    case 'complained':
      return { status: 'complained', reason: null, addLabel: 'complained', removeLabels: [], event: { eventType: 'message.complained', payloadKey: 'complaint', payload: { type: 'unknown', sub_type: 'unknown', recipients: [report.recipient] } } };
    default:
      return null; // a report type this home does not know: nothing to apply
  }
}

/** The outbox's recipients (a JSON array of addresses); none when unreadable, so no report applies. */
function recipientsOf(json: string): string[] {
  let recipients: unknown;
  try {
    recipients = JSON.parse(json);
  } catch {
    return [];
  }
  return Array.isArray(recipients) ? recipients.filter((r): r is string => typeof r === 'string') : [];
}

/**
 * Applies a page of reports and stores the next cursor, inside the caller's transaction (the
 * cursor moves with the changes, so each report is applied exactly once); returns the seqs of
 * the events appended. A report about a message deleted since is skipped.
 */
export function applyReports(db: Db, reports: DeliveryReport[], next: string, edgeUrl: string): number[] {
  const seqs: number[] = [];
  for (const r of reports) {
    const row = prepared(
      db,
      "SELECT m.id, m.inbox_id, m.thread_id, m.message_id, o.recipients FROM outbox o JOIN messages m ON m.id = o.message_rowid WHERE o.ref = ? AND m.direction = 'outbound'",
    ).get(r.ref) as { id: number; inbox_id: string; thread_id: string; message_id: string; recipients: string } | undefined;
    if (!row) continue;
    const change = reportChange(r, recipientsOf(row.recipients));
    if (!change) continue;
    prepared(db, 'INSERT OR IGNORE INTO message_labels (message_rowid, label) VALUES (?, ?)').run(row.id, change.addLabel);
    const unlabel = prepared(db, 'DELETE FROM message_labels WHERE message_rowid = ? AND label = ?');
    for (const l of change.removeLabels) unlabel.run(row.id, l);
    prepared(db, 'UPDATE messages SET send_status = ?, send_reason = ?, updated_at = ? WHERE id = ?').run(change.status, change.reason, new Date().toISOString(), row.id);
    if (change.event) {
      const ids = { inbox_id: row.inbox_id, thread_id: row.thread_id, message_id: row.message_id, timestamp: r.at };
      seqs.push(appendEvent(db, { eventType: change.event.eventType, inboxId: row.inbox_id, payloadKey: change.event.payloadKey, payload: { ...ids, ...change.event.payload }, messageRowid: row.id }).seq);
    }
  }
  prepared(db, 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(cursorKey(edgeUrl), next);
  return seqs;
}

/**
 * The durable event log (spec §6). Events are appended inside the caller's transaction, together
 * with the state change they describe; after the commit the caller publishes `{kind:'event', seq}`
 * on the bus (or, in a loop worker, through `LoopContext.publish`) so the WebSocket hub and the
 * webhook loop read forward at once.
 */
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { prepared } from '../db/statements.js';

export interface NewEvent {
  eventType: string;
  /** The inbox the event belongs to (scope filtering); null for owner-only events. */
  inboxId: string | null;
  /** The key that carries the payload, e.g. `message`, `send`, `draft`, `quarantine`. */
  payloadKey: string;
  payload: Record<string, unknown>;
  /** Extra top-level keys (e.g. `thread` beside `message` for received mail). */
  extra?: Record<string, unknown>;
  /** messages.id of the message the payload describes, so deleting it can redact the event. */
  messageRowid?: number | null;
}

export interface StoredEvent {
  seq: number;
  event_id: string;
  event_type: string;
  inbox_id: string | null;
  /** The event object exactly as delivered: `{type:'event', event_type, event_id, ...}`. */
  event: Record<string, unknown>;
  created_at: string;
}

/** Appends one event. Must run inside the transaction that makes the state change. */
export function appendEvent(db: Db, e: NewEvent): { seq: number; eventId: string } {
  const eventId = `evt_${uuidv7()}`;
  const createdAt = new Date().toISOString();
  const event = { type: 'event', event_type: e.eventType, event_id: eventId, ...e.extra, [e.payloadKey]: e.payload };
  // The pod is the inbox's as the event is made (docs/pods.md): pod filters never look an inbox up later.
  const result = prepared(db, 'INSERT INTO events (event_id, event_type, inbox_id, pod_id, message_rowid, payload, created_at) VALUES (?, ?, ?, (SELECT pod_id FROM inboxes WHERE inbox_id = ?), ?, ?, ?)')
    .run(eventId, e.eventType, e.inboxId, e.inboxId, e.messageRowid ?? null, JSON.stringify(event), createdAt);
  return { seq: Number(result.lastInsertRowid), eventId };
}

/** Events after `afterSeq`, oldest first. */
export function eventsAfter(db: Db, afterSeq: number, limit: number): StoredEvent[] {
  const rows = db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(afterSeq, limit) as (Omit<StoredEvent, 'event'> & { payload: string })[];
  return rows.map(({ payload, ...r }) => ({ ...r, event: JSON.parse(payload) as Record<string, unknown> }));
}

/** A stored event as the webhook loop delivers it: the payload is the JSON body, byte for byte. */
export interface RawEvent {
  seq: number;
  event_id: string;
  event_type: string;
  inbox_id: string | null;
  /** The pod of the event's inbox when it was appended; null for owner-only events. */
  pod_id: string | null;
  payload: string;
}

/** Events after `afterSeq`, oldest first, with the payload left as stored (no parse). */
export function rawEventsAfter(db: Db, afterSeq: number, limit: number): RawEvent[] {
  return prepared(db, 'SELECT seq, event_id, event_type, inbox_id, pod_id, payload FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(afterSeq, limit) as RawEvent[];
}

export function latestSeq(db: Db): number {
  return (db.prepare('SELECT coalesce(max(seq), 0) AS s FROM events').get() as { s: number }).s;
}

export function seqOfEventId(db: Db, eventId: string): number | null {
  const row = db.prepare('SELECT seq FROM events WHERE event_id = ?').get(eventId) as { seq: number } | undefined;
  return row?.seq ?? null;
}

const REDACTED_MESSAGE_FIELDS = ['subject', 'preview', 'text', 'html', 'extracted_text', 'extracted_html', 'extracted', 'manipulation', 'headers', 'attachments'] as const;

/**
 * Deleting a message removes its body, subject, preview, headers and attachment metadata from
 * stored events (spec §6.3). Call inside the deleting transaction, before the row disappears.
 */
export function redactMessageEvents(db: Db, messageRowid: number): void {
  const rows = db.prepare('SELECT seq, payload FROM events WHERE message_rowid = ?').all(messageRowid) as { seq: number; payload: string }[];
  const update = db.prepare('UPDATE events SET payload = ? WHERE seq = ?');
  for (const row of rows) {
    const event = JSON.parse(row.payload) as Record<string, unknown>;
    for (const key of ['message', 'thread']) {
      const part = event[key] as Record<string, unknown> | undefined;
      if (!part || typeof part !== 'object') continue;
      for (const field of REDACTED_MESSAGE_FIELDS) if (field in part) part[field] = null;
      if (key === 'thread') {
        if ('preview' in part) part.preview = null;
        if ('subject' in part) part.subject = null;
      }
      part.redacted = true;
    }
    update.run(JSON.stringify(event), row.seq);
  }
}

/** Drops events older than the retention period (30 days) that no webhook still needs. */
export const EVENT_RETENTION_MS = 30 * 24 * 3600 * 1000;

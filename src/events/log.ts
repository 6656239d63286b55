/**
 * The durable event log (spec §6). Events are appended inside the caller's transaction, together
 * with the state change they describe; after the commit the caller publishes `{kind:'event', seq}`
 * on the bus (or, in a loop worker, through `LoopContext.publish`) so the WebSocket hub and the
 * webhook loop read forward at once.
 */
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { prepared } from '../db/statements.js';
import { readExtract } from '../mail/extracted-span.js';

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
  /**
   * The payload is that message (`payloadKey` 'message'), whose bodies are then not stored again
   * in the event: they are read from the message row when the event is delivered (see below).
   */
  bodiesFromMessage?: boolean;
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

/**
 * The message fields a received-mail event does not store (migration 32): a message's bodies
 * never change after it is stored, so the event reads them from the message row when it is
 * delivered instead of keeping a second copy, which was the larger half of what every received
 * message wrote (docs/mail-store.md, "Storage of bodies"). They follow the stored fields of the message, as
 * the last keys of the event's last object. Whatever deletes the message, a trigger writes them
 * into its events as null first, as its redaction (below) leaves them, and ends the reference
 * (src/db/migrations-event-bodies.ts).
 */
const BODY_FIELDS = ['text', 'html', 'extracted_text', 'extracted_html'] as const;

/** Appends one event. Must run inside the transaction that makes the state change. */
export function appendEvent(db: Db, e: NewEvent): { seq: number; eventId: string } {
  const eventId = `evt_${uuidv7()}`;
  const createdAt = new Date().toISOString();
  const bodiesFromMessage = e.bodiesFromMessage === true && e.payloadKey === 'message' && e.messageRowid != null;
  const payload = bodiesFromMessage ? withoutBodies(e.payload) : e.payload;
  // The payload object goes last: delivery appends the bodies just before its closing brace.
  const { [e.payloadKey]: _shadowed, ...extra } = e.extra ?? {};
  const event = { type: 'event', event_type: e.eventType, event_id: eventId, ...extra, [e.payloadKey]: payload };
  // The pod is the inbox's as the event is made (docs/pods.md): pod filters never look an inbox up later.
  const result = prepared(
    db,
    'INSERT INTO events (event_id, event_type, inbox_id, pod_id, message_rowid, payload, created_at, bodies_from_message) VALUES (?, ?, ?, (SELECT pod_id FROM inboxes WHERE inbox_id = ?), ?, ?, ?, ?)',
  ).run(eventId, e.eventType, e.inboxId, e.inboxId, e.messageRowid ?? null, JSON.stringify(event), createdAt, bodiesFromMessage ? 1 : 0);
  return { seq: Number(result.lastInsertRowid), eventId };
}

function withoutBodies(message: Record<string, unknown>): Record<string, unknown> {
  const stored = { ...message };
  for (const field of BODY_FIELDS) delete stored[field];
  return stored;
}

/** An event row as stored: with `bodies_from_message`, its payload still lacks the message's bodies. */
export interface StoredEventRow {
  seq: number;
  event_id: string;
  event_type: string;
  inbox_id: string | null;
  pod_id: string | null;
  message_rowid: number | null;
  bodies_from_message: 0 | 1;
  payload: string;
}

interface MessageBodies {
  text: string | null;
  html: string | null;
  extracted_text: string | null;
  extracted_from: number | null;
  extracted_length: number | null;
  extracted_html: string | null;
}

/** Events after `afterSeq`, oldest first, as stored: deliveredPayload completes one. */
export function storedEventsAfter(db: Db, afterSeq: number, limit: number): StoredEventRow[] {
  return prepared(db, 'SELECT seq, event_id, event_type, inbox_id, pod_id, message_rowid, bodies_from_message, payload FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(
    afterSeq,
    limit,
  ) as StoredEventRow[];
}

/**
 * The event as delivered, JSON text: the stored payload, with the message's bodies read now where
 * it has them by reference. A row read earlier may be stale (a webhook holds a batch for as long as
 * its deliveries take), and its message may have been deleted and its row id given to another
 * message since: so the event and the message are read again together, in one statement (one
 * snapshot), by `seq`. The deletion's trigger has then either ended the reference (the stored
 * payload, with null bodies, is what is sent) or not happened, and the message must still be in
 * the event's inbox. An event no longer stored is sent as held, with null bodies.
 */
export function deliveredPayload(db: Db, row: Pick<StoredEventRow, 'seq' | 'payload' | 'bodies_from_message'>): string {
  if (row.bodies_from_message !== 1) return row.payload;
  const now = prepared(
    db,
    `SELECT e.payload, e.bodies_from_message, m.id AS found, m.text, m.html, m.extracted_text, m.extracted_from, m.extracted_length, m.extracted_html
       FROM events e LEFT JOIN messages m ON e.bodies_from_message = 1 AND m.id = e.message_rowid AND m.inbox_id IS e.inbox_id
      WHERE e.seq = ?`,
  ).get(row.seq) as (MessageBodies & { payload: string; bodies_from_message: 0 | 1; found: number | null }) | undefined;
  if (!now) return withBodies(row.payload, null);
  if (now.bodies_from_message !== 1) return now.payload;
  return withBodies(now.payload, now.found === null ? null : now);
}

/** `payload` with the bodies appended as the last keys of its last object (null when the message is gone). */
function withBodies(payload: string, bodies: MessageBodies | null): string {
  if (!payload.endsWith('}}')) return payload;
  const values = {
    text: bodies?.text ?? null,
    html: bodies?.html ?? null,
    extracted_text: bodies ? readExtract(bodies) : null,
    extracted_html: bodies?.extracted_html ?? null,
  };
  const appended = BODY_FIELDS.map((field) => `${JSON.stringify(field)}:${JSON.stringify(values[field])}`).join(',');
  const open = payload.slice(0, -2);
  return `${open}${open.endsWith('{') ? '' : ','}${appended}}}`;
}

/** Events after `afterSeq`, oldest first. */
export function eventsAfter(db: Db, afterSeq: number, limit: number): StoredEvent[] {
  const rows = db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(afterSeq, limit) as (Omit<StoredEvent, 'event'> & StoredEventRow)[];
  return rows.map(({ payload, bodies_from_message, message_rowid: _rowid, pod_id: _pod, ...r }) => ({
    ...r,
    event: JSON.parse(deliveredPayload(db, { seq: r.seq, payload, bodies_from_message })) as Record<string, unknown>,
  }));
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

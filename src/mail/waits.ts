/**
 * What "wait for the next message" reads (issue 20 §1; docs/waiting.md): received messages after
 * a point in arrival order that match a waiter's filters. The same filter is written twice, once
 * as SQL (the first check, over stored mail) and once in JavaScript (each newly committed message,
 * checked against every waiter in memory); both are here, side by side, so they cannot drift:
 * substrings match case-insensitively as in the list filters (`svc_fold` is `toLowerCase`).
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { visibleSql, type HiddenLabel, type Visibility } from './labels.js';
import { fullMessages } from './messages.js';
import { MESSAGE_BODY_COLUMNS, MESSAGE_ITEM_COLUMNS, type Message, type MessageBodyRow } from './serialize.js';

/** A place in arrival order: messages after it have a later (timestamp, row id). */
export interface WaitPoint {
  timestamp: string;
  id: number;
}

/** Strictly after `timestamp` (ISO UTC, the stored form), whatever the row id. */
export const pointAt = (timestamp: string): WaitPoint => ({ timestamp, id: Number.MAX_SAFE_INTEGER });

/** A waiter's filters: every listed value is lower-cased; any value of a list may match. */
export interface WaitFilters {
  /** 'all', or the inboxes it covers. */
  inboxes: 'all' | readonly string[];
  from: readonly string[];
  to: readonly string[];
  subject: readonly string[];
  excluded: readonly HiddenLabel[];
}

const RECIPIENTS_SQL = "m.to_addresses || ' ' || coalesce(m.cc_addresses, '') || ' ' || coalesce(m.bcc_addresses, '')";

function anyOf(column: string, values: readonly string[], where: string[], params: unknown[]): void {
  if (values.length === 0) return;
  where.push(`(${values.map(() => `instr(svc_fold(${column}), ?) > 0`).join(' OR ')})`);
  params.push(...values);
}

/** The inboxes a wait covers as rows of `inbox_id`, with the SQL's parameters. */
function inboxRows(inboxes: readonly string[]): { sql: string; params: unknown[] } {
  return { sql: 'SELECT value AS inbox_id FROM json_each(?)', params: [JSON.stringify(inboxes)] };
}

/**
 * The point of a message in the waiter's inboxes that the caller may read (`v`, its read
 * visibility), for `after=<message_id>`; null when there is none. A message hidden by a label the
 * caller lacks the permission for answers exactly as a missing one, so `after` cannot probe for it.
 * Over every inbox, one seek in messages_message_id finds it whatever the number of inboxes; over
 * some, the (inbox_id, message_id) key finds it in one seek per inbox.
 */
export function messagePoint(db: Db, inboxes: 'all' | readonly string[], messageId: string, v: Visibility): WaitPoint | null {
  const order = `AND ${visibleSql('m', v)} ORDER BY m.timestamp, m.id LIMIT 1`;
  if (inboxes === 'all') {
    return (prepared(db, `SELECT m.timestamp, m.id FROM messages m INDEXED BY messages_message_id WHERE m.message_id = ? ${order}`).get(messageId) as WaitPoint | undefined) ?? null;
  }
  const scope = inboxRows(inboxes);
  const row = prepared(db, `SELECT m.timestamp, m.id FROM messages m WHERE m.message_id = ? AND m.inbox_id IN (${scope.sql}) ${order}`).get(messageId, ...scope.params) as WaitPoint | undefined;
  return row ?? null;
}

/** A message's place in its inbox's (inbox_id, timestamp) index, which holds its row id too. */
interface IndexEntry {
  inboxId: string;
  timestamp: string;
  id: number;
}

/** Entries of messages_time read at a time: the first nearly always passes. */
const ENTRY_BATCH = 16;

/**
 * The message of an index entry, when it passes `conditions`: found by its row id and checked
 * against the entry's timestamp (and inbox, `byInbox`), since the entry and the row are separate
 * reads and a row id deleted meanwhile may belong to another message by now.
 */
function entryRow(db: Db, conditions: readonly string[], byInbox: boolean) {
  return prepared(db, `SELECT ${MESSAGE_ITEM_COLUMNS}, ${MESSAGE_BODY_COLUMNS} FROM messages m WHERE m.id = ? AND ${byInbox ? 'm.inbox_id = ? AND ' : ''}m.timestamp = ? AND ${conditions.join(' AND ')}`);
}

/**
 * firstReceivedAfter over every inbox: messages_time walked from `after`, its entries (timestamp
 * and row id, read from the index alone) in batches, each entry's message read and checked.
 */
function firstAcrossHome(db: Db, after: WaitPoint, conditions: readonly string[], params: readonly unknown[]): Message | null {
  const entries = prepared(
    db,
    `SELECT m.timestamp, m.id FROM messages m INDEXED BY messages_time WHERE m.timestamp >= ? AND (m.timestamp > ? OR m.id > ?) ORDER BY m.timestamp, m.id LIMIT ${ENTRY_BATCH}`,
  );
  const passing = entryRow(db, conditions, false);
  for (let from = after; ; ) {
    const batch = entries.all(from.timestamp, from.timestamp, from.id) as WaitPoint[];
    for (const entry of batch) {
      const row = passing.get(entry.id, entry.timestamp, ...params) as MessageBodyRow | undefined;
      if (row) return fullMessages(db, [row])[0]!;
    }
    if (batch.length < ENTRY_BATCH) return null;
    from = batch[batch.length - 1]!;
  }
}

const before = (a: IndexEntry, b: IndexEntry) => a.timestamp < b.timestamp || (a.timestamp === b.timestamp && a.id < b.id);

/**
 * The first received message after `after` that passes the filters, oldest first; null when none
 * is stored yet. Over every inbox, messages_time is walked from `after` in arrival order (its
 * entries hold the row id, which breaks a tie of timestamps as arrival order does). Over some
 * inboxes, their (inbox_id, timestamp) indexes are merged in arrival order: each inbox's next
 * entry after `after` is read from the index alone, and only the oldest entry of all has its
 * message row read and checked (received, visible, the filters); when it fails, its inbox's next
 * entry takes its place. Either way one message row is read when the oldest message after the
 * point passes, as it nearly always does, and the cost follows the inboxes and the mail after
 * `after`, not the history.
 */
export function firstReceivedAfter(db: Db, after: WaitPoint, f: WaitFilters): Message | null {
  const where = ["m.direction = 'inbound'", visibleSql('m', { excluded: f.excluded } satisfies Visibility)];
  const params: unknown[] = [];
  anyOf('m.from_address', f.from, where, params);
  anyOf(RECIPIENTS_SQL, f.to, where, params);
  anyOf('m.subject', f.subject, where, params);
  if (f.inboxes === 'all') return firstAcrossHome(db, after, where, params);
  const passing = entryRow(db, where, true);
  const scope = inboxRows(f.inboxes);
  // `timestamp || '|' || id`: both values of one index entry from one scalar subquery (no LATERAL in SQLite; a timestamp has no '|').
  const firstEntries = prepared(
    db,
    `SELECT i.inbox_id AS inbox_id,
            (SELECT m.timestamp || '|' || m.id FROM messages m INDEXED BY messages_inbox_time
              WHERE m.inbox_id = i.inbox_id AND m.timestamp >= ? AND (m.timestamp > ? OR m.id > ?) ORDER BY m.timestamp, m.id LIMIT 1) AS entry
       FROM (${scope.sql}) i`,
  ).all(after.timestamp, after.timestamp, after.id, ...scope.params) as { inbox_id: string; entry: string | null }[];
  const nextEntry = prepared(
    db,
    `SELECT m.timestamp, m.id FROM messages m INDEXED BY messages_inbox_time
      WHERE m.inbox_id = ? AND m.timestamp >= ? AND (m.timestamp > ? OR m.id > ?) ORDER BY m.timestamp, m.id LIMIT 1`,
  );
  const queue: IndexEntry[] = [];
  const enqueue = (entry: IndexEntry) => {
    let at = queue.length;
    while (at > 0 && before(entry, queue[at - 1]!)) at--;
    queue.splice(at, 0, entry);
  };
  for (const { inbox_id, entry } of firstEntries) {
    if (entry === null) continue;
    const bar = entry.lastIndexOf('|');
    enqueue({ inboxId: inbox_id, timestamp: entry.slice(0, bar), id: Number(entry.slice(bar + 1)) });
  }
  for (let oldest = queue.shift(); oldest !== undefined; oldest = queue.shift()) {
    const row = passing.get(oldest.id, oldest.inboxId, oldest.timestamp, ...params) as MessageBodyRow | undefined;
    if (row) return fullMessages(db, [row])[0]!;
    const next = nextEntry.get(oldest.inboxId, oldest.timestamp, oldest.timestamp, oldest.id) as { timestamp: string; id: number } | undefined;
    if (next) enqueue({ inboxId: oldest.inboxId, timestamp: next.timestamp, id: next.id });
  }
  return null;
}

/** A newly received message as the waiters' matcher sees it: no body, its labels. */
export interface ReceivedRow {
  seq: number;
  inbox_id: string;
  id: number;
  message_id: string;
  timestamp: string;
  from_address: string | null;
  recipients: string;
  subject: string | null;
  labels: string[];
}

/**
 * The messages received by the events after `afterSeq` (at most `limit`), oldest first, and the
 * log position they were read up to: everything up to `head` has been looked at, so a waiter whose
 * position was at least `afterSeq` moves to `head`.
 */
export function receivedAfterSeq(db: Db, afterSeq: number, limit: number): { head: number; rows: ReceivedRow[] } {
  const latest = (prepared(db, 'SELECT coalesce(max(seq), 0) AS s FROM events').get() as { s: number }).s;
  if (latest <= afterSeq) return { head: Math.max(latest, afterSeq), rows: [] };
  const rows = prepared(
    db,
    `SELECT e.seq, m.inbox_id, m.id, m.message_id, m.timestamp, m.from_address, ${RECIPIENTS_SQL} AS recipients, m.subject,
            (SELECT json_group_array(l.label) FROM message_labels l WHERE l.message_rowid = m.id) AS labels
       FROM events e JOIN messages m ON m.id = e.message_rowid
      WHERE e.seq > ? AND e.seq <= ? AND e.event_type LIKE 'message.received%' AND m.direction = 'inbound'
      ORDER BY e.seq LIMIT ?`,
  ).all(afterSeq, latest, limit) as (Omit<ReceivedRow, 'labels'> & { labels: string })[];
  const head = rows.length === limit ? rows[rows.length - 1]!.seq : latest;
  return { head, rows: rows.map((r) => ({ ...r, labels: JSON.parse(r.labels) as string[] })) };
}

const anyIn = (value: string | null, needles: readonly string[]) => needles.length === 0 || (value !== null && needles.some((n) => value.toLowerCase().includes(n)));

/** The in-memory twin of firstReceivedAfter's WHERE clause, for one newly received message. */
export function matchesWait(row: ReceivedRow, after: WaitPoint, f: WaitFilters): boolean {
  if (f.inboxes !== 'all' && !f.inboxes.includes(row.inbox_id)) return false;
  if (row.timestamp < after.timestamp || (row.timestamp === after.timestamp && row.id <= after.id)) return false;
  if (f.excluded.some((l) => row.labels.includes(l))) return false;
  return anyIn(row.from_address, f.from) && anyIn(row.recipients, f.to) && anyIn(row.subject, f.subject);
}

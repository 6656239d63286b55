/**
 * Messages of one inbox: keyset-paged lists, reads by Message-ID, label edits and deletion.
 * Every read takes a Visibility, so hidden mail stays invisible unless the caller may see it.
 */
import type { Db } from '../db/open.js';
import { bumpSearchGeneration, type Cursor } from '../core/pagination.js';
import { redactMessageEvents } from '../events/log.js';
import { applyLabelEdit, labelsOf, rareLabel, touchesHidden, visibleSql, type LabelEdit, type Visibility } from './labels.js';
import { unindexMessages } from './search-index.js';
import {
  ATTACHMENT_COLUMNS,
  MESSAGE_BODY_COLUMNS,
  MESSAGE_ITEM_COLUMNS,
  messageItemShape,
  messageShape,
  type AttachmentRow,
  type Message,
  type MessageBodyRow,
  type MessageItem,
  type MessageRow,
  type ThreadMessageRow,
} from './serialize.js';
import { prepared } from '../db/statements.js';

/** Path ids arrive URL-decoded; the angle brackets are optional for convenience. */
export function normalizeMessageId(id: string): string {
  const trimmed = id.trim();
  return trimmed.startsWith('<') ? trimmed : `<${trimmed}>`;
}

/** Attachment metadata (never the content) of the messages that have any, in one query. */
export function attachmentsOf(db: Db, messages: readonly ThreadMessageRow[]): Map<number, AttachmentRow[]> {
  const messageRowids = messages.filter((m) => m.has_attachments).map((m) => m.id);
  const result = new Map<number, AttachmentRow[]>(messageRowids.map((id) => [id, []]));
  if (messageRowids.length === 0) return result;
  const rows = prepared(db, `SELECT ${ATTACHMENT_COLUMNS} FROM attachments a WHERE a.message_rowid IN (SELECT value FROM json_each(?)) ORDER BY a.message_rowid, a.rowid`).all(
    JSON.stringify(messageRowids),
  ) as AttachmentRow[];
  for (const row of rows) result.get(row.message_rowid)?.push(row);
  return result;
}

export function messageItems(db: Db, rows: MessageRow[]): MessageItem[] {
  const attachments = attachmentsOf(db, rows);
  return rows.map((r) => messageItemShape(r, attachments.get(r.id) ?? []));
}

export function fullMessages(db: Db, rows: MessageBodyRow[]): Message[] {
  const attachments = attachmentsOf(db, rows);
  return rows.map((r) => messageShape(r, attachments.get(r.id) ?? []));
}

/** A body as stored, in the column names of MessageBodyRow. */
export type MessageBody = Pick<MessageBodyRow, 'text' | 'html' | 'extracted_text' | 'extracted_html' | 'actions' | 'manipulation'>;

/**
 * One message, full shape, with the body its caller has just written instead of reading it back:
 * for a large body the read would cost two more copies of it at the moment the message's event
 * is built (issue 16, finding 9). A string with a lone surrogate does not read back as written
 * (SQLite keeps its UTF-8 bytes, which decode to U+FFFD), so such a body is read back after all;
 * received mail never has one (workers/pool/parse.ts makes its text well-formed).
 */
export function messageWithBody(db: Db, rowid: number, body: MessageBody): Message {
  const asWritten = [body.text, body.html, body.extracted_text, body.extracted_html].every((s) => s === null || s.isWellFormed());
  const columns = asWritten ? MESSAGE_ITEM_COLUMNS : `${MESSAGE_ITEM_COLUMNS}, ${MESSAGE_BODY_COLUMNS}`;
  const row = prepared(db, `SELECT ${columns} FROM messages m WHERE m.id = ?`).get(rowid) as MessageBodyRow;
  const [message] = fullMessages(db, [asWritten ? { ...row, ...body } : row]);
  return message!;
}

// ---- list ----

export interface MessageFilters {
  before?: string;
  after?: string;
  labels?: string[];
  from?: string[];
  to?: string[];
  subject?: string[];
}

export interface PageRequest {
  limit: number;
  ascending: boolean;
  cursor: Cursor | null;
}

/** SQL conditions for substring filters: any of the values matches (case-insensitive). */
export function anySubstring(column: string, values: string[] | undefined, where: string[], params: unknown[]): void {
  if (!values || values.length === 0) return;
  where.push(`(${values.map(() => `instr(svc_fold(${column}), ?) > 0`).join(' OR ')})`);
  params.push(...values.map((v) => v.toLowerCase()));
}

/** Newest first unless ascending; keyset on (timestamp, id) over messages_inbox_time. */
export function listMessages(db: Db, inboxId: string, filters: MessageFilters, v: Visibility, page: PageRequest): { items: MessageItem[]; next: Cursor | null } {
  // A rare label's rows come first (CROSS JOIN keeps that order; `+m.inbox_id` keeps SQLite from
  // walking the inbox instead); the few messages found are then sorted.
  const rare = rareLabel(db, filters.labels);
  const from = rare === null ? 'messages m' : 'message_labels rl CROSS JOIN messages m ON m.id = rl.message_rowid';
  const where = rare === null ? ['m.inbox_id = ?', visibleSql('m', v)] : ['rl.label = ?', '+m.inbox_id = ?', visibleSql('m', v)];
  const params: unknown[] = rare === null ? [inboxId] : [rare, inboxId];
  if (filters.before) {
    where.push('m.timestamp < ?');
    params.push(filters.before);
  }
  if (filters.after) {
    where.push('m.timestamp > ?');
    params.push(filters.after);
  }
  for (const label of new Set(filters.labels ?? [])) {
    if (label === rare) continue;
    where.push('EXISTS (SELECT 1 FROM message_labels fl WHERE fl.message_rowid = m.id AND fl.label = ?)');
    params.push(label);
  }
  anySubstring('m.from_address', filters.from, where, params);
  anySubstring("m.to_addresses || ' ' || coalesce(m.cc_addresses, '') || ' ' || coalesce(m.bcc_addresses, '')", filters.to, where, params);
  anySubstring('m.subject', filters.subject, where, params);
  const [cmp, dir] = page.ascending ? ['>', 'ASC'] : ['<', 'DESC'];
  if (page.cursor) {
    where.push(`m.timestamp ${cmp}= ? AND (m.timestamp ${cmp} ? OR m.id ${cmp} ?)`);
    params.push(page.cursor[0], page.cursor[0], page.cursor[1]);
  }
  const rows = prepared(db, `SELECT ${MESSAGE_ITEM_COLUMNS} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY m.timestamp ${dir}, m.id ${dir} LIMIT ?`).all(
    ...params,
    page.limit + 1,
  ) as MessageRow[];
  const more = rows.length > page.limit;
  if (more) rows.length = page.limit;
  const last = rows[rows.length - 1];
  return { items: messageItems(db, rows), next: more ? [last.timestamp, last.id] : null };
}

// ---- single reads ----

function findRow(db: Db, inboxId: string, messageId: string, v: Visibility): MessageBodyRow | undefined {
  return prepared(db, `SELECT ${MESSAGE_ITEM_COLUMNS}, ${MESSAGE_BODY_COLUMNS} FROM messages m WHERE m.inbox_id = ? AND m.message_id = ? AND ${visibleSql('m', v)}`).get(
    inboxId,
    normalizeMessageId(messageId),
  ) as MessageBodyRow | undefined;
}

export function getMessage(db: Db, inboxId: string, messageId: string, v: Visibility): Message | null {
  const row = findRow(db, inboxId, messageId, v);
  return row ? fullMessages(db, [row])[0] : null;
}

/** The messages among `messageIds` that exist and are visible, in request order. */
export function batchGetMessages(db: Db, inboxId: string, messageIds: string[], v: Visibility): Message[] {
  const ids = [...new Set(messageIds.map(normalizeMessageId))];
  const rows = prepared(
    db,
    `SELECT ${MESSAGE_ITEM_COLUMNS}, ${MESSAGE_BODY_COLUMNS} FROM messages m WHERE m.inbox_id = ? AND m.message_id IN (SELECT value FROM json_each(?)) AND ${visibleSql('m', v)}`,
  ).all(inboxId, JSON.stringify(ids)) as MessageBodyRow[];
  const byId = new Map(rows.map((r) => [r.message_id, r]));
  return fullMessages(
    db,
    ids.flatMap((id) => byId.get(id) ?? []),
  );
}

/** Attachment metadata plus the message it belongs to, or null when either is missing or hidden. */
export function messageAttachment(db: Db, inboxId: string, messageId: string, attachmentId: string, v: Visibility): { messageId: string; attachment: AttachmentRow } | null {
  const row = prepared(
    db,
    `SELECT ${ATTACHMENT_COLUMNS}, m.message_id FROM messages m JOIN attachments a ON a.message_rowid = m.id WHERE m.inbox_id = ? AND m.message_id = ? AND a.attachment_id = ? AND ${visibleSql('m', v)}`,
  ).get(inboxId, normalizeMessageId(messageId), attachmentId) as (AttachmentRow & { message_id: string }) | undefined;
  if (!row) return null;
  const { message_id, ...attachment } = row;
  return { messageId: message_id, attachment };
}

/** The stored Message-ID of a visible message, e.g. to issue a raw download. */
export function visibleMessage(db: Db, inboxId: string, messageId: string, v: Visibility): { messageId: string; size: number } | null {
  const row = prepared(db, `SELECT m.message_id, m.size FROM messages m WHERE m.inbox_id = ? AND m.message_id = ? AND ${visibleSql('m', v)}`).get(inboxId, normalizeMessageId(messageId)) as
    | { message_id: string; size: number }
    | undefined;
  return row ? { messageId: row.message_id, size: row.size } : null;
}

// ---- label edits ----

/**
 * Applies one label edit to the visible messages among `messageIds`, atomically, and returns
 * each one's new labels in request order. Missing and hidden messages are left out. Runs inside
 * the caller's transaction, so every message gets the edit or none does.
 */
export function updateMessageLabels(db: Db, inboxId: string, messageIds: string[], v: Visibility, edit: LabelEdit): { message_id: string; labels: string[] }[] {
  const ids = [...new Set(messageIds.map(normalizeMessageId))];
  const rows = prepared(db, `SELECT m.id, m.message_id FROM messages m WHERE m.inbox_id = ? AND m.message_id IN (SELECT value FROM json_each(?)) AND ${visibleSql('m', v)}`).all(
    inboxId,
    JSON.stringify(ids),
  ) as { id: number; message_id: string }[];
  applyLabelEdit(
    db,
    rows.map((r) => r.id),
    edit,
  );
  // Hidden labels change what search may return, so search page tokens must go stale.
  if (rows.length > 0 && touchesHidden(edit)) bumpSearchGeneration(db);
  const labels = labelsOf(
    db,
    rows.map((r) => r.id),
  );
  const byId = new Map(rows.map((r) => [r.message_id, r.id]));
  return ids.flatMap((id) => {
    const rowid = byId.get(id);
    return rowid === undefined ? [] : [{ message_id: id, labels: labels.get(rowid) ?? [] }];
  });
}

// ---- delete ----

interface EventRow {
  seq: number;
  payload: string;
}

/**
 * Events of the other messages in the thread carry a thread summary that may name the deleted
 * message's attachments, subject or preview; those parts are removed too (spec §6.3).
 */
function redactSiblingSummaries(db: Db, deleted: { id: number; thread_id: string; subject: string | null; preview: string | null }): void {
  const attachmentIds = new Set((prepared(db, 'SELECT attachment_id FROM attachments WHERE message_rowid = ?').all(deleted.id) as { attachment_id: string }[]).map((r) => r.attachment_id));
  const remainingSubjects = new Set(
    (prepared(db, 'SELECT subject FROM messages WHERE thread_id = ? AND id != ?').all(deleted.thread_id, deleted.id) as { subject: string | null }[]).map((r) => r.subject),
  );
  const events = prepared(
    db,
    'SELECT e.seq, e.payload FROM messages m JOIN events e ON e.message_rowid = m.id WHERE m.thread_id = ? AND m.id != ?',
  ).all(deleted.thread_id, deleted.id) as EventRow[];
  const update = prepared(db, 'UPDATE events SET payload = ? WHERE seq = ?');
  for (const row of events) {
    const event = JSON.parse(row.payload) as { thread?: { attachments?: { attachment_id: string }[] | null; subject?: string | null; preview?: string | null } };
    const thread = event.thread;
    if (!thread || typeof thread !== 'object') continue;
    let changed = false;
    if (Array.isArray(thread.attachments) && thread.attachments.some((a) => attachmentIds.has(a.attachment_id))) {
      thread.attachments = thread.attachments.filter((a) => !attachmentIds.has(a.attachment_id));
      changed = true;
    }
    if (deleted.subject !== null && thread.subject === deleted.subject && !remainingSubjects.has(deleted.subject)) {
      thread.subject = null;
      changed = true;
    }
    if (deleted.preview !== null && thread.preview === deleted.preview) {
      thread.preview = null;
      changed = true;
    }
    if (changed) update.run(JSON.stringify(event), row.seq);
  }
}

/**
 * Deletes one visible message for good: its events are redacted, its search row removed, and
 * its thread goes too when it was the last message. Returns false when there is no such message.
 * Runs inside the caller's transaction.
 */
export function deleteMessage(db: Db, inboxId: string, messageId: string, v: Visibility): boolean {
  const row = prepared(db, `SELECT m.id, m.thread_id, m.subject, m.preview FROM messages m WHERE m.inbox_id = ? AND m.message_id = ? AND ${visibleSql('m', v)}`).get(
    inboxId,
    normalizeMessageId(messageId),
  ) as { id: number; thread_id: string; subject: string | null; preview: string | null } | undefined;
  if (!row) return false;
  redactMessageEvents(db, row.id);
  redactSiblingSummaries(db, row);
  unindexMessages(db, [row.id]);
  prepared(db, 'DELETE FROM messages WHERE id = ?').run(row.id);
  const rest = prepared(db, 'SELECT max(timestamp) AS latest FROM messages WHERE thread_id = ?').get(row.thread_id) as { latest: string | null };
  if (rest.latest === null) prepared(db, 'DELETE FROM threads WHERE thread_id = ?').run(row.thread_id);
  else prepared(db, 'UPDATE threads SET updated_at = ? WHERE thread_id = ?').run(rest.latest, row.thread_id);
  bumpSearchGeneration(db);
  return true;
}

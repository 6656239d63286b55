/**
 * Threads: keyset-paged lists by last activity, reads with a page of messages, label edits on
 * every visible message, and deletion. A thread is visible when at least one of its messages
 * is; its summary is built from its visible messages only.
 */
import { onCommit, type Db } from '../db/open.js';
import { bumpSearchGeneration, type Cursor } from '../core/pagination.js';
import { redactMessageEvents } from '../events/log.js';
import { applyLabelEdit, HIDDEN_LABELS, labelsOf, rareLabel, touchesHidden, visibleSql, type LabelEdit, type Visibility } from './labels.js';
import { unindexMessages } from './search-index.js';
import { anySubstring, attachmentsOf, fullMessages, type PageRequest } from './messages.js';
import {
  ATTACHMENT_COLUMNS,
  MESSAGE_BODY_COLUMNS,
  MESSAGE_ITEM_COLUMNS,
  THREAD_MESSAGE_COLUMNS,
  threadItemShape,
  type AttachmentRow,
  type MessageBodyRow,
  type Thread,
  type ThreadItem,
  type ThreadMessageRow,
  type ThreadRow,
} from './serialize.js';
import { prepared } from '../db/statements.js';

const THREAD_COLUMNS = 't.thread_id, t.inbox_id, t.subject, t.created_at, t.updated_at';
/** A listed thread: its row and its stored summary (migration 12), NULL when not stored. */
export const LISTED_THREAD_COLUMNS = `${THREAD_COLUMNS}, t.summary`;
export type ListedThreadRow = ThreadRow & { summary: string | null };

/** Summaries of the given threads, in the given order, from their visible messages. */
export function threadSummaries(db: Db, threads: ThreadRow[], v: Visibility): ThreadItem[] {
  if (threads.length === 0) return [];
  const messages = prepared(
    db,
    `SELECT ${THREAD_MESSAGE_COLUMNS} FROM messages m WHERE m.thread_id IN (SELECT value FROM json_each(?)) AND ${visibleSql('m', v)} ORDER BY m.thread_id, m.timestamp, m.id`,
  ).all(JSON.stringify(threads.map((t) => t.thread_id))) as ThreadMessageRow[];
  const attachments = attachmentsOf(db, messages);
  const byThread = new Map<string, ThreadMessageRow[]>(threads.map((t) => [t.thread_id, []]));
  for (const m of messages) byThread.get(m.thread_id)?.push(m);
  return threads.map((t) => threadItemShape(t, byThread.get(t.thread_id) ?? [], attachments));
}

/** The view a stored summary is made for: every hidden label left out (lists and search by default). */
const STORED_VIEW: Visibility = { excluded: HIDDEN_LABELS };
const isStoredView = (v: Visibility) => v.excluded.length === HIDDEN_LABELS.length;

/** What is stored of a summary: everything but the fields the thread row itself holds. */
type StoredSummary = Omit<ThreadItem, 'inbox_id' | 'thread_id' | 'updated_at' | 'created_at'>;

/**
 * Summaries of listed threads, in order. In the stored view a thread's stored summary is used
 * as it is; the others (another view, or no summary stored) are made from their messages.
 */
export function listedSummaries(db: Db, threads: ListedThreadRow[], v: Visibility): ThreadItem[] {
  if (!isStoredView(v)) return threadSummaries(db, threads, v);
  const missing = threads.filter((t) => t.summary === null);
  const made = new Map(threadSummaries(db, missing, v).map((item) => [item.thread_id, item]));
  return threads.map((t) => {
    if (t.summary === null) return made.get(t.thread_id)!;
    const stored = JSON.parse(t.summary) as StoredSummary;
    return { inbox_id: t.inbox_id, thread_id: t.thread_id, ...stored, updated_at: t.updated_at, created_at: t.created_at };
  });
}

/**
 * The commit hook (src/db/open.ts `onCommit`): the threads whose messages, labels or attachments
 * changed in this transaction (noted by migration 12's triggers) get their summary remade before
 * it commits, so a stored summary is never older than the data. Before migration 12 has run
 * (the migrations' own transactions) there is nothing to do.
 */
function remakeDirtySummaries(db: Db): void {
  let dirty: { thread_id: string }[];
  try {
    dirty = prepared(db, 'SELECT thread_id FROM dirty_threads').all() as { thread_id: string }[];
  } catch (err) {
    if (/no such table/.test((err as Error).message)) return;
    throw err;
  }
  if (dirty.length === 0) return;
  const rows = prepared(db, `SELECT ${THREAD_COLUMNS} FROM threads t WHERE t.thread_id IN (SELECT value FROM json_each(?))`).all(
    JSON.stringify(dirty.map((d) => d.thread_id)),
  ) as ThreadRow[];
  for (const item of threadSummaries(db, rows, STORED_VIEW)) writeSummary(db, item);
  prepared(db, 'DELETE FROM dirty_threads').run();
}

function writeSummary(db: Db, item: ThreadItem): void {
  const { inbox_id: _inbox, thread_id, updated_at: _updated, created_at: _created, ...stored } = item;
  // `unread` (migration 30): a visible message of the thread is unread; triggers count it per inbox.
  const unread = item.message_count > 0 && item.labels.includes('unread') ? 1 : 0;
  prepared(db, 'UPDATE threads SET summary = ?, shown = ?, unread = ? WHERE thread_id = ?').run(JSON.stringify(stored satisfies StoredSummary), item.message_count > 0 ? 1 : 0, unread, thread_id);
}

/**
 * Stores a summary just made in the stored view inside a write transaction (the inbound commit
 * makes one for its event anyway), so the commit hook need not make it again; a later change in
 * the same transaction marks the thread dirty again and the hook remakes it.
 */
export function keepSummary(db: Db, item: ThreadItem, v: Visibility): void {
  if (!isStoredView(v)) return;
  writeSummary(db, item);
  prepared(db, 'DELETE FROM dirty_threads WHERE thread_id = ?').run(item.thread_id);
}
onCommit(remakeDirtySummaries);

export interface ThreadFilters {
  before?: string;
  after?: string;
  labels?: string[];
  senders?: string[];
  recipients?: string[];
  subject?: string[];
  /** Only threads with a visible message that has an attachment (the owner app's `has:attachment`). */
  hasAttachment?: boolean;
  /**
   * Only threads with a visible message lacking each of these labels (the owner app's archive:
   * an archived thread comes back when a new message arrives in it, as in Gmail).
   */
  lackingLabels?: string[];
}

/** Conditions on `t` for the filters; every message condition is limited to visible messages. */
function filterSql(filters: ThreadFilters, v: Visibility, where: string[], params: unknown[], rare: string | null): void {
  const visible = visibleSql('fm', v);
  if (filters.before) {
    where.push('t.updated_at < ?');
    params.push(filters.before);
  }
  if (filters.after) {
    where.push('t.updated_at > ?');
    params.push(filters.after);
  }
  const messageConditions: string[] = [];
  const messageParams: unknown[] = [];
  anySubstring('fm.from_address', filters.senders, messageConditions, messageParams);
  anySubstring("fm.to_addresses || ' ' || coalesce(fm.cc_addresses, '') || ' ' || coalesce(fm.bcc_addresses, '')", filters.recipients, messageConditions, messageParams);
  anySubstring('fm.subject', filters.subject, messageConditions, messageParams);
  // Each substring filter may match a different message of the thread.
  for (const condition of messageConditions) {
    where.push(`EXISTS (SELECT 1 FROM messages fm WHERE fm.thread_id = t.thread_id AND ${visible} AND ${condition})`);
  }
  if (messageConditions.length === 0) {
    // Listed only with a visible message; in the stored view the stored `shown` says so without
    // reading the messages, unless it is not stored.
    const anyVisible = `EXISTS (SELECT 1 FROM messages fm WHERE fm.thread_id = t.thread_id AND ${visible})`;
    where.push(isStoredView(v) ? `(t.shown = 1 OR (t.shown IS NULL AND ${anyVisible}))` : anyVisible);
  }
  params.push(...messageParams);
  if (filters.hasAttachment) where.push(`EXISTS (SELECT 1 FROM messages fm JOIN attachments fa ON fa.message_rowid = fm.id WHERE fm.thread_id = t.thread_id AND ${visible})`);
  for (const label of filters.lackingLabels ?? []) {
    where.push(`EXISTS (SELECT 1 FROM messages fm WHERE fm.thread_id = t.thread_id AND ${visible} AND NOT EXISTS (SELECT 1 FROM message_labels fl WHERE fl.message_rowid = fm.id AND fl.label = ?))`);
    params.push(label);
  }
  for (const label of new Set(filters.labels ?? [])) {
    if (label === rare) continue;
    where.push(`EXISTS (SELECT 1 FROM messages fm JOIN message_labels fl ON fl.message_rowid = fm.id AND fl.label = ? WHERE fm.thread_id = t.thread_id AND ${visible})`);
    params.push(label);
  }
}

/**
 * One page of threads of one inbox, or, with a rare label, of every inbox at once: the threads of
 * the label's visible messages in them, looked up by id and sorted (`+t.inbox_id` keeps SQLite
 * from walking an inbox's threads instead). Read from `thread_pages` (migration 38), where an
 * inbox's threads lie together in the order of their last activity; the thread id breaks ties.
 */
function threadPage(db: Db, inboxIds: readonly string[], filters: ThreadFilters, v: Visibility, page: PageRequest, rare: string | null): ListedThreadRow[] {
  const inboxes = JSON.stringify(inboxIds);
  const where =
    rare === null
      ? ['t.inbox_id = ?']
      : [`t.thread_id IN (SELECT rm.thread_id FROM message_labels rl CROSS JOIN messages rm ON rm.id = rl.message_rowid WHERE rl.label = ? AND +rm.inbox_id IN (SELECT value FROM json_each(?)) AND ${visibleSql('rm', v)})`, '+t.inbox_id IN (SELECT value FROM json_each(?))'];
  const params: unknown[] = rare === null ? [inboxIds[0]] : [rare, inboxes, inboxes];
  filterSql(filters, v, where, params, rare);
  const [cmp, dir] = page.ascending ? ['>', 'ASC'] : ['<', 'DESC'];
  if (page.cursor) {
    where.push(`t.updated_at ${cmp}= ? AND (t.updated_at ${cmp} ? OR t.thread_id ${cmp} ?)`);
    params.push(page.cursor[0], page.cursor[0], page.cursor[1]);
  }
  return prepared(db, `SELECT ${LISTED_THREAD_COLUMNS} FROM thread_pages t WHERE ${where.join(' AND ')} ORDER BY t.updated_at ${dir}, t.thread_id ${dir} LIMIT ?`).all(
    ...params,
    page.limit + 1,
  ) as ListedThreadRow[];
}

/**
 * Threads of the given inboxes by last activity. Several inboxes are merged from one indexed
 * keyset query each (thread_pages, which holds what a page shows), so an instance-wide list never sorts the whole table.
 */
export function listThreads(db: Db, inboxIds: readonly string[], filters: ThreadFilters, v: Visibility, page: PageRequest): { items: ThreadItem[]; next: Cursor | null } {
  const rare = rareLabel(db, filters.labels);
  let rows = rare === null ? inboxIds.flatMap((inboxId) => threadPage(db, [inboxId], filters, v, page, null)) : threadPage(db, inboxIds, filters, v, page, rare);
  if (inboxIds.length > 1 && rare === null) {
    const sign = page.ascending ? 1 : -1;
    const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    rows.sort((a, b) => sign * (order(a.updated_at, b.updated_at) || order(a.thread_id, b.thread_id)));
  }
  const more = rows.length > page.limit;
  rows = rows.slice(0, page.limit);
  const last = rows[rows.length - 1];
  return { items: listedSummaries(db, rows, v), next: more ? [last.updated_at, last.thread_id] : null };
}

/** The thread's row if it exists, whatever its visibility; for resolving scope first. */
export function threadInbox(db: Db, threadId: string): string | null {
  const row = prepared(db, 'SELECT inbox_id FROM threads WHERE thread_id = ?').get(threadId) as { inbox_id: string } | undefined;
  return row?.inbox_id ?? null;
}

function visibleThread(db: Db, inboxId: string, threadId: string, v: Visibility): ThreadRow | undefined {
  return prepared(
    db,
    `SELECT ${THREAD_COLUMNS} FROM threads t WHERE t.thread_id = ? AND t.inbox_id = ? AND EXISTS (SELECT 1 FROM messages m WHERE m.thread_id = t.thread_id AND ${visibleSql('m', v)})`,
  ).get(threadId, inboxId) as ThreadRow | undefined;
}

/**
 * A thread with one page of its messages: the newest `limit` messages (older than the cursor),
 * oldest first within the page. The cursor is the oldest message shown.
 */
export function getThread(db: Db, inboxId: string, threadId: string, v: Visibility, page: Omit<PageRequest, 'ascending'>): { thread: Omit<Thread, 'next_page_token'>; next: Cursor | null } | null {
  const thread = visibleThread(db, inboxId, threadId, v);
  if (!thread) return null;
  const where = ['m.thread_id = ?', visibleSql('m', v)];
  const params: unknown[] = [threadId];
  if (page.cursor) {
    where.push('m.timestamp <= ? AND (m.timestamp < ? OR m.id < ?)');
    params.push(page.cursor[0], page.cursor[0], page.cursor[1]);
  }
  const rows = prepared(db, `SELECT ${MESSAGE_ITEM_COLUMNS}, ${MESSAGE_BODY_COLUMNS} FROM messages m WHERE ${where.join(' AND ')} ORDER BY m.timestamp DESC, m.id DESC LIMIT ?`).all(
    ...params,
    page.limit + 1,
  ) as MessageBodyRow[];
  const more = rows.length > page.limit;
  if (more) rows.length = page.limit;
  const oldest = rows[rows.length - 1];
  const messages = fullMessages(db, rows.reverse());
  const [summary] = threadSummaries(db, [thread], v);
  return { thread: { ...summary, count: messages.length, limit: page.limit, messages }, next: more ? [oldest.timestamp, oldest.id] : null };
}

/** Applies a label edit to every visible message of the thread; null when there is none. Runs inside the caller's transaction. */
export function updateThreadLabels(db: Db, inboxId: string, threadId: string, v: Visibility, edit: LabelEdit): { thread_id: string; labels: string[] } | null {
  if (!visibleThread(db, inboxId, threadId, v)) return null;
  const ids = (prepared(db, `SELECT m.id FROM messages m WHERE m.thread_id = ? AND ${visibleSql('m', v)}`).all(threadId) as { id: number }[]).map((r) => r.id);
  applyLabelEdit(db, ids, edit);
  if (touchesHidden(edit)) bumpSearchGeneration(db);
  // Labels that hide messages may have hidden some of them now; report what stays visible.
  const visible = (prepared(db, `SELECT m.id FROM messages m WHERE m.thread_id = ? AND ${visibleSql('m', v)}`).all(threadId) as { id: number }[]).map((r) => r.id);
  const union = new Set([...labelsOf(db, visible).values()].flat());
  return { thread_id: threadId, labels: [...union].sort() };
}

/** Deletes the whole thread: every message's events are redacted and its search rows removed. Runs inside the caller's transaction. */
export function deleteThread(db: Db, inboxId: string, threadId: string, v: Visibility): boolean {
  if (!visibleThread(db, inboxId, threadId, v)) return false;
  const ids = (prepared(db, 'SELECT id FROM messages WHERE thread_id = ?').all(threadId) as { id: number }[]).map((r) => r.id);
  for (const id of ids) redactMessageEvents(db, id);
  unindexMessages(db, ids);
  prepared(db, 'DELETE FROM threads WHERE thread_id = ?').run(threadId);
  bumpSearchGeneration(db);
  return true;
}

/** An attachment of a visible message of the thread, with that message's id. */
export function threadAttachment(db: Db, inboxId: string, threadId: string, attachmentId: string, v: Visibility): { messageId: string; attachment: AttachmentRow } | null {
  const row = prepared(
    db,
    `SELECT ${ATTACHMENT_COLUMNS}, m.message_id FROM messages m JOIN attachments a ON a.message_rowid = m.id WHERE m.thread_id = ? AND m.inbox_id = ? AND a.attachment_id = ? AND ${visibleSql('m', v)} ORDER BY m.timestamp DESC LIMIT 1`,
  ).get(threadId, inboxId, attachmentId) as (AttachmentRow & { message_id: string }) | undefined;
  if (!row) return null;
  const { message_id, ...attachment } = row;
  return { messageId: message_id, attachment };
}

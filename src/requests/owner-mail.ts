/**
 * The owner web app's mail list (issue 36 §1, docs/web-app.md "Mail"): one list of threads over
 * the inboxes the owner chose, `has:attachment` on top of the usual thread filters, and the
 * unread thread count of every inbox for the sidebar, and svc's authentication verdict of a message. Owner-only routes (src/routes/owner-mail.ts)
 * answered on reader threads like every other list.
 */
import type { Db } from '../db/open.js';
import type { Principal } from '../auth/principal.js';
import type { InboundAuth } from '../edge/sealed.js';
import { notFound } from '../core/errors.js';
import { prepared } from '../db/statements.js';
import type { SearchQuery, ThreadListQuery } from '../mail/query.js';
import { threadListPage, threadSearchPage } from './threads.js';

export interface OwnerMailScope {
  /** The inboxes the list covers; none means every inbox. */
  inbox_ids?: string[];
}
export type OwnerThreadListQuery = ThreadListQuery & OwnerMailScope & { has_attachment?: boolean; exclude_labels?: string[] };
export type OwnerThreadSearchQuery = SearchQuery & OwnerMailScope;

/**
 * The owner narrowed to the chosen inboxes: the instance-wide list then covers exactly those, and
 * a page token (bound to the caller's scope) cannot continue a list of other inboxes.
 */
function narrowed(p: Principal, inboxIds: string[] | undefined): Principal {
  return inboxIds && inboxIds.length > 0 ? { ...p, inboxScope: new Set(inboxIds) } : p;
}

export function ownerThreadListPage(db: Db, p: Principal, q: OwnerThreadListQuery) {
  const { inbox_ids, has_attachment, exclude_labels, ...list } = q;
  return threadListPage(db, narrowed(p, inbox_ids), undefined, list, { hasAttachment: has_attachment === true, lackingLabels: exclude_labels });
}

export function ownerThreadSearchPage(db: Db, p: Principal, q: OwnerThreadSearchQuery) {
  const { inbox_ids, ...search } = q;
  return threadSearchPage(db, narrowed(p, inbox_ids), undefined, search);
}

/**
 * Threads with an unread visible message, per inbox (inboxes without any are absent), from the
 * counts migration 30 keeps: a row per inbox, whatever the home holds.
 */
export function ownerUnreadCounts(db: Db): { inboxes: { inbox_id: string; unread_threads: number }[] } {
  const rows = prepared(db, 'SELECT inbox_id, threads AS unread_threads FROM inbox_unread_threads WHERE threads > 0 ORDER BY inbox_id').all() as { inbox_id: string; unread_threads: number }[];
  return { inboxes: rows };
}

/**
 * svc's own SPF/DKIM/DMARC/ARC verdict of a message (migration 24); null for sent mail and mail
 * received before svc kept it. Unlike an Authentication-Results header, a sender cannot write it.
 */
export function ownerMessageAuth(db: Db, inboxId: string, messageId: string): { message_id: string; authentication: InboundAuth | null } {
  const row = prepared(db, 'SELECT message_id, auth FROM messages WHERE inbox_id = ? AND message_id = ?').get(inboxId, messageId) as { message_id: string; auth: string | null } | undefined;
  if (!row) throw notFound('message');
  return { message_id: row.message_id, authentication: row.auth === null ? null : (JSON.parse(row.auth) as InboundAuth) };
}

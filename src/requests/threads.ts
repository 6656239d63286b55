/**
 * A caller's requests on threads (spec §4.4), checked and answered in one place so REST
 * (src/routes/threads.ts) and MCP (src/mcp/tools.ts) behave the same. Each thread request has
 * an inbox-scoped form (inbox id given) and an instance-wide one (resolved within the caller's
 * scope). Order of checks: resource in scope (else 404) → permission (403) → hidden labels.
 * Each write is one transaction opened here.
 */
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../auth/access.js';
import type { Permission } from '../auth/permissions.js';
import { notFound } from '../core/errors.js';
import { searchGeneration } from '../core/pagination.js';
import { inScope, type Principal } from '../auth/principal.js';
import { issueDownloadUrl } from '../auth/downloads.js';
import { labelEdit, listVisibility, readVisibility } from '../mail/labels.js';
import { keysetPage, queryList, scopeInboxes, timeBounds, type SearchQuery, type ThreadListQuery, type ThreadPageQuery } from '../mail/query.js';
import { searchThreads } from '../mail/search.js';
import { attachmentShape } from '../mail/serialize.js';
import { attachmentReading } from '../mail/attachment-text.js';
import type { ExtractText } from '../attachment-text/on-receive.js';
import { deleteThread, getThread, listThreads, threadAttachment, threadInbox, updateThreadLabels } from '../mail/threads.js';

/** Where a thread is looked for: one inbox (the inbox-scoped form) or the caller's whole scope. */
export interface ThreadTarget {
  inbox_id?: string;
  thread_id: string;
}

/** The inboxes a list or search covers: the given inbox, or every inbox in the caller's scope. */
function inboxesFor(db: Db, p: Principal, inboxId: string | undefined): string[] {
  if (inboxId !== undefined) return [inboxFor(db, p, inboxId, 'message_read').inbox_id];
  requirePermission(p, 'message_read');
  return scopeInboxes(db, p);
}

/** The inbox holding the thread, after the scope (404) and permission (403) checks. */
export function threadScope(db: Db, p: Principal, target: ThreadTarget, permission: Permission): string {
  if (target.inbox_id !== undefined) return inboxFor(db, p, target.inbox_id, permission).inbox_id;
  const inboxId = threadInbox(db, target.thread_id);
  if (inboxId === null || !inScope(p, inboxId)) throw notFound('thread');
  requirePermission(p, permission);
  return inboxId;
}

const formOf = (inboxId: string | undefined) => (inboxId === undefined ? 'instance' : 'inbox');

/** Filters only the owner's mail list has (src/requests/owner-mail.ts). */
export interface OwnerListFilters {
  hasAttachment?: boolean;
  lackingLabels?: string[];
}

/** One page of threads with the list filters; the body of `GET .../threads`. */
export function threadListPage(db: Db, p: Principal, inboxId: string | undefined, q: ThreadListQuery, owner: OwnerListFilters = {}) {
  const inboxIds = inboxesFor(db, p, inboxId);
  const visibility = listVisibility(p, q);
  const filters = {
    ...timeBounds(q),
    labels: queryList(q.labels),
    senders: queryList(q.senders),
    recipients: queryList(q.recipients),
    subject: queryList(q.subject),
    ...(owner.hasAttachment ? { hasAttachment: true } : {}),
    ...(owner.lackingLabels && owner.lackingLabels.length > 0 ? { lackingLabels: owner.lackingLabels } : {}),
  };
  const { page, respond } = keysetPage(
    db,
    {
      // `.2`: the cursor's tie-break is the thread id since migration 38 (a row id before), so an older token is stale.
      route: `threads.list.${formOf(inboxId)}.2`,
      filters: { inbox: inboxId ?? '*', ...filters, ascending: q.ascending === true, excluded: visibility.excluded.join(',') },
      principal: p,
    },
    q,
  );
  const { items, next } = listThreads(db, inboxIds, filters, visibility, page);
  return respond('threads', items, next);
}

/** One page of full-text search results; the body of `GET .../threads/search`. */
export function threadSearchPage(db: Db, p: Principal, inboxId: string | undefined, q: SearchQuery) {
  const inboxIds = inboxesFor(db, p, inboxId);
  const bounds = timeBounds(q);
  const { page, respond } = keysetPage(
    db,
    { route: `threads.search.${formOf(inboxId)}`, filters: { inbox: inboxId ?? '*', q: q.q, ...bounds }, principal: p, generation: searchGeneration(db) },
    q,
  );
  const { items, next } = searchThreads(db, { q: q.q, inboxIds, ...bounds, limit: page.limit, cursor: page.cursor });
  return respond('threads', items, next);
}

/** A thread with one page of its messages; the body of `GET .../threads/{thread_id}`. */
export function readThread(db: Db, p: Principal, target: ThreadTarget, q: ThreadPageQuery) {
  const inboxId = threadScope(db, p, target, 'message_read');
  const { page, token } = keysetPage(db, { route: 'threads.get', filters: { thread: target.thread_id }, principal: p }, q);
  const found = getThread(db, inboxId, target.thread_id, readVisibility(p), page);
  if (!found) throw notFound('thread');
  const next = token(found.next);
  return { ...found.thread, ...(next ? { next_page_token: next } : {}) };
}

/** Adds and removes labels on every message of a thread; `{thread_id, labels}`. */
export function editThreadLabels(db: Db, p: Principal, target: ThreadTarget, add: string | string[] | null | undefined, remove: string | string[] | null | undefined) {
  const inboxId = threadScope(db, p, target, 'message_update');
  const edit = labelEdit(p, add, remove);
  const result = db.transaction(() => updateThreadLabels(db, inboxId, target.thread_id, readVisibility(p), edit))();
  if (!result) throw notFound('thread');
  return result;
}

/** Deletes a thread and everything in it, permanently. */
export function removeThread(db: Db, p: Principal, target: ThreadTarget): void {
  const inboxId = threadScope(db, p, target, 'message_delete');
  if (!db.transaction(() => deleteThread(db, inboxId, target.thread_id, readVisibility(p)))()) throw notFound('thread');
}

/**
 * An attachment of a message in the thread with a signed download URL on `origin`; an OAuth
 * token's URL keeps its audience (spec §4.7, src/auth/downloads.ts).
 */
export async function threadAttachmentDownload(db: Db, p: Principal, target: ThreadTarget, attachmentId: string, origin: string, extract: ExtractText) {
  const inboxId = threadScope(db, p, target, 'message_read');
  const found = threadAttachment(db, inboxId, target.thread_id, attachmentId, readVisibility(p));
  if (!found) throw notFound('attachment');
  const link = issueDownloadUrl(p, origin, { kind: 'attachment', inboxId, messageId: found.messageId, attachmentId: found.attachment.attachment_id });
  const reading = await attachmentReading(db, found.attachment.message_rowid, found.attachment.attachment_id, extract);
  return { ...attachmentShape(found.attachment), ...link, ...reading };
}

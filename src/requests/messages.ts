/**
 * A caller's requests on the messages of one inbox (spec §4.5, read side and label edits),
 * checked and answered in one place so REST (src/routes/messages.ts) and MCP behave the same.
 * Checks: inbox in scope (404) → permission (403) → hidden labels; each write is one transaction
 * opened here.
 */
import type { Db } from '../db/open.js';
import { inboxFor } from '../auth/access.js';
import { issueDownloadUrl } from '../auth/downloads.js';
import { notFound } from '../core/errors.js';
import { searchGeneration } from '../core/pagination.js';
import type { Principal } from '../auth/principal.js';
import { labelEdit, listVisibility, readVisibility } from '../mail/labels.js';
import { batchGetMessages, deleteMessage, getMessage, listMessages, messageAttachment, updateMessageLabels, visibleMessage } from '../mail/messages.js';
import { keysetPage, queryList, timeBounds, type MessageListQuery, type SearchQuery } from '../mail/query.js';
import { searchMessages } from '../mail/search.js';
import { attachmentShape } from '../mail/serialize.js';
import { attachmentReading } from '../mail/attachment-text.js';
import type { ExtractText } from '../attachment-text/on-receive.js';

/** Most messages one batch-get reads: bounds the answer's size (each message carries its bodies). */
export const MAX_BATCH_GET = 500;
/** Most messages one batch-update edits: bounds the write transaction's length. */
export const MAX_BATCH_UPDATE = 50;

type LabelArgument = string | string[] | null | undefined;

/** One page of an inbox's messages with the list filters; the body of `GET .../messages`. */
export function messageListPage(db: Db, p: Principal, inboxId: string, q: MessageListQuery) {
  const inbox = inboxFor(db, p, inboxId, 'message_read');
  const visibility = listVisibility(p, q);
  const filters = { ...timeBounds(q), labels: queryList(q.labels), from: queryList(q.from), to: queryList(q.to), subject: queryList(q.subject) };
  const { page, respond } = keysetPage(
    db,
    { route: 'messages.list', filters: { inbox: inbox.inbox_id, ...filters, ascending: q.ascending === true, excluded: visibility.excluded.join(',') }, principal: p },
    q,
  );
  const { items, next } = listMessages(db, inbox.inbox_id, filters, visibility, page);
  return respond('messages', items, next);
}

/** One page of full-text search results in an inbox; the body of `GET .../messages/search`. */
export function messageSearchPage(db: Db, p: Principal, inboxId: string, q: SearchQuery) {
  const inbox = inboxFor(db, p, inboxId, 'message_read');
  const bounds = timeBounds(q);
  const { page, respond } = keysetPage(db, { route: 'messages.search', filters: { inbox: inbox.inbox_id, q: q.q, ...bounds }, principal: p, generation: searchGeneration(db) }, q);
  const { items, next } = searchMessages(db, { q: q.q, inboxIds: [inbox.inbox_id], ...bounds, limit: page.limit, cursor: page.cursor });
  return respond('messages', items, next);
}

/** One message with its bodies; hidden mail needs the matching `label_*_read`. */
export function readMessage(db: Db, p: Principal, inboxId: string, messageId: string) {
  const inbox = inboxFor(db, p, inboxId, 'message_read');
  const message = getMessage(db, inbox.inbox_id, messageId, readVisibility(p));
  if (!message) throw notFound('message');
  return message;
}

/** Adds and removes labels on one message; `{message_id, labels}`. */
export function editMessageLabels(db: Db, p: Principal, inboxId: string, messageId: string, add: LabelArgument, remove: LabelArgument) {
  const inbox = inboxFor(db, p, inboxId, 'message_update');
  const edit = labelEdit(p, add, remove);
  const [updated] = db.transaction(() => updateMessageLabels(db, inbox.inbox_id, [messageId], readVisibility(p), edit))();
  if (!updated) throw notFound('message');
  return updated;
}

/** Several messages by id, the visible ones only; `{count, limit, messages}`. */
export function batchGetMessagesFor(db: Db, p: Principal, inboxId: string, messageIds: string[]) {
  const inbox = inboxFor(db, p, inboxId, 'message_read');
  const messages = batchGetMessages(db, inbox.inbox_id, messageIds, readVisibility(p));
  return { count: messages.length, limit: MAX_BATCH_GET, messages };
}

/** One label edit on several messages; `{count, limit, updates}` for the messages found. */
export function batchEditMessageLabels(db: Db, p: Principal, inboxId: string, messageIds: string[], add: LabelArgument, remove: LabelArgument) {
  const inbox = inboxFor(db, p, inboxId, 'message_update');
  const edit = labelEdit(p, add, remove);
  const updates = db.transaction(() => updateMessageLabels(db, inbox.inbox_id, messageIds, readVisibility(p), edit))();
  return { count: updates.length, limit: MAX_BATCH_UPDATE, updates };
}

/** Deletes one message permanently; hidden mail is not found without its `label_*_read`. */
export function removeMessage(db: Db, p: Principal, inboxId: string, messageId: string): void {
  const inbox = inboxFor(db, p, inboxId, 'message_delete');
  if (!db.transaction(() => deleteMessage(db, inbox.inbox_id, messageId, readVisibility(p)))()) throw notFound('message');
}

/** A signed download URL on `origin` for a message's raw MIME, with its size. */
export function rawMessageDownload(db: Db, p: Principal, inboxId: string, messageId: string, origin: string) {
  const inbox = inboxFor(db, p, inboxId, 'message_read');
  const found = visibleMessage(db, inbox.inbox_id, messageId, readVisibility(p));
  if (!found) throw notFound('message');
  const link = issueDownloadUrl(p, origin, { kind: 'raw', inboxId: inbox.inbox_id, messageId: found.messageId });
  return { message_id: found.messageId, size: found.size, ...link };
}

/**
 * An attachment of one message with a signed download URL on `origin`; an OAuth token's URL keeps
 * its audience (spec §4.7, src/auth/downloads.ts).
 */
export async function messageAttachmentDownload(db: Db, p: Principal, inboxId: string, messageId: string, attachmentId: string, origin: string, extract: ExtractText) {
  const inbox = inboxFor(db, p, inboxId, 'message_read');
  const found = messageAttachment(db, inbox.inbox_id, messageId, attachmentId, readVisibility(p));
  if (!found) throw notFound('attachment');
  const link = issueDownloadUrl(p, origin, { kind: 'attachment', inboxId: inbox.inbox_id, messageId: found.messageId, attachmentId: found.attachment.attachment_id });
  const reading = await attachmentReading(db, found.attachment.message_rowid, found.attachment.attachment_id, extract);
  return { ...attachmentShape(found.attachment), ...link, ...reading };
}

/**
 * Draft storage: every SQL statement on `drafts` and `draft_attachments`, and the draft events
 * (`draft.*`, payload `{inbox_id, draft_id, timestamp, message_id?, thread_id?}`, never content).
 * Writes run inside the caller's transaction unless they say otherwise; every write moves
 * `updated_at` strictly forward (NEXT_UPDATED_AT), because it is the version the owner approves.
 */
import type { Db } from '../../db/open.js';
import { uuidv7 } from '../../db/ids.js';
import { appendEvent } from '../../events/log.js';
import type { Cursor } from '../../core/pagination.js';
import { outgoingAttachment, type Composition, type OutgoingAttachment, type StoredAttachmentRow } from '../compose.js';
import type { PageRequest } from '../messages.js';
import { stableAttachmentId } from '../store.js';
import { prepared } from '../../db/statements.js';
import { draftTransition, nextDraftStatus, type DraftStatus } from './states.js';
import type { Draft, DraftItem } from './schemas.js';
import { type DraftRow, type DraftAttachmentRow, draftShape, draftItemShape, json } from './shapes.js';

export function draftRow(db: Db, inboxId: string, draftId: string): DraftRow | null {
  return (prepared(db, 'SELECT rowid, * FROM drafts WHERE inbox_id = ? AND draft_id = ?').get(inboxId, draftId) as DraftRow | undefined) ?? null;
}

export function draftAttachments(db: Db, draftId: string): DraftAttachmentRow[] {
  return prepared(db, 'SELECT attachment_id, filename, content_type, content_disposition, content_id, size FROM draft_attachments WHERE draft_id = ? ORDER BY position').all(draftId) as DraftAttachmentRow[];
}

export function draftAttachmentContents(db: Db, draftId: string, except: ReadonlySet<string> = new Set()): OutgoingAttachment[] {
  const rows = prepared(db, 'SELECT attachment_id, filename, content_type, content_disposition, content_id, content FROM draft_attachments WHERE draft_id = ? ORDER BY position').all(
    draftId,
  ) as (StoredAttachmentRow & { attachment_id: string })[];
  return rows.filter((r) => !except.has(r.attachment_id)).map(outgoingAttachment);
}

export function readDraft(db: Db, inboxId: string, draftId: string): Draft | null {
  const row = draftRow(db, inboxId, draftId);
  return row ? draftShape(row, draftAttachments(db, row.draft_id)) : null;
}

export interface NewDraft {
  inboxId: string;
  clientId?: string | null;
  composition: Composition;
  inReplyTo?: string | null;
  forwardOf?: string | null;
  replyAll?: boolean;
  references?: string[];
  sendAt?: string | null;
  status: DraftStatus;
  approved: boolean;
  createdBy: string;
}

/** Inserts a draft and its attachments. Runs inside the caller's transaction. */
export function insertDraft(db: Db, d: NewDraft): DraftRow {
  const draftId = uuidv7();
  const now = new Date().toISOString();
  const c = d.composition;
  prepared(
    db,
    `INSERT INTO drafts (draft_id, inbox_id, client_id, to_addresses, cc_addresses, bcc_addresses, reply_to, subject, text, html, headers, labels,
       in_reply_to, forward_of, reply_all, refs, send_at, send_status, approved, created_by, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    draftId,
    d.inboxId,
    d.clientId ?? null,
    json(c.to.map((r) => r.display)),
    json(c.cc.map((r) => r.display)),
    json(c.bcc.map((r) => r.display)),
    json(c.replyTo.map((r) => r.display)),
    c.subject,
    c.text,
    c.html,
    Object.keys(c.headers).length ? JSON.stringify(c.headers) : null,
    JSON.stringify([...new Set(c.labels)]),
    d.inReplyTo ?? null,
    d.forwardOf ?? null,
    d.replyAll ? 1 : 0,
    json(d.references),
    d.sendAt ?? null,
    d.status,
    d.approved ? 1 : 0,
    d.createdBy,
    now,
    now,
  );
  addDraftAttachments(db, draftId, c.attachments);
  return draftRow(db, d.inboxId, draftId)!;
}

export function addDraftAttachments(db: Db, draftId: string, attachments: readonly OutgoingAttachment[]): void {
  const start = (prepared(db, 'SELECT coalesce(max(position), -1) + 1 AS p FROM draft_attachments WHERE draft_id = ?').get(draftId) as { p: number }).p;
  const insert = prepared(
    db,
    'INSERT INTO draft_attachments (draft_id, attachment_id, position, filename, content_type, content_disposition, content_id, size, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  attachments.forEach((a, i) => insert.run(draftId, stableAttachmentId(`${draftId}/${uuidv7()}`, start + i), start + i, a.filename, a.contentType, a.contentDisposition, a.contentId, a.content.byteLength, a.content));
}

/** Appends a `draft.*` event for the draft as it now stands; returns its seq. */
export function draftEvent(
  db: Db,
  eventType: `draft.${'created' | 'approval_required' | 'approved' | 'rejected' | 'sent'}`,
  row: Pick<DraftRow, 'inbox_id' | 'draft_id' | 'message_id' | 'thread_id'> & Partial<Pick<DraftRow, 'guard_findings'>>,
): number {
  const payload = {
    inbox_id: row.inbox_id,
    draft_id: row.draft_id,
    timestamp: new Date().toISOString(),
    ...(row.message_id ? { message_id: row.message_id, thread_id: row.thread_id } : {}),
    // Why the guarded policy asks the owner (src/mail/guard.ts); never a secret, only where and what.
    ...(eventType === 'draft.approval_required' && row.guard_findings ? { guard_findings: JSON.parse(row.guard_findings) as unknown } : {}),
  };
  return appendEvent(db, { eventType, inboxId: row.inbox_id, payloadKey: 'draft', payload }).seq;
}

/**
 * `updated_at = <this>` with the current time as its one parameter. `updated_at` is the draft's
 * version (the owner approves the version they read), so every write moves it strictly forward:
 * to now, or 1 ms past the previous value when the clock has not moved on (or went back).
 */
export const NEXT_UPDATED_AT = "max(?, strftime('%Y-%m-%dT%H:%M:%fZ', updated_at, '+0.001 seconds'))";

export function setDraftStatus(db: Db, draftId: string, status: DraftStatus, fields: { reason?: string | null; messageId?: string; threadId?: string; approved?: boolean } = {}): void {
  prepared(
    db,
    `UPDATE drafts SET send_status = ?, send_reason = ?, message_id = coalesce(?, message_id), thread_id = coalesce(?, thread_id),
       approved = coalesce(?, approved), updated_at = ${NEXT_UPDATED_AT} WHERE draft_id = ?`,
  ).run(status, fields.reason ?? null, fields.messageId ?? null, fields.threadId ?? null, fields.approved === undefined ? null : fields.approved ? 1 : 0, new Date().toISOString(), draftId);
}

/**
 * Records why the guarded policy held the draft (null: it did not, or a clean edit since). Runs
 * inside the caller's transaction, beside the write that changed the draft's state.
 */
export function setGuardFindings(db: Db, draftId: string, findings: readonly { detector: string; detail: string }[] | null): void {
  prepared(db, 'UPDATE drafts SET guard_findings = ? WHERE draft_id = ?').run(findings && findings.length ? JSON.stringify(findings) : null, draftId);
}

export function draftByClientId(db: Db, inboxId: string, clientId: string): DraftRow | null {
  return (prepared(db, 'SELECT rowid, * FROM drafts WHERE inbox_id = ? AND client_id = ?').get(inboxId, clientId) as DraftRow | undefined) ?? null;
}

/** The draft by id alone, for the instance-wide routes; the caller checks its inbox is in scope. */
export function draftById(db: Db, draftId: string): DraftRow | null {
  return (prepared(db, 'SELECT rowid, * FROM drafts WHERE draft_id = ?').get(draftId) as DraftRow | undefined) ?? null;
}

/** A patched draft as a whole: content, labels, schedule and state (the policy decided them). */
export interface DraftRewrite {
  to: readonly string[];
  cc: readonly string[];
  bcc: readonly string[];
  replyTo: readonly string[] | null;
  subject: string | null;
  text: string | null;
  html: string | null;
  labels: readonly string[];
  sendAt: string | null;
  status: DraftStatus;
  reason: string | null;
  approved: boolean;
}

/** Writes a patched draft and moves its version on. Runs inside the caller's transaction. */
export function rewriteDraft(db: Db, draftId: string, d: DraftRewrite): void {
  prepared(
    db,
    `UPDATE drafts SET to_addresses = ?, cc_addresses = ?, bcc_addresses = ?, reply_to = ?, subject = ?, text = ?, html = ?, labels = ?, send_at = ?,
       send_status = ?, send_reason = ?, approved = ?, updated_at = ${NEXT_UPDATED_AT} WHERE draft_id = ?`,
  ).run(json(d.to), json(d.cc), json(d.bcc), json(d.replyTo), d.subject, d.text, d.html, JSON.stringify(d.labels), d.sendAt, d.status, d.reason, d.approved ? 1 : 0, new Date().toISOString(), draftId);
}

/** Removes the draft's attachments with these ids; ids it does not have are ignored. */
export function removeDraftAttachments(db: Db, draftId: string, attachmentIds: ReadonlySet<string>): void {
  if (attachmentIds.size === 0) return;
  const remove = prepared(db, 'DELETE FROM draft_attachments WHERE draft_id = ? AND attachment_id = ?');
  for (const id of attachmentIds) remove.run(draftId, id);
}

export function deleteDraft(db: Db, inboxId: string, draftId: string): boolean {
  return prepared(db, 'DELETE FROM drafts WHERE inbox_id = ? AND draft_id = ?').run(inboxId, draftId).changes > 0;
}

export interface DraftFilters {
  before?: string;
  after?: string;
  labels?: string[];
  /** Only drafts in one of these states. */
  sendStatus?: DraftStatus[];
}

/** Drafts of the given inboxes ('all': every inbox) by last update, keyset-paged on [updated_at, rowid]. */
export function listDrafts(db: Db, inboxIds: readonly string[] | 'all', filters: DraftFilters, page: PageRequest): { items: DraftItem[]; next: Cursor | null } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (inboxIds !== 'all') {
    where.push('d.inbox_id IN (SELECT value FROM json_each(?))');
    params.push(JSON.stringify(inboxIds));
  }
  if (filters.before) {
    where.push('d.updated_at < ?');
    params.push(filters.before);
  }
  if (filters.after) {
    where.push('d.updated_at > ?');
    params.push(filters.after);
  }
  for (const label of filters.labels ?? []) {
    where.push('EXISTS (SELECT 1 FROM json_each(d.labels) WHERE value = ?)');
    params.push(label);
  }
  if (filters.sendStatus) {
    where.push('d.send_status IN (SELECT value FROM json_each(?))');
    params.push(JSON.stringify(filters.sendStatus));
  }
  const [cmp, dir] = page.ascending ? ['>', 'ASC'] : ['<', 'DESC'];
  if (page.cursor) {
    where.push(`d.updated_at ${cmp}= ? AND (d.updated_at ${cmp} ? OR d.rowid ${cmp} ?)`);
    params.push(page.cursor[0], page.cursor[0], page.cursor[1]);
  }
  const rows = prepared(db, `SELECT d.rowid, d.* FROM drafts d ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY d.updated_at ${dir}, d.rowid ${dir} LIMIT ?`).all(
    ...params,
    page.limit + 1,
  ) as DraftRow[];
  const more = rows.length > page.limit;
  if (more) rows.length = page.limit;
  const byDraft = new Map<string, DraftAttachmentRow[]>();
  const attachmentRows = prepared(
    db,
    'SELECT draft_id, attachment_id, filename, content_type, content_disposition, content_id, size FROM draft_attachments WHERE draft_id IN (SELECT value FROM json_each(?)) ORDER BY draft_id, position',
  ).all(JSON.stringify(rows.map((r) => r.draft_id))) as (DraftAttachmentRow & { draft_id: string })[];
  for (const { draft_id, ...a } of attachmentRows) byDraft.set(draft_id, [...(byDraft.get(draft_id) ?? []), a]);
  const last = rows[rows.length - 1];
  return { items: rows.map((r) => draftItemShape(r, byDraft.get(r.draft_id) ?? [])), next: more ? [last.updated_at, last.rowid] : null };
}

export function draftAttachment(db: Db, draftId: string, attachmentId: string): DraftAttachmentRow | null {
  return (
    (prepared(db, 'SELECT attachment_id, filename, content_type, content_disposition, content_id, size FROM draft_attachments WHERE draft_id = ? AND attachment_id = ?').get(draftId, attachmentId) as
      | DraftAttachmentRow
      | undefined) ?? null
  );
}

/** The bytes of a draft attachment, for a download URL. */
export function draftAttachmentFile(db: Db, inboxId: string, draftId: string, attachmentId: string): { filename: string | null; content_type: string | null; content: Buffer } | null {
  return (
    (prepared(
      db,
      'SELECT a.filename, a.content_type, a.content FROM draft_attachments a JOIN drafts d ON d.draft_id = a.draft_id WHERE d.inbox_id = ? AND d.draft_id = ? AND a.attachment_id = ?',
    ).get(inboxId, draftId, attachmentId) as { filename: string | null; content_type: string | null; content: Buffer } | undefined) ?? null
  );
}



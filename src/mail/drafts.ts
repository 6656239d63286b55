/**
 * Drafts (spec §2.5, §4.6; states in ARCHITECTURE §5): `draft` → `pending_approval` →
 * (`scheduled` | `sending`) → `sent`; `rejected` and `failed` are final. Storage, the response
 * shapes, and the draft events (`draft.*`, payload `{inbox_id, draft_id, timestamp, message_id?,
 * thread_id?}`, never content).
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { uuidv7 } from '../db/ids.js';
import { appendEvent } from '../events/log.js';
import type { Composition, OutgoingAttachment } from './compose.js';
import { Attachment } from './serialize.js';
import { previewOf, stableAttachmentId } from './store.js';
import { extractText } from './extract.js';
import { prepared } from './statements.js';

export const DRAFT_STATUSES = ['draft', 'pending_approval', 'scheduled', 'sending', 'sent', 'rejected', 'failed'] as const;
export type DraftStatus = (typeof DRAFT_STATUSES)[number];

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Strings = Type.Array(Type.String());

const draftItemFields = {
  inbox_id: Type.String(),
  draft_id: Type.String(),
  labels: Strings,
  to: Nullable(Strings),
  cc: Nullable(Strings),
  bcc: Nullable(Strings),
  subject: Nullable(Type.String()),
  preview: Nullable(Type.String()),
  attachments: Type.Array(Attachment),
  in_reply_to: Nullable(Type.String()),
  forward_of: Nullable(Type.String()),
  send_status: Type.String(),
  send_reason: Nullable(Type.String()),
  send_at: Nullable(Type.String()),
  message_id: Nullable(Type.String()),
  thread_id: Nullable(Type.String()),
  updated_at: Type.String(),
};
export const DraftItem = Type.Object(draftItemFields);
export type DraftItem = Static<typeof DraftItem>;
export const Draft = Type.Object({
  ...draftItemFields,
  client_id: Nullable(Type.String()),
  reply_to: Nullable(Strings),
  text: Nullable(Type.String()),
  html: Nullable(Type.String()),
  reply_all: Type.Boolean(),
  references: Nullable(Strings),
  created_at: Type.String(),
});
export type Draft = Static<typeof Draft>;

export interface DraftRow {
  rowid: number;
  draft_id: string;
  inbox_id: string;
  client_id: string | null;
  to_addresses: string | null;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  reply_to: string | null;
  subject: string | null;
  text: string | null;
  html: string | null;
  headers: string | null;
  labels: string;
  in_reply_to: string | null;
  forward_of: string | null;
  reply_all: number;
  refs: string | null;
  send_at: string | null;
  send_status: DraftStatus;
  send_reason: string | null;
  approved: number;
  created_by: string | null;
  message_id: string | null;
  thread_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface DraftAttachmentRow {
  attachment_id: string;
  filename: string | null;
  content_type: string | null;
  content_disposition: string | null;
  content_id: string | null;
  size: number;
}

const list = (json: string | null): string[] | null => (json ? (JSON.parse(json) as string[]) : null);
const json = (items: readonly string[] | null | undefined): string | null => (items && items.length ? JSON.stringify(items) : null);

export function draftRow(db: Db, inboxId: string, draftId: string): DraftRow | null {
  return (prepared(db, 'SELECT rowid, * FROM drafts WHERE inbox_id = ? AND draft_id = ?').get(inboxId, draftId) as DraftRow | undefined) ?? null;
}

export function draftAttachments(db: Db, draftId: string): DraftAttachmentRow[] {
  return prepared(db, 'SELECT attachment_id, filename, content_type, content_disposition, content_id, size FROM draft_attachments WHERE draft_id = ? ORDER BY position').all(draftId) as DraftAttachmentRow[];
}

export function draftAttachmentContents(db: Db, draftId: string): OutgoingAttachment[] {
  const rows = prepared(db, 'SELECT filename, content_type, content_disposition, content_id, content FROM draft_attachments WHERE draft_id = ? ORDER BY position').all(draftId) as {
    filename: string | null;
    content_type: string | null;
    content_disposition: string | null;
    content_id: string | null;
    content: Buffer;
  }[];
  return rows.map((r) => ({
    filename: r.filename,
    contentType: r.content_type,
    contentDisposition: r.content_disposition === 'inline' || r.content_disposition === 'attachment' ? r.content_disposition : null,
    contentId: r.content_id,
    content: r.content,
  }));
}

const attachmentShape = (a: DraftAttachmentRow) => ({
  attachment_id: a.attachment_id,
  filename: a.filename,
  size: a.size,
  content_type: a.content_type,
  content_disposition: a.content_disposition,
  content_id: a.content_id,
});

export function draftItemShape(row: DraftRow, attachments: DraftAttachmentRow[]): DraftItem {
  return {
    inbox_id: row.inbox_id,
    draft_id: row.draft_id,
    labels: (JSON.parse(row.labels) as string[]).slice().sort(),
    to: list(row.to_addresses),
    cc: list(row.cc_addresses),
    bcc: list(row.bcc_addresses),
    subject: row.subject,
    preview: previewOf(extractText(row.text)),
    attachments: attachments.map(attachmentShape),
    in_reply_to: row.in_reply_to,
    forward_of: row.forward_of,
    send_status: row.send_status,
    send_reason: row.send_reason,
    send_at: row.send_at,
    message_id: row.message_id,
    thread_id: row.thread_id,
    updated_at: row.updated_at,
  };
}

export function draftShape(row: DraftRow, attachments: DraftAttachmentRow[]): Draft {
  return {
    ...draftItemShape(row, attachments),
    client_id: row.client_id,
    reply_to: list(row.reply_to),
    text: row.text,
    html: row.html,
    reply_all: row.reply_all === 1,
    references: list(row.refs),
    created_at: row.created_at,
  };
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
export function draftEvent(db: Db, eventType: `draft.${'created' | 'approval_required' | 'approved' | 'rejected' | 'sent'}`, row: Pick<DraftRow, 'inbox_id' | 'draft_id' | 'message_id' | 'thread_id'>): number {
  const payload = {
    inbox_id: row.inbox_id,
    draft_id: row.draft_id,
    timestamp: new Date().toISOString(),
    ...(row.message_id ? { message_id: row.message_id, thread_id: row.thread_id } : {}),
  };
  return appendEvent(db, { eventType, inboxId: row.inbox_id, payloadKey: 'draft', payload }).seq;
}

export function setDraftStatus(db: Db, draftId: string, status: DraftStatus, fields: { reason?: string | null; messageId?: string; threadId?: string; approved?: boolean } = {}): void {
  prepared(
    db,
    `UPDATE drafts SET send_status = ?, send_reason = ?, message_id = coalesce(?, message_id), thread_id = coalesce(?, thread_id),
       approved = coalesce(?, approved), updated_at = ? WHERE draft_id = ?`,
  ).run(status, fields.reason ?? null, fields.messageId ?? null, fields.threadId ?? null, fields.approved === undefined ? null : fields.approved ? 1 : 0, new Date().toISOString(), draftId);
}

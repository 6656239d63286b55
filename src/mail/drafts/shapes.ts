/**
 * A draft as stored (its row, with JSON list columns) and as answered: the Draft and DraftItem
 * shapes made from the row. No SQL here. Their schemas are in ./schemas.ts, apart so that the
 * scheduled-drafts loop, which sends drafts but checks no request, does not load typebox (a few
 * MiB per thread).
 */
import { attachmentShape } from '../serialize.js';
import { previewOf } from '../store.js';
import { extractText } from '../extract.js';
import { SDK_SEND_STATUS_OF, type DraftStatus } from './states.js';
import type { Draft, DraftItem } from './schemas.js';

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
  /** JSON `[{detector, detail}]`: why the guarded policy held the draft for the owner (src/mail/guard.ts). */
  guard_findings: string | null;
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

/** A reason the outbound guard held a draft (src/mail/guard.ts GuardFinding). */
export interface GuardFindingShape {
  detector: string;
  detail: string;
}

export const list = (json: string | null): string[] | null => (json ? (JSON.parse(json) as string[]) : null);
export const json = (items: readonly string[] | null | undefined): string | null => (items && items.length ? JSON.stringify(items) : null);

export function draftItemShape(row: DraftRow, attachments: DraftAttachmentRow[]): DraftItem {
  const sdkSendStatus = SDK_SEND_STATUS_OF[row.send_status];
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
    ...(sdkSendStatus === null ? {} : { send_status: sdkSendStatus }),
    state: row.send_status,
    send_reason: row.send_reason,
    // Why it waits for the owner (or why the owner refused it); once it moved on, the reasons no longer describe it.
    guard_findings: row.guard_findings && (row.send_status === 'pending_approval' || row.send_status === 'rejected') ? (JSON.parse(row.guard_findings) as GuardFindingShape[]) : null,
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
    headers: row.headers ? (JSON.parse(row.headers) as Record<string, string>) : null,
    reply_all: row.reply_all === 1,
    references: list(row.refs),
    created_at: row.created_at,
  };
}

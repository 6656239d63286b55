/**
 * Stored rows → API shapes. Field names and shapes follow the AgentMail SDK (Message,
 * MessageItem, ThreadItem, Thread, Attachment) where the spec shows no field list. The shapes'
 * schemas are in ./serialize-schemas.ts, apart so that the loops, which store and send mail but
 * answer no request, do not load typebox (a few MiB per thread).
 */
import type { Attachment, Message, MessageItem, ThreadItem } from './serialize-schemas.js';
import { readExtract } from './extracted-span.js';
import { actionsOf, contentVerdict } from './extract.js';
import type { ManipulationVerdict } from './manipulation.js';
import type { ExtractedActions } from './actions.js';

export type { Attachment, Message, MessageItem, Thread, ThreadItem } from './serialize-schemas.js';

/**
 * Each message row carries its labels (joined by U+001F, which labels never contain) and whether
 * it has attachments, so a page of messages is one query plus one for the few with attachments.
 */
const MESSAGE_EXTRAS =
  '(SELECT group_concat(l.label, char(31)) FROM message_labels l WHERE l.message_rowid = m.id) AS label_list, EXISTS (SELECT 1 FROM attachments xa WHERE xa.message_rowid = m.id) AS has_attachments';
/** The columns a thread summary needs. */
export const THREAD_MESSAGE_COLUMNS = `m.id, m.thread_id, m.message_id, m.from_address, m.to_addresses, m.cc_addresses, m.bcc_addresses, m.subject, m.preview, m.size, m.timestamp, m.direction, ${MESSAGE_EXTRAS}`;
/** The messages columns read for items (never the bodies). */
export const MESSAGE_ITEM_COLUMNS = `${THREAD_MESSAGE_COLUMNS}, m.inbox_id, m.reply_to, m.headers, m.in_reply_to, m.refs, m.send_status, m.send_reason, m.created_at, m.updated_at`;
export const MESSAGE_BODY_COLUMNS = 'm.text, m.html, m.extracted_text, m.extracted_from, m.extracted_length, m.extracted_html, m.actions, m.manipulation';

export interface ThreadMessageRow {
  id: number;
  thread_id: string;
  message_id: string;
  from_address: string | null;
  to_addresses: string;
  cc_addresses: string | null;
  bcc_addresses: string | null;
  subject: string | null;
  preview: string | null;
  size: number;
  timestamp: string;
  direction: 'inbound' | 'outbound';
  label_list: string | null;
  has_attachments: 0 | 1;
}

export interface MessageRow extends ThreadMessageRow {
  inbox_id: string;
  reply_to: string | null;
  headers: string | null;
  in_reply_to: string | null;
  refs: string | null;
  send_status: string | null;
  send_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface MessageBodyRow extends MessageRow {
  text: string | null;
  html: string | null;
  extracted_text: string | null;
  /** Set when extracted_text is stored as a span of text (migration 14, src/mail/extracted-span.ts). */
  extracted_from?: number | null;
  extracted_length?: number | null;
  extracted_html: string | null;
  /** extractActions() JSON of a received message (migration 15); NULL for sent mail and mail stored before. */
  actions: string | null;
  /** The manipulation verdict JSON of a received message (migration 16); NULL for sent mail and mail stored before. */
  manipulation: string | null;
}

/** The row's labels, sorted. */
export const rowLabels = (row: ThreadMessageRow): string[] => (row.label_list === null ? [] : row.label_list.split('\u001f').sort());

export const ATTACHMENT_COLUMNS = 'a.message_rowid, a.attachment_id, a.filename, a.content_type, a.content_disposition, a.content_id, a.size';

export interface AttachmentRow {
  message_rowid: number;
  attachment_id: string;
  filename: string | null;
  content_type: string | null;
  content_disposition: string | null;
  content_id: string | null;
  size: number;
}

export interface ThreadRow {
  thread_id: string;
  inbox_id: string;
  subject: string | null;
  created_at: string;
  updated_at: string;
}

const list = (json: string | null): string[] | null => (json === null ? null : (JSON.parse(json) as string[]));

/** Message and draft attachment rows alike (a draft row has no message_rowid). */
export function attachmentShape(a: Omit<AttachmentRow, 'message_rowid'>): Attachment {
  return { attachment_id: a.attachment_id, filename: a.filename, size: a.size, content_type: a.content_type, content_disposition: a.content_disposition, content_id: a.content_id };
}

export function messageItemShape(row: MessageRow, attachments: AttachmentRow[]): MessageItem {
  return {
    inbox_id: row.inbox_id,
    thread_id: row.thread_id,
    message_id: row.message_id,
    labels: rowLabels(row),
    timestamp: row.timestamp,
    from: row.from_address ?? '',
    reply_to: list(row.reply_to),
    to: list(row.to_addresses) ?? [],
    cc: list(row.cc_addresses),
    bcc: list(row.bcc_addresses),
    subject: row.subject,
    preview: row.preview,
    attachments: attachments.map(attachmentShape),
    in_reply_to: row.in_reply_to,
    references: list(row.refs),
    headers: row.headers === null ? {} : (JSON.parse(row.headers) as Record<string, string>),
    size: row.size,
    updated_at: row.updated_at,
    created_at: row.created_at,
  };
}

/**
 * The codes and action links of a received message (issue 20 §2): as stored at receipt, or, for
 * mail stored before migration 15, found now from the stored subject, bodies and headers (reads
 * run in reader threads, and the work is bounded). Sent mail has none: null.
 */
function extractedOf(row: MessageBodyRow): ExtractedActions | null {
  if (row.direction !== 'inbound') return null;
  if (row.actions) return JSON.parse(row.actions) as ExtractedActions;
  const headers = row.headers === null ? {} : (JSON.parse(row.headers) as Record<string, string>);
  return actionsOf(row.subject, row.text, row.html, headers);
}

/**
 * The advisory manipulation verdict of a received message (issue 20 §3): as stored at receipt, or,
 * for mail stored before migration 16, the content checks run now (the sender check needs the
 * inbox's correspondents as they were, so older mail goes without it). Sent mail: null.
 */
function manipulationOf(row: MessageBodyRow): ManipulationVerdict | null {
  if (row.direction !== 'inbound') return null;
  if (row.manipulation) return JSON.parse(row.manipulation) as ManipulationVerdict;
  return contentVerdict(row.subject, row.text, row.html);
}

export function messageShape(row: MessageBodyRow, attachments: AttachmentRow[]): Message {
  return {
    ...messageItemShape(row, attachments),
    text: row.text,
    html: row.html,
    extracted_text: readExtract(row),
    extracted_html: row.extracted_html,
    extracted: extractedOf(row),
    manipulation: manipulationOf(row),
    send_status: row.send_status,
    send_reason: row.send_reason,
  };
}

/** The bare lower-cased address of a display form (`Name <a@b>` or `a@b`). */
export function bareAddress(display: string): string {
  const m = /<([^<>]*)>\s*$/.exec(display);
  return (m ? m[1] : display).trim().toLowerCase();
}

/** RFC 5322 display form; names with specials are quoted. */
export function displayAddress(a: { address: string; name: string }): string {
  const name = a.name.replace(/[\r\n]+/g, ' ').trim();
  if (!name) return a.address;
  const quoted = /[()<>[\]:;@\\,."]/.test(name) ? `"${name.replace(/(["\\])/g, '\\$1')}"` : name;
  return `${quoted} <${a.address}>`;
}

function uniqueByAddress(displays: Iterable<string>): string[] {
  const seen = new Map<string, string>();
  for (const d of displays) {
    const key = bareAddress(d);
    if (key && !seen.has(key)) seen.set(key, d);
  }
  return [...seen.values()];
}

const later = (a: string | null, b: string) => (a === null || b > a ? b : a);

/**
 * A thread summary from its visible messages (oldest first) and their attachments.
 * Thread labels are the union of the messages' labels; the subject is the first message's.
 */
export function threadItemShape(thread: ThreadRow, messages: ThreadMessageRow[], attachments: Map<number, AttachmentRow[]>): ThreadItem {
  const labelSet = new Set<string>();
  let received: string | null = null;
  let sent: string | null = null;
  let size = 0;
  for (const m of messages) {
    for (const l of rowLabels(m)) labelSet.add(l);
    if (m.direction === 'inbound') received = later(received, m.timestamp);
    else sent = later(sent, m.timestamp);
    size += m.size;
  }
  const last = messages[messages.length - 1];
  return {
    inbox_id: thread.inbox_id,
    thread_id: thread.thread_id,
    labels: [...labelSet].sort(),
    timestamp: last ? last.timestamp : thread.updated_at,
    received_timestamp: received,
    sent_timestamp: sent,
    senders: uniqueByAddress(messages.flatMap((m) => (m.from_address ? [m.from_address] : []))),
    recipients: uniqueByAddress(messages.flatMap((m) => [...(list(m.to_addresses) ?? []), ...(list(m.cc_addresses) ?? []), ...(list(m.bcc_addresses) ?? [])])),
    subject: messages.find((m) => m.subject !== null)?.subject ?? null,
    preview: last?.preview ?? null,
    attachments: messages.flatMap((m) => (attachments.get(m.id) ?? []).map(attachmentShape)),
    last_message_id: last?.message_id ?? '',
    message_count: messages.length,
    size,
    updated_at: thread.updated_at,
    created_at: thread.created_at,
  };
}

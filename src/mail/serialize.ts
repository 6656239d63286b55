/**
 * Stored rows → API shapes. Field names and shapes follow the AgentMail SDK (Message,
 * MessageItem, ThreadItem, Thread, Attachment) where the spec shows no field list. The schemas
 * double as fastify response schemas, so responses are serialized by a compiled serializer.
 */
import { Type, type Static, type TSchema } from 'typebox';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const Strings = Type.Array(Type.String());

export const Attachment = Type.Object({
  attachment_id: Type.String(),
  filename: Nullable(Type.String()),
  size: Type.Integer(),
  content_type: Nullable(Type.String()),
  content_disposition: Nullable(Type.String()),
  content_id: Nullable(Type.String()),
});
export type Attachment = Static<typeof Attachment>;

const messageItemFields = {
  inbox_id: Type.String(),
  thread_id: Type.String(),
  message_id: Type.String(),
  labels: Strings,
  timestamp: Type.String(),
  from: Type.String(),
  reply_to: Nullable(Strings),
  to: Strings,
  cc: Nullable(Strings),
  bcc: Nullable(Strings),
  subject: Nullable(Type.String()),
  preview: Nullable(Type.String()),
  attachments: Type.Array(Attachment),
  in_reply_to: Nullable(Type.String()),
  references: Nullable(Strings),
  headers: Type.Record(Type.String(), Type.String()),
  size: Type.Integer(),
  updated_at: Type.String(),
  created_at: Type.String(),
};
export const MessageItem = Type.Object(messageItemFields);
export type MessageItem = Static<typeof MessageItem>;

const messageBodyFields = {
  text: Nullable(Type.String()),
  html: Nullable(Type.String()),
  extracted_text: Nullable(Type.String()),
  extracted_html: Nullable(Type.String()),
  send_status: Nullable(Type.String()),
  send_reason: Nullable(Type.String()),
};
export const Message = Type.Object({ ...messageItemFields, ...messageBodyFields });
export type Message = Static<typeof Message>;

const threadItemFields = {
  inbox_id: Type.String(),
  thread_id: Type.String(),
  labels: Strings,
  timestamp: Type.String(),
  received_timestamp: Nullable(Type.String()),
  sent_timestamp: Nullable(Type.String()),
  senders: Strings,
  recipients: Strings,
  subject: Nullable(Type.String()),
  preview: Nullable(Type.String()),
  attachments: Type.Array(Attachment),
  last_message_id: Type.String(),
  message_count: Type.Integer(),
  size: Type.Integer(),
  updated_at: Type.String(),
  created_at: Type.String(),
};
export const ThreadItem = Type.Object(threadItemFields);
export type ThreadItem = Static<typeof ThreadItem>;

export const Thread = Type.Object({
  ...threadItemFields,
  count: Type.Integer(),
  limit: Type.Integer(),
  next_page_token: Type.Optional(Type.String()),
  messages: Type.Array(Message),
});
export type Thread = Static<typeof Thread>;

export const LabelsResult = {
  message: Type.Object({ message_id: Type.String(), labels: Strings }),
  thread: Type.Object({ thread_id: Type.String(), labels: Strings }),
};

export const DownloadLink = Type.Object({ download_url: Type.String(), expires_at: Type.String() });
export const AttachmentDownload = Type.Object({ ...Attachment.properties, ...DownloadLink.properties });
/** The raw MIME link with AgentMail's RawMessageResponse fields: which message, and its size in bytes. */
export const RawMessageDownload = Type.Object({ message_id: Type.String(), size: Type.Integer(), ...DownloadLink.properties });


// ---- rows ----

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
export const MESSAGE_BODY_COLUMNS = 'm.text, m.html, m.extracted_text, m.extracted_html';

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
  extracted_html: string | null;
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
  rid: number;
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

export function messageShape(row: MessageBodyRow, attachments: AttachmentRow[]): Message {
  return {
    ...messageItemShape(row, attachments),
    text: row.text,
    html: row.html,
    extracted_text: row.extracted_text,
    extracted_html: row.extracted_html,
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

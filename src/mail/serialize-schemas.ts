/**
 * The API shapes of messages, threads and attachments as typebox schemas (src/mail/serialize.ts
 * makes them from stored rows). The schemas double as fastify response schemas, so responses are
 * serialized by a compiled serializer. Apart so that the loops, which store and send mail but
 * answer no request, do not load typebox (a few MiB per thread).
 */
import { AttachmentTextFields } from '../attachment-text/schemas.js';
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
  /** One-time codes and action links of a received message (issue 20 §2, docs/extraction.md); null for sent mail. */
  extracted: Nullable(
    Type.Object({
      codes: Type.Array(Type.Object({ value: Type.String(), context: Type.String() })),
      links: Type.Array(Type.Object({ url: Type.String(), text: Nullable(Type.String()), kind: Type.String() })),
    }),
  ),
  /** The advisory manipulation verdict of a received message (issue 20 §3, docs/manipulation.md); null for sent mail. */
  manipulation: Nullable(Type.Object({ suspicious: Type.Boolean(), findings: Type.Array(Type.Object({ reason: Type.String(), detail: Type.String() })) })),
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
/** A received or sent attachment's answer: the download and svc's extension fields, its text (docs/attachments.md). */
export const MessageAttachmentDownload = Type.Object({ ...AttachmentDownload.properties, ...AttachmentTextFields });
/** The raw MIME link with AgentMail's RawMessageResponse fields: which message, and its size in bytes. */
export const RawMessageDownload = Type.Object({ message_id: Type.String(), size: Type.Integer(), ...DownloadLink.properties });

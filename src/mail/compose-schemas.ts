/**
 * The schemas of the composing payload (spec §2.4) for send, reply, reply-all, forward and drafts;
 * src/mail/compose.ts holds the rules they carry. Apart so that the loops, which send composed
 * mail but check no request, do not load typebox (a few MiB per thread).
 */
import { Type, type Static } from 'typebox';
import { LabelList } from './label-schemas.js';
import { MAX_ADDRESS_CHARS, MAX_ADDRESS_ITEMS, MAX_ADDRESS_LIST_CHARS, MAX_ATTACHMENT_BASE64_CHARS, MAX_ATTACHMENTS_INPUT, MAX_BODY_CHARS, MAX_SUBJECT_INPUT } from './limits.js';

/** A string or a list of strings; each string may hold one address or several, comma-separated. */
export const Addresses = Type.Union([Type.String({ maxLength: MAX_ADDRESS_LIST_CHARS }), Type.Array(Type.String({ maxLength: MAX_ADDRESS_CHARS }), { maxItems: MAX_ADDRESS_ITEMS })]);
const NullableString = (maxLength: number) => Type.Optional(Type.Union([Type.String({ maxLength }), Type.Null()]));

export const AttachmentInput = Type.Object(
  {
    filename: NullableString(255),
    content_type: NullableString(255),
    content_disposition: NullableString(32),
    content_id: NullableString(250),
    content: NullableString(MAX_ATTACHMENT_BASE64_CHARS),
    url: NullableString(4096),
  },
  { additionalProperties: false },
);
export type AttachmentInput = Static<typeof AttachmentInput>;

const common = {
  reply_to: Type.Optional(Type.Union([Addresses, Type.Null()])),
  text: NullableString(MAX_BODY_CHARS),
  html: NullableString(MAX_BODY_CHARS),
  attachments: Type.Optional(Type.Union([Type.Array(AttachmentInput, { maxItems: MAX_ATTACHMENTS_INPUT }), Type.Null()])),
  headers: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String(), { maxProperties: 1000 }), Type.Null()])),
  labels: Type.Optional(Type.Union([LabelList, Type.Null()])),
  track_opens: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
};
const recipients = {
  to: Type.Optional(Type.Union([Addresses, Type.Null()])),
  cc: Type.Optional(Type.Union([Addresses, Type.Null()])),
  bcc: Type.Optional(Type.Union([Addresses, Type.Null()])),
};

export const SendBody = Type.Object({ ...recipients, subject: NullableString(MAX_SUBJECT_INPUT), ...common }, { additionalProperties: false });
export const ReplyBody = Type.Object({ ...recipients, reply_all: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])), ...common }, { additionalProperties: false });
export const ReplyAllBody = Type.Object({ ...common }, { additionalProperties: false });
export type SendBody = Static<typeof SendBody>;
export type ReplyBody = Static<typeof ReplyBody>;
export type ReplyAllBody = Static<typeof ReplyAllBody>;

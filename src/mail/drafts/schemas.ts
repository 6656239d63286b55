/**
 * The schemas of a draft: the Draft and DraftItem answers (spec §2.5, with the svc `state`
 * extension) and the create and patch bodies. Its stored row and the functions that make the
 * answers from it are in ./shapes.ts, apart so that the scheduled-drafts loop, which sends drafts
 * but checks no request, does not load typebox (a few MiB per thread).
 */
import { Type, type Static } from 'typebox';
import { Addresses, AttachmentInput } from '../compose-schemas.js';
import { LabelList } from '../label-schemas.js';
import { Attachment } from '../serialize-schemas.js';
import { MAX_ATTACHMENTS_INPUT, MAX_BODY_CHARS, MAX_DRAFT_REFERENCES, MAX_MESSAGE_ID_INPUT, MAX_SUBJECT_INPUT } from '../limits.js';
import { PART_MISMATCH_REASONS, type PartMismatchReason } from '../part-mismatch.js';
import { DRAFT_STATUSES, type DraftStatus, SDK_DRAFT_SEND_STATUSES, type SdkDraftSendStatus } from './states.js';

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
  send_status: Type.Optional(Type.Unsafe<SdkDraftSendStatus>(Type.Union(SDK_DRAFT_SEND_STATUSES.map((s) => Type.Literal(s))))),
  /** svc extension: the full state, including those the SDK's `send_status` cannot name. */
  state: Type.Unsafe<DraftStatus>(Type.Union(DRAFT_STATUSES.map((s) => Type.Literal(s)))),
  send_reason: Nullable(Type.String()),
  /** svc extension: why the `guarded` send policy held this draft for the owner (docs/guarded.md); null when it did not. */
  guard_findings: Nullable(Type.Array(Type.Object({ detector: Type.String(), detail: Type.String() }))),
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
  /** svc extension: the caller-supplied headers it sends with (an approval-policy send keeps its `headers`); null when none. */
  headers: Nullable(Type.Record(Type.String(), Type.String())),
  reply_all: Type.Boolean(),
  references: Nullable(Strings),
  created_at: Type.String(),
  /** svc extension, on a read of one draft: the `From:` it would be sent with now (the inbox's display name and address). */
  from: Type.Optional(Type.String()),
  /**
   * svc extension, on a read of one draft: why its HTML and text parts may not say the same thing,
   * or show what the owner's view of them cannot (src/mail/part-mismatch.ts); empty when they agree.
   */
  part_mismatch: Type.Optional(Type.Array(Type.Object({ reason: Type.Unsafe<PartMismatchReason>(Type.Union(PART_MISMATCH_REASONS.map((r) => Type.Literal(r)))), detail: Type.String() }))),
});
export type Draft = Static<typeof Draft>;

const NullableString = (maxLength: number) => Type.Optional(Type.Union([Type.String({ maxLength }), Type.Null()]));
const OptionalAddresses = Type.Optional(Type.Union([Addresses, Type.Null()]));
const Attachments = Type.Optional(Type.Union([Type.Array(AttachmentInput, { maxItems: MAX_ATTACHMENTS_INPUT }), Type.Null()]));

/** The content fields create and patch share. Recipient fields take a list, or a single string. */
const contentFields = {
  to: OptionalAddresses,
  cc: OptionalAddresses,
  bcc: OptionalAddresses,
  reply_to: OptionalAddresses,
  subject: NullableString(MAX_SUBJECT_INPUT),
  text: NullableString(MAX_BODY_CHARS),
  html: NullableString(MAX_BODY_CHARS),
};

/** Creation fields (spec §2.5). Recipient fields take a list, or a single string. */
export const CreateDraftBody = Type.Object(
  {
    ...contentFields,
    attachments: Attachments,
    labels: Type.Optional(Type.Union([LabelList, Type.Null()])),
    in_reply_to: NullableString(MAX_MESSAGE_ID_INPUT),
    forward_of: NullableString(MAX_MESSAGE_ID_INPUT),
    reply_all: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    references: Type.Optional(Type.Union([Type.Array(Type.String({ maxLength: MAX_MESSAGE_ID_INPUT }), { maxItems: MAX_DRAFT_REFERENCES }), Type.Null()])),
    send_at: NullableString(64),
    client_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreateDraftBody = Static<typeof CreateDraftBody>;

/** Patch fields (spec §2.5): content fields (`null` clears), attachment and label edits, `send_at`. */
export const UpdateDraftBody = Type.Object(
  {
    ...contentFields,
    add_attachments: Attachments,
    remove_attachments: Type.Optional(Type.Union([Type.Array(Type.String({ maxLength: 128 }), { maxItems: MAX_ATTACHMENTS_INPUT }), Type.Null()])),
    add_labels: Type.Optional(Type.Union([LabelList, Type.Null()])),
    remove_labels: Type.Optional(Type.Union([LabelList, Type.Null()])),
    send_at: NullableString(64),
  },
  { additionalProperties: false },
);
export type UpdateDraftBody = Static<typeof UpdateDraftBody>;

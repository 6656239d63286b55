/**
 * The request and response schemas of the inbox routes (src/mail/inboxes.ts holds the store).
 * Apart so that the loops, which read inboxes but check no request, do not load typebox (a few
 * MiB per thread).
 */
import { Type, type Static } from 'typebox';
import { CLIENT_ID_MAX, DISPLAY_NAME_MAX, DOMAIN_MAX, METADATA_KEY_MAX, METADATA_MAX_KEYS, METADATA_STRING_MAX, USERNAME_MAX } from './inbox-limits.js';

/** No control characters: the display name ends up in a From header. */
const DisplayName = Type.String({ maxLength: DISPLAY_NAME_MAX, pattern: '^[^\\u0000-\\u001f\\u007f]*$' });
const MetadataValue = Type.Union([Type.String({ maxLength: METADATA_STRING_MAX }), Type.Number(), Type.Boolean()]);
const metadataOptions = { maxProperties: METADATA_MAX_KEYS, propertyNames: { minLength: 1, maxLength: METADATA_KEY_MAX } };
const Metadata = Type.Record(Type.String(), MetadataValue, metadataOptions);
/** On patch a `null` value removes the key. */
const MetadataPatch = Type.Record(Type.String(), Type.Union([MetadataValue, Type.Null()]), metadataOptions);
export const InboxStatus = Type.Union([Type.Literal('active'), Type.Literal('paused')]);

export const CreateInboxBody = Type.Object(
  {
    // null is accepted as "omitted": the AgentMail SDK may send explicit nulls.
    domain: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: DOMAIN_MAX }), Type.Null()])),
    username: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: USERNAME_MAX }), Type.Null()])),
    display_name: Type.Optional(Type.Union([DisplayName, Type.Null()])),
    status: Type.Optional(InboxStatus),
    metadata: Type.Optional(Type.Union([Metadata, Type.Null()])),
    client_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: CLIENT_ID_MAX }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type CreateInboxBody = Static<typeof CreateInboxBody>;

export const UpdateInboxBody = Type.Object(
  {
    display_name: Type.Optional(Type.Union([DisplayName, Type.Null()])),
    status: Type.Optional(InboxStatus),
    metadata: Type.Optional(Type.Union([MetadataPatch, Type.Null()])),
  },
  { additionalProperties: false },
);
export type UpdateInboxBody = Static<typeof UpdateInboxBody>;

export const InboxResponse = Type.Object({
  pod_id: Type.String(),
  inbox_id: Type.String(),
  email: Type.String(),
  username: Type.String(),
  domain: Type.String(),
  display_name: Type.Union([Type.String(), Type.Null()]),
  status: InboxStatus,
  metadata: Type.Union([Metadata, Type.Null()]),
  client_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type InboxResponse = Static<typeof InboxResponse>;
export type MetadataObject = Static<typeof Metadata>;

/**
 * The one schema module for ids and common request and response parts (issue 18): path
 * parameters, the page query, the list page and the send answer, declared once so every route
 * (and the MCP tools derived from the same schemas) accepts the same ids with the same limits.
 * Limits here bound input before any lookup; what an id must look like beyond its length is the
 * lookup's business (a wrong id is `404 not_found`, spec §7.1).
 */
import { Type, type Static, type TArray, type TInteger, type TOptional, type TSchema, type TString } from 'typebox';
import { MAX_LIMIT } from './pagination.js';
import { MAX_MESSAGE_ID } from '../mail/limits.js';


/** Query fields every list route accepts. */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT })),
  page_token: Type.Optional(Type.String({ maxLength: 2048 })),
  ascending: Type.Optional(Type.Boolean()),
};
/** An inbox id is its address: 254 octets at most (RFC 5321), with room for un-normalized input. */
export const INBOX_ID_MAX = 320;
/** Thread and draft ids are svc-made UUIDv7s (36 characters); the bound only stops junk early. */
export const RESOURCE_ID_MAX = 64;
/** Attachment ids are svc-made (`att_` and 24 hex digits); the bound only stops junk early. */
export const ATTACHMENT_ID_MAX = 128;
/** A Message-ID is one header line (src/mail/limits.ts, a leaf module of named limits). */
export const MESSAGE_ID_MAX = MAX_MESSAGE_ID;

export const InboxId = Type.String({ minLength: 1, maxLength: INBOX_ID_MAX });
export const ThreadId = Type.String({ maxLength: RESOURCE_ID_MAX });
export const DraftId = Type.String({ maxLength: RESOURCE_ID_MAX });
export const AttachmentId = Type.String({ maxLength: ATTACHMENT_ID_MAX });
export const MessageId = Type.String({ minLength: 1, maxLength: MESSAGE_ID_MAX });

/** `/inboxes/{inbox_id}/...` */
export const InboxParams = Type.Object({ inbox_id: InboxId });
export type InboxParams = Static<typeof InboxParams>;
/** Routes served both inbox-scoped and instance-wide (`/threads`, `/drafts`, `/lists`): the inbox is optional. */
export const ScopeParams = Type.Object({ inbox_id: Type.Optional(InboxId) });
export type ScopeParams = Static<typeof ScopeParams>;

export const MessageParams = Type.Object({ inbox_id: InboxId, message_id: MessageId });
export type MessageParams = Static<typeof MessageParams>;
export const MessageAttachmentParams = Type.Object({ inbox_id: InboxId, message_id: MessageId, attachment_id: AttachmentId });
export type MessageAttachmentParams = Static<typeof MessageAttachmentParams>;

export const ThreadParams = Type.Object({ inbox_id: Type.Optional(InboxId), thread_id: ThreadId });
export type ThreadParams = Static<typeof ThreadParams>;
export const ThreadAttachmentParams = Type.Object({ inbox_id: Type.Optional(InboxId), thread_id: ThreadId, attachment_id: AttachmentId });
export type ThreadAttachmentParams = Static<typeof ThreadAttachmentParams>;

/** A draft read inbox-scoped or instance-wide. */
export const DraftParams = Type.Object({ inbox_id: Type.Optional(InboxId), draft_id: DraftId });
export type DraftParams = Static<typeof DraftParams>;
/** A draft write: always inbox-scoped. */
export const InboxDraftParams = Type.Object({ inbox_id: InboxId, draft_id: DraftId });
export type InboxDraftParams = Static<typeof InboxDraftParams>;
export const DraftAttachmentParams = Type.Object({ inbox_id: Type.Optional(InboxId), draft_id: DraftId, attachment_id: AttachmentId });
export type DraftAttachmentParams = Static<typeof DraftAttachmentParams>;

/** `?limit&page_token&ascending` on its own (routes with no filters). */
export const PageOnlyQuery = Type.Object(PageQuery);
export type PageOnlyQuery = Static<typeof PageOnlyQuery>;

/** Response fields that are null when unset (the spec's nullable fields). */
export const NullableString = Type.Union([Type.String(), Type.Null()]);
export const NullableInteger = Type.Union([Type.Integer(), Type.Null()]);

/** The answer of every send, reply, forward and draft send. */
export const SendResponse = Type.Object({ message_id: Type.String(), thread_id: Type.String() });
export type SendResponse = Static<typeof SendResponse>;
/** The owner's verdict on a `send_unknown` message, as recorded. */
export const ResolveSendResponse = Type.Object({ ...SendResponse.properties, send_status: Type.Union([Type.Literal('sent'), Type.Literal('failed')]) });
export type ResolveSendResponse = Static<typeof ResolveSendResponse>;

/**
 * A list page: `{count, limit, next_page_token?, [key]: items}` (src/core/pagination.ts
 * pageResponse builds it; the token is present only when there is a next page).
 */
export function ListOf<Key extends string, Item extends TSchema>(key: Key, item: Item) {
  const properties = { count: Type.Integer(), limit: Type.Integer(), next_page_token: Type.Optional(Type.String()), [key]: Type.Array(item) };
  // A computed key widens to a string index: restate the literal key so `Static` names the field.
  return Type.Object(properties as ListPageProperties<Key, Item>);
}
type ListPageProperties<Key extends string, Item extends TSchema> = { count: TInteger; limit: TInteger; next_page_token: TOptional<TString> } & { [K in Key]: TArray<Item> };

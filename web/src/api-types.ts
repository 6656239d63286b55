/**
 * The API's bodies as the service declares them: `Static<typeof X>` of its typebox schemas, so a
 * field the service renames or drops breaks this build instead of a page. Type-only re-exports:
 * vite drops them, so nothing server-side enters the bundle.
 */
export type { ApiKeyResponse as ApiKey, CreateApiKeyBody, UpdateApiKeyBody } from '../../src/auth/api-keys';
export type { CreateInboxBody, InboxResponse as Inbox, UpdateInboxBody } from '../../src/mail/inbox-schemas';
export type { Attachment, Message, MessageItem, Thread, ThreadItem } from '../../src/mail/serialize-schemas';
export type { Draft, DraftItem, UpdateDraftBody } from '../../src/mail/drafts/schemas';
export type { CreateWebhookBody, UpdateWebhookBody, WebhookResponse as Webhook } from '../../src/webhooks/webhooks';
export type { ListEntry } from '../../src/mail/list-schemas';
export type { ReplyBody, SendBody } from '../../src/mail/compose-schemas';
export type { QuarantineItem, Rejection } from '../../src/inbound/schemas';
export type { ConsentRequestResponse as ConsentRequest, OAuthClient, OAuthGrant } from '../../src/oauth/schemas';
export type { Domain, DomainItem, DomainPlanResponse as DomainPlan } from '../../src/domains/schemas';
export type { DnsProviderResponse as DnsProviderView } from '../../src/domains/providers/schemas';
export type { Session, SessionResponse, StatusResponse as OwnerStatus } from '../../src/owner/schemas';
export type { RemoteResponse as RemoteView } from '../../src/remote/schemas';
export type { TransportResponse as TransportView } from '../../src/mail/transport';
export type { DoctorCheck, DoctorReport } from '../../src/doctor/schemas';
export type { CreatePodBody, PodResponse as Pod } from '../../src/pods/schemas';

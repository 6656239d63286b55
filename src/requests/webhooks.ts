/**
 * A caller's requests on webhooks (spec §4.9), checked and answered in one place for the
 * instance-wide routes (`/webhooks...`, `inboxId` undefined) and the inbox routes
 * (`/inboxes/{inbox_id}/webhooks...`). Order of checks (ARCHITECTURE §7): the inbox route's inbox
 * in scope (else 404) → permission (403) → the webhook visible to the caller (else 404); what a
 * stranger sends that needs no lookup (a create's URL, a header edit) is checked before the
 * transaction. An inbox-restricted agent may use the instance-wide routes too (the AgentMail SDK's
 * `webhooks.*`): every inbox it names must be in its scope (else 404, src/webhooks/webhooks.ts),
 * it sees only its own webhooks, and delivery filters every event by its scope as it stands then
 * (workers/loops/webhooks.ts). Every write is one transaction opened here; webhook changes emit no
 * event (spec §6.2 has none), so nothing is published.
 */
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../auth/access.js';
import type { Permission } from '../auth/permissions.js';
import type { Principal } from '../auth/principal.js';
import {
  checkHeaderUpdate,
  checkWebhookCreate,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  updateWebhook,
  updateWebhookHeaders,
  webhookHeaderNames,
  type CreateInboxWebhookBody,
  type CreateWebhookBody,
  type UpdateHeadersBody,
  type UpdateWebhookBody,
  type WebhookPageQuery,
  type WebhookResponse,
} from '../webhooks/webhooks.js';

/**
 * The inbox a request addresses after the access checks in house order: on the inbox routes the
 * inbox in scope (404) before the permission (403); instance-wide (null), the permission only, as
 * scope is enforced per inbox the request names and per webhook it reaches.
 */
function webhookInbox(db: Db, p: Principal, inboxId: string | undefined, permission: Permission): string | null {
  if (inboxId === undefined) {
    requirePermission(p, permission);
    return null;
  }
  return inboxFor(db, p, inboxId, permission).inbox_id;
}

/** One page of the caller's webhooks; on the inbox route, that inbox's only. */
export function webhookListPage(db: Db, p: Principal, inboxId: string | undefined, query: WebhookPageQuery): Record<string, unknown> {
  return listWebhooks(db, p, query, webhookInbox(db, p, inboxId, 'webhook_read'));
}

/** Creates a webhook (or returns the one with the same `client_id`); the answer holds its secret. */
export async function createWebhookFor(db: Db, p: Principal, inboxId: string | undefined, body: CreateWebhookBody | CreateInboxWebhookBody): Promise<WebhookResponse> {
  const create = await checkWebhookCreate(db, p, body, webhookInbox(db, p, inboxId, 'webhook_create'));
  return db.transaction(() => createWebhook(db, p, create))();
}

export function readWebhook(db: Db, p: Principal, inboxId: string | undefined, webhookId: string): WebhookResponse {
  return getWebhook(db, p, webhookId, webhookInbox(db, p, inboxId, 'webhook_read'));
}

export function updateWebhookFor(db: Db, p: Principal, inboxId: string | undefined, webhookId: string, patch: UpdateWebhookBody): WebhookResponse {
  const inbox = webhookInbox(db, p, inboxId, 'webhook_update');
  return db.transaction(() => updateWebhook(db, p, webhookId, inbox, patch))();
}

export function deleteWebhookFor(db: Db, p: Principal, inboxId: string | undefined, webhookId: string): void {
  const inbox = webhookInbox(db, p, inboxId, 'webhook_delete');
  db.transaction(() => deleteWebhook(db, p, webhookId, inbox))();
}

/** The names of a webhook's custom headers; values are write-only. */
export function readWebhookHeaderNames(db: Db, p: Principal, inboxId: string | undefined, webhookId: string): { header_names: string[] } {
  return webhookHeaderNames(db, p, webhookId, webhookInbox(db, p, inboxId, 'webhook_read'));
}

export function updateWebhookHeadersFor(db: Db, p: Principal, inboxId: string | undefined, webhookId: string, body: UpdateHeadersBody): void {
  const inbox = webhookInbox(db, p, inboxId, 'webhook_update');
  const change = checkHeaderUpdate(body);
  db.transaction(() => updateWebhookHeaders(db, p, webhookId, inbox, change))();
}

/**
 * Webhooks (spec §4.9): instance-wide `/webhooks...` and per inbox `/inboxes/{inbox_id}/webhooks...`.
 * Order of checks (ARCHITECTURE §7): the inbox route's inbox in scope (else 404) → permission
 * (403) → the webhook visible to the caller (else 404). An inbox-restricted agent may use the
 * instance-wide routes too (the AgentMail SDK's `webhooks.*`): every inbox it names must be in
 * its scope (else 404), it sees only its own webhooks, and delivery filters every event by its
 * scope as it stands then (workers/loops/webhooks.ts).
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { inboxFor, requirePermission } from '../auth/access.js';
import type { Permission } from '../auth/permissions.js';
import { PageQuery } from '../core/pagination.js';
import { ListOf } from '../core/schemas.js';
import type { Principal } from '../auth/principal.js';
import {
  createWebhook,
  CreateInboxWebhookBody,
  CreateWebhookBody,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  updateWebhook,
  UpdateInboxWebhookBody,
  UpdateWebhookBody,
  updateWebhookHeaders,
  UpdateHeadersBody,
  webhookHeaderNames,
  WebhookHeaderNamesResponse,
  WebhookReadResponse,
  WebhookResponse,
} from '../webhooks/webhooks.js';

const InboxId = Type.String({ minLength: 1, maxLength: 320 });
const WebhookId = Type.String({ minLength: 1, maxLength: 64 });
const HookParams = Type.Object({ webhook_id: WebhookId });
const InboxParams = Type.Object({ inbox_id: InboxId });
const InboxHookParams = Type.Object({ inbox_id: InboxId, webhook_id: WebhookId });
const ListQuery = Type.Object(PageQuery);

type ListQuery = Static<typeof ListQuery>;
type HookParams = Static<typeof HookParams>;
type InboxParams = Static<typeof InboxParams>;
type InboxHookParams = Static<typeof InboxHookParams>;

const agent = { auth: 'agent' } as const;

/** The caller of an instance-wide route, holding `permission`; scope is enforced per inbox in src/webhooks/webhooks.ts. */
function instanceWide(request: FastifyRequest, permission: Permission): Principal {
  const p = request.principal!;
  requirePermission(p, permission);
  return p;
}

export const webhookRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;
  /** The inbox route's inbox (scope 404 before the permission 403). */
  const inboxOf = (request: FastifyRequest<{ Params: InboxParams }>, permission: Permission) => inboxFor(db, request.principal!, request.params.inbox_id, permission).inbox_id;

  app.get<{ Querystring: ListQuery }>('/webhooks', { config: agent, schema: { querystring: ListQuery, response: { 200: ListOf('webhooks', WebhookReadResponse) } } }, async (request) =>
    listWebhooks(db, instanceWide(request, 'webhook_read'), request.query, null),
  );
  app.post<{ Body: CreateWebhookBody }>('/webhooks', { config: agent, schema: { body: CreateWebhookBody, response: { 200: WebhookResponse } } }, async (request) =>
    createWebhook(db, instanceWide(request, 'webhook_create'), request.body, null),
  );
  app.get<{ Params: HookParams }>('/webhooks/:webhook_id', { config: agent, schema: { params: HookParams, response: { 200: WebhookReadResponse } } }, async (request) =>
    getWebhook(db, instanceWide(request, 'webhook_read'), request.params.webhook_id, null),
  );
  app.patch<{ Params: HookParams; Body: UpdateWebhookBody }>('/webhooks/:webhook_id', { config: agent, schema: { params: HookParams, body: UpdateWebhookBody, response: { 200: WebhookReadResponse } } }, async (request) =>
    updateWebhook(db, instanceWide(request, 'webhook_update'), request.params.webhook_id, null, request.body),
  );
  app.delete<{ Params: HookParams }>('/webhooks/:webhook_id', { config: agent, schema: { params: HookParams } }, async (request, reply) => {
    deleteWebhook(db, instanceWide(request, 'webhook_delete'), request.params.webhook_id, null);
    return reply.send();
  });
  app.get<{ Params: HookParams }>('/webhooks/:webhook_id/headers', { config: agent, schema: { params: HookParams, response: { 200: WebhookHeaderNamesResponse } } }, async (request) =>
    webhookHeaderNames(db, instanceWide(request, 'webhook_read'), request.params.webhook_id, null),
  );
  app.patch<{ Params: HookParams; Body: UpdateHeadersBody }>('/webhooks/:webhook_id/headers', { config: agent, schema: { params: HookParams, body: UpdateHeadersBody } }, async (request, reply) => {
    updateWebhookHeaders(db, instanceWide(request, 'webhook_update'), request.params.webhook_id, null, request.body);
    return reply.code(204).send();
  });

  app.get<{ Params: InboxParams; Querystring: ListQuery }>('/inboxes/:inbox_id/webhooks', { config: agent, schema: { params: InboxParams, querystring: ListQuery, response: { 200: ListOf('webhooks', WebhookReadResponse) } } }, async (request) => {
    const inbox = inboxOf(request, 'webhook_read');
    return listWebhooks(db, request.principal!, request.query, inbox);
  });
  app.post<{ Params: InboxParams; Body: CreateInboxWebhookBody }>('/inboxes/:inbox_id/webhooks', { config: agent, schema: { params: InboxParams, body: CreateInboxWebhookBody, response: { 200: WebhookResponse } } }, async (request) => {
    const inbox = inboxOf(request, 'webhook_create');
    return createWebhook(db, request.principal!, request.body, inbox);
  });
  app.get<{ Params: InboxHookParams }>('/inboxes/:inbox_id/webhooks/:webhook_id', { config: agent, schema: { params: InboxHookParams, response: { 200: WebhookReadResponse } } }, async (request) => {
    const inbox = inboxOf(request, 'webhook_read');
    return getWebhook(db, request.principal!, request.params.webhook_id, inbox);
  });
  app.patch<{ Params: InboxHookParams; Body: UpdateInboxWebhookBody }>(
    '/inboxes/:inbox_id/webhooks/:webhook_id',
    { config: agent, schema: { params: InboxHookParams, body: UpdateInboxWebhookBody, response: { 200: WebhookReadResponse } } },
    async (request) => {
      const inbox = inboxOf(request, 'webhook_update');
      return updateWebhook(db, request.principal!, request.params.webhook_id, inbox, request.body);
    },
  );
  app.delete<{ Params: InboxHookParams }>('/inboxes/:inbox_id/webhooks/:webhook_id', { config: agent, schema: { params: InboxHookParams } }, async (request, reply) => {
    deleteWebhook(db, request.principal!, request.params.webhook_id, inboxOf(request, 'webhook_delete'));
    return reply.send();
  });
  app.get<{ Params: InboxHookParams }>('/inboxes/:inbox_id/webhooks/:webhook_id/headers', { config: agent, schema: { params: InboxHookParams, response: { 200: WebhookHeaderNamesResponse } } }, async (request) => {
    const inbox = inboxOf(request, 'webhook_read');
    return webhookHeaderNames(db, request.principal!, request.params.webhook_id, inbox);
  });
  app.patch<{ Params: InboxHookParams; Body: UpdateHeadersBody }>(
    '/inboxes/:inbox_id/webhooks/:webhook_id/headers',
    { config: agent, schema: { params: InboxHookParams, body: UpdateHeadersBody } },
    async (request, reply) => {
      updateWebhookHeaders(db, request.principal!, request.params.webhook_id, inboxOf(request, 'webhook_update'), request.body);
      return reply.code(204).send();
    },
  );
};

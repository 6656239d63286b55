/**
 * Webhooks (spec §4.9): instance-wide `/webhooks...` and per inbox `/inboxes/{inbox_id}/webhooks...`.
 * Each route is schema, declared access and one call into src/requests/webhooks.ts, which owns the
 * order of checks (inbox in scope → permission → the webhook visible to the caller) and the
 * transaction; the instance-wide routes pass no inbox.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { InboxId, InboxParams, ListOf, PageQuery, RESOURCE_ID_MAX } from '../core/schemas.js';
import {
  createWebhookFor,
  deleteWebhookFor,
  readWebhook,
  readWebhookHeaderNames,
  updateWebhookFor,
  updateWebhookHeadersFor,
  webhookListPage,
} from '../requests/webhooks.js';
import {
  CreateInboxWebhookBody,
  CreateWebhookBody,
  UpdateHeadersBody,
  UpdateInboxWebhookBody,
  UpdateWebhookBody,
  WebhookHeaderNamesResponse,
  WebhookReadResponse,
  WebhookResponse,
} from '../webhooks/webhooks.js';

const WebhookId = Type.String({ minLength: 1, maxLength: RESOURCE_ID_MAX });
const HookParams = Type.Object({ webhook_id: WebhookId });
const InboxHookParams = Type.Object({ inbox_id: InboxId, webhook_id: WebhookId });
const ListQuery = Type.Object(PageQuery);

type ListQuery = Static<typeof ListQuery>;
type HookParams = Static<typeof HookParams>;
type InboxHookParams = Static<typeof InboxHookParams>;

const agent = { auth: 'agent' } as const;
/** Where mail is pushed to: a browser session must have proved the owner recently (sudo mode). */
const agentSudo = { auth: 'agent', sudo: true } as const;

export const webhookRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  app.get<{ Querystring: ListQuery }>('/webhooks', { config: agent, schema: { querystring: ListQuery, response: { 200: ListOf('webhooks', WebhookReadResponse) } } }, async (request) =>
    webhookListPage(db, request.principal!, undefined, request.query),
  );
  app.post<{ Body: CreateWebhookBody }>('/webhooks', { config: agentSudo, schema: { body: CreateWebhookBody, response: { 200: WebhookResponse } } }, async (request) =>
    createWebhookFor(db, request.principal!, undefined, request.body),
  );
  app.get<{ Params: HookParams }>('/webhooks/:webhook_id', { config: agent, schema: { params: HookParams, response: { 200: WebhookReadResponse } } }, async (request) =>
    readWebhook(db, request.principal!, undefined, request.params.webhook_id),
  );
  app.patch<{ Params: HookParams; Body: UpdateWebhookBody }>('/webhooks/:webhook_id', { config: agentSudo, schema: { params: HookParams, body: UpdateWebhookBody, response: { 200: WebhookReadResponse } } }, async (request) =>
    updateWebhookFor(db, request.principal!, undefined, request.params.webhook_id, request.body),
  );
  app.delete<{ Params: HookParams }>('/webhooks/:webhook_id', { config: agent, schema: { params: HookParams } }, async (request, reply) => {
    deleteWebhookFor(db, request.principal!, undefined, request.params.webhook_id);
    return reply.send();
  });
  app.get<{ Params: HookParams }>('/webhooks/:webhook_id/headers', { config: agent, schema: { params: HookParams, response: { 200: WebhookHeaderNamesResponse } } }, async (request) =>
    readWebhookHeaderNames(db, request.principal!, undefined, request.params.webhook_id),
  );
  app.patch<{ Params: HookParams; Body: UpdateHeadersBody }>('/webhooks/:webhook_id/headers', { config: agent, schema: { params: HookParams, body: UpdateHeadersBody } }, async (request, reply) => {
    updateWebhookHeadersFor(db, request.principal!, undefined, request.params.webhook_id, request.body);
    return reply.code(204).send();
  });

  app.get<{ Params: InboxParams; Querystring: ListQuery }>('/inboxes/:inbox_id/webhooks', { config: agent, schema: { params: InboxParams, querystring: ListQuery, response: { 200: ListOf('webhooks', WebhookReadResponse) } } }, async (request) =>
    webhookListPage(db, request.principal!, request.params.inbox_id, request.query),
  );
  app.post<{ Params: InboxParams; Body: CreateInboxWebhookBody }>('/inboxes/:inbox_id/webhooks', { config: agentSudo, schema: { params: InboxParams, body: CreateInboxWebhookBody, response: { 200: WebhookResponse } } }, async (request) =>
    createWebhookFor(db, request.principal!, request.params.inbox_id, request.body),
  );
  app.get<{ Params: InboxHookParams }>('/inboxes/:inbox_id/webhooks/:webhook_id', { config: agent, schema: { params: InboxHookParams, response: { 200: WebhookReadResponse } } }, async (request) =>
    readWebhook(db, request.principal!, request.params.inbox_id, request.params.webhook_id),
  );
  app.patch<{ Params: InboxHookParams; Body: UpdateInboxWebhookBody }>(
    '/inboxes/:inbox_id/webhooks/:webhook_id',
    { config: agentSudo, schema: { params: InboxHookParams, body: UpdateInboxWebhookBody, response: { 200: WebhookReadResponse } } },
    async (request) => updateWebhookFor(db, request.principal!, request.params.inbox_id, request.params.webhook_id, request.body),
  );
  app.delete<{ Params: InboxHookParams }>('/inboxes/:inbox_id/webhooks/:webhook_id', { config: agent, schema: { params: InboxHookParams } }, async (request, reply) => {
    deleteWebhookFor(db, request.principal!, request.params.inbox_id, request.params.webhook_id);
    return reply.send();
  });
  app.get<{ Params: InboxHookParams }>('/inboxes/:inbox_id/webhooks/:webhook_id/headers', { config: agent, schema: { params: InboxHookParams, response: { 200: WebhookHeaderNamesResponse } } }, async (request) =>
    readWebhookHeaderNames(db, request.principal!, request.params.inbox_id, request.params.webhook_id),
  );
  app.patch<{ Params: InboxHookParams; Body: UpdateHeadersBody }>(
    '/inboxes/:inbox_id/webhooks/:webhook_id/headers',
    { config: agent, schema: { params: InboxHookParams, body: UpdateHeadersBody } },
    async (request, reply) => {
      updateWebhookHeadersFor(db, request.principal!, request.params.inbox_id, request.params.webhook_id, request.body);
      return reply.code(204).send();
    },
  );
};

/**
 * API keys, owner only (spec §4.11): `/api-keys...`, and the same routes under
 * `/inboxes/{inbox_id}/api-keys...`, where the path is the key's scope; all of them also under
 * `/pods/{pod_id}`, where the pod is the key's pod. Each route is schema,
 * declared access and one call into the API key store (src/auth/api-keys.ts), which owns the SQL.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { InboxId, InboxParams, ListOf, PageQuery } from '../core/schemas.js';
import { createApiKey, deleteApiKey, getApiKey, listApiKeys, updateApiKey, type KeyPlace } from '../auth/api-keys.js';
import { ApiKeyResponse, CreateApiKeyBody, CreatedApiKeyResponse, CreateInboxApiKeyBody, UpdateApiKeyBody } from '../auth/api-key-schemas.js';

const ApiKeyId = Type.String({ minLength: 1, maxLength: 64 });
const KeyParams = Type.Object({ api_key_id: ApiKeyId });
const InboxKeyParams = Type.Object({ inbox_id: InboxId, api_key_id: ApiKeyId });
const ListQuery = Type.Object(PageQuery);

type ListQuery = Static<typeof ListQuery>;
type KeyParams = Static<typeof KeyParams>;
type InboxKeyParams = Static<typeof InboxKeyParams>;

const owner = { auth: 'owner' } as const;

/** The path's inbox, and the pod the caller was narrowed to on `/pods/{pod_id}/api-keys...` (src/routes/pods.ts). */
const placeOf = (request: FastifyRequest, inboxId: string | null = null): KeyPlace => ({ inboxId, podId: request.principal!.pod?.podId ?? null });
/** Minting or widening a key: a browser session must have proved the owner recently (sudo mode). */
const ownerSudo = { auth: 'owner', sudo: true } as const;
/** Response schemas: the serializer sends only these fields, a safety net for the key's secret and hash. */
const one = { 200: ApiKeyResponse };
const created = { 200: CreatedApiKeyResponse };
const page = { 200: ListOf('api_keys', ApiKeyResponse) };

export const apiKeyRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  app.get<{ Querystring: ListQuery }>('/api-keys', { config: owner, schema: { querystring: ListQuery, response: page } }, async (request) =>
    listApiKeys(db, request.principal!, request.query, placeOf(request)),
  );
  app.post<{ Body: CreateApiKeyBody }>('/api-keys', { config: ownerSudo, schema: { body: CreateApiKeyBody, response: created } }, async (request) => createApiKey(db, request.body, placeOf(request)));
  app.get<{ Params: KeyParams }>('/api-keys/:api_key_id', { config: owner, schema: { params: KeyParams, response: one } }, async (request) => getApiKey(db, request.params.api_key_id, placeOf(request)));
  app.patch<{ Params: KeyParams; Body: UpdateApiKeyBody }>('/api-keys/:api_key_id', { config: ownerSudo, schema: { params: KeyParams, body: UpdateApiKeyBody, response: one } }, async (request) =>
    updateApiKey(db, request.params.api_key_id, placeOf(request), request.body),
  );
  app.delete<{ Params: KeyParams }>('/api-keys/:api_key_id', { config: owner, schema: { params: KeyParams } }, async (request, reply) => {
    deleteApiKey(db, request.params.api_key_id, placeOf(request));
    return reply.send();
  });

  app.get<{ Params: InboxParams; Querystring: ListQuery }>('/inboxes/:inbox_id/api-keys', { config: owner, schema: { params: InboxParams, querystring: ListQuery, response: page } }, async (request) =>
    listApiKeys(db, request.principal!, request.query, placeOf(request, request.params.inbox_id)),
  );
  app.post<{ Params: InboxParams; Body: CreateInboxApiKeyBody }>(
    '/inboxes/:inbox_id/api-keys',
    { config: ownerSudo, schema: { params: InboxParams, body: CreateInboxApiKeyBody, response: created } },
    async (request) => createApiKey(db, request.body, placeOf(request, request.params.inbox_id)),
  );
  app.get<{ Params: InboxKeyParams }>('/inboxes/:inbox_id/api-keys/:api_key_id', { config: owner, schema: { params: InboxKeyParams, response: one } }, async (request) =>
    getApiKey(db, request.params.api_key_id, placeOf(request, request.params.inbox_id)),
  );
  app.patch<{ Params: InboxKeyParams; Body: UpdateApiKeyBody }>(
    '/inboxes/:inbox_id/api-keys/:api_key_id',
    { config: ownerSudo, schema: { params: InboxKeyParams, body: UpdateApiKeyBody, response: one } },
    async (request) => updateApiKey(db, request.params.api_key_id, placeOf(request, request.params.inbox_id), request.body),
  );
  app.delete<{ Params: InboxKeyParams }>('/inboxes/:inbox_id/api-keys/:api_key_id', { config: owner, schema: { params: InboxKeyParams } }, async (request, reply) => {
    deleteApiKey(db, request.params.api_key_id, placeOf(request, request.params.inbox_id));
    return reply.send();
  });
};

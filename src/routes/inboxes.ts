/** Inboxes (spec §4.3): owner or agents with the inbox_* permissions, limited to their scope. */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { inboxFor, requirePermission } from '../auth/access.js';
import { PageQuery } from '../core/pagination.js';
import { routeToLocalEdge } from '../mail/inbox-routing.js';
import { createInbox, CreateInboxBody, deleteInbox, inboxResponse, listInboxes, updateInbox, UpdateInboxBody } from '../mail/inboxes.js';

const InboxParams = Type.Object({ inbox_id: Type.String({ minLength: 1, maxLength: 320 }) });
const ListQuery = Type.Object(PageQuery);
const SearchQuery = Type.Object({ ...PageQuery, q: Type.String({ minLength: 1, maxLength: 320 }) });

type Params = Static<typeof InboxParams>;

export const inboxRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  app.get<{ Querystring: Static<typeof ListQuery> }>('/inboxes', { config: { auth: 'agent' }, schema: { querystring: ListQuery } }, async (request) => {
    requirePermission(request.principal!, 'inbox_read');
    return listInboxes(db, request.principal!, request.query);
  });

  app.post<{ Body: CreateInboxBody }>('/inboxes', { config: { auth: 'agent' }, schema: { body: CreateInboxBody } }, async (request) => {
    const created = createInbox(db, request.principal!, request.body);
    // Mail sent right after this answer must find the inbox routed (issue 17 §1).
    await routeToLocalEdge(db);
    return inboxResponse(created);
  });

  app.get<{ Querystring: Static<typeof SearchQuery> }>('/inboxes/search', { config: { auth: 'agent' }, schema: { querystring: SearchQuery } }, async (request) => {
    requirePermission(request.principal!, 'inbox_read');
    const { q, ...page } = request.query;
    return listInboxes(db, request.principal!, page, q);
  });

  app.get<{ Params: Params }>('/inboxes/:inbox_id', { config: { auth: 'agent' }, schema: { params: InboxParams } }, async (request) =>
    inboxResponse(inboxFor(db, request.principal!, request.params.inbox_id, 'inbox_read')),
  );

  app.patch<{ Params: Params; Body: UpdateInboxBody }>(
    '/inboxes/:inbox_id',
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: UpdateInboxBody } },
    async (request) => inboxResponse(updateInbox(db, inboxFor(db, request.principal!, request.params.inbox_id, 'inbox_update'), request.body)),
  );

  app.delete<{ Params: Params }>('/inboxes/:inbox_id', { config: { auth: 'agent' }, schema: { params: InboxParams } }, async (request, reply) => {
    deleteInbox(db, inboxFor(db, request.principal!, request.params.inbox_id, 'inbox_delete').inbox_id);
    return reply.send();
  });
};

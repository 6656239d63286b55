/** Inboxes (spec §4.3): owner or agents with the inbox_* permissions, limited to their scope. */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { PageQuery } from '../core/pagination.js';
import { CreateInboxBody, UpdateInboxBody } from '../mail/inboxes.js';
import { createInboxFor, deleteInboxFor, inboxListPage, inboxSearchPage, readInbox, updateInboxFor } from '../requests/inboxes.js';

const InboxParams = Type.Object({ inbox_id: Type.String({ minLength: 1, maxLength: 320 }) });
const ListQuery = Type.Object(PageQuery);
const SearchQuery = Type.Object({ ...PageQuery, q: Type.String({ minLength: 1, maxLength: 320 }) });

type Params = Static<typeof InboxParams>;

export const inboxRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  app.get<{ Querystring: Static<typeof ListQuery> }>('/inboxes', { config: { auth: 'agent' }, schema: { querystring: ListQuery } }, async (request) =>
    inboxListPage(db, request.principal!, request.query),
  );

  app.post<{ Body: CreateInboxBody }>('/inboxes', { config: { auth: 'agent' }, schema: { body: CreateInboxBody } }, async (request) =>
    createInboxFor(app.svc, request.principal!, request.body),
  );

  app.get<{ Querystring: Static<typeof SearchQuery> }>('/inboxes/search', { config: { auth: 'agent' }, schema: { querystring: SearchQuery } }, async (request) =>
    inboxSearchPage(db, request.principal!, request.query),
  );

  app.get<{ Params: Params }>('/inboxes/:inbox_id', { config: { auth: 'agent' }, schema: { params: InboxParams } }, async (request) =>
    readInbox(db, request.principal!, request.params.inbox_id),
  );

  app.patch<{ Params: Params; Body: UpdateInboxBody }>(
    '/inboxes/:inbox_id',
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: UpdateInboxBody } },
    async (request) => updateInboxFor(app.svc, request.principal!, request.params.inbox_id, request.body),
  );

  app.delete<{ Params: Params }>('/inboxes/:inbox_id', { config: { auth: 'agent' }, schema: { params: InboxParams } }, async (request, reply) => {
    deleteInboxFor(app.svc, request.principal!, request.params.inbox_id);
    return reply.send();
  });
};

/** Inboxes (spec §4.3): owner or agents with the inbox_* permissions, limited to their scope. */
import type { FastifyPluginAsync } from 'fastify';
import { InboxParams, ListOf, PageOnlyQuery } from '../core/schemas.js';
import { CreateInboxBody, InboxResponse, UpdateInboxBody } from '../mail/inbox-schemas.js';
import { createInboxFor, deleteInboxFor, inboxListPage, InboxSearchQuery, inboxSearchPage, readInbox, updateInboxFor } from '../requests/inboxes.js';

/** Response schemas: the serializer sends only these fields. */
const one = { 200: InboxResponse };
const page = { 200: ListOf('inboxes', InboxResponse) };

export const inboxRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;

  app.get<{ Querystring: PageOnlyQuery }>('/inboxes', { config: { auth: 'agent' }, schema: { querystring: PageOnlyQuery, response: page } }, async (request) =>
    inboxListPage(db, request.principal!, request.query),
  );

  app.post<{ Body: CreateInboxBody }>('/inboxes', { config: { auth: 'agent' }, schema: { body: CreateInboxBody, response: one } }, async (request) =>
    createInboxFor(app.svc, request.principal!, request.body),
  );

  app.get<{ Querystring: InboxSearchQuery }>('/inboxes/search', { config: { auth: 'agent' }, schema: { querystring: InboxSearchQuery, response: page } }, async (request) =>
    inboxSearchPage(db, request.principal!, request.query),
  );

  app.get<{ Params: InboxParams }>('/inboxes/:inbox_id', { config: { auth: 'agent' }, schema: { params: InboxParams, response: one } }, async (request) =>
    readInbox(db, request.principal!, request.params.inbox_id),
  );

  app.patch<{ Params: InboxParams; Body: UpdateInboxBody }>(
    '/inboxes/:inbox_id',
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: UpdateInboxBody, response: one } },
    async (request) => updateInboxFor(app.svc, request.principal!, request.params.inbox_id, request.body),
  );

  app.delete<{ Params: InboxParams }>('/inboxes/:inbox_id', { config: { auth: 'agent' }, schema: { params: InboxParams } }, async (request, reply) => {
    deleteInboxFor(app.svc, request.principal!, request.params.inbox_id);
    return reply.send();
  });
};

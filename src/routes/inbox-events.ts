/**
 * An inbox's label change log over REST, `GET /v0/inboxes/{inbox_id}/events` (the AgentMail
 * SDK's `inboxes.events.list`; docs/agentmail-compat.md). Live events are the WebSocket's.
 */
import type { FastifyPluginAsync } from 'fastify';
import { InboxParams, ListOf } from '../core/schemas.js';
import { InboxEvent, InboxEventsQuery, inboxEventsPage } from '../requests/inbox-events.js';

export const inboxEventRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;
  app.get<{ Params: InboxParams; Querystring: InboxEventsQuery }>(
    '/inboxes/:inbox_id/events',
    { config: { auth: 'agent' }, schema: { params: InboxParams, querystring: InboxEventsQuery, response: { 200: ListOf('events', InboxEvent) } } },
    async (request) => inboxEventsPage(db, request.principal!, request.params.inbox_id, request.query),
  );
};

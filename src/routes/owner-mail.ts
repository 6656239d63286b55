/**
 * The owner web app's mail (docs/web-app.md "Mail"), on the loopback listener only:
 * - `GET /owner/mail/threads`: threads of the chosen inboxes with the thread filters,
 *   `has_attachment`, and `exclude_labels` (a thread is left out when every visible message
 *   carries the label: the app's archive);
 * - `GET /owner/mail/threads/search`: full-text over the chosen inboxes;
 * - `GET /owner/mail/unread`: unread thread counts per inbox, for the sidebar;
 * - `GET /owner/mail/inboxes/{inbox_id}/messages/{message_id}/authentication`: svc's own
 *   SPF/DKIM/DMARC/ARC verdict of a received message.
 * Agents have `GET /threads` over their own scope; the owner's list picks inboxes.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { InboxId, ListOf, MessageParams } from '../core/schemas.js';
import { InboundAuth } from '../edge/sealed.js';
import { cachedRead } from '../mail/read-cache.js';
import { SearchQuery, ThreadListQuery } from '../mail/query.js';
import { ThreadItem } from '../mail/serialize-schemas.js';
import { ownerMessageAuth, type OwnerThreadListQuery, type OwnerThreadSearchQuery } from '../requests/owner-mail.js';

/** One list covers at most this many chosen inboxes (the web app lists 100 inboxes a page). */
export const MAX_CHOSEN_INBOXES = 100;
const ChosenInboxes = { inbox_ids: Type.Optional(Type.Array(InboxId, { maxItems: MAX_CHOSEN_INBOXES })) };
const strict = { additionalProperties: false } as const;

const OwnerThreadList = Type.Object(
  { ...ThreadListQuery.properties, ...ChosenInboxes, has_attachment: Type.Optional(Type.Boolean()), exclude_labels: ThreadListQuery.properties.labels },
  strict,
);
const OwnerThreadSearch = Type.Object({ ...SearchQuery.properties, ...ChosenInboxes }, strict);
const UnreadCounts = Type.Object({ inboxes: Type.Array(Type.Object({ inbox_id: Type.String(), unread_threads: Type.Integer() })) });
const Threads = { 200: ListOf('threads', ThreadItem) };
const MessageAuth = Type.Object({ message_id: Type.String(), authentication: Type.Union([InboundAuth, Type.Null()]) });

export const ownerMailRoutes: FastifyPluginAsync = async (app) => {
  const { db, reads } = app.svc;

  app.get<{ Querystring: OwnerThreadListQuery }>('/mail/threads', { config: { auth: 'owner' }, schema: { querystring: OwnerThreadList, response: Threads } }, async (request, reply) =>
    cachedRead(db, request, reply, () => reads.run('ownerThreadListPage', request.principal!, request.query)),
  );

  app.get<{ Querystring: OwnerThreadSearchQuery }>('/mail/threads/search', { config: { auth: 'owner' }, schema: { querystring: OwnerThreadSearch, response: Threads } }, async (request, reply) =>
    cachedRead(db, request, reply, () => reads.run('ownerThreadSearchPage', request.principal!, request.query)),
  );

  app.get('/mail/unread', { config: { auth: 'owner' }, schema: { response: { 200: UnreadCounts } } }, async (request, reply) =>
    cachedRead(db, request, reply, () => reads.run('ownerUnreadCounts')),
  );

  app.get<{ Params: MessageParams }>(
    '/mail/inboxes/:inbox_id/messages/:message_id/authentication',
    { config: { auth: 'owner' }, schema: { params: MessageParams, response: { 200: MessageAuth } } },
    async (request) => ownerMessageAuth(db, request.params.inbox_id, request.params.message_id),
  );
};

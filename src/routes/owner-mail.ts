/**
 * The owner web app's mail list (docs/web-app.md "Mail"), on the loopback listener only:
 * `GET /owner/mail/threads` (threads of the chosen inboxes with the thread filters and
 * `has_attachment`, and `exclude_labels`: a thread is left out when every visible message
 * carries the label, which is how the app's archive works), `GET /owner/mail/threads/search` (full-text over the chosen inboxes) and
 * `GET /owner/mail/unread` (unread thread counts per inbox). Agents have `GET /threads` for their
 * own scope; these exist because the owner's list picks inboxes and the sidebar counts them.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type } from 'typebox';
import { InboxId, ListOf } from '../core/schemas.js';
import { cachedRead } from '../mail/read-cache.js';
import { SearchQuery, ThreadListQuery } from '../mail/query.js';
import { ThreadItem } from '../mail/serialize-schemas.js';
import type { OwnerThreadListQuery, OwnerThreadSearchQuery } from '../requests/owner-mail.js';

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
};

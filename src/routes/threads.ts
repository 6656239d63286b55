/**
 * Threads (spec §4.4), each route in two forms: inbox-scoped `/inboxes/{inbox_id}/threads...`
 * and instance-wide `/threads...`, which resolves within the caller's scope. Order of checks:
 * resource in scope (else 404) → permission (403) → hidden-label permissions (403).
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../http/access.js';
import { issueDownloadUrl } from '../http/downloads.js';
import { notFound } from '../http/errors.js';
import { searchGeneration } from '../http/pagination.js';
import { inScope, type Principal } from '../http/principal.js';
import { labelEdit, LabelEditBody, listVisibility, readVisibility } from '../mail/labels.js';
import { keysetPage, queryList, scopeInboxes, SearchQuery, ThreadListQuery, ThreadPageQuery, timeBounds } from '../mail/query.js';
import { cachedRead } from '../mail/read-cache.js';
import { searchThreads } from '../mail/search.js';
import { attachmentShape, AttachmentDownload, LabelsResult, ListOf, Thread, ThreadItem } from '../mail/serialize.js';
import { deleteThread, getThread, listThreads, threadAttachment, threadInbox, updateThreadLabels } from '../mail/threads.js';

const InboxParams = Type.Object({ inbox_id: Type.Optional(Type.String({ maxLength: 320 })) });
const ThreadParams = Type.Object({ inbox_id: Type.Optional(Type.String({ maxLength: 320 })), thread_id: Type.String({ maxLength: 64 }) });
const AttachmentParams = Type.Object({
  inbox_id: Type.Optional(Type.String({ maxLength: 320 })),
  thread_id: Type.String({ maxLength: 64 }),
  attachment_id: Type.String({ maxLength: 128 }),
});
const UpdateThread = Type.Object(
  { add_labels: Type.Optional(Type.Union([LabelEditBody.add_labels, Type.Null()])), remove_labels: Type.Optional(Type.Union([LabelEditBody.remove_labels, Type.Null()])) },
  { additionalProperties: false },
);

type InboxParams = Static<typeof InboxParams>;
type ThreadParams = Static<typeof ThreadParams>;

/** The inboxes a list or search covers: the path's inbox, or every inbox in the caller's scope. */
function inboxesFor(db: Db, p: Principal, inboxId: string | undefined): string[] {
  if (inboxId !== undefined) return [inboxFor(db, p, inboxId, 'message_read').inbox_id];
  requirePermission(p, 'message_read');
  return scopeInboxes(db, p);
}

/** The inbox holding the thread, after the scope (404) and permission (403) checks. */
function threadScope(db: Db, p: Principal, params: ThreadParams, permission: string): string {
  if (params.inbox_id !== undefined) return inboxFor(db, p, params.inbox_id, permission).inbox_id;
  const inboxId = threadInbox(db, params.thread_id);
  if (inboxId === null || !inScope(p, inboxId)) throw notFound('thread');
  requirePermission(p, permission);
  return inboxId;
}

function register(app: FastifyInstance, base: string): void {
  const { db } = app.svc;
  const form = base.startsWith('/inboxes') ? 'inbox' : 'instance';

  app.get<{ Params: InboxParams; Querystring: ThreadListQuery }>(
    base,
    { config: { auth: 'agent' }, schema: { params: InboxParams, querystring: ThreadListQuery, response: { 200: ListOf('threads', ThreadItem) } } },
    async (request, reply) =>
      cachedRead(db, request, reply, () => {
        const p = request.principal!;
        const q = request.query;
        const inboxIds = inboxesFor(db, p, request.params.inbox_id);
        const visibility = listVisibility(p, q);
        const filters = { ...timeBounds(q), labels: queryList(q.labels), senders: queryList(q.senders), recipients: queryList(q.recipients), subject: queryList(q.subject) };
        const { page, respond } = keysetPage(
          db,
          {
            route: `threads.list.${form}`,
            filters: { inbox: request.params.inbox_id ?? '*', ...filters, ascending: q.ascending === true, excluded: visibility.excluded.join(',') },
            principal: p,
          },
          q,
        );
        const { items, next } = listThreads(db, inboxIds, filters, visibility, page);
        return respond('threads', items, next);
      }),
  );

  app.get<{ Params: InboxParams; Querystring: SearchQuery }>(
    `${base}/search`,
    { config: { auth: 'agent' }, schema: { params: InboxParams, querystring: SearchQuery, response: { 200: ListOf('threads', ThreadItem) } } },
    async (request, reply) =>
      cachedRead(db, request, reply, () => {
        const p = request.principal!;
        const q = request.query;
        const inboxIds = inboxesFor(db, p, request.params.inbox_id);
        const bounds = timeBounds(q);
        const { page, respond } = keysetPage(
          db,
          { route: `threads.search.${form}`, filters: { inbox: request.params.inbox_id ?? '*', q: q.q, ...bounds }, principal: p, generation: searchGeneration(db) },
          q,
        );
        const { items, next } = searchThreads(db, { q: q.q, inboxIds, ...bounds, limit: page.limit, cursor: page.cursor });
        return respond('threads', items, next);
      }),
  );

  app.get<{ Params: ThreadParams; Querystring: ThreadPageQuery }>(
    `${base}/:thread_id`,
    { config: { auth: 'agent' }, schema: { params: ThreadParams, querystring: ThreadPageQuery, response: { 200: Thread } } },
    async (request, reply) =>
      cachedRead(db, request, reply, () => {
        const p = request.principal!;
        const inboxId = threadScope(db, p, request.params, 'message_read');
        const { page, token } = keysetPage(db, { route: 'threads.get', filters: { thread: request.params.thread_id }, principal: p }, request.query);
        const found = getThread(db, inboxId, request.params.thread_id, readVisibility(p), page);
        if (!found) throw notFound('thread');
        const next = token(found.next);
        return { ...found.thread, ...(next ? { next_page_token: next } : {}) };
      }),
  );

  app.patch<{ Params: ThreadParams; Body: Static<typeof UpdateThread> }>(
    `${base}/:thread_id`,
    { config: { auth: 'agent' }, schema: { params: ThreadParams, body: UpdateThread, response: { 200: LabelsResult.thread } } },
    async (request) => {
      const p = request.principal!;
      const inboxId = threadScope(db, p, request.params, 'message_update');
      const edit = labelEdit(p, request.body.add_labels, request.body.remove_labels);
      const result = updateThreadLabels(db, inboxId, request.params.thread_id, readVisibility(p), edit);
      if (!result) throw notFound('thread');
      return result;
    },
  );

  app.delete<{ Params: ThreadParams }>(`${base}/:thread_id`, { config: { auth: 'agent' }, schema: { params: ThreadParams } }, async (request, reply) => {
    const p = request.principal!;
    const inboxId = threadScope(db, p, request.params, 'message_delete');
    if (!deleteThread(db, inboxId, request.params.thread_id, readVisibility(p))) throw notFound('thread');
    return reply.send();
  });

  app.get<{ Params: Static<typeof AttachmentParams> }>(
    `${base}/:thread_id/attachments/:attachment_id`,
    { config: { auth: 'agent' }, schema: { params: AttachmentParams, response: { 200: AttachmentDownload } } },
    async (request) => {
      const p = request.principal!;
      const inboxId = threadScope(db, p, request.params, 'message_read');
      const found = threadAttachment(db, inboxId, request.params.thread_id, request.params.attachment_id, readVisibility(p));
      if (!found) throw notFound('attachment');
      const link = issueDownloadUrl(p, app.svc.origin(), { kind: 'attachment', inboxId, messageId: found.messageId, attachmentId: found.attachment.attachment_id });
      return { ...attachmentShape(found.attachment), ...link };
    },
  );
}

export const threadRoutes: FastifyPluginAsync = async (app) => {
  register(app, '/inboxes/:inbox_id/threads');
  register(app, '/threads');
};

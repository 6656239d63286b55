/**
 * Threads (spec §4.4), each route in two forms: inbox-scoped `/inboxes/{inbox_id}/threads...`
 * and instance-wide `/threads...`, which resolves within the caller's scope. Order of checks:
 * resource in scope (else 404) → permission (403) → hidden-label permissions (403).
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { ListOf, ScopeParams, ThreadAttachmentParams, ThreadParams } from '../core/schemas.js';
import { SearchQuery, ThreadListQuery, ThreadPageQuery } from '../mail/query.js';
import { cachedRead } from '../mail/read-cache.js';
import { MessageAttachmentDownload, LabelsResult, Thread, ThreadItem } from '../mail/serialize-schemas.js';
import { LabelEditRequest } from '../requests/labels.js';
import { editThreadLabels, removeThread, threadAttachmentDownload } from '../requests/threads.js';

function register(app: FastifyInstance, base: string): void {
  const { db, reads } = app.svc;

  app.get<{ Params: ScopeParams; Querystring: ThreadListQuery }>(
    base,
    { config: { auth: 'agent' }, schema: { params: ScopeParams, querystring: ThreadListQuery, response: { 200: ListOf('threads', ThreadItem) } } },
    async (request, reply) => cachedRead(db, request, reply, () => reads.run('threadListPage', request.principal!, request.params.inbox_id, request.query)),
  );

  app.get<{ Params: ScopeParams; Querystring: SearchQuery }>(
    `${base}/search`,
    { config: { auth: 'agent' }, schema: { params: ScopeParams, querystring: SearchQuery, response: { 200: ListOf('threads', ThreadItem) } } },
    async (request, reply) => cachedRead(db, request, reply, () => reads.run('threadSearchPage', request.principal!, request.params.inbox_id, request.query)),
  );

  app.get<{ Params: ThreadParams; Querystring: ThreadPageQuery }>(
    `${base}/:thread_id`,
    { config: { auth: 'agent' }, schema: { params: ThreadParams, querystring: ThreadPageQuery, response: { 200: Thread } } },
    async (request, reply) => cachedRead(db, request, reply, () => reads.run('readThread', request.principal!, request.params, request.query)),
  );

  app.patch<{ Params: ThreadParams; Body: LabelEditRequest }>(
    `${base}/:thread_id`,
    { config: { auth: 'agent' }, schema: { params: ThreadParams, body: LabelEditRequest, response: { 200: LabelsResult.thread } } },
    async (request) => editThreadLabels(db, request.principal!, request.params, request.body.add_labels, request.body.remove_labels),
  );

  app.delete<{ Params: ThreadParams }>(`${base}/:thread_id`, { config: { auth: 'agent' }, schema: { params: ThreadParams } }, async (request, reply) => {
    removeThread(db, request.principal!, request.params);
    return reply.send();
  });

  app.get<{ Params: ThreadAttachmentParams }>(
    `${base}/:thread_id/attachments/:attachment_id`,
    { config: { auth: 'agent' }, schema: { params: ThreadAttachmentParams, response: { 200: MessageAttachmentDownload } } },
    async (request) => threadAttachmentDownload(db, request.principal!, request.params, request.params.attachment_id, app.svc.origin(), (file) => app.svc.pool.extractText(file)),
  );
}

export const threadRoutes: FastifyPluginAsync = async (app) => {
  register(app, '/inboxes/:inbox_id/threads');
  register(app, '/threads');
};

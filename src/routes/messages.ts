/**
 * Messages (spec §4.5), read side: list, search, get, label edits, delete, batch get/update,
 * raw and attachment download links. All inbox-scoped; the Message-ID in the path is the
 * URL-encoded `<…@…>` string. Checks: inbox in scope (404) → permission (403) → hidden labels.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { InboxParams, ListOf, MessageAttachmentParams, MessageId, MessageParams } from '../core/schemas.js';
import { MessageListQuery, SearchQuery } from '../mail/query.js';
import { cachedRead } from '../mail/read-cache.js';
import { MessageAttachmentDownload, LabelsResult, RawMessageDownload, Message, MessageItem } from '../mail/serialize-schemas.js';
import {
  batchEditMessageLabels,
  editMessageLabels,
  MAX_BATCH_GET,
  MAX_BATCH_UPDATE,
  messageAttachmentDownload,
  rawMessageDownload,
  removeMessage,
} from '../requests/messages.js';
import { LabelEditFields, LabelEditRequest } from '../requests/labels.js';
import { MessageWaitQuery } from '../requests/message-waits.js';
import type { Principal } from '../auth/principal.js';
import type { FastifyReply } from 'fastify';

const BatchGet = Type.Object({ message_ids: Type.Array(MessageId, { minItems: 1, maxItems: MAX_BATCH_GET }) }, { additionalProperties: false });
const BatchUpdate = Type.Object({ message_ids: Type.Array(MessageId, { minItems: 1, maxItems: MAX_BATCH_UPDATE }), ...LabelEditFields }, { additionalProperties: false });

export const messageRoutes: FastifyPluginAsync = async (app) => {
  const { db, reads, waits } = app.svc;
  const base = '/inboxes/:inbox_id/messages';

  /** Answers a wait (docs/waiting.md): the message, or 204 when none came in time; ends early if the client leaves. */
  const waitFor = async (principal: Principal, inboxId: string | undefined, query: MessageWaitQuery, reply: FastifyReply) => {
    const start = await reads.run('startMessageWait', principal, inboxId, query, new Date().toISOString());
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.once('close', onClose);
    try {
      const answer = await waits.wait(principal, start, gone.signal);
      // The message's JSON is made once for all the waiters it answers (it has the Message shape already).
      return answer ? reply.type('application/json; charset=utf-8').send(answer.json) : reply.code(204).send();
    } finally {
      reply.raw.off('close', onClose);
    }
  };
  const waitSchema = (params?: typeof InboxParams) => ({
    config: { auth: 'agent' as const },
    schema: { ...(params ? { params } : {}), querystring: MessageWaitQuery, response: { 200: Message, 204: Type.Null() } },
  });

  app.get<{ Params: InboxParams; Querystring: MessageWaitQuery }>(`${base}/wait`, waitSchema(InboxParams), async (request, reply) =>
    waitFor(request.principal!, request.params.inbox_id, request.query, reply),
  );

  app.get<{ Querystring: MessageWaitQuery }>('/messages/wait', waitSchema(), async (request, reply) => waitFor(request.principal!, undefined, request.query, reply));

  app.get<{ Params: InboxParams; Querystring: MessageListQuery }>(
    base,
    { config: { auth: 'agent' }, schema: { params: InboxParams, querystring: MessageListQuery, response: { 200: ListOf('messages', MessageItem) } } },
    async (request, reply) => cachedRead(db, request, reply, () => reads.run('messageListPage', request.principal!, request.params.inbox_id, request.query)),
  );

  app.get<{ Params: InboxParams; Querystring: SearchQuery }>(
    `${base}/search`,
    { config: { auth: 'agent' }, schema: { params: InboxParams, querystring: SearchQuery, response: { 200: ListOf('messages', MessageItem) } } },
    async (request, reply) => cachedRead(db, request, reply, () => reads.run('messageSearchPage', request.principal!, request.params.inbox_id, request.query)),
  );

  app.post<{ Params: InboxParams; Body: Static<typeof BatchGet> }>(
    `${base}/batch-get`,
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: BatchGet, response: { 200: Type.Object({ count: Type.Integer(), limit: Type.Integer(), messages: Type.Array(Message) }) } } },
    async (request) => reads.run('batchGetMessagesFor', request.principal!, request.params.inbox_id, request.body.message_ids),
  );

  app.post<{ Params: InboxParams; Body: Static<typeof BatchUpdate> }>(
    `${base}/batch-update`,
    {
      config: { auth: 'agent' },
      schema: { params: InboxParams, body: BatchUpdate, response: { 200: Type.Object({ count: Type.Integer(), limit: Type.Integer(), updates: Type.Array(LabelsResult.message) }) } },
    },
    async (request) => batchEditMessageLabels(db, request.principal!, request.params.inbox_id, request.body.message_ids, request.body.add_labels, request.body.remove_labels),
  );

  app.get<{ Params: MessageParams }>(
    `${base}/:message_id`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, response: { 200: Message } } },
    async (request, reply) => cachedRead(db, request, reply, () => reads.run('readMessage', request.principal!, request.params.inbox_id, request.params.message_id)),
  );

  app.patch<{ Params: MessageParams; Body: LabelEditRequest }>(
    `${base}/:message_id`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, body: LabelEditRequest, response: { 200: LabelsResult.message } } },
    async (request) => editMessageLabels(db, request.principal!, request.params.inbox_id, request.params.message_id, request.body.add_labels, request.body.remove_labels),
  );

  app.delete<{ Params: MessageParams }>(`${base}/:message_id`, { config: { auth: 'agent' }, schema: { params: MessageParams } }, async (request, reply) => {
    removeMessage(db, request.principal!, request.params.inbox_id, request.params.message_id);
    return reply.send();
  });

  app.get<{ Params: MessageParams }>(
    `${base}/:message_id/raw`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, response: { 200: RawMessageDownload } } },
    async (request) => rawMessageDownload(db, request.principal!, request.params.inbox_id, request.params.message_id, app.svc.origin()),
  );

  app.get<{ Params: MessageAttachmentParams }>(
    `${base}/:message_id/attachments/:attachment_id`,
    { config: { auth: 'agent' }, schema: { params: MessageAttachmentParams, response: { 200: MessageAttachmentDownload } } },
    async (request) =>
      messageAttachmentDownload(db, request.principal!, request.params.inbox_id, request.params.message_id, request.params.attachment_id, app.svc.origin(), (file) =>
        app.svc.pool.extractText(file),
      ),
  );
};

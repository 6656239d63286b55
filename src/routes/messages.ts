/**
 * Messages (spec §4.5), read side: list, search, get, label edits, delete, batch get/update,
 * raw and attachment download links. All inbox-scoped; the Message-ID in the path is the
 * URL-encoded `<…@…>` string. Checks: inbox in scope (404) → permission (403) → hidden labels.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { inboxFor } from '../auth/access.js';
import { issueDownloadUrl } from '../auth/downloads.js';
import { notFound } from '../core/errors.js';
import { labelEdit, LabelEditBody, readVisibility } from '../mail/labels.js';
import { editMessageLabels, messageAttachmentDownload, messageListPage, messageSearchPage, readMessage } from '../mail/message-requests.js';
import { batchGetMessages, deleteMessage, updateMessageLabels, visibleMessage } from '../mail/messages.js';
import { MessageListQuery, SearchQuery } from '../mail/query.js';
import { cachedRead } from '../mail/read-cache.js';
import { AttachmentDownload, LabelsResult, RawMessageDownload, ListOf, Message, MessageItem } from '../mail/serialize.js';
import { MAX_MESSAGE_ID } from '../mail/limits.js';

export const MAX_BATCH_GET = 500;
export const MAX_BATCH_UPDATE = 50;

const MessageIdParam = Type.String({ minLength: 1, maxLength: MAX_MESSAGE_ID });
const InboxParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }) });
const MessageParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }), message_id: MessageIdParam });
const AttachmentParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }), message_id: MessageIdParam, attachment_id: Type.String({ maxLength: 128 }) });
const nullable = <T extends typeof LabelEditBody.add_labels>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
const UpdateMessage = Type.Object({ add_labels: nullable(LabelEditBody.add_labels), remove_labels: nullable(LabelEditBody.remove_labels) }, { additionalProperties: false });
const BatchGet = Type.Object({ message_ids: Type.Array(MessageIdParam, { minItems: 1, maxItems: MAX_BATCH_GET }) }, { additionalProperties: false });
const BatchUpdate = Type.Object(
  {
    message_ids: Type.Array(MessageIdParam, { minItems: 1, maxItems: MAX_BATCH_UPDATE }),
    add_labels: nullable(LabelEditBody.add_labels),
    remove_labels: nullable(LabelEditBody.remove_labels),
  },
  { additionalProperties: false },
);

type InboxParams = Static<typeof InboxParams>;
type MessageParams = Static<typeof MessageParams>;

export const messageRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;
  const base = '/inboxes/:inbox_id/messages';

  app.get<{ Params: InboxParams; Querystring: MessageListQuery }>(
    base,
    { config: { auth: 'agent' }, schema: { params: InboxParams, querystring: MessageListQuery, response: { 200: ListOf('messages', MessageItem) } } },
    async (request, reply) => cachedRead(db, request, reply, () => messageListPage(db, request.principal!, request.params.inbox_id, request.query)),
  );

  app.get<{ Params: InboxParams; Querystring: SearchQuery }>(
    `${base}/search`,
    { config: { auth: 'agent' }, schema: { params: InboxParams, querystring: SearchQuery, response: { 200: ListOf('messages', MessageItem) } } },
    async (request, reply) => cachedRead(db, request, reply, () => messageSearchPage(db, request.principal!, request.params.inbox_id, request.query)),
  );

  app.post<{ Params: InboxParams; Body: Static<typeof BatchGet> }>(
    `${base}/batch-get`,
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: BatchGet, response: { 200: Type.Object({ count: Type.Integer(), limit: Type.Integer(), messages: Type.Array(Message) }) } } },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id, 'message_read');
      const messages = batchGetMessages(db, inbox.inbox_id, request.body.message_ids, readVisibility(p));
      return { count: messages.length, limit: MAX_BATCH_GET, messages };
    },
  );

  app.post<{ Params: InboxParams; Body: Static<typeof BatchUpdate> }>(
    `${base}/batch-update`,
    {
      config: { auth: 'agent' },
      schema: { params: InboxParams, body: BatchUpdate, response: { 200: Type.Object({ count: Type.Integer(), limit: Type.Integer(), updates: Type.Array(LabelsResult.message) }) } },
    },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id, 'message_update');
      const edit = labelEdit(p, request.body.add_labels, request.body.remove_labels);
      const updates = updateMessageLabels(db, inbox.inbox_id, request.body.message_ids, readVisibility(p), edit);
      return { count: updates.length, limit: MAX_BATCH_UPDATE, updates };
    },
  );

  app.get<{ Params: MessageParams }>(
    `${base}/:message_id`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, response: { 200: Message } } },
    async (request, reply) => cachedRead(db, request, reply, () => readMessage(db, request.principal!, request.params.inbox_id, request.params.message_id)),
  );

  app.patch<{ Params: MessageParams; Body: Static<typeof UpdateMessage> }>(
    `${base}/:message_id`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, body: UpdateMessage, response: { 200: LabelsResult.message } } },
    async (request) => editMessageLabels(db, request.principal!, request.params.inbox_id, request.params.message_id, request.body.add_labels, request.body.remove_labels),
  );

  app.delete<{ Params: MessageParams }>(`${base}/:message_id`, { config: { auth: 'agent' }, schema: { params: MessageParams } }, async (request, reply) => {
    const p = request.principal!;
    const inbox = inboxFor(db, p, request.params.inbox_id, 'message_delete');
    if (!deleteMessage(db, inbox.inbox_id, request.params.message_id, readVisibility(p))) throw notFound('message');
    return reply.send();
  });

  app.get<{ Params: MessageParams }>(
    `${base}/:message_id/raw`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, response: { 200: RawMessageDownload } } },
    async (request) => {
      const p = request.principal!;
      const inbox = inboxFor(db, p, request.params.inbox_id, 'message_read');
      const found = visibleMessage(db, inbox.inbox_id, request.params.message_id, readVisibility(p));
      if (!found) throw notFound('message');
      const link = issueDownloadUrl(p, app.svc.origin(), { kind: 'raw', inboxId: inbox.inbox_id, messageId: found.messageId });
      return { message_id: found.messageId, size: found.size, ...link };
    },
  );

  app.get<{ Params: Static<typeof AttachmentParams> }>(
    `${base}/:message_id/attachments/:attachment_id`,
    { config: { auth: 'agent' }, schema: { params: AttachmentParams, response: { 200: AttachmentDownload } } },
    async (request) =>
      messageAttachmentDownload(db, request.principal!, request.params.inbox_id, request.params.message_id, request.params.attachment_id, app.svc.origin()),
  );
};

/**
 * Sending (spec §4.5): send, reply, reply-all, forward (idempotent, checks in the order of §4.5)
 * and the owner's resolve of a `send_unknown` message. The flow itself is src/mail/send-flow.ts.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { InboxParams, MessageParams, ResolveSendResponse, SendResponse } from '../core/schemas.js';
import type { ComposeInput } from '../mail/compose.js';
import { ReplyAllBody, ReplyBody, SendBody } from '../mail/compose-schemas.js';
import { ResolveSendBody, resolveSendFor, sendRequest, type SendOperation } from '../requests/send.js';

export const sendRoutes: FastifyPluginAsync = async (app) => {
  const base = '/inboxes/:inbox_id/messages';

  /** Shared by the four send routes: scope, permissions, original, idempotency, the flow. */
  function send(request: FastifyRequest, operation: SendOperation, body: ComposeInput & { reply_all?: boolean | null }) {
    const params = request.params as { inbox_id: string; message_id?: string };
    return sendRequest(app.svc, request.principal!, { operation, inboxId: params.inbox_id, messageId: params.message_id, body, idempotencyKey: request.headers['idempotency-key'] });
  }

  app.post<{ Params: InboxParams; Body: SendBody }>(
    `${base}/send`,
    { config: { auth: 'agent' }, schema: { params: InboxParams, body: SendBody, response: { 200: SendResponse } } },
    async (request) => send(request, 'send', request.body),
  );

  app.post<{ Params: MessageParams; Body: ReplyBody }>(
    `${base}/:message_id/reply`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, body: ReplyBody, response: { 200: SendResponse } } },
    async (request) => send(request, 'reply', request.body),
  );

  app.post<{ Params: MessageParams; Body: ReplyAllBody }>(
    `${base}/:message_id/reply-all`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, body: ReplyAllBody, response: { 200: SendResponse } } },
    async (request) => send(request, 'reply-all', request.body),
  );

  app.post<{ Params: MessageParams; Body: SendBody }>(
    `${base}/:message_id/forward`,
    { config: { auth: 'agent' }, schema: { params: MessageParams, body: SendBody, response: { 200: SendResponse } } },
    async (request) => send(request, 'forward', request.body),
  );

  app.post<{ Params: MessageParams; Body: ResolveSendBody }>(
    `${base}/:message_id/resolve`,
    { config: { auth: 'owner' }, schema: { params: MessageParams, body: ResolveSendBody, response: { 200: ResolveSendResponse } } },
    async (request) => resolveSendFor(app.svc, request.principal!, request.params.inbox_id, request.params.message_id, request.body),
  );
};

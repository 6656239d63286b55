/**
 * Sending (spec §4.5): send, reply, reply-all, forward (idempotent, checks in the order of §4.5)
 * and the owner's resolve of a `send_unknown` message. The flow itself is src/mail/send-flow.ts.
 */
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { inboxFor } from '../auth/access.js';
import { ApiError, notFound } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { ReplyAllBody, ReplyBody, SendBody, type ComposeInput } from '../mail/compose.js';
import { normalizeMessageId } from '../mail/messages.js';
import { resolveSendUnknown } from '../mail/outbox.js';
import type { SendContext } from '../mail/send-flow.js';
import { sendContext as requestSendContext, sendRequest, type SendOperation } from '../mail/send-requests.js';
import { MAX_MESSAGE_ID } from '../mail/limits.js';

const InboxParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }) });
const MessageParams = Type.Object({ inbox_id: Type.String({ maxLength: 320 }), message_id: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_ID }) });
const SendResponse = Type.Object({ message_id: Type.String(), thread_id: Type.String() });
const ResolveBody = Type.Object({ decision: Type.Union([Type.Literal('sent'), Type.Literal('failed')]) }, { additionalProperties: false });

type MessageParams = Static<typeof MessageParams>;

/** The send context for a request handler's principal (drafts use it too). */
export function sendContext(app: FastifyInstance, principal: Principal): SendContext {
  return requestSendContext(app.svc, principal);
}

export const sendRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;
  const base = '/inboxes/:inbox_id/messages';

  /** Shared by the four send routes: scope, permissions, original, idempotency, the flow. */
  function send(request: FastifyRequest, operation: SendOperation, body: ComposeInput & { reply_all?: boolean | null }) {
    const params = request.params as { inbox_id: string; message_id?: string };
    return sendRequest(app.svc, request.principal!, { operation, inboxId: params.inbox_id, messageId: params.message_id, body, idempotencyKey: request.headers['idempotency-key'] });
  }

  app.post<{ Params: Static<typeof InboxParams>; Body: SendBody }>(
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

  app.post<{ Params: MessageParams; Body: Static<typeof ResolveBody> }>(
    `${base}/:message_id/resolve`,
    { config: { auth: 'owner' }, schema: { params: MessageParams, body: ResolveBody } },
    async (request) => {
      const inbox = inboxFor(db, request.principal!, request.params.inbox_id);
      const outcome = resolveSendUnknown(db, inbox.inbox_id, normalizeMessageId(request.params.message_id), request.body.decision);
      if (outcome === 'not_found') throw notFound('message');
      if (outcome === 'not_send_unknown') {
        throw new ApiError('conflict', 'Only a message in `send_unknown` can be resolved.', { fix: 'Read the message: its `send_status` says what happened to it.' });
      }
      app.svc.bus.publish({ kind: 'event', seq: outcome.seq });
      return { message_id: outcome.messageId, thread_id: outcome.threadId, send_status: request.body.decision };
    },
  );
};

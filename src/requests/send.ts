/**
 * A caller's send, reply, reply-all and forward (spec §4.5), checked and handed to the one send
 * path (send-flow.ts); shared by REST (src/routes/send.ts) and MCP so both enforce the same
 * scope, permissions, idempotency and send policy. The idempotency hash is computed over the
 * REST body, so a key used through MCP and through REST for the same request matches. Also the
 * owner's resolve of a message left in `send_unknown`.
 */
import { Type, type Static } from 'typebox';
import { groupCommit } from '../db/group-commit.js';
import type { AppContext } from '../context.js';
import { inboxFor } from '../auth/access.js';
import { ApiError, notFound } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import type { ComposedMime, MimeSpec } from '../../workers/pool/compose.js';
import { composition, type ComposeInput } from '../mail/compose.js';
import { idempotencyKey, requestHash } from '../mail/idempotency.js';
import { readVisibility } from '../mail/labels.js';
import { normalizeMessageId } from '../mail/messages.js';
import { loadOriginal, type OutboundKind } from '../mail/outbound.js';
import { resolveSendUnknown } from '../mail/outbox.js';
import type { GuardContent, GuardFinding } from '../mail/guard-content.js';
import { performSend, type SendContext, type SendResult } from '../mail/send-flow.js';

/** What a send needs from the running service. */
export type SendServices = Pick<AppContext, 'db' | 'bus' | 'pool'>;

export function sendContext(svc: SendServices, principal: Principal): SendContext {
  const { db, bus, pool } = svc;
  return {
    db,
    principal,
    compose: (spec: MimeSpec) => pool.run('composeOutbound', spec) as Promise<ComposedMime>,
    inspect: (content: GuardContent) => pool.run('inspectGuard', content) as Promise<GuardFinding[]>,
    publish: (seq) => bus.publish({ kind: 'event', seq }),
    wakeOutbox: () => bus.publish({ kind: 'wake', loop: 'outbox' }),
    commit: (fn) => groupCommit(db, fn),
  };
}

/** The operations, each with the permissions it needs (spec §4.5). */
export const SEND_OPERATIONS = {
  send: { kind: 'send', replyAll: false, permissions: ['message_send'] },
  reply: { kind: 'reply', replyAll: false, permissions: ['message_reply', 'message_read'] },
  'reply-all': { kind: 'reply', replyAll: true, permissions: ['message_reply', 'message_read'] },
  forward: { kind: 'forward', replyAll: false, permissions: ['message_send', 'message_read'] },
} as const satisfies Record<string, { kind: OutboundKind; replyAll: boolean; permissions: readonly string[] }>;

export type SendOperation = keyof typeof SEND_OPERATIONS;

export interface SendRequest {
  operation: SendOperation;
  inboxId: string;
  /** The original message for reply, reply-all and forward. */
  messageId?: string;
  /** The REST body as sent; `reply_all: true` on a reply includes the original To and Cc. */
  body: ComposeInput & { reply_all?: boolean | null };
  /** The `Idempotency-Key` header or MCP `idempotencyKey` as given; checked here, in the REST order. */
  idempotencyKey: string | string[] | undefined;
}

/** Scope, permissions, original, idempotency, then the send flow with its checks in order. */
export async function sendRequest(svc: SendServices, p: Principal, r: SendRequest): Promise<SendResult> {
  const op = SEND_OPERATIONS[r.operation];
  const replyAll = op.replyAll || (r.operation === 'reply' && r.body.reply_all === true);
  const inbox = inboxFor(svc.db, p, r.inboxId, ...op.permissions);
  const original = r.messageId === undefined ? null : loadOriginal(svc.db, inbox.inbox_id, r.messageId, readVisibility(p));
  if (r.messageId !== undefined && !original) throw notFound('message');
  const key = idempotencyKey(r.idempotencyKey);
  const { reply_all: _ignored, ...fields } = r.body;
  const c = composition(p, fields);
  const operation = op.kind === 'reply' ? (replyAll ? 'reply-all' : 'reply') : op.kind;
  const idempotency = key ? { key, hash: requestHash(operation, original?.messageId ?? null, r.body) } : null;
  return performSend(sendContext(svc, p), { inbox, idempotency, source: { type: 'new', kind: op.kind, composition: c, original, replyAll } });
}

/** The owner's verdict on a message whose delivery is unknown (spec §4.5). */
export const ResolveSendBody = Type.Object({ decision: Type.Union([Type.Literal('sent'), Type.Literal('failed')]) }, { additionalProperties: false });
export type ResolveSendBody = Static<typeof ResolveSendBody>;

/**
 * Records the owner's verdict on a `send_unknown` message; its event is published after the
 * commit. Only a message in `send_unknown` can be resolved (409 otherwise).
 */
export function resolveSendFor(svc: Pick<AppContext, 'db' | 'bus'>, p: Principal, inboxId: string, messageId: string, body: ResolveSendBody) {
  const inbox = inboxFor(svc.db, p, inboxId);
  const outcome = svc.db.transaction(() => resolveSendUnknown(svc.db, inbox.inbox_id, normalizeMessageId(messageId), body.decision))();
  if (outcome === 'not_found') throw notFound('message');
  if (outcome === 'not_send_unknown') {
    throw new ApiError('conflict', 'Only a message in `send_unknown` can be resolved.', { fix: 'Read the message: its `send_status` says what happened to it.' });
  }
  svc.bus.publish({ kind: 'event', seq: outcome.seq });
  return { message_id: outcome.messageId, thread_id: outcome.threadId, send_status: body.decision };
}

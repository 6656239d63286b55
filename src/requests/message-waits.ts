/**
 * "Wait for the next message" (issue 20 §1; docs/waiting.md): the checks and reads of
 * `GET /v0/inboxes/{inbox_id}/messages/wait`, `GET /v0/messages/wait` and the MCP tool
 * `wait_for_message`. The waiting itself is src/events/waits.ts; the reads here run in reader
 * threads (src/requests/read-ops.ts). Checks: inbox in scope (404) → `message_read` (403) →
 * hidden-label include flags (403), as for the message list.
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../auth/access.js';
import { refreshPrincipal } from '../auth/credentials.js';
import { hasPermission, inScope, type Principal } from '../auth/principal.js';
import { ApiError, notFound } from '../core/errors.js';
import { latestSeq } from '../events/log.js';
import { MESSAGE_ID_MAX } from '../core/schemas.js';
import { listVisibility, readVisibility, type HiddenLabel } from '../mail/labels.js';
import { DEFAULT_WAIT_S, MAX_FILTER_VALUES, MAX_HEADER_LINE, MAX_WAIT_S } from '../mail/limits.js';
import { getMessage } from '../mail/messages.js';
import { IncludeQuery, queryList } from '../mail/query.js';
import type { Message } from '../mail/serialize.js';
import { firstReceivedAfter, messagePoint, pointAt, type WaitFilters, type WaitPoint } from '../mail/waits.js';


const FilterList = Type.Array(Type.String({ minLength: 1, maxLength: MAX_HEADER_LINE }), { maxItems: MAX_FILTER_VALUES });

export const MessageWaitQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ minLength: 1, maxLength: MESSAGE_ID_MAX })),
    from: Type.Optional(FilterList),
    to: Type.Optional(FilterList),
    subject: Type.Optional(FilterList),
    timeout: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WAIT_S })),
    ...IncludeQuery,
  },
  { additionalProperties: false },
);
export type MessageWaitQuery = Static<typeof MessageWaitQuery>;

/** RFC 3339 date-time, the form of every other time bound of the API. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** What a wait needs once checked: its filters, where it starts, and whether a stored message already answers it. */
export interface WaitStart {
  filters: WaitFilters;
  after: WaitPoint;
  /** The event log position read before the stored mail was: anything committed later is after it. */
  head: number;
  found: Message | null;
  timeoutMs: number;
}

function afterPoint(db: Db, p: Principal, inboxes: 'all' | readonly string[], after: string | undefined, now: string): WaitPoint {
  if (after === undefined) return pointAt(now);
  const value = after.trim();
  if (RFC3339.test(value) && !Number.isNaN(Date.parse(value))) return pointAt(new Date(value).toISOString());
  if (value.startsWith('<') || value.includes('@')) {
    // Read visibility, as for a read by id: a message hidden from this caller is as missing (404).
    const point = messagePoint(db, inboxes, value.startsWith('<') ? value : `<${value}>`, readVisibility(p));
    if (!point) throw notFound('message');
    return point;
  }
  throw new ApiError('validation_error', '`after` must be an RFC 3339 timestamp or the Message-ID of a received message.', {
    fix: 'Pass e.g. after=2026-01-31T12:00:00Z, or after=<id@example.com> (URL-encoded) to wait for mail newer than that message.',
  });
}

/**
 * Checks a wait and looks for a stored answer. `inboxId` is the inbox-scoped form's inbox, or
 * undefined for every inbox in the caller's scope. `now` is when the request arrived: the default
 * `after`, so that mail arriving while this runs is not missed.
 */
export function startMessageWait(db: Db, p: Principal, inboxId: string | undefined, q: MessageWaitQuery, now: string): WaitStart {
  let inboxes: 'all' | readonly string[];
  if (inboxId !== undefined) inboxes = [inboxFor(db, p, inboxId, 'message_read').inbox_id];
  else {
    requirePermission(p, 'message_read');
    inboxes = p.inboxScope === 'all' ? 'all' : [...p.inboxScope].sort();
  }
  const visibility = listVisibility(p, q);
  const lower = (values: string[] | undefined) => (queryList(values) ?? []).map((v) => v.toLowerCase());
  const filters: WaitFilters = { inboxes, from: lower(q.from), to: lower(q.to), subject: lower(q.subject), excluded: visibility.excluded };
  const after = afterPoint(db, p, inboxes, q.after, now);
  // The head first: a message committed between the two reads is after the head, so the event scan sees it.
  const head = latestSeq(db);
  return { filters, after, head, found: firstReceivedAfter(db, after, filters), timeoutMs: (q.timeout ?? DEFAULT_WAIT_S) * 1000 };
}

export type WaitedMessage = { status: 'found'; message: Message } | { status: 'skip' } | { status: 'revoked' };

/**
 * A newly received message that matched a waiter, read for the answer with the credential as it
 * is now (spec §6.2 rule 7): revoked or expired ends the wait; an inbox or permission no longer
 * granted, or a message deleted or relabelled meanwhile, is skipped and the wait goes on.
 */
export function waitedMessage(db: Db, p: Principal, inboxId: string, messageId: string, excluded: readonly HiddenLabel[]): WaitedMessage {
  const current = refreshPrincipal(db, p);
  if (!current) return { status: 'revoked' };
  if (!inScope(current, inboxId) || !hasPermission(current, 'message_read')) return { status: 'skip' };
  const hidden = new Set([...excluded, ...readVisibility(current).excluded]);
  const message = getMessage(db, inboxId, messageId, { excluded: [...hidden] });
  return message ? { status: 'found', message } : { status: 'skip' };
}

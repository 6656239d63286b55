/**
 * `GET /v0/inboxes/{inbox_id}/events` (the AgentMail SDK's `inboxes.events.list`): an inbox's
 * label change log, newest first unless `ascending=true`. Checks in house order: the inbox in
 * scope (404), then `message_read` (403), as for the event stream's `message.*` events; events
 * of mail a hidden label hides from the caller, and events naming such a label, are left out.
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { inboxFor } from '../auth/access.js';
import type { Principal } from '../auth/principal.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor } from '../core/pagination.js';
import { PageQuery } from '../core/schemas.js';
import { readVisibility } from '../mail/labels.js';
import { LABEL_EVENT_TYPES, labelEventId, readLabelEvents, type LabelEventRow } from '../mail/label-events.js';

/** svc is one organization; the SDK's type requires its id (and the inbox's pod). */
const THE_ORGANIZATION_ID = 'default';

export const InboxEventsQuery = Type.Object(PageQuery, { additionalProperties: false });
export type InboxEventsQuery = Static<typeof InboxEventsQuery>;

/** AgentMail's `InboxEvent`: `event_at` is when the label changed, which is also when svc recorded it. */
export const InboxEvent = Type.Object({
  organization_id: Type.String(),
  pod_id: Type.String(),
  inbox_id: Type.String(),
  event_id: Type.String(),
  event_type: Type.Union(LABEL_EVENT_TYPES.map((t) => Type.Literal(t))),
  message_id: Type.String(),
  label: Type.String(),
  event_at: Type.String(),
  created_at: Type.String(),
});

const inboxEvent = (podId: string) => (row: LabelEventRow) => ({
  organization_id: THE_ORGANIZATION_ID,
  pod_id: podId,
  inbox_id: row.inbox_id,
  event_id: labelEventId(row.seq),
  event_type: row.event_type,
  message_id: row.message_id,
  label: row.label,
  event_at: row.created_at,
  created_at: row.created_at,
});

export function inboxEventsPage(db: Db, p: Principal, inboxId: string, q: InboxEventsQuery) {
  const inbox = inboxFor(db, p, inboxId, 'message_read');
  const ascending = q.ascending ?? false;
  const limit = q.limit ?? DEFAULT_LIMIT;
  const binding = { route: 'inbox_events', filters: { inbox_id: inbox.inbox_id, ascending }, principal: p };
  const afterSeq = q.page_token ? Number(readCursor(db, q.page_token, binding, 1)[0]) : null;
  const rows = readLabelEvents(db, inbox.inbox_id, readVisibility(p), { ascending, afterSeq, limit: limit + 1 });
  return pageFromRows(db, binding, 'events', rows, limit, (r) => [r.seq], inboxEvent(inbox.pod_id));
}

/**
 * The label change log of an inbox (migration 21, src/db/migrations-label-events.ts): what
 * AgentMail's `inboxes.events.list` pages. Rows are written by triggers; this module only reads
 * them, in `seq` order, leaving out what the caller may not see: events of a message a hidden
 * label hides from it (as a direct read would), and events that name such a label.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { visibleSql, type Visibility } from './labels.js';

export const LABEL_EVENT_TYPES = ['label.added', 'label.removed'] as const;
export type LabelEventType = (typeof LABEL_EVENT_TYPES)[number];

/** `lev_` and the zero-padded sequence: ids sort as the log does (the SDK documents ordering by event_id). */
const EVENT_ID_DIGITS = 16;
export const labelEventId = (seq: number) => `lev_${String(seq).padStart(EVENT_ID_DIGITS, '0')}`;

export interface LabelEventRow {
  seq: number;
  inbox_id: string;
  message_id: string;
  event_type: LabelEventType;
  label: string;
  created_at: string;
}

/** One page (`limit` rows) of an inbox's label events after `afterSeq` in the order asked, visible under `v`. */
export function readLabelEvents(db: Db, inboxId: string, v: Visibility, page: { ascending: boolean; afterSeq: number | null; limit: number }): LabelEventRow[] {
  const order = page.ascending ? 'ASC' : 'DESC';
  const position = page.afterSeq === null ? '' : page.ascending ? 'AND e.seq > ?' : 'AND e.seq < ?';
  const namesHidden = v.excluded.length === 0 ? '' : `AND e.label NOT IN (${v.excluded.map((l) => `'${l}'`).join(', ')})`;
  const sql = `SELECT e.seq, e.inbox_id, m.message_id, e.event_type, e.label, e.created_at
    FROM label_events e INDEXED BY label_events_inbox JOIN messages m ON m.id = e.message_rowid
    WHERE e.inbox_id = ? ${position} ${namesHidden} AND ${visibleSql('m', v)}
    ORDER BY e.seq ${order} LIMIT ?`;
  const params: (string | number)[] = [inboxId, ...(page.afterSeq === null ? [] : [page.afterSeq]), page.limit];
  return prepared(db, sql).all(...params) as LabelEventRow[];
}

/**
 * Usage metrics (issue 20 §5, docs/metrics.md), counted from svc's own records — no separate
 * counters to drift: a received message is an inbound row with the system label `received` (its
 * hidden label picks the variant, in the order of spec §6.2 rule 1), a sent one carries `sent`,
 * and the delivery outcome labels `delivered`, `bounced`, `complained` and `rejected` stay on the
 * message once a report or the transport set them (src/mail/delivery-reports.ts,
 * src/mail/outbound.ts). Each is counted once per message, in the bucket of the message's
 * `timestamp` (received or queued time, UTC). Deleted mail is no longer counted.
 *
 * Every query walks the index `messages_inbox_time` (inbox, time) over the window only and reads
 * no message row: labels come from `message_labels`' primary key and stored sizes from the length
 * of the raw MIME parts, which SQLite reads from the record header without the bytes. The limits
 * below bound the window, the bucket count and the answer.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

/** The event types of AgentMail's metrics API (the SDK's MetricEventType), in its order. */
export const METRIC_EVENT_TYPES = [
  'message.received',
  'message.received.spam',
  'message.received.blocked',
  'message.received.unauthenticated',
  'message.sent',
  'message.delivered',
  'message.bounced',
  'message.complained',
  'message.rejected',
  'domain.verified',
] as const;
export type MetricEventType = (typeof METRIC_EVENT_TYPES)[number];

/** AgentMail's usage types (the SDK's UsageType); svc has no pods, so `pod_count` is never answered. */
export const USAGE_TYPES = ['storage_bytes', 'message_count', 'thread_count', 'inbox_count', 'pod_count', 'domain_count'] as const;
export type UsageType = (typeof USAGE_TYPES)[number];

/** The window when `start` is left out: the last 24 hours, as AgentMail. */
export const DEFAULT_METRICS_RANGE_S = 24 * 3600;
/** How far back `start` may reach (AgentMail: "within the last 90 days"); bounds every scan. */
export const MAX_METRICS_AGE_S = 90 * 24 * 3600;
/** Bucket sizes in whole seconds (AgentMail's bounds). */
export const MIN_METRICS_PERIOD_S = 1;
export const MAX_METRICS_PERIOD_S = 86_400;
/** Points of one usage series (AgentMail: range / period at most 1000), and buckets of one event series returned. */
export const MAX_METRICS_BUCKETS = 1000;
/** Event and usage type names one query may list (there are 10 and 6; repeats are merged). */
export const MAX_METRICS_TYPES = 20;

/** One query's window, checked (src/requests/metrics.ts): [startMs, endMs), bucket size or none. */
export interface MetricsWindow {
  startMs: number;
  endMs: number;
  /** Seconds per bucket; null: one point per distinct event time (AgentMail's "individual event counts"). */
  periodS: number | null;
  limit: number;
  descending: boolean;
}

export interface MetricBucket {
  timestamp: string;
  count: number;
}
export interface UsagePoint {
  timestamp: string;
  value: number;
}

/** Label bits a message carries, summed per message (labels are unique per message, so the sum is an OR). */
const BITS = { received: 1, spam: 2, blocked: 4, unauthenticated: 8, sent: 16, delivered: 32, bounced: 64, complained: 128, rejected: 256 } as const;
const LABEL_BITS_SQL = `CAST(total(CASE label ${Object.entries(BITS)
  .map(([label, bit]) => `WHEN '${label}' THEN ${bit}`)
  .join(' ')} ELSE 0 END) AS INTEGER)`;

/** The message event types one message counts for, from its label bits. */
function eventTypesOf(bits: number): MetricEventType[] {
  const types: MetricEventType[] = [];
  if (bits & BITS.received) {
    // Spec §6.2 rule 1: blocked, then spam, then unauthenticated picks the variant.
    if (bits & BITS.blocked) types.push('message.received.blocked');
    else if (bits & BITS.spam) types.push('message.received.spam');
    else if (bits & BITS.unauthenticated) types.push('message.received.unauthenticated');
    else types.push('message.received');
  }
  if (bits & BITS.sent) types.push('message.sent');
  if (bits & BITS.delivered) types.push('message.delivered');
  if (bits & BITS.bounced) types.push('message.bounced');
  if (bits & BITS.complained) types.push('message.complained');
  if (bits & BITS.rejected) types.push('message.rejected');
  return types;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** SQL for the bucket key of a stored ISO time column: epoch seconds floored to the period, or the time itself. */
const bucketSql = (column: string, periodS: number | null) => (periodS === null ? column : `(CAST(strftime('%s', ${column}) AS INTEGER) / ${periodS}) * ${periodS}`);
const bucketTimestamp = (key: number | string) => (typeof key === 'number' ? iso(key * 1000) : key);

/** The first `limit` buckets of a sparse series, in time order (newest first when descending). */
function series(counts: Map<number | string, number>, w: MetricsWindow): MetricBucket[] {
  const keys = [...counts.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (w.descending) keys.reverse();
  return keys.slice(0, w.limit).map((k) => ({ timestamp: bucketTimestamp(k), count: counts.get(k)! }));
}

/**
 * Event counts per type for the given inboxes (their ids, already scoped), sparse: buckets with
 * no event are left out. `domain.verified` is counted only when `withDomains` (the owner's
 * instance-wide query); other inboxes' mail is never read.
 */
export function countMetricEvents(db: Db, inboxIds: readonly string[], types: readonly MetricEventType[], w: MetricsWindow, withDomains: boolean): Record<string, MetricBucket[]> {
  const wanted = new Set(types);
  const perType = new Map<MetricEventType, Map<number | string, number>>(types.map((t) => [t, new Map()]));
  if (types.some((t) => t !== 'domain.verified') && inboxIds.length > 0) {
    const rows = prepared(
      db,
      `SELECT b, bits, count(*) AS n FROM (
         SELECT ${bucketSql('m.timestamp', w.periodS)} AS b,
                (SELECT ${LABEL_BITS_SQL} FROM message_labels WHERE message_rowid = m.id) AS bits
           FROM messages m INDEXED BY messages_inbox_time
          WHERE m.inbox_id IN (SELECT value FROM json_each(?)) AND m.timestamp >= ? AND m.timestamp < ?
       ) GROUP BY b, bits`,
    ).all(JSON.stringify(inboxIds), iso(w.startMs), iso(w.endMs)) as { b: number | string; bits: number; n: number }[];
    for (const row of rows) {
      for (const type of eventTypesOf(row.bits)) {
        if (!wanted.has(type)) continue;
        const counts = perType.get(type)!;
        counts.set(row.b, (counts.get(row.b) ?? 0) + row.n);
      }
    }
  }
  if (wanted.has('domain.verified') && withDomains) {
    const rows = prepared(db, `SELECT ${bucketSql('verified_at', w.periodS)} AS b, count(*) AS n FROM domains WHERE verified_at >= ? AND verified_at < ? GROUP BY b`).all(
      iso(w.startMs),
      iso(w.endMs),
    ) as { b: number | string; n: number }[];
    const counts = perType.get('domain.verified')!;
    for (const row of rows) counts.set(row.b, row.n);
  }
  return Object.fromEntries(types.map((t) => [t, series(perType.get(t)!, w)]));
}

/** The dense bucket grid of a usage query: epoch-aligned starts from the one holding `startMs` up to `endMs`. */
export function usageBuckets(w: MetricsWindow & { periodS: number }): number {
  const first = Math.floor(w.startMs / 1000 / w.periodS) * w.periodS;
  return Math.ceil((w.endMs / 1000 - first) / w.periodS);
}

/**
 * Running totals at each bucket: each point is a bucket's start (UTC, aligned to the epoch) with
 * the total reached by the bucket's end (by `end` for the last, partial one), so the newest point
 * of a window ending now is the current total. Counted: messages and their stored raw MIME bytes,
 * threads, inboxes (instance-wide) and domains (the owner's instance-wide query).
 */
export function usageSeries(
  db: Db,
  inboxIds: readonly string[],
  types: readonly UsageType[],
  w: MetricsWindow & { periodS: number },
  scope: { instanceWide: boolean; withDomains: boolean },
): Record<string, UsagePoint[]> {
  const period = w.periodS;
  const firstS = Math.floor(w.startMs / 1000 / period) * period;
  const n = usageBuckets(w);
  const firstIso = iso(firstS * 1000);
  const endIso = iso(w.endMs);
  const ids = JSON.stringify(inboxIds);
  /** Bucket index of a time column: -1 before the grid (the baseline), else its bucket. */
  const indexSql = (column: string) => `CASE WHEN ${column} < ? THEN -1 ELSE (CAST(strftime('%s', ${column}) AS INTEGER) - ${firstS}) / ${period} END`;
  const increments = (rows: { i: number; v: number }[]): number[] => {
    const steps = new Array<number>(n + 1).fill(0); // [0] the baseline, [i + 1] bucket i
    for (const r of rows) steps[Math.min(n, r.i + 1)]! += r.v;
    const totals: number[] = [];
    let running = steps[0]!;
    for (let i = 0; i < n; i++) totals.push((running += steps[i + 1]!));
    return totals;
  };

  const answered = new Map<UsageType, number[]>();
  const wants = (t: UsageType) => types.includes(t);
  if (wants('message_count') || wants('storage_bytes')) {
    const bytes = wants('storage_bytes') ? '(SELECT total(length(bytes)) FROM raw_message_parts WHERE message_rowid = m.id)' : '0';
    const rows = prepared(
      db,
      `SELECT ${indexSql('m.timestamp')} AS i, count(*) AS n, total(${bytes}) AS bytes
         FROM messages m INDEXED BY messages_inbox_time
        WHERE m.inbox_id IN (SELECT value FROM json_each(?)) AND m.timestamp < ?
        GROUP BY i`,
    ).all(firstIso, ids, endIso) as { i: number; n: number; bytes: number }[];
    if (wants('message_count')) answered.set('message_count', increments(rows.map((r) => ({ i: r.i, v: r.n }))));
    if (wants('storage_bytes')) answered.set('storage_bytes', increments(rows.map((r) => ({ i: r.i, v: r.bytes }))));
  }
  if (wants('thread_count')) {
    const rows = prepared(
      db,
      `SELECT ${indexSql('t.created_at')} AS i, count(*) AS v FROM threads t INDEXED BY threads_inbox
        WHERE t.inbox_id IN (SELECT value FROM json_each(?)) AND t.created_at < ? GROUP BY i`,
    ).all(firstIso, ids, endIso) as { i: number; v: number }[];
    answered.set('thread_count', increments(rows));
  }
  if (wants('inbox_count') && scope.instanceWide) {
    const rows = prepared(db, `SELECT ${indexSql('created_at')} AS i, count(*) AS v FROM inboxes WHERE inbox_id IN (SELECT value FROM json_each(?)) AND created_at < ? GROUP BY i`).all(
      firstIso,
      ids,
      endIso,
    ) as { i: number; v: number }[];
    answered.set('inbox_count', increments(rows));
  }
  if (wants('domain_count') && scope.instanceWide && scope.withDomains) {
    const rows = prepared(db, `SELECT ${indexSql('created_at')} AS i, count(*) AS v FROM domains WHERE created_at < ? GROUP BY i`).all(firstIso, endIso) as { i: number; v: number }[];
    answered.set('domain_count', increments(rows));
  }

  const out: Record<string, UsagePoint[]> = {};
  for (const type of types) {
    const totals = answered.get(type);
    if (!totals) continue; // a type this scope does not carry is ignored, as AgentMail does
    const points = totals.map((value, i) => ({ timestamp: iso((firstS + i * period) * 1000), value }));
    if (w.descending) points.reverse();
    out[type] = points.slice(0, w.limit);
  }
  return out;
}

export interface InboxCounts {
  inbox_id: string;
  unread: number;
  pending_approval?: number;
}

/**
 * Live counts per inbox (svc extension, docs/metrics.md): unread mail as the inbox view shows it
 * (no hidden label), and drafts awaiting the owner's approval when `withDrafts`. Only inboxes with
 * something to count are listed.
 */
export function liveCounts(db: Db, inboxIds: readonly string[], withDrafts: boolean): InboxCounts[] {
  const ids = JSON.stringify(inboxIds);
  const byInbox = new Map<string, InboxCounts>();
  const entry = (inboxId: string) => {
    let e = byInbox.get(inboxId);
    if (!e) byInbox.set(inboxId, (e = { inbox_id: inboxId, unread: 0, ...(withDrafts ? { pending_approval: 0 } : {}) }));
    return e;
  };
  const unread = prepared(
    db,
    `SELECT m.inbox_id AS inbox_id, count(*) AS n
       FROM message_labels l INDEXED BY message_labels_label CROSS JOIN messages m ON m.id = l.message_rowid
      WHERE l.label = 'unread' AND m.inbox_id IN (SELECT value FROM json_each(?))
        AND NOT EXISTS (SELECT 1 FROM message_labels h WHERE h.message_rowid = l.message_rowid AND h.label IN ('spam', 'blocked', 'unauthenticated', 'trash'))
      GROUP BY m.inbox_id`,
  ).all(ids) as { inbox_id: string; n: number }[];
  for (const r of unread) entry(r.inbox_id).unread = r.n;
  if (withDrafts) {
    const pending = prepared(
      db,
      `SELECT inbox_id, count(*) AS n FROM drafts INDEXED BY drafts_due WHERE send_status = 'pending_approval' AND inbox_id IN (SELECT value FROM json_each(?)) GROUP BY inbox_id`,
    ).all(ids) as { inbox_id: string; n: number }[];
    for (const r of pending) entry(r.inbox_id).pending_approval = r.n;
  }
  return [...byInbox.values()].sort((a, b) => (a.inbox_id < b.inbox_id ? -1 : 1));
}

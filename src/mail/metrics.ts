/**
 * Usage metrics (issue 20 §5, docs/metrics.md), counted from svc's own records — no separate
 * counters to drift: a received message is an inbound row with the system label `received` (its
 * hidden label picks the variant, in the order of spec §6.2 rule 1), a sent one carries `sent`,
 * and the delivery outcome labels `delivered`, `bounced`, `complained` and `rejected` stay on the
 * message once a report or the transport set them (src/mail/delivery-reports.ts,
 * src/mail/outbound.ts). Each is counted once per message, in the bucket of the message's
 * `timestamp` (received or queued time, UTC). Deleted mail is no longer counted.
 *
 * Event queries walk the index `messages_inbox_time` (inbox, time) over the window only and read
 * no message row: labels come from `message_labels`' primary key and stored sizes from the length
 * of the raw MIME parts, which SQLite reads from the record header without the bytes. Usage totals
 * also need what came before the window: one aggregate over the same index, so their cost grows
 * with the inboxes' whole history (docs/metrics.md, "Cost and bounds"). The limits below bound the
 * window, the bucket count and the answer.
 *
 * Usage counts only mail the caller can read (hidden labels per `readVisibility`); event counts
 * gate the hidden variants by permission in src/requests/metrics.ts.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { HIDDEN_LABELS, visibleSql, type Visibility } from './labels.js';

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

/**
 * The message event types as a test on a message's label bits: `(bits & mask) = value`. The
 * received variants follow spec §6.2 rule 1: blocked, then spam, then unauthenticated.
 */
const { received: R, spam: S, blocked: B, unauthenticated: U } = BITS;
const EVENT_BITS: Record<Exclude<MetricEventType, 'domain.verified'>, readonly [mask: number, value: number]> = {
  'message.received': [R | B | S | U, R],
  'message.received.spam': [R | B | S, R | S],
  'message.received.blocked': [R | B, R | B],
  'message.received.unauthenticated': [R | B | S | U, R | U],
  'message.sent': [BITS.sent, BITS.sent],
  'message.delivered': [BITS.delivered, BITS.delivered],
  'message.bounced': [BITS.bounced, BITS.bounced],
  'message.complained': [BITS.complained, BITS.complained],
  'message.rejected': [BITS.rejected, BITS.rejected],
};

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * SQL for the bucket key of a stored ISO time column: epoch seconds floored to the period (bound
 * as the named parameter `@period`; better-sqlite3 binds numbers as REAL, hence the CASTs for an
 * integer division), or the time itself when there is no period.
 */
const bucketSql = (column: string, periodS: number | null) => (periodS === null ? column : `(CAST(strftime('%s', ${column}) AS INTEGER) / CAST(@period AS INTEGER)) * CAST(@period AS INTEGER)`);
const bucketTimestamp = (key: number | string) => (typeof key === 'number' ? iso(key * 1000) : key);

/** The buckets of a sparse series (at most `limit` of them, from SQL), in time order (newest first when descending). */
function series(rows: { b: number | string; n: number }[], w: MetricsWindow): MetricBucket[] {
  const sorted = [...rows].sort((x, y) => (x.b < y.b ? -1 : x.b > y.b ? 1 : 0));
  if (w.descending) sorted.reverse();
  return sorted.slice(0, w.limit).map((r) => ({ timestamp: bucketTimestamp(r.b), count: r.n }));
}

/**
 * Event counts per type for the given inboxes (their ids, already scoped), sparse: buckets with
 * no event are left out. `domain.verified` is counted only when `withDomains` (the owner's
 * instance-wide query); other inboxes' mail is never read.
 *
 * One pass over the window: each message's label bits are read once, matched against the wanted
 * types, grouped per type and bucket, and SQLite keeps the first `limit` buckets of each type
 * (ROW_NUMBER over the groups, in the asked order), so at most `limit` rows per type reach
 * JavaScript — also without `period`, where every distinct event time is its own bucket.
 */
export function countMetricEvents(db: Db, inboxIds: readonly string[], types: readonly MetricEventType[], w: MetricsWindow, withDomains: boolean): Record<string, MetricBucket[]> {
  const perType = new Map<MetricEventType, { b: number | string; n: number }[]>(types.map((t) => [t, []]));
  const dir = w.descending ? 'DESC' : 'ASC';
  const messageTypes = types.filter((t): t is Exclude<MetricEventType, 'domain.verified'> => t !== 'domain.verified');
  const period = w.periodS === null ? {} : { period: w.periodS };
  if (messageTypes.length > 0 && inboxIds.length > 0) {
    // CROSS JOIN keeps the window's messages as the outer loop: each is read once, then matched
    // against the few wanted types.
    const rows = prepared(
      db,
      `SELECT type, b, n FROM (
         SELECT ty.type AS type, e.b AS b, count(*) AS n, row_number() OVER (PARTITION BY ty.type ORDER BY e.b ${dir}) AS rn
           FROM (SELECT ${bucketSql('m.timestamp', w.periodS)} AS b,
                        (SELECT ${LABEL_BITS_SQL} FROM message_labels WHERE message_rowid = m.id) AS bits
                   FROM messages m INDEXED BY messages_inbox_time
                  WHERE m.inbox_id IN (SELECT value FROM json_each(@inboxes)) AND m.timestamp >= @start AND m.timestamp < @end) e
          CROSS JOIN (SELECT json_extract(value, '$[0]') AS type, json_extract(value, '$[1]') AS mask, json_extract(value, '$[2]') AS want FROM json_each(@types)) ty
          WHERE (e.bits & ty.mask) = ty.want
          GROUP BY ty.type, e.b
       ) WHERE rn <= @limit`,
    ).all({
      inboxes: JSON.stringify(inboxIds),
      types: JSON.stringify(messageTypes.map((t) => [t, ...EVENT_BITS[t]])),
      start: iso(w.startMs),
      end: iso(w.endMs),
      limit: w.limit,
      ...period,
    }) as { type: MetricEventType; b: number | string; n: number }[];
    for (const row of rows) perType.get(row.type)!.push(row);
  }
  if (perType.has('domain.verified') && withDomains) {
    const rows = prepared(
      db,
      `SELECT ${bucketSql('verified_at', w.periodS)} AS b, count(*) AS n FROM domains WHERE verified_at >= @start AND verified_at < @end GROUP BY b ORDER BY b ${dir} LIMIT @limit`,
    ).all({ start: iso(w.startMs), end: iso(w.endMs), limit: w.limit, ...period }) as { b: number | string; n: number }[];
    perType.set('domain.verified', rows);
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
 *
 * Only mail the caller can read counts: a message carrying a hidden label in `v.excluded` (the
 * caller's read visibility, src/mail/labels.ts `readVisibility`) is left out of every total, and a
 * thread counts from its first message the caller can read (a thread of hidden mail only is not
 * counted, as thread lists leave it out) — so the series never shows when hidden mail arrived.
 *
 * Messages: one aggregate over the index `messages_inbox_time` for the total before the window,
 * and one grouped by bucket over the window. Threads: one pass over the inboxes' threads
 * (`threads_inbox`), finding each one's first readable message through `messages_thread`.
 */
export function usageSeries(
  db: Db,
  inboxIds: readonly string[],
  types: readonly UsageType[],
  w: MetricsWindow & { periodS: number },
  scope: { instanceWide: boolean; withDomains: boolean },
  v: Visibility,
): Record<string, UsagePoint[]> {
  const period = w.periodS;
  const firstS = Math.floor(w.startMs / 1000 / period) * period;
  const n = usageBuckets(w);
  const grid = { first: iso(firstS * 1000), end: iso(w.endMs), firstS, period };
  const ids = JSON.stringify(inboxIds);
  /** Bucket index of a time column within the grid (bound as `@firstS`, `@period`). */
  const indexSql = (column: string) => `(CAST(strftime('%s', ${column}) AS INTEGER) - CAST(@firstS AS INTEGER)) / CAST(@period AS INTEGER)`;
  /** Running totals from the total before the grid and the increments per bucket index. */
  const running = (base: number, rows: { i: number; v: number }[]): number[] => {
    const steps = new Array<number>(n).fill(0);
    for (const r of rows) steps[Math.max(0, Math.min(n - 1, r.i))]! += r.v;
    const totals: number[] = [];
    let total = base;
    for (let i = 0; i < n; i++) totals.push((total += steps[i]!));
    return totals;
  };

  const answered = new Map<UsageType, number[]>();
  const wants = (t: UsageType) => types.includes(t);
  if ((wants('message_count') || wants('storage_bytes')) && inboxIds.length > 0) {
    const bytes = wants('storage_bytes') ? '(SELECT total(length(bytes)) FROM raw_message_parts WHERE message_rowid = m.id)' : '0';
    const visible = visibleSql('m', v);
    const before = prepared(
      db,
      `SELECT count(*) AS n, total(${bytes}) AS bytes FROM messages m INDEXED BY messages_inbox_time
        WHERE m.inbox_id IN (SELECT value FROM json_each(@ids)) AND m.timestamp < @first AND ${visible}`,
    ).get({ ids, first: grid.first }) as { n: number; bytes: number };
    const within = prepared(
      db,
      `SELECT ${indexSql('m.timestamp')} AS i, count(*) AS n, total(${bytes}) AS bytes FROM messages m INDEXED BY messages_inbox_time
        WHERE m.inbox_id IN (SELECT value FROM json_each(@ids)) AND m.timestamp >= @first AND m.timestamp < @end AND ${visible}
        GROUP BY i`,
    ).all({ ids, ...grid }) as { i: number; n: number; bytes: number }[];
    if (wants('message_count')) answered.set('message_count', running(before.n, within.map((r) => ({ i: r.i, v: r.n }))));
    if (wants('storage_bytes')) answered.set('storage_bytes', running(before.bytes, within.map((r) => ({ i: r.i, v: r.bytes }))));
  } else {
    for (const t of ['message_count', 'storage_bytes'] as const) if (wants(t)) answered.set(t, running(0, []));
  }
  if (wants('thread_count')) {
    // A thread counts from its first message the caller can read: the first of messages_thread's
    // (thread_id, timestamp) entries that passes the visibility test. MATERIALIZED: found once
    // per thread (a flattened subquery would be run again for each use of `first`).
    const rows = prepared(
      db,
      `WITH f AS MATERIALIZED (
         SELECT (SELECT m.timestamp FROM messages m INDEXED BY messages_thread WHERE m.thread_id = t.thread_id AND ${visibleSql('m', v)} ORDER BY m.timestamp LIMIT 1) AS first
           FROM threads t INDEXED BY threads_inbox WHERE t.inbox_id IN (SELECT value FROM json_each(@ids))
       )
       SELECT CASE WHEN first < @first THEN -1 ELSE ${indexSql('first')} END AS i, count(*) AS v FROM f WHERE first < @end GROUP BY i`,
    ).all({ ids, ...grid }) as { i: number; v: number }[];
    answered.set('thread_count', running(rows.find((r) => r.i === -1)?.v ?? 0, rows.filter((r) => r.i >= 0)));
  }
  if (wants('inbox_count') && scope.instanceWide) {
    const rows = prepared(
      db,
      `SELECT CASE WHEN created_at < @first THEN -1 ELSE ${indexSql('created_at')} END AS i, count(*) AS v FROM inboxes
        WHERE inbox_id IN (SELECT value FROM json_each(@ids)) AND created_at < @end GROUP BY i`,
    ).all({ ids, ...grid }) as { i: number; v: number }[];
    answered.set('inbox_count', running(rows.find((r) => r.i === -1)?.v ?? 0, rows.filter((r) => r.i >= 0)));
  }
  if (wants('domain_count') && scope.instanceWide && scope.withDomains) {
    const rows = prepared(db, `SELECT CASE WHEN created_at < @first THEN -1 ELSE ${indexSql('created_at')} END AS i, count(*) AS v FROM domains WHERE created_at < @end GROUP BY i`).all(
      grid,
    ) as { i: number; v: number }[];
    answered.set('domain_count', running(rows.find((r) => r.i === -1)?.v ?? 0, rows.filter((r) => r.i >= 0)));
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

/** Unread mail as the inbox view shows it: labelled `unread`, no hidden label. */
const NOT_HIDDEN = visibleSql('m', { excluded: HIDDEN_LABELS });

/**
 * Live counts per inbox (svc extension, docs/metrics.md): unread mail as the inbox view shows it
 * (no hidden label), and drafts awaiting the owner's approval when `withDrafts`. Only inboxes with
 * something to count are listed.
 *
 * The cost follows the caller's scope: for a caller whose inboxes are the whole home (`wholeHome`)
 * the `unread` labels are walked once through `message_labels_label`; otherwise each of the
 * caller's inboxes is counted through `messages_inbox_time`, so a key scoped to one inbox never
 * reads the rest of the home's unread mail.
 */
export function liveCounts(db: Db, inboxIds: readonly string[], withDrafts: boolean, wholeHome: boolean): InboxCounts[] {
  const ids = JSON.stringify(inboxIds);
  const byInbox = new Map<string, InboxCounts>();
  const entry = (inboxId: string) => {
    let e = byInbox.get(inboxId);
    if (!e) byInbox.set(inboxId, (e = { inbox_id: inboxId, unread: 0, ...(withDrafts ? { pending_approval: 0 } : {}) }));
    return e;
  };
  if (wholeHome) {
    const unread = prepared(
      db,
      `SELECT m.inbox_id AS inbox_id, count(*) AS n
         FROM message_labels l INDEXED BY message_labels_label CROSS JOIN messages m ON m.id = l.message_rowid
        WHERE l.label = 'unread' AND m.inbox_id IN (SELECT value FROM json_each(?)) AND ${NOT_HIDDEN}
        GROUP BY m.inbox_id`,
    ).all(ids) as { inbox_id: string; n: number }[];
    for (const r of unread) entry(r.inbox_id).unread = r.n;
  } else {
    const count = prepared(
      db,
      `SELECT count(*) AS n FROM messages m INDEXED BY messages_inbox_time
        WHERE m.inbox_id = ? AND EXISTS (SELECT 1 FROM message_labels u WHERE u.message_rowid = m.id AND u.label = 'unread') AND ${NOT_HIDDEN}`,
    );
    for (const inboxId of inboxIds) {
      const { n } = count.get(inboxId) as { n: number };
      if (n > 0) entry(inboxId).unread = n;
    }
  }
  if (withDrafts) {
    const pending = prepared(
      db,
      `SELECT inbox_id, count(*) AS n FROM drafts INDEXED BY drafts_due WHERE send_status = 'pending_approval' AND inbox_id IN (SELECT value FROM json_each(?)) GROUP BY inbox_id`,
    ).all(ids) as { inbox_id: string; n: number }[];
    for (const r of pending) entry(r.inbox_id).pending_approval = r.n;
  }
  return [...byInbox.values()].sort((a, b) => (a.inbox_id < b.inbox_id ? -1 : 1));
}

/**
 * Usage metrics (issue 20 §5, docs/metrics.md), counted from svc's own records: a received message is an inbound row with the system label `received` (its
 * hidden label picks the variant, in the order of spec §6.2 rule 1), a sent one carries `sent`,
 * and the delivery outcome labels `delivered`, `bounced`, `complained` and `rejected` stay on the
 * message once a report or the transport set them (src/mail/delivery-reports.ts,
 * src/mail/outbound.ts). Each is counted once per message, in the bucket of the message's
 * `timestamp` (received or queued time, UTC). Deleted mail is no longer counted.
 *
 * Whole hours come from the per-hour counters the triggers of migration 34 keep in the same
 * transaction as each change (src/db/migrations-metric-days.ts), so a running total costs a few
 * rows per hour of the window, not a row per message; where the buckets are whole days, whole days
 * come from their day roll-ups (migration 39), a few rows per day. What the counters cannot split — buckets
 * that split hours, the partial hours at a window's ends — walks the index `messages_inbox_time`
 * (inbox, time) over that part only and reads no message row: labels come from `message_labels`'
 * primary key and stored sizes from the length of the raw MIME parts, which SQLite reads from the
 * record header without the bytes (docs/metrics.md, "Cost and bounds"). The limits below bound the
 * window, the bucket count and the answer.
 *
 * Usage counts only mail the caller can read (hidden labels per `readVisibility`); event counts
 * gate the hidden variants by permission in src/requests/metrics.ts.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { visibleSql, type Visibility } from './labels.js';
import { HIDDEN_VISIBILITY_BITS, METRIC_LABEL_BITS } from '../db/migrations-metric-days.js';

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
const HOUR_MS = 3_600_000;
/** A counter's key (metric_hours, thread_hours): the UTC hour of a time, `YYYY-MM-DDTHH`. */
const hourOf = (ms: number) => iso(ms).slice(0, 13);
/** A day counter's key (metric_days, thread_days): the UTC day of a time, `YYYY-MM-DD`. */
const dayOf = (ms: number) => iso(ms).slice(0, 10);
/** SQL: the epoch seconds of a counter's `hour` key. */
const HOUR_EPOCH_SQL = "CAST(strftime('%s', hour || ':00') AS INTEGER)";
/** SQL: the epoch seconds of a day counter's `day` key. */
const DAY_EPOCH_SQL = "CAST(strftime('%s', day) AS INTEGER)";
/** Whether every UTC day lies in one bucket of this period, so a day's roll-up can stand for its hours. */
const dayBuckets = (periodS: number) => periodS % 86_400 === 0;

/**
 * Where counts come from: the stored per-hour counters (migration 34) and their day roll-ups
 * (migration 39) with the messages of the partial hours, or the messages alone (`scan`: the computation before the counters, kept to check
 * them against, test/unit/metric-days.test.ts).
 */
export type CountSource = 'counters' | 'scan';

/**
 * The counter tables a query reads (docs/metrics.md, "Cost and bounds"): for a caller whose
 * inboxes are every inbox of the home, the whole home's roll-ups (one row per hour or day, not per
 * inbox); else the per-inbox counters of its inboxes (`@ids`). `totals` holds all-time sums, so
 * the total before a window is the all-time total less the window's hours (migrations 28 and 34);
 * `days` holds each UTC day's sums of `hours` (migration 39).
 */
interface CounterTables {
  hours: string;
  days: string;
  totals: string;
  /** The inbox filter of all three, on the bound `@ids`. */
  where: string;
}

/** Whether `inboxIds` are every inbox of the home: asked once per query, for all its counter tables. */
function coversHome(db: Db, inboxIds: readonly string[]): boolean {
  const sql = 'SELECT (SELECT count(*) FROM inboxes) = (SELECT count(*) FROM inboxes WHERE inbox_id IN (SELECT value FROM json_each(?))) AS home';
  return (prepared(db, sql).get(JSON.stringify(inboxIds)) as { home: number }).home === 1;
}

function counterTables(wholeHome: boolean, kind: 'metric' | 'thread'): CounterTables {
  if (wholeHome) return { hours: `${kind}_home_hours`, days: `${kind}_home_days`, totals: `${kind}_totals`, where: '1 = 1' };
  return { hours: `${kind}_hours`, days: `${kind}_days`, totals: `${kind}_totals`, where: 'inbox_id IN (SELECT value FROM json_each(@ids))' };
}

const DAY_MS = 24 * HOUR_MS;

/**
 * The counter rows of the whole hours [fromMs, toMs) (both on hour boundaries; to the end of time when `toMs` is null), as
 * one SQL row source with `t`, each row's start in epoch seconds, and `columns`, filtered by
 * `filter`: the UTC days wholly inside from the day table when `days` (a row per day instead of 24),
 * the hours around them from the hour table. Bounds are bound as `@<prefix>0`, `@<prefix>1`, …,
 * added to `params`. Reading days is right only where each day falls in one bucket of the caller.
 */
function counterSpan(c: CounterTables, span: { fromMs: number; toMs: number | null; days: boolean }, columns: string, filter: string, prefix: string, params: Record<string, unknown>): string {
  const { fromMs, toMs } = span;
  if (toMs !== null && fromMs >= toMs) return `SELECT 0 AS t, ${columns} FROM ${c.hours} WHERE 0`;
  const parts: { grain: 'hour' | 'day'; from: number; to: number | null }[] = [];
  const firstDay = Math.ceil(fromMs / DAY_MS) * DAY_MS;
  const endDay = toMs === null ? null : Math.floor(toMs / DAY_MS) * DAY_MS;
  if (!span.days || (endDay !== null && firstDay >= endDay)) parts.push({ grain: 'hour', from: fromMs, to: toMs });
  else {
    if (fromMs < firstDay) parts.push({ grain: 'hour', from: fromMs, to: firstDay });
    parts.push({ grain: 'day', from: firstDay, to: endDay });
    if (endDay !== null && endDay < toMs!) parts.push({ grain: 'hour', from: endDay, to: toMs });
  }
  return parts
    .map((part, i) => {
      const key = part.grain === 'hour' ? hourOf : dayOf;
      const bound = (edge: 'f' | 't', ms: number) => {
        params[`${prefix}${i}${edge}`] = key(ms);
        return `@${prefix}${i}${edge}`;
      };
      const to = part.to === null ? '' : ` AND ${part.grain} < ${bound('t', part.to)}`;
      const epoch = part.grain === 'hour' ? HOUR_EPOCH_SQL : DAY_EPOCH_SQL;
      return `SELECT ${epoch} AS t, ${columns} FROM ${part.grain === 'hour' ? c.hours : c.days} WHERE ${c.where} AND ${filter} AND ${part.grain} >= ${bound('f', part.from)}${to}`;
    })
    .join(' UNION ALL ');
}

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
 * The message event counts of a window, counted from the messages (the events index walk below):
 * every period without `counters`, and the partial hours around the stored counters of a window of whole-hour buckets.
 */
function scanEvents(db: Db, inboxIds: readonly string[], messageTypes: readonly Exclude<MetricEventType, 'domain.verified'>[], w: MetricsWindow): { type: MetricEventType; b: number | string; n: number }[] {
  const period = w.periodS === null ? {} : { period: w.periodS };
  // SQLite counts the window's messages per bucket and label bits (a message's labels read once,
  // from message_labels' key), in bucket order; each (bucket, bits) group is matched here against
  // the few wanted types. Reading stops once every type has its `limit` buckets, so at most that
  // many per type are held, also without `period`, where every event time is its own bucket.
  const groups = prepared(
    db,
    `SELECT b, bits, count(*) FROM (
       SELECT ${bucketSql('m.timestamp', w.periodS)} AS b, (SELECT ${LABEL_BITS_SQL} FROM message_labels WHERE message_rowid = m.id) AS bits
         FROM messages m INDEXED BY messages_inbox_time
        WHERE m.inbox_id IN (SELECT value FROM json_each(@inboxes)) AND m.timestamp >= @start AND m.timestamp < @end)
     GROUP BY b, bits ORDER BY b ${w.descending ? 'DESC' : 'ASC'}`,
  )
    .raw(true)
    .iterate({ inboxes: JSON.stringify(inboxIds), start: iso(w.startMs), end: iso(w.endMs), ...period }) as IterableIterator<[b: number | string, bits: number, n: number]>;
  const perType = messageTypes.map((type) => ({ type, mask: EVENT_BITS[type][0], want: EVENT_BITS[type][1], buckets: [] as { b: number | string; n: number }[] }));
  let previous: number | string | null = null;
  for (const [b, bits, n] of groups) {
    // A new bucket: a type with `limit` buckets already takes nothing more.
    if (b !== previous && perType.every((t) => t.buckets.length >= w.limit)) break; // leaving the loop ends the statement
    previous = b;
    for (const t of perType) {
      if ((bits & t.mask) !== t.want) continue;
      const last = t.buckets[t.buckets.length - 1];
      if (last?.b === b) last.n += n;
      else if (t.buckets.length < w.limit) t.buckets.push({ b, n });
    }
  }
  return perType.flatMap((t) => t.buckets.map(({ b, n }) => ({ type: t.type, b, n })));
}

/**
 * Event counts per type for the given inboxes (their ids, already scoped), sparse: buckets with
 * no event are left out. `domain.verified` is counted only when `withDomains` (the owner's
 * instance-wide query); other inboxes' mail is never read.
 *
 * One pass over the window: each message's label bits are read once and SQLite groups the
 * messages by bucket and bits, in the asked order; each wanted type sums the groups its bits
 * match until it has its first `limit` buckets. Matching the types in SQL (a join of every
 * message with every type, then a window function over the groups) cost about six times as much.
 */
export function countMetricEvents(
  db: Db,
  inboxIds: readonly string[],
  types: readonly MetricEventType[],
  w: MetricsWindow,
  withDomains: boolean,
  source: CountSource = 'counters',
): Record<string, MetricBucket[]> {
  const perType = new Map<MetricEventType, { b: number | string; n: number }[]>(types.map((t) => [t, []]));
  const dir = w.descending ? 'DESC' : 'ASC';
  const messageTypes = types.filter((t): t is Exclude<MetricEventType, 'domain.verified'> => t !== 'domain.verified');
  const period = w.periodS === null ? {} : { period: w.periodS };
  if (messageTypes.length > 0 && inboxIds.length > 0) {
    const hourlyFrom = Math.ceil(w.startMs / HOUR_MS) * HOUR_MS;
    const hourlyTo = Math.floor(w.endMs / HOUR_MS) * HOUR_MS;
    if (source === 'counters' && w.periodS !== null && w.periodS % 3_600 === 0 && hourlyFrom < hourlyTo) {
      // Whole hours from the stored counters; the partial hours at either end from the messages
      // (at most an hour each). Each holds at most one bucket per type, so no limit applies there.
      // The counters are summed into the window's buckets by SQLite: a busy home has a row per
      // hour and label set, several thousand in 90 days, and only a few rows per bucket come back;
      // daily buckets read the whole days' roll-ups instead, a row per day and label set.
      const sums = new Map<MetricEventType, Map<number, number>>(messageTypes.map((t) => [t, new Map()]));
      const add = (type: MetricEventType, b: number, n: number) => {
        const buckets = sums.get(type)!;
        buckets.set(b, (buckets.get(b) ?? 0) + n);
      };
      const c = counterTables(coversHome(db, inboxIds), 'metric');
      const params: Record<string, unknown> = { ids: JSON.stringify(inboxIds), period: w.periodS };
      const span = counterSpan(c, { fromMs: hourlyFrom, toMs: hourlyTo, days: dayBuckets(w.periodS) }, 'bits, messages', '1 = 1', 'k', params);
      const buckets = prepared(db, `SELECT t / CAST(@period AS INTEGER) * CAST(@period AS INTEGER) AS b, bits, sum(messages) AS n FROM (${span}) GROUP BY 1, bits`).all(params) as {
        b: number;
        bits: number;
        n: number;
      }[];
      for (const row of buckets) {
        for (const t of messageTypes) if (row.n > 0 && (row.bits & EVENT_BITS[t][0]) === EVENT_BITS[t][1]) add(t, row.b, row.n);
      }
      for (const [from, to] of [[w.startMs, hourlyFrom], [hourlyTo, w.endMs]] as const) {
        if (from < to) for (const row of scanEvents(db, inboxIds, messageTypes, { ...w, startMs: from, endMs: to, limit: MAX_METRICS_BUCKETS })) add(row.type, Number(row.b), row.n);
      }
      for (const [type, byBucket] of sums) for (const [b, n] of byBucket) if (n > 0) perType.get(type)!.push({ b, n });
    } else {
      for (const row of scanEvents(db, inboxIds, messageTypes, w)) perType.get(row.type)!.push(row);
    }
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
 * Messages and threads: the counters' hours before the part counted from the messages (the
 * window's last hour for buckets of whole hours, else the window from its first hour), and that part
 * grouped by bucket. `scan` counts everything from the messages, as before the counters.
 */
export function usageSeries(
  db: Db,
  inboxIds: readonly string[],
  types: readonly UsageType[],
  w: MetricsWindow & { periodS: number },
  scope: { instanceWide: boolean; withDomains: boolean },
  v: Visibility,
  source: CountSource = 'counters',
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
  let home: boolean | undefined;
  const wholeHome = () => (home ??= coversHome(db, inboxIds));
  // With counters: the stored per-hour counts up to `scanFrom` (an hour boundary), the messages
  // from there to `end` — the last, partial hour for buckets of whole hours, else (a period that
  // splits hours) the window from its first hour on. Without (`scan`): every message before the
  // window is aggregated, as before migration 25.
  const counted = source === 'counters';
  const scanFromMs = !counted ? firstS * 1000 : period % 3_600 === 0 ? Math.max(firstS * 1000, Math.floor(w.endMs / HOUR_MS) * HOUR_MS) : Math.floor((firstS * 1000) / HOUR_MS) * HOUR_MS;
  const scan = { ...grid, from: iso(scanFromMs) };
  /**
   * The stored part of a series: the counters from the grid's first hour to `scanFrom`, summed per
   * bucket index `i` (whole days from the day roll-ups when the buckets are whole days), and every
   * counter from `scanFrom` on as `i = -2`; with those subtracted, the all-time total is the total
   * before the grid.
   */
  const stored = <R,>(c: CounterTables, columns: string, sums: string, filter: string, params: Record<string, unknown>): R[] => {
    const all = { ...params, ids, firstS, period };
    const inGrid = counterSpan(c, { fromMs: Math.floor((firstS * 1000) / HOUR_MS) * HOUR_MS, toMs: scanFromMs, days: dayBuckets(period) }, columns, filter, 'g', all);
    const after = counterSpan(c, { fromMs: scanFromMs, toMs: null, days: true }, columns, filter, 'a', all);
    const sql = `SELECT (t - CAST(@firstS AS INTEGER)) / CAST(@period AS INTEGER) AS i, ${sums} FROM (${inGrid}) GROUP BY i
      UNION ALL SELECT -2 AS i, ${sums} FROM (${after})`;
    return prepared(db, sql).all(all) as R[];
  };
  const visible = visibleSql('m', v);
  if ((wants('message_count') || wants('storage_bytes')) && inboxIds.length > 0) {
    const bytes = wants('storage_bytes') ? '(SELECT total(length(bytes)) FROM raw_message_parts WHERE message_rowid = m.id)' : '0';
    const steps: { i: number; n: number; bytes: number }[] = [];
    if (counted) {
      // The all-time totals less every counter from the grid's first hour on: what was stored before
      // the grid. Those before `scanFrom` are the grid's own steps; the later ones come from the scan below.
      const hidden = v.excluded.reduce((mask, l) => mask | METRIC_LABEL_BITS[l], 0);
      const c = counterTables(wholeHome(), 'metric');
      const total = prepared(db, `SELECT total(messages) AS n, total(bytes) AS bytes FROM ${c.totals} WHERE ${c.where} AND (bits & @hidden) = 0`).get({ ids, hidden }) as { n: number; bytes: number };
      const counts = stored<{ i: number; n: number; bytes: number }>(c, 'messages, bytes', 'total(messages) AS n, total(bytes) AS bytes', '(bits & @hidden) = 0', { hidden });
      const sum = (f: (r: (typeof counts)[number]) => number) => counts.reduce((acc, r) => acc + f(r), 0);
      steps.push({ i: -1, n: total.n - sum((r) => r.n), bytes: total.bytes - sum((r) => r.bytes) }, ...counts.filter((r) => r.i >= 0));
    } else {
      const before = prepared(
        db,
        `SELECT count(*) AS n, total(${bytes}) AS bytes FROM messages m INDEXED BY messages_inbox_time
          WHERE m.inbox_id IN (SELECT value FROM json_each(@ids)) AND m.timestamp < @from AND ${visible}`,
      ).get({ ids, from: scan.from }) as { n: number; bytes: number };
      steps.push({ i: -1, ...before });
    }
    steps.push(
      ...(prepared(
        db,
        `SELECT ${indexSql('m.timestamp')} AS i, count(*) AS n, total(${bytes}) AS bytes FROM messages m INDEXED BY messages_inbox_time
          WHERE m.inbox_id IN (SELECT value FROM json_each(@ids)) AND m.timestamp >= @from AND m.timestamp < @end AND ${visible}
          GROUP BY i`,
      ).all({ ids, ...scan }) as { i: number; n: number; bytes: number }[]),
    );
    const base = (f: (r: (typeof steps)[number]) => number) => steps.filter((r) => r.i < 0).reduce((sum, r) => sum + f(r), 0);
    const inGrid = steps.filter((r) => r.i >= 0);
    if (wants('message_count')) answered.set('message_count', running(base((r) => r.n), inGrid.map((r) => ({ i: r.i, v: r.n }))));
    if (wants('storage_bytes')) answered.set('storage_bytes', running(base((r) => r.bytes), inGrid.map((r) => ({ i: r.i, v: r.bytes }))));
  } else {
    for (const t of ['message_count', 'storage_bytes'] as const) if (wants(t)) answered.set(t, running(0, []));
  }
  if (wants('thread_count')) {
    let rows: { i: number; v: number }[];
    if (counted) {
      // Stored: each thread in the hour of its first message this visibility reads (bit `@visibility`
      // of `visible_to`); from `scanFrom` on, the readable messages with no readable one before
      // them in their thread (messages_thread's order, the row id breaking a tie).
      const visibility = v.excluded.reduce((bit, l) => bit | HIDDEN_VISIBILITY_BITS[l], 0);
      const c = counterTables(wholeHome(), 'thread');
      const total = prepared(db, `SELECT total(threads) AS v FROM ${c.totals} WHERE ${c.where} AND (visible_to >> @visibility) & 1`).get({ ids, visibility }) as { v: number };
      const counts = stored<{ i: number; v: number }>(c, 'threads', 'total(threads) AS v', '(visible_to >> @visibility) & 1', { visibility });
      rows = [
        { i: -1, v: total.v - counts.reduce((acc, r) => acc + r.v, 0) },
        ...counts.filter((r) => r.i >= 0),
        ...(prepared(
          db,
          `SELECT ${indexSql('m.timestamp')} AS i, count(*) AS v FROM messages m INDEXED BY messages_inbox_time
            WHERE m.inbox_id IN (SELECT value FROM json_each(@ids)) AND m.timestamp >= @from AND m.timestamp < @end AND ${visible}
              AND NOT EXISTS (SELECT 1 FROM messages p INDEXED BY messages_thread
                               WHERE p.thread_id = m.thread_id AND (p.timestamp < m.timestamp OR (p.timestamp = m.timestamp AND p.id < m.id)) AND ${visibleSql('p', v)})
            GROUP BY i`,
        ).all({ ids, ...scan }) as { i: number; v: number }[]),
      ];
    } else {
      // A thread counts from its first message the caller can read: the first of messages_thread's
      // (thread_id, timestamp) entries that passes the visibility test. MATERIALIZED: found once
      // per thread (a flattened subquery would be run again for each use of `first`).
      rows = prepared(
        db,
        `WITH f AS MATERIALIZED (
           SELECT (SELECT m.timestamp FROM messages m INDEXED BY messages_thread WHERE m.thread_id = t.thread_id AND ${visible} ORDER BY m.timestamp LIMIT 1) AS first
             FROM threads t INDEXED BY threads_inbox_id WHERE t.inbox_id IN (SELECT value FROM json_each(@ids))
         )
         SELECT CASE WHEN first < @first THEN -1 ELSE ${indexSql('first')} END AS i, count(*) AS v FROM f WHERE first < @end GROUP BY i`,
      ).all({ ids, ...grid }) as { i: number; v: number }[];
    }
    answered.set('thread_count', running(rows.filter((r) => r.i < 0).reduce((sum, r) => sum + r.v, 0), rows.filter((r) => r.i >= 0)));
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

/**
 * Live counts per inbox (svc extension, docs/metrics.md): unread mail as the inbox view shows it
 * (labelled `unread`, no hidden label), and drafts awaiting the owner's approval when `withDrafts`.
 * Only inboxes with something to count are listed. Unread comes from `inbox_unread`, the count
 * the triggers of migration 29 keep with every label change: a row per inbox of the caller's
 * scope, whatever the mail stored, and no other inbox is read.
 */
export function liveCounts(db: Db, inboxIds: readonly string[], withDrafts: boolean): InboxCounts[] {
  const ids = JSON.stringify(inboxIds);
  const byInbox = new Map<string, InboxCounts>();
  const entry = (inboxId: string) => {
    let e = byInbox.get(inboxId);
    if (!e) byInbox.set(inboxId, (e = { inbox_id: inboxId, unread: 0, ...(withDrafts ? { pending_approval: 0 } : {}) }));
    return e;
  };
  const unread = prepared(db, 'SELECT inbox_id, unread AS n FROM inbox_unread WHERE inbox_id IN (SELECT value FROM json_each(?)) AND unread > 0').all(ids) as { inbox_id: string; n: number }[];
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

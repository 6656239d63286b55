/**
 * Usage metrics requests (issue 20 §5, docs/metrics.md): AgentMail's `GET /v0/metrics/events`,
 * `GET /v0/metrics/usage` and their inbox forms, plus svc's live counts. Shared by REST
 * (src/routes/metrics.ts), MCP and the CLI; they run in reader threads (src/requests/read-ops.ts).
 *
 * Checks, in the order of every agent route: inbox in scope (else 404) → `message_read` (403) →
 * the hidden variants asked for need their `label_*_read` (403), `domain.verified` the owner
 * (403). Then the window: RFC 3339 bounds, `start` within 90 days, a future `end` clamped to now,
 * `start` before `end`, and for usage at most 1000 buckets (400 with a fix).
 */
import { Type, type Static } from 'typebox';
import type { Db } from '../db/open.js';
import { inboxFor, requirePermission } from '../auth/access.js';
import { hasPermission, isOwner, type Principal } from '../auth/principal.js';
import { ApiError } from '../core/errors.js';
import { labelPermission, readVisibility } from '../mail/labels.js';
import { queryList, scopeInboxes } from '../mail/query.js';
import {
  countMetricEvents,
  DEFAULT_METRICS_RANGE_S,
  liveCounts,
  MAX_METRICS_AGE_S,
  MAX_METRICS_BUCKETS,
  MAX_METRICS_PERIOD_S,
  MAX_METRICS_TYPES,
  METRIC_EVENT_TYPES,
  MIN_METRICS_PERIOD_S,
  USAGE_TYPES,
  usageBuckets,
  usageSeries,
  type MetricEventType,
  type MetricsWindow,
  type UsageType,
} from '../mail/metrics.js';

/** A type name as the query carries it: one name, or a JSON array of names (the SDK's form). */
const TypeNames = Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: MAX_METRICS_TYPES });
/** The bounds are parsed here, so a bad one gets its own message and fix. */
const Bound = Type.String({ minLength: 1, maxLength: 64 });

const WindowQuery = {
  start: Type.Optional(Bound),
  end: Type.Optional(Bound),
  period: Type.Optional(Type.Integer({ minimum: MIN_METRICS_PERIOD_S, maximum: MAX_METRICS_PERIOD_S })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_METRICS_BUCKETS })),
  descending: Type.Optional(Type.Boolean()),
};

export const MetricEventsQuery = Type.Object({ event_types: Type.Optional(TypeNames), ...WindowQuery }, { additionalProperties: false });
export type MetricEventsQuery = Static<typeof MetricEventsQuery>;
export const MetricUsageQuery = Type.Object({ usage_types: Type.Optional(TypeNames), ...WindowQuery }, { additionalProperties: false });
export type MetricUsageQuery = Static<typeof MetricUsageQuery>;

const Bucket = Type.Object({ timestamp: Type.String(), count: Type.Integer() });
const Point = Type.Object({ timestamp: Type.String(), value: Type.Number() });
/** `{"message.sent": [{timestamp, count}], ...}`: one key per event type asked for (AgentMail's QueryMetricsResponse). */
export const MetricEventsResponse = Type.Object(Object.fromEntries(METRIC_EVENT_TYPES.map((t) => [t, Type.Optional(Type.Array(Bucket))])), { additionalProperties: false });
/** `{"message_count": [{timestamp, value}], ...}` (AgentMail's QueryUsageResponse). */
export const MetricUsageResponse = Type.Object(Object.fromEntries(USAGE_TYPES.map((t) => [t, Type.Optional(Type.Array(Point))])), { additionalProperties: false });

const InboxCountsShape = Type.Object({ inbox_id: Type.String(), unread: Type.Integer(), pending_approval: Type.Optional(Type.Integer()) });
/** svc extension: live counts over the caller's scope (or one inbox), for dashboards and agents. */
export const LiveCountsResponse = Type.Object({ unread: Type.Integer(), pending_approval: Type.Optional(Type.Integer()), inboxes: Type.Array(InboxCountsShape) });

/** RFC 3339 date-time, the form of every other time bound of the API. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

function parseBound(name: 'start' | 'end', value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = RFC3339.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw invalid(`\`${name}\` is not an RFC 3339 date-time: ${JSON.stringify(value.slice(0, 64))}.`, `Give \`${name}\` like 2026-01-31T09:00:00Z (UTC) or with an offset, e.g. 2026-01-31T10:00:00+01:00.`);
  return ms;
}

/** The checked window: defaults (the last 24 hours up to now), 90-day reach, a future end clamped. */
export function metricsWindow(q: MetricEventsQuery | MetricUsageQuery, nowMs: number): MetricsWindow {
  const endGiven = parseBound('end', q.end);
  const startGiven = parseBound('start', q.start);
  const endMs = Math.min(endGiven ?? nowMs, nowMs);
  const startMs = startGiven ?? endMs - DEFAULT_METRICS_RANGE_S * 1000;
  if (startMs < nowMs - MAX_METRICS_AGE_S * 1000) {
    throw invalid('`start` is more than 90 days ago.', `Metrics reach back 90 days: give \`start\` after ${new Date(nowMs - MAX_METRICS_AGE_S * 1000).toISOString()}.`);
  }
  if (startMs >= endMs) {
    throw invalid('`start` is not before `end` (a future `end` counts as now).', 'Give a `start` earlier than `end` and than now; leave both out for the last 24 hours.');
  }
  return { startMs, endMs, periodS: q.period ?? null, limit: q.limit ?? MAX_METRICS_BUCKETS, descending: q.descending === true };
}

/** Names from the query (repeated or a JSON array), each checked against `known`. */
function typeNames<T extends string>(param: string, values: string[] | undefined, known: readonly T[]): T[] | undefined {
  const names = queryList(values);
  if (names === undefined) return undefined;
  for (const name of names) {
    if (!(known as readonly string[]).includes(name)) throw invalid(`Unknown ${param} value ${JSON.stringify(name.slice(0, 64))}.`, `Use one or more of: ${known.join(', ')}.`);
  }
  return known.filter((k) => names.includes(k));
}

const HIDDEN_VARIANTS = { 'message.received.spam': 'spam', 'message.received.blocked': 'blocked', 'message.received.unauthenticated': 'unauthenticated' } as const;

/** Whether the caller may see counts of this event type (the visibility of its event, spec §6.2). */
function mayCount(p: Principal, type: MetricEventType): boolean {
  if (type === 'domain.verified') return isOwner(p);
  const hidden = (HIDDEN_VARIANTS as Record<string, 'spam' | 'blocked' | 'unauthenticated'>)[type];
  return hidden === undefined || hasPermission(p, labelPermission(hidden));
}

/** The inboxes counted: the given one (scope 404, then `message_read` 403) or every inbox in the caller's scope. */
function metricInboxes(db: Db, p: Principal, inboxId: string | undefined): string[] {
  if (inboxId !== undefined) return [inboxFor(db, p, inboxId, 'message_read').inbox_id];
  requirePermission(p, 'message_read');
  return scopeInboxes(db, p);
}

/** `GET /v0/metrics/events` and `/v0/inboxes/{inbox_id}/metrics/events`: sparse counts per event type. */
export function metricEvents(db: Db, p: Principal, inboxId: string | undefined, q: MetricEventsQuery) {
  const inboxIds = metricInboxes(db, p, inboxId);
  const asked = typeNames('event_types', q.event_types, METRIC_EVENT_TYPES);
  for (const type of asked ?? []) {
    if (mayCount(p, type)) continue;
    if (type === 'domain.verified') throw new ApiError('missing_permission', 'Counts of `domain.verified` are for the owner only (domains are owner-only).', { fix: 'Leave `domain.verified` out of `event_types`.' });
    const label = HIDDEN_VARIANTS[type as keyof typeof HIDDEN_VARIANTS];
    requirePermission(p, labelPermission(label));
  }
  // Left out: every type the caller may see; domains have no inbox, so the inbox form leaves them out.
  const types = asked ?? METRIC_EVENT_TYPES.filter((t) => mayCount(p, t) && (t !== 'domain.verified' || inboxId === undefined));
  const window = metricsWindow(q, Date.now());
  return countMetricEvents(db, inboxIds, types, window, inboxId === undefined && isOwner(p));
}

/** Usage points when `period` is left out: hourly while that fits the bucket limit, else daily. */
function defaultUsagePeriod(w: MetricsWindow): number {
  return usageBuckets({ ...w, periodS: 3600 }) <= MAX_METRICS_BUCKETS ? 3600 : 86_400;
}

/** `GET /v0/metrics/usage` and `/v0/inboxes/{inbox_id}/metrics/usage`: running totals per usage type. */
export function metricUsage(db: Db, p: Principal, inboxId: string | undefined, q: MetricUsageQuery) {
  const inboxIds = metricInboxes(db, p, inboxId);
  const types: readonly UsageType[] = typeNames('usage_types', q.usage_types, USAGE_TYPES) ?? USAGE_TYPES;
  const base = metricsWindow(q, Date.now());
  const window = { ...base, periodS: base.periodS ?? defaultUsagePeriod(base) };
  const buckets = usageBuckets(window);
  if (buckets > MAX_METRICS_BUCKETS) {
    throw invalid(
      `The range divided by \`period\` is ${buckets} buckets; at most ${MAX_METRICS_BUCKETS} are answered.`,
      `Narrow the range or give a larger \`period\` (at least ${Math.ceil((window.endMs - window.startMs) / 1000 / (MAX_METRICS_BUCKETS - 1))} seconds for this range).`,
    );
  }
  // Only mail the caller can read is counted: hidden mail (spam, blocked, unauthenticated,
  // trash) without the matching `label_*_read` is left out, as a direct read would 404 it.
  return usageSeries(db, inboxIds, types, window, { instanceWide: inboxId === undefined, withDomains: inboxId === undefined && isOwner(p) }, readVisibility(p));
}

/** `GET /v0/metrics/counts` and `/v0/inboxes/{inbox_id}/metrics/counts` (svc extension): unread and awaiting approval. */
export function metricCounts(db: Db, p: Principal, inboxId: string | undefined) {
  const inboxIds = metricInboxes(db, p, inboxId);
  const withDrafts = hasPermission(p, 'draft_read');
  const inboxes = liveCounts(db, inboxIds, withDrafts);
  const sum = (f: (c: (typeof inboxes)[number]) => number) => inboxes.reduce((n, c) => n + f(c), 0);
  return { unread: sum((c) => c.unread), ...(withDrafts ? { pending_approval: sum((c) => c.pending_approval ?? 0) } : {}), inboxes };
}

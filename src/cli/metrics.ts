/**
 * `svc metrics` (issue 20 §5, docs/metrics.md): event counts and usage totals over time, and live
 * counts, for one inbox (`--inbox`) or every inbox the caller can see. Owner or agent
 * (`message_read`); the same routes as AgentMail's metrics API.
 */
import { enc, opt, type Ctx, type Group, type Option } from './commands.js';
import { out, printJson, table } from './output.js';
import { MAX_METRICS_BUCKETS, MAX_METRICS_PERIOD_S, METRIC_EVENT_TYPES, MIN_METRICS_PERIOD_S, USAGE_TYPES } from '../mail/metrics.js';

const base = (ctx: Ctx) => {
  const inbox = ctx.str('inbox');
  return inbox ? `/v0/inboxes/${enc(inbox)}/metrics` : '/v0/metrics';
};

const WINDOW: Option[] = [
  opt('inbox ADDRESS', 'One inbox (default: every inbox the caller can see).'),
  opt('start TIME', 'Window start, RFC 3339 (default: 24 hours before --end; at most 90 days ago).'),
  opt('end TIME', 'Window end, RFC 3339 (default and latest: now).'),
  opt('period SECONDS', `Bucket size, ${MIN_METRICS_PERIOD_S}–${MAX_METRICS_PERIOD_S}, aligned to UTC (e.g. 3600 hourly, 86400 daily).`),
  opt('limit N', `Points per series, 1–${MAX_METRICS_BUCKETS}.`),
  opt('descending', 'Newest first.'),
];

const windowQuery = (ctx: Ctx) => ({
  start: ctx.str('start'),
  end: ctx.str('end'),
  period: ctx.int('period', MIN_METRICS_PERIOD_S, MAX_METRICS_PERIOD_S),
  limit: ctx.int('limit', 1, MAX_METRICS_BUCKETS),
  descending: ctx.bool('descending') || undefined,
});

/** One row per point time, one column per series. */
function seriesTable(series: Record<string, { timestamp: string; count?: number; value?: number }[]>, empty: string): string {
  const names = Object.keys(series);
  const times = [...new Set(names.flatMap((n) => series[n]!.map((p) => p.timestamp)))].sort();
  if (times.length === 0) return `${empty}\n${names.length ? `(${names.join(', ')})` : ''}`.trim();
  const at = (name: string, time: string) => {
    const p = series[name]!.find((x) => x.timestamp === time);
    return p ? String(p.count ?? p.value ?? 0) : '0';
  };
  return table([['TIME', ...names], ...times.map((time) => [time, ...names.map((n) => at(n, time))]), ['TOTAL', ...names.map((n) => String(series[n]!.reduce((s, p) => s + (p.count ?? 0), 0)))]]);
}

export const group: Group = {
  name: 'metrics',
  summary: 'mail event counts, usage totals and live counts',
  actions: {
    events: {
      summary: 'Count received, sent, delivered, bounced, complained and rejected mail over time.',
      options: [opt('type TYPE...', `Event types (default: every one you may see): ${METRIC_EVENT_TYPES.join(', ')}.`), ...WINDOW],
      examples: ['svc metrics events --period 3600', 'svc metrics events --inbox alice@example.com --type message.sent --type message.bounced --period 86400 --start 2026-01-01T00:00:00Z'],
      async run(ctx) {
        const client = await ctx.client();
        const types = ctx.list('type', true);
        const res = await client.call<Record<string, { timestamp: string; count: number }[]>>('GET', `${base(ctx)}/events`, { query: { event_types: types.length ? types : undefined, ...windowQuery(ctx) } });
        if (ctx.json) return printJson(res);
        out(seriesTable(res, 'No events in this window.'));
      },
    },
    usage: {
      summary: 'Running totals over time: stored bytes, messages, threads (and inboxes, domains instance-wide).',
      options: [opt('type TYPE...', `Usage types (default: every one the scope carries): ${USAGE_TYPES.join(', ')}.`), ...WINDOW],
      examples: ['svc metrics usage --inbox alice@example.com --period 86400 --start 2026-01-01T00:00:00Z'],
      async run(ctx) {
        const client = await ctx.client();
        const types = ctx.list('type', true);
        const res = await client.call<Record<string, { timestamp: string; value: number }[]>>('GET', `${base(ctx)}/usage`, { query: { usage_types: types.length ? types : undefined, ...windowQuery(ctx) } });
        if (ctx.json) return printJson(res);
        const names = Object.keys(res);
        const times = [...new Set(names.flatMap((n) => res[n]!.map((p) => p.timestamp)))].sort();
        out(table([['TIME', ...names], ...times.map((time) => [time, ...names.map((n) => String(res[n]!.find((p) => p.timestamp === time)?.value ?? ''))])]));
      },
    },
    counts: {
      summary: 'Unread mail and drafts awaiting approval, per inbox.',
      options: [opt('inbox ADDRESS', 'One inbox (default: every inbox the caller can see).')],
      examples: ['svc metrics counts', 'svc metrics counts --inbox alice@example.com --json'],
      async run(ctx) {
        const client = await ctx.client();
        const res = await client.call<{ unread: number; pending_approval?: number; inboxes: { inbox_id: string; unread: number; pending_approval?: number }[] }>('GET', `${base(ctx)}/counts`);
        if (ctx.json) return printJson(res);
        const drafts = res.pending_approval !== undefined;
        const rows = res.inboxes.map((i) => [i.inbox_id, String(i.unread), ...(drafts ? [String(i.pending_approval ?? 0)] : [])]);
        out(table([['INBOX', 'UNREAD', ...(drafts ? ['AWAITING APPROVAL'] : [])], ...rows, ['TOTAL', String(res.unread), ...(drafts ? [String(res.pending_approval)] : [])]]));
      },
    },
  },
};

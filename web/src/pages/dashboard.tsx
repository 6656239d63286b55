/**
 * Dashboard (issue 20 §5, docs/metrics.md): mail received, sent, delivered, bounced, complained
 * and rejected over a chosen period, for the whole home and per inbox, drawn as plain SVG (no
 * chart library), with live counts — unread, drafts awaiting approval, quarantine — that follow
 * the live event stream.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { enc, get, query } from '../api';
import { useLiveEvents } from '../live';
import { ErrorBox, Page, useLoad } from '../ui';
import type { Inbox } from '../api-types';

type Buckets = { timestamp: string; count: number }[];
type EventSeries = Record<string, Buckets>;
interface Counts {
  unread: number;
  pending_approval?: number;
  inboxes: { inbox_id: string; unread: number; pending_approval?: number }[];
}

/** The periods offered: how far back, and the bucket size that keeps a chart readable. */
const RANGES = [
  { key: '24h', label: '24 hours', seconds: 86_400, period: 3600 },
  { key: '7d', label: '7 days', seconds: 7 * 86_400, period: 21_600 },
  { key: '30d', label: '30 days', seconds: 30 * 86_400, period: 86_400 },
  // A little under 90 days: the service refuses a start further back than that.
  { key: '90d', label: '90 days', seconds: 90 * 86_400 - 3600, period: 86_400 },
] as const;
type Range = (typeof RANGES)[number];

const SERIES: { type: string; label: string; color: string }[] = [
  { type: 'message.received', label: 'Received', color: '#1f5fa8' },
  { type: 'message.sent', label: 'Sent', color: '#2e7d4f' },
  { type: 'message.delivered', label: 'Delivered', color: '#7aa84a' },
  { type: 'message.bounced', label: 'Bounced', color: '#c0392b' },
  { type: 'message.complained', label: 'Complained', color: '#b9770e' },
  { type: 'message.rejected', label: 'Rejected', color: '#7d3c98' },
];
const INBOX_SERIES = SERIES.slice(0, 2);
/** Inboxes charted one by one; more are reachable through the inbox picker. */
const INBOX_ROWS_MAX = 20;
/** Live events arrive in bursts: one reload per burst. */
const RELOAD_DELAY_MS = 400;

function windowOf(range: Range, now = Date.now()) {
  const end = now;
  const start = end - range.seconds * 1000;
  return { start, end, period: range.period };
}

/** Dense counts on the bucket grid (the API leaves empty buckets out); buckets start on UTC multiples of the period. */
function grid(buckets: Buckets | undefined, w: { start: number; end: number; period: number }): number[] {
  const step = w.period * 1000;
  const first = Math.floor(w.start / step) * step;
  const n = Math.max(1, Math.ceil((w.end - first) / step));
  const values = new Array<number>(n).fill(0);
  for (const b of buckets ?? []) {
    const i = Math.floor((Date.parse(b.timestamp) - first) / step);
    if (i >= 0 && i < n) values[i]! += b.count;
  }
  return values;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

/** One line per series over the bucket grid, on a shared scale. */
function Chart({ series, w, height = 160, compact = false }: { series: { type: string; label: string; color: string; values: number[] }[]; w: { start: number; end: number }; height?: number; compact?: boolean }) {
  const width = compact ? 240 : 640;
  const pad = compact ? 4 : 28;
  const n = series[0]?.values.length ?? 1;
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const x = (i: number) => pad + (n <= 1 ? 0 : (i * (width - 2 * pad)) / (n - 1));
  const y = (v: number) => height - pad - (v * (height - 2 * pad)) / max;
  const fmt = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
  return (
    <svg class="chart" viewBox={`0 0 ${width} ${height}`} role="img" aria-label={series.map((s) => `${s.label} ${sum(s.values)}`).join(', ')} data-testid="metrics-chart">
      <line x1={pad} y1={height - pad} x2={width - pad} y2={height - pad} stroke="#ccd3db" />
      {!compact && (
        <>
          <text x={2} y={pad} font-size="10" fill="#5f6b77">
            {max}
          </text>
          <text x={pad} y={height - 8} font-size="10" fill="#5f6b77">
            {fmt(w.start)} UTC
          </text>
          <text x={width - pad} y={height - 8} font-size="10" fill="#5f6b77" text-anchor="end">
            {fmt(w.end)} UTC
          </text>
        </>
      )}
      {series.map((s) => (
        <polyline
          key={s.type}
          data-series={s.type}
          data-total={sum(s.values)}
          fill="none"
          stroke={s.color}
          stroke-width={compact ? 1.5 : 2}
          points={s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}
        />
      ))}
    </svg>
  );
}

function Legend({ series }: { series: { type: string; label: string; color: string; values: number[] }[] }) {
  return (
    <div class="legend">
      {series.map((s) => (
        <span key={s.type} data-legend={s.type}>
          <span class="swatch" style={{ background: s.color }} /> {s.label} <strong>{sum(s.values)}</strong>
        </span>
      ))}
    </div>
  );
}

async function eventsFor(inboxId: string | null, types: { type: string }[], w: { start: number; end: number; period: number }): Promise<EventSeries> {
  const base = inboxId ? `/v0/inboxes/${enc(inboxId)}/metrics/events` : '/v0/metrics/events';
  return get<EventSeries>(
    `${base}${query({ event_types: types.map((s) => s.type), start: new Date(w.start).toISOString(), end: new Date(w.end).toISOString(), period: w.period })}`,
  );
}

function InboxRow({ inbox, w, tick, counts }: { inbox: Inbox; w: ReturnType<typeof windowOf>; tick: number; counts: Counts['inboxes'][number] | undefined }) {
  const data = useLoad(() => eventsFor(inbox.inbox_id, INBOX_SERIES, w), [inbox.inbox_id, w.start, tick]);
  const series = INBOX_SERIES.map((s) => ({ ...s, values: grid(data.data?.[s.type], w) }));
  return (
    <tr data-inbox={inbox.inbox_id}>
      <td>
        <a href={`/inboxes/${enc(inbox.inbox_id)}`}>{inbox.inbox_id}</a>
      </td>
      <td>{data.error ? <span class="muted small">{data.error.message}</span> : <Chart series={series} w={w} height={40} compact />}</td>
      {series.map((s) => (
        <td key={s.type} class="num" data-col={s.type}>
          {sum(s.values)}
        </td>
      ))}
      <td class="num" data-col="unread">
        {counts?.unread ?? 0}
      </td>
      <td class="num" data-col="pending_approval">
        {counts?.pending_approval ?? 0}
      </td>
    </tr>
  );
}

export function DashboardPage() {
  const [rangeKey, setRangeKey] = useState<Range['key']>('24h');
  const [inboxId, setInboxId] = useState<string>('');
  const range = RANGES.find((r) => r.key === rangeKey)!;
  // Bumped by live events: every chart and count loads again, with the window moved to now.
  const [tick, setTick] = useState(0);
  // The window moves to now with each reload, and stays put between them.
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const win = useMemo(() => windowOf(range), [rangeKey, tick]);

  const inboxes = useLoad(() => get<{ inboxes: Inbox[] }>(`/v0/inboxes${query({ limit: 100 })}`), [tick]);
  const overall = useLoad(() => eventsFor(inboxId || null, SERIES, win), [inboxId, rangeKey, tick]);
  const counts = useLoad(() => get<Counts>('/v0/metrics/counts'), [tick]);
  const quarantine = useLoad(() => get<{ total: number }>('/v0/owner/quarantine?limit=1').catch(() => null), [tick]);

  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  useLiveEvents(['message.', 'draft.', 'inbound.'], () => {
    clearTimeout(timer.current);
    timer.current = window.setTimeout(() => setTick((t) => t + 1), RELOAD_DELAY_MS);
  });

  const series = SERIES.map((s) => ({ ...s, values: grid(overall.data?.[s.type], win) }));
  const byInbox = new Map((counts.data?.inboxes ?? []).map((c) => [c.inbox_id, c]));
  const shown = (inboxes.data?.inboxes ?? []).filter((i) => !inboxId || i.inbox_id === inboxId).slice(0, INBOX_ROWS_MAX);

  return (
    <Page title="Dashboard">
      <div class="stat-row">
        <a class="card stat" href="/inboxes">
          <span class="muted small">Unread</span>
          <strong data-testid="count-unread">{counts.data?.unread ?? '…'}</strong>
        </a>
        <a class="card stat" href="/needs-you#approvals">
          <span class="muted small">Awaiting approval</span>
          <strong data-testid="count-pending">{counts.data?.pending_approval ?? '…'}</strong>
        </a>
        <a class="card stat" href="/needs-you#quarantine">
          <span class="muted small">Incoming mail stuck</span>
          <strong data-testid="count-quarantine">{quarantine.data ? quarantine.data.total : '—'}</strong>
        </a>
      </div>
      <ErrorBox error={counts.error} />

      <section class="card">
        <div class="dash-toolbar">
          <label>
            Period{' '}
            <select name="range" value={rangeKey} onChange={(e) => setRangeKey((e.currentTarget as HTMLSelectElement).value as Range['key'])}>
              {RANGES.map((r) => (
                <option key={r.key} value={r.key}>
                  {r.label}
                </option>
              ))}
            </select>
          </label>{' '}
          <label>
            Inbox{' '}
            <select name="inbox" value={inboxId} onChange={(e) => setInboxId((e.currentTarget as HTMLSelectElement).value)}>
              <option value="">All inboxes</option>
              {(inboxes.data?.inboxes ?? []).map((i) => (
                <option key={i.inbox_id} value={i.inbox_id}>
                  {i.inbox_id}
                </option>
              ))}
            </select>
          </label>
          <span class="muted small"> buckets of {range.period >= 86_400 ? `${range.period / 86_400} day` : `${range.period / 3600} h`} (UTC)</span>
        </div>
        <ErrorBox error={overall.error} />
        <Chart series={series} w={win} />
        <Legend series={series} />
      </section>

      <section class="card">
        <h2>Per inbox</h2>
        <ErrorBox error={inboxes.error} />
        <div class="table-wrap">
          <table class="list metrics-table">
            <thead>
              <tr>
                <th>Inbox</th>
                <th>Received / sent</th>
                {INBOX_SERIES.map((s) => (
                  <th key={s.type} class="num">
                    {s.label}
                  </th>
                ))}
                <th class="num">Unread</th>
                <th class="num">Awaiting approval</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((i) => (
                <InboxRow key={i.inbox_id} inbox={i} w={win} tick={tick} counts={byInbox.get(i.inbox_id)} />
              ))}
            </tbody>
          </table>
        </div>
        {(inboxes.data?.inboxes.length ?? 0) > INBOX_ROWS_MAX && !inboxId && <p class="muted small">The first {INBOX_ROWS_MAX} inboxes are shown; pick one above for the others.</p>}
      </section>
    </Page>
  );
}

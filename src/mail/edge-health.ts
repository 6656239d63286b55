/**
 * Each paired edge's health as the home sees it (docs/edge.md "Several edges"): when a pull or a
 * send last reached it, the last failure's code, how many failed in a row and until when it is
 * in backoff. The pull loop skips an edge in backoff (the others go on), outbound prefers healthy
 * edges in list order, and `svc status`, the Transport page and `svc doctor` show it. Written by
 * the loops in small transactions of their own; a success is written only when it changes
 * something or the stored one is older than SUCCESS_REFRESH_MS, so a busy edge costs no writes.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import type { EdgeHealthView } from './transport-schemas.js';

/** The first backoff after a failure; it doubles with each further one up to EDGE_BACKOFF_MAX_MS. */
export const EDGE_BACKOFF_BASE_MS = 1_000;
export const EDGE_BACKOFF_MAX_MS = 60_000;
/** A stored success older than this is refreshed by the next one (the "last pull" a reader sees). */
const SUCCESS_REFRESH_MS = 30_000;

interface HealthRow {
  url: string;
  last_success_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
  consecutive_failures: number;
  backoff_until: string | null;
}

const NEVER: Omit<HealthRow, 'url'> = { last_success_at: null, last_error: null, last_error_at: null, consecutive_failures: 0, backoff_until: null };

function row(db: Db, url: string): HealthRow | undefined {
  return prepared(db, 'SELECT url, last_success_at, last_error, last_error_at, consecutive_failures, backoff_until FROM edge_health WHERE url = ?').get(url) as HealthRow | undefined;
}

/** The backoff after `failures` failures in a row. */
export const edgeBackoffMs = (failures: number) => Math.min(EDGE_BACKOFF_MAX_MS, EDGE_BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1));

/** The edge at `url` answered. */
export function recordEdgeSuccess(db: Db, url: string, now = Date.now()): void {
  const current = row(db, url);
  if (current && current.consecutive_failures === 0 && current.last_success_at && now - Date.parse(current.last_success_at) < SUCCESS_REFRESH_MS) return;
  const at = new Date(now).toISOString();
  db.transaction(() =>
    prepared(
      db,
      `INSERT INTO edge_health (url, last_success_at, consecutive_failures, backoff_until) VALUES (?, ?, 0, NULL)
       ON CONFLICT (url) DO UPDATE SET last_success_at = excluded.last_success_at, consecutive_failures = 0, backoff_until = NULL`,
    ).run(url, at),
  )();
}

/** The edge at `url` could not be reached or answered an error (`code`: ours, no secret); returns its backoff in ms. */
export function recordEdgeFailure(db: Db, url: string, code: string, now = Date.now()): number {
  const failures = (row(db, url)?.consecutive_failures ?? 0) + 1;
  const backoff = edgeBackoffMs(failures);
  const at = new Date(now).toISOString();
  db.transaction(() =>
    prepared(
      db,
      `INSERT INTO edge_health (url, last_error, last_error_at, consecutive_failures, backoff_until) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (url) DO UPDATE SET last_error = excluded.last_error, last_error_at = excluded.last_error_at,
         consecutive_failures = excluded.consecutive_failures, backoff_until = excluded.backoff_until`,
    ).run(url, code, at, failures, new Date(now + backoff).toISOString()),
  )();
  return backoff;
}

/** Drops the rows of edges no longer in the list. Runs inside the caller's transaction (the transport write). */
export function forgetOtherEdges(db: Db, urls: string[]): void {
  const keep = new Set(urls);
  for (const { url } of prepared(db, 'SELECT url FROM edge_health').all() as { url: string }[]) {
    if (!keep.has(url)) prepared(db, 'DELETE FROM edge_health WHERE url = ?').run(url);
  }
}

/** One edge's health: what other code (`svc status`, `svc doctor`, outbound's choice) reads. */
export function edgeHealth(db: Db, url: string, now = Date.now()): EdgeHealthView {
  const { last_success_at, last_error, last_error_at, consecutive_failures, backoff_until } = row(db, url) ?? { url, ...NEVER };
  const inBackoff = backoff_until !== null && Date.parse(backoff_until) > now;
  return {
    healthy: consecutive_failures === 0 && !inBackoff,
    last_success_at,
    last_error,
    last_error_at,
    consecutive_failures,
    backoff_until: inBackoff ? backoff_until : null,
  };
}

/** Every edge's health, in the order given (the transport's list order). */
export function edgesHealth(db: Db, urls: readonly string[], now = Date.now()): { url: string; health: EdgeHealthView }[] {
  return urls.map((url) => ({ url, health: edgeHealth(db, url, now) }));
}

/**
 * The delivery-events loop (spec §8): every 2 s while busy, 30 s idle. Reads the paired edge's
 * delivery reports forward from the stored cursor and applies them (src/mail/delivery-reports.ts).
 * Without an edge there are no reports: an SMTP smart host reports bounces by mail, which the
 * edge turns into reports when the return path routes to it.
 */
import { runLoop } from './run-loop.js';
import { readTransport } from '../../src/mail/transport.js';
import { applyReports, awaitingDeliveryReports, reportCursor, type DeliveryReport } from '../../src/mail/delivery-reports.js';

const PAGE = 200;
/** Messages handed to the edge this recently without a delivery report keep the loop on its 2 s pace. */
const AWAITING_MS = 10 * 60_000;

const awaitingReports = (db: import('../../src/db/open.js').Db) => awaitingDeliveryReports(db, new Date(Date.now() - AWAITING_MS).toISOString());
const TIMEOUT_MS = 30_000;

runLoop(async (ctx) => {
  const { edge } = readTransport(ctx.db);
  if (!edge) return 'idle';
  const after = reportCursor(ctx.db);
  let page: { events: DeliveryReport[]; next: string };
  try {
    const res = await fetch(`${edge.url}/events?limit=${PAGE}${after ? `&after=${encodeURIComponent(after)}` : ''}`, {
      headers: { authorization: `Bearer ${edge.token}` },
      signal: AbortSignal.any([AbortSignal.timeout(TIMEOUT_MS), ctx.stopped]),
    });
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      return 'idle';
    }
    page = (await res.json()) as { events: DeliveryReport[]; next: string };
  } catch {
    return 'idle'; // unreachable edge: try again on the next pass
  }
  if (!Array.isArray(page.events) || typeof page.next !== 'string') return 'idle';
  if (page.events.length === 0 && page.next === after) return awaitingReports(ctx.db) ? 'busy' : 'idle';
  for (const seq of applyReports(ctx.db, page.events, page.next)) ctx.publish({ kind: 'event', seq });
  return page.events.length > 0 ? 'busy' : 'idle';
});

/**
 * The delivery-events loop (spec §8): every 2 s while busy, 30 s idle. Reads each paired edge's
 * delivery reports forward from that edge's stored cursor and applies them (src/mail/delivery-reports.ts).
 * Without an edge there are no reports: an SMTP smart host reports bounces by mail, which the
 * edge turns into reports when the return path routes to it.
 */
import { loopPass, type LoopContext } from './run-loop.js';
import { readTransport, type EdgeSettings } from '../../src/mail/transport.js';
import { EdgeClient, type DeliveryReportPage } from '../../src/inbound/edge-client.js';
import { applyReports, awaitingDeliveryReports, reportCursor, type DeliveryReport } from '../../src/mail/delivery-reports.js';

const PAGE = 200;
/** Messages handed to the edge this recently without a delivery report keep the loop on its 2 s pace. */
const AWAITING_MS = 10 * 60_000;

const awaitingReports = (db: import('../../src/db/open.js').Db) => awaitingDeliveryReports(db, new Date(Date.now() - AWAITING_MS).toISOString());

/** One page of one edge's reports, applied with that edge's cursor; 'busy' when it had reports. */
async function readEdge(ctx: LoopContext, edge: EdgeSettings): Promise<'busy' | 'idle'> {
  const after = reportCursor(ctx.db, edge.url);
  let page: DeliveryReportPage<DeliveryReport>;
  try {
    page = await new EdgeClient(edge.url, edge.token).deliveryReports<DeliveryReport>(after, PAGE, ctx.stopped);
  } catch {
    return 'idle'; // unreachable edge or an error answer: try again on the next pass
  }
  if (!Array.isArray(page.events) || typeof page.next !== 'string') return 'idle';
  if (page.events.length === 0 && page.next === after) return 'idle';
  const seqs = ctx.db.transaction(() => applyReports(ctx.db, page.events, page.next, edge.url))();
  for (const seq of seqs) ctx.publish({ kind: 'event', seq });
  return page.events.length > 0 ? 'busy' : 'idle';
}

export default loopPass(async (ctx) => {
  const { edges } = readTransport(ctx.db);
  if (edges.length === 0) return 'idle';
  // Every edge that relayed mail reports on it; each is read with its own cursor, side by side.
  const read = await Promise.all(edges.map((edge) => readEdge(ctx, edge)));
  if (read.includes('busy')) return 'busy';
  return awaitingReports(ctx.db) ? 'busy' : 'idle';
});

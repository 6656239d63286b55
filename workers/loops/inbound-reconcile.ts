/**
 * The inbound reconcile loop (spec §8: at startup, then every 15 minutes), at every paired edge
 * on its own: objects already committed or rejected are deleted at that edge, anything else
 * wakes the pull loop, and queue entries whose object is missing become `queue_message`
 * quarantine items. It also sweeps expired inbound dedup rows (src/inbound/dedup.ts) and old
 * outbound handover records (src/outbound/edge-handovers.ts).
 */
import { loopPass } from './run-loop.js';
import { RECONCILE_EDGE_RETRY_MS } from '../../src/supervisor/loop-table.js';
import { readTransport, type EdgeSettings } from '../../src/mail/transport.js';
import type { LoopContext } from './run-loop.js';
import { forgetExpiredSeen } from '../../src/inbound/dedup.js';
import { forgetOldHandovers } from '../../src/outbound/edge-handovers.js';
import { EdgeClient } from '../../src/inbound/edge-client.js';
import { quarantine, quarantineByKey } from '../../src/inbound/quarantine.js';
import { wasHandled } from '../../src/inbound/commit-keys.js';

const PAGE = 500;

export default loopPass(async (ctx) => {
  const { db } = ctx;
  db.transaction(() => {
    forgetExpiredSeen(db);
    forgetOldHandovers(db);
  })();
  const { edges } = readTransport(db);
  if (edges.length === 0) return 'idle';
  // Each edge on its own: one that cannot be reached does not keep the others from being reconciled.
  const reached = await Promise.all(edges.map((edge) => reconcileEdge(ctx, edge)));
  return reached.every(Boolean) ? 'idle' : { delayMs: RECONCILE_EDGE_RETRY_MS }; // an edge unreachable: look again in a minute
});

/** Reconciles one edge; false when it could not be reached. */
async function reconcileEdge({ db, publish }: LoopContext, edge: EdgeSettings): Promise<boolean> {
  const client = new EdgeClient(edge.url, edge.token);
  try {
    const objectKeys = new Set<string>();
    let stragglers = false;
    for (let after: string | null = null, more = true; more; ) {
      const page = await client.listObjects(after, PAGE);
      more = page.has_more;
      after = page.objects.at(-1)?.key ?? null;
      for (const { key } of page.objects) {
        objectKeys.add(key);
        const held = quarantineByKey(db, key);
        if (held && held.status !== 'released' && held.status !== 'deleted') continue;
        if (wasHandled(db, key)) await client.deleteObject(key);
        else stragglers = true;
      }
    }
    if (stragglers) publish({ kind: 'wake', loop: 'inbound-pull' });
    for (let after: string | null = null, more = true; more; ) {
      const page = await client.listQueue(after, PAGE);
      more = page.has_more;
      after = page.entries.at(-1)?.key ?? null;
      for (const entry of page.entries) {
        // Re-check the object: it may have arrived after the listing above.
        if (objectKeys.has(entry.key) || (await client.hasObject(entry.key))) continue;
        const seq = quarantine(db, { sourceKind: 'queue_message', sourceKey: entry.key, reasonCode: 'object_missing', size: entry.size, inboxId: entry.recipients[0] ?? null, attempts: null });
        if (seq !== null) publish({ kind: 'event', seq });
      }
    }
  } catch {
    return false;
  }
  return true;
}

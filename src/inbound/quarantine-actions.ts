/**
 * The inbound-pull loop's automatic retry of quarantine items with a transient reason (spec
 * §2.11; src/inbound/quarantine.ts holds the rows, src/requests/quarantine.ts the owner's retry
 * and delete). An item is `release_pending` while the edge is asked and goes back to
 * `quarantined` when it cannot be reached. `released` (with its owner-only event) is written only
 * after the mail is committed. This is a loop path, its own top level: it opens the transaction
 * around each outcome it records, as the loops do.
 */
import { ingestObject, type IngestDeps, type IngestResult } from './ingest.js';
import { edgeHolding } from './edge-holder.js';
import type { EdgeSettings } from '../mail/transport.js';
import { wasHandled } from './commit-keys.js';
import { dueForAutoRetry, finishQuarantine, recordFailedRetry, setStatus } from './quarantine.js';

/** Quarantine items retried per pass: bounds the time a pass spends on old failures before new mail. */
const AUTO_RETRIES_PER_PASS = 10;

/**
 * Retries quarantined objects whose reason is transient once their backoff has passed
 * (src/inbound/quarantine.ts). Success releases the item (`inbound.released`); another failure
 * counts an attempt. The object is looked for at every paired edge. An edge or database that is unavailable counts nothing: the item is tried
 * again on the next pass. Returns how many items were due.
 */
export async function retryDueQuarantine(deps: Omit<IngestDeps, 'edge'> & { edges: readonly EdgeSettings[] }): Promise<number> {
  const { db } = deps;
  const due = dueForAutoRetry(db, Date.now(), AUTO_RETRIES_PER_PASS);
  for (const item of due) {
    setStatus(db, item.quarantine_id, 'release_pending');
    let result: IngestResult;
    try {
      // The object is at one of the edges (whichever received it); none holding it: it is gone.
      const edge = await edgeHolding(deps.edges, item.source_key);
      result = edge ? await ingestObject({ ...deps, edge }, item.source_key, item.size, { retry: true }) : { outcome: 'gone' };
    } catch {
      setStatus(db, item.quarantine_id, 'quarantined');
      break; // edge unreachable or storage busy: stop here, the next pass tries again
    }
    // `gone` after an earlier pass handled it (stored it, or refused it by a block list, for some recipient) and then deleted it at the edge: it is done.
    const delivered = result.outcome === 'committed' || (result.outcome === 'gone' && wasHandled(db, item.source_key));
    // The loop is its own top level: it opens the transaction around each outcome it records.
    if (delivered) {
      deps.publish(db.transaction(() => finishQuarantine(db, item.quarantine_id, 'released'))());
    } else {
      const reason = result.outcome === 'failed' ? result.reason : item.reason_code;
      db.transaction(() => recordFailedRetry(db, item.quarantine_id, reason))();
    }
  }
  return due.length;
}

/**
 * The owner's requests on the inbound pipeline (spec §2.11, §4.13), one function per route of
 * src/routes/inbound.ts: quarantine (list, retry, delete) and inbound rejections (list, delete).
 * The routes' access is `owner`, so there is no scope or permission to check. An item is
 * `release_pending` / `delete_pending` while the edge is asked, and goes back to `quarantined`
 * when the edge cannot be reached, so an interrupted action can be repeated. `released` /
 * `deleted` and their owner-only event are written in ONE transaction opened here, only after
 * the edge side is done (the mail committed by the pipeline, or the object deleted at the
 * edge), and published after it commits. The edge is never asked under the write lock.
 * The inbound-pull loop's automatic retry is src/inbound/quarantine-actions.ts.
 */
import { withAttachmentText } from '../attachment-text/on-receive.js';
import { checkServers } from '../domains/checks.js';
import type { AppContext } from '../context.js';
import type { Principal } from '../auth/principal.js';
import { ApiError, notFound } from '../core/errors.js';
import { DEFAULT_LIMIT, pageFromRows, readCursor } from '../core/pagination.js';
import { EdgeClient, EdgeUnavailable } from '../inbound/edge-client.js';
import { edgeHolding } from '../inbound/edge-holder.js';
import { homeKeyPair } from '../inbound/home-key.js';
import { ingestObject, type IngestResult } from '../inbound/ingest.js';
import { countQuarantine, finishQuarantine, listQuarantine, quarantineById, quarantineView, recordFailedRetry, setStatus } from '../inbound/quarantine.js';
import { deleteRejection, listRejections } from '../inbound/rejections.js';
import { readTransport } from '../mail/transport.js';
import type { OpenedInbound } from '../../workers/pool/tasks.js';

/** What the quarantine requests need from the running service: the database, the bus, and the pool's opener. */
export type QuarantineServices = Pick<AppContext, 'db' | 'bus' | 'pool'>;

export type RetryAnswer = { status: 'released' } | { status: 'quarantined'; item: ReturnType<typeof quarantineView> };

const edgeMissing = () =>
  new ApiError('action_required', 'No edge buffer is configured, so the quarantined object cannot be reached.', {
    fix: 'Pair the edge again with `svc transport set --edge-url URL --edge-token-file FILE` (the one that holds this object).',
  });

const unavailable = () => new ApiError('service_unavailable', 'The edge buffer could not be reached.', { fix: 'Check that the edge is running and reachable, then try again.' });

const publisher = (svc: Pick<AppContext, 'bus'>) => (seq: number) => svc.bus.publish({ kind: 'event', seq });

/**
 * One page of visible items, oldest first. `count` is this page's size (AgentMail style);
 * `total` (svc extension) is every visible item, for the app's badge and `svc status`.
 */
export function quarantinePage(svc: Pick<AppContext, 'db'>, p: Principal, query: { limit?: number; page_token?: string }): Record<string, unknown> {
  const { db } = svc;
  const limit = query.limit ?? DEFAULT_LIMIT;
  const binding = { route: 'quarantine', filters: {}, principal: p };
  const after = query.page_token ? (readCursor(db, query.page_token, binding, 2) as [string, string]) : null;
  const rows = listQuarantine(db, after, limit + 1);
  return { ...pageFromRows(db, binding, 'items', rows, limit, (r) => [r.first_seen, r.quarantine_id], quarantineView), total: countQuarantine(db) };
}

/** The owner's retry (`POST /owner/quarantine/{id}/retry`): fetch, open and commit the object again. */
export async function retryQuarantineFor(svc: QuarantineServices, id: string): Promise<RetryAnswer> {
  const { db } = svc;
  const publish = publisher(svc);
  const item = quarantineById(db, id);
  if (!item || item.status === 'deleted') throw notFound('quarantine item');
  if (item.status === 'released') return { status: 'released' };
  if (item.status === 'delete_pending') throw new ApiError('action_required', 'This item is being deleted.', { fix: 'Repeat DELETE /v0/owner/quarantine/{id} to finish the deletion.' });
  if (item.source_kind === 'queue_message') {
    throw new ApiError('not_supported', 'A queue-message item holds metadata only; there is nothing to retry.', { fix: 'Delete the item, and ask the sender to send the message again.' });
  }
  const { edges } = readTransport(db);
  if (edges.length === 0) throw edgeMissing();
  const { privateJwk } = await homeKeyPair(db);
  setStatus(db, item.quarantine_id, 'release_pending');
  let result: IngestResult;
  try {
    const open = async (jwe: string | Uint8Array) =>
      withAttachmentText((await svc.pool.run('openInbound', { jwe, privateJwk, dnsServers: checkServers(db) })) as OpenedInbound, (file) => svc.pool.extractText(file));
    // The object is at whichever paired edge received it.
    const client = await edgeHolding(edges, item.source_key);
    // The pipeline commits the mail in transactions of its own (src/inbound/ingest.ts, the inbound exception).
    result = client ? await ingestObject({ db, edge: client, open, publish }, item.source_key, item.size, { retry: true }) : { outcome: 'gone' };
  } catch (err) {
    setStatus(db, item.quarantine_id, 'quarantined');
    if (err instanceof EdgeUnavailable) throw unavailable();
    throw err;
  }
  if (result.outcome === 'gone') {
    setStatus(db, item.quarantine_id, 'quarantined');
    throw new ApiError('action_required', 'No paired edge holds this object (buffer mismatch).', { fix: 'Pair the edge that received it, or delete the item.' });
  }
  if (result.outcome === 'failed') {
    const reason = result.reason;
    return { status: 'quarantined', item: quarantineView(db.transaction(() => recordFailedRetry(db, item.quarantine_id, reason))()) };
  }
  publish(db.transaction(() => finishQuarantine(db, item.quarantine_id, 'released'))());
  return { status: 'released' };
}

/** The owner's delete (`DELETE /owner/quarantine/{id}`): the object or queue entry at the edge, then the item. */
export async function deleteQuarantineFor(svc: Pick<AppContext, 'db' | 'bus'>, id: string): Promise<void> {
  const { db } = svc;
  const item = quarantineById(db, id);
  if (!item) throw notFound('quarantine item');
  if (item.status === 'deleted' || item.status === 'released') return;
  // Without a buffer nothing can be deleted: the item stays as it was (and stays retryable).
  const { edges } = readTransport(db);
  if (edges.length === 0) throw edgeMissing();
  setStatus(db, item.quarantine_id, 'delete_pending');
  try {
    // Deleted at every paired edge: it is at most at the one that received it, absent elsewhere.
    for (const edge of edges) {
      const client = new EdgeClient(edge.url, edge.token);
      if (item.source_kind === 'buffer_object') await client.deleteObject(item.source_key);
      else await client.deleteQueueEntry(item.source_key).catch((err: unknown) => {
        if (!(err instanceof EdgeUnavailable && err.status === 404)) throw err;
      });
    }
  } catch {
    throw unavailable();
  }
  publisher(svc)(db.transaction(() => finishQuarantine(db, item.quarantine_id, 'deleted'))());
}

/** Newest first, optionally for one inbox; `inbox_id` is matched as addresses are stored (trimmed, lower case). */
export function rejectionPage(svc: Pick<AppContext, 'db'>, p: Principal, query: { limit?: number; page_token?: string; inbox_id?: string }): Record<string, unknown> {
  const { db } = svc;
  const limit = query.limit ?? DEFAULT_LIMIT;
  const inboxId = query.inbox_id?.trim().toLowerCase() ?? null;
  const binding = { route: 'rejections', filters: { inbox_id: inboxId }, principal: p };
  const before = query.page_token ? (readCursor(db, query.page_token, binding, 2) as [string, string]) : null;
  const rows = listRejections(db, inboxId, before, limit + 1);
  return pageFromRows(db, binding, 'rejections', rows, limit, (r) => [r.created_at, r.rejection_id]);
}

/** Deletes one rejection record (404 when there is none); rejections have no event (§6.2 rule 6). */
export function deleteRejectionFor(svc: Pick<AppContext, 'db'>, id: string): void {
  const { db } = svc;
  if (!db.transaction(() => deleteRejection(db, id))()) throw notFound('rejection');
}

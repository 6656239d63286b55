/**
 * What can be done to a quarantine item (spec §2.11, §4.13; src/inbound/quarantine.ts holds the
 * rows): the owner's retry and delete, and the inbound-pull loop's automatic retry of transient
 * reasons. An item is `release_pending` / `delete_pending` while the edge is asked, and goes
 * back to `quarantined` when the edge cannot be reached, so an interrupted action can be
 * repeated. `released` / `deleted` (with their owner-only events) are written only after the
 * edge side is done: the mail committed, or the object deleted at the edge.
 */
import type { JWK } from 'jose';
import type { Db } from '../db/open.js';
import { ApiError, notFound } from '../core/errors.js';
import type { OpenedInbound } from '../../workers/pool/tasks.js';
import { EdgeClient, EdgeUnavailable } from './edge-client.js';
import { homeKeyPair } from './home-key.js';
import { ingestObject, type IngestDeps } from './ingest.js';
import { wasHandled } from './commit-keys.js';
import { dueForAutoRetry, finishQuarantine, quarantineById, quarantineView, recordFailedRetry, setStatus } from './quarantine.js';
import { readTransport } from '../mail/transport.js';

/** Quarantine items retried per pass: bounds the time a pass spends on old failures before new mail. */
const AUTO_RETRIES_PER_PASS = 10;

/**
 * Retries quarantined objects whose reason is transient once their backoff has passed
 * (src/inbound/quarantine.ts). Success releases the item (`inbound.released`); another failure
 * counts an attempt. An edge or database that is unavailable counts nothing: the item is tried
 * again on the next pass. Returns how many items were due.
 */
export async function retryDueQuarantine(deps: IngestDeps): Promise<number> {
  const { db } = deps;
  const due = dueForAutoRetry(db, Date.now(), AUTO_RETRIES_PER_PASS);
  for (const item of due) {
    setStatus(db, item.quarantine_id, 'release_pending');
    let result;
    try {
      result = await ingestObject(deps, item.source_key, item.size, { retry: true });
    } catch {
      setStatus(db, item.quarantine_id, 'quarantined');
      break; // edge unreachable or storage busy: stop here, the next pass tries again
    }
    // `gone` after an earlier pass handled it (stored it, or refused it by a block list, for some recipient) and then deleted it at the edge: it is done.
    const delivered = result.outcome === 'committed' || (result.outcome === 'gone' && wasHandled(db, item.source_key));
    if (delivered) deps.publish(finishQuarantine(db, item.quarantine_id, 'released'));
    else recordFailedRetry(db, item.quarantine_id, result.outcome === 'failed' ? result.reason : item.reason_code);
  }
  return due.length;
}

const edgeMissing = () =>
  new ApiError('action_required', 'No edge buffer is configured, so the quarantined object cannot be reached.', {
    fix: 'Pair the edge again with PUT /v0/owner/transport (the one that holds this object).',
  });

const unavailable = () => new ApiError('service_unavailable', 'The edge buffer could not be reached.', { fix: 'Check that the edge is running and reachable, then try again.' });

/** What the owner's actions need besides the database: the pool's opener and the bus. */
export interface QuarantineActionDeps {
  db: Db;
  openInbound(input: { jwe: string | Uint8Array; privateJwk: JWK }): Promise<OpenedInbound>;
  publish(seq: number): void;
}

export type RetryAnswer = { status: 'released' } | { status: 'quarantined'; item: ReturnType<typeof quarantineView> };

/** The owner's retry (`POST /owner/quarantine/{id}/retry`): fetch, open and commit the object again. */
export async function retryQuarantineItem(deps: QuarantineActionDeps, id: string): Promise<RetryAnswer> {
  const { db, publish } = deps;
  const item = quarantineById(db, id);
  if (!item || item.status === 'deleted') throw notFound('quarantine item');
  if (item.status === 'released') return { status: 'released' };
  if (item.status === 'delete_pending') throw new ApiError('action_required', 'This item is being deleted.', { fix: 'Repeat DELETE /v0/owner/quarantine/{id} to finish the deletion.' });
  if (item.source_kind === 'queue_message') {
    throw new ApiError('not_supported', 'A queue-message item holds metadata only; there is nothing to retry.', { fix: 'Delete the item, and ask the sender to send the message again.' });
  }
  const { edge } = readTransport(db);
  if (!edge) throw edgeMissing();
  const client = new EdgeClient(edge.url, edge.token);
  const { privateJwk } = await homeKeyPair(db);
  setStatus(db, item.quarantine_id, 'release_pending');
  let result;
  try {
    result = await ingestObject({ db, edge: client, open: (jwe) => deps.openInbound({ jwe, privateJwk }), publish }, item.source_key, item.size, { retry: true });
  } catch (err) {
    setStatus(db, item.quarantine_id, 'quarantined');
    if (err instanceof EdgeUnavailable) throw unavailable();
    throw err;
  }
  if (result.outcome === 'gone') {
    setStatus(db, item.quarantine_id, 'quarantined');
    throw new ApiError('action_required', 'The configured edge does not hold this object (buffer mismatch).', { fix: 'Pair the edge that received it, or delete the item.' });
  }
  if (result.outcome === 'failed') return { status: 'quarantined', item: quarantineView(recordFailedRetry(db, item.quarantine_id, result.reason)) };
  publish(finishQuarantine(db, item.quarantine_id, 'released'));
  return { status: 'released' };
}

/** The owner's delete (`DELETE /owner/quarantine/{id}`): the object or queue entry at the edge, then the item. */
export async function deleteQuarantineItem(deps: Pick<QuarantineActionDeps, 'db' | 'publish'>, id: string): Promise<void> {
  const { db, publish } = deps;
  const item = quarantineById(db, id);
  if (!item) throw notFound('quarantine item');
  if (item.status === 'deleted' || item.status === 'released') return;
  // Without a buffer nothing can be deleted: the item stays as it was (and stays retryable).
  const { edge } = readTransport(db);
  if (!edge) throw edgeMissing();
  setStatus(db, item.quarantine_id, 'delete_pending');
  const client = new EdgeClient(edge.url, edge.token);
  try {
    if (item.source_kind === 'buffer_object') await client.deleteObject(item.source_key);
    else await client.deleteQueueEntry(item.source_key);
  } catch {
    throw unavailable();
  }
  publish(finishQuarantine(db, item.quarantine_id, 'deleted'));
}

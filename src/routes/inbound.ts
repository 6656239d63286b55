/**
 * Owner routes for the inbound pipeline (spec §4.13): quarantine (list, retry, delete) and
 * inbound rejections (list, delete). Quarantine is local-only: the tunnel listener does not
 * register these routes.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { ApiError, notFound } from '../core/errors.js';
import { pageFromRows, PageQuery, DEFAULT_LIMIT, readCursor } from '../core/pagination.js';
import { readTransport } from '../mail/transport.js';
import { EdgeClient, EdgeUnavailable } from '../inbound/edge-client.js';
import { homeKeyPair } from '../inbound/home-key.js';
import { ingestObject } from '../inbound/ingest.js';
import { countQuarantine, finishQuarantine, listQuarantine, quarantineById, quarantineView, recordFailedRetry, setStatus } from '../inbound/quarantine.js';
import { deleteRejection, listRejections } from '../inbound/rejections.js';
import type { OpenedInbound } from '../../workers/pool/tasks.js';

const QuarantineQuery = Type.Object({ limit: PageQuery.limit, page_token: PageQuery.page_token }, { additionalProperties: false });
const RejectionQuery = Type.Object({ limit: PageQuery.limit, page_token: PageQuery.page_token, inbox_id: Type.Optional(Type.String({ maxLength: 320 })) }, { additionalProperties: false });
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Empty = Type.Object({}, { additionalProperties: false });

const edgeMissing = () =>
  new ApiError('action_required', 'No edge buffer is configured, so the quarantined object cannot be reached.', {
    fix: 'Pair the edge again with PUT /v0/owner/transport (the one that holds this object).',
  });

const unavailable = () => new ApiError('service_unavailable', 'The edge buffer could not be reached.', { fix: 'Check that the edge is running and reachable, then try again.' });

export const inboundRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus, pool } = app.svc;
  const publish = (seq: number) => bus.publish({ kind: 'event', seq });

  app.get<{ Querystring: Static<typeof QuarantineQuery> }>('/quarantine', { config: { auth: 'owner' }, schema: { querystring: QuarantineQuery } }, async (request) => {
    const limit = request.query.limit ?? DEFAULT_LIMIT;
    const binding = { route: 'quarantine', filters: {}, principal: request.principal! };
    const after = request.query.page_token ? (readCursor(db, request.query.page_token, binding, 2) as [string, string]) : null;
    const rows = listQuarantine(db, after, limit + 1);
    // `count` is this page's size (AgentMail style); `total` (svc extension) is every visible item, for the app's badge and `svc status`.
    return { ...pageFromRows(db, binding, 'items', rows, limit, (r) => [r.first_seen, r.quarantine_id], quarantineView), total: countQuarantine(db) };
  });

  app.post<{ Params: Static<typeof IdParams> }>('/quarantine/:id/retry', { config: { auth: 'owner' }, schema: { params: IdParams, body: Empty } }, async (request) => {
    const item = quarantineById(db, request.params.id);
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
      result = await ingestObject(
        { db, edge: client, open: (jwe) => pool.run('openInbound', { jwe, privateJwk }) as Promise<OpenedInbound>, publish },
        item.source_key,
        item.size,
        { retry: true },
      );
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
  });

  app.delete<{ Params: Static<typeof IdParams> }>('/quarantine/:id', { config: { auth: 'owner' }, schema: { params: IdParams } }, async (request, reply) => {
    const item = quarantineById(db, request.params.id);
    if (!item) throw notFound('quarantine item');
    if (item.status === 'deleted' || item.status === 'released') return reply.send();
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
    return reply.send();
  });

  app.get<{ Querystring: Static<typeof RejectionQuery> }>('/lists/rejections', { config: { auth: 'owner' }, schema: { querystring: RejectionQuery } }, async (request) => {
    const limit = request.query.limit ?? DEFAULT_LIMIT;
    const inboxId = request.query.inbox_id?.trim().toLowerCase() ?? null;
    const binding = { route: 'rejections', filters: { inbox_id: inboxId }, principal: request.principal! };
    const before = request.query.page_token ? (readCursor(db, request.query.page_token, binding, 2) as [string, string]) : null;
    const rows = listRejections(db, inboxId, before, limit + 1);
    return pageFromRows(db, binding, 'rejections', rows, limit, (r) => [r.created_at, r.rejection_id]);
  });

  app.delete<{ Params: Static<typeof IdParams> }>('/lists/rejections/:id', { config: { auth: 'owner' }, schema: { params: IdParams } }, async (request, reply) => {
    if (!deleteRejection(db, request.params.id)) throw notFound('rejection');
    return reply.send();
  });
};

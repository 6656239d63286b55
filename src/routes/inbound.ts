/**
 * Owner routes for the inbound pipeline (spec §4.13): quarantine (list, retry, delete) and
 * inbound rejections (list, delete). Quarantine is local-only: the tunnel listener does not
 * register these routes.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { notFound } from '../core/errors.js';
import { pageFromRows, PageQuery, DEFAULT_LIMIT, readCursor } from '../core/pagination.js';
import { INBOX_ID_MAX, ListOf } from '../core/schemas.js';
import { QuarantineItem, QuarantinePage, Rejection, RetryResponse } from '../inbound/schemas.js';
import type { SameShape } from '../core/validation.js';
import { countQuarantine, listQuarantine, quarantineView } from '../inbound/quarantine.js';
import { deleteQuarantineItem, retryQuarantineItem, type RetryAnswer } from '../inbound/quarantine-actions.js';
import { deleteRejection, listRejections, type RejectionRow } from '../inbound/rejections.js';
import type { OpenedInbound } from '../../workers/pool/tasks.js';

const QuarantineQuery = Type.Object({ limit: PageQuery.limit, page_token: PageQuery.page_token }, { additionalProperties: false });
/** `inbox_id` filters by one inbox (the shared id bound); an empty filter matches none, as it always has. */
const RejectionQuery = Type.Object({ limit: PageQuery.limit, page_token: PageQuery.page_token, inbox_id: Type.Optional(Type.String({ maxLength: INBOX_ID_MAX })) }, { additionalProperties: false });
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Empty = Type.Object({}, { additionalProperties: false });

// Compile-time: the schemas are exactly the views (src/core/validation.ts SameShape).
const quarantineShape: SameShape<Static<typeof QuarantineItem>, ReturnType<typeof quarantineView>> = true;
const retryShape: SameShape<Static<typeof RetryResponse>, RetryAnswer> = true;
const rejectionShape: SameShape<Static<typeof Rejection>, RejectionRow> = true;

export const inboundRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus, pool } = app.svc;
  const publish = (seq: number) => bus.publish({ kind: 'event', seq });

  app.get<{ Querystring: Static<typeof QuarantineQuery> }>('/quarantine', { config: { auth: 'owner' }, schema: { querystring: QuarantineQuery, response: { 200: QuarantinePage } } }, async (request) => {
    const limit = request.query.limit ?? DEFAULT_LIMIT;
    const binding = { route: 'quarantine', filters: {}, principal: request.principal! };
    const after = request.query.page_token ? (readCursor(db, request.query.page_token, binding, 2) as [string, string]) : null;
    const rows = listQuarantine(db, after, limit + 1);
    // `count` is this page's size (AgentMail style); `total` (svc extension) is every visible item, for the app's badge and `svc status`.
    return { ...pageFromRows(db, binding, 'items', rows, limit, (r) => [r.first_seen, r.quarantine_id], quarantineView), total: countQuarantine(db) };
  });

  app.post<{ Params: Static<typeof IdParams> }>('/quarantine/:id/retry', { config: { auth: 'owner' }, schema: { params: IdParams, body: Empty, response: { 200: RetryResponse } } }, async (request) =>
    retryQuarantineItem({ db, publish, openInbound: (input) => pool.run('openInbound', input) as Promise<OpenedInbound> }, request.params.id),
  );

  app.delete<{ Params: Static<typeof IdParams> }>('/quarantine/:id', { config: { auth: 'owner' }, schema: { params: IdParams } }, async (request, reply) => {
    await deleteQuarantineItem({ db, publish }, request.params.id);
    return reply.send();
  });

  app.get<{ Querystring: Static<typeof RejectionQuery> }>('/lists/rejections', { config: { auth: 'owner' }, schema: { querystring: RejectionQuery, response: { 200: ListOf('rejections', Rejection) } } }, async (request) => {
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

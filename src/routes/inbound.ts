/**
 * Owner routes for the inbound pipeline (spec §4.13): quarantine (list, retry, delete) and
 * inbound rejections (list, delete). Quarantine is local-only: the tunnel listener does not
 * register these routes.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { INBOX_ID_MAX, ListOf, PageQuery } from '../core/schemas.js';
import { QuarantineItem, QuarantinePage, Rejection, RetryResponse } from '../inbound/schemas.js';
import type { SameShape } from '../core/validation.js';
import type { quarantineView } from '../inbound/quarantine.js';
import type { RejectionRow } from '../inbound/rejections.js';
import { deleteQuarantineFor, deleteRejectionFor, quarantinePage, rejectionPage, retryQuarantineFor, type RetryAnswer } from '../requests/quarantine.js';

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
  const svc = app.svc;

  app.get<{ Querystring: Static<typeof QuarantineQuery> }>('/quarantine', { config: { auth: 'owner' }, schema: { querystring: QuarantineQuery, response: { 200: QuarantinePage } } }, async (request) =>
    quarantinePage(svc, request.principal!, request.query),
  );

  app.post<{ Params: Static<typeof IdParams> }>('/quarantine/:id/retry', { config: { auth: 'owner' }, schema: { params: IdParams, body: Empty, response: { 200: RetryResponse } } }, async (request) =>
    retryQuarantineFor(svc, request.params.id),
  );

  app.delete<{ Params: Static<typeof IdParams> }>('/quarantine/:id', { config: { auth: 'owner' }, schema: { params: IdParams } }, async (request, reply) => {
    await deleteQuarantineFor(svc, request.params.id);
    return reply.send();
  });

  app.get<{ Querystring: Static<typeof RejectionQuery> }>('/lists/rejections', { config: { auth: 'owner' }, schema: { querystring: RejectionQuery, response: { 200: ListOf('rejections', Rejection) } } }, async (request) =>
    rejectionPage(svc, request.principal!, request.query),
  );

  app.delete<{ Params: Static<typeof IdParams> }>('/lists/rejections/:id', { config: { auth: 'owner' }, schema: { params: IdParams } }, async (request, reply) => {
    deleteRejectionFor(svc, request.params.id);
    return reply.send();
  });
};

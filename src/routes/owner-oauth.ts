/**
 * OAuth management for the owner (spec §4.13, §5.3): clients with their grants, revoking a
 * grant, purging registrations without one, and the consent API the web app's consent page
 * calls. Owner only, and local only: the tunnel listener does not register these routes, so
 * they answer 404 there.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { InboxId, PageQuery } from '../core/schemas.js';
import { SCOPE_MAX_INBOXES } from '../auth/api-key-schemas.js';
import { PermissionsInput, SendPolicySchema } from '../auth/permission-schemas.js';
import { approveConsent, consentView, denyConsent, oauthClientPage, purgeOAuthClients, revokeOAuthGrant } from '../requests/oauth.js';
import { ConsentDecisionResponse, ConsentRequestResponse, OAuthClientPage, PurgeClientsResponse } from '../oauth/schemas.js';

const Id = Type.String({ minLength: 1, maxLength: 64 });
const GrantParams = Type.Object({ grant_id: Id });
const RequestParams = Type.Object({ request_id: Id });
const ListQuery = Type.Object(PageQuery, { additionalProperties: false });
const Empty = Type.Object({}, { additionalProperties: false });
const Approve = Type.Object(
  {
    inbox_ids: Type.Array(InboxId, { minItems: 1, maxItems: SCOPE_MAX_INBOXES }),
    permissions: PermissionsInput,
    send_policy: SendPolicySchema,
  },
  { additionalProperties: false },
);

const owner = { auth: 'owner' } as const;

export const ownerOAuthRoutes: FastifyPluginAsync = async (app) => {
  if (app.svc.listener !== 'local') return;
  const svc = app.svc;
  const { db } = svc;

  app.get<{ Querystring: Static<typeof ListQuery> }>('/oauth/clients', { config: owner, schema: { querystring: ListQuery, response: { 200: OAuthClientPage } } }, async (request) =>
    oauthClientPage(db, request.principal!, request.query),
  );

  app.delete<{ Params: Static<typeof GrantParams> }>('/oauth/grants/:grant_id', { config: owner, schema: { params: GrantParams } }, async (request, reply) => {
    revokeOAuthGrant(svc, request.params.grant_id);
    return reply.send();
  });

  app.post('/oauth/clients/purge', { config: owner, schema: { body: Empty, response: { 200: PurgeClientsResponse } } }, async () => purgeOAuthClients(db));

  app.get<{ Params: Static<typeof RequestParams> }>('/oauth/requests/:request_id', { config: owner, schema: { params: RequestParams, response: { 200: ConsentRequestResponse } } }, async (request) =>
    consentView(db, request.params.request_id),
  );

  app.post<{ Params: Static<typeof RequestParams>; Body: Static<typeof Approve> }>(
    '/oauth/requests/:request_id/approve',
    { config: { ...owner, sudo: true }, schema: { params: RequestParams, body: Approve, response: { 200: ConsentDecisionResponse } } },
    async (request) => approveConsent(svc, request.params.request_id, request.body),
  );

  app.post<{ Params: Static<typeof RequestParams> }>('/oauth/requests/:request_id/deny', { config: owner, schema: { params: RequestParams, body: Empty, response: { 200: ConsentDecisionResponse } } }, async (request) =>
    denyConsent(db, request.params.request_id),
  );
};

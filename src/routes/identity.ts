/**
 * The caller and the home in AgentMail's shapes (docs/agentmail-compat.md): `GET /auth/me` for
 * any credential (it describes only itself), `GET /organizations` for the owner (it counts the
 * whole home). src/requests/identity.ts builds both answers.
 */
import type { FastifyPluginAsync } from 'fastify';
import { homeOrganization, identityOf, IdentityResponse, OrganizationResponse } from '../requests/identity.js';

export const identityRoutes: FastifyPluginAsync = async (app) => {
  const { db } = app.svc;
  app.get('/auth/me', { config: { auth: 'agent' }, schema: { response: { 200: IdentityResponse } } }, async (request) => identityOf(db, request.principal!));
  app.get('/organizations', { config: { auth: 'owner' }, schema: { response: { 200: OrganizationResponse } } }, async () => homeOrganization(db));
};

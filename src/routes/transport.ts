/**
 * Owner transport configuration (spec §4.13): `GET`, `PUT`, `DELETE /owner/transport`. Secrets
 * (edge token, SMTP password) are write-only: the view says only whether one is set, and the
 * response schema lets nothing else through.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Static } from 'typebox';
import { TransportBody, TransportResponse } from '../mail/transport-schemas.js';
import { clearTransportFor, readTransportView, writeTransportFor, type TransportView } from '../requests/transport.js';
import type { SameShape } from '../core/validation.js';

// Compile-time: the schema is exactly the view (src/core/validation.ts SameShape).
const transportShape: SameShape<Static<typeof TransportResponse>, TransportView> = true;
const response = { 200: TransportResponse };

export const transportRoutes: FastifyPluginAsync = async (app) => {
  const svc = app.svc;

  app.get('/transport', { config: { auth: 'owner' }, schema: { response } }, async () => readTransportView(svc));

  app.put<{ Body: TransportBody }>('/transport', { config: { auth: 'owner', sudo: true }, schema: { body: TransportBody, response } }, async (request) => writeTransportFor(svc, request.body));

  app.delete('/transport', { config: { auth: 'owner', sudo: true } }, async (_request, reply) => {
    clearTransportFor(svc);
    return reply.send();
  });
};

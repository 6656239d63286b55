/**
 * Owner transport configuration (spec §4.13): `GET`, `PUT`, `DELETE /owner/transport`. Secrets
 * (edge token, SMTP password) are write-only: the view says only whether one is set, and the
 * response schema lets nothing else through.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Static } from 'typebox';
import { clearTransport, readTransport, TransportBody, TransportResponse, transportView, writeTransport } from '../mail/transport.js';
import type { SameShape } from '../core/validation.js';

// Compile-time: the schema is exactly the view (src/core/validation.ts SameShape).
const transportShape: SameShape<Static<typeof TransportResponse>, ReturnType<typeof transportView>> = true;
const response = { 200: TransportResponse };

export const transportRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus } = app.svc;
  const changed = () => {
    for (const loop of ['provisioning', 'inbound-pull', 'outbox', 'scheduled-drafts', 'delivery-events']) bus.publish({ kind: 'wake', loop });
  };

  app.get('/transport', { config: { auth: 'owner' }, schema: { response } }, async () => transportView(readTransport(db)));

  app.put<{ Body: TransportBody }>('/transport', { config: { auth: 'owner' }, schema: { body: TransportBody, response } }, async (request) => {
    const view = transportView(writeTransport(db, request.body));
    changed();
    return view;
  });

  app.delete('/transport', { config: { auth: 'owner' } }, async (_request, reply) => {
    clearTransport(db);
    changed();
    return reply.send();
  });
};

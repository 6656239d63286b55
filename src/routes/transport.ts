/** Owner transport configuration (spec §4.13): `GET`, `PUT`, `DELETE /owner/transport`. */
import type { FastifyPluginAsync } from 'fastify';
import { clearTransport, readTransport, TransportBody, transportView, writeTransport } from '../mail/transport.js';

export const transportRoutes: FastifyPluginAsync = async (app) => {
  const { db, bus } = app.svc;
  const changed = () => {
    for (const loop of ['provisioning', 'inbound-pull', 'outbox', 'scheduled-drafts', 'delivery-events']) bus.publish({ kind: 'wake', loop });
  };

  app.get('/transport', { config: { auth: 'owner' } }, async () => transportView(readTransport(db)));

  app.put<{ Body: TransportBody }>('/transport', { config: { auth: 'owner' }, schema: { body: TransportBody } }, async (request) => {
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

/**
 * Remote access (spec §4.13): `GET /owner/remote`, `POST /owner/remote/enable`,
 * `POST /owner/remote/disable`. Owner only, and registered on the loopback listener only, so
 * the routes do not exist on the tunnel. Fields: docs/remote-access.md.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { COMMAND_MAX, type RemoteAccess } from '../remote/remote-access.js';

/** RFC 1035 presentation-form limit; the exact rules are checked by normalizeHostname. */
const HOSTNAME_MAX = 253;

const EnableBody = Type.Object(
  {
    hostname: Type.String({ minLength: 1, maxLength: HOSTNAME_MAX }),
    command: Type.String({ minLength: 1, maxLength: COMMAND_MAX }),
  },
  { additionalProperties: false },
);
const Empty = Type.Object({}, { additionalProperties: false });

export function remoteRoutes(remote: RemoteAccess): FastifyPluginAsync {
  return async (app) => {
    app.get('/remote', { config: { auth: 'owner' } }, async () => remote.view());

    app.post<{ Body: Static<typeof EnableBody> }>('/remote/enable', { config: { auth: 'owner' }, schema: { body: EnableBody } }, async (request) =>
      remote.enable(request.body),
    );

    app.post('/remote/disable', { config: { auth: 'owner' }, schema: { body: Empty } }, async () => remote.disable());
  };
}

/**
 * Remote access (spec §4.13): `GET /owner/remote`, `POST /owner/remote/enable`,
 * `POST /owner/remote/disable`. Owner only, and registered on the loopback listener only, so
 * the routes do not exist on the tunnel. Fields: docs/remote-access.md.
 */
import type { FastifyPluginAsync } from 'fastify';
import { Type, type Static } from 'typebox';
import { COMMAND_MAX, type RemoteAccess, type RemoteView } from '../remote/remote-access.js';
import type { SameShape } from '../core/validation.js';
import { disableRemote, enableRemote, remoteView } from '../requests/remote.js';
import { RemoteResponse } from '../remote/schemas.js';

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

// Compile-time: the schema is exactly the view (src/core/validation.ts SameShape).
const remoteShape: SameShape<Static<typeof RemoteResponse>, RemoteView> = true;
const response = { 200: RemoteResponse };

export function remoteRoutes(remote: RemoteAccess): FastifyPluginAsync {
  return async (app) => {
    const svc = { db: app.svc.db, remote };
    app.get('/remote', { config: { auth: 'owner' }, schema: { response } }, async () => remoteView(svc));

    app.post<{ Body: Static<typeof EnableBody> }>('/remote/enable', { config: { auth: 'owner', sudo: true }, schema: { body: EnableBody, response } }, async (request) =>
      enableRemote(svc, request.body),
    );

    app.post('/remote/disable', { config: { auth: 'owner' }, schema: { body: Empty, response } }, async () => disableRemote(svc));
  };
}

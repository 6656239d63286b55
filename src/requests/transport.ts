/**
 * The owner's requests on the transport (spec §4.13), one function per route of
 * src/routes/transport.ts: `GET`, `PUT`, `DELETE /owner/transport`. The routes' access is
 * `owner`, so there is no scope or permission to check. A write checks the body first (the edge
 * URL rule, no lookup), then is ONE transaction opened here (src/mail/transport.ts opens none),
 * and only after it commits are the loops that use the transport woken. The view never holds a
 * secret: the edge token and SMTP password are write-only.
 */
import type { AppContext } from '../context.js';
import { checkTransportBody, clearTransport, readTransport, transportView, writeTransport, type TransportBody } from '../mail/transport.js';

/** What the transport requests need from the running service. */
export type TransportServices = Pick<AppContext, 'db' | 'bus'>;

export type TransportView = ReturnType<typeof transportView>;

/** The loops that read the transport on every pass; a change wakes them so it takes effect at once. */
const TRANSPORT_LOOPS = ['provisioning', 'inbound-pull', 'outbox', 'scheduled-drafts', 'delivery-events'] as const;

const wakeTransportLoops = (svc: TransportServices) => {
  for (const loop of TRANSPORT_LOOPS) svc.bus.publish({ kind: 'wake', loop });
};

export function readTransportView(svc: Pick<AppContext, 'db'>): TransportView {
  return transportView(svc.db, readTransport(svc.db));
}

/** Replaces the parts given (an omitted part is kept); answers the stored configuration's view. */
export function writeTransportFor(svc: TransportServices, body: TransportBody): TransportView {
  const { db } = svc;
  const checked = checkTransportBody(body);
  const view = transportView(db, db.transaction(() => writeTransport(db, checked))());
  wakeTransportLoops(svc);
  return view;
}

export function clearTransportFor(svc: TransportServices): void {
  svc.db.transaction(() => clearTransport(svc.db))();
  wakeTransportLoops(svc);
}

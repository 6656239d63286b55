/**
 * The owner's remote-access operations (spec §4.13, docs/remote-access.md): view, enable and
 * disable, for src/routes/remote.ts (access `owner`: no scope, no permission). The enable body is
 * checked first, without any lookup or lock (checkRemoteEnable); the settings and the listener
 * record then change in one transaction opened here, which RemoteAccess runs at its point in the
 * serialized listener work (after the listener moved, before the loop is woken). Remote-access
 * changes emit no event (spec §6.2 has none).
 */
import type { Db } from '../db/open.js';
import { checkRemoteEnable, recordRemoteDisabled, recordRemoteEnabled, type RemoteAccess, type RemoteEnable, type RemoteView } from '../remote/remote-access.js';

/** What a remote-access operation needs: the database and the running tunnel side. */
export interface RemoteServices {
  db: Db;
  remote: RemoteAccess;
}

export function remoteView(svc: RemoteServices): RemoteView {
  return svc.remote.view();
}

/** Enables remote access, or updates it while enabled; a new hostname moves the tunnel listener. */
export function enableRemote(svc: RemoteServices, body: RemoteEnable): Promise<RemoteView> {
  const { db, remote } = svc;
  const settings = checkRemoteEnable(body);
  return remote.enable(settings.hostname, (listener) => db.transaction(() => recordRemoteEnabled(db, settings, listener))());
}

/** Disables remote access; the settings are kept for a later enable. */
export function disableRemote(svc: RemoteServices): Promise<RemoteView> {
  const { db, remote } = svc;
  return remote.disable(() => db.transaction(() => recordRemoteDisabled(db))());
}

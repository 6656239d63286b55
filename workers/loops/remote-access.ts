/**
 * The remote-access loop (spec §8): supervises the tunnel connector every second. Wake: the
 * one-second tick, the main thread's wake after enable/disable (the listener record changed), or
 * the connector exiting. Work: compare the wanted connector (enabled settings + this process's
 * tunnel listener) with the running one, start/stop/restart it with backoff, and publish its
 * status in the settings table for `GET /v0/owner/remote`.
 */
import { loopPass } from './run-loop.js';
import { ConnectorSupervisor, connectorTiming, type ConnectorConfig } from '../../src/remote/connector.js';
import { readRemote, readTunnelListener, writeConnectorStatus, STOPPED_CONNECTOR } from '../../src/remote/settings.js';
import type { Db } from '../../src/db/open.js';

let supervisor: ConnectorSupervisor | null = null;
let written = '';

/** The connector the owner wants: enabled, and this process's listener serves that hostname. */
function wantedConnector(db: Db): ConnectorConfig | null {
  const settings = readRemote(db);
  const listener = readTunnelListener(db);
  if (!settings?.enabled || !listener || listener.hostname !== settings.hostname) return null;
  return { command: settings.command, hostname: settings.hostname, port: listener.port };
}

export default loopPass(async (ctx) => {
  if (!supervisor) {
    const current = new ConnectorSupervisor(connectorTiming(), () => ctx.wakeSelf());
    supervisor = current;
    ctx.stopped.addEventListener('abort', () => {
      // The loop takes the connector down itself (the worker lives until it exited), so the record
      // says stopped now; a pid left in the record means the loop died and the main thread kills it.
      if (!ctx.db.open) return;
      writeConnectorStatus(ctx.db, STOPPED_CONNECTOR);
      void current.shutdown();
    });
  }
  const wait = await supervisor.check(wantedConnector(ctx.db));
  const status = supervisor.status();
  const serialized = JSON.stringify(status);
  if (serialized !== written && !ctx.stopped.aborted) {
    writeConnectorStatus(ctx.db, status);
    written = serialized;
  }
  return wait === null ? 'idle' : { delayMs: wait };
});

/**
 * Remote access on the main thread: the owner's settings, the tunnel listener and the view
 * `GET /v0/owner/remote` returns. The tunnel listener is a second fastify instance built with
 * `listener: 'tunnel'` and the origin `https://<hostname>` on 127.0.0.1:<ephemeral>
 * (ARCHITECTURE §2); the remote-access loop runs the connector that forwards the public hostname
 * to it, and learns the listener's port from the `remote_access_listener` record plus a wake.
 *
 * The owner's enable and disable are requests (src/requests/remote.ts): that layer checks the
 * input and opens the one transaction that records the change, which this class runs at the right
 * point of its serialized listener work. What this class does on its own at start is a background
 * top level, like a loop, and opens its own transaction.
 */
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/open.js';
import type { Bus } from '../supervisor/bus.js';
import { ApiError } from '../core/errors.js';
import { normalizeHostname } from './hostname.js';
import {
  readConnectorStatus,
  readRemote,
  readTunnelListener,
  writeConnectorStatus,
  writeRemote,
  writeTunnelListener,
  STOPPED_CONNECTOR,
  type ConnectorStatus,
} from './settings.js';

/** Connector commands are a shell line; long enough for a token-bearing cloudflared command. */
export const COMMAND_MAX = 4096;
/** In-flight tunnel requests get this long when the listener stops or moves to a new hostname. */
const LISTENER_DRAIN_MS = 2_000;

export type BuildTunnelApp = (origin: string) => Promise<FastifyInstance>;

export interface RemoteView {
  enabled: boolean;
  hostname: string | null;
  url: string | null;
  command: string | null;
  connector: ConnectorStatus;
  listener: { port: number | null };
}

/** What the remote-access record says the tunnel listener is: the hostname its origin names, and its port. */
export interface TunnelListener {
  hostname: string;
  port: number;
}

/** What the owner sends to enable remote access, after checkRemoteEnable. */
export interface RemoteEnable {
  hostname: string;
  command: string;
}

/**
 * The owner's enable request checked without any lookup: a fully qualified hostname and a
 * non-empty command with no NUL. The hostname in its normalized form.
 */
export function checkRemoteEnable(input: RemoteEnable): RemoteEnable {
  const hostname = normalizeHostname(input.hostname);
  if (!hostname) {
    throw new ApiError('validation_error', 'The hostname is not a fully qualified DNS name.', {
      fix: 'Send the public hostname the tunnel serves, such as `mail.example.com` (letters, digits and hyphens; no scheme, port or path).',
    });
  }
  const command = input.command;
  if (command.trim() === '' || command.includes('\0')) {
    throw new ApiError('validation_error', 'The connector command is empty or contains a NUL character.', {
      fix: 'Send the shell command that runs the tunnel connector, such as `cloudflared tunnel run --token …`.',
    });
  }
  return { hostname, command };
}

/** Records remote access as on, with the listener now running; runs inside the caller's transaction. */
export function recordRemoteEnabled(db: Db, settings: RemoteEnable, listener: TunnelListener): void {
  writeRemote(db, { enabled: true, hostname: settings.hostname, command: settings.command });
  writeTunnelListener(db, listener);
}

/** Records remote access as off (settings kept) and no listener; runs inside the caller's transaction. */
export function recordRemoteDisabled(db: Db): void {
  const settings = readRemote(db);
  if (settings) writeRemote(db, { ...settings, enabled: false });
  writeTunnelListener(db, null);
}

/** A running tunnel listener: its app, the hostname its origin names, and its port. */
interface Running {
  app: FastifyInstance;
  hostname: string;
  port: number;
}

export class RemoteAccess {
  #running: Running | null = null;
  /** Enable, disable and shutdown run one at a time, so the listener is never started twice. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly bus: Bus,
    private readonly buildTunnelApp: BuildTunnelApp,
  ) {}

  /** At service start: the listener comes up when remote access was left enabled. */
  start(): Promise<void> {
    return this.#serialized(async () => {
      const settings = readRemote(this.db);
      if (settings?.enabled) await this.#listen(settings.hostname);
      // Records of an earlier run go, even one whose pid this process happens to reuse (containers).
      this.db.transaction(() => {
        writeTunnelListener(this.db, this.#running && { hostname: this.#running.hostname, port: this.#running.port });
        writeConnectorStatus(this.db, STOPPED_CONNECTOR);
      })();
    });
  }

  /**
   * Enables, or updates while enabled, for a hostname and command checked by the caller
   * (checkRemoteEnable); a new hostname moves the listener to the new origin. `commit` records the
   * settings and the listener it now runs (the caller's one transaction, src/requests/remote.ts),
   * after the listener is up and before the loop is woken.
   */
  enable(hostname: string, commit: (listener: TunnelListener) => void): Promise<RemoteView> {
    return this.#serialized(async () => {
      if (this.#running?.hostname !== hostname) {
        // Requests in flight on the old origin end with it: tokens and URLs bound to it stop working.
        await this.#close();
        await this.#listen(hostname);
      }
      const running = this.#running!;
      commit({ hostname: running.hostname, port: running.port });
      this.#wakeLoop();
      return this.view();
    });
  }

  /**
   * Stops the connector (through the loop) and the listener; the settings are kept for later.
   * `commit` records remote access as off (the caller's one transaction) before the listener closes.
   */
  disable(commit: () => void): Promise<RemoteView> {
    return this.#serialized(async () => {
      commit();
      this.#wakeLoop();
      await this.#close();
      return this.view();
    });
  }

  view(): RemoteView {
    const settings = readRemote(this.db);
    const listener = readTunnelListener(this.db);
    return {
      enabled: settings?.enabled ?? false,
      hostname: settings?.hostname ?? null,
      url: settings?.enabled ? `https://${settings.hostname}` : null,
      command: settings?.command ?? null,
      connector: readConnectorStatus(this.db),
      listener: { port: listener?.port ?? null },
    };
  }

  /**
   * At shutdown, after the loops stopped: close the listener. The loop kills the connector when
   * it stops; if the loop died instead, the connector it left is killed here so none outlives svc.
   */
  stop(): Promise<void> {
    return this.#serialized(async () => {
      const { pid } = readConnectorStatus(this.db);
      if (pid !== null) killGroup(pid);
      await this.#close();
    });
  }

  async #listen(hostname: string): Promise<void> {
    const app = await this.buildTunnelApp(`https://${hostname}`);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (typeof address !== 'object' || !address) throw new Error('the tunnel listener has no address');
    this.#running = { app, hostname, port: address.port };
  }

  async #close(): Promise<void> {
    const running = this.#running;
    if (!running) return;
    this.#running = null;
    const timer = setTimeout(() => running.app.server.closeAllConnections(), LISTENER_DRAIN_MS);
    await running.app.close().catch(() => undefined);
    clearTimeout(timer);
  }

  #wakeLoop(): void {
    this.bus.publish({ kind: 'wake', loop: 'remote-access' });
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(work, work);
    this.#queue = next.catch(() => undefined);
    return next;
  }
}

/** SIGKILL to a connector's process group; it may already be gone. */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

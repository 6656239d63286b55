/**
 * Remote-access records (spec §4.13 `/owner/remote`), all in the `settings` table so the request
 * path, the OAuth server and the remote-access loop (its own thread and connection) read the same
 * state:
 * - `remote_access`: what the owner configured (hostname, connector command, enabled);
 * - `remote_access_listener`: where this process's tunnel listener listens, written by the main
 *   thread, which owns the listener; the loop starts the connector only against it;
 * - `remote_access_connector`: the connector's supervision status, written by the loop.
 * The last two carry the service's pid, so records left by an earlier run are never taken as current.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

export interface RemoteSettings {
  enabled: boolean;
  /** Public hostname the tunnel serves, e.g. `mail.example.com`. */
  hostname: string;
  /** Connector command run by the remote-access loop, e.g. `cloudflared tunnel run …`. */
  command: string;
}

/** The tunnel listener of the running service. */
export interface TunnelListenerRecord {
  service_pid: number;
  hostname: string;
  port: number;
}

export type ConnectorState = 'stopped' | 'starting' | 'running' | 'backoff';

/** What the remote-access loop reports about the connector (docs/remote-access.md). */
export interface ConnectorStatus {
  state: ConnectorState;
  pid: number | null;
  /** Restarts after the connector exited, since it was last (re)configured. */
  restarts: number;
  last_exit_code: number | null;
  last_exit_signal: string | null;
  last_started_at: string | null;
  last_exited_at: string | null;
  next_restart_at: string | null;
  /** The wait before the pending (or the last) restart. */
  backoff_ms: number | null;
}

interface ConnectorRecord extends ConnectorStatus {
  service_pid: number;
}

const KEY = 'remote_access';
const LISTENER_KEY = 'remote_access_listener';
const CONNECTOR_KEY = 'remote_access_connector';

export const STOPPED_CONNECTOR: ConnectorStatus = {
  state: 'stopped',
  pid: null,
  restarts: 0,
  last_exit_code: null,
  last_exit_signal: null,
  last_started_at: null,
  last_exited_at: null,
  next_restart_at: null,
  backoff_ms: null,
};

function readKey<T>(db: Db, key: string): T | null {
  const row = prepared(db, 'SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as T) : null;
}

function writeKey(db: Db, key: string, value: unknown): void {
  prepared(db, 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, JSON.stringify(value));
}

function deleteKey(db: Db, key: string): void {
  prepared(db, 'DELETE FROM settings WHERE key = ?').run(key);
}

export function readRemote(db: Db): RemoteSettings | null {
  return readKey<RemoteSettings>(db, KEY);
}

export function writeRemote(db: Db, settings: RemoteSettings): void {
  writeKey(db, KEY, settings);
}

/** The tunnel's public origin while remote access is enabled; tokens bound to it work only there. */
export function tunnelOrigin(db: Db): string | null {
  const remote = readRemote(db);
  return remote?.enabled ? `https://${remote.hostname}` : null;
}

/** This process's tunnel listener, or null when none runs (or the record is from an earlier run). */
export function readTunnelListener(db: Db): TunnelListenerRecord | null {
  const record = readKey<TunnelListenerRecord>(db, LISTENER_KEY);
  return record && record.service_pid === process.pid ? record : null;
}

export function writeTunnelListener(db: Db, record: { hostname: string; port: number } | null): void {
  if (record) writeKey(db, LISTENER_KEY, { service_pid: process.pid, ...record } satisfies TunnelListenerRecord);
  else deleteKey(db, LISTENER_KEY);
}

/** The connector's status as the loop of this process last wrote it. */
export function readConnectorStatus(db: Db): ConnectorStatus {
  const record = readKey<ConnectorRecord>(db, CONNECTOR_KEY);
  if (!record || record.service_pid !== process.pid) return STOPPED_CONNECTOR;
  const { service_pid: _pid, ...status } = record;
  return status;
}

export function writeConnectorStatus(db: Db, status: ConnectorStatus): void {
  writeKey(db, CONNECTOR_KEY, { service_pid: process.pid, ...status } satisfies ConnectorRecord);
}

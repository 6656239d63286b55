/**
 * Remote-access settings (spec §4.13 `/owner/remote`): the public hostname of the tunnel and the
 * connector command that keeps it up. Kept in the `settings` table under one key, so the request
 * path, the OAuth server and the remote-access loop read the same record.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../mail/statements.js';

export interface RemoteSettings {
  enabled: boolean;
  /** Public hostname the tunnel serves, e.g. `mail.example.com`. */
  hostname: string;
  /** Connector command run by the remote-access loop, e.g. `cloudflared tunnel run …`. */
  command: string;
}

const KEY = 'remote_access';

export function readRemote(db: Db): RemoteSettings | null {
  const row = prepared(db, 'SELECT value FROM settings WHERE key = ?').get(KEY) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as RemoteSettings) : null;
}

export function writeRemote(db: Db, settings: RemoteSettings): void {
  prepared(db, 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, JSON.stringify(settings));
}

/** The tunnel's public origin while remote access is enabled; tokens bound to it work only there. */
export function tunnelOrigin(db: Db): string | null {
  const remote = readRemote(db);
  return remote?.enabled ? `https://${remote.hostname}` : null;
}

/**
 * Direct access to a running service's encrypted database from a test, through the same unlock
 * path svc uses (the test runs in the same keyring session). For seeding state that has no
 * public route yet and for asserting stored state; never for anything a route can do.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { unlockHome } from '../../src/keys/unlock.js';
import { openDatabase, type Db } from '../../src/db/open.js';
import { sha256Hex } from '../../src/auth/secrets.js';
import { API_KEY_PREFIX } from '../../src/auth/api-keys.js';
import { uuidv7 } from '../../src/db/ids.js';

export function openHomeDb(home: string): Db {
  const { dbKey } = unlockHome(home, false);
  try {
    return openDatabase(path.join(home, 'svc.db'), dbKey, { migrate: false });
  } finally {
    dbKey.fill(0);
  }
}

export function insertInbox(db: Db, address: string): string {
  const id = address.toLowerCase();
  const [username, domain] = id.split('@');
  const now = new Date().toISOString();
  db.prepare('INSERT INTO inboxes (inbox_id, username, domain, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)').run(id, username, domain, 'active', now, now);
  return id;
}

/** Inserts an API key row the way the api-keys route stores it and returns the secret. */
export function insertApiKey(db: Db, opts: { permissions: string[]; inboxIds?: string[] | null; sendPolicy?: 'direct' | 'approval' | 'read_only'; expiresAt?: string | null }): { id: string; secret: string } {
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  const id = uuidv7();
  const now = new Date().toISOString();
  db.prepare(
    'INSERT INTO api_keys (api_key_id, name, prefix, key_hash, permissions, send_policy, inbox_ids, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(id, 'test key', secret.slice(0, 12), sha256Hex(secret), JSON.stringify(opts.permissions), opts.sendPolicy ?? 'direct', opts.inboxIds ? JSON.stringify(opts.inboxIds) : null, opts.expiresAt ?? null, now, now);
  return { id, secret };
}

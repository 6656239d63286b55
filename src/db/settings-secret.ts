/**
 * A random 32-byte secret of this home, kept in `settings` and made on first use: the page-token
 * key (src/core/pagination.ts) and the owner's device-cookie key (src/owner/owner-account.ts). The
 * INSERT OR IGNORE is one statement, atomic on its own, so two makers agree on the first one.
 */
import { randomBytes } from 'node:crypto';
import type { Db } from './open.js';
import { prepared } from './statements.js';

export function settingsSecret(db: Db, key: string): Buffer {
  const read = () => prepared(db, 'SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined;
  let row = read();
  if (!row) {
    prepared(db, 'INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(key, randomBytes(32).toString('base64'));
    row = read()!;
  }
  return Buffer.from(row.value, 'base64');
}

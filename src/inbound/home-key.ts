/**
 * The home's X25519 key pair: the edge seals every inbound object to the public half; the private
 * half never leaves the (encrypted) database. Made on first use.
 */
import type { Db } from '../db/open.js';
import type { HomeKeyPair } from '../edge/sealed.js';

const KEY = 'inbound_key_pair';

export async function homeKeyPair(db: Db): Promise<HomeKeyPair> {
  const read = () => db.prepare('SELECT value FROM settings WHERE key = ?').get(KEY) as { value: string } | undefined;
  const row = read();
  if (row) return JSON.parse(row.value) as HomeKeyPair;
  // Loaded only to make the pair: the sealing module brings jose and typebox, which a loop that
  // only reads the pair (provisioning) would otherwise load into its thread for nothing.
  const { generateHomeKeyPair } = await import('../edge/sealed.js');
  const fresh = await generateHomeKeyPair();
  // Several loops may race to create it; the first insert wins and everyone reads that one.
  db.prepare('INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(KEY, JSON.stringify(fresh));
  return JSON.parse(read()!.value) as HomeKeyPair;
}

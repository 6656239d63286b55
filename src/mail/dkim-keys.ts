/**
 * Per-domain DKIM keys (ARCHITECTURE §6): the home generates an RSA-2048 key the first time a
 * domain sends (or when the domain is planned) and keeps it in the encrypted database. The public
 * half is what `<selector>._domainkey.<domain>` must publish; every message from an inbox on that
 * domain is signed with it.
 */
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';

export interface DkimKey {
  domain: string;
  selector: string;
  privateKey: string;
  /** base64 SubjectPublicKeyInfo: the `p=` tag of the TXT record. */
  publicKey: string;
}

const generate = promisify(generateKeyPair);

/** The domain's DKIM key when it has one (a domain that reached `verifying` always has). */
export function storedDkimKey(db: Db, domain: string): DkimKey | null {
  const row = prepared(db, 'SELECT domain, selector, private_key, public_key FROM dkim_keys WHERE domain = ?').get(domain) as
    | { domain: string; selector: string; private_key: string; public_key: string }
    | undefined;
  return row ? { domain: row.domain, selector: row.selector, privateKey: row.private_key, publicKey: row.public_key } : null;
}

/** The domain's key, created on first use (key generation runs off the event loop). */
export async function domainDkimKey(db: Db, domain: string): Promise<DkimKey> {
  const existing = storedDkimKey(db, domain);
  if (existing) return existing;
  const { privateKey, publicKey } = await generate('rsa', { modulusLength: 2048 });
  const now = new Date();
  const selector = `svc${now.toISOString().slice(0, 10).replace(/-/g, '')}`;
  prepared(db, 'INSERT OR IGNORE INTO dkim_keys (domain, selector, private_key, public_key, created_at) VALUES (?, ?, ?, ?, ?)').run(
    domain,
    selector,
    privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    (publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64'),
    now.toISOString(),
  );
  return storedDkimKey(db, domain)!;
}

/** The TXT record value for the key. */
export const dkimRecord = (key: DkimKey) => `v=DKIM1; k=rsa; p=${key.publicKey}`;

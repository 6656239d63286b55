/**
 * The domains an inbox corresponds with (issue 20 §3, docs/manipulation.md): the senders of its
 * clean, authenticated received mail and the recipients of its sent mail. A received message whose
 * sender's domain imitates one of them (`paypa1.com` for `paypal.com`) gets the `lookalike_sender`
 * finding. A domain joins only through clean mail whose From passed authentication
 * (src/inbound/ingest.ts isAuthenticatedSender), so neither a lookalike nor a forged From vouches
 * for itself. The same goes for each address (correspondent_addresses), which the guarded send
 * policy reads: only the From address of such mail joins, never its Cc, Reply-To or Sender.
 */
import type { Db } from '../db/open.js';
import { prepared } from '../db/statements.js';
import { assessManipulation, type ManipulationVerdict } from './manipulation.js';

/** Domains compared per received message: the inbox's most recent ones. */
export const MAX_KNOWN_DOMAINS = 500;

/** The domain of a bare address, lower-cased; null when there is none. */
export function domainOf(address: string | null | undefined): string | null {
  if (!address) return null;
  const at = address.lastIndexOf('@');
  const domain = at >= 0 ? address.slice(at + 1).trim().toLowerCase() : '';
  return domain.length > 0 && domain.length <= 253 ? domain : null;
}

/** The inbox's correspondent domains, most recent first. */
export function knownDomains(db: Db, inboxId: string): string[] {
  return (prepared(db, 'SELECT domain FROM correspondent_domains WHERE inbox_id = ? ORDER BY last_seen DESC LIMIT ?').all(inboxId, MAX_KNOWN_DOMAINS) as { domain: string }[]).map(
    (r) => r.domain,
  );
}

/** Records that the inbox corresponds with `domain` (inside the caller's transaction). */
export function rememberCorrespondent(db: Db, inboxId: string, domain: string | null, at: string): void {
  if (domain === null) return;
  prepared(db, 'INSERT INTO correspondent_domains (inbox_id, domain, last_seen) VALUES (?, ?, ?) ON CONFLICT (inbox_id, domain) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)').run(
    inboxId,
    domain,
    at,
  );
}

/**
 * The content verdict with the sender check added: a sender domain imitating a known one is a
 * finding. Only the sender is assessed here (no bodies): the content was assessed where the
 * message was parsed (src/mail/extract.ts deriveText).
 */
export function withSenderCheck(verdict: ManipulationVerdict, senderDomain: string | null, known: readonly string[]): ManipulationVerdict {
  if (senderDomain === null || known.length === 0 || verdict.findings.some((f) => f.reason === 'lookalike_sender')) return verdict;
  const sender = assessManipulation({ subject: null, text: null, html: null, senderDomain, knownDomains: known });
  const lookalike = sender.findings.find((f) => f.reason === 'lookalike_sender');
  return lookalike ? { suspicious: true, findings: [...verdict.findings, lookalike] } : verdict;
}

/**
 * The verdict of one received message for each inbox it goes to, the sender check added, read
 * before the commit's transaction so that a stranger's domain is never compared while the write
 * lock is held (src/inbound/ingest.ts). `known` caches each inbox's domains across a batch.
 */
export function senderVerdicts(
  db: Db,
  inboxIds: Iterable<string>,
  content: ManipulationVerdict,
  senderAddress: string | null | undefined,
  known: Map<string, string[]> = new Map(),
): Map<string, ManipulationVerdict> {
  const senderDomain = domainOf(senderAddress);
  const out = new Map<string, ManipulationVerdict>();
  for (const inboxId of inboxIds) {
    let domains = known.get(inboxId);
    if (domains === undefined) known.set(inboxId, (domains = knownDomains(db, inboxId)));
    out.set(inboxId, withSenderCheck(content, senderDomain, domains));
  }
  return out;
}

/** The bare address of a display form (`Name <a@b>` or `a@b`), lower-cased. */
export function bareAddress(display: string): string {
  const lt = display.lastIndexOf('<');
  const gt = display.lastIndexOf('>');
  return (lt >= 0 && gt > lt ? display.slice(lt + 1, gt) : display).trim().toLowerCase();
}

/**
 * Records that the inbox knows an address (inside the caller's transaction): `introducedAt` is
 * the time of the send that first wrote to it, null when it first wrote to the inbox. The guarded
 * policy counts first contacts made by sends against its daily limit (src/mail/guard.ts).
 */
export function rememberAddress(db: Db, inboxId: string, address: string | null | undefined, introducedAt: string | null): void {
  if (!address || address.length > 320) return;
  prepared(db, 'INSERT OR IGNORE INTO correspondent_addresses (inbox_id, address, introduced_at) VALUES (?, ?, ?)').run(inboxId, address.toLowerCase(), introducedAt);
}

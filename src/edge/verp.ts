/**
 * Tagged VERP return paths (issue 16 finding 7). The relay sends every job with the envelope
 * sender `svc-bounce+<id>-<mac>@<domain>`, where `id` names the job and `mac` is an HMAC of the
 * job's ref under a key only the edge (and its home) knows. A DSN or ARF report is tied to a job
 * only through a tag that verifies; a Message-ID or a bare ref is known to every recipient and
 * proves nothing.
 *
 * Keys are derived from the edge API token (HKDF-SHA256, one label per purpose): the home holds
 * that token inside its encrypted database, and whoever has it controls the edge anyway.
 */
import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** The local-part prefix of every VERP return path (also accepted at RCPT; see routing.ts). */
export const VERP_PREFIX = 'svc-bounce+';
/** Hex digits of sha256(ref) naming the job: 64 bits; a collision only costs one more MAC check. */
export const VERP_ID_HEX = 16;
/** Hex digits of the HMAC: 128 bits a forger would have to guess, one SMTP message per guess. */
export const VERP_MAC_HEX = 32;
/** RFC 5321 §4.5.3.1.1: a local part has at most 64 octets; 11 + 16 + 1 + 32 = 60 fits. */
export const MAX_LOCAL_PART = 64;

const TAGGED_LOCAL_PART = new RegExp(`^svc-bounce\\+([0-9a-f]{${VERP_ID_HEX}})-([0-9a-f]{${VERP_MAC_HEX}})$`);

/** What a key derived from the API token is for; each purpose gets its own key. */
export type EdgeKeyPurpose = 'verp-tag' | 'outbound-mime';

/** A 256-bit key for `purpose`, derived from the edge API token. */
export function deriveEdgeKey(apiToken: string, purpose: EdgeKeyPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', apiToken, 'svc-edge', `svc-edge ${purpose} v1`, 32));
}

/** The job part of the tag: hex of sha256(ref), lower-case (addresses come back lower-cased). */
export function verpId(ref: string): string {
  return createHash('sha256').update(ref).digest('hex').slice(0, VERP_ID_HEX);
}

function verpMac(key: Buffer, ref: string): string {
  return createHmac('sha256', key).update(`verp v1\n${ref}`).digest('hex').slice(0, VERP_MAC_HEX);
}

/** `svc-bounce+<id>-<mac>@<domain>` for the job `ref`. */
export function taggedReturnPath(key: Buffer, ref: string, domain: string): string {
  return `${VERP_PREFIX}${verpId(ref)}-${verpMac(key, ref)}@${domain}`;
}

/**
 * The envelope sender the relay uses for a job: the home's VERP return path (`svc-bounce+…@d`)
 * becomes the tagged one at the same domain; any other sender (or `""`) is left alone.
 */
export function envelopeSender(key: Buffer, ref: string, mailFrom: string): string {
  const at = mailFrom.lastIndexOf('@');
  if (at <= 0 || !mailFrom.slice(0, at).toLowerCase().startsWith(VERP_PREFIX)) return mailFrom;
  return taggedReturnPath(key, ref, mailFrom.slice(at + 1));
}

/** The `{id, mac}` of a tagged VERP address (any case), or null when the address has no tag. */
export function parseVerpTag(address: string): { id: string; mac: string } | null {
  const at = address.lastIndexOf('@');
  if (at <= 0) return null;
  const match = TAGGED_LOCAL_PART.exec(address.slice(0, at).toLowerCase());
  return match ? { id: match[1], mac: match[2] } : null;
}

/** Whether `mac` is the tag of `ref` (constant time, so a forger learns nothing from timing). */
export function verpMacMatches(key: Buffer, ref: string, mac: string): boolean {
  const expected = Buffer.from(verpMac(key, ref), 'latin1');
  const given = Buffer.from(mac, 'latin1');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

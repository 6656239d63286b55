/**
 * Which IP addresses the internet can reach, and their reverse-DNS names. The domain plan puts an
 * address in an A/AAAA record only when it is public (docs/domains.md): a loopback, private,
 * link-local or shared (CGNAT) address in public DNS sends other people's mail nowhere, or into
 * somebody else's network. Documentation ranges (RFC 5737, RFC 3849) count as public: they are
 * never assigned, so only examples and tests use them.
 */
import { isIP } from 'node:net';
import { isInternalAddress } from './internal-addresses.js';

/** True for an IPv4 or IPv6 address other hosts on the internet can reach. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  // An IPv4 address written as IPv6 (::ffff:a.b.c.d, or NAT64's 64:ff9b::/96) goes into DNS as
  // IPv4, if at all; the rest is the one list of internal ranges (src/core/internal-addresses.ts).
  if (family === 6 && /^(::ffff:|64:ff9b::)/i.test(address)) return false;
  return !isInternalAddress(address);
}

/** The PTR owner name of an address: `4.3.2.1.in-addr.arpa`, or the nibbles under `ip6.arpa`. */
export function reverseName(address: string): string {
  if (isIP(address) === 4) return `${address.split('.').reverse().join('.')}.in-addr.arpa`;
  const [head, tail = ''] = address.toLowerCase().split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const full = address.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  const nibbles = full.map((g) => g.padStart(4, '0')).join('');
  return `${nibbles.split('').reverse().join('.')}.ip6.arpa`;
}

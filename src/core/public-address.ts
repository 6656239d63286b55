/**
 * Which IP addresses the internet can reach, and their reverse-DNS names. The domain plan puts an
 * address in an A/AAAA record only when it is public (docs/domains.md): a loopback, private,
 * link-local or shared (CGNAT) address in public DNS sends other people's mail nowhere, or into
 * somebody else's network. Documentation ranges (RFC 5737, RFC 3849) count as public: they are
 * never assigned, so only examples and tests use them.
 */
import { BlockList, isIP } from 'node:net';

const NOT_PUBLIC = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) NOT_PUBLIC.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 127],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) NOT_PUBLIC.addSubnet(net, bits, 'ipv6');

/** True for an IPv4 or IPv6 address other hosts on the internet can reach. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  // An IPv4 address written as IPv6 (::ffff:a.b.c.d) goes into an A record as IPv4, if at all.
  // (node's BlockList already matches IPv4 against IPv6 rules of that form, so none is listed.)
  if (family === 6 && /^::ffff:/i.test(address)) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
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

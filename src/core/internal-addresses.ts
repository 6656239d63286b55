/**
 * Which hosts are this machine or its private network: loopback, link-local, private, unspecified,
 * multicast and reserved addresses, and the names that mean them. Shared by the webhook target
 * rules (src/webhooks/target.ts), which refuse them for agents, and the link extraction of
 * received mail (src/mail/actions.ts), which never offers them as an action to take, and the
 * domain plan (src/core/public-address.ts), which never publishes them in DNS.
 */
import net from 'node:net';

const INTERNAL_V4: [string, number][] = [
  ['0.0.0.0', 8], // "this network", includes 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
];
const INTERNAL_V6: [string, number][] = [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
];

const internal = new net.BlockList();
for (const [address, prefix] of INTERNAL_V4) internal.addSubnet(address, prefix, 'ipv4');
for (const [address, prefix] of INTERNAL_V6) internal.addSubnet(address, prefix, 'ipv6');

/** The IPv4 address inside an IPv4-mapped or NAT64 IPv6 address, else null. */
function embeddedV4(v6: string): string | null {
  const lower = v6.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return null;
  const hi = parseInt(hex[1], 16);
  const lo = parseInt(hex[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address is loopback, link-local, private, unspecified, multicast or reserved. */
export function isInternalAddress(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 4) return internal.check(ip, 'ipv4');
  if (family === 6) {
    const v4 = embeddedV4(ip);
    if (v4 !== null) return internal.check(v4, 'ipv4');
    return internal.check(ip, 'ipv6');
  }
  return true; // not an address at all: never trust it
}

export const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost') || host === 'localhost.localdomain';

/** Suffixes of names that only a local resolver answers (mDNS, RFC 8375, common private zones). */
const LOCAL_SUFFIXES = ['.local', '.localdomain', '.internal', '.home.arpa', '.lan', '.intranet', '.corp'];

/**
 * Whether a URL host (as `URL.hostname` gives it: lower-case, IPv4 in dotted form however it was
 * written, IPv6 in brackets) is this machine or a private network: an internal address, a
 * localhost name, a single-label name (resolved through the local search domains) or a name under
 * a local-only suffix. A public name that resolves inward is not seen here (no DNS is asked).
 */
export function isInternalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (host === '') return true;
  if (net.isIP(host) !== 0) return isInternalAddress(host);
  if (isLocalhostName(host) || !host.includes('.')) return true;
  return LOCAL_SUFFIXES.some((suffix) => host.endsWith(suffix));
}

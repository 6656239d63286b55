/**
 * The SPF mechanism a smart host's provider asks for (`include:amazonses.com`), as the owner
 * gives it for the home's smart host (`smtp.spf_include`) or the edge's (`--smart-host-spf`). It
 * goes verbatim into the domain's SPF record, so only one plain mechanism is taken: `include:`,
 * `a`, `a:`, `mx:`, `ip4:`, `ip6:` with a literal domain or address, no qualifier but `+`, no
 * macros, no `redirect=`, `exp=` or `all`, nothing else (RFC 7208 §5). Parsed on bounded input.
 */
import { isIP } from 'node:net';

export const SPF_MECHANISM_MAX = 270;
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

/** The mechanism in canonical (lower-case) form, or null when it is not one svc publishes. */
export function spfMechanism(value: string): string | null {
  if (value.length === 0 || value.length > SPF_MECHANISM_MAX) return null;
  const m = /^\+?(include|a|mx|ip4|ip6)(?::([^\s]+))?$/i.exec(value);
  if (!m) return null;
  const kind = m[1].toLowerCase();
  const arg = m[2];
  if (kind === 'a' && arg === undefined) return 'a';
  if (arg === undefined) return null;
  if (kind === 'ip4' || kind === 'ip6') {
    const [address, bits, ...rest] = arg.split('/');
    if (rest.length > 0 || isIP(address) !== (kind === 'ip4' ? 4 : 6)) return null;
    if (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= (kind === 'ip4' ? 32 : 128))) return null;
    return `${kind}:${arg.toLowerCase()}`;
  }
  return DOMAIN.test(arg) ? `${kind}:${arg.toLowerCase().replace(/\.$/, '')}` : null;
}

export const SPF_MECHANISM_HELP = 'one SPF mechanism such as include:amazonses.com, ip4:203.0.113.7, ip6:2001:db8::/48, a:out.example.com or mx:example.com (no spaces, qualifiers, macros, redirect= or all)';

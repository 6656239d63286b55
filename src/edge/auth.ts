/**
 * SPF, DKIM, DMARC and ARC for one received message, evaluated with mailauth from the real
 * session (client IP, HELO, MAIL FROM), reduced to the compact `auth` shape of the sealed object.
 */
import type { Readable } from 'node:stream';
import { Resolver } from 'node:dns/promises';
import { authenticate, type AuthStatus, type DNSResolver } from 'mailauth';
import { DNS_TIMEOUT_MS, DNS_TRIES } from './limits.js';
import type { AuthVerdict, InboundAuth } from './sealed.js';

export type { DNSResolver };

export interface SessionFacts {
  clientIp: string;
  helo: string;
  /** '' for the null sender. */
  mailFrom: string;
  /** This edge's own host name (the `mta` of Authentication-Results). */
  hostname: string;
}

/**
 * A DNS resolver for mailauth with a per-query timeout, so one dead name server cannot hold an
 * SMTP session open. `servers` (`host` or `host:port`) replaces the system's name servers.
 */
export function dnsResolver(servers?: string[]): DNSResolver {
  const resolver = new Resolver({ timeout: DNS_TIMEOUT_MS, tries: DNS_TRIES });
  if (servers && servers.length > 0) resolver.setServers(servers);
  // mailauth asks for TXT, A, AAAA, MX and PTR records; node answers each in the shape mailauth expects.
  return (name, rrtype) => resolver.resolve(name, rrtype) as ReturnType<DNSResolver>;
}

const VERDICTS = new Set<string>(['pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror', 'policy', 'skipped']);

export function verdict(status: AuthStatus | undefined): AuthVerdict {
  const result = status?.result === 'temperr' ? 'temperror' : status?.result;
  return result && VERDICTS.has(result) ? (result as AuthVerdict) : 'none';
}

/** Used when mailauth itself fails: nothing could be checked, so everything is a temporary error. */
const UNCHECKED: InboundAuth = {
  spf: { result: 'temperror', domain: null },
  dkim: { result: 'temperror', signatures: [] },
  dmarc: { result: 'temperror', policy: null, domain: null },
  arc: { result: 'temperror' },
};

export async function evaluateAuth(raw: Buffer | Readable, session: SessionFacts, resolver: DNSResolver): Promise<InboundAuth> {
  let result: Awaited<ReturnType<typeof authenticate>>;
  try {
    result = await authenticate(raw, {
      ip: session.clientIp,
      helo: session.helo,
      sender: session.mailFrom || undefined,
      mta: session.hostname,
      resolver,
      // BIMI is a display feature with extra lookups; the home does not use it.
      disableBimi: true,
    });
  } catch {
    return UNCHECKED;
  }
  // mailauth reports an unsigned message as one placeholder result without a signing domain.
  const signatures = (result.dkim?.results ?? []).filter((r) => typeof r.signingDomain === 'string' && r.signingDomain !== '').map((r) => ({
    domain: r.signingDomain,
    selector: r.selector ?? null,
    result: verdict(r.status),
    aligned: Boolean(r.status?.aligned),
  }));
  const dkimResult: AuthVerdict =
    signatures.length === 0 ? 'none' : signatures.some((s) => s.result === 'pass') ? 'pass' : signatures[0].result;
  const spf = result.spf;
  const dmarc = result.dmarc;
  return {
    spf: spf ? { result: verdict(spf.status), domain: spf.domain ?? null } : { result: 'none', domain: null },
    dkim: { result: dkimResult, signatures },
    dmarc: dmarc
      ? { result: verdict(dmarc.status), policy: dmarc.policy || dmarc.p || null, domain: dmarc.domain ?? null }
      : { result: 'none', policy: null, domain: null },
    arc: { result: result.arc ? verdict(result.arc.status) : 'none' },
  };
}

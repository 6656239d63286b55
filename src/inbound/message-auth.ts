/**
 * Mail authentication at the home, for objects sealed by an edge that never saw the SMTP
 * connection (the Cloudflare Email Worker, envelope `via`; docs/edge.md "The Cloudflare edge").
 * Without the connecting IP and HELO there is no SPF of our own, so:
 *   - DKIM is verified from the message itself, and DMARC alignment computed from it;
 *   - the Authentication-Results that Cloudflare's MX recorded (its ARC-Authentication-Results)
 *     count only when the ARC chain validates and its newest set is sealed by Cloudflare
 *     (`trustedSealers`); from them comes SPF (with its MAIL FROM domain) and nothing else;
 *   - DMARC is then evaluated with that SPF (if any) and our own DKIM results.
 * Runs where the message is parsed (the inbound loop's thread or a pool task), outside any write
 * transaction. Every lookup goes through the home's resolver (`svc serve --dns`).
 */
import { arc, dkimVerify, dmarc, type DNSResolver } from 'mailauth';
import { verdict } from '../edge/auth.js';
import type { AuthVerdict, InboundAuth } from '../edge/sealed.js';

/** The envelope marker the Cloudflare Worker puts in every object it seals (src/edge/cloudflare/worker.ts). */
export const VIA_CLOUDFLARE = 'cloudflare-email-routing';
/** The domain Cloudflare Email Routing seals its ARC sets with (`ARC-Seal: i=1; a=rsa-sha256; s=2022; d=email.cloudflare.net` in delivered mail; its DKIM signatures use the same domain). */
export const CLOUDFLARE_ARC_SEALERS = ['email.cloudflare.net'];
/** Test-only (docs/testing.md): the ARC sealer domain to trust instead, so a test can seal with a key of its own. */
export const TEST_ARC_SEALER_ENV = 'SVC_TEST_ARC_SEALER';

const UNCHECKED: InboundAuth = {
  spf: { result: 'temperror', domain: null },
  dkim: { result: 'temperror', signatures: [] },
  dmarc: { result: 'temperror', policy: null, domain: null },
  arc: { result: 'temperror' },
};

export function trustedArcSealers(env: NodeJS.ProcessEnv = process.env): string[] {
  const test = env[TEST_ARC_SEALER_ENV];
  return test ? [test.toLowerCase()] : CLOUDFLARE_ARC_SEALERS;
}

type Loose = Record<string, unknown> | undefined;
const field = (o: Loose, key: string): Loose => (typeof o?.[key] === 'object' && o[key] !== null ? (o[key] as Record<string, unknown>) : undefined);
const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** Evaluates the message's own authentication as described above; every result `temperror` when mailauth fails. */
export async function evaluateMessageAuth(raw: Buffer, resolver: DNSResolver, trustedSealers: string[]): Promise<InboundAuth> {
  try {
    const dkimResult = await dkimVerify(raw, { resolver });
    const arcResult = await arc(dkimResult.arc as Parameters<typeof arc>[0], { resolver });
    const arcVerdict = verdict(arcResult.status);
    // The newest ARC set's sealer: its seal (d=) and its message signature must both be the trusted domain.
    const lastEntry = field(dkimResult.arc as unknown as Loose, 'lastEntry');
    const sealDomain = text(field(field(field(lastEntry, 'arc-seal'), 'parsed'), 'd')?.value)?.toLowerCase() ?? null;
    const amsDomain = arcResult.signature ? text(arcResult.signature.signingDomain)?.toLowerCase() ?? null : null;
    const trusted = arcVerdict === 'pass' && sealDomain !== null && sealDomain === amsDomain && trustedSealers.includes(sealDomain);
    let spf: InboundAuth['spf'] = { result: 'none', domain: null };
    if (trusted) {
      const recorded = field(arcResult.authenticationResults as Loose, 'spf');
      const result = text(recorded?.result);
      const mailFrom = text(field(field(recorded, 'smtp'), 'mailfrom')?.value) ?? text(field(recorded, 'smtp')?.mailfrom);
      if (result) spf = { result: verdict({ result } as Parameters<typeof verdict>[0]), domain: mailFrom ? mailFrom.slice(mailFrom.lastIndexOf('@') + 1).toLowerCase() : null };
    }
    const signatures = (dkimResult.results ?? [])
      .filter((r) => typeof r.signingDomain === 'string' && r.signingDomain !== '')
      .map((r) => ({ domain: r.signingDomain, selector: r.selector ?? null, result: verdict(r.status), aligned: Boolean(r.status?.aligned) }));
    const dkim: AuthVerdict = signatures.length === 0 ? 'none' : signatures.some((s) => s.result === 'pass') ? 'pass' : signatures[0].result;
    const dmarcResult = dkimResult.headerFrom
      ? await dmarc({
          headerFrom: dkimResult.headerFrom,
          spfDomains: spf.result === 'pass' && spf.domain ? [spf.domain] : [],
          dkimDomains: (dkimResult.results ?? [])
            .filter((r) => r.status?.result === 'pass')
            .map((r) => ({ id: r.id, domain: r.signingDomain, aligned: r.status.aligned, underSized: r.status.underSized })),
          // Only a trusted chain may speak for the message (mailauth's DMARC reads ARC for its override notes).
          arcResult: trusted ? arcResult : undefined,
          resolver,
        } as Parameters<typeof dmarc>[0])
      : false;
    return {
      spf,
      dkim: { result: dkim, signatures },
      dmarc: dmarcResult
        ? { result: verdict(dmarcResult.status), policy: dmarcResult.policy || dmarcResult.p || null, domain: dmarcResult.domain ?? null }
        : { result: 'none', policy: null, domain: null },
      arc: { result: arcVerdict },
    };
  } catch {
    return UNCHECKED;
  }
}

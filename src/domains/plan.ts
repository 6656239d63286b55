/**
 * What DNS must say for a domain to work with svc (docs/domains.md): MX to the edge, SPF, the
 * home's DKIM key for the domain, DMARC; plus the owner's steps and warnings, and the same records
 * as a BIND zone file. Derived each time from the transport and the stored DKIM key, so a changed
 * transport changes the plan at once.
 */
import { isIP } from 'node:net';
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.js';
import { readTransport } from '../mail/transport.js';
import { domainDkimKey, dkimRecord, type DkimKey } from '../mail/dkim-keys.js';

export type RecordType = 'MX' | 'TXT' | 'A' | 'AAAA';

/** One record the domain needs. `name` is the fully qualified owner name (no trailing dot). */
export interface PlannedRecord {
  type: RecordType;
  name: string;
  value: string;
  priority?: number;
  /** Which check this is, for reasons and the zone file's comments. */
  purpose: 'mx' | 'mx_address' | 'spf' | 'dkim' | 'dmarc' | 'mta_sts' | 'tls_rpt';
}

export interface DomainPlan {
  domain: string;
  records: PlannedRecord[];
  steps: string[];
  warnings: string[];
  dkim: DkimKey;
}

export const MX_PRIORITY = 10;
export const ZONE_TTL = 3600;
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Where mail for the domain must go: the edge's host (from the paired edge's API URL). */
export interface MailHost {
  /** The MX target. */
  exchange: string;
  /** When the edge is only known by address: the A/AAAA record that names it `mx.<domain>`. */
  address: { type: 'A' | 'AAAA'; value: string } | null;
  loopback: boolean;
  configured: boolean;
}

export function mailHost(db: Db, domain: string): MailHost {
  const { edge } = readTransport(db);
  if (!edge) return { exchange: `mx.${domain}`, address: null, loopback: false, configured: false };
  const host = new URL(edge.url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback = LOOPBACK.has(host) || host.startsWith('127.');
  const ip = host === 'localhost' ? '127.0.0.1' : host;
  if (isIP(ip)) return { exchange: `mx.${domain}`, address: { type: isIP(ip) === 6 ? 'AAAA' : 'A', value: ip }, loopback, configured: true };
  return { exchange: host.replace(/\.$/, ''), address: null, loopback, configured: true };
}

/**
 * MTA-STS (RFC 8461) announces that the domain's MX takes mail only over verified TLS; the policy
 * itself is served by the edge at https://mta-sts.<domain>/.well-known/mta-sts.txt (`svc edge
 * --acme --mta-sts <domain>`, docs/acme.md). The id changes whenever the policy's MX does.
 */
export const mtaStsValue = (exchange: string) => `v=STSv1; id=${createHash('sha256').update(`STSv1 ${exchange.toLowerCase()}`).digest('hex').slice(0, 20)}`;
/** TLS reporting (RFC 8460): where senders report TLS failures delivering to the domain. */
export const tlsRptValue = (domain: string) => `v=TLSRPTv1; rua=mailto:postmaster@${domain}`;

export const spfValue = (smartHost: boolean) => (smartHost ? 'v=spf1 mx ~all' : 'v=spf1 mx -all');
export const dmarcValue = () => 'v=DMARC1; p=quarantine; adkim=r; aspf=r';
export const dkimName = (key: DkimKey, domain: string) => `${key.selector}._domainkey.${domain}`;

/** The records, steps and warnings for `domain`; creates the domain's DKIM key when it has none. */
export async function domainPlan(db: Db, domain: string, opts: { domainId?: string; feedbackEnabled?: boolean } = {}): Promise<DomainPlan> {
  const key = await domainDkimKey(db, domain);
  const transport = readTransport(db);
  const host = mailHost(db, domain);
  const smartHost = transport.smtp !== null;
  const records: PlannedRecord[] = [{ type: 'MX', name: domain, value: host.exchange, priority: MX_PRIORITY, purpose: 'mx' }];
  if (host.address) records.push({ type: host.address.type, name: host.exchange, value: host.address.value, purpose: 'mx_address' });
  records.push(
    { type: 'TXT', name: domain, value: spfValue(smartHost), purpose: 'spf' },
    { type: 'TXT', name: dkimName(key, domain), value: dkimRecord(key), purpose: 'dkim' },
    { type: 'TXT', name: `_dmarc.${domain}`, value: dmarcValue(), purpose: 'dmarc' },
  );
  // MTA-STS and TLS reporting only for an edge on a real host: a loopback edge has no public HTTPS.
  if (host.configured && !host.loopback) {
    records.push(
      { type: 'TXT', name: `_mta-sts.${domain}`, value: mtaStsValue(host.exchange), purpose: 'mta_sts' },
      { type: 'TXT', name: `_smtp._tls.${domain}`, value: tlsRptValue(domain), purpose: 'tls_rpt' },
    );
  }

  const warnings: string[] = [];
  if (!host.configured) {
    warnings.push('No transport is configured, so svc does not know where mail for this domain must go; the MX below is a placeholder. Pair an edge with PUT /v0/owner/transport, then read the plan again.');
  }
  if (host.loopback) {
    warnings.push(`The edge is on loopback (${host.address?.value ?? host.exchange}): these records work for local testing only; the internet cannot reach this MX. Run \`svc edge\` on a host with a public port 25 for real mail.`);
  }
  if (smartHost) {
    warnings.push(`Outbound mail goes through the smart host ${transport.smtp!.host}: add your provider's SPF include (e.g. \`include:amazonses.com\` for SES) to the SPF record, svc cannot know it; until then the record ends in ~all, not -all.`);
  }
  const base = opts.domainId ? `/v0/domains/${opts.domainId}` : '/v0/domains/{domain_id}';
  const steps: string[] = [];
  if (!host.configured) steps.push('Pair svc with an edge: PUT /v0/owner/transport with {"edge": {"url", "token"}} (or start with `svc serve --local-edge` to try it locally).');
  steps.push(
    `At the DNS provider of ${domain}, create the ${records.length} records below, or import the zone file from GET ${base}/zone-file.`,
    `Remove every other MX record of ${domain}: mail for it must reach the edge at ${host.exchange}.`,
    `Keep exactly one SPF record (TXT starting with v=spf1) at ${domain}; if one exists, merge the mechanisms into it instead of adding a second.`,
    `POST ${base}/apply: svc routes ${domain} at the edge and checks the records, then sends a self-test message from svc-selftest@${domain} to itself through the edge.`,
    `Wait for status \`verified\` (event domain.verified). If it is \`failed\`, each record's \`reason\` says what to fix; after fixing, POST ${base}/verify.`,
    `Create inboxes on ${domain} with POST /v0/inboxes; their mail is signed with the DKIM key published at ${dkimName(key, domain)}.`,
  );
  if (opts.feedbackEnabled !== false) {
    steps.push(`Optional: register svc-feedback@${domain} with mailbox providers' complaint feedback loops; svc turns those reports into message.complained events.`);
  }
  return { domain, records, steps, warnings, dkim: key };
}

/** A TXT value as DNS character-strings of at most 255 bytes, quoted for a zone file. */
export function txtStrings(value: string): string[] {
  const out: string[] = [];
  const bytes = Buffer.from(value, 'utf8');
  for (let i = 0; i < bytes.length; i += 255) out.push(bytes.subarray(i, i + 255).toString('utf8'));
  return (out.length ? out : ['']).map((s) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`);
}

function relativeName(name: string, domain: string): string {
  if (name === domain) return '@';
  return name.endsWith(`.${domain}`) ? name.slice(0, -domain.length - 1) : `${name}.`;
}

/** The plan's records in BIND master-file format (RFC 1035 §5). */
export function zoneFile(plan: DomainPlan, now = new Date()): string {
  const lines = [
    `; DNS records for ${plan.domain}, generated by svc at ${now.toISOString()}.`,
    '; Import them at your DNS provider, or paste them into the zone of the domain.',
    ...plan.warnings.map((w) => `; WARNING: ${w}`),
    `$ORIGIN ${plan.domain}.`,
    `$TTL ${ZONE_TTL}`,
  ];
  for (const r of plan.records) {
    const name = relativeName(r.name, plan.domain);
    lines.push(`; ${r.purpose}`);
    if (r.type === 'MX') lines.push(`${name}\tIN\tMX\t${r.priority ?? MX_PRIORITY} ${r.value}.`);
    else if (r.type === 'TXT') {
      const strings = txtStrings(r.value);
      lines.push(strings.length === 1 ? `${name}\tIN\tTXT\t${strings[0]}` : `${name}\tIN\tTXT\t( ${strings.join('\n\t\t\t  ')} )`);
    } else lines.push(`${name}\tIN\t${r.type}\t${r.value}`);
  }
  return lines.join('\n') + '\n';
}

/**
 * What DNS must say for a domain to work with svc (docs/domains.md): MX to the edge, SPF, the
 * home's DKIM key for the domain, DMARC; plus the owner's steps and warnings, and the same records
 * as a BIND zone file. Derived each time from the transport and the stored DKIM key, so a changed
 * transport changes the plan at once.
 */
import { isIP } from 'node:net';
import { createHash } from 'node:crypto';
import type { Db } from '../db/open.js';
import { readEdgeReport, readTransport } from '../mail/transport.js';
import { isPublicHostname, type EdgeIdentity, type ManagedMxOperator } from '../edge/identity.js';
import { isPublicAddress, reverseName } from '../core/public-address.js';
import { domainDkimKey, dkimRecord, type DkimKey } from '../mail/dkim-keys.js';

import type { RecordType } from './record-types.js';

export type { RecordType } from './record-types.js';

/** One record the domain needs. `name` is the fully qualified owner name (no trailing dot). */
export interface PlannedRecord {
  type: RecordType;
  name: string;
  value: string;
  priority?: number;
  /**
   * Which check this is, for reasons and the zone file's comments. `ptr` is the edge's reverse
   * DNS: set at whoever owns the address (the VPS provider), never in the domain's zone.
   */
  purpose: 'mx' | 'mx_address' | 'spf' | 'dkim' | 'dmarc' | 'mta_sts' | 'tls_rpt' | 'ptr';
  /** A PTR's address, for the forward confirmation of its check. */
  address?: string;
  /**
   * An MX that its operator publishes itself (Cloudflare Email Routing writes route1/2/3 with
   * priorities of its own): checked like any planned MX, never published by svc, and its priority
   * here only orders the list.
   */
  managed_by?: ManagedMxOperator;
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

/**
 * Where mail for the domain must go. The MX is the host name the edge reports (`svc edge
 * --hostname`), and A/AAAA records are planned only for public addresses the edge reports
 * (`--public-ip`, or what its name resolves to): never the address the home reaches the edge at,
 * which may be an SSH tunnel on 127.0.0.1. An edge that reports nothing (an older release, or not
 * asked yet) falls back to its API URL's host name when that is a public name or address.
 */
export interface MailHost {
  /** The MX target. */
  exchange: string;
  /** The A/AAAA records that make `exchange` resolve (public addresses only). */
  addresses: { type: 'A' | 'AAAA'; value: string }[];
  /** Whether the internet can reach this MX at all (a public name or a public address). */
  reachable: boolean;
  configured: boolean;
  /** How the edge was known, for the plan's warnings. */
  source: 'none' | 'edge' | 'url' | 'waiting';
  /** The host name the edge reported when it is not one the internet can look up (e.g. `localhost`). */
  unusableHostname: string | null;
  /** The edge's own smart host, when it relays outbound mail through one (`--smart-host`). */
  edgeSmartHost: { host: string; spf: string | null } | null;
  /** The edge's API URL (null without an edge), for the plan's warnings. */
  edgeUrl: string | null;
  /** The MX its operator publishes (the Cloudflare Email Worker behind Email Routing); null for an edge of svc's own. */
  managedMx: EdgeIdentity['managed_mx'];
}

const addressRecord = (ip: string) => ({ type: isIP(ip) === 6 ? ('AAAA' as const) : ('A' as const), value: ip });

/** The mail host of the first paired edge (outbound prefers it; its MX has the lowest priority number). */
export function mailHost(db: Db, domain: string): MailHost {
  return mailHosts(db, domain)[0];
}

/**
 * One mail host per paired edge, in list order (docs/edge.md "Several edges"): each is an MX of
 * the domain, the first with the most preferred priority. Without an edge, one placeholder.
 */
export function mailHosts(db: Db, domain: string): MailHost[] {
  const { edges } = readTransport(db);
  if (edges.length === 0) return [{ exchange: `mx.${domain}`, reachable: false, configured: false, source: 'none', addresses: [], unusableHostname: null, edgeSmartHost: null, edgeUrl: null, managedMx: null }];
  return edges.map((edge) => edgeMailHost(db, domain, edge.url));
}

function edgeMailHost(db: Db, domain: string, url: string): MailHost {
  const placeholder = `mx.${domain}`;
  const none = { addresses: [], unusableHostname: null, edgeSmartHost: null, edgeUrl: url, managedMx: null };
  const report = readEdgeReport(db, url);
  if (report?.identity) {
    const { hostname, public_addresses: ips, smart_host, managed_mx } = report.identity;
    if (managed_mx) {
      return { exchange: managed_mx.hosts[0], addresses: [], reachable: true, configured: true, source: 'edge', unusableHostname: null, edgeSmartHost: null, edgeUrl: url, managedMx: managed_mx };
    }
    const named = isPublicHostname(hostname);
    return {
      exchange: named ? hostname : placeholder,
      addresses: ips.filter(isPublicAddress).map(addressRecord),
      reachable: named || ips.length > 0,
      configured: true,
      source: 'edge',
      unusableHostname: named ? null : hostname,
      edgeSmartHost: smart_host,
      edgeUrl: url,
      managedMx: null,
    };
  }
  // Nothing reported: the URL's host, but only what the internet could reach.
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  const source = report ? 'url' : 'waiting';
  if (isIP(host)) {
    const usable = isPublicAddress(host);
    return { exchange: placeholder, reachable: usable, configured: true, source, ...none, addresses: usable ? [addressRecord(host)] : [] };
  }
  const named = isPublicHostname(host) && !LOOPBACK.has(host);
  return { exchange: named ? host : placeholder, reachable: named, configured: true, source, ...none };
}

/**
 * MTA-STS (RFC 8461) announces that the domain's MX takes mail only over verified TLS; the policy
 * itself is served by the edge at https://mta-sts.<domain>/.well-known/mta-sts.txt (`svc edge
 * --acme --mta-sts <domain>`, docs/acme.md). The id changes whenever the policy's MX does.
 */
export const mtaStsValue = (exchange: string) => `v=STSv1; id=${createHash('sha256').update(`STSv1 ${exchange.toLowerCase()}`).digest('hex').slice(0, 20)}`;
/** TLS reporting (RFC 8460): where senders report TLS failures delivering to the domain. */
export const tlsRptValue = (domain: string) => `v=TLSRPTv1; rua=mailto:postmaster@${domain}`;

/**
 * `v=spf1 mx -all`; with a smart host, its provider's mechanism is added (`v=spf1 mx
 * include:amazonses.com -all`); a smart host whose mechanism svc does not know ends in `~all`,
 * so mail through it is not refused while the owner adds it.
 */
export const spfValue = (smartHost: boolean, mechanism: string | null = null) =>
  mechanism ? `v=spf1 mx ${mechanism} -all` : smartHost ? 'v=spf1 mx ~all' : 'v=spf1 mx -all';
export const dmarcValue = () => 'v=DMARC1; p=quarantine; adkim=r; aspf=r';
export const dkimName = (key: DkimKey, domain: string) => `${key.selector}._domainkey.${domain}`;

/**
 * The plan's SPF value: `mx` authorizes an edge that sends; a managed MX's operator keeps its own
 * mechanism (Email Routing writes `include:_spf.mx.cloudflare.net` and counts it as one of its
 * records), and its MX sends nothing of svc's, so a home behind it alone has no `mx`.
 */
function planSpf(hosts: MailHost[], outbound: { smartHost: string | null; mechanism: string | null }): string {
  const base = spfValue(outbound.smartHost !== null, outbound.mechanism);
  const includes = [...new Set(hosts.flatMap((h) => (h.managedMx ? [h.managedMx.spf_include] : [])))];
  if (includes.length === 0) return base;
  const terms = base.split(' ').slice(1);
  const sending = hosts.some((h) => !h.managedMx);
  return ['v=spf1', ...includes, ...terms.filter((t) => t !== 'mx' || sending)].join(' ');
}

/** The outbound path that senders' SPF checks see: the home's smart host, else the edge's, else the edge itself. */
function outboundPath(transport: ReturnType<typeof readTransport>, host: MailHost): { smartHost: string | null; mechanism: string | null; how: string } {
  if (transport.smtp) return { smartHost: transport.smtp.host, mechanism: transport.smtp.spf_include ?? null, how: 'svc transport set --smtp-host … --smtp-spf include:<provider>' };
  if (host.edgeSmartHost) return { smartHost: host.edgeSmartHost.host, mechanism: host.edgeSmartHost.spf, how: 'svc edge … --smart-host-spf include:<provider>' };
  return { smartHost: null, mechanism: null, how: '' };
}

/** The records, steps and warnings for `domain`; creates the domain's DKIM key when it has none. */
export async function domainPlan(db: Db, domain: string, opts: { domainId?: string; feedbackEnabled?: boolean } = {}): Promise<DomainPlan> {
  return domainPlanWithKey(db, domain, await domainDkimKey(db, domain), opts);
}

/** The plan for a domain whose DKIM key is at hand (synchronous: usable inside a transaction). */
export function domainPlanWithKey(db: Db, domain: string, key: DkimKey, opts: { domainId?: string; feedbackEnabled?: boolean } = {}): DomainPlan {
  const transport = readTransport(db);
  const hosts = mailHosts(db, domain);
  const host = hosts[0];
  const outbound = outboundPath(transport, host);
  // One MX per edge, in list order (10, 20, …); two edges reporting the same name share one. An
  // edge behind a managed MX (Cloudflare Email Routing) has all of its operator's hosts, marked.
  const managedBy = new Map<string, ManagedMxOperator>();
  for (const h of hosts) for (const name of h.managedMx?.hosts ?? []) managedBy.set(name, h.managedMx!.by);
  const exchanges = [...new Set(hosts.flatMap((h) => h.managedMx?.hosts ?? [h.exchange]))];
  const records: PlannedRecord[] = exchanges.map((exchange, i) => {
    const by = managedBy.get(exchange);
    return { type: 'MX' as const, name: domain, value: exchange, priority: MX_PRIORITY * (i + 1), purpose: 'mx' as const, ...(by ? { managed_by: by } : {}) };
  });
  const addressed = new Set<string>();
  for (const h of hosts) {
    for (const a of h.addresses) {
      if (addressed.has(`${h.exchange} ${a.value}`)) continue;
      addressed.add(`${h.exchange} ${a.value}`);
      records.push({ type: a.type, name: h.exchange, value: a.value, purpose: 'mx_address' });
    }
  }
  records.push(
    { type: 'TXT', name: domain, value: planSpf(hosts, outbound), purpose: 'spf' },
    { type: 'TXT', name: dkimName(key, domain), value: dkimRecord(key), purpose: 'dkim' },
    { type: 'TXT', name: `_dmarc.${domain}`, value: dmarcValue(), purpose: 'dmarc' },
  );
  // MTA-STS and TLS reporting only for an edge the internet reaches: a loopback edge has no public
  // HTTPS, and a managed MX (Cloudflare's) is not one whose policy an edge of svc serves.
  if (host.configured && host.reachable && !host.managedMx) {
    records.push(
      { type: 'TXT', name: `_mta-sts.${domain}`, value: mtaStsValue(host.exchange), purpose: 'mta_sts' },
      { type: 'TXT', name: `_smtp._tls.${domain}`, value: tlsRptValue(domain), purpose: 'tls_rpt' },
    );
  }
  // Reverse DNS of the addresses the edge sends from: receivers refuse mail from an address whose
  // PTR does not name a host that resolves back to it. Only when the edge sends itself, with a real name.
  // With several edges, each edge's own addresses (its smart host, when it has one, sends instead).
  const ptrOf = (h: MailHost) => h.source === 'edge' && h.unusableHostname === null && (transport.smtp ? false : h.edgeSmartHost === null);
  const ptr = ptrOf(host) && outbound.smartHost === null;
  const ptrAddresses: string[] = [];
  for (const h of hosts) {
    if (h !== host ? !ptrOf(h) : !ptr) continue;
    for (const a of h.addresses) {
      if (ptrAddresses.includes(a.value)) continue;
      ptrAddresses.push(a.value);
      records.push({ type: 'PTR', name: reverseName(a.value), value: h.exchange, purpose: 'ptr', address: a.value });
    }
  }

  const warnings: string[] = [];
  if (!host.configured) {
    warnings.push('No transport is configured, so svc does not know where mail for this domain must go; the MX below is a placeholder. Pair an edge with `svc transport set --edge-url URL --edge-token-file FILE`, then read the plan again.');
  } else if (host.source === 'waiting') {
    warnings.push(`svc has not heard from the edge at ${transport.edge!.url} yet, so the MX below is ${host.exchange === `mx.${domain}` ? 'a placeholder' : 'its API address'}; the edge reports its host name and addresses within 10 seconds of answering. Read the plan again then.`);
  } else if (host.source === 'url') {
    warnings.push(`The edge at ${transport.edge!.url} does not report its host name (an older release), so the MX below is taken from its API address. Upgrade svc on the edge and start it with \`svc edge --hostname mx.example.com --public-ip <address>\`.`);
  }
  if (host.unusableHostname !== null) {
    warnings.push(`The edge calls itself ${host.unusableHostname}, which is not a public DNS name, so the MX below is a placeholder. Start the edge with \`svc edge --hostname mx.example.com\` (the name its certificate and greeting use).`);
  }
  if (host.configured && !host.reachable) {
    warnings.push(`The edge reports no public name or address (it runs on loopback or was started without --hostname and --public-ip): these records work for local testing only; the internet cannot reach this MX. Run \`svc edge --hostname mx.example.com --public-ip <address>\` on a host with a public port 25 for real mail.`);
  } else if (host.source === 'edge' && host.addresses.length === 0 && !host.managedMx) {
    warnings.push(`The edge knows no public address of ${host.exchange} (it does not resolve yet and no --public-ip was given), so the plan has no A/AAAA record for it and cannot check its reverse DNS. Point ${host.exchange} at the edge's address, or start the edge with \`--public-ip <address>\`.`);
  }
  // The further edges: what is missing for their MX, each named by its URL.
  for (const other of hosts.slice(1)) {
    if (other.source === 'waiting') warnings.push(`svc has not heard from the edge at ${other.edgeUrl} yet, so its MX below is ${other.exchange === `mx.${domain}` ? 'a placeholder' : 'its API address'}; read the plan again once it answers.`);
    else if (other.unusableHostname !== null) warnings.push(`The edge at ${other.edgeUrl} calls itself ${other.unusableHostname}, which is not a public DNS name; start it with \`svc edge --hostname mx2.example.com\`.`);
    else if (!other.reachable) warnings.push(`The edge at ${other.edgeUrl} reports no public name or address: its MX works for local testing only.`);
  }
  if (outbound.smartHost !== null && outbound.mechanism === null) {
    warnings.push(`Outbound mail goes through the smart host ${outbound.smartHost}, which the SPF record cannot name yet: give the SPF mechanism your provider requires (e.g. include:amazonses.com for SES) with \`${outbound.how}\`. Until then the record ends in ~all, not -all.`);
  }
  // `svc domains` names a domain by id or by name: the name reads better in a step.
  const ref = domain;
  const steps: string[] = [];
  if (!host.configured) steps.push('Pair svc with an edge: `svc transport set --edge-url URL --edge-token-file FILE` (`svc edge` prints both), or start with `svc serve --local-edge` to try it locally.');
  const zoneRecords = records.filter((r) => r.purpose !== 'ptr' && !r.managed_by);
  const managed = records.filter((r) => r.managed_by);
  steps.push(
    `At the DNS provider of ${domain}, create the ${zoneRecords.length} records below${managed.length > 0 ? ' that are not marked as Cloudflare\'s' : ''}, or import the zone file from \`svc domains zone-file ${ref}\`.`,
    managed.length > 0
      ? `Cloudflare Email Routing publishes the MX records ${managed.map((r) => r.value).join(', ')} itself, with priorities of its own, when it is enabled on ${domain} (\`svc edge cloudflare deploy\`): keep them, and remove every other MX record of ${domain}${exchanges.length > managed.length ? ` except ${exchanges.filter((e) => !managedBy.has(e)).join(' and ')}` : ''}.`
      : exchanges.length > 1
      ? `Remove every other MX record of ${domain}: mail for it must reach the edges at ${exchanges.join(' and ')}.`
      : `Remove every other MX record of ${domain}: mail for it must reach the edge at ${host.exchange}.`,
    `Keep exactly one SPF record (TXT starting with v=spf1) at ${domain}; if one exists, merge the mechanisms into it instead of adding a second.`,
  );
  const ptrRecords = records.filter((r) => r.purpose === 'ptr');
  if (ptrRecords.length > 0 && exchanges.length === 1) {
    steps.push(`At your VPS provider, set the reverse DNS (PTR) of ${host.addresses.map((a) => a.value).join(' and ')} to ${host.exchange}: receivers refuse mail from an address whose PTR does not name its host.`);
  } else if (ptrRecords.length > 0) {
    steps.push(`At your VPS providers, set the reverse DNS (PTR) of ${ptrRecords.map((r) => `${r.address} to ${r.value}`).join(', ')}: receivers refuse mail from an address whose PTR does not name its host.`);
  }
  steps.push(
    `Run \`svc domains apply ${ref}\`: svc routes ${domain} at the edge and checks the records, then sends a self-test message from svc-selftest@${domain} to itself through the edge.`,
    `Wait for status \`verified\` (event domain.verified). If it is \`failed\`, each record's \`reason\` says what to fix; after fixing, run \`svc domains verify ${ref}\`.`,
    `Create inboxes on ${domain} with \`svc inboxes create --domain ${domain}\`; their mail is signed with the DKIM key published at ${dkimName(key, domain)}.`,
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
    if (r.purpose === 'ptr') {
      lines.push(`; ptr: not part of this zone; set at your VPS provider: ${r.name}. PTR ${r.value}.`);
      continue;
    }
    const name = relativeName(r.name, plan.domain);
    lines.push(r.managed_by ? `; ${r.purpose}: published by Cloudflare Email Routing itself (its priority may differ)` : `; ${r.purpose}`);
    if (r.type === 'MX') lines.push(`${name}\tIN\tMX\t${r.priority ?? MX_PRIORITY} ${r.value}.`);
    else if (r.type === 'TXT') {
      const strings = txtStrings(r.value);
      lines.push(strings.length === 1 ? `${name}\tIN\tTXT\t${strings[0]}` : `${name}\tIN\tTXT\t( ${strings.join('\n\t\t\t  ')} )`);
    } else lines.push(`${name}\tIN\t${r.type}\t${r.value}`);
  }
  return lines.join('\n') + '\n';
}

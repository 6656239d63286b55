/**
 * Publishing a domain's plan through a DNS provider, and taking it back (docs/dns-providers.md).
 * The rules, for every adapter alike:
 * - svc adds only the planned records that are not there yet, and remembers exactly those;
 *   a planned record the owner already had is left alone and never removed later.
 * - SPF and DMARC are one-per-name: when the name already has a `v=spf1` (or `v=DMARC1`) record
 *   that is not the planned one, svc adds no second one (the DNS check then says what to change).
 * - Records svc added earlier that the plan no longer has are removed; records it added that are
 *   still planned stay its own. So re-running apply never duplicates anything.
 * - Teardown removes exactly the remembered records.
 * - What svc is about to add is remembered BEFORE the add (`intend`): a teardown that starts
 *   during the publish, or a crash after the add, still removes it.
 * Runs in the provisioning loop; the caller stores the result.
 */
import type { PlannedRecord } from '../plan.js';
import { DnsProviderError, sameRecord, type DnsProvider, type DnsRecord } from './provider.js';

/** One-per-name TXT records: what marks them. */
const SINGLETONS: Partial<Record<PlannedRecord['purpose'], RegExp>> = {
  spf: /^v=spf1(\s|$)/i,
  dmarc: /^v=DMARC1\s*(;|$)/i,
  mta_sts: /^v=STSv1\s*(;|$)/i,
  tls_rpt: /^v=TLSRPTv1\s*(;|$)/i,
};

/**
 * The planned records svc can publish in `zone`: not the PTR (it lives in the address owner's
 * reverse zone), not an MX its operator publishes (Cloudflare Email Routing's), and not a record outside the zone (the edge's A when its host name is in another
 * domain: the DNS check still asks for it, and the plan says where it goes).
 */
export function plannedToDns(records: PlannedRecord[], ttl: number, zone: string): (DnsRecord & { purpose: PlannedRecord['purpose'] })[] {
  const inZone = (name: string) => name === zone || name.endsWith(`.${zone}`);
  return records.flatMap((r) =>
    r.type === 'PTR' || r.managed_by || !inZone(r.name) ? [] : [{ type: r.type, name: r.name, value: r.value, ...(r.priority !== undefined ? { priority: r.priority } : {}), ttl, purpose: r.purpose }],
  );
}

const strip = (r: DnsRecord): DnsRecord => ({ type: r.type, name: r.name, value: r.value, ...(r.priority !== undefined ? { priority: r.priority } : {}), ttl: r.ttl });

/**
 * Makes the zone hold the plan: removes what svc added before and the plan no longer has, adds
 * what is missing. Returns every record svc now owns there (kept plus added). `intend` is called
 * with that same list before anything is added and must store it durably; when it answers false
 * (the domain left provisioning meanwhile) nothing is added and only the kept records are returned.
 */
export async function publishPlan(
  provider: DnsProvider,
  zone: string,
  planned: ReturnType<typeof plannedToDns>,
  previous: DnsRecord[],
  intend: (records: DnsRecord[]) => boolean = () => true,
): Promise<DnsRecord[]> {
  await provider.check(zone);
  const stale = previous.filter((p) => !planned.some((r) => sameRecord(p, r)));
  if (stale.length > 0) await provider.remove(zone, stale);
  const owned: DnsRecord[] = [];
  const missing: DnsRecord[] = [];
  const seen = new Map<string, DnsRecord[]>();
  for (const r of planned) {
    const key = `${r.type} ${r.name}`;
    const existing = seen.get(key) ?? (await provider.existing(zone, r.name, r.type));
    seen.set(key, existing);
    if (existing.some((e) => sameRecord(e, r))) {
      if (previous.some((p) => sameRecord(p, r))) owned.push(strip(r));
      continue;
    }
    const singleton = SINGLETONS[r.purpose];
    if (singleton && existing.some((e) => singleton.test(e.value.trim()))) continue;
    missing.push(strip(r));
  }
  if (missing.length === 0) return owned;
  if (!intend([...owned, ...missing])) return owned;
  await provider.add(zone, missing);
  return [...owned, ...missing];
}

/** Removes exactly what svc added. */
export async function unpublish(provider: DnsProvider, zone: string, added: DnsRecord[]): Promise<void> {
  if (added.length > 0) await provider.remove(zone, added);
}

/** A failure as a domain's reason: the adapter's own message, or a generic one (an unexpected error's text could hold anything). */
export function providerFailure(provider: DnsProvider, err: unknown): string {
  return err instanceof DnsProviderError ? err.message : `Publishing through ${provider.label} failed unexpectedly (${err instanceof Error ? err.name : 'error'}); svc retries every 10 s.`;
}

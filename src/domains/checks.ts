/**
 * DNS checks of a domain's planned records (docs/domains.md): each record is `valid` or `invalid`
 * with a reason that says what to fix. Lookups go to the configured resolvers (`svc serve --dns`,
 * else the `--edge-dns` servers, else the system's).
 */
import { Resolver } from 'node:dns/promises';
import type { Db } from '../db/open.js';
import type { PlannedRecord } from './plan.js';

export interface RecordCheck {
  type: string;
  name: string;
  /** The value the check compared with; a later plan with another value makes the check stale. */
  expected: string;
  status: 'valid' | 'invalid';
  /** Invalid because DNS has no such record at all (the SDK's `MISSING`), not a wrong one. Absent in checks stored before it. */
  missing?: true;
  reason: string | null;
  /** What DNS answered (shortened), or null when nothing. */
  observed: string | null;
  checked_at: string;
}

export const DNS_SETTING = 'domain_check_dns';
const DNS_TIMEOUT_MS = 3_000;
const DNS_TRIES = 2;

/** The resolvers `svc serve` was started with for domain checks, or null for the system's. */
export function checkServers(db: Db): string[] | null {
  const row = db.prepare('SELECT value FROM settings WHERE key = ?').get(DNS_SETTING) as { value: string } | undefined;
  if (!row) return null;
  const servers = JSON.parse(row.value) as unknown;
  return Array.isArray(servers) && servers.every((s) => typeof s === 'string') && servers.length > 0 ? (servers as string[]) : null;
}

/** Written by `svc serve` at every start: the servers given, or none (the system's resolvers). */
export function storeCheckServers(db: Db, servers: string[] | null): void {
  if (servers && servers.length > 0) {
    db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(DNS_SETTING, JSON.stringify(servers));
  } else db.prepare('DELETE FROM settings WHERE key = ?').run(DNS_SETTING);
}

type Lookup<T> = { ok: true; value: T } | { ok: false; missing: boolean; error: string };

async function lookup<T>(fn: () => Promise<T>): Promise<Lookup<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { ok: false, missing: code === 'ENOTFOUND' || code === 'ENODATA', error: code };
  }
}

const clip = (s: string, n = 120) => (s.length > n ? `${s.slice(0, n)}…` : s);
const host = (s: string) => s.toLowerCase().replace(/\.$/, '');
const tags = (txt: string) =>
  new Map(
    txt
      .split(';')
      .map((p) => p.trim())
      .filter(Boolean)
      .map((p) => {
        const eq = p.indexOf('=');
        return [p.slice(0, eq < 0 ? p.length : eq).trim().toLowerCase(), eq < 0 ? '' : p.slice(eq + 1).replace(/\s+/g, '')] as [string, string];
      }),
  );

/**
 * Reverse DNS, forward-confirmed (RFC 8601 §2.7.3 "iprev"): the PTR of the edge's address names
 * its host, and that host resolves back to the address. Receivers check exactly this.
 */
async function checkPtr(resolver: Resolver, r: PlannedRecord, result: (status: 'valid' | 'invalid', reason: string | null, observed: string | null, missing?: boolean) => RecordCheck): Promise<RecordCheck> {
  const address = r.address ?? '';
  const fix = `set the reverse DNS (PTR) of ${address} to ${r.value} at your VPS provider (its control panel or support; the address's owner sets it, not the domain's DNS)`;
  const l = await lookup(() => resolver.resolvePtr(r.name));
  if (!l.ok) return l.missing ? result('invalid', `The address ${address} has no reverse DNS: ${fix}.`, null, true) : result('invalid', `The reverse DNS lookup of ${address} failed (${l.error}); check it again later, or ${fix}.`, null);
  const names = l.value.map(host);
  if (!names.includes(host(r.value))) return result('invalid', `The reverse DNS of ${address} is ${names.join(', ') || 'empty'}, not ${r.value}: ${fix}.`, names.join(', '));
  const forward = await lookup(() => (address.includes(':') ? resolver.resolve6(r.value) : resolver.resolve4(r.value)));
  const back = forward.ok ? forward.value.map((a) => a.toLowerCase()) : [];
  if (!back.includes(address.toLowerCase())) {
    return result('invalid', `The reverse DNS of ${address} names ${r.value}, but ${r.value} does not resolve back to ${address} (${back.join(', ') || 'no address'}); point ${r.value} at ${address}.`, names.join(', '));
  }
  return result('valid', null, names.join(', '));
}

/** Checks every record; never throws (a failing lookup is an `invalid` record with the DNS error). `svc doctor` asks with shorter limits. */
export async function checkRecords(records: PlannedRecord[], servers: string[] | null, limits: { timeoutMs: number; tries: number } = { timeoutMs: DNS_TIMEOUT_MS, tries: DNS_TRIES }): Promise<RecordCheck[]> {
  const resolver = new Resolver({ timeout: limits.timeoutMs, tries: limits.tries });
  if (servers) resolver.setServers(servers);
  // With several edges the plan has one MX per edge: each is expected, none is "another" MX.
  const plannedMx = records.filter((r) => r.purpose === 'mx').map((r) => host(r.value));
  return Promise.all(records.map((r) => checkRecord(resolver, r, plannedMx)));
}

async function checkRecord(resolver: Resolver, r: PlannedRecord, plannedMx: string[]): Promise<RecordCheck> {
  const result = (status: 'valid' | 'invalid', reason: string | null, observed: string | null, missing = false): RecordCheck => ({
    type: r.type,
    name: r.name,
    expected: r.value,
    status,
    ...(missing ? { missing: true as const } : {}),
    reason,
    observed: observed === null ? null : clip(observed, 300),
    checked_at: new Date().toISOString(),
  });
  const failed = (l: { missing: boolean; error: string }, what: string) =>
    l.missing ? result('invalid', `${what} is missing; add ${r.type} ${r.name} ${r.priority !== undefined ? `${r.priority} ` : ''}${clip(r.value, 60)}.`, null, true)
      : result('invalid', `The DNS lookup of ${what} failed (${l.error}); check that the domain's name servers answer, then verify again.`, null);

  if (r.purpose === 'mx') {
    const l = await lookup(() => resolver.resolveMx(r.name));
    if (!l.ok) return failed(l, `MX at ${r.name}`);
    const hosts = l.value.map((m) => host(m.exchange));
    const observed = l.value.map((m) => `${m.priority} ${host(m.exchange)}`).join(', ');
    if (hosts.length === 0) return result('invalid', `MX at ${r.name} is missing; add MX ${r.priority} ${r.value}.`, null, true);
    if (!hosts.includes(host(r.value))) return result('invalid', `MX at ${r.name} points at ${hosts.join(', ')}, expected ${r.value}.`, observed);
    const others = hosts.filter((h) => !plannedMx.includes(h));
    if (others.length > 0) return result('invalid', `MX at ${r.name} also points at ${others.join(', ')}; remove it so all mail reaches ${r.value}.`, observed);
    return result('valid', null, observed);
  }
  if (r.purpose === 'ptr') return checkPtr(resolver, r, result);
  if (r.type === 'A' || r.type === 'AAAA') {
    const l = await lookup(() => (r.type === 'A' ? resolver.resolve4(r.name) : resolver.resolve6(r.name)));
    if (!l.ok) return failed(l, `${r.type} at ${r.name}`);
    if (!l.value.includes(r.value)) return result('invalid', `${r.type} at ${r.name} is ${l.value.join(', ') || 'empty'}, expected ${r.value}.`, l.value.join(', '));
    return result('valid', null, l.value.join(', '));
  }
  // TXT: the character-strings of one record are joined (RFC 7208 §3.3, RFC 6376 §3.6.2.2).
  const l = await lookup(() => resolver.resolveTxt(r.name));
  if (!l.ok) return failed(l, `TXT at ${r.name}`);
  const txts = l.value.map((parts) => parts.join(''));
  if (r.purpose === 'spf') {
    const spf = txts.filter((t) => /^v=spf1(\s|$)/i.test(t.trim()));
    if (spf.length === 0) return result('invalid', `TXT at ${r.name} has no SPF record; add "${r.value}".`, txts.join(' | ') || null, true);
    if (spf.length > 1) return result('invalid', `TXT at ${r.name} has ${spf.length} SPF records; merge them into one (receivers treat several as an error).`, spf.join(' | '));
    const terms = spf[0].toLowerCase().split(/\s+/);
    if (!terms.some((t) => t === 'mx' || t === '+mx' || t.startsWith('mx:') || t.startsWith('include:') || t.startsWith('ip4:') || t.startsWith('ip6:') || t.startsWith('a:') || t === 'a')) {
      return result('invalid', `The SPF record at ${r.name} does not authorize the edge; add the \`mx\` mechanism ("${r.value}").`, spf[0]);
    }
    if (terms.includes('+all') || terms.includes('all')) return result('invalid', `The SPF record at ${r.name} ends in +all, which lets anyone send as the domain; use -all.`, spf[0]);
    // The smart host's mechanism (include:amazonses.com): without it, mail relayed through the provider fails SPF.
    const required = r.value.toLowerCase().split(/\s+/).slice(1).filter((t) => t !== 'mx' && !t.endsWith('all'));
    const absent = required.filter((m) => !terms.includes(m) && !terms.includes(`+${m}`));
    if (absent.length > 0) return result('invalid', `The SPF record at ${r.name} does not name ${absent.join(' ')}, which your smart host's mail is sent from; add it ("${r.value}").`, spf[0]);
    return result('valid', null, spf[0]);
  }
  if (r.purpose === 'dkim') {
    const want = tags(r.value).get('p');
    const dkim = txts.map((t) => ({ t, tags: tags(t) })).filter((x) => x.tags.has('p'));
    if (dkim.length === 0) return result('invalid', `TXT at ${r.name} is missing the DKIM key; add "${clip(r.value, 40)}" (the full value is in the plan).`, txts.join(' | ') || null, true);
    if (!dkim.some((x) => x.tags.get('p') === want)) {
      const got = dkim[0].tags.get('p') ?? '';
      return result('invalid', `TXT at ${r.name} publishes a different DKIM key (p=${clip(got, 24) || 'empty'}) than svc signs with; replace it with the value from the plan.`, dkim[0].t);
    }
    return result('valid', null, dkim.find((x) => x.tags.get('p') === want)!.t);
  }
  if (r.purpose === 'mta_sts' || r.purpose === 'tls_rpt') {
    const [tag, what] = r.purpose === 'mta_sts' ? [/^v=STSv1\s*(;|$)/i, 'MTA-STS'] : [/^v=TLSRPTv1\s*(;|$)/i, 'TLS-RPT'];
    const found = txts.filter((t) => tag.test(t.trim()));
    if (found.length === 0) return result('invalid', `TXT at ${r.name} is missing; add "${r.value}".`, txts.join(' | ') || null, true);
    if (found.length > 1) return result('invalid', `TXT at ${r.name} has ${found.length} ${what} records; keep one.`, found.join(' | '));
    // An MTA-STS id is the policy's version: another id is a policy svc did not write.
    if (r.purpose === 'mta_sts' && tags(found[0]).get('id') !== tags(r.value).get('id')) {
      return result('invalid', `The MTA-STS record at ${r.name} has another id than the policy the edge serves; replace it with "${r.value}".`, found[0]);
    }
    if (r.purpose === 'tls_rpt' && !tags(found[0]).get('rua')) return result('invalid', `The TLS-RPT record at ${r.name} has no rua= address; use "${r.value}".`, found[0]);
    return result('valid', null, found[0]);
  }
  // DMARC
  const dmarc = txts.filter((t) => /^v=DMARC1\s*(;|$)/i.test(t.trim()));
  if (dmarc.length === 0) return result('invalid', `TXT at ${r.name} is missing; add "${r.value}".`, txts.join(' | ') || null, true);
  if (dmarc.length > 1) return result('invalid', `TXT at ${r.name} has ${dmarc.length} DMARC records; keep one.`, dmarc.join(' | '));
  const p = tags(dmarc[0]).get('p');
  if (!p || !['none', 'quarantine', 'reject'].includes(p.toLowerCase())) return result('invalid', `The DMARC record at ${r.name} has no valid p= policy; use "${r.value}".`, dmarc[0]);
  return result('valid', null, dmarc[0]);
}

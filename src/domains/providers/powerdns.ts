/**
 * The PowerDNS Authoritative HTTP API (`/api/v1/servers/{server_id}/zones/{zone}`, header
 * `X-API-Key`). PowerDNS replaces whole RRsets (`changetype: REPLACE`), so adding or removing one
 * record reads the RRset, changes that one record and writes the RRset back: records the owner
 * has at the same name stay, each with its own `disabled` flag unchanged. A record the owner
 * disabled counts as present: svc never re-enables it, never adds a twin of it, never claims or
 * removes it. Answers are read up to PROVIDER_LIMITS.httpBodyBytes.
 *
 * The lost-update window: the PowerDNS API has no conditional write (no ETag, no serial check on
 * PATCH), so an owner's change to the same RRset between svc's GET and its PATCH is overwritten.
 * The window is one GET and one PATCH back to back, with nothing awaited in between; svc touches
 * only RRsets that hold its planned records, and only while publishing or tearing down.
 */
import { DnsProviderError, readBounded, quoteServer, PROVIDER_LIMITS, type DnsProvider } from './provider.js';
import type { WireRecord } from './dns-message.js';

export interface PowerDnsSettings {
  url: string;
  serverId: string;
  apiKey: string;
}

interface RRset {
  name: string;
  type: string;
  ttl: number;
  records: PdnsRecord[];
}

interface PdnsRecord {
  content: string;
  disabled: boolean;
}

const fqdn = (name: string) => `${name.replace(/\.$/, '')}.`;

/** A record as PowerDNS content: MX `prio host.`, TXT quoted 255-byte strings. */
export function pdnsContent(r: WireRecord): string {
  if (r.type === 'MX') return `${r.priority ?? 10} ${fqdn(r.value)}`;
  if (r.type !== 'TXT') return r.value;
  const bytes = Buffer.from(r.value, 'utf8');
  const parts: string[] = [];
  for (let i = 0; i < bytes.length || i === 0; i += 255) {
    parts.push(`"${bytes.subarray(i, i + 255).toString('utf8').replace(/[\\"]/g, (c) => `\\${c}`)}"`);
    if (bytes.length === 0) break;
  }
  return parts.join(' ');
}

/** PowerDNS content back to a record value (TXT strings unquoted and joined). */
function fromContent(type: WireRecord['type'], content: string): { value: string; priority?: number } {
  if (type === 'MX') {
    const [prio, host = ''] = content.trim().split(/\s+/);
    return { value: host.replace(/\.$/, '').toLowerCase(), priority: Number(prio) };
  }
  if (type !== 'TXT') return { value: content.trim() };
  let out = '';
  const re = /"((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(content); m; m = re.exec(content)) out += m[1].replace(/\\(\d{3}|.)/g, (_, c: string) => (c.length === 3 ? String.fromCharCode(Number(c)) : c));
  return { value: out };
}

export class PowerDnsProvider implements DnsProvider {
  readonly label: string;

  constructor(private readonly s: PowerDnsSettings) {
    this.label = `the PowerDNS API at ${new URL(s.url).origin}`;
  }

  private zoneUrl(zone: string): string {
    return `${this.s.url.replace(/\/+$/, '')}/api/v1/servers/${encodeURIComponent(this.s.serverId)}/zones/${encodeURIComponent(fqdn(zone))}`;
  }

  /** One API call; the answer's body is read up to the limit and parsed when it is JSON. */
  private async call(method: 'GET' | 'PATCH', zone: string, what: string, body?: unknown): Promise<unknown> {
    let res: Response;
    let text: string;
    const signal = AbortSignal.timeout(PROVIDER_LIMITS.timeoutMs);
    try {
      res = await fetch(this.zoneUrl(zone), {
        method,
        headers: { 'X-API-Key': this.s.apiKey, Accept: 'application/json', ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal,
        redirect: 'error',
      });
      text = await readBounded(res, what, this.label, signal);
    } catch (err) {
      if (err instanceof DnsProviderError) throw err;
      const cause = (err as { cause?: NodeJS.ErrnoException }).cause;
      const why = signal.aborted ? `no complete answer within ${PROVIDER_LIMITS.timeoutMs / 1000} s` : (cause?.code ?? (err as Error).name);
      throw new DnsProviderError(`${what} at ${this.label} failed: ${why}. Check that PowerDNS runs with api=yes and its webserver listens there.`, { unreachable: true });
    }
    if (res.ok) {
      if (method !== 'GET') return null;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new DnsProviderError(`${what} at ${this.label} failed: the answer is not JSON.`);
      }
    }
    let message = '';
    try {
      message = String((JSON.parse(text) as { error?: unknown }).error ?? '');
    } catch {
      message = text;
    }
    const hint =
      res.status === 401 || res.status === 403 ? 'the API key was not accepted: check api-key in pdns.conf.'
        : res.status === 404 ? `the zone ${fqdn(zone)} (or server ${this.s.serverId}) does not exist there: create it, or set \`zones\`.`
          : `HTTP ${res.status}${message ? `: ${quoteServer(message)}` : ''}.`;
    throw new DnsProviderError(`${what} at ${this.label} failed: ${hint}`);
  }

  private async rrsets(zone: string, what: string): Promise<RRset[]> {
    const body = (await this.call('GET', zone, what)) as { rrsets?: unknown };
    if (!body || !Array.isArray(body.rrsets)) throw new DnsProviderError(`${what} at ${this.label} failed: the answer has no rrsets.`);
    return body.rrsets.filter(
      (r): r is RRset => typeof r === 'object' && r !== null && typeof (r as RRset).name === 'string' && typeof (r as RRset).type === 'string' && Array.isArray((r as RRset).records),
    );
  }

  /** The records at `name` of `type`, disabled ones included: svc treats them as present (never adds a twin, never claims one). */
  async existing(zone: string, name: string, type: WireRecord['type']): Promise<WireRecord[]> {
    const set = (await this.rrsets(zone, `Reading ${type} ${name}`)).find((r) => r.name.toLowerCase() === fqdn(name).toLowerCase() && r.type === type);
    return (set?.records ?? []).filter((r) => typeof r.content === 'string').map((r) => ({ type, name, ttl: set!.ttl, ...fromContent(type, r.content) }));
  }

  /**
   * Writes each touched RRset back with `change` applied to its records: every record keeps its
   * content and `disabled` flag as read; an emptied RRset is deleted. The GET and the PATCH follow
   * each other directly (see the lost-update window above).
   */
  private async change(zone: string, records: WireRecord[], what: string, change: (current: PdnsRecord[], mine: string[], type: WireRecord['type']) => PdnsRecord[]): Promise<void> {
    const sets = await this.rrsets(zone, what);
    const groups = new Map<string, WireRecord[]>();
    for (const r of records) groups.set(`${fqdn(r.name).toLowerCase()} ${r.type}`, [...(groups.get(`${fqdn(r.name).toLowerCase()} ${r.type}`) ?? []), r]);
    const patch = [...groups.values()].map((mine) => {
      const { name, type, ttl } = mine[0];
      const set = sets.find((s) => s.name.toLowerCase() === fqdn(name).toLowerCase() && s.type === type);
      const current = (set?.records ?? []).filter((r) => typeof r.content === 'string').map((r) => ({ content: r.content, disabled: r.disabled === true }));
      const next = change(current, mine.map(pdnsContent), type);
      return next.length === 0
        ? { name: fqdn(name), type, changetype: 'DELETE' }
        : { name: fqdn(name), type, ttl: set?.ttl ?? ttl, changetype: 'REPLACE', records: next };
    });
    await this.call('PATCH', zone, what, { rrsets: patch });
  }

  /** The same record: host names (MX) and addresses compared without case, TXT values exactly. */
  private static same(type: WireRecord['type'], a: string, b: string): boolean {
    const x = fromContent(type, a);
    const y = fromContent(type, b);
    if (type === 'TXT') return x.value === y.value;
    return x.value.toLowerCase() === y.value.toLowerCase() && x.priority === y.priority;
  }

  add(zone: string, records: WireRecord[]): Promise<void> {
    return this.change(zone, records, `Adding ${records.length} records to ${zone}`, (current, mine, type) => [
      ...current,
      ...mine.filter((m) => !current.some((c) => PowerDnsProvider.same(type, c.content, m))).map((content) => ({ content, disabled: false })),
    ]);
  }

  /** Removes svc's records; a disabled one is the owner's doing and stays. */
  remove(zone: string, records: WireRecord[]): Promise<void> {
    return this.change(zone, records, `Removing ${records.length} records from ${zone}`, (current, mine, type) => current.filter((c) => c.disabled || !mine.some((m) => PowerDnsProvider.same(type, c.content, m))));
  }

  async check(zone: string): Promise<void> {
    await this.rrsets(zone, `Reading the zone ${zone}`);
  }
}

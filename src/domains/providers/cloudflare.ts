/**
 * The Cloudflare DNS API (v4, `Authorization: Bearer <API token>`; docs/dns-providers.md). The
 * zone is found by name (`GET /zones?name=`) unless its id is configured; records are listed by
 * type and exact name (`GET /zones/{id}/dns_records`, paged), created one at a time (`POST`) and
 * deleted by id (`DELETE /zones/{id}/dns_records/{record id}`). Cloudflare keeps each record on
 * its own, so adding or removing one never rewrites the owner's other records at the same name.
 *
 * What a (possibly hostile) API answers is trusted for nothing but ids: the zone found must carry
 * exactly the asked name, a listed record counts only when its type and name are the asked ones,
 * and svc deletes only ids of records whose type, name and content match a record svc added.
 * Every call is bounded: PROVIDER_LIMITS.timeoutMs for the whole exchange, httpBodyBytes of answer,
 * MAX_PAGES pages of a listing.
 */
import { DnsProviderError, PROVIDER_LIMITS, quoteServer, readBounded, sameRecord, type DnsProvider } from './provider.js';
import type { RecordTypeName, WireRecord } from './dns-message.js';

export interface CloudflareSettings {
  apiToken: string;
  /** The zone's id; without it the zone is looked up by name. */
  zoneId?: string;
  /** `https://api.cloudflare.com/client/v4` unless set (tests). */
  apiBase: string;
}

export const CLOUDFLARE_API_BASE = 'https://api.cloudflare.com/client/v4';

/** Records per page of a listing (Cloudflare's default), and pages read at most: 5,000 records at one name and type is no mail domain. */
const PER_PAGE = 100;
const MAX_PAGES = 50;

/** A Cloudflare zone or record id: 32 hex digits today; anything else is refused before it goes into a URL. */
const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The fix for each failure a Cloudflare answer can mean. */
const FIX = {
  auth: 'the API token was not accepted or may not do this: the token needs Zone:DNS:Edit for the zone (and Zone:Read when no zone_id is set). Make one under My Profile → API Tokens and set it with `svc domains provider-set --kind cloudflare --api-token-file FILE`.',
  rateLimited: 'Cloudflare is rate-limiting this token (HTTP 429); svc tries again on its next pass.',
} as const;

interface Envelope {
  success: boolean;
  errors: { code?: unknown; message?: unknown }[];
  result: unknown;
  result_info?: { page?: unknown; per_page?: unknown; count?: unknown; total_count?: unknown };
}

/** A record as Cloudflare's `content`: MX the bare host (its priority is a field of its own), TXT as quoted strings of at most 255 bytes. */
export function cloudflareContent(r: Pick<WireRecord, 'type' | 'value'>): string {
  if (r.type === 'MX') return r.value.replace(/\.$/, '').toLowerCase();
  if (r.type !== 'TXT') return r.value;
  const bytes = Buffer.from(r.value, 'utf8');
  const parts: string[] = [];
  for (let i = 0; i < bytes.length; i += 255) parts.push(`"${bytes.subarray(i, i + 255).toString('utf8').replace(/[\\"]/g, (c) => `\\${c}`)}"`);
  return parts.length ? parts.join(' ') : '""';
}

/** Cloudflare's `content` back to a record value: quoted TXT strings unquoted and joined; unquoted TXT (older records) as it is. */
export function fromCloudflareContent(type: RecordTypeName, content: string): string {
  if (type === 'MX') return content.trim().replace(/\.$/, '').toLowerCase();
  if (type !== 'TXT' || !content.trimStart().startsWith('"')) return content.trim();
  let out = '';
  const re = /"((?:[^"\\]|\\.)*)"/g;
  for (let m = re.exec(content); m; m = re.exec(content)) out += m[1].replace(/\\(\d{3}|.)/g, (_, c: string) => (c.length === 3 ? String.fromCharCode(Number(c)) : c));
  return out;
}

const inZone = (name: string, zone: string) => {
  const n = name.toLowerCase().replace(/\.$/, '');
  const z = zone.toLowerCase().replace(/\.$/, '');
  return n === z || n.endsWith(`.${z}`);
};

export class CloudflareProvider implements DnsProvider {
  readonly label: string;
  private readonly base: string;
  /** Zone ids found by name in this pass. */
  private readonly zoneIds = new Map<string, string>();

  constructor(private readonly s: CloudflareSettings) {
    this.base = s.apiBase.replace(/\/+$/, '');
    this.label = `the Cloudflare API at ${new URL(this.base).origin}`;
  }

  /** One API call: the whole exchange within the timeout, the answer bounded and checked to be Cloudflare's envelope. */
  private async call(method: 'GET' | 'POST' | 'DELETE', path: string, what: string, body?: unknown, notFound?: string): Promise<Envelope> {
    let res: Response;
    let text: string;
    const signal = AbortSignal.timeout(PROVIDER_LIMITS.timeoutMs);
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${this.s.apiToken}`, Accept: 'application/json', ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal,
        redirect: 'error',
      });
      text = await readBounded(res, what, this.label, signal);
    } catch (err) {
      if (err instanceof DnsProviderError) throw err;
      const cause = (err as { cause?: NodeJS.ErrnoException }).cause;
      const why = signal.aborted ? `no complete answer within ${PROVIDER_LIMITS.timeoutMs / 1000} s` : (cause?.code ?? (err as Error).name);
      throw new DnsProviderError(`${what} at ${this.label} failed: ${why}. Check that this host reaches ${new URL(this.base).host} over HTTPS.`, { unreachable: true });
    }
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: handled below by status, or as a malformed answer.
    }
    const envelope = isEnvelope(parsed) ? parsed : null;
    // A server that echoes the token back gets it cut out before its text is quoted.
    const serverText = envelope ? envelope.errors.map((e) => `${typeof e.code === 'number' ? `${e.code} ` : ''}${typeof e.message === 'string' ? e.message : ''}`).join('; ') : '';
    const serverSays = quoteServer(serverText.split(this.s.apiToken).join('[token]'));
    const said = serverSays ? ` (Cloudflare says: ${serverSays})` : '';
    if (res.status === 401 || res.status === 403) throw new DnsProviderError(`${what} at ${this.label} failed: ${FIX.auth}${said}`);
    if (res.status === 429) throw new DnsProviderError(`${what} at ${this.label} failed: ${FIX.rateLimited}`);
    if (res.status === 404 && notFound) throw new DnsProviderError(`${what} at ${this.label} failed: ${notFound}${said}`);
    if (!res.ok || !envelope || envelope.success !== true) {
      const detail = !envelope ? 'the answer is not a Cloudflare API answer (JSON with success, errors and result)' : `HTTP ${res.status}${said}`;
      throw new DnsProviderError(`${what} at ${this.label} failed: ${detail}.`);
    }
    return envelope;
  }

  /** The zone's id: the configured one, else the one zone Cloudflare lists under exactly this name. */
  private async zoneId(zone: string): Promise<string> {
    if (this.s.zoneId) return this.s.zoneId;
    const known = this.zoneIds.get(zone);
    if (known) return known;
    const what = `Looking up the zone ${zone}`;
    const env = await this.call('GET', `/zones?${new URLSearchParams({ name: zone, per_page: '5' })}`, what);
    const found = (Array.isArray(env.result) ? env.result : []).filter(
      (z): z is { id: string; name: string } => typeof z === 'object' && z !== null && typeof (z as { id?: unknown }).id === 'string' && typeof (z as { name?: unknown }).name === 'string' && (z as { name: string }).name.toLowerCase() === zone.toLowerCase(),
    );
    if (found.length === 0) {
      throw new DnsProviderError(`${what} at ${this.label} failed: no zone ${zone} is visible to this API token. Add the domain to the Cloudflare account, give the token Zone:Read for it, or set \`zone_id\` (or \`zones\` when the domain is under a larger zone).`);
    }
    if (!ID.test(found[0].id)) throw new DnsProviderError(`${what} at ${this.label} failed: the zone id in the answer is not an id.`);
    this.zoneIds.set(zone, found[0].id);
    return found[0].id;
  }

  private notFound(zone: string): string {
    return this.s.zoneId
      ? `the zone id ${this.s.zoneId} is not a zone this token can see. Check \`zone_id\` (the Zone ID on the domain's Overview page) or leave it out to look the zone up by name.`
      : `the zone ${zone} is not there any more. Check the domain in the Cloudflare dashboard.`;
  }

  /** Cloudflare's records at `name` of `type`, with their ids; only ones that really are of that name and type. */
  private async listed(zone: string, name: string, type: RecordTypeName, what: string): Promise<{ id: string; record: WireRecord }[]> {
    const id = await this.zoneId(zone);
    const out: { id: string; record: WireRecord }[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const query = new URLSearchParams({ type, name: name.toLowerCase(), page: String(page), per_page: String(PER_PAGE) });
      const env = await this.call('GET', `/zones/${id}/dns_records?${query}`, what, undefined, this.notFound(zone));
      const rows = Array.isArray(env.result) ? env.result : [];
      for (const row of rows) {
        if (typeof row !== 'object' || row === null) continue;
        const r = row as { id?: unknown; type?: unknown; name?: unknown; content?: unknown; priority?: unknown; ttl?: unknown };
        if (typeof r.id !== 'string' || !ID.test(r.id) || r.type !== type || typeof r.name !== 'string' || r.name.toLowerCase().replace(/\.$/, '') !== name.toLowerCase() || typeof r.content !== 'string') continue;
        out.push({ id: r.id, record: { type, name, value: fromCloudflareContent(type, r.content), ...(type === 'MX' ? { priority: typeof r.priority === 'number' ? r.priority : 10 } : {}), ttl: typeof r.ttl === 'number' ? r.ttl : 1 } });
      }
      const total = env.result_info && typeof env.result_info.total_count === 'number' ? env.result_info.total_count : rows.length;
      if (rows.length === 0 || page * PER_PAGE >= total) return out;
    }
    throw new DnsProviderError(`${what} at ${this.label} failed: more than ${MAX_PAGES * PER_PAGE} ${type} records at ${name}.`);
  }

  /** A record svc would touch must be in the zone: the adapter refuses any other before calling out. */
  private guard(zone: string, records: WireRecord[]): void {
    const outside = records.find((r) => !inZone(r.name, zone));
    if (outside) throw new DnsProviderError(`svc refused to change ${outside.type} ${outside.name.slice(0, 253)} through ${this.label}: it is not in the zone ${zone}.`);
  }

  async existing(zone: string, name: string, type: RecordTypeName): Promise<WireRecord[]> {
    this.guard(zone, [{ type, name, value: '', ttl: 0 }]);
    return (await this.listed(zone, name, type, `Reading ${type} ${name}`)).map((l) => l.record);
  }

  async add(zone: string, records: WireRecord[]): Promise<void> {
    this.guard(zone, records);
    const id = await this.zoneId(zone);
    for (const r of records) {
      const what = `Adding ${r.type} ${r.name} to ${zone}`;
      if ((await this.listed(zone, r.name, r.type, what)).some((l) => sameRecord(l.record, r))) continue;
      await this.call('POST', `/zones/${id}/dns_records`, what, {
        type: r.type,
        name: r.name.toLowerCase(),
        content: cloudflareContent(r),
        ttl: r.ttl,
        ...(r.type === 'MX' ? { priority: r.priority ?? 10 } : {}),
        // An address svc publishes is the mail host's own: never behind Cloudflare's HTTP proxy.
        ...(r.type === 'A' || r.type === 'AAAA' ? { proxied: false } : {}),
        comment: 'published by svc',
      }, this.notFound(zone));
    }
  }

  /** Deletes, by id, the listed record that is each of `records`: the owner's other records at the same name are never touched. */
  async remove(zone: string, records: WireRecord[]): Promise<void> {
    this.guard(zone, records);
    const id = await this.zoneId(zone);
    for (const r of records) {
      const what = `Removing ${r.type} ${r.name} from ${zone}`;
      // One record for each svc added (Cloudflare refuses identical twins anyway); none there is no error.
      const mine = (await this.listed(zone, r.name, r.type, what)).find((l) => sameRecord(l.record, r));
      // The published schema requires a JSON body on this DELETE (with no schema of its own): an empty object.
      if (mine) await this.call('DELETE', `/zones/${id}/dns_records/${mine.id}`, what, {}, this.notFound(zone));
    }
  }

  async check(zone: string): Promise<void> {
    const id = await this.zoneId(zone);
    await this.call('GET', `/zones/${id}/dns_records?${new URLSearchParams({ page: '1', per_page: '5' })}`, `Reading the zone ${zone}`, undefined, this.notFound(zone));
  }
}

function isEnvelope(v: unknown): v is Envelope {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as Partial<Envelope>;
  return typeof e.success === 'boolean' && Array.isArray(e.errors) && e.errors.every((x) => typeof x === 'object' && x !== null) && 'result' in e;
}

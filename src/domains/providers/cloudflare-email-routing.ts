/**
 * Cloudflare Email Routing for the serverless edge (`svc edge cloudflare deploy`, docs/edge.md):
 * enable routing on a zone and send svc's addresses (or everything, the catch-all) to the Worker.
 * Same API, token and bounds as the Cloudflare DNS provider (cloudflare.ts): `Authorization:
 * Bearer`, every exchange within PROVIDER_LIMITS.timeoutMs and httpBodyBytes, answers trusted for
 * nothing but what is asked (a rule counts as svc's only when its one matcher is the literal
 * address and its action sends to this Worker).
 */
import { DnsProviderError, PROVIDER_LIMITS, quoteServer, readBounded } from './provider.js';

/** Rules per page (the schema's maximum) and pages read at most: 5,000 rules is no svc zone. */
const RULES_PER_PAGE = 50;
const MAX_RULE_PAGES = 100;
const ID = /^[A-Za-z0-9_-]{1,64}$/;
const FIX_AUTH = 'the API token was not accepted or may not do this: Email Routing needs a token with Zone:Email Routing Rules:Edit and Zone:Zone Settings:Edit (and Zone:Read to find the zone) for the domain.';

interface Envelope {
  success: boolean;
  errors: { code?: unknown; message?: unknown }[];
  result: unknown;
  result_info?: { total_count?: unknown };
}

export interface EmailRoutingState {
  zone: string;
  enabled: boolean;
  status: string;
  /** Addresses with a rule sending them to the Worker. */
  routedAddresses: string[];
  /** The catch-all sends to the Worker. */
  catchAllToWorker: boolean;
}

export class CloudflareEmailRouting {
  private readonly base: string;
  private readonly label: string;

  constructor(
    private readonly apiToken: string,
    apiBase: string,
    private readonly worker: string,
  ) {
    this.base = apiBase.replace(/\/+$/, '');
    this.label = `the Cloudflare API at ${new URL(this.base).origin}`;
  }

  private async call(method: 'GET' | 'POST' | 'PUT', path: string, what: string, body?: unknown): Promise<Envelope> {
    const signal = AbortSignal.timeout(PROVIDER_LIMITS.timeoutMs);
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: { Authorization: `Bearer ${this.apiToken}`, Accept: 'application/json', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal,
        redirect: 'error',
      });
      text = await readBounded(res, what, this.label, signal);
    } catch (err) {
      if (err instanceof DnsProviderError) throw err;
      const why = signal.aborted ? `no complete answer within ${PROVIDER_LIMITS.timeoutMs / 1000} s` : ((err as { cause?: NodeJS.ErrnoException }).cause?.code ?? (err as Error).name);
      throw new DnsProviderError(`${what} at ${this.label} failed: ${why}.`, { unreachable: true });
    }
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // handled below
    }
    const envelope = isEnvelope(parsed) ? parsed : null;
    const serverText = envelope ? envelope.errors.map((e) => (typeof e.message === 'string' ? e.message : '')).join('; ') : '';
    const says = quoteServer(serverText.split(this.apiToken).join('[token]'));
    const said = says ? ` (Cloudflare says: ${says})` : '';
    if (res.status === 401 || res.status === 403) throw new DnsProviderError(`${what} at ${this.label} failed: ${FIX_AUTH}${said}`);
    if (!res.ok || !envelope || envelope.success !== true) throw new DnsProviderError(`${what} at ${this.label} failed: ${envelope ? `HTTP ${res.status}${said}` : 'the answer is not a Cloudflare API answer'}.`);
    return envelope;
  }

  /** The id of the zone named exactly `zone`. */
  async zoneId(zone: string): Promise<string> {
    const what = `Looking up the zone ${zone}`;
    const env = await this.call('GET', `/zones?${new URLSearchParams({ name: zone, per_page: '5' })}`, what);
    const found = (Array.isArray(env.result) ? env.result : []).find((z) => isObject(z) && typeof z.id === 'string' && typeof z.name === 'string' && z.name.toLowerCase() === zone);
    if (!found || !ID.test(found.id as string)) throw new DnsProviderError(`${what} at ${this.label} failed: no zone ${zone} is visible to this API token. Add the domain to the Cloudflare account and give the token access to it.`);
    return found.id as string;
  }

  private async rules(zoneId: string, zone: string): Promise<string[]> {
    const routed: string[] = [];
    for (let page = 1; page <= MAX_RULE_PAGES; page++) {
      const env = await this.call('GET', `/zones/${zoneId}/email/routing/rules?${new URLSearchParams({ page: String(page), per_page: String(RULES_PER_PAGE) })}`, `Reading the Email Routing rules of ${zone}`);
      const rows = Array.isArray(env.result) ? env.result : [];
      for (const r of rows) {
        if (!isObject(r) || !Array.isArray(r.matchers) || !Array.isArray(r.actions) || r.matchers.length !== 1) continue;
        const m = r.matchers[0];
        const toWorker = r.actions.some((a) => isObject(a) && a.type === 'worker' && Array.isArray(a.value) && a.value.includes(this.worker));
        if (toWorker && isObject(m) && m.type === 'literal' && m.field === 'to' && typeof m.value === 'string') routed.push(m.value.toLowerCase());
      }
      const total = env.result_info && typeof env.result_info.total_count === 'number' ? env.result_info.total_count : rows.length;
      if (rows.length === 0 || page * RULES_PER_PAGE >= total) return routed;
    }
    throw new DnsProviderError(`Reading the Email Routing rules of ${zone} failed: more than ${MAX_RULE_PAGES * RULES_PER_PAGE} rules.`);
  }

  async state(zone: string): Promise<EmailRoutingState> {
    const id = await this.zoneId(zone);
    const settings = (await this.call('GET', `/zones/${id}/email/routing`, `Reading Email Routing of ${zone}`)).result;
    const s = isObject(settings) ? settings : {};
    const catchAll = (await this.call('GET', `/zones/${id}/email/routing/rules/catch_all`, `Reading the catch-all rule of ${zone}`)).result;
    const c = isObject(catchAll) ? catchAll : {};
    return {
      zone,
      enabled: s.enabled === true,
      status: typeof s.status === 'string' ? s.status.slice(0, 40) : 'unknown',
      routedAddresses: await this.rules(id, zone),
      catchAllToWorker: c.enabled !== false && Array.isArray(c.actions) && c.actions.some((a) => isObject(a) && a.type === 'worker' && Array.isArray(a.value) && a.value.includes(this.worker)),
    };
  }

  /**
   * Enables Email Routing on the zone (Cloudflare adds its MX and SPF records) and routes to the
   * Worker: each address without a rule gets one, or the catch-all sends everything. Returns what
   * it created; rerunning creates nothing new.
   */
  async apply(zone: string, o: { addresses: string[]; catchAll: boolean }): Promise<{ enabled: boolean; created: string[]; catchAll: boolean }> {
    const id = await this.zoneId(zone);
    const settings = (await this.call('GET', `/zones/${id}/email/routing`, `Reading Email Routing of ${zone}`)).result;
    let enabled = false;
    if (!(isObject(settings) && settings.enabled === true)) {
      // The schema requires a JSON body without a schema of its own: an empty object.
      await this.call('POST', `/zones/${id}/email/routing/enable`, `Enabling Email Routing on ${zone}`, {});
      enabled = true;
    }
    const action = { type: 'worker', value: [this.worker] };
    if (o.catchAll) {
      await this.call('PUT', `/zones/${id}/email/routing/rules/catch_all`, `Setting the catch-all rule of ${zone}`, { name: 'svc: everything to the Worker', enabled: true, matchers: [{ type: 'all' }], actions: [action] });
    }
    const have = new Set(await this.rules(id, zone));
    const created: string[] = [];
    for (const address of o.addresses) {
      if (have.has(address)) continue;
      await this.call('POST', `/zones/${id}/email/routing/rules`, `Routing ${address} to the Worker`, { name: `svc: ${address}`, enabled: true, matchers: [{ type: 'literal', field: 'to', value: address }], actions: [action] });
      created.push(address);
    }
    return { enabled, created, catchAll: o.catchAll };
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isEnvelope(v: unknown): v is Envelope {
  return isObject(v) && typeof v.success === 'boolean' && Array.isArray(v.errors) && 'result' in v;
}

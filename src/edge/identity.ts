/**
 * What an edge tells the home about itself, in the answer to `PUT /routing` (and `GET /routing`),
 * for the domain plan (docs/domains.md): the host name it greets with (`--hostname`, the MX), the
 * public addresses it knows (`--public-ip`, and what that name resolves to), and its smart host
 * with the SPF mechanism the provider requires (`--smart-host-spf`). The home never derives these
 * from the URL it reaches the edge at: that may be a tunnel on 127.0.0.1. An older edge answers
 * without `edge`; the home then says so in the plan.
 */
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isPublicAddress } from '../core/public-address.js';
import { spfMechanism } from '../domains/spf.js';

export interface EdgeIdentity {
  hostname: string;
  public_addresses: string[];
  smart_host: { host: string; spf: string | null } | null;
  /**
   * Set by an edge whose MX someone else runs and publishes: the Cloudflare Email Worker, behind
   * Email Routing, which puts its own MX records (route1/2/3.mx.cloudflare.net, priorities of its
   * choosing) and SPF record in the zone. `hosts` are every MX of that service (`hostname` first).
   * `worker`: the Worker's script name, which Email Routing rules send mail to; null when the edge
   * does not say (an older Worker) — the home then cannot route addresses to it itself.
   */
  managed_mx: { by: ManagedMxOperator; hosts: string[]; spf_include: string; worker: string | null } | null;
}

/** Operators of an MX the home does not publish (src/domains/plan.ts): only ones svc knows. */
export const MANAGED_MX_OPERATORS = ['cloudflare_email_routing'] as const;
export type ManagedMxOperator = (typeof MANAGED_MX_OPERATORS)[number];

/** Cloudflare Email Routing's MX hosts and SPF mechanism, as its enable call writes them into a zone. */
export const CLOUDFLARE_EMAIL_ROUTING = {
  hosts: ['route1.mx.cloudflare.net', 'route2.mx.cloudflare.net', 'route3.mx.cloudflare.net'],
  spf_include: 'include:_spf.mx.cloudflare.net',
} as const;

/** A Cloudflare Worker's script name (Cloudflare's rule for names: a DNS label, lower case). */
export const CLOUDFLARE_WORKER_NAME_PATTERN = '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$';
export const CLOUDFLARE_WORKER_NAME = new RegExp(CLOUDFLARE_WORKER_NAME_PATTERN);

/** Addresses reported at most (a host has a handful; more is a misconfiguration or an attack). */
export const MAX_PUBLIC_ADDRESSES = 8;
const RESOLVE_TIMEOUT_MS = 3_000;
const FQDN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;

/** True for a host name the internet can look up (a dot, a real TLD): `localhost` or a bare host name is not. */
export const isPublicHostname = (name: string) => FQDN.test(name) && !/\.(localhost|local|internal|lan|home\.arpa)$/i.test(name);

/**
 * The public addresses `hostname` resolves to (A and AAAA, at most MAX_PUBLIC_ADDRESSES), or none
 * when it does not resolve in time. `servers` replaces the system's name servers (`--dns`).
 */
export async function resolvePublicAddresses(hostname: string, servers?: string[]): Promise<string[]> {
  if (!isPublicHostname(hostname)) return [];
  const resolver = new Resolver({ timeout: RESOLVE_TIMEOUT_MS, tries: 1 });
  if (servers && servers.length > 0) resolver.setServers(servers);
  const [v4, v6] = await Promise.all([resolver.resolve4(hostname).catch(() => []), resolver.resolve6(hostname).catch(() => [])]);
  return [...v4, ...v6].filter(isPublicAddress).slice(0, MAX_PUBLIC_ADDRESSES);
}

/**
 * The home's reading of an edge's `edge` field: only what is well-formed is taken (a public host
 * name, public addresses, a plain SPF mechanism); null when there is none (an older edge).
 */
export function readEdgeIdentity(value: unknown): EdgeIdentity | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  const hostname = typeof v.hostname === 'string' && v.hostname.length <= 253 ? v.hostname.toLowerCase().replace(/\.$/, '') : '';
  const addresses = Array.isArray(v.public_addresses) ? v.public_addresses.slice(0, MAX_PUBLIC_ADDRESSES) : [];
  const smart = typeof v.smart_host === 'object' && v.smart_host !== null ? (v.smart_host as Record<string, unknown>) : null;
  const smartHost = smart && typeof smart.host === 'string' && smart.host.length > 0 && smart.host.length <= 253 ? smart.host : null;
  return {
    hostname,
    managed_mx: readManagedMx(v.managed_mx),
    public_addresses: [...new Set(addresses.filter((a): a is string => typeof a === 'string' && a.length <= 45 && isIP(a) !== 0 && isPublicAddress(a)).map((a) => a.toLowerCase()))],
    smart_host: smartHost ? { host: smartHost, spf: typeof smart!.spf === 'string' ? spfMechanism(smart!.spf) : null } : null,
  };
}

/**
 * An edge's `managed_mx`: taken only for an operator svc knows, and then as svc knows it (its
 * hosts and SPF mechanism are constants here, never the edge's words, so an edge cannot put a
 * name of its choosing into the plan this way).
 */
function readManagedMx(value: unknown): EdgeIdentity['managed_mx'] {
  if (typeof value !== 'object' || value === null) return null;
  const by = (value as { by?: unknown }).by;
  if (by === 'cloudflare_email_routing') {
    // The one word taken from the edge: a name of the owner's own account, checked as a name.
    const worker = (value as { worker?: unknown }).worker;
    return { by, hosts: [...CLOUDFLARE_EMAIL_ROUTING.hosts], spf_include: CLOUDFLARE_EMAIL_ROUTING.spf_include, worker: typeof worker === 'string' && CLOUDFLARE_WORKER_NAME.test(worker) ? worker : null };
  }
  return null;
}

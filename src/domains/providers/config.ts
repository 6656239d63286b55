/**
 * The home's DNS provider (docs/dns-providers.md): one per home, kept in the settings table
 * inside the encrypted database, like the transport. Secrets (the TSIG secret, the PowerDNS API
 * key, the Cloudflare API token) are write-only: the view says whether one is set, a PUT without one keeps the stored one
 * when it is for the same key or URL, and no message built here contains one.
 */
import { isIP } from 'node:net';
import type { Db } from '../../db/open.js';
import { ApiError } from '../../core/errors.js';
import { normalizeDomainName } from '../names.js';
import { ZONE_TTL } from '../plan.js';
import type { DnsProviderBody, DnsProviderResponse } from './schemas.js';
import type { DnsProvider } from './provider.js';
import { Rfc2136Provider } from './rfc2136.js';
import { encodeName } from './dns-message.js';
import { PowerDnsProvider } from './powerdns.js';
import { CLOUDFLARE_API_BASE, CloudflareProvider } from './cloudflare.js';

export type { DnsProviderBody, DnsProviderResponse } from './schemas.js';

/** What is stored: the body with defaults filled in and the secret present. */
export type StoredDnsProvider =
  | { kind: 'rfc2136'; server: string; port: number; transport: 'tcp' | 'udp'; key_name: string; algorithm: 'hmac-sha256' | 'hmac-sha512'; secret: string; zones: string[]; ttl: number }
  | { kind: 'powerdns'; url: string; server_id: string; api_key: string; zones: string[]; ttl: number }
  | { kind: 'cloudflare'; api_token: string; zone_id: string | null; api_base: string; zones: string[]; ttl: number };

const KEY = 'dns_provider';
/** A TSIG secret shorter than this is refused: RFC 8945 §6 wants at least the hash's output length / 2. */
const MIN_SECRET_BYTES = 16;

export function readDnsProvider(db: Db): StoredDnsProvider | null {
  const row = db.prepare('SELECT value FROM settings WHERE key = ?').get(KEY) as { value: string } | undefined;
  return row ? (JSON.parse(row.value) as StoredDnsProvider) : null;
}

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

function checkZones(zones: string[] | undefined): string[] {
  return [...new Set((zones ?? []).map((z) => {
    try {
      return normalizeDomainName(z);
    } catch {
      throw invalid(`zones: \`${z.slice(0, 80)}\` is not a DNS zone name.`, 'List the zones as names such as `example.com`.');
    }
  }))];
}

/** Private and loopback addresses, where a plain-http API is as private as the host's own network. */
function privateHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1' || /^127\./.test(h) || /^10\./.test(h) || /^192\.168\./.test(h) || /^172\.(1[6-9]|2\d|3[01])\./.test(h)) return true;
  return isIP(h) === 6 && /^f[cd]/.test(h);
}

/**
 * The stored form of an owner's PUT, checked before anything is written: the server or URL, the
 * secret (base64 for TSIG), the zones. A missing secret is taken from `current` when it is for
 * the same key (TSIG key name and server) or the same API URL; otherwise it is required.
 */
export function checkDnsProviderBody(body: DnsProviderBody, current: StoredDnsProvider | null): StoredDnsProvider {
  const zones = checkZones(body.zones);
  const ttl = body.ttl ?? ZONE_TTL;
  if (body.kind === 'rfc2136') {
    const server = body.server.trim().replace(/^\[|\]$/g, '');
    if (!isIP(server) && !/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(server)) {
      throw invalid('server must be an IP address or a host name.', 'Give the primary name server, e.g. `"server": "10.0.0.53"` and `"port": 53`.');
    }
    const keyName = body.key_name.trim().replace(/\.$/, '').toLowerCase();
    if (!/^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/.test(keyName)) throw invalid('key_name must be a DNS name (the key\'s name in the server\'s configuration).', 'e.g. `svc-update`.');
    try {
      // The encoder every signed message uses: what passes here is a name TSIG can carry.
      encodeName(keyName);
    } catch {
      throw invalid('key_name must be a DNS name: labels of 1 to 63 bytes separated by single dots, 255 bytes at most.', 'Use the key\'s name as the server\'s configuration spells it, e.g. `svc-update`.');
    }
    const port = body.port ?? 53;
    const same = current?.kind === 'rfc2136' && current.key_name === keyName && current.server === server && current.port === port;
    const secret = body.secret?.trim() ?? (same ? current.secret : undefined);
    if (secret === undefined) throw invalid('secret is required for a new TSIG key.', 'Send the key\'s base64 secret (the `secret` line of its BIND or Knot key file).');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(secret) || Buffer.from(secret, 'base64').length < MIN_SECRET_BYTES) {
      throw invalid(`secret must be base64 of at least ${MIN_SECRET_BYTES} bytes.`, 'Generate one with `keymgr -t svc-update hmac-sha256` (Knot) or `tsig-keygen -a hmac-sha256 svc-update` (BIND).');
    }
    return { kind: 'rfc2136', server, port, transport: body.transport ?? 'tcp', key_name: keyName, algorithm: body.algorithm ?? 'hmac-sha256', secret, zones, ttl };
  }
  if (body.kind === 'cloudflare') return checkCloudflare(body, current, zones, ttl);
  let url: URL;
  try {
    url = new URL(body.url);
  } catch {
    throw invalid('url is not a valid URL.', 'Use the PowerDNS webserver\'s base URL, e.g. http://127.0.0.1:8081.');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && privateHost(url.hostname))) {
    throw invalid('url must use https (plain http only on loopback or a private network): the API key travels with every request.', 'Put the PowerDNS API behind TLS, or reach it over a private address.');
  }
  if (url.username || url.password || url.search || url.hash) throw invalid('url must not carry credentials, a query or a fragment.', 'Send the API key as `api_key`.');
  const base = url.origin + url.pathname.replace(/\/+$/, '');
  const same = current?.kind === 'powerdns' && current.url === base;
  const apiKey = body.api_key ?? (same ? current.api_key : undefined);
  if (apiKey === undefined) throw invalid('api_key is required for a new PowerDNS API URL.', 'Send the api-key from pdns.conf.');
  return { kind: 'powerdns', url: base, server_id: body.server_id ?? 'localhost', api_key: apiKey, zones, ttl };
}

/**
 * Cloudflare: the API base is https (plain http only on loopback or a private network, for a
 * local stand-in), with no credentials, query or fragment. The token is kept when the base is
 * the same: a token is sent only to the host the owner sent it for.
 */
function checkCloudflare(body: Extract<DnsProviderBody, { kind: 'cloudflare' }>, current: StoredDnsProvider | null, zones: string[], ttl: number): StoredDnsProvider {
  let url: URL;
  try {
    url = new URL(body.api_base ?? CLOUDFLARE_API_BASE);
  } catch {
    throw invalid('api_base is not a valid URL.', `Leave it out to use ${CLOUDFLARE_API_BASE}.`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && privateHost(url.hostname))) {
    throw invalid('api_base must use https (plain http only on loopback or a private network): the API token travels with every request.', `Leave it out to use ${CLOUDFLARE_API_BASE}.`);
  }
  if (url.username || url.password || url.search || url.hash) throw invalid('api_base must not carry credentials, a query or a fragment.', 'Send the API token as `api_token`.');
  const apiBase = url.origin + url.pathname.replace(/\/+$/, '');
  const zoneId = body.zone_id ?? null;
  const same = current?.kind === 'cloudflare' && current.api_base === apiBase;
  const token = body.api_token?.trim() ?? (same ? current.api_token : undefined);
  if (token === undefined) throw invalid('api_token is required for a new Cloudflare configuration (or a new api_base).', 'Create an API token with Zone:DNS:Edit (and Zone:Read) for the zone under My Profile → API Tokens, and send it as `api_token`.');
  // A token goes into an HTTP header: nothing but the printable characters Cloudflare's tokens are made of.
  if (!/^[\x21-\x7e]+$/.test(token)) throw invalid('api_token must be printable characters without spaces.', 'Paste the token exactly as Cloudflare showed it.');
  return { kind: 'cloudflare', api_token: token, zone_id: zoneId, api_base: apiBase, zones, ttl };
}

/** Stores a checked configuration (replacing any). Runs inside the caller's transaction. */
export function writeDnsProvider(db: Db, stored: StoredDnsProvider): void {
  db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, JSON.stringify(stored));
}

export function clearDnsProvider(db: Db): void {
  db.prepare('DELETE FROM settings WHERE key = ?').run(KEY);
}

/** The configuration as the owner may read it: secrets replaced by whether they are set. */
export function dnsProviderView(p: StoredDnsProvider | null): DnsProviderResponse {
  if (!p) return { configured: false, provider: null };
  if (p.kind === 'rfc2136') {
    const { secret, ...rest } = p;
    return { configured: true, provider: { ...rest, secret_set: secret.length > 0 } };
  }
  if (p.kind === 'cloudflare') {
    const { api_token, ...rest } = p;
    return { configured: true, provider: { ...rest, api_token_set: api_token.length > 0 } };
  }
  const { api_key, ...rest } = p;
  return { configured: true, provider: { ...rest, api_key_set: api_key.length > 0 } };
}

/** The adapter for a stored configuration. */
export function dnsProviderFor(p: StoredDnsProvider): DnsProvider {
  if (p.kind === 'rfc2136') {
    return new Rfc2136Provider({ server: p.server, port: p.port, transport: p.transport, key: { name: p.key_name, algorithm: p.algorithm, secret: Buffer.from(p.secret, 'base64') } });
  }
  if (p.kind === 'cloudflare') return new CloudflareProvider({ apiToken: p.api_token, apiBase: p.api_base, ...(p.zone_id ? { zoneId: p.zone_id } : {}) });
  return new PowerDnsProvider({ url: p.url, serverId: p.server_id, apiKey: p.api_key });
}

/** The longest configured zone `domain` is in, or null when it is in none of them. */
export function zoneOf(domain: string, zones: string[]): string | null {
  return zones.filter((z) => domain === z || domain.endsWith(`.${z}`)).sort((a, b) => b.length - a.length)[0] ?? null;
}

/** The zone `domain` is published in: the longest configured zone it is in, else the domain itself. */
export function zoneFor(domain: string, zones: string[]): string {
  return zoneOf(domain, zones) ?? domain;
}

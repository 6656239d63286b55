/**
 * A DNS provider: where svc publishes a domain's planned records itself (docs/dns-providers.md).
 * An adapter knows three things about its DNS service — read the records of one name and type,
 * add records, remove records — and nothing about plans or domains; what to add and what to
 * remove is decided once, in ./publish.ts, so a new adapter (Cloudflare, Route 53) is one file.
 * Adapters throw DnsProviderError with a message fit for a domain's `reason`: it names the server
 * and what went wrong, never a secret.
 */
import type { WireRecord } from './dns-message.js';

export type { WireRecord as DnsRecord } from './dns-message.js';

export interface DnsProvider {
  /** For reasons and logs: e.g. `the DNS server 10.0.0.53:53 (RFC 2136)`. Never holds a secret. */
  readonly label: string;
  /** The records at `name` of `type` in `zone` now (an empty list when there are none). */
  existing(zone: string, name: string, type: WireRecord['type']): Promise<WireRecord[]>;
  /** Adds exactly these records; adding one that exists changes nothing. */
  add(zone: string, records: WireRecord[]): Promise<void>;
  /** Removes exactly these records (other records at the same names stay); a missing one is no error. */
  remove(zone: string, records: WireRecord[]): Promise<void>;
  /** Whether `zone` is served and the credentials work; throws DnsProviderError when not. */
  check(zone: string): Promise<void>;
}

export class DnsProviderError extends Error {
  /** True when the service could not be reached at all (refused, timed out, reset): the provisioning loop then leaves the other domains' DNS work for the next pass. */
  readonly unreachable: boolean;

  constructor(message: string, options: { unreachable?: boolean } = {}) {
    super(message);
    this.unreachable = options.unreachable ?? false;
  }
}

/** Two records are the same RR: type, name, value and (MX) priority; TTL does not matter. */
export function sameRecord(a: WireRecord, b: WireRecord): boolean {
  const norm = (r: WireRecord) => (r.type === 'MX' || r.type === 'A' || r.type === 'AAAA' ? r.value.toLowerCase().replace(/\.$/, '') : r.value);
  return a.type === b.type && a.name.toLowerCase() === b.name.toLowerCase() && norm(a) === norm(b) && (a.type !== 'MX' || (a.priority ?? 10) === (b.priority ?? 10));
}

/** Bounds every adapter keeps. */
export const PROVIDER_LIMITS = {
  /** One request to the DNS service. */
  timeoutMs: 10_000,
  /** An HTTP answer read at most (PowerDNS sends the whole zone). */
  httpBodyBytes: 4 * 1024 * 1024,
  /** Characters of a server's own error text quoted in a reason. */
  quotedChars: 200,
} as const;

/** A server's text, safe to quote in a reason: printable, one line, clipped. */
export function quoteServer(text: string): string {
  const clean = text.replace(/[^\x20-\x7e]+/g, ' ').trim();
  return clean.length > PROVIDER_LIMITS.quotedChars ? `${clean.slice(0, PROVIDER_LIMITS.quotedChars)}…` : clean;
}

/**
 * The body of an answer, at most PROVIDER_LIMITS.httpBodyBytes of it (more is an error, not a
 * truncation). The cancel of an oversized body is not awaited: a cancel can wait on the server
 * forever (undici). `signal` (the exchange's deadline) ends a read that is still waiting.
 */
export async function readBounded(res: Response, what: string, label: string, signal?: AbortSignal): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  // The deadline is raced here too: undici does not always error a body read when the request's
  // signal fires (seen after an earlier answer's body was cancelled), and a read must not outlive it.
  let onAbort: (() => void) | null = null;
  const aborted = signal
    ? new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason ?? new Error('aborted'));
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      })
    : null;
  aborted?.catch(() => {});
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await (aborted ? Promise.race([reader.read(), aborted]) : reader.read());
      if (done) break;
      size += value.length;
      if (size > PROVIDER_LIMITS.httpBodyBytes) {
        reader.cancel().catch(() => {});
        throw new DnsProviderError(`${what} at ${label} failed: the answer is larger than ${PROVIDER_LIMITS.httpBodyBytes / 1024 / 1024} MiB.`);
      }
      chunks.push(value);
    }
  } catch (err) {
    if (signal?.aborted) reader.cancel().catch(() => {});
    throw err;
  } finally {
    if (onAbort) signal!.removeEventListener('abort', onAbort);
  }
  return Buffer.concat(chunks).toString('utf8');
}

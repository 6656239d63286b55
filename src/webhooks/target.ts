/**
 * Where a webhook may point (ARCHITECTURE §8): http(s) only, no credentials in the URL, and for
 * webhooks an agent created, no loopback, link-local, private or otherwise internal address —
 * neither as a literal nor through DNS. The rule is checked when the webhook is created and again
 * on every connection the delivery makes (`guardedLookup`), so a name that later resolves inward
 * (DNS rebinding) is refused too.
 */
import dns from 'node:dns';
import net from 'node:net';
import { isInternalAddress, isLocalhostName } from '../core/internal-addresses.js';

export const URL_MAX = 2048;
/** Name resolution at creation is bounded; a name that does not resolve yet is accepted. */
const CREATE_LOOKUP_TIMEOUT_MS = 3_000;

export type TargetProblem =
  | { kind: 'invalid'; message: string; fix: string }
  | { kind: 'internal'; message: string; fix: string };

const internalProblem = (what: string): TargetProblem => ({
  kind: 'internal',
  message: `Webhooks created by an agent may not target ${what}: loopback, link-local and private addresses are reserved for the owner.`,
  fix: 'Use a public http(s) URL, or ask the owner to create this webhook (the owner may target local receivers).',
});

/** Syntax rules every webhook URL follows. Returns the parsed URL or a problem. */
export function parseTarget(raw: string): URL | TargetProblem {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { kind: 'invalid', message: '`url` is not a valid absolute URL.', fix: 'Send an absolute URL such as https://example.com/webhooks.' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { kind: 'invalid', message: `\`url\` must use http or https, not ${url.protocol.replace(':', '')}.`, fix: 'Use an https:// (or http://) URL.' };
  }
  if (url.username !== '' || url.password !== '') {
    return { kind: 'invalid', message: '`url` must not contain credentials.', fix: 'Remove the user:password@ part and send the credential as a custom header (e.g. Authorization).' };
  }
  if (url.hash !== '') return { kind: 'invalid', message: '`url` must not contain a fragment.', fix: 'Remove the #... part.' };
  return url;
}

const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, '').toLowerCase();

/** The agent rule at creation: literal addresses and what the name resolves to now. */
export async function internalTargetProblem(url: URL): Promise<TargetProblem | null> {
  const host = bareHost(url);
  if (isLocalhostName(host)) return internalProblem(`\`${host}\``);
  if (net.isIP(host)) return isInternalAddress(host) ? internalProblem(`the address ${host}`) : null;
  const addresses = await Promise.race([
    dns.promises.lookup(host, { all: true, verbatim: true }).catch(() => [] as dns.LookupAddress[]),
    new Promise<dns.LookupAddress[]>((resolve) => setTimeout(() => resolve([]), CREATE_LOOKUP_TIMEOUT_MS).unref()),
  ]);
  const inward = addresses.find((a) => isInternalAddress(a.address));
  return inward ? internalProblem(`\`${host}\`, which resolves to ${inward.address}`) : null;
}

/** Raised on a delivery connection whose target resolves to an internal address. */
export class InternalAddressError extends Error {
  readonly code = 'ADDRESS_NOT_ALLOWED';
}

/**
 * A `net` lookup function for deliveries of agent-created webhooks: resolves like the default
 * and refuses the connection when any address is internal.
 */
export const guardedLookup: net.LookupFunction = (hostname, options, callback) => {
  if (isLocalhostName(hostname.toLowerCase())) {
    callback(new InternalAddressError('internal address'), '', 4);
    return;
  }
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return (callback as (e: Error) => void)(err);
    const list = addresses as unknown as dns.LookupAddress[];
    if (list.length === 0 || list.some((a) => isInternalAddress(a.address))) {
      return (callback as (e: Error) => void)(new InternalAddressError('internal address'));
    }
    if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    callback(null, list[0].address, list[0].family);
  });
};

/** Whether a URL's host is a literal internal address (connections to literals skip lookup). */
export function isInternalLiteral(url: URL): boolean {
  const host = bareHost(url);
  return isLocalhostName(host) || (net.isIP(host) !== 0 && isInternalAddress(host));
}

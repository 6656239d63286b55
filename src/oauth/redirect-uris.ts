/**
 * Redirect URI rules (spec §5.3, RFC 8252): HTTPS anywhere; plain HTTP only to a loopback host;
 * or a private-use scheme in reverse-DNS form (`com.example.app:/callback`). At authorization
 * the URI must be one the client registered, except that a loopback URI's port may differ
 * (native apps listen on whatever port is free at the time).
 */
import { OAuthError } from './errors.js';
import { REDIRECT_URI_MAX_LENGTH } from './limits.js';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
/** RFC 8252 §7.1: a private-use scheme is a reverse domain name, so it always holds a dot. */
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/;

const invalid = (uri: string, why: string) =>
  new OAuthError('invalid_redirect_uri', `The redirect URI ${JSON.stringify(uri.slice(0, 100))} is not allowed: ${why}`);

function parse(uri: string): URL | null {
  try {
    return new URL(uri);
  } catch {
    return null;
  }
}

const isLoopbackHttp = (url: URL) => url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);

/** Throws `invalid_redirect_uri` unless the URI may be registered. */
export function checkRedirectUri(uri: string): void {
  if (uri.length === 0 || uri.length > REDIRECT_URI_MAX_LENGTH) throw invalid(uri, `it must be 1 to ${REDIRECT_URI_MAX_LENGTH} characters.`);
  const url = parse(uri);
  if (!url) throw invalid(uri, 'it is not an absolute URI.');
  if (url.hash !== '' || uri.includes('#')) throw invalid(uri, 'it must not contain a fragment.');
  if (url.username !== '' || url.password !== '') throw invalid(uri, 'it must not contain user information.');
  if (url.protocol === 'https:') {
    if (url.hostname === '') throw invalid(uri, 'an https URI needs a host.');
    return;
  }
  if (url.protocol === 'http:') {
    if (!isLoopbackHttp(url)) throw invalid(uri, 'plain http is allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https.');
    return;
  }
  if (!PRIVATE_USE_SCHEME.test(url.protocol)) {
    throw invalid(uri, 'use https, http on a loopback host, or a private-use scheme in reverse-DNS form such as com.example.app:/callback.');
  }
  if (url.href.length <= url.protocol.length) throw invalid(uri, 'a private-use URI needs a path after the scheme.');
}

/** The URI without its port, for comparing loopback URIs whose ports may differ. */
function withoutPort(url: URL): string {
  return `${url.protocol}//${url.hostname}${url.pathname}${url.search}`;
}

/** Whether `requested` is one of the registered URIs (loopback ports may differ). */
export function matchesRegistered(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  const url = parse(requested);
  if (!url || !isLoopbackHttp(url) || requested.includes('#')) return false;
  return registered.some((candidate) => {
    const known = parse(candidate);
    return known !== null && isLoopbackHttp(known) && withoutPort(known) === withoutPort(url);
  });
}

/** What the consent screen shows as "redirects to": the host, or the scheme of a private-use URI. */
export function redirectHost(uri: string): string {
  const url = parse(uri);
  if (!url) return '';
  return url.host !== '' ? url.host : url.protocol.slice(0, -1);
}

/** The redirect URI with the response parameters added to its query (RFC 6749 §4.1.2). */
export function withResponseParams(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.append(name, value);
  return url.href;
}

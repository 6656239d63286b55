/**
 * Ways to spell a request target that a router may map to the same route while a check on the
 * URL text does not (issue 16 finding 1): percent-encoded and case-varied segments, dot
 * segments, doubled, encoded and back slashes, `;` parameters, a trailing slash and the
 * absolute-form target a proxy sends. Each spelling takes the route's path segments, already
 * percent-encoded where they hold an identifier, and the authority (`host:port`) of the listener.
 */

export interface Spelling {
  name: string;
  target(segments: readonly string[], authority: string): string;
}

const hex = (text: string, escape = '%') => [...Buffer.from(text, 'utf8')].map((b) => escape + b.toString(16).padStart(2, '0')).join('');
/** The route's own words (`v0`, `api-keys`), as opposed to the identifiers filled in. */
const isStatic = (segment: string) => /^[a-z.][a-z0-9.-]*$/.test(segment);

/** `junk` between the first segment and the rest (before the only one when there is no rest). */
function around(segments: readonly string[], junk: string): string {
  const [first, ...rest] = segments;
  return rest.length > 0 ? `/${first}/${junk}/${rest.join('/')}` : `/${junk}/${first}`;
}

/** `glue` in place of the first slash after the first segment (after the only one when there is no rest). */
function joinedBy(segments: readonly string[], glue: string): string {
  const [first, ...rest] = segments;
  return rest.length > 0 ? `/${first}${glue}${rest.join('/')}` : `/${first}${glue}`;
}

export const CANONICAL: Spelling = { name: 'canonical', target: (s) => '/' + s.join('/') };

export const HOSTILE_SPELLINGS: readonly Spelling[] = [
  { name: 'percent-encoded first segment', target: ([first, ...rest]) => '/' + [hex(first), ...rest].join('/') },
  { name: 'percent-encoded words', target: (s) => '/' + s.map((seg) => (isStatic(seg) ? hex(seg) : seg)).join('/') },
  { name: 'double percent-encoded first segment', target: ([first, ...rest]) => '/' + [hex(first, '%25'), ...rest].join('/') },
  { name: 'upper-case first segment', target: ([first, ...rest]) => '/' + [first.toUpperCase(), ...rest].join('/') },
  { name: 'upper-case words', target: (s) => '/' + s.map((seg) => (isStatic(seg) ? seg.toUpperCase() : seg)).join('/') },
  { name: 'leading double slash', target: (s) => '//' + s.join('/') },
  { name: 'empty segment', target: (s) => joinedBy(s, '//') },
  { name: 'dot segment', target: (s) => around(s, '.') },
  { name: 'dot-dot segment', target: (s) => around(s, 'x/..') },
  { name: 'encoded dot segment', target: (s) => around(s, '%2e') },
  { name: 'encoded dot-dot segment', target: (s) => around(s, 'x/%2E%2e') },
  { name: 'trailing slash', target: (s) => '/' + s.join('/') + '/' },
  { name: 'encoded slash', target: (s) => joinedBy(s, '%2F') },
  { name: 'backslash', target: (s) => joinedBy(s, '\\') },
  { name: 'matrix parameter', target: (s) => joinedBy(s, ';x=1/') },
  { name: 'absolute-form', target: (s, authority) => `http://${authority}/${s.join('/')}` },
];

/** A route pattern (`/v0/inboxes/:inbox_id`) as segments, each parameter replaced by its value. */
export function segmentsOf(pattern: string, value: (param: string) => string): string[] {
  return pattern
    .split('/')
    .filter((s) => s !== '')
    .map((s) => (s.startsWith(':') ? value(s.slice(1)) : s));
}

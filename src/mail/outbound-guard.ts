/**
 * The content detectors of the `guarded` send policy: whether an outgoing message carries
 * something that must not leave without the owner's approval (credentials, private keys, card
 * numbers, IBANs, national identity numbers, the home's own secrets). A send that trips one
 * becomes a draft awaiting approval, with the findings as its reasons. Pure: no lookups, no state.
 *
 * Rules:
 * - The input is the agent's, and an agent may be steered by whoever wrote to it. Each field
 *   (subject, text, raw HTML, each of at most MAX_SCANNED_ATTACHMENTS text attachments) is cut to
 *   MAX_SCANNED_CHARS first, every pass over it is a forward index loop, and the only regular
 *   expressions run on bounded slices (a key, a value, a window around a candidate) with no
 *   nested repetition. Work per candidate is bounded, so time is linear in the input.
 * - Fields are read as the recipient sees them (src/mail/shown-text.ts): without format
 *   characters, and the HTML both as written and as rendered; an attachment's rendering (`shown`)
 *   is read after its text.
 * - It never throws. A detector that fails anyway reports a finding saying so: a guard that cannot
 *   check holds the message for review rather than letting it out (fail closed).
 * - At most one finding per detector (the first: fields in the order above, then by position), in
 *   GUARD_DETECTORS order. A detail names where (the subject, the text, the HTML, attachment
 *   "name") and what; it never carries the secret: at most its last 4 characters ("…4242"), and
 *   none of a password, a national identity number or a home secret. At most MAX_DETAIL_CHARS.
 * - credentials: fixed token shapes (AWS, GitHub, GitLab, Slack, Stripe, Google, OpenAI,
 *   Anthropic, JWT, this service's own `svc_…` secrets), each a whole token (not inside a longer
 *   one) whose random part is not a placeholder (fewer than MIN_DISTINCT_TOKEN_CHARS distinct
 *   characters, like `xxxx`). Stripe test keys (`sk_test_`, `rk_test_`) are flagged too, said to
 *   be test keys: they open the account's test data and are secrets all the same; publishable
 *   `pk_` keys are not. An AWS key ID inside a pre-signed URL (`X-Amz-Credential=`,
 *   `AWSAccessKeyId=`) is not flagged: such a URL is made to be shared and carries no secret.
 *   Generic assignments (`password=`, `"api_key": "…"`, `DB_PASSWORD=`, `token:` …, and
 *   `Authorization: Bearer …`) count when the value has at least MIN_VALUE_CHARS characters and
 *   is not a placeholder (see isPlaceholder) or code (`os.environ[…]`, `config.password`). After
 *   a bare `:` (how prose writes labels) the value must also have a digit, a symbol or mixed case,
 *   so "Password: same-as-before" is prose. Query parameters named token or secret (`?token=` in
 *   unsubscribe and reset links) are links, not leaks.
 * - private_keys: a PEM or PGP private key header followed by at least PEM_MIN_BODY_CHARS of
 *   key material before the next `-----`. Public keys and certificates are not flagged.
 * - card_numbers: 13–19 digits, ungrouped or in groups of 3–6 after a first group of 4 split by
 *   one space or dash, the whole digit run (not part of a longer one), with an issuer prefix and
 *   length, Luhn-valid, not one repeated digit, and not inside a URL, an email address, a word or
 *   an HTML attribute value.
 * - iban: a country code, 2 check digits and the account, compact or in groups of 4, of the
 *   country's length (IBAN_LENGTHS; 15–34 for a country not listed), with a valid mod-97 check.
 * - national_ids: US SSN (dashed, or undashed next to "SSN"/"social security"), UK National
 *   Insurance number next to "NI"/"national insurance", German tax ID next to "Steuer-ID" (all
 *   with their validity rules), Spanish DNI and NIE with a valid check letter.
 * - home_secrets: any of the first MAX_HOME_SECRETS given secrets of at least
 *   MIN_HOME_SECRET_CHARS, verbatim and case-sensitive (a longer one by its first
 *   MAX_HOME_SECRET_CHARS), found with one Aho-Corasick pass per field.
 */
import { MAX_ATTACHMENTS } from './limits.js';
import { markupAsShown, overriddenRuns, withoutUnseenChars } from './shown-text.js';

export const GUARD_DETECTORS = ['credentials', 'private_keys', 'card_numbers', 'iban', 'national_ids', 'home_secrets'] as const;
export type GuardDetector = (typeof GUARD_DETECTORS)[number];
export interface GuardFinding {
  detector: GuardDetector;
  /** Where and what, in English; never the secret (at most its last 4 characters). */
  detail: string;
}
export interface GuardSource {
  subject: string | null;
  text: string | null;
  html: string | null;
  /**
   * Text-like attachments already decoded to text (the caller decodes text/* in its charset, JSON, CSV, XML, .env, .pem …),
   * with what a client shows of them when that differs (`shown`: HTML, SVG and XML rendered, RTF, a forwarded message); binary ones are left out.
   */
  attachments: readonly { filename: string | null; text: string; shown?: string | readonly string[] | null }[];
  /** Exact secrets of this home that must never leave (API key secrets, tokens), each at least 16 characters. */
  homeSecrets: readonly string[];
  /** Other text the message carries, scanned after the attachments: header values, display names, file names. */
  other?: readonly { where: string; text: string }[];
}

/** Characters of each field and attachment scanned: a leak sits in what a reader sees, not past half a megabyte. */
export const MAX_SCANNED_CHARS = 512 * 1024;
/** Views of one attachment read besides its text (an HTML file as shown, and without what it hides). */
const MAX_VIEWS_PER_ATTACHMENT = 2;
/** Attachments scanned: as many as a message may carry. */
const MAX_SCANNED_ATTACHMENTS = MAX_ATTACHMENTS;
/** Home secrets considered (the first ones given): a home has a few dozen keys and tokens. */
const MAX_HOME_SECRETS = 1_000;
/** Characters a home secret needs to be looked for: shorter strings turn up by chance. */
const MIN_HOME_SECRET_CHARS = 16;
/** Characters of a home secret matched (its start): that many random characters identify it, and they bound the automaton. */
const MAX_HOME_SECRET_CHARS = 256;
/** Other fields scanned (header values, display names, file names): a message has at most a few hundred. */
const MAX_OTHER_FIELDS = 1_000;
/** Characters of a finding's detail. */
const MAX_DETAIL_CHARS = 160;
/** Characters of an attachment's file name shown in a detail. */
const MAX_SHOWN_FILENAME_CHARS = 40;
/** Characters of the key before `=` or `:` read back: real keys (`SPRING_DATASOURCE_PASSWORD`) are shorter. */
const MAX_KEY_CHARS = 64;
/** Characters of an assigned value read: longer runs are data, not a password. */
const MAX_VALUE_CHARS = 256;
/** Characters an assigned value needs to count as a secret: shorter ones are words ("hunter2" excepted). */
const MIN_VALUE_CHARS = 8;
/** Distinct characters the random part of a token needs: fewer is a placeholder (`ghp_xxxx…`, `AKIA0000…`). */
const MIN_DISTINCT_TOKEN_CHARS = 6;
/** Characters of a JWT segment read, and of a header decoded: real headers are under a hundred. */
const MAX_JWT_SEGMENT_CHARS = 16 * 1024;
const MAX_JWT_HEADER_CHARS = 1_024;
/** Characters of a JWT signature: an HMAC-SHA256 is 43; shorter is no signature. */
const MIN_JWT_SIGNATURE_CHARS = 16;
/** Characters of a PEM label read (`ENCRYPTED PRIVATE KEY` is 21). */
const MAX_PEM_LABEL_CHARS = 40;
/** Base64 characters of key material after a private key header: the shortest real key (Ed25519) has 64. */
const PEM_MIN_BODY_CHARS = 40;
/** Characters after a PEM header looked through for key material (PGP and encrypted PEM put headers first). */
const PEM_BODY_WINDOW = 1_024;
/** Characters before and after a national identity number read for the words that name it. */
const CONTEXT_BEFORE = 80;
const CONTEXT_AFTER = 30;

// ---------------------------------------------------------------------------------------------

interface Field {
  /** "the subject", "the text", "the HTML", `attachment "name"`. */
  where: string;
  text: string;
}
/** What a scanner found, without where, and its position for "the first". */
interface Hit {
  at: number;
  what: string;
}

export function inspectOutgoing(source: GuardSource, enabled: ReadonlySet<GuardDetector>): GuardFinding[] {
  const findings: GuardFinding[] = [];
  let fields: Field[] | null = null;
  try {
    fields = fieldsOf(source);
  } catch {
    fields = null;
  }
  for (const detector of GUARD_DETECTORS) {
    if (!isEnabled(enabled, detector)) continue;
    try {
      if (fields === null) throw new Error('unreadable source');
      const detail = firstFinding(detector, fields, source);
      if (detail !== null) findings.push({ detector, detail: finishDetail(detail) });
    } catch {
      // Not expected; a guard that cannot check holds the message rather than letting it out.
      findings.push({ detector, detail: 'this check could not read the message, so it is held for review' });
    }
  }
  return findings;
}

/** A set that cannot be asked is a caller's bug; every detector runs then (fail closed). */
function isEnabled(enabled: unknown, detector: GuardDetector): boolean {
  if (enabled === null || typeof enabled !== 'object' || typeof (enabled as { has?: unknown }).has !== 'function') return true;
  return (enabled as ReadonlySet<string>).has(detector) === true;
}

function bounded(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value.slice(0, MAX_SCANNED_CHARS) : null;
}

/**
 * The fields scanned, each as a reader sees its characters (withoutUnseenChars: a zero-width
 * space or soft hyphen inside a token or card number does not split it), and what a
 * right-to-left override shows reversed. The HTML is read three times: as written (a secret in a
 * comment or an attribute), as shown (markupAsShown: references decoded, tags and comments
 * dropped), and as shown without the elements its inline styles hide.
 */
function fieldsOf(source: GuardSource): Field[] {
  const fields: Field[] = [];
  const add = (where: string, value: unknown, shownAs?: (s: string) => string) => {
    const text = bounded(value);
    if (text === null) return;
    const shown = shownAs ? shownAs(text) : text;
    fields.push({ where, text: withoutUnseenChars(shown) });
    const reversed = overriddenRuns(shown);
    if (reversed !== '') fields.push({ where, text: withoutUnseenChars(reversed) });
  };
  add('the subject', source?.subject);
  add('the text', source?.text);
  add('the HTML', source?.html);
  add('the HTML', source?.html, (html) => markupAsShown(html, 'html'));
  add('the HTML', source?.html, (html) => markupAsShown(html, 'html', 'dropped'));
  const attachments: unknown = source?.attachments;
  if (Array.isArray(attachments)) {
    for (let i = 0; i < attachments.length && i < MAX_SCANNED_ATTACHMENTS; i++) {
      const a: unknown = attachments[i];
      if (a === null || typeof a !== 'object') continue;
      const { filename, text, shown } = a as { filename?: unknown; text?: unknown; shown?: unknown };
      add(attachmentName(filename, i), text);
      for (const view of Array.isArray(shown) ? shown.slice(0, MAX_VIEWS_PER_ATTACHMENT) : [shown]) add(attachmentName(filename, i), view);
    }
  }
  const other: unknown = source?.other;
  if (Array.isArray(other)) {
    for (const o of other.slice(0, MAX_OTHER_FIELDS)) {
      if (o === null || typeof o !== 'object') continue;
      const { where, text } = o as { where?: unknown; text?: unknown };
      if (typeof where === 'string') add(where.slice(0, MAX_DETAIL_CHARS / 2), text);
    }
  }
  return fields;
}

function firstFinding(detector: GuardDetector, fields: Field[], source: GuardSource): string | null {
  if (detector === 'home_secrets') {
    const automaton = secretAutomaton(source?.homeSecrets);
    if (automaton === null) return null;
    for (const f of fields) if (containsSecret(automaton, f.text)) return `a secret of this svc home (an API key or token) in ${f.where}`;
    return null;
  }
  const scan = SCANNERS[detector];
  for (const f of fields) {
    const hit = scan(f.text);
    if (hit !== null) return `${hit.what} in ${f.where}`;
  }
  return null;
}

const SCANNERS: Record<Exclude<GuardDetector, 'home_secrets'>, (s: string) => Hit | null> = {
  credentials: credentialIn,
  private_keys: privateKeyIn,
  card_numbers: cardNumberIn,
  iban: ibanIn,
  national_ids: nationalIdIn,
};

// ---------------------------------------------------------------------------------------------
// Characters

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isUpper = (c: number) => c >= 0x41 && c <= 0x5a;
const isLower = (c: number) => c >= 0x61 && c <= 0x7a;
const isAlnum = (c: number) => isDigit(c) || isUpper(c) || isLower(c);
/** What tokens are made of (base64url): a token starts and ends where these stop. */
const isTokenChar = (c: number) => isAlnum(c) || c === 0x5f /* _ */ || c === 0x2d; /* - */
const isBase64 = (c: number) => isAlnum(c) || c === 0x2b /* + */ || c === 0x2f /* / */ || c === 0x3d; /* = */
const isSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0x3000;
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

/** Whether every character of s[from, to) passes `test`. */
function allIn(s: string, from: number, to: number, test: (c: number) => boolean): boolean {
  for (let k = from; k < to; k++) if (!test(s.charCodeAt(k))) return false;
  return true;
}

/** Distinct characters among the first 64 of s[from, to), counted up to `enough`. */
function distinctChars(s: string, from: number, to: number, enough: number): number {
  const seen = new Set<number>();
  for (let k = from; k < to && k < from + 64 && seen.size < enough; k++) seen.add(s.charCodeAt(k));
  return seen.size;
}

/** The last 4 characters of a value, masked: all a detail may show of a secret. */
const lastFour = (s: string, end: number) => `…${s.slice(Math.max(0, end - 4), end)}`;

// ---------------------------------------------------------------------------------------------
// credentials

function credentialIn(s: string): Hit | null {
  // Each pass stops at its own first hit; the earliest of them is the field's first.
  let first: Hit | null = null;
  for (const scan of [tokenShapeIn, slackWebhookIn, assignedSecretIn]) {
    const hit = scan(s);
    if (hit !== null && (first === null || hit.at < first.at)) first = hit;
  }
  return first;
}

const GITHUB_PREFIXES: [string, string][] = [
  ['ghp_', 'a GitHub personal access token'],
  ['gho_', 'a GitHub OAuth token'],
  ['ghu_', 'a GitHub app user token'],
  ['ghs_', 'a GitHub app installation token'],
  ['ghr_', 'a GitHub refresh token'],
];
const SLACK_TOKENS = new Map([
  ['b', 'a Slack bot token'],
  ['p', 'a Slack user token'],
  ['a', 'a Slack app token'],
  ['r', 'a Slack refresh token'],
]);
const STRIPE_PREFIXES: [string, string][] = [
  ['sk_live_', 'a Stripe live secret key'],
  ['rk_live_', 'a Stripe live restricted key'],
  ['sk_test_', 'a Stripe test secret key'],
  ['rk_test_', 'a Stripe test restricted key'],
];
/** This service's own secrets (src/auth/secrets.ts newSecret: prefix + 43 base64url characters). */
const SERVICE_PREFIXES: [string, string][] = [
  ['svc_key_', 'an API key of this service'],
  ['svc_oauth_', 'an OAuth access token of this service'],
  ['svc_refresh_', 'an OAuth refresh token of this service'],
  ['svc_owner_', 'the owner token of this service'],
  ['svc_session_', 'an owner session of this service'],
  ['svc_link_', 'a login link token of this service'],
  ['svc_code_', 'an OAuth code of this service'],
];
/** Random characters after a service prefix (43 are minted; a display prefix `svc_key_` + 4 is not a secret). */
const MIN_SERVICE_SECRET_CHARS = 30;

/** The first token of a known shape: each maximal run of token characters is one candidate. */
function tokenShapeIn(s: string): Hit | null {
  for (let k = 0; k < s.length; ) {
    if (!isTokenChar(s.charCodeAt(k))) {
      k++;
      continue;
    }
    let end = k + 1;
    while (end < s.length && isTokenChar(s.charCodeAt(end))) end++;
    const what = tokenShape(s, k, end);
    if (what !== null) return { at: k, what };
    k = end;
  }
  return null;
}

/** What the token s[start, end) is, or null. */
function tokenShape(s: string, start: number, end: number): string | null {
  const length = end - start;
  const starts = (prefix: string) => s.startsWith(prefix, start);
  /** The random part after a prefix: not a placeholder. */
  const random = (from: number) => distinctChars(s, from, end, MIN_DISTINCT_TOKEN_CHARS) >= MIN_DISTINCT_TOKEN_CHARS;
  const named = (what: string) => `${what} (${lastFour(s, end)})`;
  const c0 = s.charCodeAt(start);

  if (c0 === 0x41 /* A */) {
    if ((starts('AKIA') || starts('ASIA')) && length === 20 && allIn(s, start + 4, end, (c) => isUpper(c) || isDigit(c)) && random(start + 4)) {
      return inPresignedUrl(s, start) ? null : named('an AWS access key ID');
    }
    if (starts('AIza') && length === 39 && random(start + 4)) return named('a Google API key');
    return null;
  }
  if (c0 === 0x67 /* g */) {
    for (const [prefix, what] of GITHUB_PREFIXES) {
      if (starts(prefix) && length === 40 && allIn(s, start + 4, end, isAlnum) && random(start + 4)) return named(what);
    }
    if (starts('github_pat_') && length === 93 && allIn(s, start + 11, end, (c) => isAlnum(c) || c === 0x5f) && random(start + 11)) {
      return named('a GitHub fine-grained access token');
    }
    if (starts('glpat-') && length >= 26 && random(start + 6)) return named('a GitLab access token');
    return null;
  }
  if (c0 === 0x78 /* x */) {
    const kind = SLACK_TOKENS.get(s[start + 3]);
    if (starts('xox') && kind !== undefined && s[start + 4] === '-' && length >= 25 && hasDigit(s, start + 5, end) && random(start + 5)) return named(kind);
    return null;
  }
  if (c0 === 0x73 /* s */ || c0 === 0x72 /* r */) {
    for (const [prefix, what] of STRIPE_PREFIXES) {
      if (starts(prefix) && length >= prefix.length + 16 && allIn(s, start + prefix.length, end, isAlnum) && random(start + prefix.length)) return named(what);
    }
    if (starts('sk-ant-') && length >= 27 && random(start + 7)) return named('an Anthropic API key');
    if (starts('sk-') && length >= 23 && hasDigit(s, start + 3, end) && random(start + 3)) return named('an OpenAI API key');
    for (const [prefix, what] of SERVICE_PREFIXES) {
      if (starts(prefix) && length >= prefix.length + MIN_SERVICE_SECRET_CHARS && random(start + prefix.length)) return named(what);
    }
    return null;
  }
  if (c0 === 0x65 /* e */ && starts('eyJ') && s.charCodeAt(end) === 0x2e /* . */) return jsonWebToken(s, start, end);
  return null;
}

function hasDigit(s: string, from: number, to: number): boolean {
  for (let k = from; k < to; k++) if (isDigit(s.charCodeAt(k))) return true;
  return false;
}

/** Whether the key ID at `start` is the credential parameter of a pre-signed AWS URL. */
function inPresignedUrl(s: string, start: number): boolean {
  const before = s.slice(Math.max(0, start - 17), start).toLowerCase();
  return before.endsWith('x-amz-credential=') || before.endsWith('awsaccesskeyid=');
}

/** A JWT whose header is s[start, headerEnd): three base64url segments, the first JSON with "alg". */
function jsonWebToken(s: string, start: number, headerEnd: number): string | null {
  const payloadEnd = tokenRunEnd(s, headerEnd + 1);
  if (payloadEnd - (headerEnd + 1) < 2 || s.charCodeAt(payloadEnd) !== 0x2e) return null;
  const signatureEnd = tokenRunEnd(s, payloadEnd + 1);
  if (signatureEnd - (payloadEnd + 1) < MIN_JWT_SIGNATURE_CHARS || headerEnd - start > MAX_JWT_HEADER_CHARS) return null;
  try {
    const header: unknown = JSON.parse(Buffer.from(s.slice(start, headerEnd), 'base64url').toString('utf8'));
    if (header === null || typeof header !== 'object' || typeof (header as { alg?: unknown }).alg !== 'string') return null;
  } catch {
    return null;
  }
  return `a JSON Web Token (${lastFour(s, signatureEnd)})`;
}

/** Where the run of token characters from `from` ends, or `from` when it is longer than a JWT segment may be. */
function tokenRunEnd(s: string, from: number): number {
  let end = from;
  while (end < s.length && isTokenChar(s.charCodeAt(end))) {
    if (++end - from > MAX_JWT_SEGMENT_CHARS) return from;
  }
  return end;
}

const SLACK_WEBHOOK = 'hooks.slack.com/services/';
/** The path of a Slack incoming webhook: team, channel hook, secret. */
const SLACK_WEBHOOK_PATH = /^T[A-Z0-9]{6,12}\/B[A-Z0-9]{6,12}\/([A-Za-z0-9]{20,40})(?![A-Za-z0-9])/;

function slackWebhookIn(s: string): Hit | null {
  for (let k = s.indexOf(SLACK_WEBHOOK); k !== -1; k = s.indexOf(SLACK_WEBHOOK, k + 1)) {
    const from = k + SLACK_WEBHOOK.length;
    const m = SLACK_WEBHOOK_PATH.exec(s.slice(from, from + 80));
    if (m !== null && new Set(m[1]).size >= MIN_DISTINCT_TOKEN_CHARS) {
      const start = s.lastIndexOf('https://', k);
      return { at: start !== -1 && start >= k - 8 ? start : k, what: `a Slack webhook URL (${lastFour(m[1], m[1].length)})` };
    }
  }
  return null;
}

// Generic assignments: `key = value`, `key: value`, `"key": "value"`, `key := value`, `key => value`.

interface KeyKind {
  what: string;
  /** Counts as a query parameter of a URL (`?api_key=…`); `?token=` in a reset or unsubscribe link does not. */
  inQuery: boolean;
  value: 'generic' | 'aws_secret' | 'authorization';
}
const AWS_SECRET_KEY: KeyKind = { what: 'an AWS secret access key', inQuery: true, value: 'aws_secret' };
const PASSWORD_KEY: KeyKind = { what: 'a password', inQuery: true, value: 'generic' };
const SECRET_KEY: KeyKind = { what: 'a secret', inQuery: false, value: 'generic' };
/** A named application secret (`client_secret`, `app_secret`, `secret_key`) is one in a URL too. */
const NAMED_SECRET_KEY: KeyKind = { what: 'a secret', inQuery: true, value: 'generic' };
const API_KEY_KEY: KeyKind = { what: 'an API key', inQuery: true, value: 'generic' };
const TOKEN_KEY: KeyKind = { what: 'a token', inQuery: false, value: 'generic' };
const AUTHORIZATION_KEY: KeyKind = { what: 'a credential in an Authorization header', inQuery: false, value: 'authorization' };
/** Key endings that name no credential: paging, idempotency and anti-forgery tokens. */
const NOT_SECRET_TOKENS = [
  'pagetoken', 'nextpagetoken', 'nexttoken', 'prevtoken', 'previoustoken', 'synctoken', 'continuationtoken', 'cursortoken', 'pagingtoken',
  'resumetoken', 'cancellationtoken', 'idempotencytoken', 'clienttoken', 'csrftoken', 'xsrftoken', 'csrfmiddlewaretoken',
];

/** What a key (`DB_PASSWORD`, `"api_key"`, `spring.datasource.password`) names, or null. */
function keyKind(key: string): KeyKind | null {
  const k = key.toLowerCase().replace(/[-_.]/g, '');
  if (k.endsWith('secretaccesskey')) return AWS_SECRET_KEY;
  if (k.endsWith('password') || k.endsWith('passwd') || k.endsWith('passphrase')) return PASSWORD_KEY;
  if (k.endsWith('clientsecret') || k.endsWith('appsecret') || k.endsWith('secretkey')) return NAMED_SECRET_KEY;
  if (k.endsWith('secret')) return SECRET_KEY;
  if (k.endsWith('apikey')) return API_KEY_KEY;
  if (k.endsWith('token') && !NOT_SECRET_TOKENS.some((ending) => k.endsWith(ending))) return TOKEN_KEY;
  if (k === 'authorization') return AUTHORIZATION_KEY;
  return null;
}

const isKeyChar = (c: number) => isTokenChar(c) || c === 0x2e; /* . */
/** Between a key and its `=` or `:`: closing quotes and spaces. */
const isKeyClose = (c: number) => c === 0x22 || c === 0x27 || c === 0x60 || c === 0x20 || c === 0x09;
const isQuote = (c: number) => c === 0x22 || c === 0x27 || c === 0x60;
/** Where an unquoted value ends: whitespace, markup and the delimiters of URLs, lists and statements. */
const endsValue = (c: number) => isSpace(c) || c === 0x3c || c === 0x3e || isQuote(c) || c === 0x26 || c === 0x2c || c === 0x3b;

function assignedSecretIn(s: string): Hit | null {
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (c !== 0x3d /* = */ && c !== 0x3a /* : */) continue;
    const what = assignmentAt(s, k);
    if (what !== null) return { at: k, what };
  }
  return null;
}

/** What the `=` or `:` at `k` assigns, when its key names a secret and its value is one. */
function assignmentAt(s: string, k: number): string | null {
  const c = s.charCodeAt(k);
  const before = s.charCodeAt(k - 1);
  const after = s.charCodeAt(k + 1);
  let valueStart = k + 1;
  if (c === 0x3d) {
    // `==`, `!=`, `<=`, `>=` compare; the `=` of `:=` was read with its `:`.
    if (before === 0x3d || before === 0x21 || before === 0x3c || before === 0x3e || before === 0x3a || after === 0x3d) return null;
    if (after === 0x3e) valueStart++; // =>
  } else {
    if (after === 0x3a || before === 0x3a || after === 0x2f) return null; // `::`, a URL scheme
    if (after === 0x3d) valueStart++; // :=
  }
  let keyEnd = k;
  for (let skipped = 0; keyEnd > 0 && skipped < 4 && isKeyClose(s.charCodeAt(keyEnd - 1)); skipped++) keyEnd--;
  let keyStart = keyEnd;
  while (keyStart > 0 && keyEnd - keyStart <= MAX_KEY_CHARS && isKeyChar(s.charCodeAt(keyStart - 1))) keyStart--;
  if (keyStart === keyEnd || keyEnd - keyStart > MAX_KEY_CHARS) return null;
  const key = s.slice(keyStart, keyEnd);
  const kind = keyKind(key);
  if (kind === null) return null;
  const beforeKey = s.charCodeAt(keyStart - 1);
  const inQuery = beforeKey === 0x3f /* ? */ || beforeKey === 0x26 /* & */ || (beforeKey === 0x3b && s.slice(Math.max(0, keyStart - 5), keyStart) === '&amp;');
  if (inQuery && !kind.inQuery) return null;

  const at = valueStartAfterGap(s, valueStart);
  const named = `${kind.what} assigned to "${shownKey(key)}"`;
  if (kind.value === 'authorization') return bearerAt(s, at) ? `${kind.what} (${shownKey(key)})` : null;
  const value = valueAt(s, at);
  if (value === null) return null;
  if (kind.value === 'aws_secret') {
    const v = value.text;
    return v.length === 40 && allIn(v, 0, 40, (x) => isAlnum(x) || x === 0x2b || x === 0x2f) && distinctChars(v, 0, 40, MIN_DISTINCT_TOKEN_CHARS) >= MIN_DISTINCT_TOKEN_CHARS
      ? `${kind.what} (${lastFour(v, 40)})`
      : null;
  }
  const prose = c === 0x3a && !value.quoted;
  return looksSecret(value.text, value.quoted, prose) ? named : null;
}

const shownKey = (key: string) => (key.length > 32 ? `${key.slice(0, 31)}…` : key);

/** Tags skipped between a key and its value (`Password:</td><td>…`, `<b>…`); a label's markup is a tag or two. */
const MAX_GAP_TAGS = 3;
/** Characters of a tag skipped there. */
const MAX_GAP_TAG_CHARS = 40;

/** Where the value after `at` starts: past spaces, `&nbsp;` and up to MAX_GAP_TAGS short tags. */
function valueStartAfterGap(s: string, at: number): number {
  let tags = 0;
  for (let step = 0; step < 2 * MAX_GAP_TAGS + 2; step++) {
    const from = at;
    while (at < s.length && at - from < 8 && (s.charCodeAt(at) === 0x20 || s.charCodeAt(at) === 0x09 || s.charCodeAt(at) === 0xa0)) at++;
    if (s.startsWith('&nbsp;', at)) {
      at += 6;
      continue;
    }
    if (s.charCodeAt(at) !== 0x3c /* < */ || tags === MAX_GAP_TAGS) break;
    const close = s.slice(at, at + MAX_GAP_TAG_CHARS).indexOf('>');
    if (close === -1) break;
    at += close + 1;
    tags++;
  }
  return at;
}

/** The value starting at `at`: quoted (to its closing quote on the same line) or up to a delimiter. */
function valueAt(s: string, at: number): { text: string; quoted: boolean } | null {
  const open = s.charCodeAt(at);
  if (isQuote(open)) {
    for (let end = at + 1; end < s.length && end - at <= MAX_VALUE_CHARS; end++) {
      const c = s.charCodeAt(end);
      if (c === open) return { text: s.slice(at + 1, end), quoted: true };
      if (c === 0x0a || c === 0x0d) return null;
    }
    return null;
  }
  let end = at;
  while (end < s.length && !endsValue(s.charCodeAt(end))) {
    if (++end - at > MAX_VALUE_CHARS) return null;
  }
  // Sentence punctuation after a value is not part of it.
  while (end > at && /[.,;:!?)\]}]/.test(s[end - 1])) end--;
  return { text: s.slice(at, end), quoted: false };
}

/** `Bearer …`, `Basic …` or `Token …` with a credential of at least 16 characters. */
function bearerAt(s: string, at: number): boolean {
  const m = /^(?:bearer|basic|token) +([A-Za-z0-9._~+/=-]{16,})/i.exec(s.slice(at, at + 64));
  return m !== null && distinctChars(m[1], 0, m[1].length, MIN_DISTINCT_TOKEN_CHARS) >= MIN_DISTINCT_TOKEN_CHARS && !isPlaceholder(m[1]);
}

/** An unquoted value that reads as code: a dotted name (`config.password`) or a call (`getenv("X")`). */
const CODE_VALUE = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$|[()]/;
const DATE_VALUE = /^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}/;
/** In running text a secret has a digit, a symbol, or a capital inside a word; a plain word or phrase is prose. */
const SECRET_LIKE = /\d|[!@#$%^&*+=?~\\|/]|[a-z][A-Z]/;

function looksSecret(v: string, quoted: boolean, prose: boolean): boolean {
  if (v.length < MIN_VALUE_CHARS || isPlaceholder(v)) return false;
  if (!quoted && CODE_VALUE.test(v)) return false;
  if (/^https?:\/\//i.test(v) || DATE_VALUE.test(v)) return false;
  return !prose || SECRET_LIKE.test(v);
}

/** Words that mark a value as a stand-in: documentation, templates, redactions. */
const PLACEHOLDER_WORDS = [
  'your', 'xxx', '***', '•••', '...', '…', 'example', 'placeholder', 'redacted', 'changeme', 'change_me', 'change-me', 'replace', 'dummy', 'fixme',
  'todo', 'process.env', 'environ', 'getenv', 'secrets.',
];
const PLACEHOLDER_VALUES = new Set([
  'password', 'passwd', 'secret', 'token', 'apikey', 'api_key', 'undefined', 'null', 'none', 'true', 'false', 'required', 'optional',
  'string', 'hidden', 'encrypted', 'masked', 'removed', 'not set', 'notset', 'unset',
]);

/**
 * A stand-in rather than a secret: masking characters (`********`, `xxxx`), a template or markup
 * (`<password>`, `${DB_PASSWORD}`, `{{token}}`, `%TOKEN%`, `[secret]`), two characters or fewer
 * repeated, a word from PLACEHOLDER_WORDS (`YOUR_API_KEY`, `changeme`) or a type or state name.
 */
function isPlaceholder(v: string): boolean {
  const lower = v.toLowerCase();
  if (/^[*•·.x#_?\-\s]+$/.test(lower) || /^[<[{($%@]/.test(v) || v.includes('{{')) return true;
  if (new Set(v).size <= 2 || PLACEHOLDER_VALUES.has(lower)) return true;
  if (/(?:^|[^a-z])here(?:[^a-z]|$)/.test(lower)) return true;
  return PLACEHOLDER_WORDS.some((w) => lower.includes(w));
}

// ---------------------------------------------------------------------------------------------
// private_keys

const PEM_BEGIN = '-----BEGIN ';
const PRIVATE_KEY_LABELS = new Map([
  ['PRIVATE KEY', 'a private key'],
  ['RSA PRIVATE KEY', 'an RSA private key'],
  ['EC PRIVATE KEY', 'an EC private key'],
  ['DSA PRIVATE KEY', 'a DSA private key'],
  ['OPENSSH PRIVATE KEY', 'an OpenSSH private key'],
  ['ENCRYPTED PRIVATE KEY', 'an encrypted private key'],
  ['PGP PRIVATE KEY BLOCK', 'a PGP private key'],
]);

function privateKeyIn(s: string): Hit | null {
  for (let k = s.indexOf(PEM_BEGIN); k !== -1; k = s.indexOf(PEM_BEGIN, k + 1)) {
    const labelStart = k + PEM_BEGIN.length;
    const labelEnd = s.slice(labelStart, labelStart + MAX_PEM_LABEL_CHARS + 5).indexOf('-----');
    if (labelEnd === -1) continue;
    const what = PRIVATE_KEY_LABELS.get(s.slice(labelStart, labelStart + labelEnd));
    if (what === undefined) continue;
    // Key material up to the next `-----` (the END line, or another header).
    const bodyStart = labelStart + labelEnd + 5;
    const window = s.slice(bodyStart, bodyStart + PEM_BODY_WINDOW);
    const next = window.indexOf('-----');
    const body = next === -1 ? window : window.slice(0, next);
    let material = 0;
    for (let j = 0; j < body.length && material < PEM_MIN_BODY_CHARS; j++) if (isBase64(body.charCodeAt(j))) material++;
    if (material >= PEM_MIN_BODY_CHARS) return { at: k, what: `${what} block` };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// card_numbers

interface Brand {
  name: string;
  lengths: readonly number[];
  matches: (digits: string) => boolean;
}
const between = (digits: string, n: number, low: number, high: number) => {
  const p = Number(digits.slice(0, n));
  return p >= low && p <= high;
};
/** Issuer prefixes (IIN ranges) and lengths of the card brands checked. */
const BRANDS: Brand[] = [
  { name: 'Visa', lengths: [13, 16, 19], matches: (d) => d[0] === '4' },
  { name: 'Mastercard', lengths: [16], matches: (d) => between(d, 2, 51, 55) || between(d, 4, 2221, 2720) },
  { name: 'American Express', lengths: [15], matches: (d) => between(d, 2, 34, 34) || between(d, 2, 37, 37) },
  { name: 'Discover', lengths: [16, 17, 18, 19], matches: (d) => d.startsWith('6011') || d.startsWith('65') || between(d, 3, 644, 649) },
  { name: 'JCB', lengths: [16, 17, 18, 19], matches: (d) => between(d, 4, 3528, 3589) },
  { name: 'Diners Club', lengths: [14, 15, 16, 17, 18, 19], matches: (d) => between(d, 3, 300, 305) || d.startsWith('36') || d.startsWith('38') },
  { name: 'UnionPay', lengths: [16, 17, 18, 19], matches: (d) => d.startsWith('62') },
];
/** Characters right before a number that put it inside a URL, an address, a word, an amount or a reference. */
const NOT_BEFORE_CARD = new Set([...'/=?&#.@_+%$\\~-'].map((c) => c.charCodeAt(0)));
/** Characters right after a number that put it inside a URL, an address or a word. */
const NOT_AFTER_CARD = new Set([...'/=@_%\\-'].map((c) => c.charCodeAt(0)));

function cardNumberIn(s: string): Hit | null {
  // Whether the whitespace-delimited token being read is a URL or an address (it had `://` or `@`).
  let linkish = false;
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (isSpace(c)) linkish = false;
    else if (c === 0x40 || (c === 0x3a && s.charCodeAt(k + 1) === 0x2f && s.charCodeAt(k + 2) === 0x2f)) linkish = true;
    if (!isDigit(c)) continue;
    const run = digitChain(s, k);
    if (run.digits !== null && !linkish && standsAlone(s, k, run.end)) {
      const brand = cardBrand(run.digits);
      if (brand !== null) return { at: k, what: `a card number (${brand}, Luhn-valid) ending in ${run.digits.slice(-4)}` };
    }
    // A chain with a space in it ends the token it started in.
    if (run.spaced) linkish = false;
    k = run.end - 1;
  }
  return null;
}

/**
 * The digits from `k` (a run's start): one run, or a first group of 4 followed by groups of 3–6
 * each after the same single separator (space or dash). A group of 1–2 digits ends the chain
 * before it (an expiry "12/28" after the number); one of 7 or more digits spoils it. `digits` is
 * null unless 13–19 digits were read.
 */
function digitChain(s: string, k: number): { end: number; digits: string | null; spaced: boolean } {
  let end = k;
  while (end < s.length && isDigit(s.charCodeAt(end))) end++;
  const first = end - k;
  if (first !== 4) return { end, digits: first >= 13 && first <= 19 ? s.slice(k, end) : null, spaced: false };
  const separator = s.charCodeAt(end);
  if ((separator !== 0x20 && separator !== 0x2d) || !isDigit(s.charCodeAt(end + 1))) return { end, digits: null, spaced: false };
  let count = 4;
  let spoiled = false;
  const parts = [s.slice(k, end)];
  while (s.charCodeAt(end) === separator && isDigit(s.charCodeAt(end + 1))) {
    let groupEnd = end + 1;
    while (groupEnd < s.length && isDigit(s.charCodeAt(groupEnd))) groupEnd++;
    const length = groupEnd - end - 1;
    if (length < 3) break;
    end = groupEnd;
    if (length > 6) spoiled = true;
    count += length;
    if (count <= 19) parts.push(s.slice(end - length, end));
  }
  return { end, digits: !spoiled && count >= 13 && count <= 19 ? parts.join('') : null, spaced: separator === 0x20 };
}

/** Not glued to a word, a URL, an address or an attribute value (`data-id="…"`), nor a decimal. */
function standsAlone(s: string, start: number, end: number): boolean {
  const before = s.charCodeAt(start - 1);
  if (isAlnum(before) || NOT_BEFORE_CARD.has(before)) return false;
  if ((before === 0x22 || before === 0x27) && s.charCodeAt(start - 2) === 0x3d) return false;
  const after = s.charCodeAt(end);
  if (isAlnum(after) || NOT_AFTER_CARD.has(after)) return false;
  if ((after === 0x2e || after === 0x2c) && isAlnum(s.charCodeAt(end + 1))) return false;
  return true;
}

function cardBrand(digits: string): string | null {
  if (/^(\d)\1*$/.test(digits) || !luhnValid(digits)) return null;
  for (const brand of BRANDS) if (brand.lengths.includes(digits.length) && brand.matches(digits)) return brand.name;
  return null;
}

function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let k = digits.length - 1, double = false; k >= 0; k--, double = !double) {
    let d = digits.charCodeAt(k) - 0x30;
    if (double && (d *= 2) > 9) d -= 9;
    sum += d;
  }
  return sum % 10 === 0;
}

// ---------------------------------------------------------------------------------------------
// iban

/** IBAN lengths: SEPA countries, GB, CH, NO, and a few common others (SWIFT IBAN registry). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AT: 20, BE: 16, BG: 22, CH: 21, CY: 28, CZ: 24, DE: 22, DK: 18, EE: 20, ES: 24, FI: 18, FR: 27, GB: 22, GI: 23, GR: 27,
  HR: 21, HU: 28, IE: 22, IS: 26, IT: 27, LI: 21, LT: 20, LU: 20, LV: 21, MC: 27, MT: 31, NL: 18, NO: 15, PL: 28, PT: 25, RO: 24,
  SE: 24, SI: 19, SK: 24, SM: 27, VA: 22, AE: 23, IL: 23, SA: 24, TR: 26, UA: 29,
};
const MIN_IBAN_CHARS = 15;
const MAX_IBAN_CHARS = 34;

function ibanIn(s: string): Hit | null {
  for (let k = 0; k + 4 <= s.length; k++) {
    if (!isUpper(s.charCodeAt(k)) || !isUpper(s.charCodeAt(k + 1)) || !isDigit(s.charCodeAt(k + 2)) || !isDigit(s.charCodeAt(k + 3))) continue;
    if (isAlnum(s.charCodeAt(k - 1))) continue;
    const iban = ibanAt(s, k);
    if (iban !== null) return { at: k, what: `an IBAN (${iban.slice(0, 2)}) ending in ${iban.slice(-4)}` };
  }
  return null;
}

/** The IBAN starting at `k` (compact), when its length and check digits are right. */
function ibanAt(s: string, k: number): string | null {
  const expected = IBAN_LENGTHS[s.slice(k, k + 2)];
  const max = expected ?? MAX_IBAN_CHARS;
  const isPart = (c: number) => isUpper(c) || isDigit(c);
  let compact = s.slice(k, k + 4);
  let end = k + 4;
  if (s.charCodeAt(end) === 0x20 && isPart(s.charCodeAt(end + 1))) {
    // Printed in groups of 4 after single spaces; the last group may be shorter.
    while (compact.length < max && s.charCodeAt(end) === 0x20 && isPart(s.charCodeAt(end + 1))) {
      let groupEnd = end + 1;
      while (groupEnd < s.length && groupEnd - end - 1 < 4 && isPart(s.charCodeAt(groupEnd))) groupEnd++;
      const length = groupEnd - end - 1;
      compact += s.slice(end + 1, groupEnd);
      end = groupEnd;
      if (length < 4) break;
    }
  } else {
    while (end < s.length && end - k < max && isPart(s.charCodeAt(end))) end++;
    compact = s.slice(k, end);
  }
  if (isAlnum(s.charCodeAt(end))) return null;
  if (expected !== undefined ? compact.length !== expected : compact.length < MIN_IBAN_CHARS || compact.length > MAX_IBAN_CHARS) return null;
  return mod97(compact) === 1 ? compact : null;
}

/** The IBAN check (ISO 13616): the first four characters moved to the end, letters as 10–35, mod 97. */
function mod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (let k = 0; k < rearranged.length; k++) {
    const c = rearranged.charCodeAt(k);
    rest = isDigit(c) ? (rest * 10 + (c - 0x30)) % 97 : (rest * 100 + (c - 55)) % 97;
  }
  return rest;
}

// ---------------------------------------------------------------------------------------------
// national_ids

/** The words that make an undashed number an SSN, a NINO or a German tax ID. */
const SSN_WORDS = /\bssn\b|\bsocial[\s-]+security\b|\bsocial sec\b/i;
const NINO_WORDS = /\bNI\b|\bNINO\b/;
const NINO_PHRASE = /national[\s-]+insurance/i;
const STEUER_WORDS = /steuer[\s-]*(?:id|identifikationsnummer|idnr|nummer)|identifikationsnummer|\bidnr\b|\btax[\s-]*id\b/i;
const DNI_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';
/** Letter pairs the UK never issues as a NINO prefix. */
const NINO_BAD_PREFIXES = new Set(['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ']);

function nationalIdIn(s: string): Hit | null {
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (isUpper(c) && !isAlnum(s.charCodeAt(k - 1))) {
      const what = letterIdAt(s, k);
      if (what !== null) return { at: k, what };
      continue;
    }
    if (!isDigit(c) || isAlnum(s.charCodeAt(k - 1))) continue;
    let end = k;
    while (end < s.length && isDigit(s.charCodeAt(end))) end++;
    const what = digitIdAt(s, k, end);
    if (what !== null) return { at: k, what };
    k = end - 1;
  }
  return null;
}

/** The words around s[start, end) (a bounded window). */
const around = (s: string, start: number, end: number) => `${s.slice(Math.max(0, start - CONTEXT_BEFORE), start)} ${s.slice(end, end + CONTEXT_AFTER)}`;
/** Not continued by a word, a longer number or a reference (`-`, `/`). */
const endsId = (s: string, end: number) => {
  const c = s.charCodeAt(end);
  return !isAlnum(c) && c !== 0x2d && c !== 0x2f && c !== 0x5f && !((c === 0x2e || c === 0x2c) && isDigit(s.charCodeAt(end + 1)));
};
/** Not preceded by a reference's punctuation (`#`, `-`, `/`, `+`, `.`): phone numbers and part numbers. */
const startsId = (s: string, start: number) => !'#-/+._'.includes(s[start - 1] ?? ' ');

/** An identity number starting with the digits s[k, end). */
function digitIdAt(s: string, k: number, end: number): string | null {
  const run = end - k;
  if (!startsId(s, k)) return null;
  if (run === 3 && s[end] === '-') {
    const m = /^(\d{3})-(\d{2})-(\d{4})/.exec(s.slice(k, k + 11));
    if (m !== null && endsId(s, k + 11) && ssnValid(m[1], m[2], m[3])) return 'a US Social Security number';
  }
  if (run === 9 && endsId(s, end) && ssnValid(s.slice(k, k + 3), s.slice(k + 3, k + 5), s.slice(k + 5, end)) && SSN_WORDS.test(around(s, k, end))) {
    return 'a US Social Security number';
  }
  if (run === 8) {
    // DNI: 8 digits and the check letter, joined or after one dash or space.
    let at = end;
    if (s[at] === '-' || s[at] === ' ') at++;
    if (s[at] === DNI_LETTERS[Number(s.slice(k, end)) % 23] && !isAlnum(s.charCodeAt(at + 1))) return 'a Spanish DNI number';
  }
  const steuer = run === 11 ? s.slice(k, end) : run === 2 ? groupedSteuerId(s, k) : null;
  const steuerEnd = run === 11 ? end : k + 14;
  if (steuer !== null && endsId(s, steuerEnd) && steuerIdValid(steuer) && STEUER_WORDS.test(around(s, k, steuerEnd))) {
    return 'a German tax ID (Steuer-ID)';
  }
  return null;
}

/** "12 345 678 901" as 11 digits, or null. */
function groupedSteuerId(s: string, k: number): string | null {
  const m = /^(\d{2}) (\d{3}) (\d{3}) (\d{3})/.exec(s.slice(k, k + 14));
  return m === null ? null : m[1] + m[2] + m[3] + m[4];
}

/** An identity number starting with the letter at `k`: a NIE (X/Y/Z) or a UK NINO. */
function letterIdAt(s: string, k: number): string | null {
  const window = s.slice(k, k + 14);
  const nie = /^([XYZ])-?(\d{7})-?([A-Z])(?![A-Za-z0-9])/.exec(window);
  if (nie !== null && DNI_LETTERS[Number('XYZ'.indexOf(nie[1]) + nie[2]) % 23] === nie[3]) return 'a Spanish NIE number';
  const nino = /^([A-Z]{2}) ?(\d{2}) ?(\d{2}) ?(\d{2}) ?([A-D])(?![A-Za-z0-9])/.exec(window);
  if (nino !== null && ninoPrefixValid(nino[1])) {
    const words = around(s, k, k + nino[0].length);
    if (NINO_WORDS.test(words) || NINO_PHRASE.test(words)) return 'a UK National Insurance number';
  }
  return null;
}

/** SSA rules: area not 000, 666 or 900–999; group not 00; serial not 0000. */
function ssnValid(area: string, group: string, serial: string): boolean {
  return area !== '000' && area !== '666' && area[0] !== '9' && group !== '00' && serial !== '0000';
}

/** HMRC rules: first letter not D F I Q U V, second not D F I O Q U V, and not a withheld pair. */
function ninoPrefixValid(prefix: string): boolean {
  return !'DFIQUV'.includes(prefix[0]) && !'DFIOQUV'.includes(prefix[1]) && !NINO_BAD_PREFIXES.has(prefix);
}

/**
 * The German tax ID: no leading zero; in the first 10 digits one digit appears two or three times
 * and the rest at most once; the 11th is the ISO 7064 MOD 11,10 check digit.
 */
function steuerIdValid(id: string): boolean {
  if (id[0] === '0') return false;
  const counts = new Array<number>(10).fill(0);
  for (let k = 0; k < 10; k++) counts[id.charCodeAt(k) - 0x30]++;
  const repeated = counts.filter((n) => n > 1);
  if (repeated.length !== 1 || repeated[0] > 3) return false;
  let product = 10;
  for (let k = 0; k < 10; k++) {
    let sum = (id.charCodeAt(k) - 0x30 + product) % 10;
    if (sum === 0) sum = 10;
    product = (sum * 2) % 11;
  }
  const check = 11 - product === 10 ? 0 : 11 - product;
  return check === id.charCodeAt(10) - 0x30;
}

// ---------------------------------------------------------------------------------------------
// home_secrets: an Aho-Corasick automaton over the secrets, one forward pass per field

interface SecretAutomaton {
  /** Transitions, keyed node * 65536 + UTF-16 unit. */
  next: Map<number, number>;
  fail: Int32Array;
  /** A secret ends at this node or at one of its failure ancestors. */
  accepts: Uint8Array;
}

function secretAutomaton(secrets: unknown): SecretAutomaton | null {
  if (!Array.isArray(secrets)) return null;
  const next = new Map<number, number>();
  const children: number[][] = [[]];
  const accepting: boolean[] = [false];
  for (const secret of secrets.slice(0, MAX_HOME_SECRETS)) {
    if (typeof secret !== 'string' || secret.length < MIN_HOME_SECRET_CHARS) continue;
    let node = 0;
    for (let k = 0; k < secret.length && k < MAX_HOME_SECRET_CHARS; k++) {
      const key = node * 65536 + secret.charCodeAt(k);
      let child = next.get(key);
      if (child === undefined) {
        child = children.length;
        next.set(key, child);
        children.push([]);
        accepting.push(false);
        children[node].push(key);
      }
      node = child;
    }
    accepting[node] = true;
  }
  if (children.length === 1) return null;
  const fail = new Int32Array(children.length);
  const accepts = new Uint8Array(children.length);
  // Breadth first, so a node's failure target is final before its children are linked.
  const queue: number[] = [0];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head];
    for (const key of children[node]) {
      const child = next.get(key) as number;
      const unit = key - node * 65536;
      let target = 0;
      if (node !== 0) {
        let f = fail[node];
        while (f !== 0 && !next.has(f * 65536 + unit)) f = fail[f];
        target = next.get(f * 65536 + unit) ?? 0;
      }
      fail[child] = target;
      accepts[child] = accepting[child] || accepts[target] === 1 ? 1 : 0;
      queue.push(child);
    }
  }
  return { next, fail, accepts };
}

function containsSecret(automaton: SecretAutomaton, s: string): boolean {
  const { next, fail, accepts } = automaton;
  let node = 0;
  for (let k = 0; k < s.length; k++) {
    const unit = s.charCodeAt(k);
    while (node !== 0 && !next.has(node * 65536 + unit)) node = fail[node];
    node = next.get(node * 65536 + unit) ?? 0;
    if (accepts[node] === 1) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Details

/**
 * An attachment as a detail names it: its file name without control characters, runs of 16 or
 * more token characters with a digit (a key or token someone named the file after) masked, cut to
 * MAX_SHOWN_FILENAME_CHARS; or its position when it has no name.
 */
function attachmentName(filename: unknown, index: number): string {
  if (typeof filename !== 'string' || filename.trim() === '') return `attachment #${index + 1}`;
  let name = filename
    .slice(0, 256)
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}"]/gu, '?')
    .replace(/[A-Za-z0-9_+/=-]{16,}/g, (run) => (/\d/.test(run) ? '…' : run));
  if (name.length > MAX_SHOWN_FILENAME_CHARS) name = `${clip(name, MAX_SHOWN_FILENAME_CHARS - 1)}…`;
  return `attachment "${name.toWellFormed()}"`;
}

/** At most `max` UTF-16 units, not splitting a surrogate pair. */
function clip(s: string, max: number): string {
  return s.length > max ? s.slice(0, isHighSurrogate(s.charCodeAt(max - 1)) ? max - 1 : max) : s;
}

function finishDetail(detail: string): string {
  const safe = detail.replace(/[\p{Cc}\p{Zl}\p{Zp}]/gu, ' ').toWellFormed();
  return safe.length > MAX_DETAIL_CHARS ? `${clip(safe, MAX_DETAIL_CHARS - 1)}…` : safe;
}

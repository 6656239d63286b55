/**
 * Whether a draft's HTML part and text part say the same thing (docs/drafts.md, "What the owner
 * approves"). The owner may read one while the recipient's mail client shows the other, so the
 * approval view flags a draft whose parts differ in what matters, and HTML the owner's view of it
 * cannot show: hidden text, text added by a stylesheet, images it does not load.
 *
 * Rules:
 * - The text is an agent's (or, in a forward, a stranger's): each part is cut to
 *   MAX_COMPARED_CHARS, the HTML is rendered by the manipulation scanner's one forward pass
 *   (src/mail/manipulation.ts `renderHtml`), and every other pass is a forward loop or a
 *   regular expression without nested or overlapping repetition. It never throws.
 * - Both parts are compared as the reader sees them: Unicode NFKC, format characters (zero-width,
 *   soft hyphen: Unicode Cf) dropped, lower case. They are split into links (visible URLs and,
 *   in the HTML, every href), email addresses, IBAN-like strings (printed in groups or not),
 *   numbers (thousands separators ignored: 48,000 = 48000) and words.
 * - A link, address, IBAN or number in one part and not the other is a mismatch; words are, when
 *   the words one part has and the other lacks are more than WORD_SHARE of that part's words or
 *   more than MAX_UNMATCHED_WORDS (a signature line is not flagged, a changed sentence is).
 * - Flagged even when the parts agree: hidden HTML text (display:none and the other ways the
 *   manipulation scanner knows), a stylesheet that writes text (`content:`) or changes what shows
 *   with the screen (`@media`…), images the sandboxed view does not load (remote, `cid:`), and
 *   parts longer than MAX_COMPARED_CHARS (the rest is not compared).
 */
import { closingTagAt, readTag } from './html-tags.js';
import { decodeText, renderHtml, withoutCssComments } from './manipulation.js';

/** Characters of each part compared; the manipulation scanner reads as much of a received body. */
export const MAX_COMPARED_CHARS = 256 * 1024;
/** Share of a part's distinct words the other part may lack before the parts count as different. */
const WORD_SHARE = 0.05;
/** Distinct words one part may have that the other lacks, however long the part. */
const MAX_UNMATCHED_WORDS = 50;
/** Examples of each kind quoted in a finding, and the characters of each. */
const MAX_EXAMPLES = 4;
const MAX_EXAMPLE_CHARS = 60;
/** Characters of hidden text quoted. */
const MAX_HIDDEN_QUOTE_CHARS = 80;
/** IBAN lengths (ISO 13616: 15 to 34 characters), and the digits an IBAN-like string needs beyond its check digits. */
const MIN_IBAN_CHARS = 15;
const MAX_IBAN_CHARS = 34;
const MIN_IBAN_DIGITS = 8;
/** Characters of a printed IBAN group ("DE89 3704 0044 …"). */
const MAX_IBAN_GROUP_CHARS = 4;
/** Characters of an email address (RFC 5321). */
const MAX_ADDRESS_CHARS = 320;

export const PART_MISMATCH_REASONS = ['hidden_text', 'styled_text', 'unseen_images', 'html_only', 'text_only', 'unchecked'] as const;
export type PartMismatchReason = (typeof PART_MISMATCH_REASONS)[number];

/** Why a draft's parts may not say the same thing; `detail` names what differs (never more than a few short examples). */
export interface PartMismatch {
  reason: PartMismatchReason;
  detail: string;
}

/** What a part says, by kind: each a map from its compared form to how it was written. */
interface Content {
  links: Map<string, string>;
  addresses: Map<string, string>;
  ibans: Map<string, string>;
  numbers: Map<string, string>;
  words: Map<string, string>;
}

const KINDS: { kind: keyof Content; one: string; many: string }[] = [
  { kind: 'ibans', one: 'IBAN', many: 'IBANs' },
  { kind: 'numbers', one: 'number', many: 'numbers' },
  { kind: 'links', one: 'link', many: 'links' },
  { kind: 'addresses', one: 'address', many: 'addresses' },
  { kind: 'words', one: 'word', many: 'words' },
];

/** The findings for one draft; empty when the parts agree (or there is at most a text part). */
export function compareParts(parts: { text: string | null; html: string | null }): PartMismatch[] {
  try {
    const html = parts.html ?? null;
    if (html === null || html === '') return [];
    const findings: PartMismatch[] = [];
    const cut = (s: string) => s.slice(0, MAX_COMPARED_CHARS);
    const page = renderHtml(cut(html));
    const markup = markupOf(cut(html));

    const hidden = page.hidden.map((r) => ({ ...r, text: comparable(r.text).trim() })).filter((r) => r.text !== '');
    if (hidden.length > 0) {
      const first = hidden.find((r) => r.strong) ?? hidden[0];
      findings.push({ reason: 'hidden_text', detail: `the HTML has text the reader does not see (${first.reason}): ${quote(first.text, MAX_HIDDEN_QUOTE_CHARS)}` });
    }
    const text = parts.text ?? null;
    if (text !== null && text !== '') {
      const htmlSays = contentOf(page.visible);
      for (const href of markup.links) addLink(htmlSays, href);
      const textSays = contentOf(cut(text));
      const htmlOnly = differences(htmlSays, textSays);
      if (htmlOnly !== null) findings.push({ reason: 'html_only', detail: `the HTML shows what the text part does not: ${htmlOnly}` });
      const textOnly = differences(textSays, htmlSays);
      if (textOnly !== null) findings.push({ reason: 'text_only', detail: `the text part says what the HTML does not: ${textOnly}` });
    }

    if (markup.styledText !== null) findings.push({ reason: 'styled_text', detail: markup.styledText });
    if (markup.unseenImages > 0) {
      findings.push({
        reason: 'unseen_images',
        detail: `the HTML shows ${markup.unseenImages === 1 ? 'an image' : `${markup.unseenImages} images`} this view does not load (remote or attached); ${markup.unseenImages === 1 ? 'it' : 'they'} may show anything`,
      });
    }

    const long = [text !== null && text.length > MAX_COMPARED_CHARS ? 'the text part' : null, html.length > MAX_COMPARED_CHARS ? 'the HTML' : null].filter((w) => w !== null);
    if (long.length > 0) findings.push({ reason: 'unchecked', detail: `${long.join(' and ')} ${long.length === 1 ? 'is' : 'are'} longer than svc compares (${MAX_COMPARED_CHARS / 1024} KiB); the rest is not compared` });
    return findings;
  } catch {
    // A scanner bug must not hide a draft from its owner: say so instead of answering "agrees".
    return [{ reason: 'unchecked', detail: 'svc could not compare the text and HTML parts; read both' }];
  }
}

/** The HTML's visible text, as the owner's terminal shows it (hidden text, comments, styles and scripts left out). */
export function htmlAsText(html: string): string {
  try {
    return renderHtml(html.slice(0, MAX_COMPARED_CHARS)).visible;
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------
// Splitting a part into what it says

const FORMAT_CHARACTERS = /\p{Cf}/gu;
const comparable = (s: string) => s.normalize('NFKC').replace(FORMAT_CHARACTERS, '');

const CHUNKS = /\S+/g;
/** Letters (with their marks) and digits; a number's separators are joined back below. */
const ALNUM_RUNS = /[\p{L}\p{M}\p{Nd}]+/gu;
const NUMBER_SEPARATORS = new Set(['.', ',', "'", '’']);
const LEADING_PUNCTUATION = /^[<(["'“‘«*_]+/;
const TRAILING_PUNCTUATION = /[>)\]}"'”’».,;:!?*_]+$/;

function emptyContent(): Content {
  return { links: new Map(), addresses: new Map(), ibans: new Map(), numbers: new Map(), words: new Map() };
}

const keep = (map: Map<string, string>, key: string, shown: string) => {
  if (key !== '' && !map.has(key)) map.set(key, shown);
};

/** A URL or href in its compared form: lower case, without surrounding punctuation and a final slash. */
function addLink(c: Content, raw: string): void {
  const url = raw.trim().replace(LEADING_PUNCTUATION, '').replace(TRAILING_PUNCTUATION, '');
  const lower = url.toLowerCase();
  if (lower === '' || lower.startsWith('#')) return;
  if (lower.startsWith('mailto:')) {
    const address = lower.slice(7).split('?')[0];
    for (const a of address.split(',')) keep(c.addresses, safeDecode(a.trim()), safeDecode(a.trim()));
    return;
  }
  // A tel: link dials, it shows nothing; the number it shows is compared as text.
  if (lower.startsWith('tel:')) return;
  keep(c.links, lower.replace(/\/+$/, ''), url);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Where a URL starts in a chunk holding `://` at `at`: its scheme's first letter. */
function schemeStart(chunk: string, at: number): number {
  let p = at;
  while (p > 0 && /[a-z0-9+.-]/.test(chunk[p - 1])) p--;
  return p;
}

/** An email address around the `@` at `at`, or null; reads at most MAX_ADDRESS_CHARS either side. */
function addressAround(chunk: string, at: number): string | null {
  let start = at;
  while (start > 0 && at - start < MAX_ADDRESS_CHARS && /[a-z0-9._%+'-]/.test(chunk[start - 1])) start--;
  let end = at + 1;
  while (end < chunk.length && end - at < MAX_ADDRESS_CHARS && /[\p{L}\p{N}.-]/u.test(chunk[end])) end++;
  const domain = chunk.slice(at + 1, end).replace(/\.+$/, '');
  if (start === at || !domain.includes('.')) return null;
  return `${chunk.slice(start, at)}@${domain}`;
}

/** What a rendered part says: its links, addresses, IBANs, numbers and words. */
function contentOf(part: string): Content {
  const c = emptyContent();
  const s = comparable(part).toLowerCase();
  // Links and addresses are taken whole; what is left is read for IBANs, numbers and words, as
  // one string of its chunks joined by single spaces. Built by concatenation, not as an array to
  // join: an array of a 256 KiB part's chunks outgrows the regular heap pages, and growing it made
  // the collector's work grow faster than the part (8× the time for twice the chunks).
  let rest = '';
  for (const m of s.matchAll(CHUNKS)) {
    const chunk = m[0];
    const scheme = chunk.indexOf('://');
    if (scheme > 0 || chunk.startsWith('www.') || chunk.startsWith('mailto:')) {
      addLink(c, scheme > 0 ? chunk.slice(schemeStart(chunk, scheme)) : chunk);
      continue;
    }
    const at = chunk.indexOf('@');
    const address = at > 0 ? addressAround(chunk, at) : null;
    if (address !== null) {
      keep(c.addresses, address, address);
      continue;
    }
    rest = rest === '' ? chunk : `${rest} ${chunk}`;
  }
  const tokens = alnumTokens(rest);
  for (let i = 0; i < tokens.count; ) {
    const iban = ibanAt(tokens, i);
    if (iban !== null) {
      keep(c.ibans, iban.value, iban.value.toUpperCase().replace(/(.{4})(?=.)/g, '$1 '));
      i = iban.next;
      continue;
    }
    const value = tokenAt(tokens, i++);
    if (DIGIT.test(value)) keep(c.numbers, value.replace(/[.,'’]/g, ''), value);
    else keep(c.words, value, value);
  }
  return c;
}

/**
 * Runs of letters and digits of `s`, in order: where each starts and ends, and whether it is
 * separated from the one before by exactly one space. In typed arrays sized once (a token takes
 * at least one character and a separator), not an object or a string per token: a part of
 * 256 KiB holds up to 128 Ki tokens, and arrays of them grown one by one made the collector's
 * share grow faster than the part.
 */
interface Tokens {
  s: string;
  count: number;
  starts: Int32Array;
  ends: Int32Array;
  spaced: Uint8Array;
}

const tokenAt = (t: Tokens, i: number) => t.s.slice(t.starts[i], t.ends[i]);

/** Runs of letters and digits; digits separated by one of NUMBER_SEPARATORS stay one number ("48,000"). */
function alnumTokens(s: string): Tokens {
  // Spans first, sliced when read: growing a merged number by concatenation would build a chain
  // of string pieces as long as the number (a hostile "1,1,1,…" makes the collector crawl).
  const most = (s.length >> 1) + 1;
  const t: Tokens = { s, count: 0, starts: new Int32Array(most), ends: new Int32Array(most), spaced: new Uint8Array(most) };
  let endsWithDigit = false;
  for (const m of s.matchAll(ALNUM_RUNS)) {
    const run = m[0];
    const start = m.index;
    const last = t.count - 1;
    const prevEnd = last >= 0 ? t.ends[last] : -2;
    if (last >= 0 && start === prevEnd + 1 && NUMBER_SEPARATORS.has(s[prevEnd]) && endsWithDigit && isDigit(run.codePointAt(0)!)) t.ends[last] = start + run.length;
    else {
      t.starts[t.count] = start;
      t.ends[t.count] = start + run.length;
      t.spaced[t.count] = last >= 0 && start === prevEnd + 1 && s[prevEnd] === ' ' ? 1 : 0;
      t.count++;
    }
    endsWithDigit = isDigit(lastCodePoint(run));
  }
  return t;
}

const DIGIT = /\p{Nd}/u;
const isDigit = (cp: number) => (cp >= 0x30 && cp <= 0x39) || (cp > 0x7f && DIGIT.test(String.fromCodePoint(cp)));
const lastCodePoint = (s: string) => {
  const low = s.charCodeAt(s.length - 1);
  return low >= 0xdc00 && low <= 0xdfff && s.length > 1 ? s.codePointAt(s.length - 2)! : low;
};

const IBAN_START = /^[a-z]{2}[0-9]{2}[a-z0-9]*$/;
const IBAN_GROUP = /^[a-z0-9]+$/;

/** An IBAN-like string starting at token `i`, written whole or in groups of up to four; reads at most MAX_IBAN_CHARS. */
function ibanAt(tokens: Tokens, i: number): { value: string; next: number } | null {
  const first = tokenAt(tokens, i);
  if (!IBAN_START.test(first) || first.length > MAX_IBAN_CHARS) return null;
  let value = first;
  let next = i + 1;
  if (first.length <= MAX_IBAN_GROUP_CHARS) {
    for (; next < tokens.count && tokens.spaced[next] === 1; next++) {
      const group = tokenAt(tokens, next);
      if (!IBAN_GROUP.test(group) || group.length > MAX_IBAN_GROUP_CHARS || value.length + group.length > MAX_IBAN_CHARS) break;
      value += group;
    }
  }
  const digits = value.slice(4).replace(/[^0-9]/g, '').length;
  return value.length >= MIN_IBAN_CHARS && digits >= MIN_IBAN_DIGITS ? { value, next } : null;
}

/** What `a` says that `b` does not, as a short list by kind; null when nothing material. */
function differences(a: Content, b: Content): string | null {
  const said: string[] = [];
  for (const { kind, one, many } of KINDS) {
    const missing: string[] = [];
    for (const [key, shown] of a[kind]) if (!b[kind].has(key)) missing.push(shown);
    if (missing.length === 0) continue;
    if (kind === 'words' && missing.length <= WORD_SHARE * a.words.size && missing.length <= MAX_UNMATCHED_WORDS) continue;
    const examples = missing.slice(0, MAX_EXAMPLES).map((m) => quote(m, MAX_EXAMPLE_CHARS));
    const more = missing.length > MAX_EXAMPLES ? ` and ${missing.length - MAX_EXAMPLES} more` : '';
    said.push(`${missing.length === 1 ? one : many} ${examples.join(', ')}${more}`);
  }
  return said.length ? said.join('; ') : null;
}

function quote(s: string, max: number): string {
  const line = s.replace(/\s+/g, ' ').trim();
  const shown = line.length > max ? `${line.slice(0, max - 1)}…` : line;
  // Invisible and control characters are shown as code points, never passed on.
  return `“${shown.replace(/[\p{Cc}\p{Cf}]/gu, (ch) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`)}”`;
}

// ---------------------------------------------------------------------------------------------
// Markup: links, images and stylesheets

/** Elements whose content is not rendered text, skipped whole (as renderHtml does). */
const RAW_TEXT_ELEMENTS = new Set(['script', 'style', 'title', 'template', 'xml', 'textarea']);
const MARKUP_ATTRIBUTES = new Set(['href', 'src', 'srcset', 'poster', 'background', 'style', 'data']);
/** Attributes that load something the sandboxed view (CSP: images from data: only) does not show. */
const LOADING_ATTRIBUTES = ['src', 'srcset', 'poster', 'background', 'data'] as const;
const REMOTE_CSS_URL = /url\(\s*(?:["']\s*)?(?!data:)[^\s"')]/i;
const STYLE_CONTENT = /content\s*:\s*(?:["']|attr\(|counter)/i;
const CONDITIONAL_RULE = /@(?:media|supports|container)\b/i;
const SHOWING_PROPERTY = /\b(?:display|visibility|opacity|content)\s*:/i;

interface Markup {
  /** Every href, entities decoded. */
  links: string[];
  unseenImages: number;
  /** Why a stylesheet may show text or content the rendered text does not have; null when none does. */
  styledText: string | null;
}

/** One forward pass over the tags (comments and raw-text elements skipped as a browser does). */
function markupOf(html: string): Markup {
  const links: string[] = [];
  let unseenImages = 0;
  const stylesheets: string[] = [];
  const n = html.length;
  let pos = 0;
  while (pos < n) {
    const lt = html.indexOf('<', pos);
    if (lt === -1) break;
    if (html.startsWith('<!--', lt)) {
      const close = html.indexOf('-->', lt + 4);
      pos = close === -1 ? n : close + 3;
      continue;
    }
    const next = html.charCodeAt(lt + 1);
    if (next === 0x21 /* ! */ || next === 0x3f /* ? */) {
      const close = html.indexOf('>', lt + 2);
      pos = close === -1 ? n : close + 1;
      continue;
    }
    const letter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
    if (!letter(next) && !(next === 0x2f && letter(html.charCodeAt(lt + 2)))) {
      pos = lt + 1;
      continue;
    }
    const tag = readTag(html, lt, MARKUP_ATTRIBUTES, 10);
    pos = tag.end;
    if (tag.closing) continue;
    const value = (name: string) => {
      const span = tag.attributes.get(name);
      return span ? decodeText(html, span.start, span.end).trim() : null;
    };
    const href = value('href');
    if (href !== null) links.push(href);
    for (const name of LOADING_ATTRIBUTES) {
      const v = value(name);
      if (v !== null && v !== '' && !v.toLowerCase().startsWith('data:')) unseenImages++;
    }
    const style = value('style');
    if (style !== null && REMOTE_CSS_URL.test(withoutCssComments(style))) unseenImages++;
    if (RAW_TEXT_ELEMENTS.has(tag.name)) {
      const end = closingTagAt(html, pos, tag.name);
      if (tag.name === 'style') stylesheets.push(withoutCssComments(html.slice(pos, end)));
      pos = end;
    }
  }
  let styledText: string | null = null;
  for (const sheet of stylesheets) {
    if (REMOTE_CSS_URL.test(sheet)) unseenImages++;
    if (styledText !== null) continue;
    if (STYLE_CONTENT.test(sheet) || (sheet.includes('\\') && /:(?:before|after|marker)/i.test(sheet))) styledText = 'a stylesheet in the HTML writes text (CSS content:) that is not compared with the text part';
    else if (CONDITIONAL_RULE.test(sheet) && SHOWING_PROPERTY.test(sheet)) styledText = 'a stylesheet in the HTML shows or hides parts depending on the screen or client (@media…); the recipient may see other parts than this view';
  }
  return { links, unseenImages, styledText };
}


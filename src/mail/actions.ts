/**
 * The things an agent has to act on in a received message: one-time codes ("482913 is your code")
 * and action links (verify, sign in, reset a password, unsubscribe), picked out of the subject, the
 * text and HTML bodies and the List-Unsubscribe header.
 *
 * Rules:
 * - Everything here comes from strangers. Each input is cut to a bound first (MAX_SCANNED_CHARS of
 *   each body, MAX_HEADER_CHARS of the headers), every pass over it is a forward index loop, and the
 *   only regular expressions run on windows of a few hundred characters and have no nested or
 *   overlapping repetition. Work per candidate code or link is bounded, and so is their number.
 * - It never throws: malformed HTML, unterminated tags and quotes, NUL bytes and lone surrogates all
 *   give whatever was found up to that point.
 * - Codes: 4–8 digits (or two groups of 3–4 split by one space or dash), or 5–10 upper-case letters
 *   and digits with at least one letter and two digits. A candidate counts only when words near it
 *   (its sentence, the line before, the subject) say "code" rather than "order", "invoice", "phone"…
 * - Links: HTML anchors, bare http(s) URLs of the text and the List-Unsubscribe URLs (including its
 *   mailto:, the only non-http link kept, as an agent can send that mail). The kind comes from the
 *   anchor text, else the URL, else the words around a link whose text says nothing ("click here").
 */
import { closingTagAt, readTag, skipMarkup } from './html-tags.js';
import { HIDING_ATTRIBUTES, HidingStack, hidingTag, type HidingTag } from './manipulation.js';
import { isInternalHost } from '../core/internal-addresses.js';

/** Characters of each body (text, HTML) scanned: codes and action links sit near the top of real mail. */
export const MAX_SCANNED_CHARS = 256 * 1024;
/** Codes returned: a message carries one, a few at most (backup codes are not what this is for). */
export const MAX_CODES = 5;
/** Links returned, action kinds first: enough for any transactional mail, bounded for a newsletter. */
export const MAX_LINKS = 20;

/** Characters of the subject and List-Unsubscribe read; a longer value is not a real header's. */
const MAX_HEADER_CHARS = 2_048;
/** Characters of a URL; longer ones are dropped, not cut, since a cut URL does not work. */
const MAX_URL_CHARS = 2_048;
/** Characters of an anchor text returned. */
const MAX_ANCHOR_TEXT_CHARS = 200;
/** Characters of a code's context returned. */
const MAX_CONTEXT_CHARS = 120;
/** Candidate codes scored per source; a body with more numbers than this is not a code mail. */
const MAX_CODE_CANDIDATES = 1_000;
/** Distinct URLs classified per message; real mail has under a hundred. */
const MAX_LINK_CANDIDATES = 500;
/** Characters either side of a code read as its sentence, and of a link read as its surroundings. */
const SENTENCE_BEFORE = 80;
const SENTENCE_AFTER = 60;
const LINK_CONTEXT_CHARS = 120;
/** How far back the line before a code or link is looked for, and how much of it is read. */
const LOOKBACK_CHARS = 400;
const PRECEDING_LINE_CHARS = 160;
/** A code needs this score; one strong word ("code", "verify", "OTP"…) next to it is enough. */
const CODE_THRESHOLD = 3;
/**
 * How much the words of the line before and of the subject count towards a candidate: fully-ish
 * for one that starts its sentence ("Your code:\n482913"), barely for one inside a sentence of
 * other words (the ZIP code in "San Francisco, CA 94107" under a code mail's subject).
 */
const LEADING = { preceding: 0.67, subject: 0.5 };
const INSIDE = { preceding: 0.25, subject: 0.2 };
/** A candidate alone on its line is what code mails print in large type. */
const ALONE_BONUS = 1;
/** "#48213" is how tickets and orders are numbered. */
const NUMBER_SIGN_PENALTY = -2;

export interface ExtractedCode {
  value: string;
  context: string;
}
export type LinkKind = 'verification' | 'magic_link' | 'password_reset' | 'unsubscribe' | 'other';
export interface ExtractedLink {
  url: string;
  text: string | null;
  kind: LinkKind;
}
export interface ExtractedActions {
  codes: ExtractedCode[];
  links: ExtractedLink[];
}
export interface ActionSource {
  subject: string | null;
  text: string | null;
  html: string | null;
  listUnsubscribe: string | null;
}

export function extractActions(source: ActionSource): ExtractedActions {
  try {
    const subject = oneLine(bounded(source?.subject, MAX_HEADER_CHARS));
    const text = bounded(source?.text, MAX_SCANNED_CHARS);
    const html = bounded(source?.html, MAX_SCANNED_CHARS);
    const listUnsubscribe = bounded(source?.listUnsubscribe, MAX_HEADER_CHARS);
    const page = html === null ? null : renderHtml(html);
    return {
      codes: findCodes(subject, [text, page?.text ?? null], hiddenCodeKeys(page)),
      links: findLinks(subject, text, page, listUnsubscribe),
    };
  } catch {
    // Not expected from the code above; a safety net, because a message must never fail on this.
    return { codes: [], links: [] };
  }
}

function bounded(value: unknown, max: number): string | null {
  return typeof value === 'string' ? value.slice(0, max) : null;
}

function oneLine(value: string | null): string {
  return value === null ? '' : value.replace(/[\r\n\t]+/g, ' ');
}

// ---------------------------------------------------------------------------------------------
// Characters

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isUpper = (c: number) => c >= 0x41 && c <= 0x5a;
const isLower = (c: number) => c >= 0x61 && c <= 0x7a;
const isAsciiLetter = (c: number) => isUpper(c) || isLower(c);
const isAsciiAlnum = (c: number) => isDigit(c) || isAsciiLetter(c);
/** Whitespace as HTML collapses it, plus the no-break space. */
const isHtmlSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d || c === 0xa0;
/** Zero-width and soft-hyphen characters: senders pad preheaders with them; they render as nothing. */
const isInvisible = (c: number) => c === 0 || c === 0xad || c === 0x34f || (c >= 0x200b && c <= 0x200d) || c === 0x2060 || c === 0xfeff;
/** Where a bare URL ends: whitespace, controls, and the characters that delimit URLs in text. */
const endsUrl = (c: number) => c <= 0x20 || c === 0x7f || c === 0x3c || c === 0x3e || c === 0x22 || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0x3000;
const hasLetter = (s: string) => /\p{L}/u.test(s);
const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();

/** At most `max` UTF-16 units, not splitting a surrogate pair, as well-formed text. */
function clip(s: string, max: number): string {
  if (s.length > max) s = s.slice(0, isHighSurrogate(s.charCodeAt(max - 1)) ? max - 1 : max);
  return s.toWellFormed();
}
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

/** Where the line holding `at` starts, looked for within LOOKBACK_CHARS (else that far back). */
function lineStartBefore(s: string, at: number): number {
  const from = Math.max(0, at - LOOKBACK_CHARS);
  const newline = s.slice(from, at).lastIndexOf('\n');
  return newline === -1 ? from : from + newline + 1;
}

/** The last non-blank line ending before `lineStart`, read within LOOKBACK_CHARS, its end at most PRECEDING_LINE_CHARS. */
function precedingLine(s: string, lineStart: number): string {
  const lines = s.slice(Math.max(0, lineStart - LOOKBACK_CHARS), lineStart).split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    // The first piece may be a cut line; it still reads as words.
    if (/\S/.test(lines[i])) return collapse(lines[i].slice(-PRECEDING_LINE_CHARS));
  }
  return '';
}

// ---------------------------------------------------------------------------------------------
// HTML: rendered text and anchors, in one forward pass

interface Anchor {
  href: string;
  /** Offsets of the anchor's rendered text in `Page.text`. */
  textStart: number;
  textEnd: number;
  /** Alt texts of images inside: a button drawn as an image still says what it does. */
  alt: string;
  /** A block ends right after the anchor, so the text after it is another line. */
  endsLine: boolean;
}
interface Page {
  /** The visible text: entities decoded, whitespace collapsed, a line per block element. */
  text: string;
  anchors: Anchor[];
  /** The text hidden from the reader, rendered alike, and the hrefs of the anchors it hides. */
  hiddenText: string;
  hiddenHrefs: string[];
}

/** Elements that start a new line when rendered, so a code in its own table cell is on its own line. */
const BLOCK_ELEMENTS = new Set([
  'address', 'article', 'aside', 'blockquote', 'br', 'center', 'dd', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer',
  'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'table', 'tbody',
  'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
]);
/** Elements whose content is not shown (the title repeats the subject). */
const HIDDEN_CONTENT_ELEMENTS = new Set(['script', 'style', 'title', 'template', 'xml']);
/** Anchors read from the HTML, and bare URLs from the text: MAX_LINK_CANDIDATES with room for duplicates. */
const MAX_ANCHORS = 2 * MAX_LINK_CANDIDATES;
/** An attribute value longer than this cannot decode to a URL of MAX_URL_CHARS (an entity is at most ~10 characters). */
const MAX_ATTRIBUTE_CHARS = 10 * MAX_URL_CHARS;

const NAMED_ENTITIES = new Map<string, string>([
  ['amp', '&'], ['lt', '<'], ['gt', '>'], ['quot', '"'], ['apos', "'"], ['nbsp', ' '], ['copy', '©'], ['reg', '®'], ['trade', '™'],
  ['hellip', '…'], ['mdash', '—'], ['ndash', '–'], ['lsquo', '‘'], ['rsquo', '’'], ['ldquo', '“'], ['rdquo', '”'], ['laquo', '«'],
  ['raquo', '»'], ['bull', '•'], ['middot', '·'], ['euro', '€'], ['pound', '£'], ['yen', '¥'], ['zwnj', ''], ['zwj', ''], ['shy', ''],
  ['iexcl', '¡'], ['iquest', '¿'], ['aacute', 'á'], ['eacute', 'é'], ['iacute', 'í'], ['oacute', 'ó'], ['uacute', 'ú'], ['ntilde', 'ñ'],
  ['Aacute', 'Á'], ['Eacute', 'É'], ['Iacute', 'Í'], ['Oacute', 'Ó'], ['Uacute', 'Ú'], ['Ntilde', 'Ñ'], ['auml', 'ä'], ['ouml', 'ö'],
  ['uuml', 'ü'], ['Auml', 'Ä'], ['Ouml', 'Ö'], ['Uuml', 'Ü'], ['szlig', 'ß'], ['egrave', 'è'], ['agrave', 'à'], ['ccedil', 'ç'],
  ['ecirc', 'ê'], ['ocirc', 'ô'],
]);

/** The entity at `at` (an `&`) decoded, or null when it is not one we know; reads at most a dozen characters. */
export function decodeEntity(s: string, at: number, to: number): { text: string; end: number } | null {
  let p = at + 1;
  if (s.charCodeAt(p) === 0x23 /* # */) {
    p++;
    const hex = s.charCodeAt(p) === 0x78 || s.charCodeAt(p) === 0x58;
    if (hex) p++;
    const digitsStart = p;
    while (p < to && p - digitsStart < 8 && (isDigit(s.charCodeAt(p)) || (hex && /[a-fA-F]/.test(s[p])))) p++;
    if (p === digitsStart || s.charCodeAt(p) !== 0x3b /* ; */) return null;
    const cp = parseInt(s.slice(digitsStart, p), hex ? 16 : 10);
    return { text: codePointText(cp), end: p + 1 };
  }
  const nameStart = p;
  while (p < to && p - nameStart < 10 && isAsciiAlnum(s.charCodeAt(p))) p++;
  if (s.charCodeAt(p) !== 0x3b) return null;
  const text = NAMED_ENTITIES.get(s.slice(nameStart, p));
  return text === undefined ? null : { text, end: p + 1 };
}

function codePointText(cp: number): string {
  if (!(cp > 0 && cp <= 0x10ffff)) return '\ufffd';
  if (isHtmlSpace(cp)) return ' ';
  if (isInvisible(cp)) return '';
  return String.fromCodePoint(cp);
}

/** Decodes the entities of an attribute value (`&amp;` in an href is a plain `&`). */
function decodeAttribute(value: string): string {
  if (!value.includes('&')) return value;
  let out = '';
  let run = 0;
  for (let k = value.indexOf('&'); k !== -1; k = value.indexOf('&', k + 1)) {
    const entity = decodeEntity(value, k, value.length);
    if (entity === null) continue;
    out += value.slice(run, k) + entity.text;
    run = entity.end;
    k = entity.end - 1;
  }
  return out + value.slice(run);
}

/** Rendered text built piece by piece: whitespace collapsed to one space, block ends to one newline. */
class RenderedText {
  private parts: string[] = [];
  length = 0;
  private pendingSpace = false;
  private atLineStart = true;

  /** Appends the text html[from, to) between tags. */
  append(html: string, from: number, to: number): void {
    let run = from;
    for (let k = from; k < to; ) {
      const c = html.charCodeAt(k);
      if (isHtmlSpace(c) || isInvisible(c)) {
        this.word(html.slice(run, k));
        if (isHtmlSpace(c)) this.pendingSpace = true;
        run = ++k;
        continue;
      }
      if (c === 0x26 /* & */) {
        const entity = decodeEntity(html, k, to);
        if (entity !== null) {
          this.word(html.slice(run, k));
          if (entity.text === ' ') this.pendingSpace = true;
          else this.word(entity.text);
          run = k = entity.end;
          continue;
        }
      }
      k++;
    }
    this.word(html.slice(run, to));
  }

  breakLine(): void {
    if (!this.atLineStart) this.push('\n');
    this.atLineStart = true;
    this.pendingSpace = false;
  }

  toString(): string {
    return this.parts.join('');
  }

  private word(s: string): void {
    if (s === '') return;
    if (this.pendingSpace && !this.atLineStart) this.push(' ');
    this.pendingSpace = false;
    this.atLineStart = false;
    this.push(s);
  }

  private push(s: string): void {
    this.parts.push(s);
    this.length += s.length;
  }
}

interface Tag {
  name: string;
  closing: boolean;
  href: string | null;
  alt: string | null;
  /** Just past the `>`, or the input length when the tag never ends (it then swallows the rest, as in a browser). */
  end: number;
  /** The tag as the hiding rules of src/mail/manipulation.ts read it. */
  hiding: HidingTag;
}

/** `href` and `alt`, and what can hide an element's text; the longest name is `bgcolor`. */
const TAG_ATTRIBUTES = new Set(['href', 'alt', ...HIDING_ATTRIBUTES]);

/** The tag starting at `lt` with its `href` and `alt`, entities decoded (src/mail/html-tags.ts reads it). */
function tagAt(html: string, lt: number): Tag {
  const raw = readTag(html, lt, TAG_ATTRIBUTES, 7);
  const value = (name: string): string | null => {
    const span = raw.attributes.get(name);
    return span && span.end - span.start <= MAX_ATTRIBUTE_CHARS ? decodeAttribute(html.slice(span.start, span.end)) : null;
  };
  return { name: raw.name, closing: raw.closing, href: value('href'), alt: value('alt'), end: raw.end, hiding: hidingTag(html, raw) };
}

/**
 * The page as a reader sees it: text hidden from the reader (display:none, a zero font size, text
 * coloured like its background… — src/mail/manipulation.ts HidingStack, the one definition) is
 * left out, and so is an anchor that shows nothing (hidden itself, or holding only hidden text):
 * a code or link the reader cannot see is not one the sender means them to use.
 */
function renderHtml(html: string): Page {
  const text = new RenderedText();
  const anchors: Anchor[] = [];
  const elements = new HidingStack();
  /** Whether text here is seen; weakly hidden text (white on a background not known) counts as seen, as buttons are drawn so. */
  const seen = () => elements.textHiding()?.strong !== true;
  const hiddenText = new RenderedText();
  const hiddenHrefs: string[] = [];
  let open: (Anchor & { shows: boolean }) | null = null;
  let lastClosed = null as Anchor | null; // set in closeAnchor, which narrowing does not follow
  const closeAnchor = () => {
    if (open === null) return;
    open.textEnd = text.length;
    if (open.shows || open.textEnd > open.textStart) {
      const { shows: _shows, ...anchor } = open;
      if (anchors.length < MAX_ANCHORS) anchors.push(anchor);
      lastClosed = anchor;
    } else if (hiddenHrefs.length < MAX_ANCHORS) hiddenHrefs.push(open.href);
    open = null;
  };
  const appendSeen = (from: number, to: number) => {
    if (from >= to) return;
    if (seen()) text.append(html, from, to);
    else if (hiddenText.length < MAX_SCANNED_CHARS) hiddenText.append(html, from, to);
  };
  const n = html.length;
  let pos = 0;
  while (pos < n) {
    const lt = html.indexOf('<', pos);
    if (lt === -1) {
      appendSeen(pos, n);
      break;
    }
    appendSeen(pos, lt);
    pos = skipMarkup(html, lt);
    if (pos !== lt) continue;
    const next = html.charCodeAt(lt + 1);
    const startsTag = isUpper(next) || isLower(next) || (next === 0x2f && (isUpper(html.charCodeAt(lt + 2)) || isLower(html.charCodeAt(lt + 2))));
    if (!startsTag) {
      appendSeen(lt, lt + 1); // a literal '<', e.g. "a < b"
      pos = lt + 1;
      continue;
    }
    const tag = tagAt(html, lt);
    pos = tag.end;
    if (tag.closing) elements.close(tag.name);
    const own = tag.closing || HIDDEN_CONTENT_ELEMENTS.has(tag.name) ? null : elements.open(tag.hiding);
    if (tag.name === 'a') {
      closeAnchor(); // anchors do not nest; a new one ends the open one
      if (!tag.closing && tag.href !== null && seen()) open = { href: tag.href, textStart: text.length, textEnd: text.length, alt: '', endsLine: false, shows: false };
      else if (!tag.closing && tag.href !== null && hiddenHrefs.length < MAX_ANCHORS) hiddenHrefs.push(tag.href);
    } else if (tag.name === 'img' && open !== null && own !== null && own.text?.strong !== true) {
      // An image button shows even without alt text.
      open.shows = true;
      if (tag.alt) open.alt = clip(`${open.alt} ${tag.alt}`, MAX_ANCHOR_TEXT_CHARS);
    } else if (BLOCK_ELEMENTS.has(tag.name)) {
      // An image button in its own cell: nothing rendered after it, yet the next text is not on its line.
      if (lastClosed !== null && lastClosed.textEnd === text.length) lastClosed.endsLine = true;
      text.breakLine();
      hiddenText.breakLine();
    } else if (!tag.closing && HIDDEN_CONTENT_ELEMENTS.has(tag.name)) {
      pos = closingTagAt(html, pos, tag.name);
    }
  }
  closeAnchor();
  return { text: text.toString(), anchors, hiddenText: hiddenText.toString(), hiddenHrefs };
}


// ---------------------------------------------------------------------------------------------
// Codes

interface Cue {
  re: RegExp;
  weight: number;
  /** A word that by itself says "this is a code" (a score of weak words alone never passes). */
  strong?: boolean;
}

const NOT_WORD_BEFORE = '(?<![\\p{L}\\p{N}])';
const NOT_WORD_AFTER = '(?![\\p{L}\\p{N}])';
/** Words matched whole unless `prefix` (also matches a longer word) or `suffix` (ends a compound, as German "Bestätigungscode"). */
function cue(words: string, weight: number, bounds: 'word' | 'prefix' | 'suffix' | 'none' = 'word', strong = false): Cue {
  const before = bounds === 'word' || bounds === 'prefix' ? NOT_WORD_BEFORE : '';
  const after = bounds === 'word' || bounds === 'suffix' ? NOT_WORD_AFTER : '';
  return { re: new RegExp(`${before}(?:${words})${after}`, 'u'), weight, strong };
}

/** Words near a candidate and what they count, matched on lower-cased windows of at most a few hundred characters. */
const CODE_CUES: Cue[] = [
  cue('codes?', 3, 'suffix', true),
  cue('c[oó]digo|codice|код|kod', 3, 'prefix', true),
  cue('verif|vérif|bestätig|confirm|conferma', 3, 'prefix', true),
  cue('one[- ]?time|einmal', 3, 'prefix', true),
  cue('otp|totp|passcode|pin|2fa|mfa|two[- ]factor|2[- ]factor|two[- ]step|2[- ]step|multi[- ]factor', 3, 'word', true),
  cue('authenticat|authentifi|autenticaci|autentica', 3, 'prefix', true),
  cue('验证码|驗證碼|認証|確認コード|コード|인증', 3, 'none', true),
  cue('password|passwort|contraseña|mot de passe', 2, 'word', true),
  cue('expir|valid for|valid until|gültig|válido|caduca|scade', 2, 'prefix'),
  cue("do not share|don't share|don’t share|never share|nicht weiter|no compartas|nunca compartas|ne partagez", 2),
  cue('enter|use|type|input|paste|eingeben|ingresa|introduce|ingrese|saisissez|inserisci|utilisez', 1),
  cue('is your|ist ihr|ist dein|es tu|es su|est votre', 1),
  cue('minutes?|minuten|minutos|security|sicherheit|seguridad|sign[- ]?in|log[- ]?in|login|anmeld|temporary|temporär|temporal', 1, 'prefix'),
  cue(
    'orders?|bestellung|bestellnummer|pedido|commande|ordine|invoice|rechnung|factura|facture|receipt|quittung|recibo|total|subtotal|' +
      'summe|gesamt|amount|betrag|importe|montant|price|preis|precio|prix|cost|tax|vat|mwst|iva|balance|refund|usd|eur|gbp|phone|tel|' +
      'telefon|teléfono|téléphone|fax|call|mobile|whatsapp|acct|iban|bic|swift|routing|reference|referenz|referencia|ref|tracking|track|' +
      'sendungsnummer|shipment|shipped|parcel|zip|zipcode|postcode|post code|postal|plz|address|adresse|dirección|street|straße|strasse|' +
      'calle|ave|avenue|road|suite|apt|floor|room|sku|item|items|qty|quantity|ticket|case|booking|buchung|reserva|reservation|flight|' +
      'flug|vuelo|seat|gate|promo|promocode|coupon|gutschein|discount|rabatt|descuento|voucher|gift card|sale|off|checkout|serial|model|' +
      'version|build|card|ending|visa|mastercard|amex|copyright|km|miles|kg|lbs|points|followers|location|ip|customer (?:number|id|no)|' +
      'kundennummer|member(?:ship)? (?:number|id|no)|account (?:number|no)|contact|extension|ext',
    -3,
  ),
  cue('©', -2, 'none'),
  cue('number|nummer|número|numéro|nr|no|id|paid|charged|year|years|since', -2),
];

interface CueScore {
  score: number;
  strong: boolean;
}

const NO_CUES: CueScore = { score: 0, strong: false };

function cuesIn(window: string): CueScore {
  if (!hasLetter(window)) return NO_CUES;
  const lower = window.toLowerCase();
  let score = 0;
  let strong = false;
  for (const c of CODE_CUES) {
    if (!c.re.test(lower)) continue;
    score += c.weight;
    strong ||= c.strong === true;
  }
  return { score, strong };
}

interface CodeCandidate {
  value: string;
  /** The value without its space or dash, so "482 913" and "482913" are one code. */
  key: string;
  score: number;
  order: number;
  context: string;
}

interface Token {
  start: number;
  end: number;
  digits: boolean;
}

/** Codes of the subject and the bodies, best first. */
/**
 * The codes (as keys: separators dropped) that the HTML shows only hidden. A text part — mailparser
 * derives one from an HTML-only message, hidden text included — may carry them, but what the HTML
 * hides from its reader is not a code the sender means them to use.
 */
function hiddenCodeKeys(page: Page | null): ReadonlySet<string> {
  if (page === null || page.hiddenText === '') return NO_KEYS;
  const shown = codeKeysIn(page.text);
  const hidden = new Set<string>();
  for (const key of codeKeysIn(page.hiddenText)) if (!shown.has(key)) hidden.add(key);
  return hidden;
}
const NO_KEYS: ReadonlySet<string> = new Set();

/** The keys of the code-shaped tokens of a text, at most MAX_CODE_CANDIDATES. */
function codeKeysIn(text: string): Set<string> {
  const keys = new Set<string>();
  for (let lineStart = 0; lineStart <= text.length && keys.size < MAX_CODE_CANDIDATES; ) {
    const newline = text.indexOf('\n', lineStart);
    const lineEnd = newline === -1 ? text.length : newline;
    const line = text.slice(lineStart, lineEnd);
    for (const token of tokensOf(line)) {
      keys.add(line.slice(token.start, token.end).replace(/[ -]/g, ''));
      if (keys.size >= MAX_CODE_CANDIDATES) break;
    }
    lineStart = lineEnd + 1;
  }
  return keys;
}

function findCodes(subject: string, bodies: (string | null)[], hiddenKeys: ReadonlySet<string>): ExtractedCode[] {
  const subjectCues = cuesIn(subject);
  const found = new Map<string, CodeCandidate>();
  const keep = (candidate: CodeCandidate) => {
    if (hiddenKeys.has(candidate.key)) return;
    const seen = found.get(candidate.key);
    if (seen === undefined || candidate.score > seen.score) found.set(candidate.key, candidate);
  };
  let order = 0;
  const budget = { left: MAX_CODE_CANDIDATES };
  if (subject !== '') {
    for (const c of codesInLine(subject, () => '', NO_CUES, budget)) keep({ ...c, order: order++ });
  }
  for (const body of bodies) {
    if (body === null) continue;
    budget.left = MAX_CODE_CANDIDATES;
    for (const c of codesInBody(body, subjectCues, budget)) keep({ ...c, order: order++ });
  }
  return [...found.values()]
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, MAX_CODES)
    .map(({ value, context }) => ({ value, context }));
}

function* codesInBody(body: string, subjectCues: CueScore, budget: { left: number }): Generator<Omit<CodeCandidate, 'order'>> {
  for (let lineStart = 0; lineStart <= body.length && budget.left > 0; ) {
    const newline = body.indexOf('\n', lineStart);
    const lineEnd = newline === -1 ? body.length : newline;
    const start = lineStart;
    let preceding: string | null = null; // looked up for the lines that have a candidate only
    yield* codesInLine(body.slice(start, lineEnd), () => (preceding ??= precedingLine(body, start)), subjectCues, budget);
    lineStart = lineEnd + 1;
  }
}

/** Candidates of one line that pass the threshold; `preceding` gives the line before. */
function* codesInLine(line: string, preceding: () => string, subjectCues: CueScore, budget: { left: number }): Generator<Omit<CodeCandidate, 'order'>> {
  let precedingCues: CueScore | null = null;
  for (const token of tokensOf(line)) {
    if (budget.left <= 0) return;
    budget.left--;
    if (!plausibleToken(line, token)) continue;
    const before = sentenceBefore(line, token.start);
    const after = sentenceAfter(line, token.end);
    const own = cuesIn(`${before} ${after}`);
    const value = line.slice(token.start, token.end);
    if (token.digits && isYearLike(value) && !own.strong) continue;
    const precedingText = preceding();
    precedingCues ??= cuesIn(precedingText);
    const leads = !hasLetter(before);
    const alone = leads && !/[\p{L}\p{N}]/u.test(after);
    const score =
      own.score +
      (leads ? LEADING : INSIDE).preceding * precedingCues.score +
      (leads ? LEADING : INSIDE).subject * subjectCues.score +
      (alone ? ALONE_BONUS : 0) +
      (/#\s*$/.test(line.slice(Math.max(0, token.start - 2), token.start)) ? NUMBER_SIGN_PENALTY : 0);
    if (score < CODE_THRESHOLD || !(own.strong || precedingCues.strong || subjectCues.strong)) continue;
    yield { value, key: value.replace(/[ -]/g, ''), score, context: codeContext(line, token, alone ? precedingText : '') };
  }
}

/**
 * The code-shaped tokens of a line, in one pass: runs of ASCII letters and digits, and runs of
 * digits joined by single separators ("482 913", "2024-03-05", "1,234.56", "12:30"), which are
 * one number each and are candidates only when they have the shape of a code. A short upper-case
 * prefix joined by a dash ("G-483920") is kept with its digits, as printed.
 */
function* tokensOf(line: string): Generator<Token> {
  const n = line.length;
  let k = 0;
  while (k < n) {
    if (!isAsciiAlnum(line.charCodeAt(k))) {
      k++;
      continue;
    }
    const start = k;
    let letters = 0;
    let lower = 0;
    while (k < n && isAsciiAlnum(line.charCodeAt(k))) {
      const c = line.charCodeAt(k++);
      if (isLower(c)) lower++;
      if (!isDigit(c)) letters++;
    }
    const length = k - start;
    if (letters === length && lower === 0 && length <= 4 && line.charCodeAt(k) === 0x2d && isDigit(line.charCodeAt(k + 1))) {
      const number = readNumber(line, k + 1);
      k = number.end;
      if (number.groups.length === 1 && isCodeShaped(number.groups, '')) yield { start, end: k, digits: true };
      continue;
    }
    if (letters > 0) {
      if (lower === 0 && length >= 5 && length <= 10 && length - letters >= 2) yield { start, end: k, digits: false };
      continue;
    }
    const number = readNumber(line, start);
    k = number.end;
    if (isCodeShaped(number.groups, number.separators)) yield { start, end: k, digits: true };
  }
}

/**
 * The number starting at `from` (a digit): its digit groups and the separators between them, and
 * where it ends. A number running into letters ("3rd", "2048px") has no groups: it is no code, and
 * neither is its tail.
 */
function readNumber(line: string, from: number): { end: number; groups: number[]; separators: string } {
  const n = line.length;
  let k = from;
  while (k < n && isDigit(line.charCodeAt(k))) k++;
  const groups = [k - from];
  let separators = '';
  while (k + 1 < n && isNumberSeparator(line.charCodeAt(k)) && isDigit(line.charCodeAt(k + 1))) {
    let g = k + 1;
    while (g < n && isDigit(line.charCodeAt(g))) g++;
    if (g < n && isAsciiLetter(line.charCodeAt(g))) break; // "482913 2nd" is not one number
    separators += line[k];
    groups.push(g - k - 1);
    k = g;
  }
  if (k < n && isAsciiLetter(line.charCodeAt(k))) {
    while (k < n && isAsciiAlnum(line.charCodeAt(k))) k++;
    return { end: k, groups: [], separators };
  }
  return { end: k, groups, separators };
}

const isNumberSeparator = (c: number) => c === 0x20 || c === 0x2d || c === 0x2e || c === 0x2f || c === 0x3a || c === 0x2c;

function isCodeShaped(groups: number[], separator: string): boolean {
  if (groups.length === 0) return false;
  if (groups.length === 1) return groups[0] >= 4 && groups[0] <= 8;
  return groups.length === 2 && (separator === ' ' || separator === '-') && groups.every((g) => g >= 3 && g <= 4);
}

const isYear = (value: string) => value.length === 4 && (value.startsWith('19') || value.startsWith('20'));
/** "2019", or a span of years "1996-2025". */
const isYearLike = (value: string) => value.split(/[ -]/).every((group) => isYear(group) || !isDigit(group.charCodeAt(0)));

/** Rejects tokens whose neighbours make them an amount, a phone number, or part of a URL or address. */
function plausibleToken(line: string, token: Token): boolean {
  const before = line.slice(Math.max(0, token.start - 3), token.start);
  const after = line.slice(token.end, token.end + 2);
  if (/[$€£¥+]\s*$/.test(before) || /^\s?%/.test(after)) return false;
  if (/\d\)\s?$/.test(before)) return false; // "(555) 123-4567"
  if (/^[.,]\d/.test(after)) return false;
  // The whitespace-delimited word around it, within a bound: a URL, an email address or a query.
  const wordStart = lastSpaceBefore(line, token.start, 64);
  const wordEnd = firstSpaceAfter(line, token.end, 64);
  const word = line.slice(wordStart, wordEnd).toLowerCase();
  return !(word.includes('://') || word.includes('@') || word.includes('www.') || word.includes('='));
}

function lastSpaceBefore(s: string, from: number, max: number): number {
  let k = from;
  while (k > 0 && from - k < max && !/\s/.test(s[k - 1])) k--;
  return k;
}

function firstSpaceAfter(s: string, from: number, max: number): number {
  let k = from;
  while (k < s.length && k - from < max && !/\s/.test(s[k])) k++;
  return k;
}

/** The part of the sentence before `at`, within SENTENCE_BEFORE characters. */
function sentenceBefore(line: string, at: number): string {
  const window = line.slice(Math.max(0, at - SENTENCE_BEFORE), at);
  let cut = 0;
  for (let k = window.length - 1; k > 0; k--) {
    if (isSentenceEnd(window, k)) {
      cut = k + 1;
      break;
    }
  }
  return window.slice(cut);
}

/** The part of the sentence after `at`, within SENTENCE_AFTER characters. */
function sentenceAfter(line: string, at: number): string {
  return firstSentence(line.slice(at, at + SENTENCE_AFTER));
}

/** A sentence ends at ". " "! " "? " (or at the end of the window) and at CJK full stops. */
function isSentenceEnd(s: string, k: number): boolean {
  const c = s[k];
  if (c === '。' || c === '！' || c === '？' || c === '|') return true;
  return (c === '.' || c === '!' || c === '?') && (k + 1 === s.length || /\s/.test(s[k + 1]));
}

/** The words around a code on its line, at most MAX_CONTEXT_CHARS; a code alone on its line gets the line before. */
function codeContext(line: string, token: Token, precedingText: string): string {
  const from = Math.max(0, token.start - 70);
  const to = Math.min(line.length, token.end + 50);
  let context = collapse(withoutCutWords(line.slice(from, to), from > 0, to < line.length));
  if (precedingText !== '') {
    const room = MAX_CONTEXT_CHARS - context.length - 1;
    const lead = precedingText.length > room ? withoutCutWords(precedingText.slice(-room), true, false).trim() : precedingText;
    if (lead !== '') context = `${lead} ${context}`;
  }
  return clip(context, MAX_CONTEXT_CHARS);
}

/** `s` without the partial word at a cut start or end (the part before its first / after its last space). */
function withoutCutWords(s: string, cutStart: boolean, cutEnd: boolean): string {
  if (cutEnd) {
    const space = s.lastIndexOf(' ');
    if (space !== -1) s = s.slice(0, space);
  }
  if (cutStart) {
    const space = s.indexOf(' ');
    if (space !== -1) s = s.slice(space + 1);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Links

interface LinkCandidate {
  url: string;
  text: string | null;
  kind: LinkKind;
  order: number;
}

/** Output order of kinds (spec'd): the actions first, unsubscribe last. */
const OUTPUT_RANK: Record<LinkKind, number> = { verification: 0, magic_link: 1, password_reset: 2, other: 3, unsubscribe: 4 };
/** Which links survive MAX_LINKS: an unsubscribe link outranks the dozens of other links of a newsletter. */
const KEEP_RANK: Record<LinkKind, number> = { verification: 0, magic_link: 1, password_reset: 2, unsubscribe: 3, other: 4 };

function findLinks(subject: string, text: string | null, page: Page | null, listUnsubscribe: string | null): ExtractedLink[] {
  const found = new Map<string, LinkCandidate>();
  const signInMail = SIGN_IN_WORDS.test(subject.toLowerCase()) || MAGIC_LINK_WORDS.test(subject.toLowerCase());
  /** Records a sighting of a URL; `classify` runs only when the sighting can still change its kind. */
  const add = (url: string, text: string | null, kindOf: () => LinkKind, order: number) => {
    // A link into this machine or a private network (svc's own loopback API among them) is never an action to take.
    // So is a tracking redirect whose destination (a URL in its query) points inward.
    const classify = (): LinkKind => {
      const destination = wrappedUrl(url);
      return pointsInward(url) || (destination !== null && pointsInward(destination)) ? 'other' : kindOf();
    };
    const seen = found.get(url);
    if (seen === undefined) {
      if (found.size < MAX_LINK_CANDIDATES) found.set(url, { url, text, kind: classify(), order });
      return;
    }
    // The first anchor text stays; a later sighting may still tell what the link does.
    seen.text ??= text;
    seen.order = Math.min(seen.order, order);
    if (seen.kind === 'other') seen.kind = classify();
  };
  // Document order: the anchors, then the text's URLs (from 1,000,000), then the header's (from 2,000,000).
  for (const url of listUnsubscribeUrls(listUnsubscribe)) add(url, null, () => 'unsubscribe', 2_000_000 + found.size);
  if (page !== null) {
    page.anchors.forEach((anchor, i) => {
      const url = linkUrl(anchor.href);
      if (url === null) return;
      const text = anchorText(page.text, anchor);
      add(url, text, () => classifyLink(url, text, anchor.alt, () => anchorSurroundings(page, i), signInMail), i);
    });
  }
  const hiddenUrls = page === null ? NO_KEYS : hiddenLinkUrls(page);
  if (text !== null) {
    let i = 0;
    for (const bare of bareUrls(text)) {
      if (i >= MAX_ANCHORS) break;
      if (hiddenUrls.has(bare.url)) continue;
      add(bare.url, null, () => classifyLink(bare.url, null, '', () => bareUrlSurroundings(text, bare.start, bare.previousEnd), signInMail), 1_000_000 + i++);
    }
  }
  return [...found.values()]
    .sort((a, b) => KEEP_RANK[a.kind] - KEEP_RANK[b.kind] || a.order - b.order)
    .slice(0, MAX_LINKS)
    .sort((a, b) => OUTPUT_RANK[a.kind] - OUTPUT_RANK[b.kind] || a.order - b.order)
    .map(({ url, text, kind }) => ({ url, text, kind }));
}

/**
 * The URLs the HTML shows only hidden (the hrefs of hidden anchors, the URLs written in hidden
 * text): a text part may carry them (see hiddenCodeKeys), but they are not links to follow.
 */
function hiddenLinkUrls(page: Page): ReadonlySet<string> {
  if (page.hiddenText === '' && page.hiddenHrefs.length === 0) return NO_KEYS;
  const shown = new Set<string>();
  for (const anchor of page.anchors) {
    const url = linkUrl(anchor.href);
    if (url !== null) shown.add(url);
  }
  let counted = 0;
  for (const bare of bareUrls(page.text)) {
    if (++counted > MAX_ANCHORS) break;
    shown.add(bare.url);
  }
  const hidden = new Set<string>();
  const hide = (url: string | null) => {
    if (url !== null && !shown.has(url)) hidden.add(url);
  };
  for (const href of page.hiddenHrefs) hide(linkUrl(href));
  counted = 0;
  for (const bare of bareUrls(page.hiddenText)) {
    if (++counted > MAX_ANCHORS) break;
    hide(bare.url);
  }
  return hidden;
}

/**
 * Whether an http(s) link points at this machine or a private network: a loopback, private,
 * link-local or unspecified address however written (`http://2130706433/` is 127.0.0.1), a
 * localhost name, a single-label or local-only name (src/core/internal-addresses.ts). One that
 * does not parse as a URL opens nothing, and counts as inward too.
 */
function pointsInward(url: string): boolean {
  if (!/^https?:/i.test(url)) return false;
  try {
    return isInternalHost(new URL(url).hostname);
  } catch {
    return true;
  }
}

/** The URL of an href when it is an absolute http(s) URL of a sane length, else null (javascript:, data:, relative…). */
function linkUrl(href: string): string | null {
  // Browsers drop tabs and newlines inside URLs and trim the ends.
  const url = href.replace(/[\t\n\r]/g, '').trim();
  if (url.length > MAX_URL_CHARS || !/^https?:\/\/[^/?#\s]/i.test(url) || !url.isWellFormed()) return null;
  for (let k = 0; k < url.length; k++) {
    const c = url.charCodeAt(k);
    if (c <= 0x20 || c === 0x7f) return null;
  }
  return url;
}

function anchorText(pageText: string, anchor: Anchor): string | null {
  // The rendered text is already collapsed, so a few times the returned length is plenty to read.
  const text = collapse(pageText.slice(anchor.textStart, Math.min(anchor.textEnd, anchor.textStart + 4 * MAX_ANCHOR_TEXT_CHARS)));
  return text === '' ? null : clip(text, MAX_ANCHOR_TEXT_CHARS).trim();
}

/** The words of the anchor's sentence between its neighbours, else the last sentence of the line before. */
function anchorSurroundings(page: Page, i: number): string {
  const { textStart, textEnd, endsLine } = page.anchors[i];
  const previousEnd = i > 0 ? page.anchors[i - 1].textEnd : 0;
  const nextStart = i + 1 < page.anchors.length ? page.anchors[i + 1].textStart : page.text.length;
  const before = lastSentence(page.text.slice(Math.max(previousEnd, lineStartBefore(page.text, textStart), textStart - LINK_CONTEXT_CHARS), textStart));
  let after = endsLine ? '' : page.text.slice(textEnd, Math.min(nextStart, textEnd + LINK_CONTEXT_CHARS));
  const newline = after.indexOf('\n');
  if (newline !== -1) after = after.slice(0, newline);
  after = firstSentence(after);
  const words = `${before} ${after}`;
  return hasLetter(words) ? words : lastSentence(precedingLine(page.text, lineStartBefore(page.text, textStart)));
}

/** The words of a bare URL's sentence before it (after any earlier URL), else the last sentence of the line before. */
function bareUrlSurroundings(text: string, start: number, previousEnd: number): string {
  const lineStart = lineStartBefore(text, start);
  const before = lastSentence(text.slice(Math.max(previousEnd, lineStart, start - LINK_CONTEXT_CHARS), start));
  return hasLetter(before) ? before : lastSentence(precedingLine(text, lineStart));
}

/** What follows the last sentence end of `s` (a final full stop does not count). */
function lastSentence(s: string): string {
  const end = s.trimEnd().length - 1;
  for (let k = end - 1; k > 0; k--) {
    if (isSentenceEnd(s, k)) return s.slice(k + 1);
  }
  return s;
}

/** What precedes the first sentence end of `s`. */
function firstSentence(s: string): string {
  for (let k = 0; k < s.length; k++) {
    if (isSentenceEnd(s, k)) return s.slice(0, k);
  }
  return s;
}

interface BareUrl {
  url: string;
  start: number;
  previousEnd: number;
}

/** The http(s) URLs written out in a text, each found by one forward search. */
function* bareUrls(text: string): Generator<BareUrl> {
  let previousEnd = 0;
  for (let colon = text.indexOf('://'); colon !== -1; colon = text.indexOf('://', colon + 3)) {
    const start = schemeStart(text, colon);
    if (start === -1) continue;
    let end = colon + 3;
    while (end < text.length && !endsUrl(text.charCodeAt(end))) end++;
    end = withoutTrailingPunctuation(text, start, end);
    const url = end - start <= MAX_URL_CHARS ? linkUrl(text.slice(start, end)) : null;
    if (url !== null) yield { url, start, previousEnd };
    previousEnd = end;
    colon = Math.max(colon, end - 3);
  }
}

/** Where "http" or "https" starts before the "://" at `colon`, when it is a word of its own; else -1. */
function schemeStart(text: string, colon: number): number {
  for (const scheme of ['https', 'http']) {
    const start = colon - scheme.length;
    if (start < 0 || text.slice(start, colon).toLowerCase() !== scheme) continue;
    return start > 0 && isAsciiAlnum(text.charCodeAt(start - 1)) ? -1 : start;
  }
  return -1;
}

/** Sentence punctuation after a URL is not part of it; a ')' is when the URL opened one. */
function withoutTrailingPunctuation(text: string, start: number, end: number): number {
  const opensParenthesis = text.slice(start, end).includes('(');
  while (end > start) {
    const c = text[end - 1];
    if ((c === ')' && opensParenthesis) || !'.,;:!?)]\'}*'.includes(c)) break;
    end--;
  }
  return end;
}

/** The URLs of a List-Unsubscribe header: each `<…>` that is http(s) or mailto. */
function listUnsubscribeUrls(header: string | null): string[] {
  if (header === null) return [];
  const urls: string[] = [];
  for (let open = header.indexOf('<'); open !== -1; open = header.indexOf('<', open + 1)) {
    const close = header.indexOf('>', open + 1);
    if (close === -1) break;
    const value = header.slice(open + 1, close).replace(/\s+/g, '');
    if (/^mailto:[^@\s]+@[^@\s]+$/i.test(value) && value.isWellFormed()) urls.push(value);
    else {
      const url = linkUrl(value);
      if (url !== null) urls.push(url);
    }
    open = close;
  }
  return urls;
}

// ---------------------------------------------------------------------------------------------
// Link kinds

const UNSUBSCRIBE_WORDS =
  /unsubscri|opt[- ]?out|(?:manage|update|change|edit) (?:your |my )?(?:email |e-mail |mail |subscription |notification |communication )?preferences|(?:email|e-mail|subscription|mailing) preferences|stop receiving|no longer (?:wish|want) to receive|list-unsubscribe|abbestellen|abmelden|darse de baja|date de baja|cancelar (?:la |tu )?suscripci|désabonner|désinscri|disiscriviti/u;
const PASSWORD_RESET_WORDS =
  /(?:reset|recover|forgot|forgotten|change|choose|create|set) (?:a |your |my )?(?:new )?password|password (?:reset|recovery|change)|new password|passwort (?:zurücksetzen|ändern|vergessen)|neues passwort|(?:restablecer|cambiar|recuperar) (?:tu |su |la )?contraseña|réinitialiser (?:votre |le )?mot de passe/u;
const MAGIC_LINK_WORDS =
  /magic[- ]?link|(?:sign|log)[- ]?in link|login link|click (?:here )?to (?:sign|log) ?in|one[- ]click (?:login|log[- ]?in|sign[- ]?in)|(?:confirm|approve|verify) (?:your |this )?(?:sign|log)[- ]?in|(?:sign|log) (?:me )?in (?:now|instantly)|anmeldelink|enlace (?:de inicio de sesión|mágico)/u;
const VERIFICATION_WORDS = /verif|vérif|confirm|activat|activar|activer|aktivier|validat|bestätig|conferma|confirma/u;
/** Confirming an order, a booking or a payment is not verifying an address. */
const TRANSACTION_WORDS = /order|booking|reservation|purchase|invoice|receipt|payment|delivery|shipment|appointment|attendance|rsvp|pedido|bestellung|buchung|reserva/u;
const SIGN_IN_WORDS = /sign[- ]?in|log[- ]?in|anmelden|einloggen|iniciar sesión|inicia sesión|se connecter|connexion|accedi/u;
/** Anchor texts that say nothing of what the link does, so the URL and the surrounding words decide. */
const GENERIC_TEXTS = new Set([
  '', 'here', 'click here', 'click', 'tap here', 'press here', 'this link', 'link', 'the link', 'follow this link', 'open link', 'open',
  'button', 'go', 'continue', 'get started', 'let’s go', "let's go", 'hier', 'hier klicken', 'klicken sie hier', 'aquí', 'haz clic aquí',
  'haga clic aquí', 'pulsa aquí', 'ici', 'cliquez ici', 'qui', 'clicca qui',
]);

/**
 * The kind of a link, from the first of these that says anything:
 * 1. its anchor text (and image alt text): unsubscribe / manage preferences → unsubscribe; reset or
 *    forgot password → password_reset; magic link, sign-in link, "click to sign in" → magic_link;
 *    verify, confirm, activate, validate (not of an order, booking or payment) → verification;
 *    "sign in" / "log in" → magic_link only when the URL has a token and the subject is about signing in;
 * 2. its URL path and query (never the host): unsubscribe/opt-out/preferences → unsubscribe; the
 *    others (reset-password, magic, verify|confirm|activate|validate, login|signin|auth + token)
 *    only when the URL carries a token, as a help article about verifying does not;
 * 3. for a link whose text says nothing ("click here", an image, a bare URL): the words of its
 *    sentence, else of the line before, with the rules of 1.
 */
function classifyLink(url: string, text: string | null, alt: string, surroundings: () => string, signInMail: boolean): LinkKind {
  const tokenish = hasToken(url);
  // A sign-in URL with its credential (…/auth/magic?token=…) makes "Sign in to Acme" the action
  // itself, whatever the subject says; so does one wrapped in a tracking redirect.
  const destination = wrappedUrl(url);
  const signInAction = isSignInAction(url) || (destination !== null && isSignInAction(destination));
  const signInConfirmed = (tokenish && signInMail) || signInAction;
  const label = `${text ?? ''} ${alt}`.trim().toLowerCase();
  const fromLabel = kindFromWords(label, signInConfirmed);
  if (fromLabel !== null) return fromLabel;
  const generic = isGenericText(text, url) && isGenericText(alt, url);
  const fromUrl = kindFromUrl(url, signInAction);
  // A help article may have "verify" in its path; an action link carries a token.
  if (fromUrl === 'unsubscribe' || (fromUrl !== null && (tokenish || signInAction))) return fromUrl;
  if (!generic) return 'other';
  return kindFromWords(surroundings().toLowerCase(), signInConfirmed) ?? 'other';
}

/** A path segment that names signing in (…/auth/…, /login/, /sign-in/, /verify/, /magic/…). */
const SIGN_IN_SEGMENT = /\/(?:auth|authenticate|login|log-in|log_in|signin|sign-in|sign_in|verify|magic|magic-link|magiclink|passwordless|sso|session|sessions)(?=[/?#.]|$)/;
/** A query parameter that carries a sign-in credential, with a value of at least 6 characters. */
const CREDENTIAL_PARAM = /[?&](?:token|code|key|otp|magic|login_token|auth_token|access_token|signin_token|ticket|nonce|sig|signature)=[^&#]{6}/;

/**
 * Whether the URL is a sign-in action rather than the sign-in page: a sign-in segment in its path
 * and a credential with it (a named parameter, or a token in the path itself). A query that only
 * carries a redirect (`/login?next=%2Fdoc%2F4f2a…`) is the page.
 */
function isSignInAction(url: string): boolean {
  const rest = pathAndQuery(url).toLowerCase();
  const query = rest.search(/[?#]/);
  const path = query === -1 ? rest : rest.slice(0, query);
  if (!SIGN_IN_SEGMENT.test(path)) return false;
  return CREDENTIAL_PARAM.test(rest) || hasToken(`x://h${path}`);
}

/** Query parameter values that hold the real destination of a tracking redirect. */
const WRAPPED_URL = /[?&][a-z_]{1,12}=(https?(?::|%3a)(?:\/\/|%2f%2f)[^&#]{1,2000})/i;

/** The destination a tracking redirect wraps (`https://t.example/r?url=https%3A%2F%2F…`), decoded, or null. */
function wrappedUrl(url: string): string | null {
  const m = WRAPPED_URL.exec(pathAndQuery(url));
  if (m === null) return null;
  try {
    const inner = decodeURIComponent(m[1]);
    return /^https?:\/\/[^/?#\s]/i.test(inner) ? inner : null;
  } catch {
    return null;
  }
}

function kindFromWords(words: string, signInConfirmed: boolean): LinkKind | null {
  if (!hasLetter(words)) return null;
  if (UNSUBSCRIBE_WORDS.test(words)) return 'unsubscribe';
  if (PASSWORD_RESET_WORDS.test(words)) return 'password_reset';
  if (MAGIC_LINK_WORDS.test(words)) return 'magic_link';
  if (VERIFICATION_WORDS.test(words) && !TRANSACTION_WORDS.test(words)) return 'verification';
  // "Log in" is a magic link only when the mail is about signing in and the URL carries a token;
  // otherwise it is the footer link to the sign-in page.
  if (signInConfirmed && SIGN_IN_WORDS.test(words)) return 'magic_link';
  return null;
}

function isGenericText(text: string | null, url: string): boolean {
  if (text === null) return true;
  const t = trimSymbols(text.toLowerCase());
  // A URL written out as its own text ("example.com/verify?t=…") says no more than the URL.
  return GENERIC_TEXTS.has(t) || t.startsWith('http') || t.startsWith('www.') || (!/\s/.test(t) && /[./]/.test(t) && url.toLowerCase().includes(t));
}

/** `s` without the punctuation, arrows and emoji at its ends ("Verify →", "» Click here"). */
function trimSymbols(s: string): string {
  let from = 0;
  let to = s.length;
  while (from < to && !/[\p{L}\p{N}]/u.test(s[from])) from++;
  while (to > from && !/[\p{L}\p{N}]/u.test(s[to - 1])) to--;
  return s.slice(from, to);
}

/** The kind a URL's path and query speak for (the host is the sender's, not the action's). */
function kindFromUrl(url: string, signInAction: boolean): LinkKind | null {
  const rest = pathAndQuery(url).toLowerCase();
  if (/unsub|opt[-_]?out|email[-_]?preferences|\/preferences|list-manage/.test(rest)) return 'unsubscribe';
  if (/(?:reset|forgot|recover)[-_/]?(?:your[-_/]?)?password|password[-_/]?(?:reset|forgot|recover)|\/reset(?:[/?#]|$)/.test(rest)) return 'password_reset';
  if (/magic[-_]?link|magiclink|\/magic(?:[-_/?#]|$)/.test(rest)) return 'magic_link';
  if (/verif|confirm|activat|validat/.test(rest) && !/order|booking|reservation|purchase|invoice|receipt|payment/.test(rest)) return 'verification';
  // Not a token anywhere (a redirect back to a document has one): the credential of a sign-in path.
  if (signInAction || (hasToken(url) && /(?:^|[^a-z])(?:passwordless|otp)(?:[^a-z]|$)/.test(rest))) return 'magic_link';
  return null;
}

function pathAndQuery(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme === -1) return '';
  let k = scheme + 3;
  while (k < url.length && url[k] !== '/' && url[k] !== '?' && url[k] !== '#') k++;
  return url.slice(k);
}

/** Whether the path or query carries a token: a run of 16+ letters, digits, '-' and '_' mixing letters and digits. */
function hasToken(url: string): boolean {
  const rest = pathAndQuery(url);
  let run = 0;
  let letters = 0;
  let digits = 0;
  for (let k = 0; k <= rest.length; k++) {
    const c = k < rest.length ? rest.charCodeAt(k) : 0;
    if (isAsciiAlnum(c) || c === 0x2d || c === 0x5f) {
      run++;
      if (isDigit(c)) digits++;
      else if (c !== 0x2d && c !== 0x5f) letters++;
      continue;
    }
    if (run >= 16 && letters > 0 && digits > 0) return true;
    run = letters = digits = 0;
  }
  return false;
}

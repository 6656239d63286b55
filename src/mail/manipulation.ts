/**
 * An advisory verdict on whether a received message tries to manipulate the AI agent reading it:
 * text a human does not see but a model does, instructions addressed to an AI, chat-template and
 * tool-call syntax, invisible Unicode, and a sender domain imitating one the inbox corresponds
 * with. It only flags; what to do with a flagged message is the agent's and the owner's call.
 *
 * Rules:
 * - Everything here comes from strangers. Each input is cut to a bound first (MAX_SCANNED_CHARS of
 *   each body, MAX_SUBJECT_CHARS of the subject, MAX_KNOWN_DOMAINS known domains of at most
 *   MAX_DOMAIN_CHARS), every pass over it is a forward index loop, and the only regular
 *   expressions run on windows of WINDOW_CHARS with bounded repetition. Local only: no lookups.
 * - It never throws: malformed HTML, unterminated tags, quotes, comments and styles, NUL bytes and
 *   lone surrogates all give whatever was found up to that point.
 * - hidden_text: text inside an element hidden by its inline style (display:none,
 *   visibility:hidden, a zero font size, opacity 0, a zero height or width with overflow hidden,
 *   an off-screen position or indent, text coloured like its background) or the `hidden`
 *   attribute counts when it says something to an AI (rules below), or when more than
 *   LONG_HIDDEN_CHARS visible characters of it are not also shown: a newsletter's short hidden
 *   preheader, a spacer cell or a hidden tracking pixel is not flagged. Comments, <title>,
 *   <style> and <script> are not hidden text, but instructions in them are hidden from the
 *   human, so they count too.
 * - ai_instructions / prompt_syntax: fixed phrase shapes that address an AI in the imperative
 *   ("ignore previous instructions", "if you are an AI…", "do not tell the user") and the exact
 *   tokens of chat templates and tool calls, in the subject, the bodies, hidden text, comments
 *   and text spelled with Unicode tag characters. Mentioning AI is not addressing one.
 * - invisible_unicode: tag characters (not an emoji flag's), bidi overrides, embeddings and
 *   isolates (not around right-to-left text), and zero-width runs inside a word.
 * - lookalike_sender: an unknown sender domain that a known one differs from by a character or
 *   two, by confusable characters, by an added hyphenated word, or by its suffix.
 * - A detail shows at most MAX_EVIDENCE_CHARS of evidence with invisible characters as U+XXXX,
 *   and is at most MAX_DETAIL_CHARS long.
 */
import { closingTagAt, readTag, type RawTag } from './html-tags.js';
import { domainToASCII, domainToUnicode } from 'node:url';

/** Characters of each body (text, HTML) scanned: an attack aimed at a model sits where a model reads. */
export const MAX_SCANNED_CHARS = 256 * 1024;
/** Characters of the subject read; a longer value is not a real header's. */
const MAX_SUBJECT_CHARS = 2_048;
/** Known domains compared with the sender's: the first ones given; an inbox corresponds with fewer. */
const MAX_KNOWN_DOMAINS = 500;
/** Characters of a domain name (RFC 1035); a longer value is ignored. */
const MAX_DOMAIN_CHARS = 253;
/** Characters of a DNS label; a longer one is no real name, so it is not compared by edit distance. */
const MAX_LABEL_CHARS = 63;
/** Characters of a finding's detail, and of the evidence quoted in it. */
const MAX_DETAIL_CHARS = 160;
const MAX_EVIDENCE_CHARS = 60;
/**
 * Visible characters of hidden text (not also shown) above which it is flagged without saying
 * anything to an AI: a preheader stays under ~150, spacer cells and tracking pixels have none.
 */
const LONG_HIDDEN_CHARS = 200;
/** The windows phrases are matched on: a phrase of up to WINDOW_CHARS - WINDOW_STEP characters lies whole in one. */
const WINDOW_CHARS = 500;
const WINDOW_STEP = 400;
/** Zero-width characters in a row inside a word that are flagged; one alone is ordinary (ZWJ, ZWNJ). */
const ZERO_WIDTH_RUN = 4;
/** A run this long mixing zero-width characters encodes bits, wherever it stands (not in hidden HTML). */
const ZERO_WIDTH_CODE_RUN = 8;
/** An element positioned or indented at least this far left or up is off-screen. */
const OFF_SCREEN_PX = -1000;
/** Open elements tracked; deeper ones merge into the deepest, so nesting cannot grow the stack. */
const MAX_OPEN_ELEMENTS = 512;
/** Open elements looked through for an implied end (`<td>` ends the open cell); real nesting is shallow. */
const IMPLIED_END_SEARCH = 32;
/** Separate stretches of hidden text kept; more are appended to the last one. */
const MAX_HIDDEN_RUNS = 1_000;
/** Characters of Unicode tag text decoded and read for instructions. */
const MAX_TAG_TEXT_CHARS = 2_048;

export type ManipulationReason = 'hidden_text' | 'ai_instructions' | 'prompt_syntax' | 'invisible_unicode' | 'lookalike_sender';
export interface ManipulationFinding {
  reason: ManipulationReason;
  detail: string;
}
export interface ManipulationVerdict {
  suspicious: boolean;
  findings: ManipulationFinding[];
}
export interface ManipulationSource {
  subject: string | null;
  text: string | null;
  html: string | null;
  /** The sender's domain, lower-case (from the From address), or null. */
  senderDomain: string | null;
  /** Domains this inbox already corresponds with (lower-case, at most a few hundred). */
  knownDomains: readonly string[];
}

/** Order of findings in a verdict. */
const REASONS: ManipulationReason[] = ['hidden_text', 'ai_instructions', 'prompt_syntax', 'invisible_unicode', 'lookalike_sender'];

export function assessManipulation(source: ManipulationSource): ManipulationVerdict {
  try {
    const found = new Map<ManipulationReason, string>();
    // The first evidence of a reason is kept; the checks run strongest first.
    const note = (reason: ManipulationReason, detail: string) => {
      if (!found.has(reason)) found.set(reason, finishDetail(detail));
    };
    const subject = bounded(source?.subject, MAX_SUBJECT_CHARS);
    const text = bounded(source?.text, MAX_SCANNED_CHARS);
    const html = bounded(source?.html, MAX_SCANNED_CHARS);
    const page = html === null ? null : renderHtml(html);

    if (page !== null) assessPage(page, note);
    const hiddenText = page === null ? null : page.hidden.map((r) => r.text).join('\n');
    const tagText = [subject, text, html, page?.visible ?? null, hiddenText].map((s) => (s === null ? '' : tagCharacterText(s))).join('\n').slice(0, MAX_TAG_TEXT_CHARS);
    const readings: [string | null, string][] = [
      [tagText, 'text spelled in Unicode tag characters'],
      [subject, 'the subject'],
      [text, 'the text body'],
      [page?.visible ?? null, 'the HTML body'],
    ];
    for (const [s, where] of readings) {
      if (s === null || s === '' || (found.has('ai_instructions') && found.has('prompt_syntax'))) continue;
      const said = instructionsIn(readable(s));
      if (said.ai) note('ai_instructions', `addresses an AI in ${where}: ${quote(said.ai.evidence)}`);
      if (said.prompt) note('prompt_syntax', `chat-template or tool-call syntax in ${where}: ${quote(said.prompt.evidence)}`);
    }

    const invisible =
      (subject === null ? null : invisibleIn(subject, 'the subject', 'all')) ??
      (text === null ? null : invisibleIn(text, 'the text body', 'all')) ??
      (page === null ? null : invisibleIn(page.visible, 'the HTML body', 'all')) ??
      (hiddenText === null ? null : invisibleIn(hiddenText, 'hidden HTML text', 'in-word')) ??
      (html === null ? null : invisibleIn(html, 'the HTML source', 'none'));
    if (invisible !== null) note('invisible_unicode', invisible);

    const lookalike = lookalikeSender(source?.senderDomain, source?.knownDomains);
    if (lookalike !== null) note('lookalike_sender', lookalike);

    const findings = REASONS.filter((r) => found.has(r)).map((reason) => ({ reason, detail: found.get(reason) as string }));
    return { suspicious: findings.length > 0, findings };
  } catch {
    // Not expected from the code above; a safety net, because a message must never fail on this.
    return { suspicious: false, findings: [] };
  }
}

function bounded(value: unknown, max: number): string | null {
  return typeof value === 'string' ? value.slice(0, max) : null;
}

// ---------------------------------------------------------------------------------------------
// Characters

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isUpper = (c: number) => c >= 0x41 && c <= 0x5a;
const isLower = (c: number) => c >= 0x61 && c <= 0x7a;
const isAsciiAlnum = (c: number) => isDigit(c) || isUpper(c) || isLower(c);
/** Whitespace as text collapses it: ASCII, no-break and typographic spaces, line separators. */
const isSpace = (c: number) =>
  c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x85 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000;
const isZeroWidth = (c: number) => (c >= 0x200b && c <= 0x200d) || c === 0x2060 || c === 0xfeff;
const isBidiControl = (c: number) => (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
/**
 * Characters that render as nothing: zero-width and joiners, direction marks and controls, the
 * soft hyphen, the grapheme joiner and fillers, and the high half of a tag character (plane 14).
 */
const isInvisible = (c: number) =>
  c === 0 || c === 0xad || c === 0x34f || c === 0x61c || c === 0x115f || c === 0x1160 || c === 0x180e || c === 0x3164 || c === 0xffa0 ||
  (c >= 0x200b && c <= 0x200f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) || c === 0xfeff ||
  (c >= 0xfe00 && c <= 0xfe0f) || c === 0xdb40;
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;
/** The low half of a Unicode tag character U+E0000–U+E007F (its high half is U+DB40). */
const isTagLow = (c: number) => c >= 0xdc00 && c <= 0xdc7f;
const isRightToLeftLetter = (c: number) => (c >= 0x0590 && c <= 0x08ff) || (c >= 0xfb1d && c <= 0xfdff) || (c >= 0xfe70 && c <= 0xfefc);
/** A letter or digit, for "inside a word". */
function isWordChar(c: number): boolean {
  if (c < 0x80) return isAsciiAlnum(c);
  if (isSpace(c) || isInvisible(c) || isLowSurrogate(c)) return false;
  return isHighSurrogate(c) || /[\p{L}\p{N}\p{M}]/u.test(String.fromCharCode(c));
}

/** Characters a reader sees in `s`: not whitespace, not invisible (a surrogate pair counts once). */
function countShown(s: string): number {
  let shown = 0;
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (!isSpace(c) && !isInvisible(c) && !isLowSurrogate(c)) shown++;
  }
  return shown;
}

/**
 * Latin letters that Cyrillic and Greek letters look like, to read "ignоre" (Cyrillic о) as
 * "ignore" and "аpple" as "apple". Only letters that are near-identical in common fonts.
 */
const HOMOGLYPHS = new Map<number, number>(
  [
    'аa', 'вb', 'еe', 'ёe', 'кk', 'оo', 'рp', 'сc', 'уy', 'хx', 'іi', 'їi', 'јj', 'ѕs', 'һh', 'ԁd', 'ԛq', 'ԝw', 'ӏl', 'ɡg',
    'АA', 'ВB', 'ЕE', 'КK', 'МM', 'НH', 'ОO', 'РP', 'СC', 'ТT', 'УY', 'ХX', 'ІI', 'ЈJ', 'ЅS',
    'αa', 'βb', 'γy', 'εe', 'ιi', 'κk', 'νv', 'οo', 'ρp', 'τt', 'υu', 'χx', 'ωw',
    'ΑA', 'ΒB', 'ΕE', 'ΖZ', 'ΗH', 'ΙI', 'ΚK', 'ΜM', 'ΝN', 'ΟO', 'ΡP', 'ΤT', 'ΥY', 'ΧX',
    'ıi', 'ɑa', 'ɩi', 'ʟl', '‘\'', '’\'', '‚\'', '′\'', '“"', '”"', '„"', '″"',
  ].map((pair) => [pair.charCodeAt(0), pair.charCodeAt(1)]),
);

/**
 * `s` as a model reads it, for phrase matching: invisible characters and tag characters dropped,
 * whitespace collapsed to one space (a newline when the run had one), look-alike letters, curly
 * quotes and full-width forms folded to ASCII, and quote markers ("> ") dropped at line starts.
 * Every kept character maps to one, so it is never longer than `s`.
 */
function readable(s: string): string {
  const out = new Uint16Array(s.length);
  let n = 0;
  let pending = 0; // 0: none, 1: a space, 2: a newline
  let lineStart = true;
  for (let k = 0; k < s.length; k++) {
    let c = s.charCodeAt(k);
    if (c === 0xdb40 && isTagLow(s.charCodeAt(k + 1))) {
      k++;
      continue;
    }
    if (isInvisible(c)) continue;
    if (isSpace(c)) {
      if (c === 0x0a || c === 0x0d || c === 0x2028 || c === 0x2029) pending = 2;
      else if (pending === 0) pending = 1;
      continue;
    }
    if (pending === 2) lineStart = true;
    if (lineStart && c === 0x3e /* > */) continue;
    if (n > 0 && pending !== 0) out[n++] = pending === 2 ? 0x0a : 0x20;
    pending = 0;
    lineStart = false;
    if (c >= 0xff01 && c <= 0xff5e) c -= 0xfee0;
    else if (c >= 0x80) c = HOMOGLYPHS.get(c) ?? c; // every look-alike is outside ASCII
    out[n++] = c;
  }
  return fromCodes(out, n);
}

/**
 * UTF-16 code units as a string, decoded natively (spreading them into String.fromCharCode was
 * most of the check's time). A lone surrogate becomes U+FFFD, which matches no phrase either.
 * Typed arrays use the platform's byte order, little-endian on every platform Node supports.
 */
const UTF16 = new TextDecoder('utf-16le');
function fromCodes(codes: Uint16Array, length: number): string {
  return UTF16.decode(new Uint8Array(codes.buffer, codes.byteOffset, length * 2));
}

// ---------------------------------------------------------------------------------------------
// HTML: visible text, hidden text and unseen markup, in one forward pass

interface HiddenRun {
  text: string;
  /** Why its first strongly hidden piece is hidden ("display:none"…), else why it is weakly hidden. */
  reason: string;
  /** Hidden for sure; a weakly hidden run (white text on a page whose background is not known) counts only for instructions. */
  strong: boolean;
}
/** HTML as a reader sees it; also what src/mail/part-mismatch.ts compares a draft's text part with. */
export interface Page {
  /** The visible text: entities decoded, whitespace collapsed, a line per block, invisible characters kept. */
  visible: string;
  /** Stretches of hidden text, split where visible text comes between them. */
  hidden: HiddenRun[];
  /** Comments and the contents of <title>, <style>, <script>: never shown, but read by a model. */
  unseen: { where: string; text: string }[];
  /** The first element named like a tool call or system message (`<tool_call>`, `<system>`…), with what hides it. */
  promptElement: { name: string; hiding: string | null } | null;
}

interface Hiding {
  reason: string;
  strong: boolean;
}
interface Frame {
  name: string;
  /** Hidden by this element or an ancestor, which no descendant undoes (display:none, clipping…). */
  boxHiding: string | null;
  /** The font size is zero or about one pixel (a descendant may set it back). */
  tinyFont: boolean;
  /** The text colour, or TRANSPARENT, or null when none is set. */
  color: number | null;
  /** The nearest background colour, or null when none is set or the nearest is an image. */
  background: number | null;
  /** Some background is set on this element or an ancestor (so the page is not assumed white). */
  backgroundSet: boolean;
  /** What hides this element's own text, if anything. */
  text: Hiding | null;
}

const ROOT: Frame = { name: '', boxHiding: null, tinyFont: false, color: null, background: null, backgroundSet: false, text: null };

/** Elements that start a new line when rendered. */
const BLOCK_ELEMENTS = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'br', 'center', 'dd', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure',
  'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'html', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section',
  'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
]);
/** Elements without content, never pushed. */
const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
/** Elements whose content is not rendered text; their text is read for instructions only. */
const UNSEEN_CONTENT = new Map([
  ['title', 'the HTML <title>'], ['style', 'a <style> element'], ['script', 'a <script> element'], ['template', 'a <template> element'],
  ['xml', 'an <xml> element'],
]);
/** Element names that are tool-call or system-message syntax, not HTML. */
const PROMPT_ELEMENTS = new Set([
  'system', 'tool_call', 'tool_calls', 'function_call', 'function_calls', 'invoke', 'tool_use', 'tool_result', 'function_results',
  'tool_response', 'im_start', 'im_end',
]);
/** Start tags that end an open element (as browsers do), looking no further than the boundaries. */
const IMPLIED_ENDS = new Map<string, { ends: Set<string>; boundaries: Set<string> }>();
{
  const cell = { ends: new Set(['td', 'th']), boundaries: new Set(['tr', 'table']) };
  IMPLIED_ENDS.set('td', cell).set('th', cell);
  IMPLIED_ENDS.set('tr', { ends: new Set(['tr']), boundaries: new Set(['table', 'tbody', 'thead', 'tfoot']) });
  const section = { ends: new Set(['tbody', 'thead', 'tfoot']), boundaries: new Set(['table']) };
  IMPLIED_ENDS.set('tbody', section).set('thead', section).set('tfoot', section);
  IMPLIED_ENDS.set('li', { ends: new Set(['li']), boundaries: new Set(['ul', 'ol']) });
  const term = { ends: new Set(['dt', 'dd']), boundaries: new Set(['dl']) };
  IMPLIED_ENDS.set('dt', term).set('dd', term);
  IMPLIED_ENDS.set('option', { ends: new Set(['option']), boundaries: new Set(['select']) });
}
/** Start tags that end an open paragraph (HTML's list), unless another block lies between them. */
const ENDS_PARAGRAPH = new Set([
  'address', 'article', 'aside', 'blockquote', 'center', 'dd', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer', 'form',
  'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'table', 'ul',
]);
const PARAGRAPH_END = { ends: new Set(['p']), boundaries: new Set([...BLOCK_ELEMENTS].filter((name) => name !== 'p')) };

const NAMED_ENTITIES = new Map<string, string>([
  ['amp', '&'], ['lt', '<'], ['gt', '>'], ['quot', '"'], ['apos', "'"], ['nbsp', '\u00a0'], ['copy', '©'], ['reg', '®'], ['trade', '™'],
  ['hellip', '…'], ['mdash', '—'], ['ndash', '–'], ['lsquo', '‘'], ['rsquo', '’'], ['ldquo', '“'], ['rdquo', '”'], ['laquo', '«'],
  ['raquo', '»'], ['bull', '•'], ['middot', '·'], ['euro', '€'], ['pound', '£'], ['zwnj', '\u200c'], ['zwj', '\u200d'], ['shy', '\u00ad'],
  ['lrm', '\u200e'], ['rlm', '\u200f'], ['ensp', '\u2002'], ['emsp', '\u2003'], ['thinsp', '\u2009'], ['colon', ':'], ['semi', ';'],
  ['num', '#'], ['lpar', '('], ['rpar', ')'], ['vert', '|'], ['lsqb', '['], ['rsqb', ']'], ['lbrack', '['], ['rbrack', ']'],
]);

/** The entity at `at` (an `&`) decoded, or null when it is not one we know; reads at most a dozen characters. */
function decodeEntity(s: string, at: number, to: number): { text: string; end: number } | null {
  let p = at + 1;
  if (s.charCodeAt(p) === 0x23 /* # */) {
    p++;
    const hex = s.charCodeAt(p) === 0x78 || s.charCodeAt(p) === 0x58;
    if (hex) p++;
    const digitsStart = p;
    while (p < to && p - digitsStart < 8 && (isDigit(s.charCodeAt(p)) || (hex && /[a-fA-F]/.test(s[p])))) p++;
    if (p === digitsStart) return null;
    const cp = parseInt(s.slice(digitsStart, p), hex ? 16 : 10);
    // Browsers accept a numeric reference without its ';'.
    const end = s.charCodeAt(p) === 0x3b ? p + 1 : p;
    const valid = cp > 0 && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    return { text: valid ? String.fromCodePoint(cp) : '\ufffd', end };
  }
  const nameStart = p;
  while (p < to && p - nameStart < 10 && isAsciiAlnum(s.charCodeAt(p))) p++;
  if (s.charCodeAt(p) !== 0x3b) return null;
  const text = NAMED_ENTITIES.get(s.slice(nameStart, p)) ?? NAMED_ENTITIES.get(s.slice(nameStart, p).toLowerCase());
  return text === undefined ? null : { text, end: p + 1 };
}

/** s[from, to) with its entities decoded; reads no further than `to` (the text between two tags). Also read by src/mail/part-mismatch.ts. */
export function decodeText(s: string, from: number, to: number): string {
  let amp = from;
  while (amp < to && s.charCodeAt(amp) !== 0x26 /* & */) amp++;
  if (amp >= to) return s.slice(from, to);
  const parts: string[] = [];
  let run = from;
  for (; amp < to; amp++) {
    if (s.charCodeAt(amp) !== 0x26) continue;
    const entity = decodeEntity(s, amp, to);
    if (entity === null) continue;
    parts.push(s.slice(run, amp), entity.text);
    run = entity.end;
    amp = entity.end - 1;
  }
  parts.push(s.slice(run, to));
  return parts.join('');
}

/** Rendered text built piece by piece: whitespace collapsed to one space, block ends to one newline. */
class RenderedText {
  // Built by concatenation, not as an array of pieces to join: a part of 256 KiB has up to 128 Ki
  // pieces, and an array of them grown one by one made the collector's work grow faster than the part.
  private text = '';
  private pendingSpace = false;
  private atLineStart = true;

  /** Appends decoded text; returns how many characters a reader sees in it. */
  append(s: string): number {
    let shown = 0;
    let run = 0;
    for (let k = 0; k < s.length; k++) {
      const c = s.charCodeAt(k);
      if (isSpace(c)) {
        this.word(s.slice(run, k));
        this.pendingSpace = true;
        run = k + 1;
      } else if (!isInvisible(c) && !isLowSurrogate(c)) shown++;
    }
    this.word(s.slice(run));
    return shown;
  }

  space(): void {
    this.pendingSpace = true;
  }

  breakLine(): void {
    if (!this.atLineStart) this.text += '\n';
    this.atLineStart = true;
    this.pendingSpace = false;
  }

  toString(): string {
    return this.text;
  }

  private word(s: string): void {
    if (s === '') return;
    this.text += this.pendingSpace && !this.atLineStart ? ` ${s}` : s;
    this.pendingSpace = false;
    this.atLineStart = false;
  }
}

interface Tag {
  name: string;
  closing: boolean;
  style: string | null;
  bgcolor: string | null;
  color: string | null;
  hidden: boolean;
  /** Just past the `>`, or the input length when the tag never ends (it then swallows the rest, as in a browser). */
  end: number;
}

/** The attributes that can hide an element's text (src/mail/actions.ts reads them too). */
export const HIDING_ATTRIBUTES: ReadonlySet<string> = new Set(['style', 'bgcolor', 'color', 'hidden']);
/** A tag with what can hide its text, for HidingStack. */
export type HidingTag = Tag;
/** Characters of a colour attribute read: more is not a colour. */
const MAX_COLOR_ATTRIBUTE_CHARS = 64;

/** The tag starting at `lt` with the attributes that can hide its text (src/mail/html-tags.ts reads it). */
function tagAt(html: string, lt: number): Tag {
  return hidingTag(html, readTag(html, lt, HIDING_ATTRIBUTES, 7));
}

/** A tag read with (at least) HIDING_ATTRIBUTES, as HidingStack takes it. */
export function hidingTag(html: string, raw: RawTag): HidingTag {
  const span = (name: string) => raw.attributes.get(name) ?? null;
  const style = span('style');
  const colour = (name: string) => {
    const s = span(name);
    return s ? html.slice(s.start, Math.min(s.end, s.start + MAX_COLOR_ATTRIBUTE_CHARS)) : null;
  };
  return {
    name: raw.name,
    closing: raw.closing,
    style: style ? decodeText(html, style.start, style.end) : null,
    bgcolor: colour('bgcolor'),
    color: colour('color'),
    hidden: raw.attributes.has('hidden'),
    end: raw.end,
  };
}

/** One forward pass, linear in `html` whatever its nesting; the caller bounds its length. */
export function renderHtml(html: string): Page {
  const visible = new RenderedText();
  const hidden: { text: RenderedText; reason: string; strong: boolean }[] = [];
  let run: (typeof hidden)[number] | null = null;
  const unseen: { where: string; text: string }[] = [];
  const unseenByKind = new Map<string, string[]>();
  const keepUnseen = (where: string, text: string) => {
    if (!unseenByKind.has(where)) unseenByKind.set(where, []);
    (unseenByKind.get(where) as string[]).push(text);
  };
  let promptElement: Page['promptElement'] = null;
  let openSystem: { hiding: string | null } | null = null;

  const elements = new HidingStack();
  const appendText = (from: number, to: number) => {
    if (from >= to) return;
    const decoded = decodeText(html, from, to);
    const hiding = elements.textHiding();
    if (hiding === null) {
      // Only text a reader sees ends a stretch of hidden text; a space between two hidden spans stays a space.
      if (visible.append(decoded) > 0) run = null;
      else run?.text.space();
      return;
    }
    if (run === null) {
      if (hidden.length < MAX_HIDDEN_RUNS) {
        run = { text: new RenderedText(), reason: hiding.reason, strong: hiding.strong };
        hidden.push(run);
      } else {
        run = hidden[hidden.length - 1];
        run.text.breakLine();
      }
    }
    run.text.append(decoded);
    if (hiding.strong && !run.strong) {
      run.strong = true;
      run.reason = hiding.reason;
    }
  };
  const breakLine = () => {
    visible.breakLine();
    run?.text.breakLine();
  };

  const n = html.length;
  let pos = 0;
  while (pos < n) {
    const lt = html.indexOf('<', pos);
    if (lt === -1) {
      appendText(pos, n);
      break;
    }
    appendText(pos, lt);
    if (html.startsWith('<!--', lt)) {
      const closeAt = html.indexOf('-->', lt + 4);
      const end = closeAt === -1 ? n : closeAt;
      keepUnseen('an HTML comment', html.slice(lt + 4, end));
      pos = closeAt === -1 ? n : closeAt + 3;
      continue;
    }
    const next = html.charCodeAt(lt + 1);
    if (next === 0x21 /* ! */ || next === 0x3f /* ? */) {
      const closeAt = html.indexOf('>', lt + 2);
      pos = closeAt === -1 ? n : closeAt + 1;
      continue;
    }
    const startsTag = isUpper(next) || isLower(next) || (next === 0x2f && (isUpper(html.charCodeAt(lt + 2)) || isLower(html.charCodeAt(lt + 2))));
    if (!startsTag) {
      appendText(lt, lt + 1); // a literal '<', e.g. "a < b" or "<|im_start|>"
      pos = lt + 1;
      continue;
    }
    const tag = tagAt(html, lt);
    pos = tag.end;
    if (tag.closing) {
      if (tag.name === 'system' && openSystem !== null) promptElement ??= { name: 'system', hiding: openSystem.hiding };
      elements.close(tag.name);
      if (BLOCK_ELEMENTS.has(tag.name)) breakLine();
      continue;
    }
    const unseenWhere = UNSEEN_CONTENT.get(tag.name);
    if (unseenWhere !== undefined) {
      const end = closingTagAt(html, pos, tag.name);
      keepUnseen(unseenWhere, html.slice(pos, end));
      pos = end;
      continue;
    }
    if (BLOCK_ELEMENTS.has(tag.name)) breakLine();
    const frame = elements.open(tag);
    if (PROMPT_ELEMENTS.has(tag.name)) {
      // `<system>` is also a word people write in angle brackets; it counts with its end tag.
      if (tag.name === 'system') openSystem ??= { hiding: frame.text?.reason ?? null };
      else promptElement ??= { name: tag.name, hiding: frame.text?.reason ?? null };
    }
  }

  for (const [where, texts] of unseenByKind) unseen.push({ where, text: texts.join('\n') });
  return {
    visible: visible.toString(),
    hidden: hidden.map((r) => ({ text: r.text.toString(), reason: r.reason, strong: r.strong })),
    unseen,
    promptElement,
  };
}

/**
 * The open elements of a page and what hides the text inside them, nested as a browser nests them
 * (implied ends, stray end tags ignored, depth bounded). The one definition of hidden text: the
 * manipulation check reports it, the extraction of codes and links (src/mail/actions.ts) skips it.
 */
export class HidingStack {
  private readonly stack: Frame[] = [ROOT];
  private readonly openCount = new Map<string, number>();

  /** What hides text at this point, or null when a reader sees it. */
  textHiding(): Hiding | null {
    return this.top().text;
  }

  /**
   * A start tag whose content is rendered: ends the open elements it implies, then opens it
   * (a void element is not pushed). Returns its state.
   */
  open(tag: HidingTag): Frame {
    if (ENDS_PARAGRAPH.has(tag.name)) this.endImplied(PARAGRAPH_END);
    const implied = IMPLIED_ENDS.get(tag.name);
    if (implied !== undefined) this.endImplied(implied);
    const frame = frameOf(tag, this.top());
    if (VOID_ELEMENTS.has(tag.name)) return frame;
    if (this.stack.length >= MAX_OPEN_ELEMENTS) {
      // Deeper nesting merges into the deepest element: what hides it still hides what follows.
      this.stack[this.stack.length - 1] = { ...frame, name: this.top().name };
      return frame;
    }
    this.stack.push(frame);
    this.openCount.set(tag.name, (this.openCount.get(tag.name) ?? 0) + 1);
    return frame;
  }

  /** An end tag: pops through the element named `name`, when it is open. */
  close(name: string): void {
    if ((this.openCount.get(name) ?? 0) <= 0) return; // a stray end tag is ignored, as in browsers
    while (this.stack.length > 1) {
      const popped = this.top().name;
      this.pop();
      if (popped === name) return;
    }
  }

  private top(): Frame {
    return this.stack[this.stack.length - 1];
  }

  private pop(): void {
    const frame = this.stack.pop() as Frame;
    this.openCount.set(frame.name, (this.openCount.get(frame.name) ?? 1) - 1);
  }

  /** Ends an open element that `rule` says the new start tag ends, looking through at most IMPLIED_END_SEARCH elements. */
  private endImplied(rule: { ends: Set<string>; boundaries: Set<string> }): void {
    for (let i = this.stack.length - 1; i > 0 && this.stack.length - i <= IMPLIED_END_SEARCH; i--) {
      const name = this.stack[i].name;
      if (rule.ends.has(name)) {
        while (this.stack.length > i) this.pop();
        return;
      }
      if (rule.boundaries.has(name)) return;
    }
  }
}

/** The state of an element from its attributes and its parent's state. */
function frameOf(tag: Tag, parent: Frame): Frame {
  const style = tag.style === null ? NO_STYLE : parseStyle(tag.style);
  const boxHiding = parent.boxHiding ?? boxHidingOf(style, tag.hidden);
  const fontSize = style.get('font-size');
  const tinyFont = fontSize === undefined ? parent.tinyFont : (isTinyFont(fontSize) ?? parent.tinyFont);
  const ownColor = parseColor(style.get('color') ?? tag.color ?? '');
  const color = ownColor ?? parent.color;
  const ownBackground = style.get('background-color') ?? style.get('background') ?? tag.bgcolor;
  let background = parent.background;
  let backgroundSet = parent.backgroundSet;
  if (ownBackground !== undefined && ownBackground !== null) {
    const parsed = backgroundColor(ownBackground);
    if (parsed !== TRANSPARENT) {
      // A background image (or a colour not understood) leaves the colour under the text unknown.
      background = parsed;
      backgroundSet = true;
    }
  }
  let text: Hiding | null = null;
  if (boxHiding !== null) text = { reason: boxHiding, strong: true };
  else if (tinyFont) text = { reason: 'font-size:0', strong: true };
  else if (color === TRANSPARENT) text = { reason: 'color:transparent', strong: true };
  else if (color !== null && background !== null && sameColor(color, background)) text = { reason: 'text coloured like its background', strong: true };
  else if (color !== null && !backgroundSet && isWhite(color)) text = { reason: 'white text on a page of unknown colour', strong: false };
  return { name: tag.name, boxHiding, tinyFont, color, background, backgroundSet, text };
}

// ---------------------------------------------------------------------------------------------
// Inline styles

const NO_STYLE = new Map<string, string>();
/** The properties that can hide text; others are not kept. */
const STYLE_PROPERTIES = new Set([
  'display', 'visibility', 'opacity', 'font-size', 'color', 'background', 'background-color', 'overflow', 'overflow-x', 'overflow-y',
  'height', 'max-height', 'width', 'max-width', 'position', 'left', 'top', 'text-indent',
]);

/** The declarations of a style attribute (lower-cased, comments and `!important` dropped; the last of a property wins). */
function parseStyle(style: string): Map<string, string> {
  const declarations = new Map<string, string>();
  const s = withoutCssComments(style).toLowerCase();
  let start = 0;
  let colon = -1; // the next ':' at or after `start`, kept so ";;;;" does not search the rest again and again
  while (start < s.length) {
    let end = s.indexOf(';', start);
    if (end === -1) end = s.length;
    if (colon !== s.length && colon < start) {
      colon = s.indexOf(':', start);
      if (colon === -1) colon = s.length;
    }
    if (colon < end) {
      const name = s.slice(start, colon).trim();
      if (STYLE_PROPERTIES.has(name)) {
        const value = s.slice(colon + 1, Math.min(end, colon + 1 + 200)).replace('!important', '').trim();
        declarations.set(name, value);
      }
    }
    start = end + 1;
  }
  return declarations;
}

/** CSS without its comments; an unterminated comment ends the text (also src/mail/part-mismatch.ts). */
export function withoutCssComments(s: string): string {
  if (!s.includes('/*')) return s;
  const parts: string[] = [];
  let run = 0;
  for (let open = s.indexOf('/*'); open !== -1; open = s.indexOf('/*', run)) {
    parts.push(s.slice(run, open));
    const closeAt = s.indexOf('*/', open + 2);
    if (closeAt === -1) return parts.join('');
    run = closeAt + 2;
  }
  parts.push(s.slice(run));
  return parts.join('');
}

/** What hides an element's box and everything in it, by its own style or `hidden` attribute. */
function boxHidingOf(style: Map<string, string>, hiddenAttribute: boolean): string | null {
  if (hiddenAttribute) return 'the hidden attribute';
  if (style === NO_STYLE) return null;
  if (style.get('display') === 'none') return 'display:none';
  const visibility = style.get('visibility');
  if (visibility === 'hidden' || visibility === 'collapse') return 'visibility:hidden';
  const opacity = style.get('opacity');
  if (opacity !== undefined && /^[0-9.]+%?$/.test(opacity) && parseFloat(opacity) <= (opacity.endsWith('%') ? 5 : 0.05)) return 'opacity:0';
  const clipped = ['overflow', 'overflow-x', 'overflow-y'].some((p) => style.get(p) === 'hidden' || style.get(p) === 'clip');
  if (clipped) {
    for (const p of ['height', 'max-height', 'width', 'max-width']) {
      const px = pixels(style.get(p));
      if (px !== null && px <= 1) return `${p}:0 with overflow:hidden`;
    }
  }
  const position = style.get('position');
  if (position === 'absolute' || position === 'fixed') {
    for (const p of ['left', 'top']) {
      const px = pixels(style.get(p));
      if (px !== null && px <= OFF_SCREEN_PX) return `positioned off-screen (${p}:${Math.round(px)}px)`;
    }
  }
  const indent = pixels(style.get('text-indent'));
  if (indent !== null && indent <= OFF_SCREEN_PX) return 'indented off-screen';
  return null;
}

/** A length in pixels (px, pt, em/rem as 16px, a bare 0), else null (percentages, keywords, calc()). */
function pixels(value: string | undefined): number | null {
  if (value === undefined) return null;
  const m = /^(-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(px|pt|em|rem)?$/.exec(value);
  if (m === null) return null;
  const n = parseFloat(m[1]);
  if (m[2] === undefined) return n === 0 ? 0 : null;
  return m[2] === 'px' ? n : m[2] === 'pt' ? (n * 4) / 3 : n * 16;
}

/** Whether a font size is zero or about one pixel: true, false, or null when it is relative to the parent's. */
function isTinyFont(value: string): boolean | null {
  const m = /^((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(px|pt|em|rem|%)?$/.exec(value);
  if (m === null) return false; // keywords (small, medium…) are readable sizes
  const n = parseFloat(m[1]);
  if (n === 0) return true;
  switch (m[2]) {
    case 'px':
    case 'pt':
      return n <= 1;
    case 'rem':
      return n <= 0.1;
    case 'em':
    case '%':
      return (m[2] === '%' ? n / 100 : n) <= 0.1 ? true : null;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Colours

const TRANSPARENT = -1;
const NAMED_COLORS = new Map([
  ['white', 0xffffff], ['black', 0x000000], ['transparent', TRANSPARENT], ['red', 0xff0000], ['green', 0x008000], ['blue', 0x0000ff],
  ['yellow', 0xffff00], ['gray', 0x808080], ['grey', 0x808080], ['silver', 0xc0c0c0], ['navy', 0x000080], ['whitesmoke', 0xf5f5f5],
  ['snow', 0xfffafa], ['ivory', 0xfffff0], ['ghostwhite', 0xf8f8ff], ['floralwhite', 0xfffaf0], ['azure', 0xf0ffff], ['mintcream', 0xf5fffa],
]);

/** A colour as 0xRRGGBB, TRANSPARENT, or null when not understood: #rgb(a), #rrggbb(aa), rgb()/rgba(), a few names. */
function parseColor(value: string): number | null {
  const v = value.trim().toLowerCase();
  if (v === '') return null;
  const named = NAMED_COLORS.get(v);
  if (named !== undefined) return named;
  const hex = /^#?([0-9a-f]{3,8})$/.exec(v);
  if (hex !== null) {
    let h = hex[1];
    if (h.length === 3 || h.length === 4) h = [...h].map((d) => d + d).join('');
    if (h.length !== 6 && h.length !== 8) return null;
    if (h.length === 8 && parseInt(h.slice(6), 16) === 0) return TRANSPARENT;
    return parseInt(h.slice(0, 6), 16);
  }
  const rgb = /^rgba?\(\s*([0-9.]+%?)[\s,]+([0-9.]+%?)[\s,]+([0-9.]+%?)(?:[\s,/]+([0-9.]+%?))?\s*\)$/.exec(v);
  if (rgb !== null) {
    const channel = (s: string) => Math.max(0, Math.min(255, Math.round(s.endsWith('%') ? parseFloat(s) * 2.55 : parseFloat(s))));
    if (rgb[4] !== undefined && parseFloat(rgb[4]) === 0) return TRANSPARENT;
    return (channel(rgb[1]) << 16) | (channel(rgb[2]) << 8) | channel(rgb[3]);
  }
  return null;
}

/** The colour of a `background`/`background-color`/`bgcolor` value: its colour, TRANSPARENT when none, null for an image or a colour not understood. */
function backgroundColor(value: string): number | null {
  const v = value.trim().toLowerCase();
  if (v.includes('url(') || v.includes('gradient(')) return null;
  const whole = parseColor(v);
  if (whole !== null) return whole;
  // The shorthand: the colour is one of its words (`#fff no-repeat`, `none`).
  const hash = v.indexOf('#');
  if (hash !== -1) return parseColor(v.slice(hash).split(/\s/)[0]);
  const rgb = v.indexOf('rgb');
  if (rgb !== -1) return parseColor(v.slice(rgb, v.indexOf(')', rgb) + 1));
  for (const word of v.split(/\s+/).slice(0, 8)) {
    const named = NAMED_COLORS.get(word);
    if (named !== undefined) return named;
  }
  return v === 'none' || v === 'initial' || v === 'inherit' || v === '' ? TRANSPARENT : null;
}

const channels = (c: number) => [(c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff];
/** Colours a reader cannot tell apart (the sum of channel differences at most 30 of 765). */
function sameColor(a: number, b: number): boolean {
  const [ar, ag, ab] = channels(a);
  const [br, bg, bb] = channels(b);
  return Math.abs(ar - br) + Math.abs(ag - bg) + Math.abs(ab - bb) <= 30;
}
const isWhite = (c: number) => channels(c).every((ch) => ch >= 0xf0);

// ---------------------------------------------------------------------------------------------
// Hidden text and unseen markup

type Note = (reason: ManipulationReason, detail: string) => void;

function assessPage(page: Page, note: Note): void {
  // Hidden text that is also shown (a mobile/desktop pair of a layout) hides nothing, and a
  // repeated hidden line (the preheaders of a digest) hides it once.
  const shownLines = new Set(page.visible.split('\n').map(lineKey));
  const counted = (line: string) => {
    const key = lineKey(line);
    if (shownLines.has(key)) return false;
    shownLines.add(key);
    return true;
  };
  const parts: string[] = [];
  const starts: number[] = [];
  let length = 0;
  let longChars = 0;
  let longRun: { reason: string; line: string; shown: number } | null = null;
  for (const run of page.hidden) {
    const lines = run.text.split('\n').filter(counted);
    const own = readable(lines.join('\n'));
    starts.push(length);
    parts.push(own);
    length += own.length + 1;
    const shown = countShown(own);
    if (run.strong && shown > 0) {
      longChars += shown;
      // The detail quotes the largest stretch, not a spacer before it.
      if (longRun === null || shown > longRun.shown) longRun = { reason: run.reason, line: own, shown };
    }
  }
  const said = instructionsIn(parts.join('\n'));
  const runAt = (at: number) => {
    let i = 0;
    while (i + 1 < starts.length && starts[i + 1] <= at) i++;
    return page.hidden[i].reason;
  };
  const first = said.ai !== undefined && (said.prompt === undefined || said.ai.at <= said.prompt.at) ? said.ai : said.prompt;
  if (first !== undefined) {
    const what = first === said.ai ? 'is addressed to an AI' : 'holds prompt syntax';
    note('hidden_text', `text hidden from the reader (${runAt(first.at)}) ${what}: ${quote(first.evidence)}`);
  }
  if (said.ai) note('ai_instructions', `addresses an AI in hidden HTML text: ${quote(said.ai.evidence)}`);
  if (said.prompt) note('prompt_syntax', `chat-template or tool-call syntax in hidden HTML text: ${quote(said.prompt.evidence)}`);
  if (longRun !== null && longChars > LONG_HIDDEN_CHARS) {
    note('hidden_text', `${longChars} characters of text hidden from the reader (${longRun.reason}): ${quote(longRun.line)}`);
  }
  const element = page.promptElement;
  if (element !== null) {
    if (element.hiding !== null) note('hidden_text', `a <${element.name}> element hidden from the reader (${element.hiding})`);
    note('prompt_syntax', `a <${element.name}> element in the HTML`);
  }
  for (const { where, text } of page.unseen) {
    const said = instructionsIn(readable(text));
    if (said.ai) note('hidden_text', `${where} holds text addressed to an AI: ${quote(said.ai.evidence)}`);
    if (said.prompt) note('hidden_text', `${where} holds prompt syntax: ${quote(said.prompt.evidence)}`);
    if (said.ai) note('ai_instructions', `addresses an AI in ${where}: ${quote(said.ai.evidence)}`);
    if (said.prompt) note('prompt_syntax', `chat-template or tool-call syntax in ${where}: ${quote(said.prompt.evidence)}`);
  }
}

const lineKey = (line: string) => readable(line).trim().toLowerCase();

// ---------------------------------------------------------------------------------------------
// Instructions to an AI, and prompt syntax

interface Phrase {
  re: RegExp;
  /** "Never share your password" and "attackers may ask you to send your password" do not ask for it. */
  negatable?: boolean;
  /** A further condition on the whole text (`<system>` counts with its end tag), checked once per text. */
  requires?: (lowerWhole: string) => boolean;
}

/** The imperative verbs an instruction to an AI starts with, after "AI assistant, …". */
const IMPERATIVE =
  '(?:please\\b|kindly\\b|you\\s(?:must|should|need\\sto|are\\s(?:required|instructed|asked|expected)|have\\sto|will)\\b|' +
  "(?:forward|send|reply|respond|ignore|disregard|delete|remove|reveal|summari[sz]e|click|open|visit|execute|run|call|tell|include|add|follow|output|print|write|do\\snot|don't|never|always|make\\ssure|transfer|pay|approve|schedule|book|share|copy|mark|move|archive|confirm|grant|accept|download|install)\\b)";
/** Names for an AI that no human is called. */
const AI = '(?:ai|a\\.i\\.|llms?|(?:large\\s)?language\\smodels?|ai\\s(?:assistants?|agents?|models?|systems?|bots?)|chatbots?)';
/** What may follow a name for an AI when it is addressed, not discussed ("AI researchers"). */
const ADDRESSED = "(?=\\s?(?:[.,;:!?—–-]|$)|\\n|\\s(?:reading|processing|summari[sz]ing|parsing|handling|analy[sz]ing|that|who|which|and|with|named|called|whose|designed|built|trained|tasked|working|acting|helping|running)\\b)";
const MAIL_OBJECTS = '(?:e-?mails?|messages?|mails?|inbox(?:es)?|conversations?|threads?|correspondence|attachments?|contacts?)';
const SECRETS =
  '(?:passwords?|passcodes?|credentials|api\\skeys?|private\\skeys?|secret\\skeys?|access\\skeys?|access\\stokens?|auth(?:entication)?\\stokens?|' +
  'bearer\\stokens?|session\\s(?:cookies?|tokens?)|(?:verification|2fa|mfa|otp|one-time|login|security|sign-in|reset|authentication|recovery|backup)\\scodes?|' +
  'seed\\sphrases?|recovery\\sphrases?|ssh\\skeys?)';
const DETERMINERS = "(?:(?:all|any|every|each|the|your|my|their|his|her|this|these|those|of|user's|owner's)\\s){0,3}";
const TARGET = "\\s(?:to|with)\\s(?:\\S{1,64}@\\S{1,64}|https?:|me\\b|us\\b|this\\s(?:address|e-?mail)|the\\s(?:following|sender|address\\sbelow)\\b)";

const phrase = (source: string, options: Omit<Phrase, 're'> = {}): Phrase => ({ re: new RegExp(source, 'gi'), ...options });

/** Shapes of text addressed to an AI, each matched on a window of readable text. */
const AI_PHRASES: Phrase[] = [
  phrase(
    '\\b(?:ignore|disregard|forget|override|bypass|skip)\\s(?:(?:all|any|each|every|the|of|your|my|these|those|this|that|its)\\s){0,3}' +
      '(?:previous|prior|preceding|above|earlier|former|original|initial|existing|old|other|system|developer|safety|hidden)\\s(?:[a-z\'-]{1,20}\\s)?' +
      '(?:instructions?|prompts?|directions|directives?|rules|guidelines|guidance|commands?|context|programming|constraints|policies)\\b',
  ),
  phrase('\\b(?:ignore|disregard|forget|override|bypass)\\s(?:(?:all|any|of)\\s){0,2}(?:your|its)\\s(?:[a-z\'-]{1,20}\\s)?(?:instructions|prompt|system\\sprompt|rules|guidelines|guardrails|programming|training|directives|constraints)\\b'),
  phrase('\\bforget\\s(?:everything|all|anything)\\s(?:you\\s(?:were|have\\sbeen)\\s(?:told|given|instructed)|above|before|prior|previously|so\\sfar)\\b'),
  phrase(`\\byou\\s(?:are|'re)\\s(?:now\\s)?(?:an?\\s|the\\s)?(?:helpful\\s|autonomous\\s|friendly\\s)?${AI}${ADDRESSED}`),
  phrase(`\\byou\\s(?:are|'re)\\s(?:now\\s(?:an?\\s|the\\s|my\\s)?|an?\\s(?:helpful|autonomous)\\s)(?:assistant|agent)${ADDRESSED}`),
  phrase("\\byou\\s(?:are|'re)\\s(?:now\\s)?in\\s(?:developer|dan|god|jailbreak|unrestricted|debug)\\smode\\b"),
  phrase(`\\bas\\san?\\s${AI}\\s?,?\\s(?:you|your)\\b`),
  phrase(`(?:^|[.!?;:\\n]\\s?|\\s[-—–]\\s)(?:(?:dear|hey|hi|hello|attention)\\s)?(?:the\\s)?${AI}\\s?[,:]\\s${IMPERATIVE}`),
  phrase(`\\b(?:note|message|instructions?|attention|notice|reminder|memo|directive|request|warning)\\s(?:to|for)\\s(?:the\\s|any\\s|all\\s|an?\\s|our\\s|your\\s)?${AI}${ADDRESSED}`),
  phrase('\\b(?:note|message|instructions?)\\s(?:to|for)\\sthe\\s(?:assistant|agent|model)\\s?[:,]'),
  phrase(`\\bif\\syou\\s(?:are|'re|re)\\s(?:an?\\s|the\\s)?(?:${AI}|automated\\s(?:system|agent|assistant))${ADDRESSED}`),
  phrase("\\bif\\syou\\s(?:are|'re)\\s(?:an?\\s|the\\s)(?:assistant|agent|bot|model)\\s(?:reading|processing|summari[sz]ing|parsing|handling|analy[sz]ing)\\b"),
  phrase(`\\b(?:${AI}|assistants?|agents?)\\s(?:reading|processing|summari[sz]ing|parsing|analy[sz]ing|handling|scanning)\\s(?:this|these|the\\sfollowing)\\s(?:e-?mails?|messages?|text|content|page|documents?|inbox|mailbox)\\b`),
  phrase(`\\b(?:forward|redirect|bcc|cc|copy|leak|exfiltrate|upload)\\s(?:me\\s|us\\s)?(?:all|every|each|any)\\s(?:of\\s)?${DETERMINERS}(?:[a-z'-]{1,20}\\s){0,3}?${MAIL_OBJECTS}\\b(?:\\s\\S{1,40}){0,8}?${TARGET}`, { negatable: true }),
  phrase(`\\b(?:send|e-?mail|mail|share)\\s(?:me\\s|us\\s)?(?:all|every)\\s(?:of\\s)?(?:your|the\\suser's|the\\sowner's|this\\sinbox's|my)\\s(?:[a-z'-]{1,20}\\s){0,3}?${MAIL_OBJECTS}\\b(?:\\s\\S{1,40}){0,8}?${TARGET}`, { negatable: true }),
  phrase(`\\b(?:(?:reply|respond)\\swith|(?:give|tell|text|dm|send|e-?mail|forward|show)\\s(?:me|us))\\s${DETERMINERS}(?:[a-z'-]{1,20}\\s){0,2}?${SECRETS}\\b`, { negatable: true }),
  phrase(`\\b(?:forward|send|e-?mail|mail|share|leak|disclose|reveal|upload|post)\\s${DETERMINERS}(?:[a-z'-]{1,20}\\s){0,2}?${SECRETS}\\b(?:\\s\\S{1,40}){0,6}?${TARGET}`, { negatable: true }),
  phrase('\\b(?:(?:new|updated|revised|real|actual|true|hidden|secret|override)\\s(?:instructions?|directives?|system\\sprompt)|(?:real|actual|true|hidden|secret)\\stask)\\s?:'),
  phrase('\\byour\\s(?:(?:new|updated)\\s(?:instructions|directives?)|(?:real|actual|true)\\s(?:instructions|task|goal|objective|purpose|directive))\\s(?:is|are)\\b'),
  phrase("\\bfrom\\snow\\son,?\\s(?:ignore|disregard|respond\\sonly|reply\\sonly|only\\s(?:respond|reply|answer|obey)|act\\sas|you\\s(?:must|will|shall|should)\\s(?:ignore|disregard|obey|forward|follow\\s(?:these|my|the\\snew))|you\\sare\\s(?:an?\\s)?(?:ai|assistant|agent|llm))\\b"),
  phrase(
    "\\b(?:do\\snot|don't|dont|never)\\s(?:tell|inform|alert|notify|warn|let|mention\\s(?:this|it|anything)\\sto|reveal\\s(?:this|it)\\sto|show\\s(?:this|it)\\sto)\\s(?:the\\s|your\\s|my\\s)?(?:user|owner|human|principal|operator|account\\sholder)s?\\b",
  ),
  phrase('\\bwithout\\s(?:telling|informing|alerting|notifying)\\s(?:the\\s|your\\s|my\\s)?(?:user|owner|human|principal|operator|account\\sholder)s?\\b'),
  phrase(
    '\\b(?:reveal|print|output|repeat|leak|disclose|dump|recite|tell\\sme|write\\sout|give\\sme|send\\sme|show\\sme)\\s(?:(?:your|its|the|all|any|my)\\s)?(?:(?:full|entire|original|initial|hidden|secret|complete|exact|current|internal)\\s)?' +
      '(?:system\\sprompt|system\\smessage|system\\sinstructions|initial\\sprompt|hidden\\sinstructions|internal\\sinstructions|pre-?prompt|instructions\\sabove)\\b',
  ),
  phrase('\\bwhat\\s(?:is|are|were)\\syour\\s(?:(?:full|original|initial|hidden|secret|exact)\\s)?(?:system\\sprompt|instructions|initial\\sprompt|rules)\\b'),
  phrase('\\breveal\\s(?:your|its)\\s(?:(?:full|original|initial|hidden|secret|exact)\\s)?(?:instructions|prompt|rules|guidelines|configuration)\\b'),
  phrase('(?:^|\\n|[.!?]\\s)(?:begin|start|end)\\s(?:of\\s)?(?:the\\s)?(?:new\\s)?system\\sprompt\\b|\\bsystem\\s(?:prompt|override|instructions?)\\s?:'),
];

/** Chat-template tokens and tool-call syntax, exactly: mentioning JSON or prompts is not enough. */
const PROMPT_PHRASES: Phrase[] = [
  phrase('<\\|[a-z_]{2,32}\\|>'),
  phrase('\\[\\/?inst\\]'),
  phrase('<<\\/?sys>>'),
  phrase('<\\/?(?:tool_calls?|function_calls?|tool_use|tool_result|tool_response|function_results?|im_start|im_end|start_of_turn|end_of_turn)\\b[^<>\\n]{0,80}>'),
  phrase('<invoke\\sname\\s?='),
  phrase('<system>', { requires: (lowerWhole) => lowerWhole.includes('</system>') }),
  phrase('(?:^|\\n)#{1,4}\\s?(?:system|instruction|human|assistant)\\s?:'),
  phrase(
    "(?:^|\\n)(?:system|sys)\\s?:\\s?(?:you\\s(?:are|must|should|will|shall)|ignore|disregard|forget|from\\snow\\son|always|never|do\\snot|don't|forward|send|reply|new\\sinstructions?|override|the\\suser|the\\sassistant)\\b",
  ),
  phrase('\\{\\s?["\']role["\']\\s?:\\s?["\'](?:system|developer|tool|assistant|function)["\']'),
  phrase('["\'](?:tool_calls|function_call)["\']\\s?:'),
];

/** "not", "never", "don't", and reported requests ("attackers may ask you to") just before a match. */
const NEGATION_BEFORE = /(?:\bnot|\bnever|n't|\bdont|\bno\sone|\bnobody|\bask(?:s|ed|ing)?(?:\s\S+){0,2}\sto|\brequest(?:s|ed|ing)?|\btrick(?:s|ed|ing)?)\s\S*\s?\S*\s?$/i;

interface Said {
  ai?: { evidence: string; at: number };
  prompt?: { evidence: string; at: number };
}

/**
 * One expression per phrase list that matches wherever any of its phrases does (their alternation:
 * no phrase uses a back-reference, so each keeps its meaning). A window it finds nothing in holds
 * no phrase of the list, and is passed over with one scan instead of one per phrase; a window it
 * finds something in is read phrase by phrase as before, so the verdict and its evidence are the same.
 */
const anyOf = (phrases: Phrase[]) => new RegExp(phrases.map((p) => `(?:${p.re.source})`).join('|'), 'i');
const ANY_AI_PHRASE = anyOf(AI_PHRASES);
const ANY_PROMPT_PHRASE = anyOf(PROMPT_PHRASES);

/** The first text addressed to an AI and the first prompt syntax in readable text, read window by window. */
function instructionsIn(text: string): Said {
  const said: Said = {};
  let lower: string | null = null;
  const checked = new Map<Phrase, boolean>();
  const requirementMet = (p: Phrase) => {
    if (p.requires === undefined) return true;
    if (!checked.has(p)) checked.set(p, p.requires((lower ??= text.toLowerCase())));
    return checked.get(p) === true;
  };
  for (let start = 0; start < text.length && (said.ai === undefined || said.prompt === undefined); start += WINDOW_STEP) {
    const window = text.slice(start, start + WINDOW_CHARS);
    if (said.ai === undefined && ANY_AI_PHRASE.test(window)) said.ai = firstMatch(AI_PHRASES, window, start, requirementMet);
    if (said.prompt === undefined && ANY_PROMPT_PHRASE.test(window)) said.prompt = firstMatch(PROMPT_PHRASES, window, start, requirementMet);
    if (start + WINDOW_CHARS >= text.length) break;
  }
  return said;
}

function firstMatch(phrases: Phrase[], window: string, offset: number, requirementMet: (p: Phrase) => boolean): { evidence: string; at: number } | undefined {
  let best: { evidence: string; at: number } | undefined;
  for (const p of phrases) {
    p.re.lastIndex = 0;
    for (let m = p.re.exec(window); m !== null; m = p.re.exec(window)) {
      if (m[0] === '') {
        p.re.lastIndex++;
        continue;
      }
      if (p.negatable && NEGATION_BEFORE.test(window.slice(Math.max(0, m.index - 40), m.index))) continue;
      if (!requirementMet(p)) break;
      // A match may start with the punctuation or line break that bounds it.
      let at = m.index;
      while (at < m.index + m[0].length && /[\s.!?;:—–-]/.test(window[at])) at++;
      if (best === undefined || offset + at < best.at) best = { evidence: window.slice(at, at + 2 * MAX_EVIDENCE_CHARS), at: offset + at };
      break;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Invisible Unicode

/**
 * The first invisible-character trick in `s`, described, or null. `zeroWidth` says which
 * zero-width runs count: 'all' (inside a word, or a long run mixing kinds, which encodes bits),
 * 'in-word' (hidden HTML, where preheaders pad with long runs), 'none' (raw markup).
 */
function invisibleIn(s: string, where: string, zeroWidth: 'all' | 'in-word' | 'none'): string | null {
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (c === 0xdb40 && isTagLow(s.charCodeAt(k + 1))) {
      const sequence = tagSequenceAt(s, k);
      if (!sequence.emojiFlag) return `Unicode tag characters in ${where} spell hidden text: ${quote(sequence.text)}`;
      k = sequence.end - 1;
      continue;
    }
    if (isBidiControl(c)) {
      const override = c === 0x202d || c === 0x202e;
      // Embeddings and isolates around right-to-left words are how such text is written; c ends one.
      if (override || ((c <= 0x202b || c >= 0x2066) && c !== 0x2069 && !rightToLeftNear(s, k))) {
        const name = override ? 'bidi override' : c <= 0x202b ? 'bidi embedding' : 'bidi isolate';
        return `${name} ${codePointName(c)} in ${where}: ${quote(s.slice(Math.max(0, k - 20), k + 30))}`;
      }
      continue;
    }
    if (zeroWidth === 'none' || !(isZeroWidth(c) || c === 0x34f || c === 0xad)) continue;
    let end = k;
    let count = 0;
    const kinds = new Set<number>();
    while (end < s.length) {
      const d = s.charCodeAt(end);
      if (isZeroWidth(d)) {
        count++;
        kinds.add(d);
      } else if (d !== 0x34f && d !== 0xad) break;
      end++;
    }
    const inWord = k > 0 && isWordChar(s.charCodeAt(k - 1)) && end < s.length && isWordChar(s.charCodeAt(end));
    if (count >= ZERO_WIDTH_RUN && inWord) {
      return `${count} zero-width characters inside a word in ${where}: ${quote(s.slice(Math.max(0, k - 15), Math.min(s.length, end + 15)))}`;
    }
    if (zeroWidth === 'all' && count >= ZERO_WIDTH_CODE_RUN && kinds.size >= 2) {
      return `a run of ${count} mixed zero-width characters in ${where} (hidden encoding): ${quote(s.slice(k, Math.min(end, k + 24)))}`;
    }
    k = end - 1;
  }
  return null;
}

/** The tag characters starting at `k`: what they spell, where they end, and whether they are an emoji flag's (🏴 + letters + cancel tag). */
function tagSequenceAt(s: string, k: number): { text: string; end: number; emojiFlag: boolean } {
  let end = k;
  const codes: number[] = [];
  while (end + 1 < s.length && s.charCodeAt(end) === 0xdb40 && isTagLow(s.charCodeAt(end + 1))) {
    codes.push(s.charCodeAt(end + 1) - 0xdc00);
    end += 2;
  }
  const text = codes.map((c) => (c >= 0x20 && c <= 0x7e ? String.fromCharCode(c) : c === 0x7f ? '' : codePointName(0xe0000 + c))).join('');
  // Subdivision flags (England, Scotland, Wales) are a black flag followed by 2–6 lower-case tag letters and digits and a cancel tag.
  const emojiFlag =
    s.slice(Math.max(0, k - 2), k) === '\u{1F3F4}' && codes.length >= 3 && codes.length <= 7 && codes[codes.length - 1] === 0x7f &&
    codes.slice(0, -1).every((c) => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39));
  return { text, end, emojiFlag };
}

/** Whether right-to-left letters stand within 40 characters after `k`. */
function rightToLeftNear(s: string, k: number): boolean {
  for (let j = k + 1; j < s.length && j <= k + 40; j++) if (isRightToLeftLetter(s.charCodeAt(j))) return true;
  return false;
}

/** The ASCII text spelled in Unicode tag characters in `s` (emoji flags excepted), each sequence on its line. */
function tagCharacterText(s: string): string {
  const parts: string[] = [];
  let length = 0;
  for (let k = s.indexOf('\udb40'); k !== -1 && length < MAX_TAG_TEXT_CHARS; k = s.indexOf('\udb40', k + 1)) {
    if (!isTagLow(s.charCodeAt(k + 1))) continue;
    const sequence = tagSequenceAt(s, k);
    if (!sequence.emojiFlag) {
      parts.push(sequence.text);
      length += sequence.text.length + 1;
    }
    k = sequence.end - 1;
  }
  return parts.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Lookalike sender

interface DomainShape {
  /** The whole name, lower-case, Unicode (punycode decoded). */
  host: string;
  /** The label before the public suffix, and the suffix (heuristic: see suffixLabels). */
  label: string;
  suffix: string;
  registrable: string;
  /** The label and suffix with confusable characters folded (skeleton()). */
  labelSkeleton: string;
  suffixSkeleton: string;
}

/** Second-level labels under a two-letter country code that are part of the suffix (co.uk, com.au, ac.jp…). */
const SECOND_LEVEL_LABELS = new Set(['co', 'com', 'net', 'org', 'gov', 'edu', 'ac', 'or', 'ne', 'go', 'gob', 'mil', 'ltd', 'plc', 'sch', 'nhs', 'gv', 'nom', 'biz']);

/**
 * Shapes already computed, by domain: an inbox's known domains are compared with every sender it
 * receives from, and folding 500 of them anew cost about 1 ms per message. Bounded: emptied when full.
 */
const SHAPES = new Map<string, DomainShape | null>();
const MAX_CACHED_SHAPES = 4096;

function shapeOf(domain: unknown): DomainShape | null {
  if (typeof domain !== 'string' || domain.length > MAX_DOMAIN_CHARS) return null;
  const cached = SHAPES.get(domain);
  if (cached !== undefined) return cached;
  const shape = computeShape(domain);
  if (SHAPES.size >= MAX_CACHED_SHAPES) SHAPES.clear();
  SHAPES.set(domain, shape);
  return shape;
}

function computeShape(domain: string): DomainShape | null {
  let host = domain.trim().toLowerCase();
  if (host.startsWith('@')) host = host.slice(1);
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.includes('xn--')) host = domainToUnicode(host) || host;
  const labels = host.split('.');
  if (labels.length < 2 || labels.some((l) => l === '' || /[\s/@:]/.test(l))) return null;
  const last = labels[labels.length - 1];
  const suffixLabels = labels.length >= 3 && last.length === 2 && SECOND_LEVEL_LABELS.has(labels[labels.length - 2]) ? 2 : 1;
  const label = labels[labels.length - 1 - suffixLabels];
  const suffix = labels.slice(-suffixLabels).join('.');
  return { host, label, suffix, registrable: `${label}.${suffix}`, labelSkeleton: skeleton(label), suffixSkeleton: skeleton(suffix) };
}

/**
 * A name with look-alike characters folded: accents dropped, Cyrillic and Greek look-alikes to
 * Latin, 0→o 1→l 3→e 5→s, then rn→m, vv→w, cl→d. Two names with one skeleton read alike.
 */
function skeleton(name: string): string {
  let s = name.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
  let out = '';
  for (const ch of s) {
    const folded = HOMOGLYPHS.get(ch.charCodeAt(0));
    out += folded !== undefined && ch.length === 1 ? String.fromCharCode(folded).toLowerCase() : (DIGIT_LOOKALIKES[ch] ?? ch);
  }
  s = out.replaceAll('rn', 'm').replaceAll('vv', 'w').replaceAll('cl', 'd');
  return s;
}
const DIGIT_LOOKALIKES: Record<string, string> = { '0': 'o', '1': 'l', '3': 'e', '5': 's' };

/** Why `candidate` imitates `known`, or null (the same organisation, or not alike). */
function imitation(candidate: DomainShape, known: DomainShape): string | null {
  if (candidate.registrable === known.registrable) return null;
  const sameSuffix = candidate.suffixSkeleton === known.suffixSkeleton;
  if (candidate.labelSkeleton === known.labelSkeleton && known.label.length >= 3) {
    if (!sameSuffix) return 'the same name under another suffix';
    return 'confusable characters';
  }
  if (sameSuffix && known.label.length >= 4) {
    const max = known.label.length >= 10 ? 2 : 1;
    const distance = editDistance(candidate.label, known.label, max);
    if (distance <= max) return distance === 1 ? 'one character differs' : 'two characters differ';
  }
  if (known.label.length >= 3 && candidate.label.includes('-')) {
    const c = candidate.labelSkeleton;
    const k = known.labelSkeleton;
    if (c.startsWith(`${k}-`) || c.endsWith(`-${k}`) || c.includes(`-${k}-`)) return 'its name with a word added';
  }
  if (candidate.host.startsWith(`${known.registrable}.`) || candidate.host.startsWith(`${known.registrable}-`)) return 'its name in front of another domain';
  return null;
}

/** Whether `candidate` imitates `known` (exported for tests and docs). */
export function looksLike(candidate: string, known: string): boolean {
  try {
    const c = shapeOf(candidate);
    const k = shapeOf(known);
    return c !== null && k !== null && imitation(c, k) !== null;
  } catch {
    return false;
  }
}

function lookalikeSender(senderDomain: unknown, knownDomains: unknown): string | null {
  const sender = shapeOf(senderDomain);
  if (sender === null || !Array.isArray(knownDomains)) return null;
  const known: DomainShape[] = [];
  for (const domain of knownDomains.slice(0, MAX_KNOWN_DOMAINS)) {
    const shape = shapeOf(domain);
    if (shape === null) continue;
    // The same domain, or another name of the same organisation (mail.github.com for github.com).
    if (shape.registrable === sender.registrable) return null;
    known.push(shape);
  }
  for (const k of known) {
    const why = imitation(sender, k);
    if (why !== null) return `${shownDomain(sender.host)} imitates ${shownDomain(k.host)}, a domain this inbox corresponds with (${why})`;
  }
  return null;
}

/** A domain as shown in a detail: its ASCII (punycode) form too when it has other characters. */
function shownDomain(host: string): string {
  const cut = (s: string) => (s.length > 40 ? `${s.slice(0, 39)}…` : s);
  if (/^[\x20-\x7e]*$/.test(host)) return cut(host);
  const ascii = domainToASCII(host);
  return `${escapeInvisible(cut(host))}${ascii === '' ? '' : ` (${cut(ascii)})`}`;
}

/** Optimal string alignment distance (a swap of neighbours is one edit), or max + 1 once it exceeds max. */
function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max || a.length > MAX_LABEL_CHARS || b.length > MAX_LABEL_CHARS) return max + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2] + 1);
      current.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > max) return max + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length];
}

// ---------------------------------------------------------------------------------------------
// Details

/** Characters a detail must not carry raw: controls, format and invisible characters, lone surrogates, private use. */
function isUnsafe(cp: number): boolean {
  return (
    cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || isInvisible(cp) || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0xe000 && cp <= 0xf8ff) || (cp >= 0xfff0 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe0fff) || cp >= 0xf0000 || cp === 0x17b4 ||
    cp === 0x17b5 || (cp >= 0x180b && cp <= 0x180f)
  );
}

const codePointName = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;

/** `s` with unsafe characters written as U+XXXX (a run of one written once with ×N), whitespace as one space. */
function escapeInvisible(s: string): string {
  const parts: string[] = [];
  let previous = -1;
  let repeat = 0;
  const flush = () => {
    if (repeat > 1) parts.push(`×${repeat}`);
    repeat = 0;
  };
  for (const ch of s) {
    const cp = ch.codePointAt(0) as number;
    if (cp === 0x20 || cp === 0x09 || cp === 0x0a || cp === 0x0d) {
      flush();
      if (parts[parts.length - 1] !== ' ') parts.push(' ');
      previous = -1;
    } else if (isUnsafe(cp)) {
      if (cp === previous) repeat++;
      else {
        flush();
        parts.push(codePointName(cp));
        repeat = 1;
      }
      previous = cp;
    } else {
      flush();
      parts.push(ch);
      previous = -1;
    }
  }
  flush();
  return parts.join('');
}

/** Evidence in quotes: collapsed, escaped, at most MAX_EVIDENCE_CHARS inside the quotes. */
function quote(s: string): string {
  // Read only what can be shown: even all-escaped, MAX_EVIDENCE_CHARS characters need no more input.
  let shown = escapeInvisible(s.slice(0, 4 * MAX_EVIDENCE_CHARS)).trim();
  if (shown.length > MAX_EVIDENCE_CHARS) shown = `${clip(shown, MAX_EVIDENCE_CHARS - 1).trimEnd()}…`;
  return `"${shown}"`;
}

/** At most `max` UTF-16 units, not splitting a surrogate pair, as well-formed text. */
function clip(s: string, max: number): string {
  if (s.length > max) s = s.slice(0, isHighSurrogate(s.charCodeAt(max - 1)) ? max - 1 : max);
  return s.toWellFormed();
}

function finishDetail(detail: string): string {
  const safe = escapeInvisible(detail);
  return safe.length > MAX_DETAIL_CHARS ? `${clip(safe, MAX_DETAIL_CHARS - 1)}…` : safe;
}

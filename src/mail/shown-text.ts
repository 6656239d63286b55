/**
 * What a recipient is shown of markup and rich text, for the outbound guard (src/mail/guard-content.ts,
 * docs/guarded.md): HTML and XML (SVG) as rendered text, RTF as its text, and any text without the
 * format characters a reader never sees. A secret written as character references, split by empty
 * elements, comments, RTF control words or zero-width characters is shown joined, so it is read
 * joined.
 *
 * Rules (the scanners' rule): one forward pass, linear in the input, never throwing; every search
 * (a comment's end, a script's closing tag, a CDATA end) starts where the pass is and the pass
 * continues past what it found, so nothing is read twice. Callers bound the input (512 KiB).
 * The output is never longer than the input (a reference shrinks, a tag becomes at most one
 * separator), attribute values included.
 */
import { closingTagAt, readTag, type RawTag } from './html-tags.js';

/** Format characters (Unicode Cf: zero-width space and joiners, soft hyphen, word joiner, BOM, bidi controls) and the other default-ignorable characters (fillers, variation selectors): shown as nothing. */
const UNSEEN_CHARS = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
const NON_ASCII = /[^\u0000-\u007f]/;
const LONG_LIGATURES = /[\ufdfa\ufdfb]/g;
/** How many times longer withoutUnseenChars can make a text (NFKC of U+3316). */
export const MAX_SEEN_GROWTH = 6;
/** Combining marks kept on one character: no script stacks more; a longer run is cut before normalizing. */
const MAX_MARK_RUN = 8;
const LONG_MARK_RUN = new RegExp(`\\p{M}{${MAX_MARK_RUN + 1},}`, 'gu');
/** Spaces other than U+0020 (no-break, thin, ideographic…): shown as a space. */
const OTHER_SPACES = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/g;

/**
 * `s` as a reader sees its characters: format characters dropped, every kind of space a plain
 * space, and compatibility forms folded (NFKC: full-width `ｇｈｐ＿`, mathematical `𝗀𝗁𝗉`,
 * ligatures and superscripts read as the ASCII they show).
 */
export function withoutUnseenChars(s: string): string {
  // Every character changed here is outside ASCII: most mail is read in one pass.
  if (!NON_ASCII.test(s)) return s;
  const seen = s.replace(UNSEEN_CHARS, '').replace(OTHER_SPACES, ' ');
  // Normalization reorders a run of combining marks in time quadratic in its length: runs are cut
  // first. The two Arabic ligatures that expand 8 and 18 times become a space, so the text grows
  // at most 6 times (a squared katakana word) and the detectors' work stays bounded.
  return seen.replace(LONG_MARK_RUN, (run) => run.slice(0, MAX_MARK_RUN)).replace(LONG_LIGATURES, ' ').normalize('NFKC');
}

/**
 * The stretches a right-to-left override (U+202E) shows reversed, each as it is shown, a line
 * each; '' when there is none. A stretch ends at the override's pop (U+202C), another direction
 * control or a line end. Bidi isolates and embeddings do not reverse Latin text, so they are not
 * read here.
 */
export function overriddenRuns(s: string): string {
  let at = s.indexOf(RTL_OVERRIDE);
  if (at === -1) return '';
  const runs: string[] = [];
  while (at !== -1) {
    let end = at + 1;
    while (end < s.length && !'\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\n\r'.includes(s[end])) end++;
    runs.push([...s.slice(at + 1, end)].reverse().join(''));
    at = s.indexOf(RTL_OVERRIDE, end);
  }
  return runs.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Character references

/**
 * Named references that decode to what a secret is made of (ASCII punctuation), to spaces, or to
 * nothing visible (the HTML standard's table, these entries only). Letters and digits have no
 * names, except `fjlig`; a name not listed stays as written, and `&`, `;` end a token as the
 * non-ASCII character it stands for would.
 */
const NAMED_REFERENCES = new Map<string, string>([
  ['amp', '&'], ['AMP', '&'], ['lt', '<'], ['LT', '<'], ['gt', '>'], ['GT', '>'], ['quot', '"'], ['QUOT', '"'], ['apos', "'"],
  ['ast', '*'], ['midast', '*'], ['bsol', '\\'], ['colon', ':'], ['comma', ','], ['commat', '@'], ['dollar', '$'], ['equals', '='],
  ['excl', '!'], ['grave', '`'], ['DiacriticalGrave', '`'], ['Hat', '^'], ['lbrace', '{'], ['lcub', '{'], ['rbrace', '}'], ['rcub', '}'],
  ['lbrack', '['], ['lsqb', '['], ['rbrack', ']'], ['rsqb', ']'], ['lowbar', '_'], ['UnderBar', '_'], ['lpar', '('], ['rpar', ')'],
  ['num', '#'], ['percnt', '%'], ['period', '.'], ['plus', '+'], ['quest', '?'], ['semi', ';'], ['sol', '/'], ['verbar', '|'],
  ['vert', '|'], ['VerticalLine', '|'], ['fjlig', 'fj'], ['Tab', '\t'], ['NewLine', '\n'],
  ['nbsp', ' '], ['NonBreakingSpace', ' '], ['ensp', ' '], ['emsp', ' '], ['emsp13', ' '], ['emsp14', ' '], ['numsp', ' '], ['puncsp', ' '],
  ['thinsp', ' '], ['ThinSpace', ' '], ['hairsp', ' '], ['VeryThinSpace', ' '], ['MediumSpace', ' '], ['ThickSpace', ' '],
  ['shy', ''], ['zwj', ''], ['zwnj', ''], ['lrm', ''], ['rlm', ''], ['NoBreak', ''], ['ZeroWidthSpace', ''], ['NegativeVeryThinSpace', ''],
  ['NegativeThinSpace', ''], ['NegativeMediumSpace', ''], ['NegativeThickSpace', ''], ['af', ''], ['ApplyFunction', ''], ['it', ''],
  ['InvisibleTimes', ''], ['ic', ''], ['InvisibleComma', ''],
]);
/** The listed names a browser also reads without their `;` (HTML's legacy references), longest first. */
const LEGACY_REFERENCES = ['QUOT', 'quot', 'nbsp', 'AMP', 'amp', 'shy', 'GT', 'gt', 'LT', 'lt'];
/** Longest name in NAMED_REFERENCES. */
const MAX_REFERENCE_NAME = 24;
const MAX_CODE_POINT = 0x10ffff;

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isHexDigit = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
const isAlnum = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/**
 * The character reference at `at` (an `&`) as a browser decodes it, or null when it is none.
 * Numeric ones take any number of digits (leading zeros too) and need no `;`. In an attribute
 * value, a legacy name without `;` followed by a letter, digit or `=` is left as written.
 */
export function decodeReference(s: string, at: number, inAttribute: boolean): { text: string; end: number } | null {
  let p = at + 1;
  if (s.charCodeAt(p) === 0x23 /* # */) {
    p++;
    const hex = s.charCodeAt(p) === 0x78 || s.charCodeAt(p) === 0x58;
    if (hex) p++;
    const digitsStart = p;
    let cp = 0;
    for (; p < s.length && (hex ? isHexDigit(s.charCodeAt(p)) : isDigit(s.charCodeAt(p))); p++) {
      // Every digit is read (the pass moves past it); the value stops growing once out of range.
      if (cp <= MAX_CODE_POINT) cp = cp * (hex ? 16 : 10) + parseInt(s[p], 16);
    }
    if (p === digitsStart) return null;
    const end = s.charCodeAt(p) === 0x3b ? p + 1 : p;
    const valid = cp > 0 && cp <= MAX_CODE_POINT && !(cp >= 0xd800 && cp <= 0xdfff);
    return { text: valid ? String.fromCodePoint(cp) : '\ufffd', end };
  }
  const nameStart = p;
  while (p < s.length && p - nameStart <= MAX_REFERENCE_NAME && isAlnum(s.charCodeAt(p))) p++;
  if (s.charCodeAt(p) === 0x3b) {
    const text = NAMED_REFERENCES.get(s.slice(nameStart, p));
    if (text !== undefined) return { text, end: p + 1 };
  }
  for (const name of LEGACY_REFERENCES) {
    if (!s.startsWith(name, nameStart)) continue;
    const end = nameStart + name.length;
    if (s.charCodeAt(end) === 0x3b) return { text: NAMED_REFERENCES.get(name)!, end: end + 1 };
    if (inAttribute && (isAlnum(s.charCodeAt(end)) || s.charCodeAt(end) === 0x3d)) return null;
    return { text: NAMED_REFERENCES.get(name)!, end };
  }
  return null;
}

/** s[from, to) with its character references decoded. */
function decodeReferences(s: string, from: number, to: number, inAttribute: boolean): string {
  // Sliced first: a search of the whole input from each run would read it again and again.
  const value = s.slice(from, to);
  let amp = value.indexOf('&');
  if (amp === -1) return value;
  const parts: string[] = [];
  let run = 0;
  for (; amp < value.length; amp++) {
    if (value.charCodeAt(amp) !== 0x26) continue;
    const ref = decodeReference(value, amp, inAttribute);
    if (ref === null) continue;
    parts.push(value.slice(run, amp), ref.text);
    run = ref.end;
    amp = ref.end - 1;
  }
  parts.push(value.slice(run));
  return parts.join('');
}

// ---------------------------------------------------------------------------------------------
// HTML and XML

/** Elements that start a new line when rendered: words on either side never join. */
const BLOCK_ELEMENTS = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'br', 'caption', 'center', 'dd', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'html', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section',
  'table', 'tbody', 'tfoot', 'thead', 'tr', 'ul', 'option', 'select', 'textarea', 'iframe', 'object', 'video', 'audio', 'canvas',
]);
/** Table cells: side by side, apart. */
const CELL_ELEMENTS = new Set(['td', 'th']);
/** Elements whose content is never shown (HTML only: in SVG and XML every text counts). */
const UNSHOWN_CONTENT = new Set(['script', 'style']);
/** Elements whose whitespace is shown as written. */
const PREFORMATTED = new Set(['pre', 'textarea', 'listing', 'plaintext', 'xmp']);
/** HTML attributes whose values a reader sees (a tooltip, an image's text, a field's value) or that a client fetches or follows (where a secret leaves by a click or an image load). */
const SHOWN_ATTRIBUTES = new Set([
  'alt', 'title', 'value', 'placeholder', 'aria-label', 'label', 'summary', 'content', 'href', 'src', 'srcset', 'action', 'formaction',
  'background', 'poster', 'cite', 'data', 'longdesc', 'usemap',
]);
/** What an HTML tag is read for: the shown attributes, and what hides an element or reverses its text. */
const TAG_ATTRIBUTES = new Set([...SHOWN_ATTRIBUTES, 'style', 'hidden', 'dir']);
const LONGEST_SHOWN_ATTRIBUTE = 10;
/** Elements without content: hiding one hides only itself. */
const VOID_ELEMENTS = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
/** Inline styles that hide an element's content: gone, invisible, zero-sized text, fully transparent, no height. */
const HIDING_STYLE = /display\s*:\s*none|visibility\s*:\s*hidden|(?:font-size|opacity|max-height|line-height)\s*:\s*0(?![\d.]*[1-9])/i;
/** Characters of a style attribute read for what hides (real ones are far shorter). */
const MAX_STYLE_CHARS = 1_024;
/** Right-to-left override and its end (also written by `<bdo dir="rtl">`): Latin text between them is shown reversed. */
const RTL_OVERRIDE = '\u202e';
const POP_DIRECTION = '\u202c';
const NO_ATTRIBUTES = new Set<string>();

const isHtmlSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
const isLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** Rendered text built piece by piece: whitespace runs shown as one space, block edges as one newline. */
class ShownText {
  private parts: string[] = [];
  /** 0 none, 1 a space, 2 a tab (cell), 3 a newline (block). */
  private pending = 0;

  text(s: string, preformatted: boolean): void {
    if (preformatted) {
      this.flush();
      this.parts.push(s);
      return;
    }
    let run = 0;
    for (let k = 0; k < s.length; k++) {
      if (!isHtmlSpace(s.charCodeAt(k))) continue;
      if (k > run) {
        this.flush();
        this.parts.push(s.slice(run, k));
      }
      if (this.pending === 0) this.pending = 1;
      run = k + 1;
    }
    if (run < s.length) {
      this.flush();
      this.parts.push(run === 0 ? s : s.slice(run));
    }
  }

  separate(kind: 1 | 2 | 3): void {
    if (kind > this.pending) this.pending = kind;
  }

  private flush(): void {
    if (this.pending !== 0 && this.parts.length > 0) this.parts.push(this.pending === 3 ? '\n' : this.pending === 2 ? '\t' : ' ');
    this.pending = 0;
  }

  toString(): string {
    return this.parts.join('');
  }
}

/** Where the comment opened at `from` (just past `<!--`) ends, as HTML reads it: `-->`, `--!>`, or `<!-->` and `<!--->` at once. */
function commentEnd(html: string, from: number): number {
  if (html.charCodeAt(from) === 0x3e) return from + 1;
  if (html.startsWith('->', from)) return from + 2;
  for (let k = from; k < html.length; k++) {
    if (html.charCodeAt(k) !== 0x2d || html.charCodeAt(k + 1) !== 0x2d) continue;
    if (html.charCodeAt(k + 2) === 0x3e) return k + 3;
    if (html.charCodeAt(k + 2) === 0x21 && html.charCodeAt(k + 3) === 0x3e) return k + 4;
  }
  return html.length;
}

/** Just past the next `>` from `from`, or the input length (a bogus comment, a doctype, a processing instruction). */
function pastNextGt(html: string, from: number): number {
  const gt = html.indexOf('>', from);
  return gt === -1 ? html.length : gt + 1;
}

/**
 * The text an HTML part shows (`markup: 'html'`), or an XML or SVG document (`'xml'`): character
 * references decoded, tags and comments dropped without a gap (an empty element or a comment
 * inside a word leaves it whole), a newline at each block element and a tab between table cells,
 * whitespace collapsed outside `<pre>`, `<script>` and `<style>` content left out (HTML), CDATA
 * sections as text, the content of Outlook's conditional comments (`<!--[if mso]>…<![endif]-->`)
 * as text, an image's `alt` where the image is, `<bdo dir="rtl">` as a right-to-left override,
 * and then, a line each, the values of the attributes a reader sees or a client follows (HTML) or
 * of every attribute (XML). With `hiddenContent: 'dropped'` an HTML element hidden by its own
 * inline style or `hidden` attribute shows nothing (`ghp_ab<span style="display:none">x</span>cd`
 * is `ghp_abcd`); callers read both views, since hiding by class or colour is not seen here.
 */
export function markupAsShown(html: string, markup: 'html' | 'xml', hiddenContent: 'read' | 'dropped' = 'read'): string {
  const shown = new ShownText();
  const attributes: string[] = [];
  let preformatted = 0;
  let run = 0;
  const text = (to: number) => {
    if (to > run) shown.text(decodeReferences(html, run, to, false), preformatted > 0);
  };
  for (let p = 0; p < html.length; ) {
    const lt = html.indexOf('<', p);
    if (lt === -1) break;
    text(lt);
    p = lt + 1;
    run = lt;
    const next = html.charCodeAt(lt + 1);
    if (html.startsWith('<!--[if', lt)) {
      // Outlook shows what its conditional comments hold: read the content as HTML.
      run = p = pastNextGt(html, lt + 7);
    } else if (html.startsWith('<!--', lt)) {
      run = p = commentEnd(html, lt + 4);
    } else if (html.startsWith('<![CDATA[', lt)) {
      const end = html.indexOf(']]>', lt + 9);
      shown.text(html.slice(lt + 9, end === -1 ? html.length : end), preformatted > 0);
      run = p = end === -1 ? html.length : end + 3;
    } else if (next === 0x21 /* ! */ || next === 0x3f /* ? */ || (next === 0x2f && !isLetter(html.charCodeAt(lt + 2)))) {
      run = p = pastNextGt(html, lt + 2);
    } else if (isLetter(next) || next === 0x2f) {
      const tag =
        markup === 'html'
          ? readTag(html, lt, TAG_ATTRIBUTES, LONGEST_SHOWN_ATTRIBUTE)
          : readTag(html, lt, NO_ATTRIBUTES, 0, (start, end) => attributes.push(decodeReferences(html, start, end, true)));
      if (markup === 'html' && hiddenContent === 'dropped' && !tag.closing && isHidden(html, tag)) {
        // The element and its content show nothing; a block still stands apart.
        if (BLOCK_ELEMENTS.has(tag.name)) shown.separate(3);
        run = p = VOID_ELEMENTS.has(tag.name) ? tag.end : elementEnd(html, tag.end, tag.name);
        continue;
      }
      if (markup === 'html') attributeValues(html, tag, attributes, shown, preformatted > 0);
      if (tag.name === 'bdo') {
        const dir = tag.attributes.get('dir');
        if (tag.closing) shown.text(POP_DIRECTION, true);
        else if (dir && html.slice(dir.start, dir.end).trim().toLowerCase() === 'rtl') shown.text(RTL_OVERRIDE, true);
      }
      if (BLOCK_ELEMENTS.has(tag.name)) shown.separate(3);
      else if (CELL_ELEMENTS.has(tag.name)) shown.separate(2);
      if (PREFORMATTED.has(tag.name)) preformatted = Math.max(0, preformatted + (tag.closing ? -1 : 1));
      run = p = tag.end;
      if (markup === 'html' && !tag.closing && UNSHOWN_CONTENT.has(tag.name)) run = p = closingTagAt(html, tag.end, tag.name);
    }
    // Anything else (`<` before a space or digit) is text, read with the run.
  }
  text(html.length);
  const body = shown.toString();
  return attributes.length === 0 ? body : `${body}\n${attributes.join('\n')}`;
}

/** Whether an opening tag hides its element: the `hidden` attribute, or an inline style that hides. */
function isHidden(html: string, tag: RawTag): boolean {
  if (tag.name === '') return false;
  if (tag.attributes.has('hidden')) return true;
  const style = tag.attributes.get('style');
  return style != null && HIDING_STYLE.test(decodeReferences(html, style.start, Math.min(style.end, style.start + MAX_STYLE_CHARS), true));
}

const isTagNameChar = (c: number) => isAlnum(c) || c === 0x3a || c === 0x2d || c === 0x5f;

/** Just past the end tag that closes the element opened before `from` (same-name elements nest), or the input length. */
function elementEnd(html: string, from: number, name: string): number {
  let depth = 1;
  for (let k = html.indexOf('<', from); k !== -1; k = html.indexOf('<', k + 1)) {
    const closing = html.charCodeAt(k + 1) === 0x2f;
    const at = k + (closing ? 2 : 1);
    if (html.slice(at, at + name.length).toLowerCase() !== name || isTagNameChar(html.charCodeAt(at + name.length))) continue;
    if (!closing) depth++;
    else if (--depth === 0) return pastNextGt(html, at);
  }
  return html.length;
}

/** An HTML tag's shown attribute values, decoded: `alt` shown in place, the others kept for the end. */
function attributeValues(html: string, tag: RawTag, out: string[], shown: ShownText, preformatted: boolean): void {
  for (const [name, span] of tag.attributes) {
    if (span === null || !SHOWN_ATTRIBUTES.has(name)) continue;
    const value = decodeReferences(html, span.start, span.end, true);
    if (name === 'alt' && tag.name === 'img') shown.text(value, preformatted);
    else out.push(value);
  }
}


// ---------------------------------------------------------------------------------------------
// RTF

/** Control words that end a line or a cell. */
const RTF_LINE_WORDS = new Set(['par', 'line', 'sect', 'page', 'row', 'pard']);
const RTF_CELL_WORDS = new Set(['tab', 'cell']);
/** Characters of a control word's name and parameter read (RTF allows 32 and 10; longer is not RTF, and is stepped over). */
const MAX_RTF_WORD = 32;
/** Groups whose `\uc` is remembered; deeper ones share the deepest's (no real document nests this far). */
const MAX_RTF_DEPTH = 256;

/**
 * The text an RTF document shows: control words dropped without a gap (`\par`, `\line`, `\row`
 * a newline, `\tab`, `\cell` a tab), `\'hh` as that byte (Windows-1252 read as Latin-1: the
 * ASCII that tokens are made of is the same), `\uN` as that character with its `\ucN` fallback
 * characters skipped, `\~` a space, `\-` nothing, `\_` a hyphen, `\bin N` and its N bytes
 * skipped, braces dropped. Every group's text is kept, a destination's (`{\*\…}`) too.
 */
export function rtfAsShown(rtf: string): string {
  const out: string[] = [];
  const ucStack: number[] = [1];
  let uc = 1;
  /** Fallback characters still to skip after a `\u`. */
  let skip = 0;
  const emit = (s: string) => {
    if (skip > 0) skip--;
    else out.push(s);
  };
  for (let p = 0; p < rtf.length; ) {
    const c = rtf.charCodeAt(p);
    if (c === 0x7b /* { */) {
      if (ucStack.length < MAX_RTF_DEPTH) ucStack.push(uc);
      skip = 0;
      p++;
      continue;
    }
    if (c === 0x7d /* } */) {
      if (ucStack.length > 1) uc = ucStack.pop()!;
      skip = 0;
      p++;
      continue;
    }
    if (c === 0x0d || c === 0x0a) {
      p++;
      continue;
    }
    if (c !== 0x5c /* \ */) {
      // A run of plain characters at once (the common case).
      let end = p + 1;
      while (end < rtf.length && !'{}\\\r\n'.includes(rtf[end])) end++;
      if (skip === 0) out.push(rtf.slice(p, end));
      else {
        const skipped = Math.min(skip, end - p);
        skip -= skipped;
        if (p + skipped < end) out.push(rtf.slice(p + skipped, end));
      }
      p = end;
      continue;
    }
    const next = rtf.charCodeAt(p + 1);
    if (isLetter(next)) {
      let q = p + 1;
      while (q < rtf.length && isLetter(rtf.charCodeAt(q))) q++;
      const word = q - (p + 1) <= MAX_RTF_WORD ? rtf.slice(p + 1, q) : '';
      let param: number | null = null;
      const negative = rtf.charCodeAt(q) === 0x2d && isDigit(rtf.charCodeAt(q + 1));
      if (negative) q++;
      if (isDigit(rtf.charCodeAt(q))) {
        param = 0;
        for (; q < rtf.length && isDigit(rtf.charCodeAt(q)); q++) if (param < 1e9) param = param * 10 + (rtf.charCodeAt(q) - 0x30);
        if (negative) param = -param;
      }
      if (rtf.charCodeAt(q) === 0x20) q++; // the delimiting space belongs to the word
      p = q;
      if (word === 'u' && param !== null) {
        const unit = param < 0 ? param + 65536 : param;
        skip = 0;
        if (unit > 0 && unit < 65536) out.push(String.fromCharCode(unit));
        skip = uc;
      } else if (word === 'uc' && param !== null) {
        uc = Math.max(0, Math.min(param, 16));
      } else if (word === 'bin' && param !== null && param > 0) {
        p = Math.min(rtf.length, p + param);
      } else if (RTF_LINE_WORDS.has(word)) {
        emit('\n');
      } else if (RTF_CELL_WORDS.has(word)) {
        emit('\t');
      } else if (skip > 0) {
        skip--; // a control word counts as one fallback character
      }
      continue;
    }
    if (next === 0x27 /* ' */) {
      const hex = rtf.slice(p + 2, p + 4);
      p += 4;
      if (/^[0-9a-fA-F]{2}$/.test(hex)) emit(String.fromCharCode(parseInt(hex, 16)));
      continue;
    }
    p += 2;
    if (next === 0x7e /* ~ */) emit(' ');
    else if (next === 0x5f /* _ */) emit('-');
    else if (next === 0x5c || next === 0x7b || next === 0x7d) emit(String.fromCharCode(next));
    else if (next === 0x0a || next === 0x0d) emit('\n');
    // `\-` (an optional hyphen), `\*` and the others show nothing.
  }
  return out.join('');
}

/**
 * The plain text of a received HTML body, for a message that has no text part of its own (its
 * stored `text`, and from it `extracted_text` and `preview`). mailparser derives this with the
 * html-to-text library, whose time grows with the square of the tag nesting (issue 32: 2 MB of
 * nested `<div>` took 52 s), so svc turns that off (workers/pool/parse.ts) and renders it here.
 *
 * One forward pass over the HTML with the shared tag reader (src/mail/html-tags.ts): linear in
 * the input, never throwing, no regular expression over a run of the body, and the state it keeps
 * (open lists, quote depth) is bounded. The output reads like html-to-text's without its line
 * wrapping: whitespace collapsed, a line per block element, a blank line around paragraphs,
 * headings, lists, tables and quotes, `* ` and `1. ` before list items, `> ` before quoted lines,
 * `<pre>` kept as written, a link's target after its text as ` [url]`, an image's alt text, and
 * nothing of scripts, styles or the title.
 */
import { decodeEntity } from './actions.js';
import { closingTagAt, readTag, skipMarkup } from './html-tags.js';

/** Lists tracked for their item markers; deeper ones are still rendered, their items marked `* `. */
const MAX_OPEN_LISTS = 32;
/** `> ` written before a quoted line at most this many times, however deep the quotes nest. */
const MAX_QUOTE_MARKS = 8;
/** A link target or alt text longer than this is not shown (a data: URL, a hostile attribute). */
const MAX_ATTRIBUTE_SHOWN_CHARS = 2_048;

/** Elements that end the line before them and start one after them. */
const LINE_ELEMENTS = new Set([
  'address', 'article', 'aside', 'center', 'dd', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'header',
  'li', 'main', 'nav', 'section', 'tr', 'caption',
]);
/** Elements set apart by a blank line before and after them. */
const PARAGRAPH_ELEMENTS = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'ul', 'ol', 'blockquote', 'pre', 'hr']);
/** Elements whose content is not shown. */
const HIDDEN_CONTENT_ELEMENTS = new Set(['script', 'style', 'title', 'template', 'xml']);
/** Cells: a space between neighbours on a row. */
const CELL_ELEMENTS = new Set(['td', 'th']);
const WANTED_ATTRIBUTES = new Set(['href', 'alt']);

const isHtmlSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
const isAsciiLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** Text built piece by piece: spaces collapsed, line and paragraph breaks merged, quote marks at line starts. */
class PlainText {
  /** Built by concatenation: V8 keeps it as a rope until it is read, with no array of pieces to collect. */
  private text = '';
  /** Line breaks owed before the next word: 1 ends the line, 2 leaves a blank line. */
  private pendingBreaks = 0;
  private pendingSpace = false;
  private atStart = true;
  private atLineStart = true;
  quoteDepth = 0;

  /** Text between tags: entities decoded, runs of whitespace one space (`pre`: kept as written). */
  append(html: string, from: number, to: number, pre: boolean): void {
    let run = from;
    for (let k = from; k < to; ) {
      const c = html.charCodeAt(k);
      if (pre && (c === 0x0a || c === 0x0d)) {
        this.word(html.slice(run, k));
        if (!(c === 0x0d && html.charCodeAt(k + 1) === 0x0a)) this.hardBreak();
        run = ++k;
        continue;
      }
      if (!pre && isHtmlSpace(c)) {
        this.word(html.slice(run, k));
        this.pendingSpace = true;
        run = ++k;
        continue;
      }
      if (c === 0x26 /* & */) {
        const entity = decodeEntity(html, k, to);
        if (entity !== null) {
          this.word(html.slice(run, k));
          if (entity.text === ' ' && !pre) this.pendingSpace = true;
          else this.word(entity.text);
          run = k = entity.end;
          continue;
        }
      }
      k++;
    }
    this.word(html.slice(run, to));
  }

  /** Ends the current line (`blank`: and leaves an empty one); breaks never pile up beyond that. */
  breakLine(blank: boolean): void {
    this.pendingSpace = false;
    if (this.atStart) return;
    this.pendingBreaks = Math.max(this.pendingBreaks, blank ? 2 : 1);
  }

  /** `<br>` and a newline in `<pre>`: one more line, even an empty one. */
  hardBreak(): void {
    this.pendingSpace = false;
    this.flushBreaks();
    this.push('\n');
    this.atLineStart = true;
  }

  space(): void {
    this.pendingSpace = true;
  }

  word(s: string): void {
    if (s === '') return;
    if (this.pendingBreaks > 0) this.flushBreaks();
    else if (this.pendingSpace && !this.atLineStart) this.push(' ');
    this.pendingSpace = false;
    if (this.atLineStart && this.quoteDepth > 0) this.push('> '.repeat(Math.min(this.quoteDepth, MAX_QUOTE_MARKS)));
    this.atLineStart = false;
    this.atStart = false;
    this.push(s);
  }

  /** A mark of where the text stands now, for textSince. */
  mark(): number {
    return this.text.length;
  }

  /** The text written since `mark`, or null when it is longer than `max`. */
  textSince(mark: number, max: number): string | null {
    return this.text.length - mark > max ? null : this.text.slice(mark);
  }

  toString(): string {
    return this.text.trim();
  }

  private flushBreaks(): void {
    if (this.pendingBreaks > 0 && !this.atStart) this.push(this.atLineStart ? '\n'.repeat(this.pendingBreaks - 1) : '\n'.repeat(this.pendingBreaks));
    this.pendingBreaks = 0;
    this.atLineStart = true;
  }

  private push(s: string): void {
    this.text += s;
  }
}


/** An attribute's value with its entities decoded, or null when absent or too long to show. */
function attributeValue(html: string, span: { start: number; end: number } | null | undefined): string | null {
  if (!span || span.end - span.start > MAX_ATTRIBUTE_SHOWN_CHARS) return null;
  const raw = html.slice(span.start, span.end);
  let out = '';
  let run = 0;
  for (let k = raw.indexOf('&'); k !== -1; k = raw.indexOf('&', k + 1)) {
    const entity = decodeEntity(raw, k, raw.length);
    if (entity === null) continue;
    out += raw.slice(run, k) + entity.text;
    run = entity.end;
    k = entity.end - 1;
  }
  return (out + raw.slice(run)).trim();
}

/** A link target worth showing after its text: a web or mail address (not `javascript:`, `cid:` or a data: URL). */
function shownTarget(href: string | null): string | null {
  if (href === null) return null;
  const lower = href.slice(0, 8).toLowerCase();
  return lower.startsWith('http://') || lower.startsWith('https://') || lower.startsWith('mailto:') ? href : null;
}

/** The plain text of an HTML body (see the module comment); linear in `html`. */
export function htmlText(html: string): string {
  const out = new PlainText();
  /** For each open list tracked: its next item number, or 0 for a bulleted list. */
  const lists: number[] = [];
  let untrackedLists = 0;
  let preDepth = 0;
  /** The open link's target and where its text started, to tell whether the text already says it. */
  let link: { target: string; mark: number } | null = null;
  const closeLink = () => {
    if (link === null) return;
    const said = out.textSince(link.mark, link.target.length + 2)?.trim();
    if (said !== link.target && said !== link.target.replace(/^mailto:/i, '')) {
      out.space();
      out.word(`[${link.target}]`);
    }
    link = null;
  };
  const n = html.length;
  let pos = 0;
  while (pos < n) {
    const lt = html.indexOf('<', pos);
    const textEnd = lt === -1 ? n : lt;
    out.append(html, pos, textEnd, preDepth > 0);
    if (lt === -1) break;
    pos = skipMarkup(html, lt);
    if (pos !== lt) continue;
    const next = html.charCodeAt(lt + 1);
    if (!(isAsciiLetter(next) || (next === 0x2f && isAsciiLetter(html.charCodeAt(lt + 2))))) {
      out.append(html, lt, lt + 1, preDepth > 0); // a literal '<', e.g. "a < b"
      pos = lt + 1;
      continue;
    }
    const tag = readTag(html, lt, WANTED_ATTRIBUTES, 4);
    pos = tag.end;
    const { name, closing } = tag;
    if (name === 'br') {
      out.hardBreak();
    } else if (name === 'a') {
      closeLink(); // links do not nest; a new one ends the open one
      const target = closing ? null : shownTarget(attributeValue(html, tag.attributes.get('href')));
      if (target !== null) link = { target, mark: out.mark() };
    } else if (name === 'img') {
      const alt = attributeValue(html, tag.attributes.get('alt'));
      if (alt) out.word(alt);
    } else if (CELL_ELEMENTS.has(name)) {
      out.space();
    } else if (name === 'ul' || name === 'ol') {
      out.breakLine(true);
      if (!closing) {
        if (lists.length < MAX_OPEN_LISTS) lists.push(name === 'ol' ? 1 : 0);
        else untrackedLists++;
      } else if (untrackedLists > 0) untrackedLists--;
      else lists.pop();
    } else if (name === 'li') {
      out.breakLine(false);
      if (!closing) {
        const at = lists.length - 1;
        const number = untrackedLists === 0 && at >= 0 ? lists[at] : 0;
        if (number > 0) lists[at]++;
        out.word(number > 0 ? `${number}.` : '*');
        out.space();
      }
    } else if (name === 'blockquote') {
      out.breakLine(true);
      out.quoteDepth = Math.max(0, out.quoteDepth + (closing ? -1 : 1));
    } else if (name === 'pre') {
      out.breakLine(true);
      preDepth = Math.max(0, preDepth + (closing ? -1 : 1));
    } else if (PARAGRAPH_ELEMENTS.has(name)) {
      out.breakLine(true);
    } else if (LINE_ELEMENTS.has(name)) {
      out.breakLine(false);
    } else if (!closing && HIDDEN_CONTENT_ELEMENTS.has(name)) {
      pos = closingTagAt(html, pos, name);
    }
  }
  closeLink();
  return out.toString();
}

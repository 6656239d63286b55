/**
 * The new part of a reply: `extracted_text` and `extracted_html` are the message body with the
 * quoted history removed, so an agent reads what the sender actually wrote this time.
 *
 * Text: cut at the first reply attribution ("On … wrote:", wrapped over up to three lines, and
 * its common translations), an Outlook "-----Original Message-----" line or an Outlook header
 * block ("From:" followed by "Sent:"/"Date:"), then drop the remaining `>` quoted lines.
 * HTML: drop Gmail, Apple Mail, Thunderbird and Yahoo quote containers, and cut everything from
 * an Outlook reply header to the end. When stripping leaves nothing, the whole body is kept,
 * because a message that is only a quotation still has to show something.
 *
 * Bodies come from strangers (issue 16, finding 3), so every step here is linear in the input and
 * looks at a bounded prefix of it: no regex that can backtrack over a run of the body, a
 * hand-written HTML scanner, and the pattern tests only on lines short enough to be markers.
 */
import { extractActions, type ExtractedActions } from './actions.js';
import { assessManipulation, type ManipulationVerdict } from './manipulation.js';

/**
 * Extraction reads at most this many UTF-16 units of a body. The new part of a reply is at its
 * top and written by a person; the complete body is still stored in `text`/`html`. This bounds
 * the work and the extra copy per message whatever size the edge accepted.
 */
export const EXTRACT_MAX_CHARS = 512 * 1024;
/** Attribution, separator and header lines are short; a longer line is body text and skips the marker tests. */
const MARKER_LINE_MAX_CHARS = 1_000;
/**
 * Open elements tracked while scanning HTML. Real mail nests a few dozen deep; past this a
 * hostile body's further opens are not tracked (only quote removal and re-closing use them).
 */
const MAX_OPEN_ELEMENTS = 1_000;

export const PREVIEW_LENGTH = 200;

const ATTRIBUTION_START = /^\s*(On|Am|Le|El|Il|Op)\s/;
const ORIGINAL_MESSAGE = /^\s*-{2,}\s*(Original Message|Ursprüngliche Nachricht|Message d'origine|Mensaje original)\s*-{2,}\s*$/i;
const OUTLOOK_RULE = /^\s*_{10,}\s*$/;
const HEADER_FROM = /^\s*\*?(From|Von|De)\*?:\s*\S/;
const HEADER_SENT = /^\s*\*?(Sent|Date|Gesendet|Envoyé|Enviado)\*?:\s*\S/;
/** Applied to an attribution with its final ':' (and any whitespace after it) removed, so none of these can backtrack over the line. */
const ATTRIBUTION_END = [/\bwrote$/i, /\bschrieb\b/i, /\ba écrit\s*$/i, /\bescribió$/i, /\bscritto$/i, /\bschreef\b/i];

const markerLine = (line: string | undefined): line is string => line !== undefined && line.length <= MARKER_LINE_MAX_CHARS;

function isAttribution(lines: string[], i: number): number {
  if (!markerLine(lines[i]) || !ATTRIBUTION_START.test(lines[i])) return 0;
  // Clients wrap long attributions; accept the end marker within three lines.
  let joined = '';
  for (let n = 0; n < 3 && markerLine(lines[i + n]); n++) {
    joined += (n ? ' ' : '') + lines[i + n].trim();
    const end = joined.trimEnd();
    if (end.endsWith(':') && ATTRIBUTION_END.some((re) => re.test(end.slice(0, -1)))) return n + 1;
  }
  return 0;
}

function isOutlookHeader(lines: string[], i: number): boolean {
  if (!markerLine(lines[i]) || !HEADER_FROM.test(lines[i])) return false;
  if (i > 0 && lines[i - 1].trim() !== '' && !(markerLine(lines[i - 1]) && OUTLOOK_RULE.test(lines[i - 1]))) return false;
  for (let n = 1; n <= 3 && i + n < lines.length; n++) if (markerLine(lines[i + n]) && HEADER_SENT.test(lines[i + n])) return true;
  return false;
}

/** Where the quoted history starts, as a line index; lines.length when there is none. */
function historyStart(lines: string[]): number {
  for (let i = 0; i < lines.length; i++) {
    if (isAttribution(lines, i) > 0) return i;
    if (!markerLine(lines[i])) continue;
    if (ORIGINAL_MESSAGE.test(lines[i])) return i;
    if (OUTLOOK_RULE.test(lines[i]) && lines.slice(i + 1, i + 3).some((l) => markerLine(l) && HEADER_FROM.test(l))) return i;
    if (isOutlookHeader(lines, i)) return i;
  }
  return lines.length;
}

/** Where the leading blank lines end: just after the last line break before the first visible character (0 when none). */
export function leadingBlankLinesEnd(s: string): number {
  const firstVisible = s.search(/\S/);
  return firstVisible <= 0 ? 0 : s.lastIndexOf('\n', firstVisible - 1) + 1;
}

/** Drops leading blank lines (whitespace up to the last line break before the first visible character). */
const dropLeadingBlankLines = (s: string): string => s.slice(leadingBlankLinesEnd(s));

const isQuotedLine = (line: string) => line.trimStart().startsWith('>');

export function extractText(text: string | null): string | null {
  if (text === null) return null;
  const body = text.length > EXTRACT_MAX_CHARS ? text.slice(0, EXTRACT_MAX_CHARS) : text;
  const lines = body.replace(/\r\n?/g, '\n').split('\n');
  const kept = lines.slice(0, historyStart(lines)).filter((l) => !isQuotedLine(l));
  const result = dropLeadingBlankLines(kept.join('\n').trimEnd());
  return result.trim() === '' ? body.trim() : result;
}

/** The start of a text for a list view: whitespace collapsed, at most PREVIEW_LENGTH characters. */
export function previewOf(text: string | null): string | null {
  if (text === null) return null;
  // Only the start is shown: collapse a bounded prefix (4 UTF-16 units per character is enough
  // for any run of whitespace short of that) instead of the whole body.
  const start = text.trimStart().slice(0, PREVIEW_LENGTH * 4 + 2);
  const collapsed = start.replace(/\s+/g, ' ').trim();
  const chars = [...collapsed];
  if (chars.length <= PREVIEW_LENGTH && start.length < PREVIEW_LENGTH * 4 + 2) return collapsed;
  if (chars.length <= PREVIEW_LENGTH) return previewOfWhole(text);
  return `${chars.slice(0, PREVIEW_LENGTH).join('').trimEnd()}…`;
}

/** The rare body whose first characters are mostly whitespace: collapse all of it (linear: one global replace). */
function previewOfWhole(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  const chars = [...collapsed.slice(0, PREVIEW_LENGTH * 2 + 2)];
  return chars.length <= PREVIEW_LENGTH ? collapsed : `${chars.slice(0, PREVIEW_LENGTH).join('').trimEnd()}…`;
}

// ---- HTML ----

const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

interface HtmlTag {
  /** Offsets of `<` and just past `>`. */
  start: number;
  end: number;
  closing: boolean;
  /** Lower-cased. */
  name: string;
  /** Lower-cased attribute names → values; the first of a repeated name wins, as in browsers. */
  attrs: Map<string, string>;
  selfClosing: boolean;
}

const isAsciiLetter = (c: number) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
/** `[\w:-]`, the characters of a tag name after its first letter. */
const isNameChar = (c: number) => isAsciiLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x3a || c === 0x2d;

/**
 * The tags of an HTML document in order, skipping comments, in one forward pass: no position is
 * read twice. Like a browser, a tag or comment left open at the end swallows the rest, which ends
 * the scan; `stoppedAt` is then where it began (else the input length).
 */
function scanTags(html: string): { tags: HtmlTag[]; stoppedAt: number } {
  const tags: HtmlTag[] = [];
  const n = html.length;
  let pos = 0;
  for (;;) {
    const lt = html.indexOf('<', pos);
    if (lt < 0) return { tags, stoppedAt: n };
    if (html.startsWith('<!--', lt)) {
      const close = html.indexOf('-->', lt + 4);
      if (close < 0) return { tags, stoppedAt: lt };
      pos = close + 3;
      continue;
    }
    const closing = html.charCodeAt(lt + 1) === 0x2f;
    let p = lt + (closing ? 2 : 1);
    if (!isAsciiLetter(html.charCodeAt(p))) {
      pos = lt + 1; // text, e.g. "a < b" or <!DOCTYPE>
      continue;
    }
    const nameStart = p;
    while (p < n && isNameChar(html.charCodeAt(p))) p++;
    const name = html.slice(nameStart, p).toLowerCase();
    const attrs = new Map<string, string>();
    let selfClosing = false;
    let end = -1;
    while (p < n) {
      const c = html.charCodeAt(p);
      if (c === 0x3e) {
        end = p + 1;
        break;
      }
      if (isSpace(c) || c === 0x2f) {
        selfClosing = c === 0x2f;
        p++;
        continue;
      }
      selfClosing = false;
      const attrStart = p;
      while (p < n && !isSpace(html.charCodeAt(p)) && html.charCodeAt(p) !== 0x3e && html.charCodeAt(p) !== 0x2f && (p === attrStart || html.charCodeAt(p) !== 0x3d)) p++;
      const attrName = html.slice(attrStart, p).toLowerCase();
      let q = p;
      while (q < n && isSpace(html.charCodeAt(q))) q++;
      let value = '';
      if (html.charCodeAt(q) === 0x3d) {
        q++;
        while (q < n && isSpace(html.charCodeAt(q))) q++;
        const quote = html.charCodeAt(q);
        if (quote === 0x22 || quote === 0x27) {
          const close = html.indexOf(quote === 0x22 ? '"' : "'", q + 1);
          if (close < 0) return { tags, stoppedAt: lt };
          value = html.slice(q + 1, close);
          q = close + 1;
        } else {
          const valueStart = q;
          while (q < n && !isSpace(html.charCodeAt(q)) && html.charCodeAt(q) !== 0x3e) q++;
          value = html.slice(valueStart, q);
        }
        p = q;
      }
      if (!attrs.has(attrName)) attrs.set(attrName, value);
    }
    if (end < 0) return { tags, stoppedAt: lt };
    tags.push({ start: lt, end, closing, name, attrs, selfClosing: selfClosing && !closing });
    pos = end;
  }
}

function classes(tag: HtmlTag): string[] {
  return (tag.attrs.get('class') ?? '').split(/\s+/).filter(Boolean);
}

/** An element whose whole subtree is quoted history. */
function isQuoteContainer(tag: HtmlTag): boolean {
  const cls = classes(tag);
  if (cls.includes('gmail_quote') || cls.includes('gmail_quote_container') || cls.includes('yahoo_quoted') || cls.includes('moz-cite-prefix')) return true;
  return tag.name === 'blockquote' && (tag.attrs.get('type') ?? '').toLowerCase() === 'cite';
}

/** An Outlook reply header: it and everything after it is history. */
function isHistoryMarker(tag: HtmlTag): boolean {
  const id = (tag.attrs.get('id') ?? '').toLowerCase();
  if (id === 'divrplyfwdmsg' || id === 'appendonsend' || id === 'stopspelling') return true;
  if (classes(tag).includes('OutlookMessageHeader')) return true;
  const style = (tag.attrs.get('style') ?? '').toLowerCase();
  return tag.name === 'div' && /border-top:\s*solid\s*#(e1e1e1|b5c4df)/.test(style);
}

const RAW_TEXT = new Set(['style', 'script']);

/** Whether the HTML shows any text: outside tags, comments, style and script, `&nbsp;` counting as space. */
function hasVisibleText(html: string): boolean {
  const { tags, stoppedAt } = scanTags(html);
  const visible = (from: number, to: number) => /\S/.test(html.slice(from, to).replace(/&nbsp;/gi, ' '));
  let pos = 0;
  let rawUntil: string | null = null;
  for (const tag of tags) {
    if (rawUntil !== null) {
      if (tag.closing && tag.name === rawUntil) rawUntil = null;
      pos = tag.end;
      continue;
    }
    if (visible(pos, tag.start)) return true;
    if (!tag.closing && !tag.selfClosing && RAW_TEXT.has(tag.name)) rawUntil = tag.name;
    pos = tag.end;
  }
  return rawUntil === null && visible(pos, stoppedAt);
}

export function extractHtml(html: string | null): string | null {
  if (html === null) return null;
  const truncated = html.length > EXTRACT_MAX_CHARS;
  const source = truncated ? html.slice(0, EXTRACT_MAX_CHARS) : html;
  const { tags, stoppedAt } = scanTags(source);
  const stack: string[] = [];
  /** How many of each name are on `stack`, so a close tag with no open element costs nothing. */
  const open = new Map<string, number>();
  const popTo = (at: number) => {
    for (let i = at; i < stack.length; i++) open.set(stack[i], open.get(stack[i])! - 1);
    stack.length = at;
  };
  const removed: [number, number][] = [];
  /** Index in `stack` of the quote container being removed, or -1. */
  let removing = -1;
  let removeStart = 0;
  // A truncated body is cut where its scan ended, so no half tag is kept.
  let cut = truncated ? stoppedAt : source.length;
  for (const tag of tags) {
    if (tag.closing) {
      if (!open.get(tag.name)) continue;
      const at = stack.lastIndexOf(tag.name);
      popTo(at);
      if (removing >= 0 && at <= removing) {
        removed.push([removeStart, tag.end]);
        removing = -1;
      }
      continue;
    }
    if (removing < 0 && isHistoryMarker(tag)) {
      cut = tag.start;
      break;
    }
    if (VOID.has(tag.name) || tag.selfClosing || stack.length >= MAX_OPEN_ELEMENTS) continue;
    if (removing < 0 && isQuoteContainer(tag)) {
      removing = stack.length;
      removeStart = tag.start;
    }
    stack.push(tag.name);
    open.set(tag.name, (open.get(tag.name) ?? 0) + 1);
  }
  if (removing >= 0) {
    removed.push([removeStart, cut]);
    popTo(removing);
  }
  let out = '';
  let pos = 0;
  for (const [start, end] of removed) {
    out += source.slice(pos, start);
    pos = end;
  }
  out += source.slice(pos, cut);
  // A cut leaves elements open; close them so the fragment stays well formed.
  if (cut < html.length) out += stack.reverse().map((name) => `</${name}>`).join('');
  if (hasVisibleText(out)) return out.trim();
  return truncated ? source.slice(0, cut) : html;
}

// ---- everything commitInbound stores that is computed from the body ----

/** Header lines → `{Name: value}`; unfolded; a repeated header's values are joined by newlines. */
export function headerRecord(lines: [string, string][]): Record<string, string> {
  const out: Record<string, string> = {};
  const names = new Map<string, string>();
  for (const [key, line] of lines) {
    const colon = line.indexOf(':');
    const name = names.get(key) ?? (colon > 0 ? line.slice(0, colon).trim() : key);
    names.set(key, name);
    const value = (colon >= 0 ? line.slice(colon + 1) : '').replace(/\r?\n[ \t]+/g, ' ').trim();
    out[name] = name in out ? `${out[name]}\n${value}` : value;
  }
  return out;
}

/** The per-message text work of a received message, done before its write transaction (in the parse thread). */
export interface DerivedText {
  extractedText: string | null;
  extractedHtml: string | null;
  preview: string | null;
  /** headerRecord() as JSON. */
  headersJson: string;
  /** extractActions() as JSON: the one-time codes and action links (issue 20 §2). */
  actionsJson: string;
  /** The manipulation verdict of the content (issue 20 §3); the sender check needs the inbox and is added at the commit. */
  manipulation: ManipulationVerdict;
}

export function deriveText(parsed: { subject: string | null; text: string | null; html: string | null; headers: [string, string][] }): DerivedText {
  const extractedText = extractText(parsed.text);
  const headers = headerRecord(parsed.headers);
  return {
    extractedText,
    extractedHtml: extractHtml(parsed.html),
    preview: previewOf(extractedText),
    headersJson: JSON.stringify(headers),
    actionsJson: JSON.stringify(actionsOf(parsed.subject, parsed.text, parsed.html, headers)),
    manipulation: contentVerdict(parsed.subject, parsed.text, parsed.html),
  };
}

/** The manipulation verdict of a message's content alone (hidden text, instructions to an AI, prompt syntax, invisible characters). */
export function contentVerdict(subject: string | null, text: string | null, html: string | null): ManipulationVerdict {
  return assessManipulation({ subject, text, html, senderDomain: null, knownDomains: [] });
}

/** The codes and action links of a received message from its subject, bodies and header record (stored or just parsed). */
export function actionsOf(subject: string | null, text: string | null, html: string | null, headers: Record<string, string>): ExtractedActions {
  const listUnsubscribe = Object.entries(headers).find(([name]) => name.toLowerCase() === 'list-unsubscribe')?.[1] ?? null;
  return extractActions({ subject, text, html, listUnsubscribe });
}

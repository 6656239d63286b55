/**
 * The tag reader shared by the scanners of received HTML (src/mail/actions.ts,
 * src/mail/manipulation.ts): one forward pass over a tag and its attributes, linear in the input
 * and never throwing, as a browser reads it (an unterminated tag or quoted value swallows the
 * rest; the first of a repeated attribute wins). What a caller does with the text between tags
 * and with attribute values (entities, what counts as visible) stays its own.
 */

/** An attribute value's place in the HTML; null for an attribute written without a value. */
export type AttributeSpan = { start: number; end: number } | null;

export interface RawTag {
  /** Lower-cased; empty for a name longer than any element's (never compared, so never copied). */
  name: string;
  closing: boolean;
  /** The wanted attributes present on the tag. */
  attributes: Map<string, AttributeSpan>;
  /** Just past the `>`, or the input length when the tag never ends. */
  end: number;
}

/** Longest element name compared by a caller. */
const MAX_NAME_CHARS = 16;

const isAsciiAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
const isTagNameChar = (c: number) => isAsciiAlnum(c) || c === 0x3a || c === 0x2d || c === 0x5f;
const isTagSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;

/**
 * The tag starting at `lt` (its `<` followed by a letter, or `/` and a letter), with the spans of
 * the attributes named in `wanted` (lower-case names); other attributes are stepped over.
 * `everyValue`, when given, is told the span of every attribute value, wanted or not.
 */
export function readTag(html: string, lt: number, wanted: ReadonlySet<string>, longestWanted: number, everyValue?: (start: number, end: number) => void): RawTag {
  const n = html.length;
  const closing = html.charCodeAt(lt + 1) === 0x2f;
  let p = lt + (closing ? 2 : 1);
  const nameStart = p;
  while (p < n && isTagNameChar(html.charCodeAt(p))) p++;
  const name = p - nameStart <= MAX_NAME_CHARS ? html.slice(nameStart, p).toLowerCase() : '';
  const tag: RawTag = { name, closing, attributes: new Map(), end: n };
  while (p < n) {
    const c = html.charCodeAt(p);
    if (c === 0x3e /* > */) {
      tag.end = p + 1;
      return tag;
    }
    if (isTagSpace(c) || c === 0x2f) {
      p++;
      continue;
    }
    const attrStart = p++; // the first character belongs to the name even when it is '='
    while (p < n && !isTagSpace(html.charCodeAt(p)) && html.charCodeAt(p) !== 0x3e && html.charCodeAt(p) !== 0x2f && html.charCodeAt(p) !== 0x3d) p++;
    const attrName = p - attrStart <= longestWanted ? html.slice(attrStart, p).toLowerCase() : '';
    const keep = wanted.has(attrName) && !tag.attributes.has(attrName);
    while (p < n && isTagSpace(html.charCodeAt(p))) p++;
    if (html.charCodeAt(p) !== 0x3d /* = */) {
      if (keep) tag.attributes.set(attrName, null);
      continue;
    }
    p++;
    while (p < n && isTagSpace(html.charCodeAt(p))) p++;
    let valueStart = p;
    let valueEnd: number;
    const quote = html.charCodeAt(p);
    if (quote === 0x22 || quote === 0x27) {
      const close = html.indexOf(quote === 0x22 ? '"' : "'", p + 1);
      if (close === -1) return tag; // an unterminated quote swallows the rest
      valueStart = p + 1;
      valueEnd = close;
      p = close + 1;
    } else {
      while (p < n && !isTagSpace(html.charCodeAt(p)) && html.charCodeAt(p) !== 0x3e) p++;
      valueEnd = p;
    }
    if (keep) tag.attributes.set(attrName, { start: valueStart, end: valueEnd });
    everyValue?.(valueStart, valueEnd);
  }
  return tag;
}

/** Where the closing tag of an element whose content is not rendered (`script`, `style`…) starts, or the input length. */
export function closingTagAt(html: string, from: number, name: string): number {
  for (let k = html.indexOf('</', from); k !== -1; k = html.indexOf('</', k + 2)) {
    if (html.slice(k + 2, k + 2 + name.length).toLowerCase() === name) return k;
  }
  return html.length;
}

/** Past a comment, doctype or processing instruction at `lt`; `lt` itself when there is none. A comment left open swallows the rest. */
export function skipMarkup(html: string, lt: number): number {
  if (html.startsWith('<!--', lt)) {
    const close = html.indexOf('-->', lt + 4);
    return close === -1 ? html.length : close + 3;
  }
  const next = html.charCodeAt(lt + 1);
  if (next === 0x21 /* ! */ || next === 0x3f /* ? */) {
    const close = html.indexOf('>', lt + 2);
    return close === -1 ? html.length : close + 1;
  }
  return lt;
}

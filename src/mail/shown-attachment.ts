/**
 * What a mail client shows of an attachment as text, for the outbound guard
 * (src/mail/guard-content.ts, docs/guarded.md): any `text/*` in its declared charset (a byte-order
 * mark wins, as in browsers), HTML, XML and SVG as rendered text, RTF as its text, and a
 * `message/rfc822` (or `message/global`) as a client opens it: its headers with encoded words
 * decoded, and each part (base64 and quoted-printable undone, in its charset) shown the same way.
 *
 * Rules: linear in the input and never throwing. The caller cuts the bytes first; a message is
 * read to MAX_MESSAGE_DEPTH nested entities and MAX_MESSAGE_PARTS parts, each level reading its
 * own part once, and its view stops growing past `maxChars` (then `truncated`: the caller holds
 * it as unread).
 */
import { TextDecoder } from 'node:util';
import { markupAsShown, rtfAsShown } from './shown-text.js';

export interface AttachmentBytes {
  filename: string | null;
  contentType: string | null;
  content: Uint8Array;
}

/** How an attachment reads: its bytes as text (null when binary), what it shows when that differs (HTML: with and without what it hides), and whether either was cut. */
export interface AttachmentView {
  text: string | null;
  shown: string[];
  truncated: boolean;
}

/** Nested entities read in a forwarded message (multiparts and messages inside each other). */
const MAX_MESSAGE_DEPTH = 8;
/** Parts of a forwarded message read, over all its levels. */
const MAX_MESSAGE_PARTS = 200;
/** Header lines read of one entity: real messages have a few hundred; more is held as unread. */
const MAX_HEADER_LINES = 5_000;
/** Characters of a content type read for its parameters. */
const MAX_TYPE_CHARS = 512;

/** Types read as text as they are. */
const TEXT_TYPES = /^(text\/|message\/|application\/(json|xml|x-yaml|yaml|toml|x-sh|x-shellscript|javascript|x-pem-file|x-x509-ca-cert|pgp-keys|pkcs8|x-pkcs12|csv|sql|x-ndjson|ld\+json|graphql|rtf|x-rtf)\b)|\+(xml|json)\b/i;
const TEXT_NAMES = /\.(txt|md|csv|tsv|json|ya?ml|toml|ini|cfg|conf|env|pem|key|crt|pub|asc|gpg|sh|bash|zsh|ps1|py|js|ts|sql|xml|svg|html?|xhtml|rtf|eml|log|properties|npmrc|pgpass|netrc)$|(^|\/)\.?(env|netrc|npmrc|pgpass|credentials|id_rsa|id_ed25519|id_ecdsa)$/i;

type Rendering = 'html' | 'xml' | 'rtf' | 'message' | null;

/** How a client renders a part of this type or name beyond its text. */
function renderingOf(type: string, name: string): Rendering {
  if (/^text\/html\b/i.test(type) || (type === '' && /\.html?$/i.test(name))) return 'html';
  if (/^message\/(rfc822|global)\b/i.test(type) || (!/^message\//i.test(type) && /\.eml$/i.test(name))) return 'message';
  if (/^(application|text)\/(x-)?rtf\b/i.test(type) || /\.rtf$/i.test(name)) return 'rtf';
  if (/^(application|text)\/xml\b|\+xml\b/i.test(type) || /\.(xml|svg|xhtml)$/i.test(name)) return 'xml';
  return null;
}

/** The `charset` parameter of a Content-Type, lower-cased, or null (read from a bounded prefix). */
export function charsetOf(type: string | null): string | null {
  const m = /;\s*charset\s*=\s*["']?([A-Za-z0-9_.:+-]{1,40})/i.exec((type ?? '').slice(0, MAX_TYPE_CHARS));
  return m === null ? null : m[1].toLowerCase();
}

/**
 * Bytes as a client decodes them: a byte-order mark (UTF-8, UTF-16LE/BE) wins, then the declared
 * charset when the platform knows it, else UTF-8. Malformed bytes become U+FFFD.
 */
export function decodeCharset(bytes: Uint8Array, charset: string | null): string {
  let label = charset ?? 'utf-8';
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) label = 'utf-8';
  else if (bytes[0] === 0xff && bytes[1] === 0xfe) label = 'utf-16le';
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) label = 'utf-16be';
  else if (label === 'utf-16' || label === 'ucs-2') label = 'utf-16le';
  return decoderFor(label).decode(bytes);
}

/** Decoders by label, made once: a message may carry thousands of encoded words. */
const DECODERS = new Map<string, TextDecoder>();
const MAX_DECODERS = 64;

function decoderFor(label: string): TextDecoder {
  let decoder = DECODERS.get(label);
  if (decoder !== undefined) return decoder;
  try {
    decoder = new TextDecoder(label);
  } catch {
    // A charset the platform does not know: read as UTF-8, which the ASCII of a token survives.
    decoder = decoderFor('utf-8');
  }
  if (DECODERS.size < MAX_DECODERS) DECODERS.set(label, decoder);
  return decoder;
}

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

/** Whether a client shows these bytes as text, and how it renders them beyond that. */
function readingOf(a: AttachmentBytes): { textual: boolean; rendering: Rendering; charset: string | null } {
  const type = (a.contentType ?? '').trim();
  const name = a.filename ?? '';
  const bytes = a.content;
  const rendering = renderingOf(type, name);
  const untyped = type === '' || /^application\/octet-stream\b/i.test(type);
  const bom = (bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff);
  const textual = rendering !== null || TEXT_TYPES.test(type) || TEXT_NAMES.test(name) || (untyped && (bom || !bytes.subarray(0, 4096).includes(0)));
  return { textual, rendering, charset: charsetOf(type) };
}

/** An attachment as the guard reads it; `maxChars` bounds a forwarded message's view. */
export function attachmentView(a: AttachmentBytes, maxChars: number): AttachmentView {
  const { textual, rendering, charset } = readingOf(a);
  if (!textual) return { text: null, shown: [], truncated: false };
  const text = decodeCharset(a.content, charset);
  if (rendering === null) return { text, shown: [], truncated: false };
  if (rendering === 'message') {
    const view = new MessageView(maxChars);
    view.entity(latin1(a.content), 0);
    return { text, shown: [view.toString()], truncated: view.truncated };
  }
  return { text, shown: rendered(rendering, text), truncated: false };
}

function rendered(rendering: 'html' | 'xml' | 'rtf', text: string): string[] {
  if (rendering === 'html') return [markupAsShown(text, 'html'), markupAsShown(text, 'html', 'dropped')];
  return [rendering === 'rtf' ? rtfAsShown(text) : markupAsShown(text, rendering)];
}

// ---------------------------------------------------------------------------------------------
// A forwarded message

interface Headers {
  /** Every header line, unfolded, encoded words decoded. */
  lines: string[];
  contentType: string;
  transferEncoding: string;
  filename: string;
}

/** The message a client would show, built entity by entity, at most `maxChars` characters. */
class MessageView {
  private parts: string[] = [];
  private chars = 0;
  private partsRead = 0;
  truncated = false;

  constructor(private readonly maxChars: number) {}

  private add(s: string): void {
    if (this.truncated || s === '') return;
    if (this.chars + s.length > this.maxChars) this.truncated = true;
    const kept = s.slice(0, this.maxChars - this.chars);
    this.parts.push(kept, '\n');
    this.chars += kept.length + 1;
  }

  /** One entity (a message, or a part of one) given as Latin-1 text of its bytes: its headers, then its body. */
  entity(raw: string, depth: number): void {
    if (this.truncated) return;
    if (++this.partsRead > MAX_MESSAGE_PARTS || depth > MAX_MESSAGE_DEPTH) {
      // A client would show more than the guard reads: held as unread.
      this.truncated = true;
      return;
    }
    const split = headerEnd(raw);
    const headers = readHeaders(raw.slice(0, split.headersEnd));
    if (headers === null) {
      this.truncated = true;
      return;
    }
    this.add(headers.lines.join('\n'));
    const body = raw.slice(split.bodyStart);
    const type = headers.contentType.toLowerCase();
    if (type.startsWith('multipart/')) {
      const boundary = boundaryOf(headers.contentType);
      if (boundary === null) this.add(body);
      else for (const part of multipartParts(body, boundary)) this.entity(part, depth + 1);
      return;
    }
    const part: AttachmentBytes = { filename: headers.filename || null, contentType: headers.contentType || 'text/plain', content: transferDecoded(body, headers.transferEncoding) };
    const { textual, rendering, charset } = readingOf(part);
    if (rendering === 'message') {
      this.entity(latin1(part.content), depth + 1);
      return;
    }
    if (!textual) return;
    const text = decodeCharset(part.content, charset);
    this.add(text);
    if (rendering !== null) for (const view of rendered(rendering, text)) this.add(view);
  }

  toString(): string {
    return this.parts.join('');
  }
}

/** Where the header block ends and the body starts (the first empty line), or the whole as headers. */
function headerEnd(raw: string): { headersEnd: number; bodyStart: number } {
  if (raw.startsWith('\r\n')) return { headersEnd: 0, bodyStart: 2 };
  if (raw.startsWith('\n')) return { headersEnd: 0, bodyStart: 1 };
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf === -1 && lf === -1) return { headersEnd: raw.length, bodyStart: raw.length };
  if (lf === -1 || (crlf !== -1 && crlf + 1 < lf)) return { headersEnd: crlf, bodyStart: crlf + 4 };
  return { headersEnd: lf, bodyStart: lf + 2 };
}

/** Header lines unfolded, with their values' encoded words decoded (headers may be raw UTF-8); null past MAX_HEADER_LINES. */
function readHeaders(block: string): Headers | null {
  const out: Headers = { lines: [], contentType: '', transferEncoding: '', filename: '' };
  const text = decodeCharset(Buffer.from(block, 'latin1'), 'utf-8');
  const lines: string[] = [];
  const split = text.split('\n', MAX_HEADER_LINES + 1);
  if (split.length > MAX_HEADER_LINES) return null;
  for (const raw of split) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if ((line.startsWith(' ') || line.startsWith('\t')) && lines.length > 0) lines[lines.length - 1] += line;
    else lines.push(line);
  }
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon).trim().toLowerCase();
    const value = colon === -1 ? line : line.slice(colon + 1).trim();
    out.lines.push(colon === -1 ? decodeWords(value) : `${line.slice(0, colon)}: ${decodeWords(value)}`);
    if (name === 'content-type') out.contentType = value;
    else if (name === 'content-transfer-encoding') out.transferEncoding = value.toLowerCase();
    else if (name === 'content-disposition') out.filename = /filename\*?=\s*"?([^";]{1,256})/i.exec(value.slice(0, MAX_TYPE_CHARS))?.[1] ?? '';
  }
  if (out.filename === '') out.filename = /name\s*=\s*"?([^";]{1,256})/i.exec(out.contentType.slice(0, MAX_TYPE_CHARS))?.[1] ?? '';
  return out;
}

/** RFC 2047 encoded words (`=?utf-8?B?…?=`, `=?iso-8859-1?Q?…?=`) decoded; whitespace between two of them dropped. */
function decodeWords(value: string): string {
  if (!value.includes('=?')) return value;
  return value
    .replace(/(\?=)[ \t]+(?==\?)/g, '$1')
    .replace(/=\?([A-Za-z0-9_.:+-]{1,40})(?:\*[A-Za-z-]{1,20})?\?([bBqQ])\?([^?\s]*)\?=/g, (_, charset: string, encoding: string, data: string) => {
      const bytes = encoding.toLowerCase() === 'b' ? Buffer.from(data, 'base64') : quotedPrintable(data.replace(/_/g, ' '));
      return decodeCharset(bytes, charset.toLowerCase());
    });
}

/** The `boundary` parameter of a multipart type. */
function boundaryOf(type: string): string | null {
  const m = /;\s*boundary\s*=\s*(?:"([^"]{1,200})"|([^\s;"]{1,200}))/i.exec(type.slice(0, MAX_TYPE_CHARS));
  return m === null ? null : (m[1] ?? m[2]);
}

/** The parts between `--boundary` lines, up to the closing `--boundary--` (a preamble and epilogue are not shown). */
function multipartParts(body: string, boundary: string): string[] {
  const delimiter = `--${boundary}`;
  const parts: string[] = [];
  let start = -1;
  for (let at = body.indexOf(delimiter); at !== -1; at = body.indexOf(delimiter, at + delimiter.length)) {
    if (at > 0 && body.charCodeAt(at - 1) !== 0x0a) continue;
    if (start !== -1) parts.push(body.slice(start, at > 0 && body.charCodeAt(at - 2) === 0x0d ? at - 2 : Math.max(start, at - 1)));
    if (body.startsWith('--', at + delimiter.length)) return parts;
    const eol = body.indexOf('\n', at + delimiter.length);
    if (eol === -1) return parts;
    start = eol + 1;
  }
  if (start !== -1) parts.push(body.slice(start));
  return parts;
}

/** A body's bytes with its transfer encoding undone (base64, quoted-printable; anything else as it is). */
function transferDecoded(body: string, encoding: string): Uint8Array {
  if (encoding === 'base64') return Buffer.from(body, 'base64');
  if (encoding === 'quoted-printable') return quotedPrintable(body);
  return Buffer.from(body, 'latin1');
}

const hexValue = (c: number) => (c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 0x37 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1);

/** Quoted-printable undone, over Latin-1 text, into bytes: `=XX` a byte, `=` at a line end joins the lines. */
function quotedPrintable(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  let n = 0;
  for (let k = 0; k < s.length; ) {
    const c = s.charCodeAt(k);
    if (c !== 0x3d /* = */) {
      out[n++] = c;
      k++;
      continue;
    }
    const hi = hexValue(s.charCodeAt(k + 1));
    const lo = hexValue(s.charCodeAt(k + 2));
    if (hi !== -1 && lo !== -1) {
      out[n++] = hi * 16 + lo;
      k += 3;
    } else if (s.charCodeAt(k + 1) === 0x0a) k += 2;
    else if (s.charCodeAt(k + 1) === 0x0d && s.charCodeAt(k + 2) === 0x0a) k += 3;
    else {
      out[n++] = c;
      k++;
    }
  }
  return out.subarray(0, n);
}

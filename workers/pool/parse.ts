/**
 * MIME parsing for received mail: raw bytes → the fields the mail store keeps. Kept apart from
 * the other pool tasks so the large-message parser (workers/pool/parse-large.ts) loads mailparser
 * and nothing else it does not use: every module a new worker loads costs resident memory.
 */
import { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import { bufferView } from '../../src/core/bytes.js';
import { htmlText } from '../../src/mail/html-text.js';
import { exceedsAddressHeaderLimits } from '../../src/mail/address-groups.js';

/**
 * Why a message could not be parsed, as its quarantine reason: `parse_failed` (the parser refused
 * it, or its worker died) may pass on a later try; `parse_limit_exceeded` (it needs more time or
 * memory than any message may take, or its address headers would, src/mail/address-groups.ts) never will.
 */
export type ParseFailure = 'parse_failed' | 'parse_limit_exceeded';
export const PARSE_FAILURES: ReadonlySet<string> = new Set<ParseFailure>(['parse_failed', 'parse_limit_exceeded']);

export interface ParsedAttachment {
  filename: string | null;
  contentType: string;
  contentDisposition: string | null;
  contentId: string | null;
  content: Uint8Array;
  /** The declared charset of a text part (mailparser keeps it apart from `contentType`), for its text (docs/attachments.md). */
  charset?: string | null;
}

export interface ParsedMail {
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  subject: string | null;
  from: { address: string; name: string }[];
  to: { address: string; name: string }[];
  cc: { address: string; name: string }[];
  replyTo: { address: string; name: string }[];
  date: string | null;
  text: string | null;
  html: string | null;
  headers: [string, string][];
  attachments: ParsedAttachment[];
}

type AddressField = import('mailparser').AddressObject | import('mailparser').AddressObject[] | undefined;

function addresses(field: AddressField): { address: string; name: string }[] {
  const list = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return list.flatMap((a) => a.value).flatMap(function flat(v): { address: string; name: string }[] {
    if (v.group) return v.group.flatMap(flat);
    return v.address ? [{ address: v.address.toLowerCase(), name: v.name ?? '' }] : [];
  });
}


/**
 * The parser reads the message this many bytes at a time. Given one buffer, mailparser splits it
 * as one chunk and its slices of the whole stay alive together: a 20 MiB message cost about 30 MiB
 * more at the peak than when fed in chunks (issue 16, finding 9).
 */
const PARSE_CHUNK_BYTES = 64 * 1024;

/** Views of `bytes`, PARSE_CHUNK_BYTES at a time (no copies). */
function* chunksOf(bytes: Buffer): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += PARSE_CHUNK_BYTES) yield bytes.subarray(at, at + PARSE_CHUNK_BYTES);
}

/**
 * Parses raw MIME into the fields the mail store keeps. Throws Error('parse_limit_exceeded') for a
 * message whose address headers would cost the parser far more than their size.
 */
export async function parseMime(raw: Uint8Array): Promise<ParsedMail> {
  if (exceedsAddressHeaderLimits(raw)) throw new Error('parse_limit_exceeded' satisfies ParseFailure);
  const input = raw.byteLength <= PARSE_CHUNK_BYTES ? bufferView(raw) : Readable.from(chunksOf(bufferView(raw)), { objectMode: false });
  // mailparser's own text of an HTML-only message (html-to-text) is quadratic in the tag nesting;
  // svc renders that text itself in one pass (src/mail/html-text.ts).
  const mail = await simpleParser(input, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true, skipHtmlToText: true });
  // A decoder can leave a lone surrogate (a UTF-16 part cut short); stored as UTF-8 it would
  // not read back as it was parsed, so it becomes U+FFFD here, once, for every reader.
  const html = typeof mail.html === 'string' ? mail.html.toWellFormed() : null;
  // A skipped HTML part leaves an empty text in its place: that is all the text HTML-only mail has.
  const text = mail.text !== undefined && /\S/.test(mail.text) ? mail.text.toWellFormed() : html !== null ? htmlText(html) : (mail.text?.toWellFormed() ?? null);
  const refs = mail.references === undefined ? [] : Array.isArray(mail.references) ? mail.references : [mail.references];
  return {
    messageId: mail.messageId ?? null,
    inReplyTo: mail.inReplyTo ?? null,
    references: refs.flatMap((r) => r.split(/\s+/)).filter(Boolean),
    subject: mail.subject ?? null,
    from: addresses(mail.from),
    to: addresses(mail.to),
    cc: addresses(mail.cc),
    replyTo: addresses(mail.replyTo),
    date: mail.date ? mail.date.toISOString() : null,
    text,
    html,
    headers: mail.headerLines.map((h) => [h.key, h.line]),
    attachments: mail.attachments.map((a) => ({
      filename: a.filename ?? null,
      contentType: a.contentType,
      contentDisposition: a.contentDisposition ?? null,
      contentId: a.contentId ?? null,
      content: a.content,
      charset: declaredCharset(a.headers),
    })),
  };
}

/** The `charset` parameter of a part's Content-Type header, lower-cased, or null. */
function declaredCharset(headers: import('mailparser').Headers | undefined): string | null {
  const type = headers?.get('content-type') as { params?: Record<string, string> } | undefined;
  const charset = type?.params?.charset;
  return typeof charset === 'string' && /^[A-Za-z0-9_.:+-]{1,40}$/.test(charset) ? charset.toLowerCase() : null;
}

/**
 * The composing payload (spec §2.4) and every rule it carries: recipients 1–50, one reply-to,
 * subject length and line breaks, text or html, attachments (count, canonical base64, inline
 * needs a content ID, no URLs) and caller headers (allowed names, sizes, reserved threading
 * headers, no line breaks). The result is a `Composition`: plain validated values that outbound
 * code turns into MIME. The payload's schemas for send, reply, reply-all, forward and drafts are
 * in ./compose-schemas.ts.
 */
import addressparser from 'nodemailer/lib/addressparser';
import { ApiError } from '../core/errors.js';
import type { Principal } from '../auth/principal.js';
import { labelEdit } from './labels.js';
import { canonicalAddress } from './lists.js';
import { displayAddress } from './serialize.js';
import type { AttachmentInput } from './compose-schemas.js';
import {
  MAX_ATTACHMENTS,
  MAX_HEADER_NAME_BYTES,
  MAX_HEADER_VALUE_BYTES,
  MAX_HEADERS_BYTES,
  MAX_MESSAGE_BYTES,
  MAX_NON_X_HEADERS,
  MAX_RECIPIENTS,
  MAX_SUBJECT,
} from './limits.js';

export type { AttachmentInput, ReplyAllBody, ReplyBody, SendBody } from './compose-schemas.js';

const AUTO_SUBMITTED = ['no', 'auto-generated', 'auto-replied'];
const RESERVED_HEADERS = ['in-reply-to', 'references'];

export interface Recipient {
  /** Bare, lower-cased `local@domain` (domain in punycode). */
  address: string;
  /** `Name <address>` or the bare address. */
  display: string;
}

export interface OutgoingAttachment {
  filename: string | null;
  contentType: string | null;
  contentDisposition: 'inline' | 'attachment' | null;
  contentId: string | null;
  content: Buffer;
}

/** A stored attachment row (message or draft) with its bytes, as an attachment to send. */
export interface StoredAttachmentRow {
  filename: string | null;
  content_type: string | null;
  content_disposition: string | null;
  content_id: string | null;
  content: Buffer;
}

export const outgoingAttachment = (r: StoredAttachmentRow): OutgoingAttachment => ({
  filename: r.filename,
  contentType: r.content_type,
  contentDisposition: r.content_disposition === 'inline' || r.content_disposition === 'attachment' ? r.content_disposition : null,
  contentId: r.content_id,
  content: r.content,
});

/** A validated payload, before replies and forwards add what they derive. */
export interface Composition {
  to: Recipient[];
  cc: Recipient[];
  bcc: Recipient[];
  replyTo: Recipient[];
  subject: string | null;
  text: string | null;
  html: string | null;
  attachments: OutgoingAttachment[];
  headers: Record<string, string>;
  labels: string[];
}

const invalid = (message: string, fix: string) => new ApiError('validation_error', message, { fix });

/** Parses one recipient field. Each address must be a plain `local@domain`; groups are refused. */
export function parseRecipients(field: string | string[] | null | undefined, name: string): Recipient[] {
  if (field === undefined || field === null) return [];
  const out: Recipient[] = [];
  for (const item of typeof field === 'string' ? [field] : field) {
    if (/[\r\n\0]/.test(item)) throw invalid(`\`${name}\` contains a line break.`, 'Give each address on its own, without line breaks.');
    if (item.trim() === '') continue;
    const parsed = addressparser(item);
    for (const entry of parsed) {
      const address = 'group' in entry && entry.group ? null : canonicalAddress(entry.address ?? '');
      if (!address) {
        throw invalid(`\`${name}\` has an entry that is not an email address: ${JSON.stringify(item.slice(0, 200))}.`, 'Use `name@example.com` or `Display Name <name@example.com>`.');
      }
      out.push({ address, display: displayAddress({ address, name: entry.name ?? '' }) });
    }
  }
  return out;
}

/** Drops repeated addresses (first wins), across the given lists in order. */
export function dedupeRecipients(...lists: Recipient[][]): Recipient[][] {
  const seen = new Set<string>();
  return lists.map((list) =>
    list.filter((r) => {
      if (seen.has(r.address)) return false;
      seen.add(r.address);
      return true;
    }),
  );
}

export function checkRecipientCount(to: Recipient[], cc: Recipient[], bcc: Recipient[]): void {
  const total = to.length + cc.length + bcc.length;
  if (total === 0) throw invalid('A message needs at least one recipient.', 'Give `to` (and optionally `cc`, `bcc`).');
  if (total > MAX_RECIPIENTS) throw invalid(`A message has at most ${MAX_RECIPIENTS} recipients in total; this one has ${total}.`, 'Split the message, or put the recipients on a mailing list.');
}

export function checkSubject(subject: string | null | undefined): string | null {
  if (subject === undefined || subject === null) return null;
  // NUL too: like the address and header checks, since some MTAs end a header line at a NUL.
  if (/[\r\n\0]/.test(subject)) throw invalid('`subject` must not contain line breaks or NUL characters.', 'Put the subject on one line, without control characters.');
  if ([...subject].length > MAX_SUBJECT) throw invalid(`\`subject\` is longer than ${MAX_SUBJECT} characters.`, 'Shorten the subject.');
  return subject;
}

// Linear-time shape check (a repeated group would recurse on megabytes); the round trip proves canonical padding bits.
const BASE64_ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

export function decodeAttachment(a: AttachmentInput, index: number): OutgoingAttachment {
  const where = `attachments[${index}]`;
  if (a.url !== undefined && a.url !== null) {
    throw new ApiError('not_supported', `${where} references a URL; svc does not fetch attachments from URLs.`, { fix: 'Download the file yourself and send it as base64 in `content`.' });
  }
  if (a.content === undefined || a.content === null) throw invalid(`${where} has no \`content\`.`, 'Give the file as canonical base64 in `content`.');
  const content = Buffer.from(a.content, 'base64');
  if (a.content.length % 4 !== 0 || !BASE64_ALPHABET.test(a.content) || content.toString('base64') !== a.content) {
    throw invalid(`${where}.content is not canonical base64.`, 'Use standard base64 (A–Z, a–z, 0–9, +, /) with `=` padding, no line breaks or spaces.');
  }
  const disposition = a.content_disposition ? a.content_disposition.toLowerCase() : null;
  if (disposition !== null && disposition !== 'inline' && disposition !== 'attachment') {
    throw invalid(`${where}.content_disposition must be \`inline\` or \`attachment\`.`, 'Use `inline` for images shown in the HTML body, otherwise `attachment`.');
  }
  const contentId = a.content_id ? a.content_id.trim().replace(/^<|>$/g, '') : null;
  if (disposition === 'inline' && !contentId) throw invalid(`${where} is inline but has no \`content_id\`.`, 'Give the `content_id` the HTML refers to as `cid:<content_id>`.');
  for (const [field, value] of [
    ['filename', a.filename],
    ['content_type', a.content_type],
    ['content_id', contentId],
  ] as const) {
    if (value && /[\r\n\0]/.test(value)) throw invalid(`${where}.${field} contains a line break.`, 'Remove line breaks.');
  }
  if (a.content_type && !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(a.content_type)) throw invalid(`${where}.content_type is not a media type.`, 'Use a type like `application/pdf`.');
  return { filename: a.filename ?? null, contentType: a.content_type ?? null, contentDisposition: disposition, contentId, content };
}

export function checkAttachmentCount(count: number): void {
  if (count > MAX_ATTACHMENTS) throw invalid(`A message has at most ${MAX_ATTACHMENTS} attachments; this one has ${count}.`, 'Send fewer files, or zip them.');
}

/** Caller headers: `X-*` and `Auto-Submitted` only, with the sizes of spec §2.4. Returns them trimmed. */
export function checkHeaders(headers: Record<string, string> | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  let total = 0;
  let nonX = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) throw invalid(`The header name ${JSON.stringify(name.slice(0, 100))} is not a valid header name.`, 'Header names are printable ASCII without spaces or colons.');
    if (Buffer.byteLength(name) > MAX_HEADER_NAME_BYTES) throw invalid(`The header name ${JSON.stringify(name.slice(0, 100))}… is longer than ${MAX_HEADER_NAME_BYTES} bytes.`, 'Use a shorter header name.');
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.includes(lower)) throw invalid(`The header ${name} is reserved for threading.`, 'Leave it out; replies derive In-Reply-To and References from the original message.');
    const isX = lower.startsWith('x-');
    if (!isX && lower !== 'auto-submitted') throw invalid(`The header ${name} cannot be set.`, 'Only `X-*` headers and `Auto-Submitted` may be set; svc writes the standard headers itself.');
    if (/[\r\n\0]/.test(value)) throw invalid(`The header ${name} contains a line break.`, 'Header values must be one line.');
    if (Buffer.byteLength(value) > MAX_HEADER_VALUE_BYTES) throw invalid(`The value of header ${name} is longer than ${MAX_HEADER_VALUE_BYTES} bytes.`, 'Shorten the value.');
    if (lower === 'auto-submitted' && !AUTO_SUBMITTED.includes(value.trim().toLowerCase())) {
      throw invalid('`Auto-Submitted` must be `no`, `auto-generated` or `auto-replied`.', 'Use one of those values.');
    }
    if (!isX) nonX++;
    total += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
    out[name] = lower === 'auto-submitted' ? value.trim().toLowerCase() : value.trim();
  }
  if (nonX > MAX_NON_X_HEADERS) throw invalid(`At most ${MAX_NON_X_HEADERS} headers may be other than \`X-*\`.`, 'Send fewer headers.');
  if (total > MAX_HEADERS_BYTES) throw invalid(`Caller headers total ${total} bytes; the limit is ${MAX_HEADERS_BYTES}.`, 'Send fewer or shorter headers.');
  return out;
}

export interface ComposeInput {
  to?: string | string[] | null;
  cc?: string | string[] | null;
  bcc?: string | string[] | null;
  reply_to?: string | string[] | null;
  subject?: string | null;
  text?: string | null;
  html?: string | null;
  attachments?: AttachmentInput[] | null;
  headers?: Record<string, string> | null;
  labels?: string | string[] | null;
  track_opens?: boolean | null;
}

/**
 * Validates a payload's own fields. Recipient count and text-or-html are checked by the caller
 * once derived values (reply recipients, forwarded body) are in, via `checkComplete`.
 */
export function composition(p: Principal, body: ComposeInput): Composition {
  if (body.track_opens === true) {
    throw new ApiError('not_supported', 'Open tracking is not offered: svc adds no tracking pixels to mail.', { fix: 'Leave out `track_opens` or set it to false.' });
  }
  const replyTo = parseRecipients(body.reply_to, 'reply_to');
  if (replyTo.length > 1) throw invalid('`reply_to` takes at most one address.', 'Give a single reply-to address.');
  const attachments = (body.attachments ?? []).map(decodeAttachment);
  checkAttachmentCount(attachments.length);
  const [to, cc, bcc] = dedupeRecipients(parseRecipients(body.to, 'to'), parseRecipients(body.cc, 'cc'), parseRecipients(body.bcc, 'bcc'));
  return {
    to,
    cc,
    bcc,
    replyTo,
    subject: checkSubject(body.subject),
    text: body.text ?? null,
    html: body.html ?? null,
    attachments,
    headers: checkHeaders(body.headers),
    labels: labelEdit(p, body.labels, undefined).add,
  };
}

/** The checks that need the final message: recipients, a body, attachment count. */
export function checkComplete(c: Composition): void {
  checkRecipientCount(c.to, c.cc, c.bcc);
  if (c.text === null && c.html === null) throw invalid('A message needs `text` or `html`.', 'Give the body as `text`, `html`, or both.');
  checkAttachmentCount(c.attachments.length);
}

export function tooLarge(bytes: number): ApiError {
  return new ApiError('payload_too_large', `The message is ${bytes} bytes encoded; it must stay under ${MAX_MESSAGE_BYTES} bytes (5 MiB) including attachments.`, {
    fix: 'Send smaller or fewer attachments, or share large files by link.',
  });
}

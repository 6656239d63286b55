/**
 * Piscina task file: CPU work that must stay off the request path's event loop.
 * Each task is a named pure function of structured-cloneable input.
 */
import { simpleParser } from 'mailparser';
import type { JWK } from 'jose';
import { openSealed, type InboundMeta, type InboundObject } from '../../src/edge/sealed.js';
import { composeMime } from './compose.js';
import { deriveText, type DerivedText } from '../../src/mail/extract.js';

export interface ParsedAttachment {
  filename: string | null;
  contentType: string;
  contentDisposition: string | null;
  contentId: string | null;
  content: Uint8Array;
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

/** A Buffer over the same memory (Buffer.from(Uint8Array) would copy the whole message). */
const bufferView = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/** Parses raw MIME into the fields the mail store keeps. */
export async function parseMime(raw: Uint8Array): Promise<ParsedMail> {
  const mail = await simpleParser(bufferView(raw), { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
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
    text: mail.text ?? null,
    html: typeof mail.html === 'string' ? mail.html : null,
    headers: mail.headerLines.map((h) => [h.key, h.line]),
    attachments: mail.attachments.map((a) => ({
      filename: a.filename ?? null,
      contentType: a.contentType,
      contentDisposition: a.contentDisposition ?? null,
      contentId: a.contentId ?? null,
      content: a.content,
    })),
  };
}

/** What the inbound pipeline needs from a sealed object: its envelope and verdicts, the raw bytes, the parse. */
export interface OpenedInbound {
  envelope: InboundObject['envelope'];
  auth: InboundObject['auth'];
  spam: InboundObject['spam'];
  raw: Uint8Array;
  parsed: ParsedMail;
  /** Extraction, preview and header record, computed here so the commit holds the write lock for SQL only. */
  derived: DerivedText;
}

/**
 * Opens a sealed edge object with the home's private key and parses the message. Throws an
 * Error whose message is a reason code (`open_failed`, `parse_failed`) for the quarantine.
 */
export async function openInbound({ jwe, privateJwk }: { jwe: string | Uint8Array; privateJwk: JWK }): Promise<OpenedInbound> {
  let opened: Awaited<ReturnType<typeof openSealed>>;
  try {
    opened = await openSealed(jwe, privateJwk);
  } catch {
    throw new Error('open_failed');
  }
  return parseOpened(opened);
}

/** The parse half of `openInbound`, for a caller that opened the object itself (workers/pool/open-large.ts). */
export async function parseOpened({ meta, raw }: { meta: InboundMeta; raw: Buffer }): Promise<OpenedInbound> {
  const { envelope, auth, spam } = meta;
  try {
    const parsed = await parseMime(raw);
    return { envelope, auth, spam, raw, parsed, derived: deriveText(parsed) };
  } catch {
    throw new Error('parse_failed');
  }
}

const TASKS = { parseMime, openInbound, composeMime } as const;
export type TaskName = keyof typeof TASKS;

export default async function run({ task, input }: { task: TaskName; input: never }): Promise<unknown> {
  const fn = TASKS[task] as (input: never) => Promise<unknown>;
  if (!fn) throw new Error(`unknown pool task ${String(task)}`);
  return fn(input);
}

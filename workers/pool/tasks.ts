/**
 * Piscina task file: CPU work that must stay off the request path's event loop.
 * Each task is a named pure function of structured-cloneable input.
 */
import type { JWK } from 'jose';
import { openSealed, type InboundMeta, type InboundObject } from '../../src/edge/sealed.js';
import { composeMime, composeOutbound } from './compose.js';
import { deriveText, type DerivedText } from '../../src/mail/extract.js';
import type { AttachmentText } from '../../src/attachment-text/schemas.js';
import { PARSE_FAILURES, parseMime, type ParsedMail } from './parse.js';
import { inspectContent, type GuardContent } from '../../src/mail/guard-content.js';
import { evaluateMessageAuth, trustedArcSealers, VIA_CLOUDFLARE } from '../../src/inbound/message-auth.js';

/** What the inbound pipeline needs from a sealed object: its envelope and verdicts, the raw bytes, the parse. */
export interface OpenedInbound {
  envelope: InboundObject['envelope'];
  auth: InboundObject['auth'];
  spam: InboundObject['spam'];
  raw: Uint8Array;
  parsed: ParsedMail;
  /** Extraction, preview and header record, computed here so the commit holds the write lock for SQL only. */
  derived: DerivedText;
  /**
   * Each attachment's text (src/attachment-text/on-receive.ts), read after the open by the caller
   * in the extraction lane; absent or null entries are read on the attachment's first read.
   */
  attachmentText?: (AttachmentText | null)[];
}

/**
 * Opens a sealed edge object with the home's private key and parses the message. Throws an
 * Error whose message is a reason code (`open_failed`, `parse_failed`, `parse_limit_exceeded`) for the quarantine.
 */
export async function openInbound({ jwe, privateJwk, dnsServers }: { jwe: string | Uint8Array; privateJwk: JWK; dnsServers?: string[] | null }): Promise<OpenedInbound> {
  let opened: Awaited<ReturnType<typeof openSealed>>;
  try {
    opened = await openSealed(jwe, privateJwk);
  } catch {
    throw new Error('open_failed');
  }
  return parseOpened(opened, dnsServers ?? null);
}

/**
 * The verdicts of an object: as the edge sealed them, or, from an edge that never saw the
 * connection (the Cloudflare Worker), evaluated here from the message (src/inbound/message-auth.ts).
 */
export async function objectAuth(meta: InboundMeta, raw: Buffer, dnsServers: string[] | null): Promise<InboundObject['auth']> {
  if (meta.envelope.via !== VIA_CLOUDFLARE) return meta.auth;
  const { dnsResolver } = await import('../../src/edge/auth.js');
  return evaluateMessageAuth(raw, dnsResolver(dnsServers ?? undefined), trustedArcSealers());
}

/** The parse half of `openInbound`. */
async function parseOpened({ meta, raw }: { meta: InboundMeta; raw: Buffer }, dnsServers: string[] | null): Promise<OpenedInbound> {
  const { envelope, spam } = meta;
  const auth = await objectAuth(meta, raw, dnsServers);
  try {
    const parsed = await parseMime(raw);
    return { envelope, auth, spam, raw, parsed, derived: deriveText(parsed) };
  } catch (err) {
    throw new Error(PARSE_FAILURES.has((err as Error).message) ? (err as Error).message : 'parse_failed');
  }
}

/** The guarded policy's content scan of one send (src/mail/guard-content.ts). */
async function inspectGuard(content: GuardContent) {
  return inspectContent(content);
}

const TASKS = { parseMime, openInbound, composeMime, composeOutbound, inspectGuard } as const;
export type TaskName = keyof typeof TASKS;

export default async function run({ task, input }: { task: TaskName; input: never }): Promise<unknown> {
  const fn = TASKS[task] as (input: never) => Promise<unknown>;
  if (!fn) throw new Error(`unknown pool task ${String(task)}`);
  return fn(input);
}
